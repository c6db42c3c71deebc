"""Multi-head attention: ``Concat(head_1, ..., head_h) W^O``, ``head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)``.

Projections multiply on the right as in the documents: ``W^Q`` and ``W^K`` are
``(d_model, h * d_k)``, ``W^V`` is ``(d_model, h * d_v)`` and ``W^O`` is
``(h * d_v, d_model)``; head ``i`` owns columns ``i * d_k : (i + 1) * d_k`` of ``W^Q``
and rows ``i * d_v : (i + 1) * d_v`` of ``W^O``. Self-attention passes the same tensor
as query, key and value; cross-attention passes the target as query and the source as
key and value (``t_q != t_k`` allowed).

This module does not add biases, dropout, residual connections or normalisation
(those belong to the block), and does not initialise weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .attention import scaled_dot_product_attention


@dataclass(frozen=True)
class MultiHeadParams:
    """Projection weights of multi-head attention with ``h`` heads."""

    w_q: torch.Tensor  # (d_model, h * d_k)
    w_k: torch.Tensor  # (d_model, h * d_k)
    w_v: torch.Tensor  # (d_model, h * d_v)
    w_o: torch.Tensor  # (h * d_v, d_model)
    h: int

    def __post_init__(self) -> None:
        if self.h < 1:
            raise ValueError(f"h must be >= 1, got {self.h}")
        for name in ("w_q", "w_k", "w_v", "w_o"):
            if getattr(self, name).dim() != 2:
                raise ValueError(f"{name} must be 2-D, got shape {tuple(getattr(self, name).shape)}")
        if self.w_q.shape != self.w_k.shape:
            raise ValueError(f"w_q and w_k must have one shape, got {tuple(self.w_q.shape)}, {tuple(self.w_k.shape)}")
        if self.w_q.shape[1] % self.h or self.w_v.shape[1] % self.h:
            raise ValueError(
                f"h={self.h} must divide the projection widths h*d_k={self.w_q.shape[1]} and h*d_v={self.w_v.shape[1]}"
            )
        if self.w_o.shape[0] != self.w_v.shape[1]:
            raise ValueError(f"w_o must have h*d_v={self.w_v.shape[1]} rows, got shape {tuple(self.w_o.shape)}")

    @property
    def d_model(self) -> int:
        """Width of the inputs and of the output."""
        return self.w_q.shape[0]

    @property
    def d_k(self) -> int:
        """Per-head query/key width."""
        return self.w_q.shape[1] // self.h

    @property
    def d_v(self) -> int:
        """Per-head value width."""
        return self.w_v.shape[1] // self.h

    def to(self, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> "MultiHeadParams":
        """The same weights on another device or in another dtype."""
        move = lambda w: w.to(device=device, dtype=dtype)  # noqa: E731
        return MultiHeadParams(move(self.w_q), move(self.w_k), move(self.w_v), move(self.w_o), self.h)


def split_heads(x: torch.Tensor, h: int) -> torch.Tensor:
    """``(B, t, h * d) -> (B, h, t, d)``: head ``i`` takes features ``i*d : (i+1)*d``."""
    b, t, hd = x.shape
    return x.view(b, t, h, hd // h).transpose(1, 2)  # (B, t, h*d) -> (B, t, h, d) -> (B, h, t, d)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(B, h, t, d) -> (B, t, h * d)``: the concatenation of the heads."""
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)  # (B, h, t, d) -> (B, t, h, d) -> (B, t, h*d)


def multi_head_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    params: MultiHeadParams,
    mask: torch.Tensor | None = None,
    *,
    causal: bool = False,
) -> torch.Tensor:
    """Multi-head attention of ``query`` ``(B, t_q, d_model)`` over ``key``/``value`` ``(B, t_k, d_model)``.

    ``mask`` is boolean, True = may attend, ``(t_q, t_k)`` or ``(B, t_q, t_k)`` (or
    ``(B, 1, t_k)`` for padding); it is shared by all heads. Returns ``(B, t_q, d_model)``.
    """
    for name, x in (("query", query), ("key", key), ("value", value)):
        if x.dim() != 3 or x.shape[-1] != params.d_model:
            raise ValueError(f"{name} must be (B, t, d_model={params.d_model}), got {tuple(x.shape)}")
    if key.shape[:2] != value.shape[:2] or query.shape[0] != key.shape[0]:
        raise ValueError(
            f"key and value must be (B, t_k, d_model) with the query's B; got query {tuple(query.shape)}, "
            f"key {tuple(key.shape)}, value {tuple(value.shape)}"
        )
    q = split_heads(query @ params.w_q, params.h)  # (B, t_q, h*d_k) -> (B, h, t_q, d_k)
    k = split_heads(key @ params.w_k, params.h)  # (B, t_k, h*d_k) -> (B, h, t_k, d_k)
    v = split_heads(value @ params.w_v, params.h)  # (B, t_k, h*d_v) -> (B, h, t_k, d_v)
    if mask is not None and mask.dim() == 3:
        mask = mask[:, None]  # (B, t_q|1, t_k) -> (B, 1, t_q|1, t_k): shared by all heads
    heads = scaled_dot_product_attention(q, k, v, mask, causal=causal).output  # (B, h, t_q, d_v)
    return merge_heads(heads) @ params.w_o  # (B, t_q, h*d_v) @ (h*d_v, d_model) -> (B, t_q, d_model)
