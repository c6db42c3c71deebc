"""PyTorch's ``torch.nn`` building blocks behind the blocks family's protocol (and the positions
family's learned table and input sum).

* ``layer_norm``: ``torch.nn.LayerNorm(d, eps=eps)`` with its weight and bias set to
  ``gamma`` and ``beta``; it normalises the last axis, as the protocol does.
* ``encoder_layer``: ``torch.nn.TransformerEncoderLayer(batch_first=True, dropout=0)``
  with ``norm_first`` as asked, in evaluation mode (where PyTorch may take its fused
  "fast path"); ``causal`` passes a causal ``src_mask`` with ``is_causal=True``. On CUDA
  that path computes ``gelu`` with the tanh approximation (``torch._addmm_activation``),
  a known deviation (``deviations.toml``); ``encoder_stack`` inherits it.
* ``decoder_layer``: ``torch.nn.TransformerDecoderLayer`` likewise, with a causal
  ``tgt_mask``.
* ``feed_forward``: the feed-forward block of a ``TransformerEncoderLayer``
  (``linear2(dropout(activation(linear1(x))))``, its private ``_ff_block``).
* ``encoder_stack``: ``torch.nn.TransformerEncoder(layer, num_layers, norm=...)`` with
  ``enable_nested_tensor=False``, each of its (deep-copied) layers loaded with its own
  weights, and ``norm`` a ``LayerNorm`` holding ``final_norm`` (``None``: no final norm).
* ``count_parameters``: ``torch.nn.Transformer`` with a ``custom_encoder`` and
  ``custom_decoder`` (``TransformerEncoder``/``TransformerDecoder`` whose ``norm`` is a
  ``LayerNorm`` when ``final_norm``, else ``None``: the default ``nn.Transformer`` always
  ends both stacks with one), or a ``TransformerEncoder`` alone for an encoder, built on
  the ``meta`` device, plus ``nn.Embedding`` tables for tokens, learned positions and
  token types, a ``LayerNorm`` after the input sum and an ``nn.Linear`` output layer when
  untied; PyTorch's module parameters are counted, shared ones once. It declares the
  ``encoder-decoder`` layout (``model_layout``).
* ``learned_positions``: ``torch.nn.Embedding(n_max, d)`` holding the table, called on
  the positions (it raises ``IndexError`` past its rows on the CPU).
* ``input_embedding``: two ``nn.Embedding`` modules (tokens, positions) and their sum,
  the token rows multiplied by ``sqrt(d_model)`` when ``scale``.

``torch.nn.Linear`` computes ``x W^T + b``: the protocol's ``(d_in, d_out)`` matrices are
transposed into it; ``MultiheadAttention`` packs ``W_Q, W_K, W_V`` into one
``in_proj_weight (3 d_model, d_model)``. The activations are ``relu`` and the exact
``gelu``; PyTorch's layers offer no tanh-approximated GELU by name, so ``gelu_tanh`` is
not applicable.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from specformer.protocol import Capabilities
from specformer.protocol.base import NotApplicable
from specformer.protocol.blocks import ModelConfig

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(name: str) -> Any:
    if name not in _ACTIVATIONS:
        raise NotApplicable(f"torch.nn's transformer layers offer activations relu and gelu, not {name!r}")
    return name


def _set_attention(attention: nn.MultiheadAttention, weights: dict[str, torch.Tensor], prefix: str) -> None:
    """Load ``w_q ... b_o`` (protocol layout, ``x W + b``) into a ``MultiheadAttention``."""
    w, b = prefix, prefix.replace("w", "b")
    attention.in_proj_weight.copy_(torch.cat([weights[w + "q"].T, weights[w + "k"].T, weights[w + "v"].T]))
    attention.in_proj_bias.copy_(torch.cat([weights[b + "q"], weights[b + "k"], weights[b + "v"]]))
    attention.out_proj.weight.copy_(weights[w + "o"].T)
    attention.out_proj.bias.copy_(weights[b + "o"])


def _set_common(layer: nn.Module, weights: dict[str, torch.Tensor], norms: int) -> None:
    _set_attention(layer.self_attn, weights, "w_")
    layer.linear1.weight.copy_(weights["w_1"].T)
    layer.linear1.bias.copy_(weights["b_1"])
    layer.linear2.weight.copy_(weights["w_2"].T)
    layer.linear2.bias.copy_(weights["b_2"])
    for i in range(1, norms + 1):
        getattr(layer, f"norm{i}").weight.copy_(weights[f"gamma_{i}"])
        getattr(layer, f"norm{i}").bias.copy_(weights[f"beta_{i}"])


def _heads(d_model: int, heads: int) -> None:
    if heads < 1 or d_model % heads:
        raise ValueError(f"heads={heads} must be >= 1 and divide d_model={d_model}")


class TorchNN:
    """``torch.nn`` modules, one per operation."""

    name = "torch-nn"
    #: torch.nn's layers offer relu and gelu (no tanh GELU by name); count_parameters builds encoder-decoders.
    capabilities = Capabilities(conventions={"activation": frozenset({"relu", "gelu"}),
                                             "model_layout": frozenset({"encoder-decoder"})})

    def layer_norm(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, *, eps: float = 1e-5) -> torch.Tensor:
        """``torch.nn.LayerNorm`` with ``weight = gamma`` and ``bias = beta``."""
        module = nn.LayerNorm(x.shape[-1], eps=eps, device=x.device, dtype=x.dtype)
        with torch.no_grad():
            module.weight.copy_(gamma)
            module.bias.copy_(beta)
            return module(x)

    def feed_forward(self, x: torch.Tensor, w_1: torch.Tensor, b_1: torch.Tensor, w_2: torch.Tensor,
                     b_2: torch.Tensor, *, activation: str = "relu") -> torch.Tensor:
        """The ``_ff_block`` of a ``TransformerEncoderLayer`` holding ``w_1 ... b_2``."""
        d_model, d_ff = w_1.shape
        layer = nn.TransformerEncoderLayer(d_model, 1, d_ff, dropout=0.0, activation=_activation(activation),
                                           batch_first=True, device=x.device, dtype=x.dtype).eval()
        with torch.no_grad():
            layer.linear1.weight.copy_(w_1.T)
            layer.linear1.bias.copy_(b_1)
            layer.linear2.weight.copy_(w_2.T)
            layer.linear2.bias.copy_(b_2)
            return layer._ff_block(x)

    def encoder_layer(self, x: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int, norm_first: bool,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """``torch.nn.TransformerEncoderLayer`` holding ``weights``."""
        d_model, d_ff = weights["w_1"].shape
        _heads(d_model, heads)
        layer = nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout=0.0, activation=_activation(activation),
                                           layer_norm_eps=eps, batch_first=True, norm_first=norm_first,
                                           device=x.device, dtype=x.dtype).eval()
        with torch.no_grad():
            _set_common(layer, weights, 2)
            if not causal:
                return layer(x)
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device, dtype=x.dtype)
            return layer(x, src_mask=mask, is_causal=True)

    def decoder_layer(self, x: torch.Tensor, memory: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int,
                      norm_first: bool, activation: str = "relu", eps: float = 1e-5) -> torch.Tensor:
        """``torch.nn.TransformerDecoderLayer`` holding ``weights``, with a causal ``tgt_mask``."""
        d_model, d_ff = weights["w_1"].shape
        _heads(d_model, heads)
        layer = nn.TransformerDecoderLayer(d_model, heads, d_ff, dropout=0.0, activation=_activation(activation),
                                           layer_norm_eps=eps, batch_first=True, norm_first=norm_first,
                                           device=x.device, dtype=x.dtype).eval()
        with torch.no_grad():
            _set_common(layer, weights, 3)
            _set_attention(layer.multihead_attn, weights, "wc_")
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device, dtype=x.dtype)
            return layer(x, memory, tgt_mask=mask, tgt_is_causal=True)


    def encoder_stack(self, x: torch.Tensor, layers: list[dict[str, torch.Tensor]], *, heads: int,
                      norm_first: bool, final_norm: tuple[torch.Tensor, torch.Tensor] | None = None,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """``torch.nn.TransformerEncoder`` of ``len(layers)`` layers with ``norm`` = the final LayerNorm."""
        d_model, d_ff = layers[0]["w_1"].shape
        _heads(d_model, heads)
        layer = nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout=0.0, activation=_activation(activation),
                                           layer_norm_eps=eps, batch_first=True, norm_first=norm_first,
                                           device=x.device, dtype=x.dtype)
        norm = None
        if final_norm is not None:
            norm = nn.LayerNorm(d_model, eps=eps, device=x.device, dtype=x.dtype)
        stack = nn.TransformerEncoder(layer, len(layers), norm=norm, enable_nested_tensor=False).eval()
        with torch.no_grad():
            for module, weights in zip(stack.layers, layers, strict=True):
                _set_common(module, weights, 2)
            if norm is not None and final_norm is not None:
                norm.weight.copy_(final_norm[0])
                norm.bias.copy_(final_norm[1])
            if not causal:
                return stack(x)
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device, dtype=x.dtype)
            return stack(x, mask=mask, is_causal=True)

    def count_parameters(self, config: ModelConfig) -> int:
        """Parameters of ``torch.nn.Transformer`` (or one of its stacks) plus embedding and output modules."""
        c = config
        if c.encoder_layers < 1:
            raise ValueError("torch.nn's stacks need at least one encoder layer (a decoder stack attends to its memory)")
        _heads(c.d_model, c.heads)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nested-tensor advice

            def norm() -> nn.Module | None:
                return nn.LayerNorm(c.d_model, device="meta") if c.final_norm else None

            encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(c.d_model, c.heads, c.d_ff, device="meta"),
                                            c.encoder_layers, norm=norm())
            body: nn.Module = encoder
            if c.decoder_layers:
                decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(c.d_model, c.heads, c.d_ff, device="meta"),
                                                c.decoder_layers, norm=norm())
                body = nn.Transformer(c.d_model, c.heads, custom_encoder=encoder, custom_decoder=decoder,
                                      device="meta")
        modules = nn.ModuleDict({"body": body, "tokens": nn.Embedding(c.vocab_size, c.d_model, device="meta")})
        if c.encoder_layers and c.decoder_layers and not c.shared_embeddings:
            modules["target"] = nn.Embedding(c.vocab_size, c.d_model, device="meta")
        if c.positions == "learned":
            modules["positions"] = nn.Embedding(c.max_len, c.d_model, device="meta")
        if c.token_types:
            modules["token_types"] = nn.Embedding(c.token_types, c.d_model, device="meta")
        if c.embedding_norm:
            modules["embedding_norm"] = nn.LayerNorm(c.d_model, device="meta")
        if c.output_layer:
            out = nn.Linear(c.d_model, c.vocab_size, bias=False, device="meta")
            if c.tied_output:
                out.weight = modules["tokens"].weight  # weight sharing: one tensor
            modules["output"] = out
        return sum(p.numel() for p in modules.parameters())  # parameters() yields a shared tensor once

    def learned_positions(self, positions: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """``nn.Embedding(n_max, d)`` holding ``table``, looked up at ``positions``."""
        module = nn.Embedding(*table.shape, device=table.device, dtype=table.dtype)
        with torch.no_grad():
            module.weight.copy_(table)
            return module(positions)

    def input_embedding(self, tokens: torch.Tensor, token_table: torch.Tensor, position_table: torch.Tensor, *,
                        scale: bool = False) -> torch.Tensor:
        """``nn.Embedding`` of the tokens (times ``sqrt(d_model)`` when ``scale``) plus ``nn.Embedding`` of ``0 .. t-1``."""
        tok = nn.Embedding(*token_table.shape, device=token_table.device, dtype=token_table.dtype)
        pos = nn.Embedding(*position_table.shape, device=position_table.device, dtype=position_table.dtype)
        with torch.no_grad():
            tok.weight.copy_(token_table)
            pos.weight.copy_(position_table)
            x = tok(tokens)  # (B, t) -> (B, t, d_model)
            if scale:
                x = x * math.sqrt(token_table.shape[1])
            return x + pos(torch.arange(tokens.shape[1], device=tokens.device))[None]  # + (1, t, d_model)


implementation = TorchNN()
