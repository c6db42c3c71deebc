"""Every property of ``properties/attention/attention_depth.py`` catches a wrong implementation."""

from __future__ import annotations

import math

import pytest
import torch

from conftest import assert_caught, run_row
from specformer.reference.attention.attention import AttentionOutput


def _softmax_weights(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)


class IdentityWeights:
    """Wrong: every query attends to its own position only, ``A = I``: nothing is mixed."""

    name = "identity-weights"

    def attention(self, q, k, v, mask=None, *, causal=False):
        weights = torch.eye(q.shape[-2], k.shape[-2], dtype=q.dtype, device=q.device).expand(*q.shape[:-1], -1)
        return AttentionOutput(weights @ v, weights)


class WeightsSumToLength:
    """Wrong: the weights sum to ``t_k`` (a sum over keys, not a weighted mean)."""

    name = "weights-sum-to-t_k"

    def attention(self, q, k, v, mask=None, *, causal=False):
        weights = _softmax_weights(q, k, mask) * k.shape[-2]
        return AttentionOutput(weights @ v, weights)


class UniformWeights:
    """Wrong: the scores are ignored, every query averages all the values."""

    name = "uniform-weights"

    def attention(self, q, k, v, mask=None, *, causal=False):
        weights = _softmax_weights(torch.zeros_like(q), k, mask)  # (B, t_q, t_k) all 1/t_k
        return AttentionOutput(weights @ v, weights)


CASES = [
    ("attention_depth.pure_self_attention_stacks_collapse_to_rank_one", IdentityWeights()),
    ("attention_depth.residual_connections_prevent_the_collapse", WeightsSumToLength()),
    ("attention_depth.pure_attention_always_collapses_as_written", UniformWeights()),
]


@pytest.mark.parametrize("qualname, mutant", CASES, ids=[c[0].split(".")[1] for c in CASES])
def test_property_catches_its_mutant(qualname, mutant):
    row = assert_caught(qualname, mutant)
    assert row.examples_checked >= 1


@pytest.mark.parametrize("qualname, mutant", CASES, ids=[c[0].split(".")[1] for c in CASES])
def test_the_mutant_is_wrong_for_its_property_in_float32_too(qualname, mutant):
    assert_caught(qualname, mutant, dtype="float32")


@pytest.mark.parametrize("qualname", [c[0] for c in CASES], ids=[c[0].split(".")[1] for c in CASES])
def test_the_reference_conforms(qualname):
    from specformer.adapters.reference import ReferenceImplementation

    row = run_row(qualname, ReferenceImplementation())
    expected = "refuted" if qualname.endswith("_as_written") else "pass"
    assert row.outcome == expected, f"{qualname}: {row.outcome} {row.message}"


def test_the_refutation_is_found_without_the_hand_picked_example():
    """The thorough profile skips ``@example``: Hypothesis's own search must refute the claim."""
    from specformer.adapters.reference import ReferenceImplementation

    row = run_row("attention_depth.pure_attention_always_collapses_as_written", ReferenceImplementation(),
                  profile="thorough")
    assert row.outcome == "refuted", row.message
