"""A minimal adapter for the positions family, written from `specformer new positions`.

Sinusoidal positional encodings and rotary embeddings (RoPE) in plain PyTorch. Check it with:

    specformer run --impl examples/positions.py

Conventions (from the protocol): positions are a 1-D int64 tensor; feature 2i of the
sinusoidal encoding is the sine and 2i + 1 the cosine of frequency i; RoPE pairs
features (2i, 2i + 1) ("interleaved") or (i, i + d/2) ("half"), pair i turning by the
angle m base^(-2i/d) at position m.
"""

from __future__ import annotations

from typing import Any

import torch

from specformer.protocol import Capabilities


class ExamplePositions:
    """Positional encodings as the papers write them."""

    name = "example-positions"
    #: Only the sinusoidal encoding is written here (not the binary one): declared, so the suite never asks for it.
    capabilities = Capabilities(conventions={"encoding_kind": {"sinusoidal"}})

    def positional_encoding(self, kind: str, positions: torch.Tensor, d_model: int, *, dtype: torch.dtype,
                            **params: Any) -> torch.Tensor:
        """``PE(pos, 2i) = sin(pos / base^(2i/d_model))``, ``PE(pos, 2i+1) = cos(...)``; ``(t, d_model)``."""
        if kind != "sinusoidal":
            raise ValueError(f"only sinusoidal encodings, not {kind!r}")
        base = float(params.get("base", 10000.0))
        pos = positions.to(torch.float64)[:, None]  # (t, 1)
        two_i = torch.arange(0, d_model, 2, dtype=torch.float64, device=positions.device)  # (ceil(d/2),)
        angles = pos / base ** (two_i / d_model)  # (t, ceil(d/2))
        pe = torch.zeros(len(positions), d_model, dtype=torch.float64, device=positions.device)
        pe[:, 0::2] = torch.sin(angles)
        pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
        return pe.to(dtype)

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        """``x (B, t, d)`` with feature pair ``i`` at position ``m`` rotated by ``m base^(-2i/d)``."""
        d = x.shape[-1]
        i = torch.arange(d // 2, dtype=torch.float64, device=x.device)  # (d/2,)
        theta = positions.to(torch.float64)[:, None] * base ** (-2 * i / d)  # (t, d/2)
        cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
        if pairing == "interleaved":
            first, second = x[..., 0::2], x[..., 1::2]  # (B, t, d/2) each
        elif pairing == "half":
            first, second = x[..., : d // 2], x[..., d // 2:]  # (B, t, d/2) each
        else:
            raise ValueError(f"unknown pairing {pairing!r}")
        turned_first = first * cos - second * sin
        turned_second = first * sin + second * cos
        if pairing == "interleaved":
            return torch.stack([turned_first, turned_second], dim=-1).reshape(x.shape)  # (B, t, d/2, 2) -> (B, t, d)
        return torch.cat([turned_first, turned_second], dim=-1)


#: What `specformer run --impl examples/positions.py` loads.
implementation = ExamplePositions
