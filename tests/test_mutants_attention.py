"""Every property of ``properties/attention/attention.py`` catches at least one wrong implementation."""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught
from mutants import NO_SCALE, SOFTMAX_WRONG_AXIS, Mutant, attention_with
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.masks import apply_mask
from specformer.reference.attention.scores import scaled_dot_product_scores


def from_weights(name: str, weights_fn, output_fn=None) -> Mutant:
    """A mutant computing its weights with ``weights_fn(q, k, v, mask)`` and output ``output_fn(weights, v)``."""

    def attention(q, k, v, mask=None, *, causal=False):
        weights = weights_fn(q, k, v, mask)
        return AttentionOutput((output_fn or (lambda a, v: a @ v))(weights, v), weights)

    return Mutant(name, attention)


def _softmax(scores, mask):
    return torch.softmax(apply_mask(scores, mask), dim=-1)


IGNORES_CAUSAL = Mutant("ignores-causal-flag", lambda q, k, v, mask=None, *, causal=False: attention_with()(q, k, v, mask))
LEAKY_MASK = Mutant("mask-fill-minus-20", attention_with(fill=-20.0))
CLAMPED = from_weights("weights-clamped-inside-(0,1)",
                       lambda q, k, v, m: _softmax(scaled_dot_product_scores(q, k), m).clamp(1e-6, 1 - 1e-6))
WEIGHTS_MISMATCH = Mutant("weights-from-another-computation", lambda q, k, v, mask=None, *, causal=False:
                          AttentionOutput(_softmax(scaled_dot_product_scores(q, k), mask) @ v, _softmax(q @ k.transpose(-2, -1), mask)))
UNNORMALISED = from_weights("no-normalisation", lambda q, k, v, m: torch.exp(apply_mask(scaled_dot_product_scores(q, k), m)))


def _position_bias(q, k, v, m):
    i = torch.arange(q.shape[-2], dtype=q.dtype)[:, None]
    j = torch.arange(k.shape[-2], dtype=q.dtype)[None, :]
    return _softmax(scaled_dot_product_scores(q, k) - (i - j).abs(), m)


POSITION_BIAS = from_weights("position-bias", _position_bias)
POOLED = from_weights("outputs-pooled-over-positions", lambda q, k, v, m: _softmax(scaled_dot_product_scores(q, k), m),
                      lambda a, v: (a @ v).mean(dim=-2, keepdim=True).expand(*a.shape[:-1], v.shape[-1]))
AFFINE = from_weights("output-plus-constant", lambda q, k, v, m: _softmax(scaled_dot_product_scores(q, k), m),
                      lambda a, v: a @ v + 0.1)
VALUE_DEPENDENT = from_weights("scores-see-values",
                               lambda q, k, v, m: _softmax(scaled_dot_product_scores(q, k) + v.sum(-1)[..., None, :], m))
UNIFORM = from_weights("uniform-weights", lambda q, k, v, m: _softmax(torch.zeros_like(scaled_dot_product_scores(q, k)), m))
TRANSPOSED = Mutant("weights-transposed", lambda q, k, v, mask=None, *, causal=False:
                    AttentionOutput(_softmax(scaled_dot_product_scores(q, k), mask) @ v, _softmax(scaled_dot_product_scores(q, k), mask).transpose(-2, -1)))
NEGATED = from_weights("negated-scores", lambda q, k, v, m: _softmax(-scaled_dot_product_scores(q, k), m))
COSINE = from_weights("cosine-scores", lambda q, k, v, m: _softmax(
    10 * torch.nn.functional.normalize(q, dim=-1) @ torch.nn.functional.normalize(k, dim=-1).transpose(-2, -1), m))
HARD = from_weights("hard-argmax-attention", lambda q, k, v, m: torch.nn.functional.one_hot(
    apply_mask(scaled_dot_product_scores(q, k), m).argmax(-1), k.shape[-2]).to(q.dtype))

OWN_VALUE = from_weights("each-query-takes-its-own-position's-value",
                         lambda q, k, v, m: torch.eye(q.shape[-2], k.shape[-2], dtype=q.dtype).expand(q.shape[0], -1, -1))

CASES = [
    ("attention.output_matches_the_formula", NO_SCALE),
    ("attention.rows_of_the_weights_sum_to_one", SOFTMAX_WRONG_AXIS),
    ("attention.weights_lie_in_the_closed_unit_interval", LEAKY_MASK),
    ("attention.weights_lie_strictly_between_zero_and_one_as_written", CLAMPED),
    ("attention.output_is_the_weights_times_the_values", WEIGHTS_MISMATCH),
    ("attention.output_rows_lie_in_the_convex_hull_of_the_values", UNNORMALISED),
    ("attention.self_attention_is_permutation_equivariant", POSITION_BIAS),
    ("attention.pooled_self_attention_is_permutation_invariant", POSITION_BIAS),
    ("attention.self_attention_is_permutation_invariant_as_written", POOLED),
    ("attention.permuting_keys_and_values_together_changes_nothing", POSITION_BIAS),
    ("attention.attention_is_linear_in_the_values", AFFINE),
    ("attention.weights_do_not_depend_on_the_values", VALUE_DEPENDENT),
    ("attention.self_attention_is_linear_in_its_input_as_written", UNIFORM),
    ("attention.weights_are_t_q_by_t_k_and_output_t_q_by_d_v", TRANSPOSED),
    ("attention.weights_are_square_as_written", TRANSPOSED),
    ("attention.self_attention_weights_are_symmetric_as_written", UNIFORM),
    ("attention.with_equal_key_norms_weights_rank_keys_by_cosine", NEGATED),
    ("attention.more_aligned_keys_get_more_weight_as_written", COSINE),
    ("attention.every_output_row_depends_on_every_value_row", HARD),
    ("attention.each_output_row_depends_only_on_its_own_query", SOFTMAX_WRONG_AXIS),
    ("attention.one_set_of_parameters_serves_every_length_and_weights_follow_content", UNIFORM),
    ("attention.the_slides_weights_give_the_slides_output", NO_SCALE),
    ("attention.causal_self_attention_depends_on_the_word_order", IGNORES_CAUSAL),
    ("attention.the_weights_columns_follow_the_keys", POSITION_BIAS),
    # the admonition as written holds for an attention that returns each position's own value
    ("attention.the_output_is_reordered_with_the_columns_of_a_and_the_rows_of_v_as_written", OWN_VALUE),
    ("attention.rearranged_sentences_give_every_word_the_same_output", POSITION_BIAS),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[c[0].split(".", 1)[1] for c in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


def test_every_attention_property_has_a_mutant(properties) -> None:
    covered = {qualname for qualname, _ in CASES}
    mine = {q for q, p in properties.items() if p.module == "attention"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_keys_drawn_with_equal_norms_have_equal_norms() -> None:
    """The ranking property's premise: even keys far shorter than 1e-3 are rescaled exactly, never clamped."""
    from hypothesis import given, settings

    from specformer.properties.attention.attention import query_and_two_keys

    @settings(max_examples=300, database=None)
    @given(case=query_and_two_keys(equal_norms=True))
    def check(case) -> None:
        norms = case[1].norm(dim=-1)[0]  # (2,)
        assert torch.isclose(norms[0], norms[1], rtol=1e-12, atol=0), f"key norms {norms.tolist()}"

    check()
