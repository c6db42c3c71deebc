"""Checked calls of the attention family: ``attention``, ``multihead_attention``, ``score``.

Mixed into :class:`specformer.context.Context`; each method casts the float64 inputs to
the dtype under test, calls the operation in the implementation's worker, checks the
result's shape, dtype and device, and returns float64 CPU tensors. The checks use the
shapes of the inputs the property drew, never anything the implementation reports.
"""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import reject

from specformer.protocol.attention import AttentionOutput, MultiHeadParams

from specformer.checked import register
from specformer.checked.base import ContextBase as _Base
from specformer.checked.base import ImplementationError


@register
class AttentionCalls(_Base):
    """The attention family's operations, as a property calls them."""

    def attention(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        causal: bool = False,
        need_weights: bool = True,
    ) -> AttentionOutput:
        """The implementation's attention, as float64 CPU tensors (weights may be None).

        ``need_weights=False`` is passed on only to implementations that accept it.
        """

        result = self.call("attention", self.cast(q), self.cast(k), self.cast(v), self.cast(mask),
                           names=("q", "k", "v", "mask"), optional={} if need_weights else {"need_weights": False},
                           causal=causal)
        if not isinstance(result, tuple) or len(result) != 2:
            kind = type(result).__name__ if not isinstance(result, tuple) else f"a tuple of {len(result)}"
            raise ImplementationError(f"attention returned {kind}, expected (output, weights) or AttentionOutput")
        lead, t_q, t_k, d_v = tuple(q.shape[:-2]), q.shape[-2], k.shape[-2], v.shape[-1]
        output = self._returned("attention", result[0], (*lead, t_q, d_v), "output")
        weights = None if result[1] is None else self._returned("attention", result[1], (*lead, t_q, t_k), "weights")
        return AttentionOutput(output, weights)

    def attention_paths(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                        *, causal: bool = False) -> list[tuple[str, AttentionOutput]]:
        """The result with weights, then, if the implementation accepts ``need_weights``, the output without.

        A fused kernel may serve ``need_weights=False`` by another path than the one that
        returns weights; output properties check every path. Each entry is a label for
        messages (empty for the first) and the result (weights ``None`` on the second).
        """
        paths = [("", self.attention(q, k, v, mask, causal=causal))]
        if not getattr(self, "_no_lean_path", False):
            lean = self.attention(q, k, v, mask, causal=causal, need_weights=False)
            if "need_weights" in self.last_applied:
                paths.append((" (need_weights=False)", AttentionOutput(lean.output, None)))
            else:
                self._no_lean_path = True  # the implementation has one path; skip the second call from now on
        return paths

    def weights(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                *, causal: bool = False) -> torch.Tensor:
        """The attention weights; not applicable when the implementation hides them.

        Declared hidden (``returns_weights`` False): not applicable at once, before any call.
        Declared returned (True only): ``None`` is a failure to answer.
        """
        self.require("returns_weights", True)
        weights = self.attention(q, k, v, mask, causal=causal).weights
        if weights is None and not self.supports("returns_weights", False):
            raise ImplementationError(f"{self.impl_name} declares returns_weights True, but attention returned no "
                                      "weights")
        if weights is None:
            self.not_applicable.append(f"{self.impl_name} does not expose attention weights")
            self.out_of_domain += 1
            reject()
        return weights

    def multihead_attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            params: MultiHeadParams, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The implementation's multi-head attention, as a float64 CPU tensor."""
        moved: dict[int, torch.Tensor | None] = {}  # cast each object once: self-attention keeps key is query
        for x in (query, key, value):
            moved.setdefault(id(x), self.cast(x))
        result = self.call(
            "multihead_attention", moved[id(query)], moved[id(key)], moved[id(value)],
            params.to("cpu", self.dtype), self.cast(mask), names=("query", "key", "value", "params", "mask"),
        )
        shape = (query.shape[0], query.shape[1], params.d_model)
        return self._returned("multihead_attention", result, shape, "output")

    def score(self, kind: str, q: torch.Tensor, k: torch.Tensor, **params: Any) -> torch.Tensor:
        """The implementation's score function ``kind``, as a float64 CPU tensor."""
        moved = {n: self.cast(p) if isinstance(p, torch.Tensor) else p for n, p in params.items()}
        result = self.call("score", kind, self.cast(q), self.cast(k), names=("kind", "q", "k"), **moved)
        return self._returned("score", result, (*q.shape[:-2], q.shape[-2], k.shape[-2]), f"{kind} scores")


