"""A minimal adapter for the blocks family, written from `specformer new blocks`.

Layer normalisation and the position-wise feed-forward network in plain PyTorch. Check it with:

    specformer run --impl examples/blocks.py

Conventions (from the protocol): batch first, x (B, t, d_model); normalisation over the
last axis; weights multiply on the right, W_1 (d_model, d_ff); no dropout.
"""

from __future__ import annotations

import math

import torch

from specformer.protocol import Capabilities

#: The activations this adapter knows, by the protocol's names.
ACTIVATIONS = {
    "relu": torch.relu,
    "gelu": lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2))),
}


class ExampleBlocks:
    """The building blocks of a transformer layer."""

    name = "example-blocks"
    #: The tanh approximation of GELU is not written here: declared, so the suite never asks for it.
    capabilities = Capabilities(conventions={"activation": {"relu", "gelu"}})

    def layer_norm(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, *,
                   eps: float = 1e-5) -> torch.Tensor:
        """``gamma (x - mu) / sqrt(var + eps) + beta`` over the last axis (biased variance)."""
        mu = x.mean(dim=-1, keepdim=True)  # (B, t, 1)
        var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)  # (B, t, 1)
        return gamma * (x - mu) / torch.sqrt(var + eps) + beta

    def feed_forward(self, x: torch.Tensor, w_1: torch.Tensor, b_1: torch.Tensor, w_2: torch.Tensor,
                     b_2: torch.Tensor, *, activation: str = "relu") -> torch.Tensor:
        """``act(x W_1 + b_1) W_2 + b_2``, position by position."""
        return ACTIVATIONS[activation](x @ w_1 + b_1) @ w_2 + b_2


#: What `specformer run --impl examples/blocks.py` loads.
implementation = ExampleBlocks
