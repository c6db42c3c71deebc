"""``torch.nn.MultiheadAttention`` behind the protocol.

Conversions, all explicit:

* weights: the protocol multiplies on the right (``Q = X W^Q``, ``W^Q`` is
  ``(d_model, h d_k)``); the module stores ``in_proj_weight`` as ``[W^Q; W^K; W^V]``
  transposed and ``out_proj.weight`` as ``W^{O T}``; biases are off;
* masks: the module's boolean ``attn_mask`` means True = **not** allowed, the opposite
  of the protocol, so the adapter passes ``~mask``; a per-batch mask is repeated per
  head to the module's ``(B h, t_q, t_k)`` layout;
* ``attention`` (single head) uses ``h = 1`` with identity projections, zero-padding
  the narrower of ``d_k`` and ``d_v`` (see :meth:`TorchMultiheadAttention.attention`).

The module requires ``d_k = d_v = d_model / h``; other shapes are not applicable. A fully
masked row comes back as the module computes it.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from specformer.protocol import Capabilities, NotApplicable
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.masks import causal_mask
from specformer.reference.attention.multihead import MultiHeadParams


def _module(params: MultiHeadParams) -> nn.MultiheadAttention:
    d_model, h = params.d_model, params.h
    if params.w_q.shape[1] != d_model or params.w_v.shape[1] != d_model or params.w_o.shape != (d_model, d_model):
        raise NotApplicable(
            f"torch.nn.MultiheadAttention needs d_k = d_v = d_model / h; got d_model={d_model}, h={h}, "
            f"d_k={params.d_k}, d_v={params.d_v}"
        )
    w = params.w_q
    mha = nn.MultiheadAttention(d_model, h, bias=False, batch_first=True, device=w.device, dtype=w.dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([params.w_q.T, params.w_k.T, params.w_v.T]))  # (3 d_model, d_model)
        mha.out_proj.weight.copy_(params.w_o.T)
    return mha.eval()


def _attn_mask(mask: torch.Tensor | None, causal: bool, b: int, h: int, t_q: int, t_k: int,
               device: torch.device) -> torch.Tensor | None:
    """The protocol's mask (True = may attend) as the module's (True = not allowed)."""
    if causal:
        tri = causal_mask(t_q, t_k, device=device)
        mask = tri if mask is None else mask & tri
    if mask is None:
        return None
    if mask.dim() == 2:
        return ~mask  # (t_q, t_k), shared by batch and heads
    mask = mask.expand(b, t_q, t_k)  # (B, 1|t_q, t_k) -> (B, t_q, t_k)
    return ~mask.repeat_interleave(h, dim=0)  # (B, t_q, t_k) -> (B*h, t_q, t_k)


class TorchMultiheadAttention:
    """Attention and multi-head attention through ``torch.nn.MultiheadAttention``."""

    name = "torch-mha"
    #: The module has one width for queries, keys and values (d_k = d_v = d_model / h).
    capabilities = Capabilities(conventions={"value_width": {"d_model_over_h"}})

    def multihead_attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            params: MultiHeadParams, mask: torch.Tensor | None = None,
                            *, causal: bool = False) -> torch.Tensor:
        """The module's output with the given weights (no biases)."""
        mha = _module(params)
        b, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
        attn_mask = _attn_mask(mask, causal, b, params.h, t_q, t_k, query.device)
        with torch.no_grad():
            output, _ = mha(query, key, value, attn_mask=attn_mask, need_weights=False)
        return output

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                  *, causal: bool = False) -> AttentionOutput:
        """Single-head attention: one head, identity projections, weights from the module.

        The module has one width ``E`` for queries, keys and values. With
        ``E = max(d_k, d_v)``, the adapter pads ``q``, ``k`` and ``v`` with zero features
        to ``E`` (which changes no dot product), multiplies ``q`` by ``sqrt(E / d_k)`` so
        that the module's ``1 / sqrt(E)`` scale equals ``1 / sqrt(d_k)``, and keeps the
        first ``d_v`` output features. It always asks for the weights: with
        ``need_weights=False`` the module takes a fused kernel that PyTorch's FLOP counter
        cannot see, and cost properties would count the projections alone.
        """
        if q.dim() != 3:
            raise NotApplicable(f"torch.nn.MultiheadAttention takes (B, t, d) inputs, got {tuple(q.shape)}")
        d_k, d_v = q.shape[-1], v.shape[-1]
        e = max(d_k, d_v)
        q = F.pad(q * math.sqrt(e / d_k), (0, e - d_k))  # (B, t_q, d_k) -> (B, t_q, E)
        k = F.pad(k, (0, e - d_k))  # (B, t_k, d_k) -> (B, t_k, E)
        v = F.pad(v, (0, e - d_v))  # (B, t_k, d_v) -> (B, t_k, E)
        eye = torch.eye(e, dtype=q.dtype, device=q.device)
        mha = _module(MultiHeadParams(eye, eye, eye, eye, 1))
        b, t_q, t_k = q.shape[0], q.shape[1], k.shape[1]
        attn_mask = _attn_mask(mask, causal, b, 1, t_q, t_k, q.device)
        with torch.no_grad():
            output, weights = mha(q, k, v, attn_mask=attn_mask, need_weights=True, average_attn_weights=True)
        return AttentionOutput(output[..., :d_v], weights)  # (B, t_q, E) -> (B, t_q, d_v)


implementation = TorchMultiheadAttention()
