"""Checked calls of the blocks family: ``layer_norm``.

Mixed into :class:`specformer.context.Context`: casts the float64 inputs to the dtype under
test, calls the operation in the implementation's worker, checks the result's shape,
dtype and device, and returns a float64 CPU tensor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from specformer.context import ContextBase as _Base
else:
    _Base = object


class BlockCalls(_Base):
    """The blocks family's operations, as a property calls them."""

    def layer_norm(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, *, eps: float = 1e-5) -> torch.Tensor:
        """The implementation's layer normalisation of ``x``, as float64 (same shape as ``x``)."""
        result = self.call("layer_norm", self.cast(x), self.cast(gamma), self.cast(beta), names=("x", "gamma", "beta"),
                           eps=eps)
        return self._returned("layer_norm", result, tuple(x.shape), "normalised x")
