"""Every property of ``properties/embeddings/onehot.py`` catches a wrong lookup or a mis-statement.

Lookup mutants replace ``embedding_lookup``; the properties about PyTorch's own module and
the documents' numbers (``needs=()``) are shown to fail by swapping the small functions
and constants they are built from. The family's strategies are tested here too.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.embeddings import onehot
from specformer.properties.embeddings import strategies as sf

NEXT_ROW = Mutant("lookup-next-row", embedding_lookup=lambda ids, table: table[(ids + 1) % table.shape[0]])
ROW_ZERO = Mutant("lookup-row-zero", embedding_lookup=lambda ids, table: table[torch.zeros_like(ids)])

ORTHOGONAL = "onehot.one_hot_vectors_are_orthogonal_unit_vectors_all_sqrt_2_apart"
LOOKUP = "onehot.looking_up_a_row_is_multiplying_its_one_hot_vector_by_the_table"
RATIO = "onehot.a_512_wide_embedding_is_97_7_times_narrower_than_a_50000_wide_one_hot_vector"
RATIO_AS_WRITTEN = "onehot.a_512_wide_embedding_is_100_times_narrower_as_written"
PARAMETERS = "onehot.a_50k_by_4096_table_holds_204_8_million_parameters"
INIT = "onehot.nn_embedding_starts_from_standard_normal_entries"
INIT_AS_WRITTEN = "onehot.nn_embedding_starts_uniform_within_one_over_sqrt_d_as_written"
TYING = "onehot.a_tied_output_layer_shares_the_embedding_matrix"
FREEZING = "onehot.a_frozen_pretrained_table_stays_as_loaded_and_a_fine_tuned_one_moves"
FREEZING_DTYPE = "onehot.a_float64_array_through_weight_data_makes_the_table_float64_and_the_next_layer_raise"
BACKPROP = "onehot.the_gradient_of_a_lookup_is_the_one_hot_transpose_times_the_upstream_gradient"

def _uniform_table(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The document's initialisation: Uniform(-1/sqrt(d), 1/sqrt(d))."""
    g = torch.Generator().manual_seed(seed)
    return ((torch.rand(vocab, dim, generator=g, dtype=torch.float64) * 2 - 1) / dim**0.5).to(dtype)


def _scaled_normal(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Wrong for nn.Embedding: N(0, 1/d) (a "scaled" initialisation)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(vocab, dim, generator=g, dtype=torch.float64) / dim**0.5).to(dtype)


def _shifted_normal(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Wrong: N(0.02, 1), a small bias the sample of 2^18 entries resolves."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(vocab, dim, generator=g, dtype=torch.float64) + 0.02).to(dtype)


UNIFORM_INIT = Mutant("init-uniform-within-1-over-sqrt-d", embedding_init=_uniform_table)
SCALED_INIT = Mutant("init-normal-with-variance-1-over-d", embedding_init=_scaled_normal)
SHIFTED_INIT = Mutant("init-normal-mean-0.02", embedding_init=_shifted_normal)


def _scaled_by_frequency(ids, table, upstream):
    """Wrong for the plain lookup: nn.Embedding's scale_grad_by_freq=True (a real option)."""
    module = nn.Embedding.from_pretrained(table.clone(), freeze=False, scale_grad_by_freq=True)
    with torch.enable_grad():
        (module(ids) * upstream).sum().backward()
    return module.weight.grad


def _last_occurrence(ids, table, upstream):
    """Wrong: a repeated id keeps the gradient of its last occurrence (assignment, not accumulation)."""
    gradient = torch.zeros_like(table)
    gradient[ids.reshape(-1)] = upstream.reshape(-1, table.shape[1])  # (n, d), last write wins
    return gradient


def _dense_gradient(ids, table, upstream):
    """Wrong: every row gets the summed upstream gradient (a lookup read as a broadcast)."""
    return upstream.reshape(-1, table.shape[1]).sum(0).expand_as(table).clone()


def _untied_logits(hidden, table):
    """Wrong: scores against another matrix than the embedding (its rows shifted by one)."""
    return hidden @ table.roll(1, dims=0).T


SCALED_GRAD = Mutant("lookup-gradient-scaled-by-frequency", lookup_gradient=_scaled_by_frequency)
LAST_WINS = Mutant("lookup-gradient-last-occurrence-wins", lookup_gradient=_last_occurrence)
DENSE_GRAD = Mutant("lookup-gradient-on-every-row", lookup_gradient=_dense_gradient)
class _CachedOutputLayer:
    """Wrong: an output layer copied from the first table of each shape and kept (a tie that went stale)."""

    def __init__(self) -> None:
        self.copies: dict[tuple[int, ...], torch.Tensor] = {}

    def __call__(self, hidden, table):
        kept = self.copies.setdefault(tuple(table.shape), table.clone())
        return hidden @ kept.T


UNTIED = Mutant("tied-logits-against-another-matrix", tied_logits=_untied_logits)
STALE = Mutant("tied-logits-against-a-stale-copy", tied_logits=_CachedOutputLayer())
OUTPUT_ROWS = "onehot.each_words_output_vector_is_its_embedding_row"
TRANSPOSED = Mutant("tied-logits-scaled-by-sqrt-d", tied_logits=lambda h, t: h @ t.T / t.shape[1] ** 0.5)

CASES = [
    (INIT, UNIFORM_INIT), (INIT, SCALED_INIT), (INIT, SHIFTED_INIT),
    (BACKPROP, SCALED_GRAD), (BACKPROP, LAST_WINS), (BACKPROP, DENSE_GRAD),
    (TYING, UNTIED), (TYING, TRANSPOSED), (TYING, LAST_WINS), (TYING, NEXT_ROW),
    (OUTPUT_ROWS, UNTIED), (OUTPUT_ROWS, TRANSPOSED), (OUTPUT_ROWS, STALE),
    (ORTHOGONAL, NEXT_ROW), (ORTHOGONAL, ROW_ZERO),
    (LOOKUP, NEXT_ROW), (LOOKUP, ROW_ZERO),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_reference_passes_the_lookup_properties(dtype: str) -> None:
    from specformer.adapters.reference import implementation

    for qualname in (ORTHOGONAL, LOOKUP):
        assert run_row(qualname, implementation, dtype).outcome == "pass"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_reference_and_torch_pass_the_tying_properties(dtype: str) -> None:
    from specformer.adapters.reference import implementation
    from specformer.adapters.torch_embedding import implementation as torch_embedding

    for impl in (implementation, torch_embedding):
        for qualname in (TYING, OUTPUT_ROWS):
            row = run_row(qualname, impl, dtype)
            assert row.outcome == "pass", (impl.name, qualname, row.message)


def test_the_ratio_is_refuted_and_a_document_that_gave_100_is_not(monkeypatch) -> None:
    assert run_row(RATIO, None).outcome == "pass"
    row = run_row(RATIO_AS_WRITTEN, None)
    assert row.outcome == "refuted" and "97.66" in row.message, row
    monkeypatch.setattr(onehot, "DOCUMENT_VOCAB", 51_200)  # 51,200 / 512 = 100 exactly
    assert run_row(RATIO_AS_WRITTEN, None).outcome == "fail"


def test_a_misstated_ratio_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(onehot, "DOCUMENT_RATIO", 50)
    row = run_row(RATIO, None)
    assert row.outcome == "fail" and "within 3%" in row.message, row


def test_a_misstated_parameter_count_is_caught(monkeypatch) -> None:
    assert run_row(PARAMETERS, None).outcome == "pass"
    monkeypatch.setattr(onehot, "SUMMARY_PARAMETERS", 250_000_000)
    row = run_row(PARAMETERS, None)
    assert row.outcome == "fail" and "two significant figures" in row.message, row


def test_the_initialisation_is_refuted_and_the_documents_law_would_fail_the_correction() -> None:
    from specformer.adapters.reference import implementation

    assert run_row(INIT, implementation).outcome == "pass"
    row = run_row(INIT_AS_WRITTEN, implementation)
    assert row.outcome == "refuted" and "beyond 1/sqrt(d)" in row.message, row
    row = run_row(INIT, UNIFORM_INIT)
    assert row.outcome == "fail" and "Kolmogorov distance" in row.message, row
    assert run_row(INIT_AS_WRITTEN, UNIFORM_INIT).outcome == "fail"  # no counterexample under the document's law


def test_the_dkw_bound_is_what_the_spec_states() -> None:
    bound = (torch.log(torch.tensor(2 / onehot.DELTA)) / (2 * onehot.SAMPLES)).sqrt()
    assert float(bound) <= 0.0058 and 11 * onehot.DELTA <= 1e-6


def test_a_freeze_of_a_detached_copy_is_caught(monkeypatch) -> None:
    assert run_row(FREEZING, None).outcome == "pass"
    monkeypatch.setattr(onehot, "freeze", lambda embedding: embedding.weight.detach().requires_grad_(False))
    row = run_row(FREEZING, None)
    assert row.outcome == "fail" and "frozen" in row.message, row


def test_every_onehot_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {RATIO, RATIO_AS_WRITTEN, PARAMETERS, INIT_AS_WRITTEN, FREEZING, FREEZING_DTYPE}
    covered |= {WIDTHS, WIDTHS_AS_WRITTEN, TYPICAL}  # tested further down
    mine = {q for q, p in properties.items() if p.module == "onehot"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_input() -> None:
    from specformer.reference.embeddings.onehot import lookup, one_hot

    table = torch.ones(3, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="ids must be an integer tensor"):
        lookup(torch.tensor([0.0]), table)
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 3\)"):
        lookup(torch.tensor([3]), table)
    with pytest.raises(ValueError, match="2-D"):
        lookup(torch.tensor([0]), torch.ones(3))
    with pytest.raises(ValueError, match="vocab_size must be at least 1"):
        one_hot(torch.tensor([0]), 0)


# -- the family's strategies -------------------------------------------------------------------

FEW = settings(max_examples=40, deadline=None, database=None)


@FEW
@given(case=sf.lookup_cases())
def test_lookup_cases_hold_valid_ids(case) -> None:
    ids, table = case
    assert ids.dtype == torch.int64 and table.dtype == torch.float64 and table.dim() == 2
    assert ids.numel() == 0 or (0 <= int(ids.min()) and int(ids.max()) < table.shape[0])


@FEW
@given(case=sf.vector_pairs(min_norm=0.1))
def test_vector_pairs_keep_away_from_zero(case) -> None:
    a, b = case
    assert a.shape == b.shape and bool((a.norm(dim=-1) >= 0.1).all()) and bool((b.norm(dim=-1) >= 0.1).all())


@FEW
@given(counts=sf.word_counts())
def test_word_counts_are_whole_and_positive(counts) -> None:
    assert bool((counts >= 1).all()) and bool((counts == counts.round()).all()) and counts.max() <= 10**6


@FEW
@given(x=sf.cooccurrences())
def test_cooccurrences_are_finite_and_non_negative(x) -> None:
    assert bool(torch.isfinite(x).all()) and bool((x >= 0).all())


@FEW
@given(case=sf.context_cases())
def test_context_cases_have_a_context(case) -> None:
    ids, table = case
    assert ids.dim() == 2 and ids.shape[1] >= 1 and int(ids.max()) < table.shape[0]


@FEW
@given(word=sf.words())
def test_words_are_strings_without_lone_surrogates(word) -> None:
    assert isinstance(word, str)
    word.encode("utf-8")  # raises on a lone surrogate


def test_nonzero_rows_replaces_only_short_rows() -> None:
    x = torch.tensor([[0.0, 0.0], [3.0, 4.0], [1e-9, 0.0]], dtype=torch.float64)
    out = sf.nonzero_rows(x, 0.1)
    assert torch.equal(out, torch.tensor([[1.0, 0.0], [3.0, 4.0], [1.0, 0.0]], dtype=torch.float64))
    assert torch.equal(x[0], torch.zeros(2, dtype=torch.float64)), "the input must not change"


@FEW
@given(shape=st.sampled_from([(), (3,), (2, 3)]), data=st.data())
def test_id_tensors_have_the_shape(shape, data) -> None:
    ids = data.draw(sf.id_tensors(4, shape))
    assert tuple(ids.shape) == shape and ids.dtype == torch.int64


def test_a_table_that_kept_its_float32_through_weight_data_is_caught(monkeypatch) -> None:
    assert run_row(FREEZING_DTYPE, None).outcome == "pass"

    def freeze_keeping_float32(embedding):
        embedding.weight.data = embedding.weight.data.float()
        embedding.weight.requires_grad = False

    monkeypatch.setattr(onehot, "freeze", freeze_keeping_float32)
    row = run_row(FREEZING_DTYPE, None)
    assert row.outcome == "fail" and "after weight.data" in row.message, row


# --- onehot.modern-llm-widths ------------------------------------------------------------------------

WIDTHS = "onehot.modern_llm_widths_span_2304_to_18432"
WIDTHS_AS_WRITTEN = "onehot.every_modern_llm_is_4096_to_12288_wide_as_written"


def test_the_llm_widths_hold_and_refute_the_range(monkeypatch) -> None:
    assert run_row(WIDTHS, None).outcome == "pass"
    row = run_row(WIDTHS_AS_WRITTEN, None)
    assert row.outcome == "refuted" and "16384" in row.message and "2304" in row.message, row
    # a wrong correction: a range from 2304 to 18,432 leaves no model outside, and the property says so
    monkeypatch.setattr(onehot, "LLM_WIDTHS", range(2304, 18_433))
    row = run_row(WIDTHS, None)
    assert row.outcome == "fail" and "below 4096" in row.message, row


# --- the embedding table's share of the base model and the 65M model's results (spec/blocks/size.md) --------

SHARE = "size.the_table_is_the_largest_part_only_past_a_vocabulary_of_49212_words"
SOTA = "size.the_base_model_is_state_of_the_art_in_english_german_only"
SOTA_AS_WRITTEN = "size.the_base_model_is_state_of_the_art_in_translation_as_written"


def test_the_table_share_holds_and_catches_a_wrong_statement(monkeypatch) -> None:
    from specformer.properties.blocks import size

    assert run_row(SHARE, None).outcome == "pass"
    # wrong: the feed-forward layers of one stack only (12.6M), under which the paper's table would be the largest
    monkeypatch.setattr(size, "BASE_FFN", 25_196_544 // 2)
    row = run_row(SHARE, None)
    assert row.outcome == "fail", row
    monkeypatch.undo()
    # wrong: a count that puts the table in twice
    parts = size.parameter_parts
    monkeypatch.setattr(size, "parameter_parts", lambda c: {**parts(c), "vocabulary": 2 * parts(c)["vocabulary"]})
    assert run_row(SHARE, None).outcome == "fail"


def test_the_65m_results_hold_for_english_german_and_refute_english_french(monkeypatch) -> None:
    from specformer.properties.blocks import size

    assert run_row(SOTA, None).outcome == "pass"
    row = run_row(SOTA_AS_WRITTEN, None)
    assert row.outcome == "refuted" and "English-French" in row.message, row
    # wrong: a base model ahead in English-French too would make the correction fail
    monkeypatch.setitem(size.BLEU, "English-French", {"transformer base": 41.5,
                                                      "best earlier (ConvS2S ensemble)": 41.29})
    assert run_row(SOTA, None).outcome == "fail"


TYPICAL = "onehot.the_named_widths_are_50_to_300_for_word_vectors_and_512_to_12288_for_models"


def test_the_typical_widths_hold_and_catch_a_mis_stated_range(monkeypatch) -> None:
    assert run_row(TYPICAL, None).outcome == "pass"
    monkeypatch.setattr(onehot, "STATIC_WIDTHS", range(128, 301))  # wrong: "128 to 300"
    row = run_row(TYPICAL, None)
    assert row.outcome == "fail" and "50-300" in row.message, row
    monkeypatch.undo()
    monkeypatch.setattr(onehot, "MODEL_WIDTHS", range(768, 12_289))  # wrong: "768 to 12,288" leaves out T5-small
    assert run_row(TYPICAL, None).outcome == "fail"
