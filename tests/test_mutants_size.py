"""``properties/blocks/size.py``: each property fails for a wrong count or a mis-statement of what it checks."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.adapters.reference import ReferenceImplementation
from specformer.properties.blocks import size
from specformer.protocol.blocks import ModelConfig
from specformer.reference.blocks.size import count_parameters

CORRECTED = "size.an_implementations_model_has_the_closed_form_count"
AS_WRITTEN = "size.one_vocabulary_gives_both_table_counts_as_written"
EMBEDDINGS = "size.an_implementations_vocabulary_matrices_hold_three_v_d_parameters"


def test_the_table_is_refuted_and_the_corrected_counts_hold() -> None:
    assert run_row(CORRECTED, ReferenceImplementation()).outcome == "pass"
    assert run_row(EMBEDDINGS, ReferenceImplementation()).outcome == "pass"
    row = run_row(AS_WRITTEN, None)
    assert row.outcome == "refuted" and "39765 <= |V| <= 41717" in row.message, row
    assert (size.fitting_vocabularies("big").start, size.fitting_vocabularies("big").stop) == (35292, 36269)


def _counter(change) -> Mutant:
    return Mutant("miscounts", count_parameters=lambda config: change(config, count_parameters(config)))


@pytest.mark.parametrize("name, change", [
    # the final LayerNorms forgotten (a post-norm count for a pre-norm stack)
    ("no-final-norm", lambda c, n: n - (2 * c.d_model * ((c.encoder_layers > 0) + (c.decoder_layers > 0))
                                        if c.final_norm else n)),
    # a tied output layer counted as its own matrix
    ("tied-counted-twice", lambda c, n: n + (c.vocab_size * c.d_model if c.output_layer and c.tied_output else 0)),
    # the FFN's biases left out
    ("no-ffn-bias", lambda c, n: n - (c.encoder_layers + c.decoder_layers) * (c.d_ff + c.d_model)),
    # learned positions not counted
    ("no-position-table", lambda c, n: n - (c.max_len * c.d_model if c.positions == "learned" else 0)),
    # parameters of the model's buffers counted (a sinusoidal table of 512 rows)
    ("sinusoid-counted", lambda c, n: n + (512 * c.d_model if c.positions == "sinusoidal" else 0)),
])
def test_a_wrong_count_is_caught(name: str, change) -> None:
    assert_caught(CORRECTED, _counter(change))


def test_a_count_that_misses_the_target_embedding_is_caught() -> None:
    def change(c: ModelConfig, n: int) -> int:
        separate = c.encoder_layers and c.decoder_layers and not c.shared_embeddings
        return n - (c.vocab_size * c.d_model if separate else 0)

    assert_caught(EMBEDDINGS, _counter(change))
    assert_caught(CORRECTED, _counter(change))


def test_a_second_token_table_without_a_second_stack_is_caught() -> None:
    """An encoder alone (no decoder) has one token table even when the embeddings are not shared."""
    def change(c: ModelConfig, n: int) -> int:
        return n + (c.vocab_size * c.d_model if not c.decoder_layers and not c.shared_embeddings else 0)

    assert_caught(CORRECTED, _counter(change))


def test_a_count_that_shares_the_output_layer_whatever_the_config_is_caught() -> None:
    mutant = Mutant("always-tied", count_parameters=lambda c: count_parameters(dataclasses.replace(c, tied_output=True)))
    assert_caught(EMBEDDINGS, mutant)


def test_a_closed_form_without_the_final_layernorms_is_caught(monkeypatch) -> None:
    closed_form = size.closed_form
    monkeypatch.setattr(size, "closed_form", lambda c: closed_form(dataclasses.replace(c, final_norm=False)))
    row = run_row(CORRECTED, ReferenceImplementation())
    assert row.outcome == "fail" and "closed form" in row.message, row


def test_untied_embeddings_break_the_3_percent_agreement() -> None:
    def untied(config: ModelConfig) -> int:
        n = count_parameters(config)
        return n + 2 * config.vocab_size * config.d_model if config == size.table_config("base") else n

    row = run_row(CORRECTED, Mutant("untied", count_parameters=untied))
    assert row.outcome == "fail", row


def test_a_table_that_fits_one_vocabulary_leaves_nothing_to_refute(monkeypatch) -> None:
    """A mis-statement: the table with the counts a 37K tied vocabulary gives (63M, 214M)."""
    monkeypatch.setattr(size, "TABLE", {"base": (6, 512, 2048, 8, 63), "big": (6, 1024, 4096, 16, 214)})
    row = run_row(AS_WRITTEN, None)
    assert row.outcome == "fail", row


@pytest.mark.parametrize("factor", [2, 4])
def test_a_miscounted_output_layer_is_caught(factor: int) -> None:
    def change(c: ModelConfig, n: int) -> int:
        return n + (factor - 1) * c.vocab_size * c.d_model if c.output_layer and not c.tied_output else n

    assert_caught(EMBEDDINGS, _counter(change))


def test_a_wrong_count_is_shown_part_by_part_with_the_part_it_misses() -> None:
    """A model that leaves out its learned position table: the message lists the closed form's parts and names
    that table as the difference."""
    from specformer.properties.blocks.size import closed_form, count_breakdown

    config = ModelConfig(vocab_size=100, d_model=8, heads=2, d_ff=16, encoder_layers=2, positions="learned",
                         max_len=64)
    message = count_breakdown(config, closed_form(config) - 64 * 8)
    assert "(the learned position table of 64 x 8)" in message and "2 encoder layers of" in message, message
    assert "the difference, -512, is the learned position table of 64 x 8: left out?" in message, message
