"""The attention family's operations: attention, multi-head attention, score functions.

Conventions (the same for every implementation; adapters convert):

* batch first; ``q``: ``(B, t_q, d_k)``, ``k``: ``(B, t_k, d_k)``, ``v``: ``(B, t_k, d_v)``;
* a boolean ``mask`` broadcastable to ``(B, t_q, t_k)`` with **True = may attend**
  (the documents' convention: ``masked_fill(mask == 0, -inf)``);
* ``causal=True`` counts rows and columns from the first query and key (top-left
  alignment, as ``torch.nn.functional.scaled_dot_product_attention``): query ``i`` sees
  keys ``j <= i`` also when ``t_q != t_k``; an implementation aligned bottom-right (the
  key-value-cache convention) declares ``causal_alignment``;
* projections multiply on the right, ``Q = X W^Q`` with ``W^Q`` of shape
  ``(d_model, h * d_k)``, as in the documents.

This module declares the operations only; :mod:`specformer.checked.attention` calls them
and checks what they return.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch

from specformer.protocol.base import Family, Operation
from specformer.protocol.capabilities import Convention
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.multihead import MultiHeadParams

__all__ = ["AttentionOutput", "AttentionImplementation", "CONVENTIONS", "MultiHeadImplementation",
           "MultiHeadParams", "ScoreImplementation", "FAMILY"]


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
        ``i`` attends to keys ``j <= i``) in addition to ``mask``, with or without one.
        Rows and columns count from the first query and key (top-left alignment), also
        for ``t_q != t_k``: with ``t_q = 2`` and ``t_k = 3`` query 0 sees key 0 alone,
        and with ``t_q > t_k`` every query sees key 0. An implementation aligned
        bottom-right (query ``i`` sees keys ``j <= i + t_k - t_q``, the key-value-cache
        convention of FlashAttention) declares ``causal_alignment = {"bottom-right"}``;
        the two agree when ``t_q = t_k``.

        ``weights`` of the result may be ``None`` when the implementation cannot expose
        them, or when ``need_weights=False`` (an optional parameter: the suite passes it
        only to implementations that accept it, so that cost counts see the output alone).
        An implementation that never returns them declares ``returns_weights`` False in
        its capabilities: the properties about the weights are then not applicable at once.
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


#: The attention family's conventions: what an implementation may declare it supports
#: (:class:`~specformer.protocol.capabilities.Capabilities`); a name it does not declare means every value.
CONVENTIONS: dict[str, Convention] = {
    "separate_key_value": Convention(
        values=(True, False),
        doc="multihead_attention with key and value from different sequences (True) or only key == value (False): "
            "BERT, GPT-2, Llama and x-transformers project keys and values from one sequence",
    ),
    "value_width": Convention(
        values=("d_model_over_h", "free"),
        doc="multi-head value width: d_k = d_v = d_model / h only ('d_model_over_h': torch.nn.MultiheadAttention, "
            "the Hugging Face modules), or any d_v ('free')",
    ),
    "key_width": Convention(
        values=("d_model_over_h", "free"),
        doc="multi-head query/key width: d_k = d_model / h only ('d_model_over_h'), or any d_k ('free': the "
            "reference, x-transformers' dim_head); the properties that draw d_k != d_model / h also need "
            "value_width 'free'",
    ),
    "returns_weights": Convention(
        values=(True, False),
        doc="attention returns its weights A beside the output (True), or the output only, as fused kernels do "
            "(False): the properties about A are then not applicable at once, before any call; an implementation "
            "that declares True must return them whenever they are asked for",
    ),
    "causal_alignment": Convention(
        values=("top-left", "bottom-right"),
        doc="where attention(causal=True) places its causal mask when t_q != t_k: rows and columns counted from "
            "the first query and key, query i sees keys j <= i ('top-left', the protocol's, as "
            "torch.nn.functional.scaled_dot_product_attention), or from the last, j <= i + t_k - t_q "
            "('bottom-right', the key-value-cache convention of FlashAttention and x-transformers, where the first "
            "t_q - t_k queries of a t_q > t_k call see no key). The two agree when t_q = t_k; the properties that "
            "draw t_q != t_k compare with the declared alignment, on the queries it leaves a key. Undeclared: "
            "top-left.",
        default=("top-left",),
    ),
}

#: The attention family: its operations and conventions, registered in :data:`specformer.protocol.FAMILIES`.
FAMILY = Family(
    "attention",
    (
        Operation("attention", AttentionImplementation),
        Operation("multihead_attention", MultiHeadImplementation),
        Operation("score", ScoreImplementation),
    ),
    CONVENTIONS,
)
