"""Multi-head attention as a layer uses it: biased projections, heads, output projection.

``MultiHead(Y, X) = Concat(head_1, ..., head_h) W_O + b_O`` with
``head_i = Attention(Y W_Q^i + b_Q^i, X W_K^i + b_K^i, X W_V^i + b_V^i)``: self-attention
passes the same sequence as ``Y`` and ``X``, cross-attention the target as ``Y`` and the
encoder's output as ``X``. The weights are read from a layer's weight dictionary
(:mod:`specformer.protocol.blocks`): ``w_q ... b_o`` for self-attention, ``wc_q ... bc_o``
for cross-attention.

This module does not add the residual connection or the norm (:mod:`.sublayer`).
"""

from __future__ import annotations

import torch

from specformer.reference.attention.attention import scaled_dot_product_attention
from specformer.reference.attention.multihead import merge_heads, split_heads

__all__ = ["multi_head"]


def multi_head(query: torch.Tensor, source: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int,
               cross: bool = False, causal: bool = False) -> torch.Tensor:
    """Attention of ``query (B, t, d_model)`` over ``source (B, s, d_model)``; returns ``(B, t, d_model)``."""
    w = "wc_" if cross else "w_"
    b = "bc_" if cross else "b_"
    d_model = query.shape[-1]
    if heads < 1 or d_model % heads:
        raise ValueError(f"heads={heads} must be >= 1 and divide d_model={d_model}")
    q = split_heads(query @ weights[w + "q"] + weights[b + "q"], heads)  # (B, t, d_model) -> (B, h, t, d_k)
    k = split_heads(source @ weights[w + "k"] + weights[b + "k"], heads)  # (B, s, d_model) -> (B, h, s, d_k)
    v = split_heads(source @ weights[w + "v"] + weights[b + "v"], heads)  # (B, s, d_model) -> (B, h, s, d_k)
    out = scaled_dot_product_attention(q, k, v, causal=causal).output  # (B, h, t, d_k)
    return merge_heads(out) @ weights[w + "o"] + weights[b + "o"]  # (B, h, t, d_k) -> (B, t, d_model)
