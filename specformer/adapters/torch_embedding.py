"""PyTorch's embedding modules and similarity behind the embeddings family's protocol.

* ``embedding_lookup``: ``torch.nn.Embedding.from_pretrained(table)`` called on the ids
  (its forward is ``torch.nn.functional.embedding``);
* ``cosine_similarity``: ``torch.nn.functional.cosine_similarity(a, b, dim=-1)`` with its
  default ``eps = 1e-8``. PyTorch divides by ``max(|a|, eps) max(|b|, eps)``: a zero row
  gives 0 and a row shorter than ``eps`` a cosine shrunk towards 0, where the protocol
  leaves the zero vector outside the domain; the properties draw rows of norm >= 0.1
  (``similarity.zero-vector`` records what PyTorch does there);
* ``cbow_hidden``: ``torch.nn.EmbeddingBag(mode="mean")`` holding the table, one bag per
  row of the ``(B, c)`` context ids.

The modules are built in the table's dtype and on its device, and hold the table as
their weight without copying it (nothing writes to it). The noise distribution, GloVe's
weight and FastText's n-grams have no PyTorch counterpart and are not provided.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class TorchEmbedding:
    """``torch.nn.Embedding``, ``torch.nn.EmbeddingBag`` and ``torch.nn.functional.cosine_similarity``."""

    name = "torch-embedding"

    def embedding_lookup(self, ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """``nn.Embedding.from_pretrained(table)(ids)``: shape ``ids.shape + (d,)``."""
        module = nn.Embedding.from_pretrained(table, freeze=True)
        with torch.no_grad():
            return module(ids)

    def cosine_similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``F.cosine_similarity(a, b, dim=-1)`` (``eps = 1e-8``): ``(n, d), (n, d) -> (n,)``."""
        return F.cosine_similarity(a, b, dim=-1)

    def cbow_hidden(self, context_ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """``nn.EmbeddingBag.from_pretrained(table, mode="mean")`` on ``(B, c)`` ids: one bag per row, ``(B, d)``."""
        module = nn.EmbeddingBag.from_pretrained(table, freeze=True, mode="mean")
        with torch.no_grad():
            return module(context_ids)


implementation = TorchEmbedding()
