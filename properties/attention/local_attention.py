"""When local attention is all you need (``spec/attention/masking.md``, claim ``masking.local-enough``).

004 lists "local/global masking: sometimes local attention is all you need" among the
reasons to mask. Let full attention give query ``i`` the weights ``a_ij`` and put the
mass ``eps_i = sum_{|i-j| > w} a_ij`` outside a window of width ``w``. Local attention
renormalises the weights inside the window, so

    o_local,i - o_full,i = eps_i/(1 - eps_i) sum_in a_ij v_j - sum_out a_ij v_j,

whose every component is at most ``2 eps_i max_j |v_j|`` in absolute value: local
attention is enough exactly to the extent that full attention is already local. With
finite scores ``eps_i > 0`` whenever a key lies outside the window, so the outputs are
never equal; the refutation states "local attention gives the same output" and finds
a counterexample. Both properties call the implementation with and without the band mask;
``eps`` comes from the float64 formula.
"""

from __future__ import annotations

import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.reference.attention.masks import local_mask

from . import strategies as sf
from .expected import attention_formula


@st.composite
def windowed_sequences(draw: st.DrawFn, max_t: int = 6) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Self-attention-shaped ``q, k (B, t, d_k)``, ``v (B, t, d_v)``, ``t >= 2``, and a window ``w <= t - 2``."""
    large = draw(sf.realistic())  # one in four: batch 3-4, length and widths 7-64
    b, t = draw(sf.sizes(large, 1, 2, "batch")), draw(sf.sizes(large, 2, max_t, "t"))
    d_k, d_v = draw(sf.sizes(large, 1, 4, "d")), draw(sf.sizes(large, 1, 4, "d"))
    q, k, v = (draw(sf.tensors((b, t, d))) for d in (d_k, d_k, d_v))
    return q, k, v, draw(st.integers(0, t - 2))


def _outside_mass(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, w: int) -> torch.Tensor:
    """``eps_i``: the weight full attention puts outside the window, ``(B, t)``."""
    weights = attention_formula(q, k, v)[1]  # (B, t, t)
    return weights.masked_fill(local_mask(q.shape[1], w), 0.0).sum(-1)


@claim_property("masking.local-enough")
@given(case=windowed_sequences())
def local_attention_is_within_twice_the_outside_weight_of_full_attention(ctx: Context, case) -> None:
    """``|o_local,i - o_full,i| <= 2 eps_i max_j |v_j|`` componentwise, ``eps_i`` the full weights outside the window."""
    q, k, v, w = case
    local = ctx.attention(q, k, v, local_mask(q.shape[1], w)).output
    full = ctx.attention(q, k, v).output
    bound = 2 * _outside_mass(q, k, v, w)[..., None] * v.abs().amax(dim=(1, 2))[:, None, None]  # (B, t, 1)
    slack = 4 * (ctx.tol.atol + ctx.tol.rtol * v.abs().max())  # two outputs' rounding
    gap = (local - full).abs()  # (B, t, d_v)
    worst = (gap - bound).amax().item()
    assert worst <= slack, (
        f"w={w}: local and full attention differ by {gap.max().item():.6g}, more than 2 eps max|v| "
        f"(by {worst:.3g}; eps = {_outside_mass(q, k, v, w).flatten().tolist()})"
    )


@claim_property("masking.local-enough", expect="counterexample")
@given(case=windowed_sequences())
@example(case=(torch.zeros(1, 2, 1, dtype=torch.float64), torch.zeros(1, 2, 1, dtype=torch.float64),
               torch.tensor([[[0.0], [1.0]]], dtype=torch.float64), 0))
def local_attention_gives_the_output_of_full_attention_as_written(ctx: Context, case) -> None:
    """As written: local attention is all you need, i.e. a band mask leaves the output unchanged."""
    q, k, v, w = case
    assume(bool((_outside_mass(q, k, v, w) > 1e-3).any()))  # some key outside the window carries weight
    local = ctx.attention(q, k, v, local_mask(q.shape[1], w)).output
    full = ctx.attention(q, k, v).output
    ctx.assert_close(local, full, f"output with a band mask of width {w} vs without", scale=q.shape[1])
