"""BERT's eager attention and its layer from Hugging Face ``transformers`` behind the protocol.

Attention family:

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

Blocks family (the modules built from a ``BertConfig`` with ``hidden_size = d_model``,
``num_attention_heads = heads``, ``intermediate_size = d_ff``, ``layer_norm_eps = eps``,
``hidden_act`` as below, eager attention, dropouts 0, eval mode, under ``torch.no_grad``;
cached per configuration, dtype and device, with every weight and bias set on each call):

* ``feed_forward``: ``BertIntermediate`` (``dense`` = ``w_1, b_1``, then the activation)
  followed by ``BertOutput.dense`` (``w_2, b_2``) only: ``BertOutput`` also adds the
  residual and applies its LayerNorm, which belong to the layer, not to the network.
* ``encoder_layer``: ``BertLayer``, post-norm only. ``attention.self`` holds
  ``w_q, b_q, w_k, b_k, w_v, b_v``; ``attention.output.dense`` ``w_o, b_o`` and
  ``attention.output.LayerNorm`` ``gamma_1, beta_1`` (``LN_1(x + SA(x))``);
  ``intermediate.dense`` ``w_1, b_1``, ``output.dense`` ``w_2, b_2`` and
  ``output.LayerNorm`` ``gamma_2, beta_2`` (``LN_2(y + FFN(y))``). ``causal=True``
  passes the library's causal additive mask (:func:`.hf_common.additive_mask`, what
  ``BertModel`` builds for a decoder) as ``attention_mask``; ``causal=False`` passes
  none, so every position attends to every position.
* ``decoder_layer``: ``BertLayer`` with ``is_decoder=True`` and ``add_cross_attention=True``:
  causal self-attention (``LN_1``, the causal mask as above), then ``crossattention``
  (``BertCrossAttention``: ``wc_q, bc_q`` project the target, ``wc_k, bc_k, wc_v, bc_v``
  the memory; ``crossattention.output`` holds ``wc_o, bc_o`` and ``gamma_2, beta_2``),
  unmasked (no ``encoder_attention_mask``), then the feed-forward network with
  ``output.LayerNorm`` = ``gamma_3, beta_3``: the protocol's post-norm decoder layer.

Model size:

* ``count_parameters``: ``BertModel(add_pooling_layer=False)`` built on the ``meta``
  device from ``vocab_size``, ``hidden_size``, ``num_hidden_layers``,
  ``num_attention_heads``, ``intermediate_size = d_ff``, ``max_position_embeddings =
  max_len`` and ``type_vocab_size = token_types``; its parameters counted. BERT's layout
  is fixed: learned positions, a LayerNorm after the input sum, post-norm layers with no
  final LayerNorm, no output layer (the masked-language-model head is a separate module);
  other configurations are not applicable.

Weights arrive as ``x W + b`` with ``W (d_in, d_out)``; ``nn.Linear`` stores ``W^T``, so
every matrix is copied transposed. Activations: the protocol's ``relu``, ``gelu`` (exact,
erf) and ``gelu_tanh`` are ``hidden_act`` ``"relu"``, ``"gelu"`` (``GELUActivation``:
``torch.nn.functional.gelu``, erf-based; BERT's default) and ``"gelu_new"``
(``NewGELUActivation``, the tanh formula; checked against the formulas numerically).

Not applicable: ``d_k != d_model / h`` or ``d_v != d_k`` (BERT sizes every head
``hidden_size / num_attention_heads``), keys different from values (BERT projects
keys and values from one sequence), an activation outside the three above, and
``norm_first=True`` (``BertLayer`` is post-norm: its LayerNorms sit after each
residual addition, and nothing in ``BertConfig`` moves them). Nothing is downloaded:
weights are the caller's.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch
from torch import nn

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
from specformer.protocol import Capabilities, NotApplicable
from specformer.protocol.blocks import DECODER_KEYS, ENCODER_KEYS, ModelConfig
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.multihead import MultiHeadParams
from specformer.reference.blocks.encoder_layer import check_weights

NAME = "hf-bert"

#: The protocol's activations by their ``hidden_act`` names in ``transformers.activations.ACT2FN``.
HIDDEN_ACT = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_new"}

_FFN_KEYS = ("w_1", "b_1", "w_2", "b_2")


def _bert() -> Any:
    return transformers_module("models.bert.modeling_bert", NAME)


def _config(d_model: int, h: int) -> Any:
    bert = _bert()
    return eager_config(bert.BertConfig, hidden_size=d_model, num_attention_heads=h,
                        attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0)


def _hidden_act(activation: str) -> str:
    """BERT's ``hidden_act`` for a protocol activation; NotApplicable for others."""
    if activation not in HIDDEN_ACT:
        raise NotApplicable(f"BERT's hidden_act offers the protocol's {', '.join(HIDDEN_ACT)} "
                            f"(as {', '.join(HIDDEN_ACT.values())}), not {activation!r}")
    return HIDDEN_ACT[activation]


def _post_norm_only(norm_first: bool) -> None:
    if norm_first:
        raise NotApplicable("BertLayer is post-norm only (LayerNorm(x + sublayer(x)) in BertSelfOutput and "
                            "BertOutput); BertConfig has no pre-norm (norm_first=True) setting")


def _heads(d_model: int, heads: int) -> None:
    if heads < 1 or d_model % heads:
        raise ValueError(f"heads={heads} must be >= 1 and divide d_model={d_model}")


def _layer_config(d_model: int, heads: int, d_ff: int, hidden_act: str, eps: float, decoder: bool) -> Any:
    return eager_config(_bert().BertConfig, hidden_size=d_model, num_attention_heads=heads, intermediate_size=d_ff,
                        hidden_act=hidden_act, layer_norm_eps=eps, attention_probs_dropout_prob=0.0,
                        hidden_dropout_prob=0.0, is_decoder=decoder, add_cross_attention=decoder)


@lru_cache(maxsize=64)
def _head_module(d_k: int) -> Any:
    """A one-head ``BertSelfAttention`` of width ``d_k``: the scale and ``training`` flag the eager function reads."""
    return _bert().BertSelfAttention(_config(d_k, 1)).eval()


@lru_cache(maxsize=64)
def _attention_module(d_model: int, h: int, cross: bool, dtype: torch.dtype, device: torch.device) -> Any:
    """``BertAttention`` (self- or cross-attention) in ``dtype``; its weights are set per call."""
    module = _bert().BertAttention(_config(d_model, h), is_cross_attention=cross)
    return fresh(module, dtype, device)


@lru_cache(maxsize=64)
def _ffn_modules(d_model: int, d_ff: int, hidden_act: str, dtype: torch.dtype,
                 device: torch.device) -> tuple[Any, Any]:
    """``BertIntermediate`` and ``BertOutput`` in ``dtype``; their weights are set per call."""
    bert, config = _bert(), _layer_config(d_model, 1, d_ff, hidden_act, 1e-12, False)
    return fresh(bert.BertIntermediate(config), dtype, device), fresh(bert.BertOutput(config), dtype, device)


@lru_cache(maxsize=64)
def _layer_module(d_model: int, heads: int, d_ff: int, hidden_act: str, eps: float, decoder: bool,
                  dtype: torch.dtype, device: torch.device) -> Any:
    """``BertLayer`` (a decoder with cross-attention when ``decoder``) in ``dtype``; weights set per call."""
    return fresh(_bert().BertLayer(_layer_config(d_model, heads, d_ff, hidden_act, eps, decoder)), dtype, device)


def _set_affine(linear: nn.Linear, w: torch.Tensor, b: torch.Tensor) -> None:
    """Make ``linear(x) == x @ w + b`` (``w`` is ``(in, out)``)."""
    linear.weight.copy_(w.T)  # (in, out) -> (out, in)
    linear.bias.copy_(b)


def _set_norm(norm: nn.LayerNorm, gamma: torch.Tensor, beta: torch.Tensor) -> None:
    norm.weight.copy_(gamma)
    norm.bias.copy_(beta)


def _set_attention(attention: Any, weights: dict[str, torch.Tensor], prefix: str, gamma: str) -> None:
    """Load ``w_q ... b_o`` (or ``wc_q ... bc_o``) and the LayerNorm after it into a ``BertAttention``."""
    w, b = prefix, prefix.replace("w", "b", 1)
    _set_affine(attention.self.query, weights[w + "q"], weights[b + "q"])
    _set_affine(attention.self.key, weights[w + "k"], weights[b + "k"])
    _set_affine(attention.self.value, weights[w + "v"], weights[b + "v"])
    _set_affine(attention.output.dense, weights[w + "o"], weights[b + "o"])
    _set_norm(attention.output.LayerNorm, weights[gamma], weights[gamma.replace("gamma", "beta")])


def _set_ffn(intermediate: Any, output: Any, weights: dict[str, torch.Tensor]) -> None:
    _set_affine(intermediate.dense, weights["w_1"], weights["b_1"])
    _set_affine(output.dense, weights["w_2"], weights["b_2"])


class HuggingFaceBert:
    """BERT's eager attention function, attention module, feed-forward network and layer."""

    name = NAME
    #: BertAttention projects keys and values from one sequence, every head d_model / h wide;
    #: BertLayer is post-norm; the model is BERT's layout only.
    capabilities = Capabilities(conventions={"separate_key_value": {False}, "value_width": {"d_model_over_h"},
                                             "norm_first": {False}, "model_layout": {"bert"}})

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

    def feed_forward(self, x: torch.Tensor, w_1: torch.Tensor, b_1: torch.Tensor, w_2: torch.Tensor,
                     b_2: torch.Tensor, *, activation: str = "relu") -> torch.Tensor:
        """``BertOutput.dense(BertIntermediate(x))``: no residual, no LayerNorm."""
        hidden_act = _hidden_act(activation)
        weights = dict(zip(_FFN_KEYS, (w_1, b_1, w_2, b_2)))
        d_ff = check_weights(x, weights, _FFN_KEYS)
        intermediate, output = _ffn_modules(x.shape[-1], d_ff, hidden_act, x.dtype, x.device)
        with torch.no_grad():
            _set_ffn(intermediate, output, weights)
            return output.dense(intermediate(x))  # (B, t, d_model) -> (B, t, d_ff) -> (B, t, d_model)

    def encoder_layer(self, x: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int, norm_first: bool,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """``BertLayer`` holding ``weights`` (post-norm); the library's causal mask when ``causal``."""
        _post_norm_only(norm_first)
        hidden_act = _hidden_act(activation)
        d_ff = check_weights(x, weights, ENCODER_KEYS)
        (b, t, d_model), w = x.shape, weights
        _heads(d_model, heads)
        layer = _layer_module(d_model, heads, d_ff, hidden_act, eps, False, x.dtype, x.device)
        bias = additive_mask(None, causal, b, t, t, x.dtype, x.device, NAME)  # (B, 1, t, t), or None
        with torch.no_grad():
            _set_attention(layer.attention, w, "w_", "gamma_1")
            _set_ffn(layer.intermediate, layer.output, w)
            _set_norm(layer.output.LayerNorm, w["gamma_2"], w["beta_2"])
            return layer(x, attention_mask=bias)  # (B, t, d_model)

    def decoder_layer(self, x: torch.Tensor, memory: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int,
                      norm_first: bool, activation: str = "relu", eps: float = 1e-5) -> torch.Tensor:
        """``BertLayer`` with cross-attention holding ``weights`` (post-norm), the library's causal mask."""
        _post_norm_only(norm_first)
        hidden_act = _hidden_act(activation)
        d_ff = check_weights(x, weights, DECODER_KEYS)
        (b, t, d_model), w = x.shape, weights
        if memory.dim() != 3 or memory.shape[0] != b or memory.shape[-1] != d_model:
            raise ValueError(f"memory must be (B={b}, s, d_model={d_model}), got {tuple(memory.shape)}")
        _heads(d_model, heads)
        layer = _layer_module(d_model, heads, d_ff, hidden_act, eps, True, x.dtype, x.device)
        bias = additive_mask(None, True, b, t, t, x.dtype, x.device, NAME)  # (B, 1, t, t)
        with torch.no_grad():
            _set_attention(layer.attention, w, "w_", "gamma_1")
            _set_attention(layer.crossattention, w, "wc_", "gamma_2")
            _set_ffn(layer.intermediate, layer.output, w)
            _set_norm(layer.output.LayerNorm, w["gamma_3"], w["beta_3"])
            return layer(x, attention_mask=bias, encoder_hidden_states=memory)  # (B, t, d_model)

    def count_parameters(self, config: ModelConfig) -> int:
        """Parameters of ``BertModel`` without its pooler, built from ``config`` on the meta device."""
        c = config
        fixed = {"decoder_layers": 0, "positions": "learned", "final_norm": False, "embedding_norm": True,
                 "output_layer": False}
        wrong = {name: getattr(c, name) for name, value in fixed.items() if getattr(c, name) != value}
        if c.encoder_layers < 1 or c.token_types < 1 or wrong:
            raise NotApplicable(f"{NAME}: BERT's layout is fixed ({fixed}, token_types >= 1), got {wrong}")
        bert = _bert()
        built = bert.BertConfig(vocab_size=c.vocab_size, hidden_size=c.d_model, num_hidden_layers=c.encoder_layers,
                                num_attention_heads=c.heads, intermediate_size=c.d_ff,
                                max_position_embeddings=c.max_len, type_vocab_size=c.token_types)
        with torch.device("meta"):
            model = bert.BertModel(built, add_pooling_layer=False)
        return sum(p.numel() for p in model.parameters())


implementation = HuggingFaceBert()
