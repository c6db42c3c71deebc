"""Sharper and fairer attention properties: correct implementations outside the shipped set pass.

* ``attention.dot-fewer-parameters`` on the implementation draws only sizes where every
  correct implementation's additive score costs more than its dot score as the FLOP
  counter sees them; one written plainly from the formulas passes where it failed before,
  and wrong ones still fail.
* An implementation that declares ``returns_weights`` False (outputs only, like a fused
  kernel) gets its weight rows *not applicable* without a single call; its other rows run.
* An implementation whose causal mask is aligned bottom-right (FlashAttention's and
  x-transformers' key-value-cache convention: query ``i`` sees keys ``j <= i + t_k - t_q``)
  and declares ``causal_alignment`` so passes every property that asks for ``causal=True``;
  undeclared, or wrong in another way, it fails.

The multi-head property that reaches ``d_k != d_model / h`` is tested in ``test_mutants_multihead.py``.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings

from conftest import assert_caught, run_row
from specformer.adapters.reference import ReferenceImplementation
from specformer.adapters.reference import implementation as reference
from specformer.context import Context, LocalBackend
from specformer.flops import count_flops
from specformer.properties.attention import attention_scores
from specformer.property import load_properties
from specformer.protocol import Capabilities, declared_capabilities
from specformer.reference.attention.attention import AttentionOutput

DOT_COST = "attention_scores.the_implementations_dot_score_takes_no_parameters_and_costs_less_than_its_additive_score"


# -- attention.dot-fewer-parameters --------------------------------------------------------------
class PlainScores:
    """Scores written from the formulas, as a user would: ``q k^T``, and ``v^T tanh(W_q q + W_k k)`` by
    broadcasting (each query and key projected once: ``2 d_a d_k (t_q + t_k)`` counted FLOPs per batch element)."""

    name = "plain-scores"

    def __init__(self, dot=None) -> None:
        self.dot = dot or (lambda q, k: q @ k.transpose(-2, -1))  # (B, t_q, t_k)

    def score(self, kind: str, q: torch.Tensor, k: torch.Tensor, **params: torch.Tensor) -> torch.Tensor:
        if kind == "dot":
            return self.dot(q, k)
        if kind == "additive":
            w, v, d_k = params["w"], params["v"], q.shape[-1]
            hidden = (q @ w[:, :d_k].T)[:, :, None, :] + (k @ w[:, d_k:].T)[:, None, :, :]  # (B, t_q, t_k, d_a)
            return torch.tanh(hidden) @ v  # (B, t_q, t_k): a matrix-vector product the counter does not see
        raise NotImplementedError(kind)


def _wasteful_dot(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Right dot scores through a 64-fold identity stack: far above the additive formula's least cost."""
    stack = torch.eye(q.shape[-1], dtype=q.dtype).repeat(1, 64)  # (d_k, 64 d_k)
    return (q @ stack) @ (k @ stack).transpose(-2, -1) / 64


def _dot_property(ctx: Context, sizes: tuple[int, int, int, int, int]) -> None:
    """The property's body at one size, without Hypothesis."""
    attention_scores.the_implementations_dot_score_takes_no_parameters_and_costs_less_than_its_additive_score \
        .hypothesis.inner_test(ctx, sizes=sizes)


def test_the_claim_is_false_for_a_plain_implementation_at_d_a_1_so_it_is_not_drawn() -> None:
    """At ``B t_q t_k = 1 x 3 x 5``, ``d_k = 5``, ``d_a = 1`` the plain additive score counts fewer FLOPs than
    its dot score (the failure reported against the property): the size is outside what the property may draw."""
    impl, b, t_q, t_k, d_k, d_a = PlainScores(), 1, 3, 5, 5, 1
    q, k = torch.rand(b, t_q, d_k, dtype=torch.float64), torch.rand(b, t_k, d_k, dtype=torch.float64)
    with count_flops() as dot:
        impl.score("dot", q, k)
    with count_flops() as additive:
        impl.score("additive", q, k, w=torch.rand(d_a, 2 * d_k, dtype=torch.float64),
                   v=torch.rand(d_a, dtype=torch.float64))
    assert (dot[0], additive[0]) == (150, 80)
    ctx = Context(LocalBackend(impl), impl.name, "cpu", "float32")
    with pytest.raises(AssertionError, match="the additive formula needs at least"):
        _dot_property(ctx, (b, t_q, t_k, d_k, d_a))  # the comparison is false there, for a correct implementation


@settings(max_examples=200, database=None, deadline=None)
@given(sizes=attention_scores.cost_sizes())
def test_the_cost_sizes_keep_d_a_above_every_length_and_d_k(sizes: tuple[int, int, int, int, int]) -> None:
    b, t_q, t_k, d_k, d_a = sizes
    assert d_a > max(t_q, t_k, d_k)
    # then each product of the additive formula alone costs more than the whole dot product
    dot = 2 * d_k * b * t_q * t_k
    assert min(2 * d_a * d_k * b * t_q, 2 * d_a * d_k * b * t_k, 2 * d_a * b * t_q * t_k) > dot


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_plain_implementation_passes_at_the_sizes_that_failed(dtype: str) -> None:
    """The reported shape (``B t_q t_k = 15``, ``d_k = 5``) with the least ``d_a`` drawn there, then the whole row."""
    impl = PlainScores()
    _dot_property(Context(LocalBackend(impl), impl.name, "cpu", dtype), (1, 3, 5, 5, 6))
    row = run_row(DOT_COST, impl, dtype)
    assert row.outcome == "pass", f"{row.outcome}, {row.message}"
    assert row.examples_checked >= 20


@pytest.mark.parametrize("impl", [
    PlainScores(dot=_wasteful_dot),  # the counter sees the additive projections only: the formula's least count
    PlainScores(dot=lambda q, k: q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])),  # scaled: wrong values
    PlainScores(dot=lambda q, k: (q @ k.transpose(-2, -1)).transpose(-2, -1) if q.shape[1] == k.shape[1]
                else q @ k.transpose(-2, -1)),  # k q^T where the shapes let it pass unseen
], ids=["wasteful-dot", "scaled-dot", "transposed-dot"])
def test_a_wrong_plain_implementation_still_fails(impl: PlainScores) -> None:
    assert_caught(DOT_COST, impl, "float32")


def test_the_reference_still_passes() -> None:
    row = run_row(DOT_COST, reference, "float32")
    assert row.outcome == "pass", f"{row.outcome}, {row.message}"


# -- returns_weights -----------------------------------------------------------------------------
class HiddenWeights(ReferenceImplementation):
    """The reference's attention, returning its output only (as a fused kernel does); counts its calls."""

    name = "hidden-weights"

    def __init__(self, declared: frozenset[bool] | None) -> None:
        self.calls = 0
        if declared is not None:
            self.capabilities = Capabilities(conventions={"returns_weights": declared})

    def attention(self, q, k, v, mask=None, *, causal=False, need_weights=True):
        self.calls += 1
        return AttentionOutput(super().attention(q, k, v, mask, causal=causal).output, None)


def _attention_properties() -> list[str]:
    return sorted(name for name, prop in load_properties().items()
                  if prop.family == "attention" and "attention" in prop.needs)


def test_declared_hidden_weights_end_the_weight_rows_before_any_call_and_the_others_run() -> None:
    impl = HiddenWeights(frozenset({False}))
    outcomes: dict[str, list[str]] = {}
    for name in _attention_properties():
        impl.calls = 0
        row = run_row(name, impl, "float32")
        if row.outcome == "not-applicable":
            assert "returns_weights" in row.message, f"{name}: {row.message}"
            assert impl.calls == 0 and row.examples_checked == 0, f"{name}: {impl.calls} calls"
        else:
            assert row.outcome in ("pass", "refuted") and row.as_expected, f"{name}: {row.outcome}, {row.message}"
            assert impl.calls > 0, name
        outcomes.setdefault(row.outcome, []).append(name)
    needing = set(outcomes["not-applicable"])
    assert {"attention.rows_of_the_weights_sum_to_one", "attention.output_is_the_weights_times_the_values",
            "masking.masked_keys_get_exactly_zero_weight"} <= needing
    assert {"attention.output_matches_the_formula", "masking.a_causal_flag_and_a_mask_combine_aligned_top_left",
            "attention.weights_are_t_q_by_t_k_and_output_t_q_by_d_v"} <= set(outcomes["pass"])


def test_undeclared_hidden_weights_keep_todays_behaviour() -> None:
    """Nothing declared: the examples are spent (each refused), then the row is not applicable."""
    impl = HiddenWeights(None)
    row = run_row("attention.rows_of_the_weights_sum_to_one", impl, "float32")
    assert row.outcome == "not-applicable" and "does not expose attention weights" in row.message, row.message
    assert impl.calls >= 100


def test_declaring_returned_weights_and_returning_none_is_an_error() -> None:
    row = run_row("attention.rows_of_the_weights_sum_to_one", HiddenWeights(frozenset({True})), "float32")
    assert row.outcome == "error" and "declares returns_weights True" in row.message, f"{row.outcome}, {row.message}"


def test_torch_sdpa_declares_the_weights_it_recovers() -> None:
    from specformer.adapters.torch_sdpa import TorchSDPA

    declared = declared_capabilities(TorchSDPA())
    assert declared is not None and declared.supports("returns_weights", True)
    assert not declared.supports("returns_weights", False)
    row = run_row("attention.rows_of_the_weights_sum_to_one", TorchSDPA(), "float32")
    assert row.outcome == "pass" and row.examples_out_of_domain == 0, f"{row.outcome}, {row.message}"


# -- causal_alignment --------------------------------------------------------------------------
class BottomRight(ReferenceImplementation):
    """The reference's attention with its causal mask aligned bottom-right (``tril(t_k - t_q)``), with or without a
    mask; ``offset`` moves the diagonal (1: each query also sees the next key, wrong), ``unmasked_only`` aligns
    bottom-right only when no mask is given (wrong: the convention is one alignment)."""

    def __init__(self, declared: frozenset[str] | None, offset: int = 0, unmasked_only: bool = False) -> None:
        self.name = f"bottom-right{'+' + str(offset) if offset else ''}{'-unmasked-only' if unmasked_only else ''}"
        self.offset, self.unmasked_only = offset, unmasked_only
        if declared is not None:
            self.capabilities = Capabilities(conventions={"causal_alignment": declared})

    def attention(self, q, k, v, mask=None, *, causal=False):
        if causal and not (self.unmasked_only and mask is not None):
            t_q, t_k = q.shape[-2], k.shape[-2]
            allowed = torch.ones(t_q, t_k, dtype=torch.bool, device=q.device).tril(t_k - t_q + self.offset)
            mask, causal = allowed if mask is None else mask & allowed, False
        return super().attention(q, k, v, mask, causal=causal)


def _causal_properties() -> list[str]:
    """Every property that asks the implementation's attention for ``causal=True``."""
    return sorted(name for name, prop in load_properties().items()
                  if "attention" in prop.needs and "causal=True" in prop.source)


#: The properties that draw ``causal=True`` with ``t_q != t_k``: the only ones where the alignments differ.
UNEQUAL = ("masking.a_causal_flag_without_a_mask_aligns_top_left_when_t_q_and_t_k_differ",
           "masking.a_causal_flag_and_a_mask_combine_aligned_top_left",
           "masking.a_causal_flag_with_a_mask_equals_the_combined_mask_without_the_flag")


def test_the_causal_properties_are_the_ones_expected() -> None:
    causal = _causal_properties()
    assert set(UNEQUAL) <= set(causal) and len(causal) >= 9, causal


def test_a_declared_bottom_right_alignment_passes_every_causal_property() -> None:
    impl = BottomRight(frozenset({"bottom-right"}))
    for name in _causal_properties():
        row = run_row(name, impl, "float64")
        assert row.as_expected and row.outcome in ("pass", "refuted"), f"{name}: {row.outcome}, {row.message}"
        assert row.examples_checked > 0, name


@pytest.mark.parametrize("name", UNEQUAL)
def test_an_undeclared_bottom_right_alignment_fails(name: str) -> None:
    """Undeclared, the implementation is held to the protocol's top-left alignment."""
    assert_caught(name, BottomRight(None), "float64")


class TopLeft(ReferenceImplementation):
    """The reference (top-left), declaring ``causal_alignment`` as given."""

    def __init__(self, declared: frozenset[str]) -> None:
        self.name = f"top-left-declaring-{'-and-'.join(sorted(declared))}"
        self.capabilities = Capabilities(conventions={"causal_alignment": declared})


BR = frozenset({"bottom-right"})


@pytest.mark.parametrize(("name", "impl"), [
    (UNEQUAL[0], BottomRight(BR, offset=1)),  # each query sees one key too many
    (UNEQUAL[1], BottomRight(BR, offset=1)),
    (UNEQUAL[2], BottomRight(BR, offset=1)),
    (UNEQUAL[1], BottomRight(BR, unmasked_only=True)),  # top-left when a mask is given
    (UNEQUAL[2], BottomRight(BR, unmasked_only=True)),
    (UNEQUAL[0], TopLeft(BR)),  # a wrong declaration
    (UNEQUAL[1], TopLeft(BR)),
], ids=["unmasked-offset-1", "masked-offset-1", "combined-offset-1", "masked-top-left-with-a-mask",
        "combined-top-left-with-a-mask", "unmasked-top-left-declared-bottom-right",
        "masked-top-left-declared-bottom-right"])
def test_a_wrong_implementation_declaring_bottom_right_still_fails(name: str, impl: object) -> None:
    assert_caught(name, impl, "float64")


def test_declaring_both_alignments_accepts_either() -> None:
    both = frozenset({"top-left", "bottom-right"})
    for impl in (BottomRight(both), TopLeft(both)):
        for name in UNEQUAL:
            row = run_row(name, impl, "float64")
            assert row.outcome == "pass", f"{impl.name} {name}: {row.outcome}, {row.message}"


def test_x_transformers_declares_its_bottom_right_alignment_and_passes() -> None:
    """x-transformers' ``Attend`` aligns bottom-right and declares it; float32, where its softmax is exact enough."""
    pytest.importorskip("x_transformers")
    from specformer.adapters.xtransformers_attention import XTransformersAttention

    impl = XTransformersAttention()
    declared = declared_capabilities(impl)
    assert declared is not None and declared.supports("causal_alignment", "bottom-right")
    assert not declared.supports("causal_alignment", "top-left")
    for name in UNEQUAL:
        row = run_row(name, impl, "float32")
        assert row.outcome == "pass", f"{name}: {row.outcome}, {row.message}"
