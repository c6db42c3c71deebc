"""Rotary position embeddings (RoPE), in both pairing conventions.

RoPE (Su et al., RoFormer) turns position ``m`` into a rotation ``R_{Theta,m}`` applied to a
query or key vector: its ``d`` features form ``d/2`` pairs, and pair ``i`` is rotated in its
plane by the angle ``m * theta_i`` with ``theta_i = base^(-2i/d)``::

    (x_a, x_b)  ->  (x_a cos(m theta_i) - x_b sin(m theta_i),  x_a sin(m theta_i) + x_b cos(m theta_i))

Which features form pair ``i`` is a convention (the documents do not fix it):

* ``pairing="interleaved"``: features ``(2i, 2i + 1)``, the RoFormer paper's layout;
* ``pairing="half"``: features ``(i, i + d/2)``, the "rotate half" layout of GPT-NeoX and
  Llama. The two give different outputs on the same input; they are related by a fixed
  permutation of the features.

Angles are computed in float64 from the exact integer positions (``m < 2^53``) and only
cos/sin are cast to ``x.dtype``: the result is as accurate as the dtype allows at every
position, unlike libraries that compute the angles in float32 (see ``spec/positions/rope.md``).
Devices without float64 (Apple MPS) are therefore not supported.

Not covered: partial rotation of only some features, NTK/YaRN/linear position scaling, xPos
scaling, 2-D (axial) positions, caching of cos/sin tables, the attention itself.
"""

from __future__ import annotations

import torch

__all__ = ["PAIRINGS", "rotary_angles", "rotary_embedding"]

#: The two layouts of feature pairs: ``interleaved`` (2i, 2i+1) and ``half`` (i, i + d/2).
PAIRINGS = ("interleaved", "half")


def rotary_angles(positions: torch.Tensor, d: int, *, base: float = 10000.0) -> torch.Tensor:
    """The angles ``m * base^(-2i/d)`` ``(t, d/2)`` in float64, on ``positions.device``.

    ``positions`` is a 1-D integer tensor ``(t,)`` of non-negative positions; ``d`` is the
    (even, positive) width being rotated.
    """
    _check_width(d)
    _check_positions(positions)
    if not base > 0:
        raise ValueError(f"base must be positive, got {base}")
    exponents = torch.arange(0, d, 2, dtype=torch.float64, device=positions.device) / d  # (d/2,): 2i/d
    theta = torch.pow(torch.tensor(float(base), dtype=torch.float64, device=positions.device), -exponents)
    return positions.to(torch.float64)[:, None] * theta[None, :]  # (t, 1) * (1, d/2) -> (t, d/2)


def rotary_embedding(x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
                     base: float = 10000.0) -> torch.Tensor:
    """Rotate the feature pairs of ``x (..., t, d)`` by their positions' angles; same shape and dtype.

    ``positions (t,)`` gives the position of each of the ``t`` rows (any non-negative
    integers, not necessarily ``0..t-1`` or distinct); leading axes (batch, heads) share them.
    """
    if pairing not in PAIRINGS:
        raise ValueError(f"unknown pairing {pairing!r}; known: {', '.join(PAIRINGS)}")
    if x.dim() < 2:
        raise ValueError(f"x must be (..., t, d), got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got {x.dtype}")
    t, d = x.shape[-2], x.shape[-1]
    _check_width(d)
    _check_positions(positions)
    if positions.shape[0] != t:
        raise ValueError(f"positions has {positions.shape[0]} entries but x has t={t} rows")
    angles = rotary_angles(positions.to(x.device), d, base=base)  # (t, d/2), float64
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # (t, d/2) each, broadcast over (...)
    first, second = _split_pairs(x, pairing)  # (..., t, d/2) each: the two coordinates of every pair
    rotated_first = first * cos - second * sin
    rotated_second = first * sin + second * cos
    return _merge_pairs(rotated_first, rotated_second, pairing)  # (..., t, d)


def _split_pairs(x: torch.Tensor, pairing: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The first and second coordinates ``(..., t, d/2)`` of every pair, in pair order ``i``."""
    if pairing == "interleaved":
        pairs = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)  # (..., t, d) -> (..., t, d/2, 2): (2i, 2i+1)
        return pairs[..., 0], pairs[..., 1]
    half = x.shape[-1] // 2
    return x[..., :half], x[..., half:]  # (i) and (i + d/2)


def _merge_pairs(first: torch.Tensor, second: torch.Tensor, pairing: str) -> torch.Tensor:
    """The inverse of :func:`_split_pairs`: ``(..., t, d/2)`` twice -> ``(..., t, d)``."""
    if pairing == "interleaved":
        pairs = torch.stack((first, second), dim=-1)  # (..., t, d/2, 2)
        return pairs.reshape(*first.shape[:-1], 2 * first.shape[-1])  # (..., t, d/2, 2) -> (..., t, d)
    return torch.cat((first, second), dim=-1)  # (..., t, d)


def _check_width(d: int) -> None:
    if d <= 0 or d % 2:
        raise ValueError(f"RoPE rotates feature pairs: the width d must be even and positive, got d={d}")


def _check_positions(positions: torch.Tensor) -> None:
    if positions.dim() != 1:
        raise ValueError(f"positions must be a 1-D tensor (t,), got shape {tuple(positions.shape)}")
    if positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool:
        raise ValueError(f"positions must be integers, got {positions.dtype}")
    if positions.numel() == 0:
        raise ValueError("positions is empty: RoPE needs at least one position (t >= 1)")
    if (positions < 0).any():
        raise ValueError(f"positions must be non-negative, got minimum {int(positions.min())}")
