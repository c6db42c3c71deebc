"""PyTorch's embedding modules and similarity behind the embeddings family's protocol.

* ``embedding_lookup``: ``torch.nn.Embedding.from_pretrained(table)`` called on the ids
  (its forward is ``torch.nn.functional.embedding``);
* ``cosine_similarity``: ``torch.nn.functional.cosine_similarity(a, b, dim=-1)`` with its
  default ``eps = 1e-8``. PyTorch divides by ``max(|a|, eps) max(|b|, eps)``: a zero row
  gives 0 and a row shorter than ``eps`` a cosine shrunk towards 0, where the formula
  leaves the zero vector outside the domain (a ValueError). The adapter declares that
  clamp (``cosine_norm_clamp = 1e-8``), so ``similarity.zero-vector`` judges it on rows
  above ``eps`` and takes its 0 for a zero row. In float16 ``1e-8`` rounds to 0, the
  clamp does nothing and a zero row gives NaN (listed in ``deviations.toml``);
* ``cbow_hidden``: ``torch.nn.EmbeddingBag(mode="mean")`` holding the table, one bag per
  row of the ``(B, c)`` context ids.
* ``lookup_gradient``: the gradient autograd gives ``nn.Embedding``'s weight for
  ``sum(module(ids) * upstream)`` (dense, ``sparse=False``);
* ``embedding_init``: the weight of a fresh ``nn.Embedding(V, d)`` after
  ``torch.manual_seed(seed)`` (PyTorch's ``reset_parameters``: ``init.normal_``), with the
  global generator's state restored afterwards;
* ``tied_logits``: ``nn.Linear(d, V, bias=False)`` whose weight is set to the embedding's
  weight (``output.weight = embedding.weight``, the usual tying);
* ``euclidean_distance``: ``torch.nn.functional.pairwise_distance(a, b, eps=0.0)`` (``p = 2``).
  Its default ``eps = 1e-6`` is added to every difference before the norm, which moves a
  distance by up to ``1e-6 sqrt(d)``: beyond float64's tolerance, so the adapter passes
  ``eps=0.0`` (a documented argument), as a user computing a plain distance would.

The modules are built in the table's dtype and on its device, and hold the table as
their weight without copying it (nothing writes to it). The noise distribution, GloVe's
weight and counts, word2vec's examples and losses and FastText's n-grams have no PyTorch
counterpart and are not provided.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from specformer.protocol import Capabilities


class TorchEmbedding:
    """``torch.nn.Embedding``, ``torch.nn.EmbeddingBag`` and ``torch.nn.functional.cosine_similarity``."""

    name = "torch-embedding"
    capabilities = Capabilities(conventions={"cosine_norm_clamp": frozenset({1e-8})})  # F.cosine_similarity's eps

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

    def lookup_gradient(self, ids: torch.Tensor, table: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
        """``nn.Embedding``'s weight gradient of ``(module(ids) * upstream).sum()``: ``(V, d)``."""
        module = nn.Embedding.from_pretrained(table.clone(), freeze=False)
        with torch.enable_grad():
            (module(ids) * upstream).sum().backward()
        assert module.weight.grad is not None
        return module.weight.grad

    def embedding_init(self, vocab_size: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """``torch.manual_seed(seed); nn.Embedding(vocab_size, dim, dtype=dtype).weight``."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            module = nn.Embedding(vocab_size, dim, dtype=dtype)
        return module.weight.detach()

    def tied_logits(self, hidden: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """An output ``nn.Linear`` tied to ``nn.Embedding.from_pretrained(table)``: ``(B, d) -> (B, V)``."""
        embedding = nn.Embedding.from_pretrained(table, freeze=True)
        output = nn.Linear(table.shape[1], table.shape[0], bias=False, dtype=table.dtype, device=table.device)
        output.weight = embedding.weight  # tied: one Parameter for both
        with torch.no_grad():
            return output(hidden)

    def euclidean_distance(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``F.pairwise_distance(a, b, eps=0.0)`` (``p = 2``): ``(n, d), (n, d) -> (n,)``."""
        return F.pairwise_distance(a, b, eps=0.0)


implementation = TorchEmbedding()
