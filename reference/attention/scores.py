"""Score (similarity) functions ``f(Q, K)``, the table of the attention slides.

Each takes ``q``: ``(B, t_q, d_k)`` and ``k``: ``(B, t_k, d_k)`` and returns scores
``(B, t_q, t_k)`` where entry ``(i, j)`` is ``f(q_i, k_j)``; softmax over the last axis
turns them into attention weights. Parameters are passed explicitly (no modules, no
initialisation). The Gaussian score here carries the minus sign the slides omit; the
cosine score normalises each row, not the whole matrix.

Half precision: float16 and bfloat16 inputs are computed in float32 and the scores rounded
to the input's dtype once, at the end (:func:`_in_float32`). In float16 the intermediate
``q . k`` overflows long before the score does: 50 features of about 400 and 10 give
``q . k`` near 67,000, past float16's largest finite value 65,504, while ``q . k / sqrt(50)``
is 9,500. A score that itself lies beyond the dtype's range still comes back as ``inf``.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import torch

#: Dtypes whose scores are computed in float32 and rounded once at the end.
HALF_PRECISION = (torch.float16, torch.bfloat16)


def _in_float32(score: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """``score`` run on float32 copies of half-precision tensor arguments, its result cast back to ``q``'s dtype."""

    @functools.wraps(score)
    def computed(q: torch.Tensor, k: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        if q.dtype not in HALF_PRECISION:
            return score(q, k, *args, **kwargs)
        wide = lambda x: x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x  # noqa: E731
        result = score(wide(q), wide(k), *map(wide, args), **{name: wide(x) for name, x in kwargs.items()})
        return result.to(q.dtype)

    return computed


@_in_float32
def dot_product_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``q_i . k_j``."""
    return q @ k.transpose(-2, -1)  # (B, t_q, d_k) @ (B, d_k, t_k) -> (B, t_q, t_k)


@_in_float32
def scaled_dot_product_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``q_i . k_j / sqrt(d_k)``."""
    return dot_product_scores(q, k) / math.sqrt(q.shape[-1])


@_in_float32
def general_scores(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Bilinear ``q_i W k_j^T`` with ``w``: ``(d_k, d_k)`` (Luong's "general")."""
    return q @ w @ k.transpose(-2, -1)


@_in_float32
def additive_scores(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Bahdanau's ``v^T tanh(W [q_i || k_j])`` with ``w``: ``(d_a, 2 d_k)``, ``v``: ``(d_a,)``.

    Written as on the slide: the concatenation ``[q_i || k_j]`` is built for every pair.
    """
    t_q, t_k = q.shape[-2], k.shape[-2]
    pairs = torch.cat(
        [
            q[..., :, None, :].expand(*q.shape[:-2], t_q, t_k, q.shape[-1]),  # (B, t_q, t_k, d_k)
            k[..., None, :, :].expand(*k.shape[:-2], t_q, t_k, k.shape[-1]),  # (B, t_q, t_k, d_k)
        ],
        dim=-1,
    )  # (B, t_q, t_k, 2 d_k)
    return torch.tanh(pairs @ w.transpose(0, 1)) @ v  # (B, t_q, t_k, d_a) @ (d_a,) -> (B, t_q, t_k)


@_in_float32
def cosine_scores(q: torch.Tensor, k: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """``q_i . k_j / (|q_i| |k_j|)``, in ``[-1, 1]``; zero vectors score 0."""
    q_unit = q / q.norm(dim=-1, keepdim=True).clamp_min(eps)
    k_unit = k / k.norm(dim=-1, keepdim=True).clamp_min(eps)
    return dot_product_scores(q_unit, k_unit)


@_in_float32
def gaussian_scores(q: torch.Tensor, k: torch.Tensor, sigma: float = 1.0) -> torch.Tensor:
    """``-|q_i - k_j|^2 / sigma^2``: the nearest key scores highest."""
    if sigma <= 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    difference = q[..., :, None, :] - k[..., None, :, :]  # (B, t_q, 1, d_k) - (B, 1, t_k, d_k) -> (B, t_q, t_k, d_k)
    squared_distance = difference.square().sum(dim=-1)  # (B, t_q, t_k)
    return -squared_distance / sigma**2


#: Score functions by the name the protocol's ``score(kind, ...)`` uses.
SCORE_FUNCTIONS = {
    "dot": dot_product_scores,
    "scaled_dot": scaled_dot_product_scores,
    "general": general_scores,
    "additive": additive_scores,
    "cosine": cosine_scores,
    "gaussian": gaussian_scores,
}
