"""ALiBi: attention with linear biases (Press, Smith and Lewis, "Train Short, Test Long", 2022).

ALiBi adds no position vector to the tokens. Each head ``k`` (``1..h``) adds a fixed
penalty proportional to the distance between query ``i`` and key ``j`` to the scaled
scores, before the softmax::

    softmax(Q K^T / sqrt(d_k) + B_k) V,     B_k[i, j] = -m_k |i - j|

* the slopes ``m_k`` are fixed before training, not learned: for ``h`` a power of two the
  geometric sequence ``m_k = 2^(-8k/h)``, ``k = 1..h`` (``h = 8``: ``1/2, 1/4, ..., 1/256``);
  for other ``h``, with ``n = 2^floor(log2 h)``, the ``n`` slopes of ``n`` heads followed by
  the first ``h - n`` slopes at odd places of the ``2n``-head sequence,
  ``2^(-4(2l - 1)/n)``, ``l = 1..h - n`` (the paper's rule);
* ``causal=True`` gives the paper's decoder bias: ``-m_k (i - j)`` for ``j <= i`` (which
  equals ``-m_k |i - j|`` there) and ``-inf`` above the diagonal;
* rows and columns are counted from the first query and the first key (top-left
  alignment, the protocol's convention), also when ``t_q != t_k``.

Everything is computed in float64 and cast to ``dtype`` at the end. :func:`alibi_attention`
adds the bias to the scaled scores inside the softmax (one head per slope, no
projections). This module does not handle key-value caches (where queries sit at the end of the keys: pass the offsets yourself),
and does not implement learned or data-dependent slopes.
"""

from __future__ import annotations

import torch

__all__ = ["alibi_attention", "alibi_bias", "alibi_slopes"]


def _check_count(value: int, name: str) -> None:
    """A positive ``int`` (not a bool), or a ValueError that names the argument."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")


def alibi_slopes(h: int) -> torch.Tensor:
    """The paper's fixed slopes ``(h,)``, float64, steepest first.

    ``n = 2^floor(log2 h)`` heads get ``2^(-8k/n)``, ``k = 1..n``; the other ``h - n`` heads
    get ``2^(-4(2l - 1)/n)``, ``l = 1..h - n``, the slopes the ``2n``-head sequence has
    between those of the ``n``-head one.
    """
    _check_count(h, "h (the number of heads)")
    n = 1 << (h.bit_length() - 1)  # the largest power of two <= h
    k = torch.arange(1, n + 1, dtype=torch.float64)  # (n,)
    slopes = torch.exp2(-8.0 * k / n)  # (n,)
    if h == n:
        return slopes
    odd = torch.arange(1, 2 * (h - n), 2, dtype=torch.float64)  # (h - n,): 1, 3, 5, ...
    return torch.cat([slopes, torch.exp2(-4.0 * odd / n)])  # (h,)


def alibi_bias(h: int, t_q: int, t_k: int, *, causal: bool = False, dtype: torch.dtype = torch.float64,
               device: torch.device | str | None = None) -> torch.Tensor:
    """The biases ``(h, t_q, t_k)``: ``-m_k |i - j|``, and ``-inf`` where ``j > i`` when ``causal``.

    ``i`` counts queries and ``j`` keys from 0 (top-left alignment). ``dtype`` must be a
    floating dtype (``-inf`` must be representable).
    """
    _check_count(h, "h (the number of heads)")
    _check_count(t_q, "t_q (the number of queries)")
    _check_count(t_k, "t_k (the number of keys)")
    if not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating dtype, got {dtype}")
    slopes = alibi_slopes(h).to(device)  # (h,)
    i = torch.arange(t_q, device=device)[:, None]  # (t_q, 1)
    j = torch.arange(t_k, device=device)[None, :]  # (1, t_k)
    distance = (i - j).abs().to(torch.float64)  # (t_q, t_k)
    bias = 0.0 - slopes[:, None, None] * distance  # (h, 1, 1) * (t_q, t_k) -> (h, t_q, t_k); 0 - x: no -0.0
    if causal:
        bias = bias.masked_fill(j > i, float("-inf"))  # (t_q, t_k) broadcast over heads
    return bias.to(dtype)


def alibi_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False) -> torch.Tensor:
    """``softmax(q k^T / sqrt(d_k) + B) v`` with B = :func:`alibi_bias` of head ``k`` for each head.

    ``q (B, h, t_q, d_k)``, ``k (B, h, t_k, d_k)``, ``v (B, h, t_k, d_v)``; returns
    ``(B, h, t_q, d_v)`` in the dtype of ``q``. The softmax runs in the dtype of the inputs;
    a causal row always keeps its first key, so no row is empty.
    """
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"q, k, v must be (B, h, t, d), got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    h, t_q, t_k, d_k = q.shape[1], q.shape[2], k.shape[2], q.shape[3]
    bias = alibi_bias(h, t_q, t_k, causal=causal, dtype=q.dtype, device=q.device)  # (h, t_q, t_k)
    scores = q @ k.transpose(-2, -1) / d_k**0.5 + bias  # (B, h, t_q, t_k) + (h, t_q, t_k)
    return torch.softmax(scores, dim=-1) @ v  # (B, h, t_q, t_k) @ (B, h, t_k, d_v) -> (B, h, t_q, d_v)
