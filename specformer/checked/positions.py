"""Checked calls of the positions family: ``positional_encoding``, ``rotary``, ``alibi_bias``,
``alibi_attention``, ``learned_positions``, ``input_embedding``.

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
        """The implementation's encodings ``(t, d_model)`` of ``positions``, as float64 (not applicable at once
        for a kind the implementation declares it does not compute)."""
        self.require("encoding_kind", kind)
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
        """The implementation's ALiBi biases ``(h, t_q, t_k)``, as float64 (``-inf`` kept). A ``causal`` the
        implementation declares it does not follow (``alibi_causal``) is never asked: the row is not applicable."""
        self.require("alibi_causal", causal)
        result = self.call("alibi_bias", h, t_q, t_k, names=("h", "t_q", "t_k"), causal=causal, dtype=self.dtype,
                           device=str(self.device))
        return self._returned("alibi_bias", result, (h, t_q, t_k), "ALiBi biases")

    def alibi_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                        causal: bool = False) -> torch.Tensor:
        """The implementation's attention with ALiBi biases ``(B, h, t_q, d_v)``, as float64 (``causal`` bound by
        the declaration, as in :meth:`alibi_bias`)."""
        self.require("alibi_causal", causal)
        result = self.call("alibi_attention", self.cast(q), self.cast(k), self.cast(v), names=("q", "k", "v"),
                           causal=causal)
        return self._returned("alibi_attention", result, (*q.shape[:-1], v.shape[-1]), "ALiBi attention output")

    def learned_positions(self, positions: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """The implementation's rows ``(t, d)`` of a learned position table, as float64."""
        result = self.call("learned_positions", positions.to(torch.int64), self.cast(table),
                           names=("positions", "table"))
        return self._returned("learned_positions", result, (positions.shape[0], table.shape[1]), "position rows")

    def learned_positions_refused(self, positions: torch.Tensor, table: torch.Tensor) -> str | None:
        """The exception's type name if the implementation raised for ``positions``; ``None`` if it answered.

        An answer is still checked (a tensor of the right shape, dtype and device); raising
        is what the protocol asks for positions past the table.
        """
        try:
            self.learned_positions(positions, table)
        except ImplementationError as error:
            prefix = f"{self.impl_name}.learned_positions raised "
            if str(error).startswith(prefix):
                return str(error)[len(prefix):].split(":", 1)[0]
            raise
        return None

    def input_embedding(self, tokens: torch.Tensor, token_table: torch.Tensor, position_table: torch.Tensor, *,
                        scale: bool = False) -> torch.Tensor:
        """The implementation's input sum ``(B, t, d_model)``, as float64."""
        result = self.call("input_embedding", tokens.to(torch.int64), self.cast(token_table),
                           self.cast(position_table), names=("tokens", "token_table", "position_table"), scale=scale)
        return self._returned("input_embedding", result, (*tokens.shape, token_table.shape[1]),
                              "token plus position embeddings")
