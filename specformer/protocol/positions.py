"""The positions family's operations: positional encodings, rotary embeddings, ALiBi biases.

Conventions (the same for every implementation; adapters convert):

* positions are a 1-D ``int64`` tensor ``(t,)`` of non-negative integers, counted from 0,
  on the device under test; results are on that device, in the ``dtype`` asked for;
* ``positional_encoding`` returns one row per position, ``(t, d_model)``; its feature
  index follows the documents: feature ``2i`` is the sine and ``2i + 1`` the cosine of
  frequency ``i`` (``kind="sinusoidal"``);
* ``rotary`` rotates the last axis of ``x (B, t, d)`` (``d`` even) in pairs: ``pairing=
  "interleaved"`` pairs features ``(2i, 2i + 1)`` (the RoFormer paper), ``pairing="half"``
  pairs ``(i, i + d/2)`` (the "rotate half" layout of GPT-NeoX and Llama); the angle of
  pair ``i`` at position ``m`` is ``m base^(-2i/d)``;
* ``alibi_bias`` returns the additive score biases ``(h, t_q, t_k)`` of ALiBi, one matrix
  per head, ``-m_h |i - j|`` (and ``-inf`` above the diagonal when ``causal``).

This module declares the operations only; :mod:`specformer.checked.positions` calls them
and checks what they return.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from specformer.protocol.base import Family, Operation

__all__ = ["AlibiImplementation", "FAMILY", "PositionalEncodingImplementation", "RotaryImplementation"]


class PositionalEncodingImplementation(Protocol):
    """Absolute positional encodings: a vector per position."""

    name: str

    def positional_encoding(self, kind: str, positions: torch.Tensor, d_model: int, *, dtype: torch.dtype,
                            **params: Any) -> torch.Tensor:
        """Encodings ``(t, d_model)`` of ``positions (t,)``, in ``dtype`` on ``positions.device``.

        ``kind="sinusoidal"`` (``params``: ``base``, default 10000):
        ``PE(pos, 2i) = sin(pos / base^(2i/d_model))``, ``PE(pos, 2i+1) = cos(...)``;
        ``kind="binary"``: feature ``i`` is bit ``i`` of ``pos`` (least significant first).
        Raise :class:`specformer.protocol.NotApplicable` for kinds not provided.
        """
        ...


class RotaryImplementation(Protocol):
    """Rotary position embeddings (RoPE) applied to queries or keys."""

    name: str

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        """``x (B, t, d)`` with each feature pair rotated by its position's angle; same shape."""
        ...


class AlibiImplementation(Protocol):
    """Attention with linear biases (ALiBi)."""

    name: str

    def alibi_bias(self, h: int, t_q: int, t_k: int, *, causal: bool = False, dtype: torch.dtype,
                   device: str) -> torch.Tensor:
        """Biases ``(h, t_q, t_k)``: ``-m_h |i - j|`` with the implementation's slopes ``m_h > 0``,
        ``-inf`` where ``j > i`` when ``causal``; in ``dtype`` on ``device``."""
        ...


#: The positions family, registered in :data:`specformer.protocol.FAMILIES`.
FAMILY = Family(
    "positions",
    (
        Operation("positional_encoding", PositionalEncodingImplementation),
        Operation("rotary", RotaryImplementation),
        Operation("alibi_bias", AlibiImplementation),
    ),
)
