"""The blocks family's operations: the parts of the transformer block.

Conventions (the same for every implementation; adapters convert): batch first,
``x (B, t, d_model)``; normalisation runs over the last axis (the features of one token).

So far one operation, ``layer_norm``; the feed-forward network and the encoder and
decoder layers follow. This module declares the operations only;
:mod:`specformer.checked.blocks` calls them and checks what they return.
"""

from __future__ import annotations

from typing import Protocol

import torch

from specformer.protocol.base import Family, Operation

__all__ = ["FAMILY", "LayerNormImplementation"]


class LayerNormImplementation(Protocol):
    """Layer normalisation over the features of each token."""

    name: str

    def layer_norm(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, *, eps: float = 1e-5) -> torch.Tensor:
        """``gamma (x - mu) / sqrt(var + eps) + beta`` over the last axis of ``x``; ``gamma``, ``beta``: ``(d,)``."""
        ...


#: The blocks family, registered in :data:`specformer.protocol.FAMILIES`.
FAMILY = Family("blocks", (Operation("layer_norm", LayerNormImplementation),))
