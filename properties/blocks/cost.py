"""Properties of a layer's cost: attention against the feed-forward network (``spec/blocks/cost.md``).

The implementation's encoder layer runs under ``FlopCounterMode`` in its worker (matrix
products only: norms, softmax and activations are not counted); the expected counts
are the closed form written out here.
"""

from __future__ import annotations

import weakref

import torch
from hypothesis import given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.protocol.base import NotApplicable

from . import strategies as sf

#: Contexts whose layer ``FlopCounterMode`` does not see (a fused kernel), with why.
_INVISIBLE: "weakref.WeakKeyDictionary[object, str]" = weakref.WeakKeyDictionary()


def layer_flops(b: int, t: int, d: int, d_ff: int) -> dict[str, int]:
    """Matmul FLOPs of one encoder layer by part: projections ``8 B t d^2``, the two ``t x t`` products
    ``4 B t^2 d`` (over all heads), the network ``4 B t d d_ff``."""
    return {"projections": 8 * b * t * d * d, "quadratic": 4 * b * t * t * d, "ffn": 4 * b * t * d * d_ff}


def _counted(ctx: Context, b: int, t: int, heads: int, d: int, d_ff: int, norm_first: bool) -> int:
    x = torch.linspace(-1, 1, b * t * d, dtype=torch.float64).reshape(b, t, d)  # (B, t, d)
    with ctx.counting_flops() as counted:  # FlopCounterMode, in the implementation's worker
        ctx.encoder_layer(x, sf.layer_weights(0, d, d_ff), heads=heads, norm_first=norm_first)
    return counted[0]


@claim_property("cost.attention-vs-ffn", needs=("encoder_layer",), dtypes=("float32", "float64"), max_examples=10)
@given(b=sf.dimension(1, 2), t0=sf.dimension(1, 3), heads=sf.dimension(1, 2), d_k=sf.dimension(1, 4),
       d_ff=sf.dimension(1, 16), norm_first=st.booleans())
def a_layer_costs_linear_terms_plus_attentions_quadratic_products(ctx: Context, b, t0, heads, d_k, d_ff,
                                                                  norm_first) -> None:
    """``FLOPs(t) = B (8 d^2 + 4 d d_ff) t + 4 B d t^2``, counted at ``t = t0 .. 4 t0``: the network and the
    projections grow linearly, only the two ``t x t`` products quadratically; they overtake the network
    at ``t = d_ff`` and, with ``d_ff = 4 d``, all of attention overtakes it at ``t = 2 d``."""
    d = heads * d_k
    if ctx not in _INVISIBLE:
        norm_first = sf.within(ctx, "norm_first", norm_first, (False, True))
        counts = [_counted(ctx, b, n * t0, heads, d, d_ff, norm_first) for n in (1, 2, 3, 4)]
        parts = [layer_flops(b, n * t0, d, d_ff) for n in (1, 2, 3, 4)]
        if max(counts) == 0:
            _INVISIBLE[ctx] = "FlopCounterMode cannot see this implementation's layer (0 FLOPs counted: a fused kernel)"
        elif counts == [p["projections"] + p["ffn"] for p in parts]:
            _INVISIBLE[ctx] = ("FlopCounterMode sees this implementation's projections and network but not its "
                               "attention products (exactly the linear terms counted: a fused attention kernel)")
    if ctx in _INVISIBLE:
        raise NotApplicable(_INVISIBLE[ctx])
    expected = [sum(p.values()) for p in parts]
    assert counts == expected, (
        f"B={b}, d_model={d}, d_ff={d_ff}, t={t0}..{4 * t0}: counted {counts} FLOPs, the closed form "
        f"8Btd^2 + 4Bt^2d + 4Btd d_ff gives {expected}"
    )
    second = counts[2] - 2 * counts[1] + counts[0]  # 2 a t0^2 for FLOPs(t) = a t^2 + ...
    assert second == 8 * b * d * t0 * t0, f"second difference {second}: the t^2 term is not 4 B d t^2"
