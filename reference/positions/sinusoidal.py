"""The sinusoidal positional encoding of the original transformer.

For a position ``pos`` and a pair index ``i = 0, ..., d_model/2 - 1``::

    omega_i          = base ** (-2i / d_model)          (base = 10000 in the paper)
    PE[pos, 2i]      = sin(pos * omega_i)
    PE[pos, 2i + 1]  = cos(pos * omega_i)

so feature ``2i`` and feature ``2i + 1`` share one frequency: each pair is the point
``(sin, cos)`` of an angle that grows by ``omega_i`` per position. The frequencies fall
from ``1`` (pair 0, wavelength ``2 pi`` positions) to ``base ** (-(d_model - 2)/d_model)``.

The angles are computed in float64 on the positions' device and the result is cast to
the requested ``dtype`` at the end, so a float32 result is the float64 encoding rounded
once (positions up to ``2**53`` are exact; the documents' float32 code rounds the
position itself from ``2**24`` on).

What this module does not do: odd ``d_model`` (a sine needs its cosine; it raises
``ValueError``), negative positions, learned position tables (``torch.nn.Embedding``),
adding the encoding to token embeddings, or dropout.
"""

from __future__ import annotations

import math

import torch

__all__ = ["check_positions", "frequencies", "sinusoidal_encoding"]


def check_positions(positions: torch.Tensor) -> None:
    """Raise ``ValueError`` unless ``positions`` is a non-empty 1-D tensor of integers >= 0."""
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"positions must be a torch.Tensor, got {type(positions).__name__}")
    if positions.dtype.is_floating_point or positions.dtype.is_complex or positions.dtype == torch.bool:
        raise ValueError(f"positions must be an integer tensor, got dtype {positions.dtype}")
    if positions.dim() != 1:
        raise ValueError(f"positions must be 1-D (t,), got shape {tuple(positions.shape)}")
    if positions.numel() == 0:
        raise ValueError("positions is empty (t = 0): there is nothing to encode")
    if (positions < 0).any():
        raise ValueError(f"positions must be >= 0 (counted from 0), got minimum {int(positions.min())}")


def _check_d_model(d_model: int) -> None:
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 2:
        raise ValueError(f"d_model must be an even integer >= 2, got {d_model!r}")
    if d_model % 2:
        raise ValueError(
            f"d_model must be even: each frequency needs a sine and a cosine feature, got d_model={d_model}"
        )


def frequencies(d_model: int, base: float = 10000.0, *, device: torch.device | str | None = None) -> torch.Tensor:
    """``(d_model/2,)`` float64 angular frequencies ``omega_i = base ** (-2i / d_model)``."""
    _check_d_model(d_model)
    if not (isinstance(base, (int, float)) and math.isfinite(base) and base > 0):
        raise ValueError(f"base must be a finite number > 0, got {base!r}")
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64, device=device)  # (d_model/2,): 0, 2, 4, ...
    return torch.pow(torch.tensor(float(base), dtype=torch.float64, device=device), -two_i / d_model)


def sinusoidal_encoding(positions: torch.Tensor, d_model: int, *, base: float = 10000.0,
                        dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Encodings ``(t, d_model)`` of ``positions (t,)``: sine at even features, cosine at odd ones.

    The result is on ``positions.device`` in ``dtype``.
    """
    check_positions(positions)
    omega = frequencies(d_model, base, device=positions.device)  # (d_model/2,)
    angles = positions.to(torch.float64)[:, None] * omega[None, :]  # (t, 1) * (1, d/2) -> (t, d/2)
    pairs = torch.stack((angles.sin(), angles.cos()), dim=-1)  # (t, d/2, 2): (sin, cos) per frequency
    encoding = pairs.reshape(positions.shape[0], d_model)  # (t, d/2, 2) -> (t, d_model): sin at 2i, cos at 2i+1
    return encoding.to(dtype)
