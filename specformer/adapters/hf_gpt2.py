"""GPT-2's eager attention from Hugging Face ``transformers`` behind the protocol.

* ``attention``: ``transformers.models.gpt2.modeling_gpt2.eager_attention_forward`` on
  one head, with the scale ``GPT2Attention`` computes for a head of width ``d_k``
  (``scale_attn_weights``: ``d_k^{-1/2}``) and the mask converted by the library
  (:mod:`.hf_common`). ``causal=True`` adds the library's causal mask function, which
  is what ``GPT2Model`` always does for its self-attention (``create_causal_mask``).
* ``multihead_attention``: ``GPT2Attention`` built from a ``GPT2Config``
  (``n_embd = d_model``, ``n_head = h``, eager attention, dropouts 0, no layer-wise
  scaling, no reordered upcast, eval mode). ``c_attn`` and ``c_proj`` are ``Conv1D``
  layers, which store their weight as ``(in, out)`` and multiply on the right like the
  protocol: ``c_attn.weight = [W^Q | W^K | W^V]``, ``c_proj.weight = W^O``, biases zero.
  Keys from another sequence use the module's cross-attention form
  (``is_cross_attention=True``: ``q_attn.weight = W^Q``, ``c_attn.weight = [W^K | W^V]``).

Causality: in ``transformers`` 5 the module's eager path applies only the mask it is
given (the fixed lower-triangular buffer of older releases is gone); the causal mask is
built by ``GPT2Model``. The adapter therefore passes the protocol's mask, so the module
is checked as the general multi-head attention the documents describe, and takes the
model's causal mask when asked (``causal=True``, as :mod:`.torch_mha` accepts it).

Not applicable: ``d_k != d_model / h`` or ``d_v != d_k``, and keys different from values.
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
    square_heads,
    transformers_module,
)
from specformer.protocol import NotApplicable
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.multihead import MultiHeadParams

NAME = "hf-gpt2"


def _gpt2() -> Any:
    return transformers_module("models.gpt2.modeling_gpt2", NAME)


def _config(d_model: int, h: int) -> Any:
    return eager_config(_gpt2().GPT2Config, n_embd=d_model, n_head=h, attn_pdrop=0.0, resid_pdrop=0.0,
                        embd_pdrop=0.0, scale_attn_weights=True, scale_attn_by_inverse_layer_idx=False,
                        reorder_and_upcast_attn=False)


@lru_cache(maxsize=64)
def _head_module(d_k: int) -> Any:
    """A one-head ``GPT2Attention`` of width ``d_k``: the scale and ``training`` flag the eager function reads."""
    return _gpt2().GPT2Attention(_config(d_k, 1), layer_idx=0).eval()


@lru_cache(maxsize=64)
def _attention_module(d_model: int, h: int, cross: bool, dtype: torch.dtype, device: torch.device) -> Any:
    """``GPT2Attention`` (self- or cross-attention) in ``dtype``; its weights are set per call."""
    module = _gpt2().GPT2Attention(_config(d_model, h), is_cross_attention=cross, layer_idx=0)
    return fresh(module, dtype, device)


def _set_conv1d(conv: Any, *blocks: torch.Tensor) -> None:
    """``Conv1D`` computes ``x @ weight + bias`` with ``weight`` ``(in, out)``: the blocks side by side."""
    with torch.no_grad():
        conv.weight.copy_(torch.cat(blocks, dim=1))  # (d_model, n * d_model)
        conv.bias.zero_()


class HuggingFaceGPT2:
    """GPT-2's eager attention function and attention module."""

    name = NAME

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                  *, causal: bool = False) -> AttentionOutput:
        """One head through ``modeling_gpt2.eager_attention_forward``; weights as the function returns them."""
        module = _head_module(q.shape[-1])
        return one_head_attention(_gpt2().eager_attention_forward, module, q, k, v, mask, causal,
                                  module.scaling, NAME)

    def multihead_attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            params: MultiHeadParams, mask: torch.Tensor | None = None,
                            *, causal: bool = False) -> torch.Tensor:
        """``GPT2Attention``'s output (``c_proj`` included) with the given weights, no biases."""
        d_model, h, _ = square_heads(params, "GPT-2")
        check_inputs(query, key, value, d_model)
        if not same_sequence(key, value):
            raise NotApplicable("GPT-2 projects keys and values from one sequence; got key != value")
        cross = not same_sequence(query, key)
        module = _attention_module(d_model, h, cross, query.dtype, query.device)
        if cross:
            _set_conv1d(module.q_attn, params.w_q)
            _set_conv1d(module.c_attn, params.w_k, params.w_v)
        else:
            _set_conv1d(module.c_attn, params.w_q, params.w_k, params.w_v)
        _set_conv1d(module.c_proj, params.w_o)
        b, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
        bias = additive_mask(mask, causal, b, t_q, t_k, query.dtype, query.device, NAME)  # (B, 1, t_q, t_k)
        with torch.no_grad():
            if cross:
                output, _ = module(query, encoder_hidden_states=key, encoder_attention_mask=bias)
            else:
                output, _ = module(query, attention_mask=bias)
        return output  # (B, t_q, d_model)


implementation = HuggingFaceGPT2()
