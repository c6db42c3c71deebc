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
    """Attention, multi-head attention and the score functions of the reference."""

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


implementation = ReferenceImplementation()
