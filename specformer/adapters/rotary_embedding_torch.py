"""``rotary-embedding-torch`` (lucidrains) behind the protocol: its ``RotaryEmbedding`` module.

* ``rotary``: ``RotaryEmbedding(dim=d, theta=base)`` (language frequencies, no xPos, no
  interpolation); the module's ``forward(positions)`` gives the angles of the given
  positions and ``apply_rotary_emb`` rotates ``x``. The library pairs features
  ``(2i, 2i + 1)`` (its ``rotate_half`` splits the last axis as ``(d r)`` with ``r = 2``):
  the ``interleaved`` pairing, the only one the adapter declares (``pairing``). For
  ``d = 2`` the constructor computes ``theta_rescale_factor ** (dim / (dim - 2))`` and
  raises ``ZeroDivisionError``; pair 0 turns by ``base^0 = 1`` per position at every width,
  so the adapter rotates ``(x_0, x_1, 0, 0)`` with ``dim = 4`` and keeps the first pair.

What the library does and the adapter leaves as it is: the frequencies are a float32
parameter, and ``forward`` casts the positions to it, so the angles ``m theta_i`` are
float32 whatever the dtype of ``x`` (in float64 the rotation is accurate to about
``1e-7 m`` radians only). Positions above ``2^24`` are not all representable there.

The package is imported on first use; a missing package raises an ``ImportError`` with the
install command. Nothing is downloaded.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

from specformer.adapters.hf_common import import_library
from specformer.protocol import Capabilities, NotApplicable

NAME = "rotary-embedding-torch"
#: The release the adapter is written against (the ``thirdparty`` extra pins it).
VERSION = "0.9.1"


def _library() -> Any:
    return import_library("rotary_embedding_torch", "rotary-embedding-torch", NAME)


@lru_cache(maxsize=32)
def _module(d: int, base: float, device: torch.device) -> Any:
    """``RotaryEmbedding`` rotating all ``d`` features, without its length cache (positions are arbitrary)."""
    module = _library().RotaryEmbedding(dim=d, theta=base, cache_if_possible=False)
    return module.to(device).eval().requires_grad_(False)


class RotaryEmbeddingTorch:
    """lucidrains' ``RotaryEmbedding``: interleaved pairs, float32 angles."""

    name = NAME
    #: RotaryEmbedding pairs features (2i, 2i + 1) only.
    capabilities = Capabilities(conventions={"pairing": frozenset({"interleaved"})})

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        """``apply_rotary_emb(module(positions), x)`` for ``x (B, t, d)``."""
        if pairing != "interleaved":
            raise NotApplicable(f"{NAME} pairs features (2i, 2i+1) only (interleaved); got pairing={pairing!r}")
        if x.dim() != 3 or x.shape[-1] % 2:
            raise ValueError(f"{NAME}: x must be (B, t, d) with d even, got {tuple(x.shape)}")
        if x.shape[-1] == 2:
            # RotaryEmbedding(dim=2) divides by zero in its constructor (theta_rescale_factor ** (dim / (dim - 2))).
            # Pair 0 turns by base^0 = 1 per position at every width: rotate (x, 0, 0) at width 4, keep the pair.
            padded = torch.cat([x, torch.zeros_like(x)], dim=-1)  # (B, t, 2) -> (B, t, 4)
            return self.rotary(padded, positions, pairing=pairing, base=base)[..., :2]  # (B, t, 4) -> (B, t, 2)
        module = _module(x.shape[-1], float(base), x.device)
        with torch.no_grad():
            freqs = module(positions.to(x.device))  # (t, d): angle of pair i repeated at 2i and 2i+1, float32
            return _library().apply_rotary_emb(freqs, x)  # (B, t, d), in x.dtype


implementation = RotaryEmbeddingTorch()
