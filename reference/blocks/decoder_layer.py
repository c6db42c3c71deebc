"""One decoder layer of an encoder-decoder transformer.

Three residual sublayers, in this order: causal (masked) self-attention over the target,
cross-attention from the target to the encoder's output (``memory``), the feed-forward
network. Post-norm (the original transformer)::

    y   = LN_1(x + MultiHead_causal(x, x))
    z   = LN_2(y + MultiHead(y, memory))      queries from the target, keys/values from memory
    out = LN_3(z + FFN(z))

Pre-norm normalises each sublayer's input instead (``memory`` itself is used as given).
Cross-attention is unmasked: every target position sees every source position. Weights
come as a dictionary with the keys :data:`specformer.protocol.blocks.DECODER_KEYS`.

This module does not run the encoder, embed tokens or project to the vocabulary.
"""

from __future__ import annotations

import torch

from specformer.protocol.blocks import DECODER_KEYS

from .attention_sublayer import multi_head
from .encoder_layer import check_weights
from .ffn import feed_forward
from .sublayer import residual_sublayer

__all__ = ["decoder_layer"]


def decoder_layer(x: torch.Tensor, memory: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int,
                  norm_first: bool, activation: str = "relu", eps: float = 1e-5) -> torch.Tensor:
    """The target ``x (B, t, d_model)`` through one decoder layer over ``memory (B, s, d_model)``."""
    check_weights(x, weights, DECODER_KEYS)
    if memory.dim() != 3 or memory.shape[0] != x.shape[0] or memory.shape[-1] != x.shape[-1]:
        raise ValueError(f"memory must be (B={x.shape[0]}, s, d_model={x.shape[-1]}), got {tuple(memory.shape)}")
    w = weights

    def self_attention(h: torch.Tensor) -> torch.Tensor:
        return multi_head(h, h, w, heads=heads, causal=True)

    def cross_attention(h: torch.Tensor) -> torch.Tensor:
        return multi_head(h, memory, w, heads=heads, cross=True)

    def ffn(h: torch.Tensor) -> torch.Tensor:
        return feed_forward(h, w["w_1"], w["b_1"], w["w_2"], w["b_2"], activation)

    y = residual_sublayer(x, self_attention, w["gamma_1"], w["beta_1"], norm_first=norm_first, eps=eps)
    z = residual_sublayer(y, cross_attention, w["gamma_2"], w["beta_2"], norm_first=norm_first, eps=eps)
    return residual_sublayer(z, ffn, w["gamma_3"], w["beta_3"], norm_first=norm_first, eps=eps)
