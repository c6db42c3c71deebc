"""Scaled dot-product attention: ``softmax(Q K^T / sqrt(d_k)) V``, with its weights.

Shapes (batch first): ``q`` ``(B, t_q, d_k)``, ``k`` ``(B, t_k, d_k)``, ``v``
``(B, t_k, d_v)``; extra leading axes (e.g. heads) are allowed as long as all three
agree. The mask is boolean, True = may attend (:mod:`.masks`). A fully masked row
gets zero weights and a zero output (:mod:`.softmax`).

This module does not project inputs (see :mod:`.multihead`), apply dropout, or fuse
kernels; for other score functions pass ``scores`` from :mod:`.scores`.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .masks import apply_mask, causal_mask, check_mask
from .scores import scaled_dot_product_scores
from .softmax import softmax


class AttentionOutput(NamedTuple):
    """The attention output ``(…, t_q, d_v)`` and weights ``(…, t_q, t_k)`` (or None)."""

    output: torch.Tensor
    weights: torch.Tensor | None


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Raise a clear error unless ``q``, ``k``, ``v`` have compatible shapes and dtypes."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() < 2:
            raise ValueError(f"{name} must have shape (..., t, d), got {tuple(x.shape)}")
        if not x.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share d_k: q is {tuple(q.shape)}, k is {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must share t_k: k is {tuple(k.shape)}, v is {tuple(v.shape)}")
    if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise ValueError(
            f"q, k, v must share leading (batch) axes, got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    causal: bool = False,
    scores: torch.Tensor | None = None,
) -> AttentionOutput:
    """``A = softmax(q k^T / sqrt(d_k))`` over allowed keys, and ``A v``.

    ``causal=True`` intersects ``mask`` with :func:`.masks.causal_mask`. ``scores``
    replaces the scaled dot product by precomputed scores ``(…, t_q, t_k)``.
    """
    check_qkv(q, k, v)
    t_q, t_k = q.shape[-2], k.shape[-2]
    if mask is not None:
        check_mask(mask, tuple(q.shape[:-2]), t_q, t_k)
    if causal:
        tri = causal_mask(t_q, t_k, device=q.device)
        mask = tri if mask is None else mask & tri
    s = scaled_dot_product_scores(q, k) if scores is None else scores  # (…, t_q, t_k)
    weights = softmax(apply_mask(s, mask), dim=-1)  # (…, t_q, t_k), rows sum to 1 (or 0)
    return AttentionOutput(weights @ v, weights)  # (…, t_q, t_k) @ (…, t_k, d_v) -> (…, t_q, d_v)
