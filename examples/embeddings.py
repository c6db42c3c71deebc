"""A minimal adapter for the embeddings family, written from `specformer new embeddings`.

An embedding table's lookup and the cosine similarity of vectors. Check it with:

    specformer run --impl examples/embeddings.py

Conventions (from the protocol): a table is (V, d), one row per word id; ids are int64;
a zero vector has no cosine (raise ValueError, never return NaN).
"""

from __future__ import annotations

import torch


class ExampleEmbeddings:
    """Lookup and similarity."""

    name = "example-embeddings"

    def embedding_lookup(self, ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """``table[ids]``: shape ``ids.shape + (d,)``."""
        return table[ids]

    def cosine_similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Row-wise ``a.b / (|a| |b|)`` of ``a``, ``b`` ``(n, d)``; ``(n,)``."""
        norms = a.norm(dim=-1) * b.norm(dim=-1)  # (n,)
        if (norms == 0).any():
            raise ValueError("the cosine of a zero vector is undefined")
        return (a * b).sum(dim=-1) / norms


#: What `specformer run --impl examples/embeddings.py` loads.
implementation = ExampleEmbeddings
