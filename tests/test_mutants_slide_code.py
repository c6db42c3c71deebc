"""The slides' multi-head code (``properties/attention/slide_code.py``): the refutation finds its
counterexample, and each property fails under the other reading of the code."""

from __future__ import annotations

import functools

from conftest import run_row
from specformer.properties.attention import slide_code

CORRECTED = "slide_code.the_slides_code_with_dim_minus_one_and_a_module_list_is_multihead_attention"
AS_WRITTEN = "slide_code.the_slides_code_computes_multihead_attention_as_written"


def test_the_code_as_written_is_refuted_and_the_corrected_code_passes() -> None:
    row = run_row(AS_WRITTEN, None)
    assert row.outcome == "refuted", f"{row.outcome}: {row.message}"
    assert run_row(CORRECTED, None).outcome == "pass"


def test_the_corrected_property_catches_the_code_as_written(monkeypatch) -> None:
    original = slide_code.SlideMultiHead
    monkeypatch.setattr(slide_code, "SlideMultiHead", lambda d, h, corrected=False: original(d, h, corrected=False))
    row = run_row(CORRECTED, None)
    assert row.outcome == "fail" and "not parameters" in row.message, f"{row.outcome}: {row.message}"


def test_the_refutation_fails_when_the_code_is_right(monkeypatch) -> None:
    monkeypatch.setattr(slide_code, "SlideMultiHead", functools.partial(slide_code.SlideMultiHead, corrected=True))
    row = run_row(AS_WRITTEN, None)
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"


def test_a_registered_list_with_the_first_axis_concat_raises_for_two_heads() -> None:
    """The shape fault on its own: a module list does not save the dim-less concat."""
    import torch

    module = slide_code.SlideMultiHead(4, 2)
    module.attention_heads = torch.nn.ModuleList(module.attention_heads)
    try:
        module(torch.ones(1, 3, 4, dtype=torch.float64))
    except RuntimeError as exc:
        assert "cannot be multiplied" in str(exc)
    else:
        raise AssertionError("concatenating along the first axis should not fit nn.Linear(d, d)")
