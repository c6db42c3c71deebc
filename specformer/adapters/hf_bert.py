"""BERT's eager attention from Hugging Face ``transformers`` behind the protocol.

* ``attention``: ``transformers.models.bert.modeling_bert.eager_attention_forward`` on
  one head, with the scale ``BertSelfAttention`` computes for a head of width ``d_k``
  (``d_k^{-1/2}``) and the mask converted by the library (:mod:`.hf_common`: additive,
  ``finfo(dtype).min`` where masked). ``causal=True`` adds the library's causal mask
  function, as ``BertModel`` does when configured as a decoder.
* ``multihead_attention``: ``BertAttention``'s ``self`` module (``BertSelfAttention``,
  or ``BertCrossAttention`` when the keys come from another sequence) and the output
  projection ``output.dense`` only (no residual, no LayerNorm, which belong to the
  block), built from a ``BertConfig`` with ``hidden_size = d_model``,
  ``num_attention_heads = h``, eager attention, dropout 0, eval mode; the weights are
  copied from the parameters (transposed: ``nn.Linear`` stores ``W^T``), biases zeroed.

Not applicable: ``d_k != d_model / h`` or ``d_v != d_k`` (BERT sizes every head
``hidden_size / num_attention_heads``), and keys different from values (BERT projects
keys and values from one sequence). Nothing is downloaded: weights are the caller's.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

from specformer.adapters.hf_common import (
    additive_mask,
    check_inputs,
    eager_config,
    fresh,
    one_head_attention,
    same_sequence,
    set_linear,
    square_heads,
    transformers_module,
)
from specformer.protocol import NotApplicable
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.multihead import MultiHeadParams

NAME = "hf-bert"


def _bert() -> Any:
    return transformers_module("models.bert.modeling_bert", NAME)


def _config(d_model: int, h: int) -> Any:
    bert = _bert()
    return eager_config(bert.BertConfig, hidden_size=d_model, num_attention_heads=h,
                        attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0)


@lru_cache(maxsize=64)
def _head_module(d_k: int) -> Any:
    """A one-head ``BertSelfAttention`` of width ``d_k``: the scale and ``training`` flag the eager function reads."""
    return _bert().BertSelfAttention(_config(d_k, 1)).eval()


@lru_cache(maxsize=64)
def _attention_module(d_model: int, h: int, cross: bool, dtype: torch.dtype, device: torch.device) -> Any:
    """``BertAttention`` (self- or cross-attention) in ``dtype``; its weights are set per call."""
    module = _bert().BertAttention(_config(d_model, h), is_cross_attention=cross)
    return fresh(module, dtype, device)


class HuggingFaceBert:
    """BERT's eager attention function and attention module."""

    name = NAME

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                  *, causal: bool = False) -> AttentionOutput:
        """One head through ``modeling_bert.eager_attention_forward``; weights as the function returns them."""
        module = _head_module(q.shape[-1])
        return one_head_attention(_bert().eager_attention_forward, module, q, k, v, mask, causal,
                                  module.scaling, NAME)

    def multihead_attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            params: MultiHeadParams, mask: torch.Tensor | None = None,
                            *, causal: bool = False) -> torch.Tensor:
        """``output.dense(self(query, ...))`` of ``BertAttention`` with the given weights, no biases."""
        d_model, h, _ = square_heads(params, "BERT")
        check_inputs(query, key, value, d_model)
        if not same_sequence(key, value):
            raise NotApplicable("BERT projects keys and values from one sequence; got key != value")
        cross = not same_sequence(query, key)
        module = _attention_module(d_model, h, cross, query.dtype, query.device)
        attn = module.self
        set_linear(attn.query, params.w_q)
        set_linear(attn.key, params.w_k)
        set_linear(attn.value, params.w_v)
        set_linear(module.output.dense, params.w_o)
        b, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
        bias = additive_mask(mask, causal, b, t_q, t_k, query.dtype, query.device, NAME)  # (B, 1, t_q, t_k)
        with torch.no_grad():
            if cross:
                heads, _ = attn(query, encoder_hidden_states=key, attention_mask=bias)  # (B, t_q, d_model)
            else:
                heads, _ = attn(query, attention_mask=bias)  # (B, t_q, d_model)
            return module.output.dense(heads)  # Concat(heads) W^O: (B, t_q, d_model)


implementation = HuggingFaceBert()
