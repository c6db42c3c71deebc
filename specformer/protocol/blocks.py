"""The blocks family's operations: the parts of the transformer block.

Conventions (the same for every implementation; adapters convert): batch first,
``x (B, t, d_model)``; normalisation runs over the last axis (the features of one token);
weights multiply on the right, as in the documents (``Q = X W_Q``, ``FFN(x) = x W_1 ...``),
so ``W_Q`` is ``(d_model, d_model)`` and ``W_1`` is ``(d_model, d_ff)``. No dropout: every
operation is the deterministic map of an evaluated model.

A layer's weights travel as one dictionary of tensors whose keys are :data:`ENCODER_KEYS`
(and :data:`DECODER_KEYS` for a decoder layer):

* ``w_q, w_k, w_v, w_o`` ``(d_model, d_model)`` and ``b_q, b_k, b_v, b_o`` ``(d_model,)``:
  self-attention with ``heads`` heads of width ``d_model / heads``; head ``i`` owns
  columns ``i*d_k:(i+1)*d_k`` of ``w_q, w_k, w_v`` and the same rows of ``w_o``;
* ``w_1 (d_model, d_ff), b_1 (d_ff,), w_2 (d_ff, d_model), b_2 (d_model,)``: the
  position-wise feed-forward network;
* ``gamma_1, beta_1`` (after or before self-attention), ``gamma_2, beta_2`` (after or
  before the feed-forward network; in a decoder layer, around cross-attention) and, in a
  decoder layer only, ``gamma_3, beta_3`` around its feed-forward network;
* decoder layers add cross-attention ``wc_q, wc_k, wc_v, wc_o`` and ``bc_q, bc_k, bc_v, bc_o``.

``activation`` names the feed-forward non-linearity: ``"relu"``, ``"gelu"`` (the exact,
erf-based GELU) or ``"gelu_tanh"`` (its tanh approximation). An adapter raises
:class:`~specformer.protocol.base.NotApplicable` for a setting its library does not
offer (an activation, ``norm_first``, causal self-attention).

This module declares the operations only; :mod:`specformer.checked.blocks` calls them and
checks what they return.
"""

from __future__ import annotations

from typing import Protocol

import torch

from specformer.protocol.base import Family, Operation

__all__ = [
    "ACTIVATIONS",
    "DECODER_KEYS",
    "DecoderLayerImplementation",
    "ENCODER_KEYS",
    "EncoderLayerImplementation",
    "FAMILY",
    "FeedForwardImplementation",
    "LayerNormImplementation",
]

#: The feed-forward non-linearities an operation may be asked for.
ACTIVATIONS = ("relu", "gelu", "gelu_tanh")

_ATTENTION = ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o")
_FFN = ("w_1", "b_1", "w_2", "b_2")
#: The weights of an encoder layer (self-attention, feed-forward network, two norms).
ENCODER_KEYS: tuple[str, ...] = _ATTENTION + _FFN + ("gamma_1", "beta_1", "gamma_2", "beta_2")
#: The weights of a decoder layer: an encoder layer's, cross-attention and a third norm.
DECODER_KEYS: tuple[str, ...] = ENCODER_KEYS + tuple(k.replace("_", "c_", 1) for k in _ATTENTION) + (
    "gamma_3", "beta_3")


class LayerNormImplementation(Protocol):
    """Layer normalisation over the features of each token."""

    name: str

    def layer_norm(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, *, eps: float = 1e-5) -> torch.Tensor:
        """``gamma (x - mu) / sqrt(var + eps) + beta`` over the last axis of ``x``; ``gamma``, ``beta``: ``(d,)``."""
        ...


class FeedForwardImplementation(Protocol):
    """The position-wise feed-forward network ``FFN(x) = act(x W_1 + b_1) W_2 + b_2``."""

    name: str

    def feed_forward(self, x: torch.Tensor, w_1: torch.Tensor, b_1: torch.Tensor, w_2: torch.Tensor,
                     b_2: torch.Tensor, *, activation: str = "relu") -> torch.Tensor:
        """``x (B, t, d_model)``, ``w_1 (d_model, d_ff)``, ``w_2 (d_ff, d_model)``; returns ``(B, t, d_model)``."""
        ...


class EncoderLayerImplementation(Protocol):
    """One encoder layer: self-attention and a feed-forward network, each a residual sublayer."""

    name: str

    def encoder_layer(self, x: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int, norm_first: bool,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """``x (B, t, d_model)`` through the layer; returns ``(B, t, d_model)``.

        ``norm_first=False`` (post-norm): ``y = LN_1(x + SA(x))``, ``out = LN_2(y + FFN(y))``.
        ``norm_first=True`` (pre-norm): ``y = x + SA(LN_1(x))``, ``out = y + FFN(LN_2(y))``.
        ``causal=True`` masks self-attention so that position ``i`` sees positions ``<= i``
        (a layer of a decoder-only stack).
        """
        ...


class DecoderLayerImplementation(Protocol):
    """One decoder layer: causal self-attention, cross-attention to the encoder's output, a feed-forward network."""

    name: str

    def decoder_layer(self, x: torch.Tensor, memory: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int,
                      norm_first: bool, activation: str = "relu", eps: float = 1e-5) -> torch.Tensor:
        """``x (B, t, d_model)`` (the target) attending to ``memory (B, s, d_model)``; returns ``(B, t, d_model)``.

        Post-norm: ``y = LN_1(x + SA_causal(x))``, ``z = LN_2(y + CA(y, memory))``,
        ``out = LN_3(z + FFN(z))``; pre-norm normalises each sublayer's input instead. Queries
        of cross-attention come from the target, keys and values from ``memory``, unmasked.
        """
        ...


#: The blocks family, registered in :data:`specformer.protocol.FAMILIES`.
FAMILY = Family("blocks", (
    Operation("layer_norm", LayerNormImplementation),
    Operation("feed_forward", FeedForwardImplementation),
    Operation("encoder_layer", EncoderLayerImplementation),
    Operation("decoder_layer", DecoderLayerImplementation),
))
