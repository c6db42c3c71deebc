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
erf-based GELU) or ``"gelu_tanh"`` (its tanh approximation). An adapter declares the
settings its library offers (the conventions ``activation``, ``norm_first`` and
``model_layout`` in its capabilities); the suite never asks for the others, and a
refusal (:class:`~specformer.protocol.base.NotApplicable`) inside the declaration is an
error.

This module declares the operations only; :mod:`specformer.checked.blocks` calls them and
checks what they return.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from specformer.protocol.base import Family, Operation
from specformer.protocol.capabilities import Convention

__all__ = [
    "ACTIVATIONS",
    "CONVENTIONS",
    "MODEL_LAYOUTS",
    "DECODER_KEYS",
    "DecoderLayerImplementation",
    "ENCODER_KEYS",
    "EncoderLayerImplementation",
    "FAMILY",
    "FeedForwardImplementation",
    "LayerNormImplementation",
    "ModelConfig",
    "ParameterCountImplementation",
    "POSITION_KINDS",
    "StackImplementation",
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


class StackImplementation(Protocol):
    """A stack of encoder layers, with the final LayerNorm a pre-norm stack ends with."""

    name: str

    def encoder_stack(self, x: torch.Tensor, layers: list[dict[str, torch.Tensor]], *, heads: int,
                      norm_first: bool, final_norm: tuple[torch.Tensor, torch.Tensor] | None = None,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """``x (B, t, d_model)`` through ``len(layers)`` encoder layers in order (each as
        :meth:`EncoderLayerImplementation.encoder_layer` with its own weights), then, when
        ``final_norm = (gamma, beta)`` is given, ``LayerNorm(h) gamma + beta`` of the last
        layer's output, whatever ``norm_first`` (a pre-norm stack's final norm; a post-norm
        stack needs none, but applies one it is given, as ``nn.TransformerEncoder(norm=...)``
        does; ``None``: no final norm). Every LayerNorm uses ``eps``. Returns ``(B, t, d_model)``.
        """
        ...


#: The position schemes a :class:`ModelConfig` may name.
POSITION_KINDS = ("none", "sinusoidal", "learned", "rope", "alibi")


@dataclass(frozen=True)
class ModelConfig:
    """The configuration of a transformer, as far as its parameter count depends on it.

    * ``encoder_layers`` layers of self-attention and a feed-forward network (an encoder,
      or a decoder-only model's causal layers), ``decoder_layers`` layers that add
      cross-attention (the decoder of an encoder-decoder model);
    * every projection has a bias (``d_model`` per attention projection, ``d_ff`` and
      ``d_model`` in the feed-forward network); every LayerNorm has ``gamma`` and ``beta``;
    * ``positions``: one of :data:`POSITION_KINDS`; only ``"learned"`` holds parameters,
      a table of ``max_len x d_model``;
    * ``shared_embeddings``: an encoder-decoder model's source and target share one token
      table (otherwise two); ``tied_output``: the output layer is the token table's
      transpose (otherwise its own ``d_model x vocab_size`` matrix, without bias);
      ``output_layer=False``: no output layer at all (an encoder such as BERT's body);
    * ``final_norm``: each stack ends with a LayerNorm (a pre-norm stack; ``nn.Transformer``
      has one after both stacks whatever the placement); ``embedding_norm``: a LayerNorm
      after the input sum (BERT, BLOOM); ``token_types``: rows of a segment table added to
      the input (BERT: 2).
    """

    vocab_size: int  # V, rows of the token table (and columns of an untied output layer)
    d_model: int  # d, the width of every token vector
    heads: int  # h, divides d_model; the count does not depend on it
    d_ff: int  # the feed-forward network's hidden width
    encoder_layers: int = 0  # layers without cross-attention
    decoder_layers: int = 0  # layers with cross-attention (an encoder-decoder's decoder)
    positions: str = "sinusoidal"  # none, sinusoidal, learned, rope or alibi; learned adds max_len x d, once
    max_len: int = 512  # rows of the learned position table
    shared_embeddings: bool = True  # one token table for source and target (else a second, V x d)
    tied_output: bool = True  # the output layer is the token table's transpose (adds nothing)
    output_layer: bool = True  # False: no output layer at all
    final_norm: bool = False  # a LayerNorm (2d) at the end of each stack that has layers
    embedding_norm: bool = False  # one LayerNorm (2d) after the input sum, for the model
    token_types: int = 0  # rows of one segment table (token_types x d), for the model


class ParameterCountImplementation(Protocol):
    """The number of trainable parameters of a model built from a configuration."""

    name: str

    def count_parameters(self, config: ModelConfig) -> int:
        """Trainable scalars of the model ``config`` describes, each shared tensor counted once
        (a tied output layer adds nothing). The layouts an adapter's library can build are
        declared (``model_layout``); every configuration of a declared layout is answered.

        With ``d = d_model``, ``V = vocab_size``, the count is the sum of:

        * the token table ``V d``, and a second one when the model has both stacks and
          ``shared_embeddings`` is false;
        * once for the whole model, whatever its stacks: the learned position table
          ``max_len d`` (``positions == "learned"``), the segment table ``token_types d``,
          and the embedding norm ``2 d`` (``embedding_norm``); the other position kinds hold
          no parameters;
        * each encoder layer ``4 (d^2 + d)`` (Q, K, V and output projections with biases)
          ``+ 2 d d_ff + d_ff + d`` (the feed-forward network with biases) ``+ 4 d`` (two
          LayerNorms): ``4 d^2 + 2 d d_ff + 9 d + d_ff``;
        * each decoder layer that, ``+ 4 (d^2 + d)`` of cross-attention ``+ 2 d`` of a third
          LayerNorm: ``8 d^2 + 2 d d_ff + 15 d + d_ff``;
        * ``2 d`` per stack that has layers, with ``final_norm``;
        * the output layer ``d V`` (no bias) when ``output_layer`` and not ``tied_output``.

        The base transformer of the original paper (``V = 37000``, ``d = 512``, ``d_ff = 2048``,
        6 + 6 layers, sinusoidal positions, shared and tied tables) has 63,082,496 such
        scalars; ``heads`` does not change the count."""
        ...


#: The layouts of :class:`ModelConfig` a ``count_parameters`` may be asked about: an encoder-decoder
#: (or encoder) with every field free, and the fixed layouts of GPT-2, BERT and BLOOM.
MODEL_LAYOUTS = ("encoder-decoder", "gpt-2", "bert", "bloom")

#: The conventions an implementation of the blocks family may declare (``Capabilities.conventions``).
CONVENTIONS: dict[str, Convention] = {
    "norm_first": Convention((False, True), "where the layers normalise: after each residual sum (False, "
                             "post-norm, the original transformer and BERT) or each sublayer's input (True, pre-norm, "
                             "GPT-2)"),
    "activation": Convention(ACTIVATIONS, "the feed-forward network's non-linearity: relu, the exact erf GELU, or "
                             "its tanh approximation"),
    "layer_norm_mean": Convention(
        ("exact", "rounded-reciprocal"),
        "how layer_norm takes a token's mean: so that a constant token's mean is its value where the dtype holds it "
        "('exact'), or as the sum times a rounded 1/d in the accumulating dtype ('rounded-reciprocal': XLA's mean, "
        "and CUDA's kernels, which the properties allow on CUDA whatever is declared); a constant token's output may "
        "then be off beta by that rounding magnified by 1/sqrt(eps), on any device. It allows the mean's rounding "
        "only, never a variance taken in one pass (E[x^2] - E[x]^2). Undeclared: exact (on the CPU)",
        default=("exact",)),
    "model_layout": Convention(MODEL_LAYOUTS, "the configurations count_parameters builds: encoder-decoder (any "
                               "field), gpt-2 (learned positions, final norm, no embedding norm), bert (learned "
                               "positions, embedding norm, token types, no output layer), bloom (ALiBi, embedding "
                               "and final norm, d_ff = 4 d_model, a tied or no output layer)"),
}


#: The blocks family, registered in :data:`specformer.protocol.FAMILIES`.
FAMILY = Family("blocks", (
    Operation("layer_norm", LayerNormImplementation),
    Operation("feed_forward", FeedForwardImplementation),
    Operation("encoder_layer", EncoderLayerImplementation),
    Operation("decoder_layer", DecoderLayerImplementation),
    Operation("encoder_stack", StackImplementation),
    Operation("count_parameters", ParameterCountImplementation),
), CONVENTIONS)
