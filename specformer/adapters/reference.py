"""The reference implementation (:mod:`specformer.reference`) behind the protocol.

No conversion is needed: the reference defines the protocol's conventions.
"""

from __future__ import annotations

from typing import Any

import torch

from specformer.reference.attention.attention import AttentionOutput, scaled_dot_product_attention
from specformer.reference.attention.multihead import MultiHeadParams, multi_head_attention
from specformer.reference.attention.scores import SCORE_FUNCTIONS


class ReferenceImplementation:
    """Attention, multi-head attention, the score functions and the positional encodings of the reference."""

    name = "reference"

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                  *, causal: bool = False, need_weights: bool = True) -> AttentionOutput:
        """:func:`specformer.reference.attention.attention.scaled_dot_product_attention` (weights always)."""
        return scaled_dot_product_attention(q, k, v, mask, causal=causal)

    def multihead_attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            params: MultiHeadParams, mask: torch.Tensor | None = None) -> torch.Tensor:
        """:func:`specformer.reference.attention.multihead.multi_head_attention`."""
        return multi_head_attention(query, key, value, params, mask)

    def score(self, kind: str, q: torch.Tensor, k: torch.Tensor, **params: Any) -> torch.Tensor:
        """A score function of :mod:`specformer.reference.attention.scores` by name."""
        try:
            fn = SCORE_FUNCTIONS[kind]
        except KeyError:
            raise ValueError(f"unknown score function {kind!r}; known: {sorted(SCORE_FUNCTIONS)}") from None
        return fn(q, k, **params)


    # -- the positions family ----------------------------------------------------------
    def positional_encoding(self, kind: str, positions: torch.Tensor, d_model: int, *, dtype: torch.dtype,
                            **params: Any) -> torch.Tensor:
        """:mod:`specformer.reference.positions.sinusoidal` or :mod:`~specformer.reference.positions.bits` by ``kind``."""
        from specformer.reference.positions.bits import binary_encoding
        from specformer.reference.positions.sinusoidal import sinusoidal_encoding

        if kind == "sinusoidal":
            return sinusoidal_encoding(positions, d_model, dtype=dtype, **params)
        if kind == "binary":
            return binary_encoding(positions, d_model, dtype=dtype, **params)
        raise ValueError(f"unknown positional encoding {kind!r}; known: sinusoidal, binary")

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        """:func:`specformer.reference.positions.rope.rotary_embedding`."""
        from specformer.reference.positions.rope import rotary_embedding

        return rotary_embedding(x, positions, pairing=pairing, base=base)

    def alibi_bias(self, h: int, t_q: int, t_k: int, *, causal: bool = False, dtype: torch.dtype,
                   device: str) -> torch.Tensor:
        """:func:`specformer.reference.positions.alibi.alibi_bias`, the paper's slopes."""
        from specformer.reference.positions.alibi import alibi_bias

        return alibi_bias(h, t_q, t_k, causal=causal, dtype=dtype, device=device)

    # -- the blocks family -------------------------------------------------------------
    def layer_norm(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, *, eps: float = 1e-5) -> torch.Tensor:
        """:func:`specformer.reference.blocks.layernorm.layer_norm`."""
        from specformer.reference.blocks.layernorm import layer_norm

        return layer_norm(x, gamma, beta, eps)

    def feed_forward(self, x: torch.Tensor, w_1: torch.Tensor, b_1: torch.Tensor, w_2: torch.Tensor,
                     b_2: torch.Tensor, *, activation: str = "relu") -> torch.Tensor:
        """:func:`specformer.reference.blocks.ffn.feed_forward`."""
        from specformer.reference.blocks.ffn import feed_forward

        return feed_forward(x, w_1, b_1, w_2, b_2, activation)

    def encoder_layer(self, x: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int, norm_first: bool,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """:func:`specformer.reference.blocks.encoder_layer.encoder_layer`."""
        from specformer.reference.blocks.encoder_layer import encoder_layer

        return encoder_layer(x, weights, heads=heads, norm_first=norm_first, activation=activation, eps=eps,
                             causal=causal)

    def decoder_layer(self, x: torch.Tensor, memory: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int,
                      norm_first: bool, activation: str = "relu", eps: float = 1e-5) -> torch.Tensor:
        """:func:`specformer.reference.blocks.decoder_layer.decoder_layer`."""
        from specformer.reference.blocks.decoder_layer import decoder_layer

        return decoder_layer(x, memory, weights, heads=heads, norm_first=norm_first, activation=activation, eps=eps)


implementation = ReferenceImplementation()
