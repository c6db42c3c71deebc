"""FLOP counting counts einsum contractions whatever their sizes, so einsum code is costed fairly."""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from conftest import run_row
from specformer.flops import count_flops, einsum_flops
from specformer.reference.attention.attention import AttentionOutput


def einsum_attention(q, k, v, mask=None, *, causal=False):
    """Correct scaled dot-product attention written with einsum."""
    scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(q.shape[-1])  # (B, t_q, t_k)
    if causal:
        allowed = torch.ones(q.shape[1], k.shape[1], dtype=torch.bool, device=q.device).tril()
        mask = allowed if mask is None else mask & allowed
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    return AttentionOutput(torch.einsum("bqk,bkd->bqd", weights, v), weights)


class EinsumAttention:
    name = "einsum"

    def attention(self, q, k, v, mask=None, *, causal=False):
        return einsum_attention(q, k, v, mask, causal=causal)

    def multihead_attention(self, query, key, value, params, mask=None):
        h = params.h
        b, t_q, _ = query.shape
        t_k = key.shape[1]
        q = torch.einsum("btm,mn->btn", query, params.w_q).reshape(b, t_q, h, -1)  # (B, t_q, h, d_k)
        k = torch.einsum("btm,mn->btn", key, params.w_k).reshape(b, t_k, h, -1)  # (B, t_k, h, d_k)
        v = torch.einsum("btm,mn->btn", value, params.w_v).reshape(b, t_k, h, -1)  # (B, t_k, h, d_v)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])  # (B, h, t_q, t_k)
        if mask is not None:
            scores = scores.masked_fill(~mask[:, None] if mask.dim() == 3 else ~mask, float("-inf"))
        heads = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v).reshape(b, t_q, -1)  # (B, t_q, h d_v)
        return torch.einsum("btn,nm->btm", heads, params.w_o)


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("t", [1, 2, 5])
def test_an_einsum_contraction_counts_like_the_same_bmm(t: int, d: int) -> None:
    q, k = torch.randn(2, t, d), torch.randn(2, t, d)
    with count_flops() as by_einsum:
        torch.einsum("bqd,bkd->bqk", q, k)
    with count_flops() as by_bmm:
        q @ k.transpose(1, 2)
    assert by_einsum[0] == by_bmm[0] == 2 * 2 * t * t * d


def test_the_dispatcher_level_counter_alone_misses_size_one_contractions() -> None:
    """Why the einsum rule exists: PyTorch lowers this contraction to aten.mul."""
    q = torch.randn(2, 3, 1)
    with FlopCounterMode(display=False) as counter:
        torch.einsum("bqd,bkd->bqk", q, q)
    assert counter.get_total_flops() == 0


@pytest.mark.parametrize("equation, shapes, expected", [
    ("ij,jk->ik", [(2, 3), (3, 4)], 2 * 2 * 3 * 4),
    ("ij,jk", [(2, 3), (3, 4)], 2 * 2 * 3 * 4),  # implicit output "ik"
    ("ij,ij->ij", [(2, 3), (2, 3)], 0),  # Hadamard: elementwise
    ("i,j->ij", [(2,), (3,)], 0),  # outer product: nothing summed
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], 2 * 2 * 3 * 4 + 2 * 2 * 4 * 5),
    ("ii->", [(3, 3)], 0),  # one operand: no product
    ("...ij,...jk->...ik", [(2, 3), (3, 4)], None),  # ellipsis: left to the dispatcher counter
])
def test_einsum_flops_by_equation(equation: str, shapes, expected) -> None:
    assert einsum_flops(equation, shapes) == expected


def test_an_einsum_implementation_has_quadratic_cost() -> None:
    row = run_row("attention_scores.the_flops_of_attention_are_quadratic_in_the_sequence_length", EinsumAttention())
    assert row.outcome == "pass", f"{row.outcome}: {row.message}"


def test_an_einsum_multihead_implementation_costs_the_same_for_every_h() -> None:
    row = run_row("multihead.h_heads_of_width_d_over_h_cost_the_flops_of_one_head_of_width_d", EinsumAttention())
    assert row.outcome == "pass", f"{row.outcome}: {row.message}"


def test_the_einsum_implementation_is_correct() -> None:
    """The two rows above are about cost only if the implementation is right."""
    for qualname in ("attention.output_matches_the_formula", "multihead.output_is_the_concatenation_of_the_heads_times_w_o"):
        row = run_row(qualname, EinsumAttention())
        assert row.outcome == "pass", f"{qualname}: {row.outcome}: {row.message}"
