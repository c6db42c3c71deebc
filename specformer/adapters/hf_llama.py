"""Llama's eager attention from Hugging Face ``transformers`` behind the protocol.

* ``attention``: ``transformers.models.llama.modeling_llama.eager_attention_forward``
  on one head (one key/value head, so ``repeat_kv`` is the identity), with the scale
  ``LlamaAttention`` computes for a head of width ``d_k`` (``head_dim^{-1/2}``) and the
  mask converted by the library (:mod:`.hf_common`). ``causal=True`` adds the library's
  causal mask function, what ``LlamaModel`` always does (``create_causal_mask``).
* ``multihead_attention``: ``LlamaAttention`` built from a ``LlamaConfig``
  (``hidden_size = d_model``, ``num_attention_heads = num_key_value_heads = h``,
  ``head_dim = d_k``, no biases, dropout 0, eager attention, eval mode), weights copied
  from the parameters (transposed: ``nn.Linear`` stores ``W^T``). The module always
  applies rotary position embeddings; the adapter passes ``cos = 1, sin = 0``, which
  makes them the identity, so the module computes position-free attention.

Cross-attention: ``LlamaAttention`` projects queries, keys and values from one
``hidden_states``. For keys from another sequence, the adapter runs the module on the
concatenation ``[query; key]`` with a block mask: query rows may attend only the
allowed key rows (key rows attend key rows), and it keeps the first ``t_q`` output
rows. Without rotary embeddings every position is projected alike, and masked keys
get exactly zero weight, so those rows are the cross-attention of the query over the
keys, computed by the module itself. A query row with every key masked would attend
the concatenated query rows too, so that input is not applicable there. FLOPs counted on
this path include the key rows' own attention.

* ``rotary``: Llama's rotary position embeddings: ``LlamaRotaryEmbedding`` built from a
  ``LlamaConfig`` (``head_dim = d``, ``rope_parameters = {"rope_type": "default",
  "rope_theta": base}``) gives cos/sin for the positions (``position_ids``), and
  ``apply_rotary_pos_emb`` rotates ``x`` with ``rotate_half``, which pairs features
  ``(i, i + d/2)``: the ``half`` pairing. ``pairing="interleaved"`` is not applicable.
  The library computes the angles in float32 whatever the dtype (``inv_freq`` is a float32
  buffer, the positions are cast with ``.float()``) and casts cos/sin to the dtype of
  ``x``: in float64 the rotation is accurate to about ``1e-7 m`` radians only.

Not applicable besides: keys different from values, ``d_v != d_k`` (one
``head_dim``), and sizes ``LlamaConfig`` refuses (``d_model`` not a multiple of ``h``;
an odd ``head_dim`` above 4, as RoPE rotates feature pairs); ``d_k`` need not be
``d_model / h``. The softmax of the eager function runs in float32
whatever the input dtype (``softmax(..., dtype=torch.float32).to(query.dtype)``); the
adapter leaves that as it is.
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
    transformers_module,
)
from specformer.protocol import Capabilities, NotApplicable
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.masks import causal_mask
from specformer.reference.attention.multihead import MultiHeadParams

NAME = "hf-llama"


def _llama() -> Any:
    return transformers_module("models.llama.modeling_llama", NAME)


def _config(d_model: int, h: int, head_dim: int) -> Any:
    """A ``LlamaConfig`` of these sizes with eager attention.

    The config checks, when it is built, that RoPE can rotate pairs of a head's features
    (an even ``head_dim``). The attention operations here apply RoPE as the identity (cos
    1, sin 0) and ``rotary`` asks for even widths, so an odd ``head_dim`` is set after the
    check: ``LlamaAttention`` reads it from the config as it is.
    """
    config = eager_config(_llama().LlamaConfig, hidden_size=d_model, num_attention_heads=h, num_key_value_heads=h,
                          head_dim=head_dim + head_dim % 2, intermediate_size=4 * d_model, attention_bias=False,
                          attention_dropout=0.0)
    config.head_dim = head_dim
    return config


@lru_cache(maxsize=1)
def _head_module() -> Any:
    """A one-head ``LlamaAttention``: the ``num_key_value_groups`` (1) and ``training`` the eager function reads."""
    return _llama().LlamaAttention(_config(2, 1, 2), layer_idx=0).eval()


@lru_cache(maxsize=64)
def _attention_module(d_model: int, h: int, d_k: int, dtype: torch.dtype, device: torch.device) -> Any:
    """``LlamaAttention`` in ``dtype``; its weights are set per call."""
    return fresh(_llama().LlamaAttention(_config(d_model, h, d_k), layer_idx=0), dtype, device)


@lru_cache(maxsize=32)
def _rotary_module(d: int, base: float, device: torch.device) -> Any:
    """``LlamaRotaryEmbedding`` for heads of width ``d`` and the given base (default RoPE, no scaling)."""
    config = _config(d, 1, d)
    config.rope_parameters = {"rope_type": "default", "rope_theta": base}
    return _llama().LlamaRotaryEmbedding(config).to(device).eval()


class HuggingFaceLlama:
    """Llama's eager attention function and attention module (rotary embeddings as the identity), and its RoPE."""

    name = NAME
    #: LlamaAttention projects keys and values from one sequence with one head_dim for both;
    #: rotate_half pairs features (i, i + d/2).
    capabilities = Capabilities(conventions={"separate_key_value": {False}, "value_width": {"d_model_over_h"},
                                             "pairing": {"half"}})

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                  *, causal: bool = False) -> AttentionOutput:
        """One head through ``modeling_llama.eager_attention_forward``; weights as the function returns them."""
        scaling = q.shape[-1] ** -0.5  # LlamaAttention.scaling = head_dim ** -0.5, here head_dim = d_k
        return one_head_attention(_llama().eager_attention_forward, _head_module(), q, k, v, mask, causal,
                                  scaling, NAME)

    def multihead_attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            params: MultiHeadParams, mask: torch.Tensor | None = None,
                            *, causal: bool = False) -> torch.Tensor:
        """``LlamaAttention``'s output (``o_proj`` included) with the given weights, RoPE as the identity."""
        d_model, h, d_k = params.d_model, params.h, params.d_k
        check_inputs(query, key, value, d_model)
        if not same_sequence(key, value):
            raise NotApplicable("LlamaAttention projects keys and values from one sequence; got key != value")
        if params.d_v != d_k:
            raise NotApplicable(f"LlamaAttention has one head_dim for queries, keys and values; got d_k={d_k}, "
                                f"d_v={params.d_v}")
        module = _attention_module(d_model, h, d_k, query.dtype, query.device)
        for linear, w in ((module.q_proj, params.w_q), (module.k_proj, params.w_k), (module.v_proj, params.w_v),
                          (module.o_proj, params.w_o)):
            set_linear(linear, w)
        b, t_q = query.shape[0], query.shape[1]
        if same_sequence(query, key):
            hidden, bias = query, additive_mask(mask, causal, b, t_q, t_q, query.dtype, query.device, NAME)
        else:
            hidden, bias = _concatenated(query, key, mask, causal)
        t = hidden.shape[1]
        cos = torch.ones(b, t, d_k, dtype=query.dtype, device=query.device)  # (B, t, head_dim): no rotation
        sin = torch.zeros(b, t, d_k, dtype=query.dtype, device=query.device)
        with torch.no_grad():
            output, _ = module(hidden, position_embeddings=(cos, sin), attention_mask=bias)  # (B, t, d_model)
        return output[:, :t_q]  # the query's rows: (B, t_q, d_model)

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        """``apply_rotary_pos_emb`` on ``x (B, t, d)`` as one head, cos/sin from ``LlamaRotaryEmbedding``."""
        if pairing != "half":
            raise NotApplicable(f"{NAME}: Llama's rotate_half pairs features (i, i + d/2) only (half); "
                                f"got pairing={pairing!r}")
        if x.dim() != 3 or x.shape[-1] % 2:
            raise ValueError(f"{NAME}: x must be (B, t, d) with d even, got {tuple(x.shape)}")
        b, t, d = x.shape
        module = _rotary_module(d, float(base), x.device)
        position_ids = positions.to(x.device)[None, :].expand(b, t)  # (t,) -> (B, t)
        heads = x[:, None]  # (B, t, d) -> (B, 1, t, d): one head
        with torch.no_grad():
            cos, sin = module(heads, position_ids)  # (B, t, d) each, in x.dtype
            rotated, _ = _llama().apply_rotary_pos_emb(heads, heads, cos, sin)  # (B, 1, t, d)
        return rotated[:, 0]  # (B, 1, t, d) -> (B, t, d)


def _concatenated(query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None,
                  causal: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``[query; key]`` ``(B, t_q + t_k, d_model)`` and the block mask that makes its first rows cross-attention."""
    b, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
    allowed = torch.ones(b, t_q, t_k, dtype=torch.bool, device=query.device)  # query rows -> key columns
    if mask is not None:
        allowed = allowed & mask.to(query.device)  # (B|1, t_q|1, t_k) broadcast to (B, t_q, t_k)
    if causal:
        allowed = allowed & causal_mask(t_q, t_k, device=query.device)
    full = torch.zeros(b, t_q + t_k, t_q + t_k, dtype=torch.bool, device=query.device)
    full[:, :t_q, t_q:] = allowed  # query rows see the allowed keys only
    full[:, t_q:, t_q:] = True  # key rows see the keys (their output is dropped)
    bias = additive_mask(full, False, b, t_q + t_k, t_q + t_k, query.dtype, query.device, NAME)
    # The query block holds no keys at all: -inf there, so that a query row whose keys are
    # all masked spreads its weight over its t_k keys (each at the library's finfo.min), as
    # the library does over one sequence of keys, and never over the query positions.
    bias[:, :, :t_q, :t_q] = float("-inf")  # (B, 1, t_q, t_q) of (B, 1, t_q + t_k, t_q + t_k)
    return torch.cat([query, key], dim=1), bias  # (B, t_q + t_k, d_model), (B, 1, t_q + t_k, t_q + t_k)


implementation = HuggingFaceLlama()
