"""Every property of ``properties/attention/attention_scores.py`` catches at least one wrong implementation.

Properties about the mathematics (``needs=()``) run against ``math``: the hold must pass
and the refutation refute, and replacing the formula they examine with a wrong (or, for
refutations, a corrected) variant must change the outcome.
"""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import (
    ATTENTION_CUBIC,
    ATTENTION_DUPLICATED_FEATURES,
    NO_SCALE,
    SCALE_BY_D,
    SCORE_ADDITIVE_HALVES_SWAPPED,
    SCORE_COSINE_FROBENIUS,
    SCORE_GAUSSIAN_AS_WRITTEN,
    SCORE_GENERAL_W_TRANSPOSED,
    SCORE_SCALED_DOT_SIGMOID,
    SOFTMAX_WRONG_AXIS,
)
from specformer.adapters.reference import implementation as reference
from specformer.properties.attention import attention_scores
from specformer.reference.attention import scores as reference_scores

P = "attention_scores."

CASES = [
    (P + "every_score_function_matches_its_formula_and_gives_valid_weights", SCORE_GENERAL_W_TRANSPOSED),
    (P + "every_score_function_matches_its_formula_and_gives_valid_weights", SCORE_ADDITIVE_HALVES_SWAPPED),
    (P + "every_score_function_matches_its_formula_and_gives_valid_weights", SCORE_GAUSSIAN_AS_WRITTEN),
    (P + "every_score_function_matches_its_formula_and_gives_valid_weights", SCORE_COSINE_FROBENIUS),
    (P + "every_score_function_matches_its_formula_and_gives_valid_weights", SCORE_SCALED_DOT_SIGMOID),
    (P + "the_gaussian_score_gives_the_nearest_key_the_most_weight", SCORE_GAUSSIAN_AS_WRITTEN),
    (P + "the_cosine_score_is_bounded_and_ignores_the_lengths_of_each_query_and_key", SCORE_COSINE_FROBENIUS),
    (P + "scaled_dot_scores_are_unbounded_and_only_their_softmax_lies_in_the_unit_interval", SCORE_SCALED_DOT_SIGMOID),
    # the refutation finds nothing to refute when the scores really lie in (0, 1): a fail row
    (P + "the_score_matrix_lies_in_the_open_unit_interval_as_written", SCORE_SCALED_DOT_SIGMOID),
    (P + "the_flops_of_attention_are_quadratic_in_the_sequence_length", ATTENTION_CUBIC),
    (P + "the_flops_of_attention_are_quadratic_in_the_sequence_length", ATTENTION_DUPLICATED_FEATURES),
    (P + "gaussian_kernel_regression_is_scaled_dot_product_attention", NO_SCALE),
    (P + "gaussian_kernel_regression_is_scaled_dot_product_attention", SOFTMAX_WRONG_AXIS),
    (P + "kernel_regression_with_the_slides_negative_distance_is_attention", SOFTMAX_WRONG_AXIS),
    (P + "kernel_regression_with_the_slides_negative_distance_is_attention", NO_SCALE),
    (P + "kernel_regression_with_the_slides_negative_distance_is_attention", SCALE_BY_D),
]


@pytest.mark.parametrize("qualname, mutant", CASES, ids=[f"{q.split('.')[-1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: object) -> None:
    assert_caught(qualname, mutant)


@pytest.mark.parametrize("qualname", [
    P + "every_score_function_matches_its_formula_and_gives_valid_weights",
    P + "the_gaussian_score_gives_the_nearest_key_the_most_weight",
    P + "the_cosine_score_is_bounded_and_ignores_the_lengths_of_each_query_and_key",
    P + "scaled_dot_scores_are_unbounded_and_only_their_softmax_lies_in_the_unit_interval",
    P + "the_flops_of_attention_are_quadratic_in_the_sequence_length",
    P + "gaussian_kernel_regression_is_scaled_dot_product_attention",
    P + "kernel_regression_with_the_slides_negative_distance_is_attention",
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_reference_passes(qualname: str, dtype: str) -> None:
    row = run_row(qualname, reference, dtype)
    assert row.outcome == "pass", f"{qualname} on the reference ({dtype}): {row.outcome}, {row.message}"


def test_the_reference_refutes_the_score_range_as_written() -> None:
    row = run_row(P + "the_score_matrix_lies_in_the_open_unit_interval_as_written", reference)
    assert row.outcome == "refuted", row.message


# -- properties about the mathematics --------------------------------------------------
@pytest.mark.parametrize("qualname, outcome", [
    (P + "dot_scores_need_no_parameters_and_fewer_flops_than_additive_scores", "pass"),
    (P + "the_slides_gaussian_score_gives_the_nearest_key_the_most_weight_as_written", "refuted"),
    (P + "the_slides_matrix_norm_cosine_is_the_cosine_of_each_pair_as_written", "refuted"),
])
def test_math_properties_have_their_expected_outcome(qualname: str, outcome: str) -> None:
    row = run_row(qualname, None)
    assert row.outcome == outcome, f"{qualname}: {row.outcome}, {row.message}"


def _split_additive_scores(q, k, w, v):
    """Additive scores projecting each query and key once, ``W_1 q_i + W_2 k_j``: O(d_a) per pair."""
    d_k = q.shape[-1]
    hidden = (q @ w[:, :d_k].T)[..., :, None, :] + (k @ w[:, d_k:].T)[..., None, :, :]  # (B, t_q, t_k, d_a)
    return torch.tanh(hidden) @ v


def test_the_split_additive_score_breaks_the_flop_count(monkeypatch) -> None:
    monkeypatch.setattr(reference_scores, "additive_scores", _split_additive_scores)
    row = run_row(P + "dot_scores_need_no_parameters_and_fewer_flops_than_additive_scores", None)
    assert row.outcome == "fail", f"{row.outcome}, {row.message}"
    assert "additive scores" in row.message


def test_a_dot_score_with_a_parameter_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(reference_scores, "dot_product_scores", lambda q, k, w=None: q @ k.transpose(-2, -1))
    row = run_row(P + "dot_scores_need_no_parameters_and_fewer_flops_than_additive_scores", None)
    assert row.outcome == "fail" and "parameters ['w']" in row.message, f"{row.outcome}, {row.message}"


def test_the_gaussian_with_the_minus_sign_leaves_nothing_to_refute(monkeypatch) -> None:
    monkeypatch.setattr(attention_scores, "slide_gaussian_scores",
                        lambda q, k, sigma: -attention_scores._squared_distances(q, k) / sigma**2)
    row = run_row(P + "the_slides_gaussian_score_gives_the_nearest_key_the_most_weight_as_written", None)
    assert row.outcome == "fail", f"{row.outcome}, {row.message}"


def test_the_per_row_cosine_leaves_nothing_to_refute(monkeypatch) -> None:
    monkeypatch.setattr(attention_scores, "slide_cosine_scores", attention_scores._row_cosines)
    row = run_row(P + "the_slides_matrix_norm_cosine_is_the_cosine_of_each_pair_as_written", None)
    assert row.outcome == "fail", f"{row.outcome}, {row.message}"


# -- torch ----------------------------------------------------------------------------
def test_the_flop_counter_cannot_see_the_fused_cpu_kernel() -> None:
    """Why the cost property may be not applicable: 4-D inputs take a kernel the counter lacks."""
    from torch.utils.flop_counter import FlopCounterMode

    q = torch.ones(1, 1, 4, 2)  # (B, h, t, d): CPU flash attention
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    fused = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.scaled_dot_product_attention(q[0], q[0], q[0])  # 3-D: the math path, two bmm
    assert fused == 0
    # torch up to 2.13 counts the 3-D math path's two bmm; 2.14 (its CUDA build, on the CPU) counts
    # nothing there either: an implementation of plain 3-D SDPA is then not applicable too
    assert counter.get_total_flops() in (2 * 1 * 4 * 4 * (2 + 2), 0), counter.get_total_flops()


def test_an_invisible_implementation_is_not_applicable() -> None:
    class FusedOnly:
        """PyTorch's fused CPU kernel (4-D inputs), no weights: nothing the counter sees."""

        name = "fused-only"

        def attention(self, q, k, v, mask=None, *, causal=False):
            out = torch.nn.functional.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None])
            return out[:, 0], None

    row = run_row(P + "the_flops_of_attention_are_quadratic_in_the_sequence_length", FusedOnly())
    assert row.outcome == "not-applicable" and "FlopCounterMode" in row.message, f"{row.outcome}, {row.message}"


def test_a_fused_kernel_behind_counted_projections_is_not_a_failure() -> None:
    """Correct attention: identity projections the counter sees (linear in t), then PyTorch's fused
    CPU kernel it does not see. The counts are linear in t; the guard of multihead.cost-equal makes
    the row not applicable instead of failing a correct implementation."""

    class ProjectedFused:
        name = "projected-fused"

        def attention(self, q, k, v, mask=None, *, causal=False):
            eye_k = torch.eye(q.shape[-1], dtype=q.dtype)
            eye_v = torch.eye(v.shape[-1], dtype=v.dtype)
            q, k, v = q @ eye_k, k @ eye_k, v @ eye_v  # (B, t, d): counted, linear in t
            mask = mask[:, None] if mask is not None and mask.dim() == 3 else mask  # (B, 1, t_q, t_k)
            out = torch.nn.functional.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None], attn_mask=mask,
                                                                   is_causal=causal)  # (B, 1, t_q, d_v): unseen
            return out[:, 0], None

    impl = ProjectedFused()
    row = run_row(P + "the_flops_of_attention_are_quadratic_in_the_sequence_length", impl)
    assert row.outcome == "not-applicable" and "FlopCounterMode" in row.message, f"{row.outcome}, {row.message}"
    formula = run_row("attention.output_matches_the_formula", impl)
    assert formula.outcome == "pass", f"the implementation is correct: {formula.outcome}, {formula.message}"


# -- attention.dot-fewer-parameters on the implementation's score functions -------------------
from mutants import Mutant, score_with  # noqa: E402


def _wasteful_dot(q, k):
    """Right dot scores at a cost above the additive score's: both sides widened 64 times by an identity stack."""
    d_k = q.shape[-1]
    stack = torch.eye(d_k, dtype=q.dtype).repeat(1, 64)  # (d_k, 64 d_k)
    return (q @ stack) @ (k @ stack).transpose(-2, -1) / 64  # 2 B t_q t_k (64 d_k) FLOPs and more


SCORE_DOT_WASTEFUL = Mutant("score-dot-through-a-64-fold-identity", score=score_with(dot=_wasteful_dot))
SCORE_DOT_SCALED = Mutant("score-dot-scaled", score=score_with(dot=lambda q, k: q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5))
DOT_COST = P + "the_implementations_dot_score_takes_no_parameters_and_costs_less_than_its_additive_score"


@pytest.mark.parametrize("mutant", [SCORE_DOT_WASTEFUL, SCORE_DOT_SCALED], ids=lambda m: m.name)
def test_the_implementations_dot_score_cost_catches(mutant) -> None:
    assert_caught(DOT_COST, mutant)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_reference_dot_score_is_cheaper(dtype: str) -> None:
    row = run_row(DOT_COST, reference, dtype)
    assert row.outcome == "pass", f"{row.outcome}, {row.message}"
