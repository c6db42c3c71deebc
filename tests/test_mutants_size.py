"""``properties/blocks/size.py``: each property fails under a mis-statement of what it checks."""

from __future__ import annotations

import pytest

from conftest import run_row
from specformer.properties.blocks import size

CORRECTED = "size.the_stack_has_the_closed_form_count_and_the_paper_vocabulary_gives_the_table_within_3_percent"
AS_WRITTEN = "size.one_vocabulary_gives_both_table_counts_as_written"
EMBEDDINGS = "size.three_vocabulary_matrices_hold_three_v_d_parameters"


def test_the_table_is_refuted_and_the_corrected_counts_hold() -> None:
    assert run_row(CORRECTED, None).outcome == "pass"
    assert run_row(EMBEDDINGS, None).outcome == "pass"
    row = run_row(AS_WRITTEN, None)
    assert row.outcome == "refuted" and "39765 <= |V| <= 41717" in row.message, row
    assert (size.fitting_vocabularies("big").start, size.fitting_vocabularies("big").stop) == (35292, 36269)


def test_a_count_without_the_final_layernorms_is_caught(monkeypatch) -> None:
    closed_form = size.stack_parameters
    monkeypatch.setattr(size, "stack_parameters", lambda n, d, ff: closed_form(n, d, ff) - 4 * d)
    row = run_row(CORRECTED, None)
    assert row.outcome == "fail" and "closed form" in row.message, row


def test_untied_embeddings_break_the_3_percent_agreement(monkeypatch) -> None:
    monkeypatch.setattr(size, "model_parameters",
                        lambda name, v: size.stack_parameters(*size.TABLE[name][:3]) + 3 * v * size.TABLE[name][1])
    row = run_row(CORRECTED, None)
    assert row.outcome == "fail" and "within 3%" in row.message, row


def test_a_table_that_fits_one_vocabulary_leaves_nothing_to_refute(monkeypatch) -> None:
    """A mis-statement: the table with the counts a 37K tied vocabulary gives (63M, 214M)."""
    monkeypatch.setattr(size, "TABLE", {"base": (6, 512, 2048, 8, 63), "big": (6, 1024, 4096, 16, 214)})
    row = run_row(AS_WRITTEN, None)
    assert row.outcome == "fail", row


@pytest.mark.parametrize("factor", [2, 4])
def test_a_miscounted_output_layer_is_caught(monkeypatch, factor: int) -> None:
    linear = size.nn.Linear
    monkeypatch.setattr(size.nn, "Linear", lambda d, v, bias=False, device=None: linear(d, factor * v, bias=bias,
                                                                                          device=device))
    row = run_row(EMBEDDINGS, None)
    assert row.outcome == "fail", row
