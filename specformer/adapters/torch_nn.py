"""PyTorch's ``torch.nn`` building blocks behind the blocks family's protocol.

``layer_norm`` is ``torch.nn.LayerNorm(d, eps=eps)`` with its weight and bias set to
``gamma`` and ``beta``. No conversion is needed: the module normalises the last axis, as
the protocol does.
"""

from __future__ import annotations

import torch
from torch import nn


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


implementation = TorchNN()
