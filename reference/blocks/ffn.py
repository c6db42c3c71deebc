"""The position-wise feed-forward network: ``FFN(x) = act(x W_1 + b_1) W_2 + b_2``.

The same two affine maps, with a non-linearity between them, are applied to every token
on its own: nothing mixes positions, so the network equals a convolution with kernel
width 1 over the sequence. The original transformer uses ReLU and ``d_ff = 4 d_model``;
BERT uses the exact GELU, GPT-2 its tanh approximation.

This module does not hold the residual connection or the normalisation around the
network (:mod:`.sublayer`), dropout, or initialisation.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

__all__ = ["ACTIVATIONS", "activation_function", "feed_forward"]


def _gelu(x: torch.Tensor) -> torch.Tensor:
    """``x Phi(x)`` with ``Phi`` the standard normal distribution function."""
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """The tanh approximation of GELU (Hendrycks and Gimpel, 2016), GPT-2's ``gelu_new``."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


#: The non-linearities by name.
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": lambda x: torch.clamp(x, min=0.0),  # max(0, x)
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
}


def activation_function(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The non-linearity called ``name`` (one of :data:`ACTIVATIONS`)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; known: {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def feed_forward(x: torch.Tensor, w_1: torch.Tensor, b_1: torch.Tensor, w_2: torch.Tensor, b_2: torch.Tensor,
                 activation: str = "relu") -> torch.Tensor:
    """``act(x W_1 + b_1) W_2 + b_2`` for ``x (..., d_model)``, ``w_1 (d_model, d_ff)``, ``w_2 (d_ff, d_model)``."""
    act = activation_function(activation)
    if w_1.dim() != 2 or w_2.dim() != 2:
        raise ValueError(f"w_1 and w_2 must be 2-D, got shapes {tuple(w_1.shape)} and {tuple(w_2.shape)}")
    d_model, d_ff = w_1.shape
    if x.dim() < 1 or x.shape[-1] != d_model:
        raise ValueError(f"x must have d_model={d_model} features in its last axis, got shape {tuple(x.shape)}")
    if w_2.shape != (d_ff, d_model) or b_1.shape != (d_ff,) or b_2.shape != (d_model,):
        raise ValueError(f"with w_1 ({d_model}, {d_ff}) expected b_1 ({d_ff},), w_2 ({d_ff}, {d_model}), "
                         f"b_2 ({d_model},); got {tuple(b_1.shape)}, {tuple(w_2.shape)}, {tuple(b_2.shape)}")
    return act(x @ w_1 + b_1) @ w_2 + b_2  # (..., d_model) -> (..., d_ff) -> (..., d_model)
