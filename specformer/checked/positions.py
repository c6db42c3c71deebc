"""Checked calls of the positions family: ``positional_encoding``, ``rotary``, ``alibi_bias``.

Mixed into :class:`specformer.context.Context`. Each method casts float inputs to the dtype
under test (positions stay ``int64``), calls the operation in the implementation's worker,
checks the result's shape, dtype and device against what the property asked for, and
returns a float64 CPU tensor.
"""

from __future__ import annotations

from typing import Any

import torch

from specformer.checked import register
from specformer.checked.base import ContextBase as _Base
from specformer.checked.base import ImplementationError


@register
class PositionCalls(_Base):
    """The positions family's operations, as a property calls them."""

    def positional_encoding(self, kind: str, positions: torch.Tensor, d_model: int, **params: Any) -> torch.Tensor:
        """The implementation's encodings ``(t, d_model)`` of ``positions``, as float64."""
        result = self.call("positional_encoding", kind, positions.to(torch.int64), d_model,
                           names=("kind", "positions", "d_model"), dtype=self.dtype, **params)
        return self._returned("positional_encoding", result, (positions.shape[0], d_model), f"{kind} encodings")

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        """The implementation's rotary embedding of ``x (B, t, d)``, as float64."""
        result = self.call("rotary", self.cast(x), positions.to(torch.int64), names=("x", "positions"),
                           pairing=pairing, base=base)
        return self._returned("rotary", result, tuple(x.shape), f"rotated x ({pairing} pairs)")

    def alibi_bias(self, h: int, t_q: int, t_k: int, *, causal: bool = False) -> torch.Tensor:
        """The implementation's ALiBi biases ``(h, t_q, t_k)``, as float64 (``-inf`` kept)."""
        result = self.call("alibi_bias", h, t_q, t_k, names=("h", "t_q", "t_k"), causal=causal, dtype=self.dtype,
                           device=str(self.device))
        return self._returned("alibi_bias", result, (h, t_q, t_k), "ALiBi biases")
