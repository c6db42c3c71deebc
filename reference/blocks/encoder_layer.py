"""One encoder layer: self-attention, then the feed-forward network, each a residual sublayer.

Post-norm (``norm_first=False``, the original transformer)::

    y   = LayerNorm_1(x + MultiHead(x, x))
    out = LayerNorm_2(y + FFN(y))

Pre-norm (``norm_first=True``)::

    y   = x + MultiHead(LN_1(x), LN_1(x))
    out = y + FFN(LN_2(y))

With ``causal=True`` position ``i`` attends to positions ``<= i`` only: the layer of a
decoder-only (GPT-style) stack, which has no cross-attention. Weights come as a
dictionary with the keys :data:`specformer.protocol.blocks.ENCODER_KEYS`.

This module does not embed tokens, add positions, apply dropout or stack layers
(:mod:`.stack`).
"""

from __future__ import annotations

import torch

from specformer.protocol.blocks import ENCODER_KEYS

from .attention_sublayer import multi_head
from .ffn import feed_forward
from .sublayer import residual_sublayer

__all__ = ["check_weights", "encoder_layer"]


def check_weights(x: torch.Tensor, weights: dict[str, torch.Tensor], keys: tuple[str, ...]) -> int:
    """Raise a clear error unless ``weights`` holds ``keys`` with shapes that fit ``x (B, t, d_model)``; ``d_ff``."""
    if x.dim() != 3:
        raise ValueError(f"x must be (B, t, d_model), got shape {tuple(x.shape)}")
    missing = [k for k in keys if k not in weights]
    if missing:
        raise ValueError(f"weights lack {', '.join(missing)}")
    d = x.shape[-1]
    d_ff = weights["w_1"].shape[-1] if weights["w_1"].dim() == 2 else -1
    for key in keys:
        if key == "w_1":
            expected: tuple[int, ...] = (d, d_ff)
        elif key == "w_2":
            expected = (d_ff, d)
        elif key == "b_1":
            expected = (d_ff,)
        elif key.startswith("w"):
            expected = (d, d)
        else:
            expected = (d,)
        if tuple(weights[key].shape) != expected:
            raise ValueError(f"weights[{key!r}] must have shape {expected} for d_model={d}, d_ff={d_ff}; "
                             f"got {tuple(weights[key].shape)}")
    return d_ff


def encoder_layer(x: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int, norm_first: bool,
                  activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
    """``x (B, t, d_model)`` through one encoder layer (post-norm or pre-norm); returns ``(B, t, d_model)``."""
    check_weights(x, weights, ENCODER_KEYS)
    w = weights

    def attention(h: torch.Tensor) -> torch.Tensor:
        return multi_head(h, h, w, heads=heads, causal=causal)

    def ffn(h: torch.Tensor) -> torch.Tensor:
        return feed_forward(h, w["w_1"], w["b_1"], w["w_2"], w["b_2"], activation)

    y = residual_sublayer(x, attention, w["gamma_1"], w["beta_1"], norm_first=norm_first, eps=eps)
    return residual_sublayer(y, ffn, w["gamma_2"], w["beta_2"], norm_first=norm_first, eps=eps)


