"""Layer normalisation (Ba, Kiros and Hinton, 2016), as the transformer uses it: per token.

``LayerNorm(x) = gamma * (x - mu) / sqrt(var + eps) + beta``, where ``mu`` and ``var`` are the
mean and the *biased* variance (divided by ``d``, not ``d - 1``) of the ``d`` features of
one token, and ``eps`` sits inside the square root. Nothing is shared between tokens,
positions or sequences: that is what distinguishes it from batch normalisation.

This module does not hold the residual sublayer (add, then normalise) or a learnable
module: ``gamma`` and ``beta`` are passed in.
"""

from __future__ import annotations

import torch

__all__ = ["layer_norm"]


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Normalise the last axis of ``x (..., d)``; ``gamma``, ``beta``: ``(d,)``; ``eps > 0``."""
    if x.dim() < 1 or x.shape[-1] < 1:
        raise ValueError(f"x must have a non-empty last (feature) axis, got shape {tuple(x.shape)}")
    d = x.shape[-1]
    if gamma.shape != (d,) or beta.shape != (d,):
        raise ValueError(f"gamma and beta must have shape ({d},), got {tuple(gamma.shape)} and {tuple(beta.shape)}")
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps}")
    mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = (x - mu).square().mean(dim=-1, keepdim=True)  # (..., 1): biased, divided by d
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta
