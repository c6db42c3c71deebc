"""A stack of encoder layers; a decoder-only (GPT-style) language model, its output layer, and a parameter counter.

:func:`encoder_stack` runs ``N`` encoder layers in order and, for a pre-norm stack, the
final LayerNorm (a post-norm stack ends normalised already).

``tokens (B, t)`` are embedded (``E[token] * sqrt(d_model)`` plus sinusoidal positions, as
in the original transformer), run through ``N`` causal encoder layers (:mod:`.encoder_layer`
with ``causal=True``: a decoder without cross-attention), normalised once more after a
pre-norm stack, and mapped to a distribution over the vocabulary by the output layer,
``softmax(h W_out + b_out)``. Position ``i``'s distribution is the model's
``p(x_{i+1} | x_1, ..., x_i)``; the causal mask makes it depend on those tokens only,
which is what lets one forward pass train on every prefix at once (teacher forcing).

This module does not sample, cache keys and values, or train; weights are given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from specformer.reference.positions.sinusoidal import sinusoidal_encoding

from .encoder_layer import encoder_layer
from .layernorm import layer_norm

__all__ = ["DecoderOnlyWeights", "decoder_only", "encoder_stack", "output_distribution", "parameter_count"]


@dataclass
class DecoderOnlyWeights:
    """The weights of a decoder-only model; ``w_out is None`` ties the output layer to ``embedding``."""

    embedding: torch.Tensor  # (V, d_model)
    layers: list[dict[str, torch.Tensor]]
    gamma_f: torch.Tensor  # (d_model,): the final norm of a pre-norm stack
    beta_f: torch.Tensor  # (d_model,)
    b_out: torch.Tensor  # (V,)
    w_out: torch.Tensor | None = field(default=None)  # (d_model, V), or None: embedding^T

    def output_matrix(self) -> torch.Tensor:
        """``W_out (d_model, V)``: the given one or the transposed embedding (weight sharing)."""
        return self.embedding.T if self.w_out is None else self.w_out


def output_distribution(h: torch.Tensor, w_out: torch.Tensor, b_out: torch.Tensor) -> torch.Tensor:
    """``softmax(h W_out + b_out)`` over the vocabulary: ``h (..., d_model)`` to ``(..., V)``."""
    return torch.softmax(h @ w_out + b_out, dim=-1)  # (..., d_model) @ (d_model, V) -> (..., V)


def decoder_only(tokens: torch.Tensor, weights: DecoderOnlyWeights, *, heads: int, norm_first: bool = True,
                 activation: str = "relu", eps: float = 1e-5) -> torch.Tensor:
    """Next-token distributions ``(B, t, V)`` of ``tokens (B, t)`` (int64 ids below ``V``)."""
    vocabulary, d_model = weights.embedding.shape
    if tokens.dim() != 2 or tokens.dtype != torch.int64:
        raise ValueError(f"tokens must be int64 (B, t), got {tokens.dtype} {tuple(tokens.shape)}")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocabulary):
        raise ValueError(f"token ids must lie in [0, {vocabulary}), got {int(tokens.min())}..{int(tokens.max())}")
    positions = torch.arange(tokens.shape[1], device=tokens.device)
    h = weights.embedding[tokens] * math.sqrt(d_model)  # (B, t) -> (B, t, d_model)
    h = h + sinusoidal_encoding(positions, d_model, dtype=h.dtype)  # + (t, d_model), broadcast over B
    for layer in weights.layers:
        h = encoder_layer(h, layer, heads=heads, norm_first=norm_first, activation=activation, eps=eps, causal=True)
    if norm_first:
        h = layer_norm(h, weights.gamma_f, weights.beta_f, eps)
    return output_distribution(h, weights.output_matrix(), weights.b_out)


def parameter_count(weights: DecoderOnlyWeights, *, norm_first: bool = True) -> int:
    """Learnable scalars, each shared tensor counted once (a tied output layer adds only ``b_out``)."""
    tensors = [weights.embedding, weights.b_out, *(t for layer in weights.layers for t in layer.values())]
    if norm_first:
        tensors += [weights.gamma_f, weights.beta_f]
    if weights.w_out is not None:
        tensors.append(weights.w_out)
    return sum(t.numel() for t in tensors)


def encoder_stack(x: torch.Tensor, layers: list[dict[str, torch.Tensor]], *, heads: int, norm_first: bool,
                  final_norm: tuple[torch.Tensor, torch.Tensor] | None = None, activation: str = "relu",
                  eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
    """``x (B, t, d_model)`` through ``layers`` in order, then ``LayerNorm`` with ``final_norm = (gamma, beta)`` if given."""
    h = x
    for layer in layers:
        h = encoder_layer(h, layer, heads=heads, norm_first=norm_first, activation=activation, eps=eps, causal=causal)
    if final_norm is not None:
        gamma, beta = final_norm
        h = layer_norm(h, gamma, beta, eps)
    return h
