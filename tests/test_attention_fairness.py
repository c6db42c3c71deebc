"""Sharper and fairer attention properties: correct implementations outside the shipped set pass.

* ``attention.dot-fewer-parameters`` on the implementation draws only sizes where every
  correct implementation's additive score costs more than its dot score as the FLOP
  counter sees them; one written plainly from the formulas passes where it failed before,
  and wrong ones still fail.
* An implementation that declares ``returns_weights`` False (outputs only, like a fused
  kernel) gets its weight rows *not applicable* without a single call; its other rows run.

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
