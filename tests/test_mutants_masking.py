"""Every property of ``properties/attention/masking.py`` catches at least one wrong implementation.

Refutations are "caught" by a mutant under which the claim as written is true: the
property then finds no counterexample and the row fails. Properties about the
mathematics or PyTorch itself (``needs=()``) are checked on the pseudo-implementation
``math``, and against a mis-statement of the fact they check.
"""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import (
    CAUSAL_EXCLUDES_SELF,
    CAUSAL_OFF_BY_ONE,
    IGNORES_MASK,
    LARGE_NEGATIVE_FILL,
    NO_SCALE,
    PADDING_MASKS_QUERIES,
    SOFTMAX_WRONG_AXIS,
    Mutant,
    attention_with,
)
from specformer.properties.attention import masking

IGNORES_CAUSAL = Mutant("ignores-causal-flag", lambda q, k, v, mask=None, *, causal=False:
                        attention_with()(q, k, v, mask))
LEAKY_FILL = Mutant("mask-fill-minus-20", attention_with(fill=-20.0))

CASES = [
    ("masking.later_positions_do_not_change_earlier_outputs", CAUSAL_OFF_BY_ONE),
    ("masking.later_positions_do_not_change_earlier_outputs", IGNORES_CAUSAL),
    ("masking.later_positions_do_not_change_earlier_outputs_under_an_explicit_causal_mask", IGNORES_MASK),
    ("masking.causal_attention_over_a_prefix_gives_the_same_rows", CAUSAL_OFF_BY_ONE),
    ("masking.causal_attention_over_a_prefix_gives_the_same_rows", IGNORES_CAUSAL),
    ("masking.output_i_depends_on_position_i_itself_and_not_on_later_ones", CAUSAL_EXCLUDES_SELF),
    ("masking.output_i_depends_on_position_i_itself_and_not_on_later_ones", CAUSAL_OFF_BY_ONE),
    # the claim as written ("only j < i") is true of an implementation that drops the diagonal
    ("masking.output_i_depends_only_on_earlier_positions_as_written", CAUSAL_EXCLUDES_SELF),
    ("masking.causal_weights_are_lower_triangular_with_a_positive_diagonal", CAUSAL_OFF_BY_ONE),
    ("masking.causal_weights_are_lower_triangular_with_a_positive_diagonal", CAUSAL_EXCLUDES_SELF),
    ("masking.masked_keys_get_exactly_zero_weight", IGNORES_MASK),
    ("masking.masked_keys_get_exactly_zero_weight", LEAKY_FILL),
    ("masking.masked_keys_get_exactly_zero_weight", SOFTMAX_WRONG_AXIS),
    ("masking.a_query_with_every_key_masked_gets_zeros_or_nan_and_other_rows_are_unaffected", LARGE_NEGATIVE_FILL),
    ("masking.a_query_with_every_key_masked_gets_zeros_or_nan_and_other_rows_are_unaffected", NO_SCALE),
    ("masking.padded_keys_do_not_change_the_real_positions", IGNORES_MASK),
    ("masking.padded_keys_do_not_change_the_real_positions", PADDING_MASKS_QUERIES),
    ("masking.padded_keys_do_not_change_the_real_positions", NO_SCALE),
    ("masking.positions_outside_the_window_do_not_change_the_output", IGNORES_MASK),
    ("masking.positions_outside_the_window_do_not_change_the_output", NO_SCALE),
]

MATH = [
    ("masking.masking_the_upper_triangle_with_its_diagonal_leaves_every_row_a_distribution_as_written", "float64",
     "refuted"),
    ("masking.minus_1e9_fill_equals_minus_infinity_on_rows_with_an_allowed_key", "float32", "pass"),
    ("masking.minus_1e9_fill_equals_minus_infinity_on_rows_with_an_allowed_key", "float64", "pass"),
    ("masking.minus_1e9_fill_equals_minus_infinity_as_written", "float32", "refuted"),
    ("masking.minus_1e9_fill_equals_minus_infinity_as_written", "float64", "refuted"),
    ("masking.boolean_masks_mean_may_attend_in_sdpa_and_may_not_in_multihead_attention", "float64", "pass"),
    ("masking.the_documents_causal_matrix_gives_causal_attention", "float64", "pass"),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES,
                         ids=[f"{c[0].split('.', 1)[1]}-{c[1].name}" for c in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize(("qualname", "dtype", "outcome"), MATH,
                         ids=[f"{q.split('.', 1)[1]}-{d}" for q, d, _ in MATH])
def test_math_property_has_its_expected_outcome(qualname: str, dtype: str, outcome: str, properties) -> None:
    assert dtype in properties[qualname].dtypes
    row = run_row(qualname, None, dtype)
    assert row.outcome == outcome, f"{qualname} in {dtype}: {row.outcome}, {row.message}"


def test_a_fill_inside_the_score_range_breaks_the_fill_equivalence(monkeypatch) -> None:
    monkeypatch.setattr(masking, "LARGE_NEGATIVE", -100.0)  # scores reach 1e3: the fill no longer underflows
    row = run_row("masking.minus_1e9_fill_equals_minus_infinity_on_rows_with_an_allowed_key", None)
    assert row.outcome == "fail", row.message


def test_a_true_minus_infinity_fill_leaves_nothing_to_refute(monkeypatch) -> None:
    monkeypatch.setattr(masking, "LARGE_NEGATIVE", float("-inf"))
    row = run_row("masking.minus_1e9_fill_equals_minus_infinity_as_written", None)
    assert row.outcome == "fail", row.message


def test_float16_cannot_store_the_fill() -> None:
    assert masking.float16_refuses_the_fill()
    assert torch.finfo(torch.float16).max < -masking.LARGE_NEGATIVE


def test_reading_masks_as_true_means_blocked_breaks_the_convention(monkeypatch) -> None:
    documents = masking.documents_code_attention
    monkeypatch.setattr(masking, "documents_code_attention", lambda q, k, v, mask: documents(q, k, v, mask == 0))
    row = run_row("masking.boolean_masks_mean_may_attend_in_sdpa_and_may_not_in_multihead_attention", None)
    assert row.outcome == "fail", row.message


def test_the_transposed_causal_matrix_is_not_causal(monkeypatch) -> None:
    transposed = tuple(zip(*masking.DOCUMENTS_CAUSAL_MATRIX))
    monkeypatch.setattr(masking, "DOCUMENTS_CAUSAL_MATRIX", transposed)
    row = run_row("masking.the_documents_causal_matrix_gives_causal_attention", None)
    assert row.outcome == "fail", row.message


def test_every_masking_property_is_covered(properties) -> None:
    covered = ({qualname for qualname, _ in CASES + PATH_CASES + SECOND_CHECKS + ALIGNMENT_CASES}
               | {qualname for qualname, _, _ in MATH})
    mine = {q for q, p in properties.items() if p.module == "masking"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


DROPS_MASK_WHEN_CAUSAL = Mutant("drops-mask-when-causal", lambda q, k, v, mask=None, *, causal=False:
                                attention_with()(q, k, v, None if causal else mask, causal=causal))


def _bottom_right_causal(q, k, v, mask=None, *, causal=False):
    if causal:  # aligned bottom-right: the last query sees every key (FlashAttention's convention for t_q != t_k)
        tri = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(k.shape[-2] - q.shape[-2])
        mask = tri if mask is None else mask & tri
    return attention_with()(q, k, v, mask)


BOTTOM_RIGHT_CAUSAL = Mutant("causal-aligned-bottom-right", _bottom_right_causal)


def _lean_path_ignores_mask(q, k, v, mask=None, *, causal=False, need_weights=True):
    """Right with weights; the output-only path (a fused kernel) forgets the mask."""
    return attention_with()(q, k, v, mask if need_weights else None, causal=causal)


LEAN_PATH_IGNORES_MASK = Mutant("need-weights-false-ignores-mask", _lean_path_ignores_mask)


PATH_CASES = [
    ("masking.a_causal_flag_and_a_mask_combine_aligned_top_left", DROPS_MASK_WHEN_CAUSAL),
    ("masking.a_causal_flag_and_a_mask_combine_aligned_top_left", BOTTOM_RIGHT_CAUSAL),
    ("masking.a_causal_flag_and_a_mask_combine_aligned_top_left", IGNORES_MASK),
    ("masking.a_causal_flag_and_a_mask_combine_aligned_top_left", LEAN_PATH_IGNORES_MASK),
    ("masking.a_query_with_every_key_masked_gets_zeros_or_nan_and_other_rows_are_unaffected", LEAN_PATH_IGNORES_MASK),
    ("masking.padded_keys_do_not_change_the_real_positions", LEAN_PATH_IGNORES_MASK),
    ("attention.output_matches_the_formula", LEAN_PATH_IGNORES_MASK),
]


@pytest.mark.parametrize("qualname, mutant", PATH_CASES)
def test_causal_with_a_mask_and_the_output_only_path_are_checked(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    if mutant is LEAN_PATH_IGNORES_MASK:
        assert "need_weights=False" in row.message, row.message


def test_the_strict_upper_triangle_leaves_nothing_to_refute(monkeypatch) -> None:
    """A mis-statement of the refutation: with the diagonal kept, every row is a distribution."""
    monkeypatch.setattr(masking, "documents_upper_triangle",
                        lambda t: torch.ones(t, t, dtype=torch.bool).triu(diagonal=1))
    row = run_row("masking.masking_the_upper_triangle_with_its_diagonal_leaves_every_row_a_distribution_as_written",
                  None)
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"


# -- second, independent checks (a behaviour caught by one property only is caught by two) ------
IGNORES_CAUSAL_WITH_A_MASK = Mutant("ignores-causal-flag-when-a-mask-is-given", lambda q, k, v, mask=None, *,
                                    causal=False: attention_with()(q, k, v, mask, causal=causal and mask is None))
FILL_MINUS_1E20 = Mutant("fill-minus-1e20", attention_with(fill=-1e20))

SECOND_CHECKS = [
    # a causal flag combined with a user mask: the formula property, and self-consistency without the formula
    ("masking.a_causal_flag_and_a_mask_combine_aligned_top_left", IGNORES_CAUSAL_WITH_A_MASK),
    ("masking.a_causal_flag_with_a_mask_equals_the_combined_mask_without_the_flag", IGNORES_CAUSAL_WITH_A_MASK),
    ("masking.a_causal_flag_with_a_mask_equals_the_combined_mask_without_the_flag", DROPS_MASK_WHEN_CAUSAL),
    ("masking.a_causal_flag_with_a_mask_equals_the_combined_mask_without_the_flag", BOTTOM_RIGHT_CAUSAL),
    ("masking.a_causal_flag_with_a_mask_equals_the_combined_mask_without_the_flag", IGNORES_MASK),
    # a large finite fill instead of -inf: the fully masked row, and rows whose allowed scores are very negative
    ("masking.a_query_with_every_key_masked_gets_zeros_or_nan_and_other_rows_are_unaffected", LARGE_NEGATIVE_FILL),
    ("masking.masked_keys_get_no_weight_even_when_every_allowed_score_is_below_minus_1e9", LARGE_NEGATIVE_FILL),
    ("masking.masked_keys_get_no_weight_even_when_every_allowed_score_is_below_minus_1e9", FILL_MINUS_1E20),
    ("masking.masked_keys_get_no_weight_even_when_every_allowed_score_is_below_minus_1e9", IGNORES_MASK),
    # the implementation masks like -1e9 everywhere: nothing left to refute, the row fails
    ("masking.an_implementation_masks_like_the_minus_1e9_fill_as_written", LARGE_NEGATIVE_FILL),
]


@pytest.mark.parametrize("qualname, mutant", SECOND_CHECKS,
                         ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in SECOND_CHECKS])
def test_second_checks_catch_the_mutant(qualname: str, mutant: Mutant) -> None:
    assert_caught(qualname, mutant)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_finfo_min_fill_is_correct_on_very_negative_scores(dtype: str) -> None:
    """A finite fill below every score (``torch.finfo(dtype).min``, as Hugging Face models use) is correct."""
    from specformer.adapters.reference import implementation as reference

    finfo_fill = Mutant("fill-finfo-min", lambda q, k, v, mask=None, *, causal=False:
                        attention_with(fill=torch.finfo(q.dtype).min)(q, k, v, mask, causal=causal))
    for impl in (finfo_fill, reference):
        row = run_row("masking.masked_keys_get_no_weight_even_when_every_allowed_score_is_below_minus_1e9", impl, dtype)
        assert row.outcome == "pass", f"{impl.name}: {row.outcome}, {row.message}"
        row = run_row("masking.an_implementation_masks_like_the_minus_1e9_fill_as_written", impl, dtype)
        assert row.outcome == "refuted", f"{impl.name}: {row.outcome}, {row.message}"
    row = run_row("masking.a_causal_flag_with_a_mask_equals_the_combined_mask_without_the_flag", reference, dtype)
    assert row.outcome == "pass", f"{row.outcome}, {row.message}"


# -- the causal flag without a mask for t_q != t_k (a fast path for mask=None aligned otherwise) ---------------
def _bottom_right_without_a_mask(q, k, v, mask=None, *, causal=False):
    """Top-left with a mask; the path for ``mask=None`` aligns bottom-right (FlashAttention's convention)."""
    if mask is None and causal:
        mask, causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril(k.shape[-2] - q.shape[-2]), False
    return attention_with()(q, k, v, mask, causal=causal)


BOTTOM_RIGHT_WITHOUT_A_MASK = Mutant("causal-bottom-right-without-a-mask", _bottom_right_without_a_mask)
LEAN_PATH_NOT_CAUSAL = Mutant("need-weights-false-not-causal", lambda q, k, v, mask=None, *, causal=False,
                              need_weights=True: attention_with()(q, k, v, mask, causal=causal and need_weights))
UNMASKED_UNEQUAL = "masking.a_causal_flag_without_a_mask_aligns_top_left_when_t_q_and_t_k_differ"
MASKED_UNEQUAL = ("masking.a_causal_flag_and_a_mask_combine_aligned_top_left",
                  "masking.a_causal_flag_with_a_mask_equals_the_combined_mask_without_the_flag")

ALIGNMENT_CASES = [
    (UNMASKED_UNEQUAL, BOTTOM_RIGHT_WITHOUT_A_MASK),
    (UNMASKED_UNEQUAL, BOTTOM_RIGHT_CAUSAL),
    (UNMASKED_UNEQUAL, IGNORES_CAUSAL),
    (UNMASKED_UNEQUAL, CAUSAL_OFF_BY_ONE),
    (UNMASKED_UNEQUAL, CAUSAL_EXCLUDES_SELF),
    (UNMASKED_UNEQUAL, LEAN_PATH_NOT_CAUSAL),
]


@pytest.mark.parametrize(("qualname", "mutant"), ALIGNMENT_CASES,
                         ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in ALIGNMENT_CASES])
def test_the_causal_flag_without_a_mask_is_checked_for_unequal_lengths(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    if mutant is LEAN_PATH_NOT_CAUSAL:
        assert "need_weights=False" in row.message, row.message


@pytest.mark.parametrize("qualname", MASKED_UNEQUAL)
def test_the_masked_properties_alone_miss_a_bottom_right_path_for_mask_none(qualname: str) -> None:
    """The gap the unmasked property closes: every property with a mask passes the fast-path mutant."""
    row = run_row(qualname, BOTTOM_RIGHT_WITHOUT_A_MASK, profile="mutants")
    assert row.outcome == "pass", f"{row.outcome}: {row.message}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_reference_aligns_top_left_without_a_mask(dtype: str) -> None:
    from specformer.adapters.reference import implementation as reference

    row = run_row(UNMASKED_UNEQUAL, reference, dtype)
    assert row.outcome == "pass", f"{row.outcome}, {row.message}"
    assert row.examples_checked >= 20
