"""GPT-2's eager attention and its block from Hugging Face ``transformers`` behind the protocol.

Attention family:

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

Blocks family (modules built from the same ``GPT2Config`` with ``n_inner = d_ff``,
``layer_norm_epsilon = eps`` and ``activation_function`` as below, in eval mode under
``torch.no_grad``; cached per configuration, dtype and device, with every weight and
bias set on each call; the ``Conv1D`` weights take the protocol's matrices as they are):

* ``feed_forward``: ``GPT2MLP``: ``c_fc`` = ``w_1, b_1``, the activation, ``c_proj`` =
  ``w_2, b_2`` (its dropout is off).
* ``encoder_layer``: ``GPT2Block``, pre-norm only: ``ln_1`` = ``gamma_1, beta_1``, then
  ``attn`` (``c_attn`` = ``[w_q | w_k | w_v]`` with ``[b_q | b_k | b_v]``, ``c_proj`` =
  ``w_o, b_o``), ``ln_2`` = ``gamma_2, beta_2``, then ``mlp``:
  ``y = x + SA(LN_1(x))``, ``out = y + FFN(LN_2(y))``. The block builds no mask of its
  own (``GPT2Model`` does): ``causal=True`` passes the library's causal additive mask
  (:func:`.hf_common.additive_mask`), ``causal=False`` passes none and the block's
  self-attention is then bidirectional (checked in ``tests/test_adapters_blocks.py``).
* ``decoder_layer``: ``GPT2Block`` with ``add_cross_attention=True``, pre-norm only,
  with the causal mask as above: ``ln_1`` + ``attn`` (``gamma_1``, self-attention),
  ``ln_cross_attn`` + ``crossattention`` (``gamma_2, beta_2``; ``q_attn`` = ``wc_q, bc_q``,
  ``c_attn`` = ``[wc_k | wc_v]`` with ``[bc_k | bc_v]``, ``c_proj`` = ``wc_o, bc_o``;
  no ``encoder_attention_mask``: unmasked), ``ln_2`` + ``mlp`` (``gamma_3, beta_3``). This
  is the protocol's pre-norm decoder layer, ``z = y + CA(LN_2(y), memory)``,
  ``out = z + FFN(LN_3(z))``, the memory used as given.

Activations: the protocol's ``relu``, ``gelu`` (exact, erf) and ``gelu_tanh`` are
``activation_function`` ``"relu"``, ``"gelu"`` (``torch.nn.functional.gelu``) and
``"gelu_new"`` (GPT-2's default, the tanh formula); checked against the formulas
numerically.

Positions family:

* ``input_embedding``: ``GPT2Model`` with one layer (``n_layer = 1``, ``n_positions =
  n_max``, ``wte`` = the token table, ``wpe`` = the position table), called with
  ``output_hidden_states=True``; its first hidden state is GPT-2's input sum
  ``wte(tokens) + wpe(0 .. t - 1)`` (dropout off). GPT-2 does not scale the token
  embedding: ``scale=True`` is not applicable.

Model size:

* ``count_parameters``: ``GPT2LMHeadModel`` (tied or untied output layer,
  ``tie_word_embeddings``) or ``GPT2Model`` (no output layer) built on the ``meta``
  device from ``vocab_size``, ``n_positions = max_len``, ``n_embd``, ``n_layer``,
  ``n_head``, ``n_inner = d_ff``; its parameters counted, the tied matrix once. GPT-2's
  layout is fixed: learned positions, no LayerNorm after the embeddings, a final
  LayerNorm, a decoder-only stack; other configurations are not applicable.

Not applicable: ``d_k != d_model / h`` or ``d_v != d_k``, keys different from values,
an activation outside the three above, and ``norm_first=False`` for the layers
(``GPT2Block`` normalises each sublayer's input; ``GPT2Config`` has no post-norm
setting). Nothing is downloaded: weights are the caller's.
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
from specformer.protocol import Capabilities, NotApplicable
from specformer.protocol.blocks import DECODER_KEYS, ENCODER_KEYS, ModelConfig
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.multihead import MultiHeadParams
from specformer.reference.blocks.encoder_layer import check_weights

NAME = "hf-gpt2"

#: The protocol's activations by their ``activation_function`` names in ``transformers.activations.ACT2FN``.
ACTIVATION_FUNCTION = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_new"}

_FFN_KEYS = ("w_1", "b_1", "w_2", "b_2")


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


def _activation_function(activation: str) -> str:
    """GPT-2's ``activation_function`` for a protocol activation; NotApplicable for others."""
    if activation not in ACTIVATION_FUNCTION:
        raise NotApplicable(f"GPT-2's activation_function offers the protocol's {', '.join(ACTIVATION_FUNCTION)} "
                            f"(as {', '.join(ACTIVATION_FUNCTION.values())}), not {activation!r}")
    return ACTIVATION_FUNCTION[activation]


def _pre_norm_only(norm_first: bool) -> None:
    if not norm_first:
        raise NotApplicable("GPT2Block is pre-norm only (x + sublayer(ln(x)) for ln_1, ln_cross_attn and ln_2); "
                            "GPT2Config has no post-norm (norm_first=False) setting")


def _heads(d_model: int, heads: int) -> None:
    if heads < 1 or d_model % heads:
        raise ValueError(f"heads={heads} must be >= 1 and divide d_model={d_model}")


def _block_config(d_model: int, heads: int, d_ff: int, activation_function: str, eps: float, cross: bool) -> Any:
    return eager_config(_gpt2().GPT2Config, n_embd=d_model, n_head=heads, n_inner=d_ff,
                        activation_function=activation_function, layer_norm_epsilon=eps, add_cross_attention=cross,
                        attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0, scale_attn_weights=True,
                        scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False)


@lru_cache(maxsize=64)
def _mlp_module(d_model: int, d_ff: int, activation_function: str, dtype: torch.dtype, device: torch.device) -> Any:
    """``GPT2MLP(d_ff)`` in ``dtype``; its weights are set per call."""
    config = _block_config(d_model, 1, d_ff, activation_function, 1e-5, False)
    return fresh(_gpt2().GPT2MLP(d_ff, config), dtype, device)


@lru_cache(maxsize=64)
def _block_module(d_model: int, heads: int, d_ff: int, activation_function: str, eps: float, cross: bool,
                  dtype: torch.dtype, device: torch.device) -> Any:
    """``GPT2Block`` (with cross-attention when ``cross``) in ``dtype``; its weights are set per call."""
    config = _block_config(d_model, heads, d_ff, activation_function, eps, cross)
    return fresh(_gpt2().GPT2Block(config, layer_idx=0), dtype, device)


def _set_affine(conv: Any, weights: tuple[torch.Tensor, ...], biases: tuple[torch.Tensor, ...]) -> None:
    """``conv(x) == x @ [W_1 | W_2 ...] + [b_1 | b_2 ...]``: ``Conv1D`` keeps ``(in, out)`` weights as given."""
    conv.weight.copy_(torch.cat(weights, dim=1))  # n blocks (in, out) -> (in, n * out)
    conv.bias.copy_(torch.cat(biases))  # n blocks (out,) -> (n * out,)


def _set_norm(norm: Any, gamma: torch.Tensor, beta: torch.Tensor) -> None:
    norm.weight.copy_(gamma)
    norm.bias.copy_(beta)


def _set_block(block: Any, w: dict[str, torch.Tensor], cross: bool) -> None:
    """Load a layer's weight dictionary into a ``GPT2Block`` (see the module docstring for the mapping)."""
    _set_norm(block.ln_1, w["gamma_1"], w["beta_1"])
    _set_affine(block.attn.c_attn, (w["w_q"], w["w_k"], w["w_v"]), (w["b_q"], w["b_k"], w["b_v"]))
    _set_affine(block.attn.c_proj, (w["w_o"],), (w["b_o"],))
    if cross:
        _set_norm(block.ln_cross_attn, w["gamma_2"], w["beta_2"])
        _set_affine(block.crossattention.q_attn, (w["wc_q"],), (w["bc_q"],))
        _set_affine(block.crossattention.c_attn, (w["wc_k"], w["wc_v"]), (w["bc_k"], w["bc_v"]))
        _set_affine(block.crossattention.c_proj, (w["wc_o"],), (w["bc_o"],))
        _set_norm(block.ln_2, w["gamma_3"], w["beta_3"])
    else:
        _set_norm(block.ln_2, w["gamma_2"], w["beta_2"])
    _set_affine(block.mlp.c_fc, (w["w_1"],), (w["b_1"],))
    _set_affine(block.mlp.c_proj, (w["w_2"],), (w["b_2"],))


def _set_conv1d(conv: Any, *blocks: torch.Tensor) -> None:
    """``Conv1D`` computes ``x @ weight + bias`` with ``weight`` ``(in, out)``: the blocks side by side."""
    with torch.no_grad():
        conv.weight.copy_(torch.cat(blocks, dim=1))  # (d_model, n * d_model)
        conv.bias.zero_()


class HuggingFaceGPT2:
    """GPT-2's eager attention function, attention module, MLP and block."""

    name = NAME
    #: GPT2Attention projects keys and values from one sequence, every head d_model / h wide;
    #: GPT2Block is pre-norm; the token embedding is added unscaled; the model is GPT-2's layout only.
    capabilities = Capabilities(conventions={"separate_key_value": {False}, "value_width": {"d_model_over_h"},
                                             "norm_first": {True}, "embedding_scale": {False},
                                             "model_layout": {"gpt-2"}})

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

    def feed_forward(self, x: torch.Tensor, w_1: torch.Tensor, b_1: torch.Tensor, w_2: torch.Tensor,
                     b_2: torch.Tensor, *, activation: str = "relu") -> torch.Tensor:
        """``GPT2MLP`` holding ``w_1 ... b_2``: ``c_proj(act(c_fc(x)))``."""
        activation_function = _activation_function(activation)
        weights = dict(zip(_FFN_KEYS, (w_1, b_1, w_2, b_2)))
        d_ff = check_weights(x, weights, _FFN_KEYS)
        mlp = _mlp_module(x.shape[-1], d_ff, activation_function, x.dtype, x.device)
        with torch.no_grad():
            _set_affine(mlp.c_fc, (w_1,), (b_1,))
            _set_affine(mlp.c_proj, (w_2,), (b_2,))
            return mlp(x)  # (B, t, d_model) -> (B, t, d_ff) -> (B, t, d_model)

    def encoder_layer(self, x: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int, norm_first: bool,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """``GPT2Block`` holding ``weights`` (pre-norm); the library's causal mask when ``causal``, else none."""
        _pre_norm_only(norm_first)
        activation_function = _activation_function(activation)
        d_ff = check_weights(x, weights, ENCODER_KEYS)
        b, t, d_model = x.shape
        _heads(d_model, heads)
        block = _block_module(d_model, heads, d_ff, activation_function, eps, False, x.dtype, x.device)
        bias = additive_mask(None, causal, b, t, t, x.dtype, x.device, NAME)  # (B, 1, t, t), or None
        with torch.no_grad():
            _set_block(block, weights, cross=False)
            return block(x, attention_mask=bias)  # (B, t, d_model)

    def decoder_layer(self, x: torch.Tensor, memory: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int,
                      norm_first: bool, activation: str = "relu", eps: float = 1e-5) -> torch.Tensor:
        """``GPT2Block`` with cross-attention holding ``weights`` (pre-norm), the library's causal mask."""
        _pre_norm_only(norm_first)
        activation_function = _activation_function(activation)
        d_ff = check_weights(x, weights, DECODER_KEYS)
        b, t, d_model = x.shape
        if memory.dim() != 3 or memory.shape[0] != b or memory.shape[-1] != d_model:
            raise ValueError(f"memory must be (B={b}, s, d_model={d_model}), got {tuple(memory.shape)}")
        _heads(d_model, heads)
        block = _block_module(d_model, heads, d_ff, activation_function, eps, True, x.dtype, x.device)
        bias = additive_mask(None, True, b, t, t, x.dtype, x.device, NAME)  # (B, 1, t, t)
        with torch.no_grad():
            _set_block(block, weights, cross=True)
            return block(x, attention_mask=bias, encoder_hidden_states=memory)  # (B, t, d_model)

    def input_embedding(self, tokens: torch.Tensor, token_table: torch.Tensor, position_table: torch.Tensor, *,
                        scale: bool = False) -> torch.Tensor:
        """The first hidden state of a ``GPT2Model`` without layers holding both tables."""
        if scale:
            raise NotApplicable(f"{NAME}: GPT-2 adds the token embedding unscaled (no sqrt(d_model))")
        vocabulary, d_model = token_table.shape
        config = _gpt2().GPT2Config(vocab_size=vocabulary, n_positions=position_table.shape[0], n_embd=d_model,
                                    n_layer=1, n_head=1, embd_pdrop=0.0, bos_token_id=None, eos_token_id=None)
        model = fresh(_gpt2().GPT2Model(config), token_table.dtype, token_table.device)
        with torch.no_grad():
            model.wte.weight.copy_(token_table)
            model.wpe.weight.copy_(position_table)
            return model(input_ids=tokens, output_hidden_states=True).hidden_states[0]  # (B, t, d_model)

    def count_parameters(self, config: ModelConfig) -> int:
        """Parameters of ``GPT2LMHeadModel`` or ``GPT2Model`` built from ``config`` on the meta device."""
        c = config
        fixed = {"decoder_layers": 0, "positions": "learned", "final_norm": True, "embedding_norm": False,
                 "token_types": 0}
        wrong = {name: getattr(c, name) for name, value in fixed.items() if getattr(c, name) != value}
        if c.encoder_layers < 1 or wrong:
            raise NotApplicable(f"{NAME}: GPT-2's layout is fixed ({fixed}), got {wrong}")
        gpt2 = _gpt2()
        built = gpt2.GPT2Config(vocab_size=c.vocab_size, n_positions=c.max_len, n_embd=c.d_model,
                                n_layer=c.encoder_layers, n_head=c.heads, n_inner=c.d_ff,
                                tie_word_embeddings=c.tied_output, bos_token_id=None, eos_token_id=None)
        with torch.device("meta"):
            model = (gpt2.GPT2LMHeadModel if c.output_layer else gpt2.GPT2Model)(built)
        return sum(p.numel() for p in model.parameters())  # parameters() yields a tied matrix once


implementation = HuggingFaceGPT2()
