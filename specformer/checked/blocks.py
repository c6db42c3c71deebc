"""Checked calls of the blocks family: ``layer_norm``, ``feed_forward``, ``encoder_layer``, ``decoder_layer``,
``encoder_stack``, ``count_parameters``.

Mixed into :class:`specformer.context.Context`: casts the float64 inputs to the dtype under
test, calls the operation in the implementation's worker, checks the result's shape,
dtype and device, and returns a float64 CPU tensor.
"""

from __future__ import annotations

import torch

from specformer.checked import register
from specformer.checked.base import ContextBase as _Base
from specformer.checked.base import ImplementationError
from specformer.protocol.blocks import ModelConfig


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

    def encoder_stack(self, x: torch.Tensor, layers: list[dict[str, torch.Tensor]], *, heads: int,
                      norm_first: bool, final_norm: tuple[torch.Tensor, torch.Tensor] | None = None,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> torch.Tensor:
        """The implementation's stack of encoder layers on ``x (B, t, d_model)``, as float64."""
        cast = [{key: self.cast(value) for key, value in layer.items()} for layer in layers]
        norm = None if final_norm is None else (self.cast(final_norm[0]), self.cast(final_norm[1]))
        result = self.call("encoder_stack", self.cast(x), cast, names=("x", "layers"), heads=heads,
                           norm_first=norm_first, final_norm=norm, activation=activation, eps=eps, causal=causal)
        kind = "pre-norm" if norm_first else "post-norm"
        return self._returned("encoder_stack", result, tuple(x.shape), f"{kind} stack output")

    def count_parameters(self, config: ModelConfig) -> int:
        """The implementation's parameter count of the model ``config`` describes (a non-negative int)."""
        from specformer.runner.wire import describe

        result = self.call("count_parameters", config, names=("config",))
        if type(result) is not int or result < 0:
            raise ImplementationError(f"count_parameters returned {describe(result)}, expected a non-negative int")
        return result
