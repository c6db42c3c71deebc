"""PyTorch's ``torch.nn`` building blocks behind the blocks family's protocol.

* ``layer_norm``: ``torch.nn.LayerNorm(d, eps=eps)`` with its weight and bias set to
  ``gamma`` and ``beta``; it normalises the last axis, as the protocol does.
* ``encoder_layer``: ``torch.nn.TransformerEncoderLayer(batch_first=True, dropout=0)``
  with ``norm_first`` as asked, in evaluation mode (where PyTorch may take its fused
  "fast path"); ``causal`` passes a causal ``src_mask`` with ``is_causal=True``.
* ``decoder_layer``: ``torch.nn.TransformerDecoderLayer`` likewise, with a causal
  ``tgt_mask``.
* ``feed_forward``: the feed-forward block of a ``TransformerEncoderLayer``
  (``linear2(dropout(activation(linear1(x))))``, its private ``_ff_block``).

``torch.nn.Linear`` computes ``x W^T + b``: the protocol's ``(d_in, d_out)`` matrices are
transposed into it; ``MultiheadAttention`` packs ``W_Q, W_K, W_V`` into one
``in_proj_weight (3 d_model, d_model)``. The activations are ``relu`` and the exact
``gelu``; PyTorch's layers offer no tanh-approximated GELU by name, so ``gelu_tanh`` is
not applicable.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from specformer.protocol.base import NotApplicable

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


implementation = TorchNN()
