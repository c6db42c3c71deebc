"""Positions written in binary, one bit per feature (the slides' "bits as position encoding").

Feature ``i`` of the encoding of ``pos`` is bit ``i`` of ``pos``, least significant
first, as ``0.0`` or ``1.0``::

    B[pos, i] = (pos >> i) & 1

With ``d_model`` features exactly the ``2**d_model`` positions ``0 .. 2**d_model - 1``
have distinct encodings (there are no more 0/1 vectors of that length); a larger
position needs more bits and is refused with ``ValueError`` instead of being silently
wrapped around. Positions are ``int64``, so features from 63 on are always ``0``.

What this module does not do: signed (+1/-1) or scaled bit codes, negative positions,
or adding the encoding to token embeddings.
"""

from __future__ import annotations

import torch

from .sinusoidal import check_positions

__all__ = ["binary_encoding", "max_positions"]

#: ``int64`` positions have 63 value bits; higher features are zero.
VALUE_BITS = 63


def max_positions(d_model: int) -> int:
    """How many positions ``d_model`` bits tell apart: ``2**d_model``."""
    return 2**d_model


def binary_encoding(positions: torch.Tensor, d_model: int, *, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Encodings ``(t, d_model)`` of ``positions (t,)``: bit ``i`` of each position at feature ``i``.

    The result is on ``positions.device`` in ``dtype`` (0 and 1 are exact in every float dtype).
    """
    check_positions(positions)
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 1:
        raise ValueError(f"d_model must be an integer >= 1, got {d_model!r}")
    if d_model < VALUE_BITS and int(positions.max()) >= max_positions(d_model):
        raise ValueError(
            f"position {int(positions.max())} needs more than d_model={d_model} bits: "
            f"binary encodings tell apart only positions 0 .. {max_positions(d_model) - 1}"
        )
    n_bits = min(d_model, VALUE_BITS)
    shifts = torch.arange(n_bits, dtype=torch.int64, device=positions.device)  # (n_bits,): 0, 1, 2, ...
    bits = (positions.to(torch.int64)[:, None] >> shifts[None, :]) & 1  # (t, 1) >> (1, n_bits) -> (t, n_bits)
    encoding = torch.zeros(positions.shape[0], d_model, dtype=dtype, device=positions.device)  # (t, d_model)
    encoding[:, :n_bits] = bits.to(dtype)
    return encoding
