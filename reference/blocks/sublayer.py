"""Residual sublayers: the two ways a block wraps a sublayer with a residual connection and a norm.

* post-norm (the original transformer, BERT): ``LayerNorm(x + Sublayer(x))``;
* pre-norm (GPT-2 and most recent models): ``x + Sublayer(LayerNorm(x))``.

A pre-norm stack leaves its output unnormalised (models add one final norm); a post-norm
layer's output is always normalised. This module does not define the sublayers
themselves (attention, :mod:`.ffn`).
"""

from __future__ import annotations

from typing import Callable

import torch

from .layernorm import layer_norm

__all__ = ["post_norm", "pre_norm", "residual_sublayer"]

Sublayer = Callable[[torch.Tensor], torch.Tensor]


def post_norm(x: torch.Tensor, sublayer: Sublayer, gamma: torch.Tensor, beta: torch.Tensor,
              eps: float = 1e-5) -> torch.Tensor:
    """``LayerNorm(x + Sublayer(x))``: add, then normalise."""
    return layer_norm(x + sublayer(x), gamma, beta, eps)


def pre_norm(x: torch.Tensor, sublayer: Sublayer, gamma: torch.Tensor, beta: torch.Tensor,
             eps: float = 1e-5) -> torch.Tensor:
    """``x + Sublayer(LayerNorm(x))``: normalise the sublayer's input, add the unnormalised ``x``."""
    return x + sublayer(layer_norm(x, gamma, beta, eps))


def residual_sublayer(x: torch.Tensor, sublayer: Sublayer, gamma: torch.Tensor, beta: torch.Tensor, *,
                      norm_first: bool, eps: float = 1e-5) -> torch.Tensor:
    """:func:`pre_norm` when ``norm_first``, else :func:`post_norm`."""
    return (pre_norm if norm_first else post_norm)(x, sublayer, gamma, beta, eps)
