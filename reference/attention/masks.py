"""Attention masks, with one convention: a boolean tensor where **True = may attend**.

This is the documents' convention (``scores.masked_fill(mask == 0, -inf)``) and the one
``torch.nn.functional.scaled_dot_product_attention`` uses; ``torch.nn.MultiheadAttention``
uses the opposite, and its adapter converts. Masks are ``(t_q, t_k)`` or
``(B, t_q, t_k)``; a padding mask is ``(B, 1, t_k)`` and broadcasts over queries.

The causal mask for ``t_q != t_k`` is aligned top-left (query ``i`` sees keys
``j <= i``), as ``torch.tril`` and PyTorch's ``is_causal`` do. This module does not build
additive (float) masks or relative-position biases.
"""

from __future__ import annotations

import torch


def causal_mask(t_q: int, t_k: int | None = None, *, device: torch.device | str | None = None) -> torch.Tensor:
    """``(t_q, t_k)`` mask: query ``i`` may attend key ``j`` iff ``j <= i``."""
    t_k = t_q if t_k is None else t_k
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: torch.Tensor, t_k: int) -> torch.Tensor:
    """``(B, 1, t_k)`` mask: key ``j`` of sequence ``b`` is real iff ``j < lengths[b]``."""
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D (B,), got shape {tuple(lengths.shape)}")
    if (lengths < 0).any() or (lengths > t_k).any():
        raise ValueError(f"lengths must lie in [0, {t_k}], got {lengths.tolist()}")
    positions = torch.arange(t_k, device=lengths.device)
    return (positions[None, :] < lengths[:, None])[:, None, :]  # (B, t_k) -> (B, 1, t_k)


def local_mask(t: int, window: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """``(t, t)`` band mask: position ``i`` may attend ``j`` iff ``|i - j| <= window``."""
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    i = torch.arange(t, device=device)
    return (i[:, None] - i[None, :]).abs() <= window


def check_mask(mask: torch.Tensor, lead: tuple[int, ...], t_q: int, t_k: int) -> None:
    """Raise a clear error unless ``mask`` is boolean and broadcasts to ``(*lead, t_q, t_k)``."""
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must be a boolean tensor with True = may attend, got dtype {mask.dtype}; "
            "convert an additive or 0/1 mask with mask.bool() or (mask == 0) as appropriate"
        )
    target = (*lead, t_q, t_k)
    if mask.dim() < 2 or mask.dim() > len(target) or tuple(mask.shape[-2:]) not in ((t_q, t_k), (1, t_k)):
        raise ValueError(
            f"mask must be (t_q, t_k), (B, t_q, t_k) or (B, 1, t_k) with t_q={t_q}, t_k={t_k}; "
            f"got shape {tuple(mask.shape)}"
        )
    try:
        fits = torch.broadcast_shapes(tuple(mask.shape), target) == torch.Size(target)
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to {target}")


def apply_mask(scores: torch.Tensor, mask: torch.Tensor | None, fill: float = float("-inf")) -> torch.Tensor:
    """Scores with disallowed positions (``mask == False``) replaced by ``fill``."""
    if mask is None:
        return scores
    return scores.masked_fill(~mask, fill)
