"""A minimal adapter for the attention family, written from `specformer new attention`.

Scaled dot-product attention and multi-head attention in plain PyTorch. Check it with:

    specformer run --impl examples/attention.py

Conventions (from the protocol): batch first, q (B, t_q, d_k), k (B, t_k, d_k),
v (B, t_k, d_v); a boolean mask with True = may attend; projections multiply on the
right, Q = X W^Q with W^Q of shape (d_model, h * d_k).
"""

from __future__ import annotations

import math

import torch

from specformer.protocol.attention import AttentionOutput, MultiHeadParams


class ExampleAttention:
    """Attention as the documents write it."""

    name = "example-attention"

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, *,
                  causal: bool = False, need_weights: bool = True) -> AttentionOutput:
        """``softmax(q k^T / sqrt(d_k) + mask) v`` and its weights."""
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, t_q, t_k)
        if causal:
            t_q, t_k = scores.shape[-2:]
            allowed = torch.ones(t_q, t_k, dtype=torch.bool, device=q.device).tril()  # (t_q, t_k)
            scores = scores.masked_fill(~allowed, float("-inf"))
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(dim=-1)  # (B, t_q, t_k)
        return AttentionOutput(weights @ v, weights)

    def multihead_attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            params: MultiHeadParams, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``Concat(head_1, ..., head_h) W^O`` with ``head_i = Attention(query W_i^Q, key W_i^K, value W_i^V)``."""
        b, t_q, _ = query.shape
        t_k, h = key.shape[1], params.h
        d_k, d_v = params.w_q.shape[1] // h, params.w_v.shape[1] // h
        q = (query @ params.w_q).reshape(b, t_q, h, d_k).transpose(1, 2)  # (B, h, t_q, d_k)
        k = (key @ params.w_k).reshape(b, t_k, h, d_k).transpose(1, 2)  # (B, h, t_k, d_k)
        v = (value @ params.w_v).reshape(b, t_k, h, d_v).transpose(1, 2)  # (B, h, t_k, d_v)
        head_mask = None if mask is None else mask.unsqueeze(-3)  # broadcast over heads: (B, 1, t_q, t_k)
        heads = self.attention(q, k, v, head_mask).output  # (B, h, t_q, d_v)
        concat = heads.transpose(1, 2).reshape(b, t_q, h * d_v)  # (B, t_q, h * d_v)
        return concat @ params.w_o


#: What `specformer run --impl examples/attention.py` loads.
implementation = ExampleAttention
