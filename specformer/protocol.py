"""The implementation protocol: the operations a user's code may provide.

An implementation is any object with a ``name`` and some of the methods below. The
suite checks each property against every implementation that provides the operations
the property needs; a property whose operations are missing is *not applicable*, not a
failure. Implementations are duck-typed: subclassing is not required.

Conventions (the same for every implementation; adapters convert):

* batch first; ``q``: ``(B, t_q, d_k)``, ``k``: ``(B, t_k, d_k)``, ``v``: ``(B, t_k, d_v)``;
* a boolean ``mask`` broadcastable to ``(B, t_q, t_k)`` with **True = may attend**
  (the documents' convention: ``masked_fill(mask == 0, -inf)``);
* projections multiply on the right, ``Q = X W^Q`` with ``W^Q`` of shape
  ``(d_model, h * d_k)``, as in the documents.

This module does not define tokenizers, embeddings or blocks yet: later families add
their operations here.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import torch

from specformer.reference.attention import AttentionOutput
from specformer.reference.multihead import MultiHeadParams

__all__ = [
    "AttentionOutput",
    "AttentionImplementation",
    "MultiHeadImplementation",
    "MultiHeadParams",
    "NotApplicable",
    "OPERATIONS",
    "provided_operations",
]


class NotApplicable(Exception):
    """Raised by an adapter for inputs it cannot take (a shape, dtype or device).

    The suite treats the example as outside the implementation's domain. When no
    example at all is in the domain, the row is reported as *not applicable*, with
    this exception's message as the reason.
    """


@runtime_checkable
class AttentionImplementation(Protocol):
    """Scaled dot-product attention."""

    name: str

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
        """``softmax(q k^T / sqrt(d_k) + mask) v`` and its weights.

        ``causal=True`` asks the implementation to apply its own causal mask (query
        ``i`` attends to keys ``j <= i``) in addition to ``mask``. ``weights`` of the
        result may be ``None`` when the implementation cannot expose them, or when
        ``need_weights=False`` (an optional parameter: the suite passes it only to
        implementations that accept it, so that cost counts see the output alone).
        """
        ...


@runtime_checkable
class MultiHeadImplementation(Protocol):
    """Multi-head attention with given projection weights."""

    name: str

    def multihead_attention(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        params: MultiHeadParams,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``Concat(head_1, ..., head_h) W^O`` with ``head_i = Attention(query W_i^Q, ...)``.

        ``query``: ``(B, t_q, d_model)``; ``key``, ``value``: ``(B, t_k, d_model)``;
        returns ``(B, t_q, d_model)``.
        """
        ...


class ScoreImplementation(Protocol):
    """The score (similarity) functions tabulated in the slides."""

    name: str

    def score(self, kind: str, q: torch.Tensor, k: torch.Tensor, **params: Any) -> torch.Tensor:
        """Scores ``f(q_i, k_j)`` of shape ``(B, t_q, t_k)`` for a named score function."""
        ...


class Operation(NamedTuple):
    """An operation of the protocol: the method name and the protocol declaring it."""

    method: str
    protocol: type


#: Every operation a property may need, by name.
OPERATIONS: dict[str, Operation] = {
    "attention": Operation("attention", AttentionImplementation),
    "multihead_attention": Operation("multihead_attention", MultiHeadImplementation),
    "score": Operation("score", ScoreImplementation),
}


def provided_operations(impl: object) -> frozenset[str]:
    """The operations an implementation provides (callable attributes of that name)."""
    return frozenset(name for name, op in OPERATIONS.items() if callable(getattr(impl, op.method, None)))
