"""Checked calls of the blocks family: ``layer_norm``, ``feed_forward``, ``encoder_layer``, ``decoder_layer``.

Mixed into :class:`specformer.context.Context`: casts the float64 inputs to the dtype under
test, calls the operation in the implementation's worker, checks the result's shape,
dtype and device, and returns a float64 CPU tensor.
"""

from __future__ import annotations


import torch

from specformer.checked import register
from specformer.checked.base import ContextBase as _Base
from specformer.checked.base import ImplementationError


@register
class BlockCalls(_Base):
    """The blocks family's operations, as a property calls them."""

    def layer_norm(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, *, eps: float = 1e-5) -> torch.Tensor:
        """The implementation's layer normalisation of ``x``, as float64 (same shape as ``x``)."""
        result = self.call("layer_norm", self.cast(x), self.cast(gamma), self.cast(beta), names=("x", "gamma", "beta"),
                           eps=eps)
        return self._returned("layer_norm", result, tuple(x.shape), "normalised x")

    def feed_forward(self, x: torch.Tensor, w_1: torch.Tensor, b_1: torch.Tensor, w_2: torch.Tensor,
                     b_2: torch.Tensor, *, activation: str = "relu") -> torch.Tensor:
        """The implementation's position-wise feed-forward network on ``x (B, t, d_model)``, as float64."""
        result = self.call("feed_forward", self.cast(x), self.cast(w_1), self.cast(b_1), self.cast(w_2),
                           self.cast(b_2), names=("x", "w_1", "b_1", "w_2", "b_2"), activation=activation)
        return self._returned("feed_forward", result, tuple(x.shape), f"FFN(x) ({activation})")

    def encoder_layer(self, x: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int, norm_first: bool,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """The implementation's encoder layer on ``x (B, t, d_model)``, as float64."""
        cast = {key: self.cast(value) for key, value in weights.items()}
        result = self.call("encoder_layer", self.cast(x), cast, names=("x", "weights"), heads=heads,
                           norm_first=norm_first, activation=activation, eps=eps, causal=causal)
        kind = "pre-norm" if norm_first else "post-norm"
        return self._returned("encoder_layer", result, tuple(x.shape), f"{kind} layer output")

    def decoder_layer(self, x: torch.Tensor, memory: torch.Tensor, weights: dict[str, torch.Tensor], *, heads: int,
                      norm_first: bool, activation: str = "relu", eps: float = 1e-5) -> torch.Tensor:
        """The implementation's decoder layer on the target ``x (B, t, d_model)`` over ``memory``, as float64."""
        cast = {key: self.cast(value) for key, value in weights.items()}
        result = self.call("decoder_layer", self.cast(x), self.cast(memory), cast, names=("x", "memory", "weights"),
                           heads=heads, norm_first=norm_first, activation=activation, eps=eps)
        kind = "pre-norm" if norm_first else "post-norm"
        return self._returned("decoder_layer", result, tuple(x.shape), f"{kind} decoder layer output")
