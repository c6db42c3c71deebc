"""The embeddings family's operations: lookup tables, similarity, and the parts of word2vec, GloVe and FastText.

Conventions (the same for every implementation; adapters convert): a table is
``(V, d)``, one row per word id; ids are ``int64``; vectors are rows. Float results come
back in the dtype under test, on the device under test, except the vectors of a
contextual model (``token_vectors``), which keep the model's own floating dtype.

* ``embedding_lookup(ids, table)``: the rows ``table[ids]``, shape ``ids.shape + (d,)``;
* ``cosine_similarity(a, b)``: row-wise cosine of ``a`` and ``b`` ``(n, d)``, shape ``(n,)``;
  a zero row is outside the domain (raise ``ValueError``; never return NaN silently);
* ``cbow_hidden(context_ids, table)``: CBOW's hidden vector for each row of
  ``context_ids (B, c)``: the average of the context words' rows, ``(B, d)``;
* ``noise_distribution(counts, exponent)``: word2vec's negative-sampling distribution
  over ``V`` words with ``counts (V,)``, ``P(w) ∝ count(w)^exponent``, shape ``(V,)``;
* ``glove_weight(x, x_max, alpha)``: GloVe's weighting of co-occurrence counts ``x``;
* ``char_ngrams(word, min_n, max_n)``: FastText's character n-grams of ``word`` with the
  boundary markers ``<`` and ``>``, in the implementation's order (duplicates kept);
* ``token_vectors(text, layer=-1)``: a contextual model the implementation holds, run on
  one text: its tokens (``list[str]``, special tokens included as the model sees them) and
  their vectors ``(len(tokens), d)`` after layer ``layer`` (``0``: the input embeddings,
  before any layer; ``-1``: the last layer). A text longer than the model takes raises
  ``ValueError``; it is never cut silently.

An adapter raises :class:`~specformer.protocol.base.NotApplicable` for inputs its library
does not take. This module declares the operations only; :mod:`specformer.checked.embeddings`
calls them and checks what they return.
"""

from __future__ import annotations

from typing import Protocol

import torch

from specformer.protocol.base import Family, Operation

__all__ = ["ContextualImplementation", "EmbeddingImplementation", "FAMILY", "WordVectorPartsImplementation"]


class EmbeddingImplementation(Protocol):
    """Lookup tables and similarity."""

    name: str

    def embedding_lookup(self, ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """``table[ids]``: ``ids`` int64 of any shape, ``table (V, d)``; returns ``ids.shape + (d,)``."""
        ...

    def cosine_similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Row-wise ``a.b / (|a| |b|)`` for ``a``, ``b`` ``(n, d)``; returns ``(n,)``."""
        ...


class WordVectorPartsImplementation(Protocol):
    """The building blocks of static word vectors: CBOW's average, the noise distribution, GloVe's weight, n-grams."""

    name: str

    def cbow_hidden(self, context_ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """The mean of ``table``'s rows for each row of ``context_ids (B, c)``; returns ``(B, d)``."""
        ...

    def noise_distribution(self, counts: torch.Tensor, exponent: float = 0.75) -> torch.Tensor:
        """``counts^exponent`` normalised to sum to 1; ``counts (V,)`` whole numbers in the dtype under test;
        returns ``(V,)`` in that dtype."""
        ...

    def glove_weight(self, x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        """``min(1, (x / x_max)^alpha)`` elementwise for co-occurrence counts ``x >= 0``."""
        ...

    def char_ngrams(self, word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
        """The character n-grams (``min_n <= n <= max_n``) of ``"<" + word + ">"``."""
        ...


class ContextualImplementation(Protocol):
    """A contextual model: one vector per token, depending on the whole text."""

    name: str

    def token_vectors(self, text: str, layer: int = -1) -> tuple[list[str], torch.Tensor]:
        """The tokens of ``text`` and their vectors ``(len(tokens), d)`` after ``layer`` (0: input embeddings)."""
        ...


#: The embeddings family, registered in :data:`specformer.protocol.FAMILIES`.
FAMILY = Family("embeddings", (
    Operation("embedding_lookup", EmbeddingImplementation),
    Operation("cosine_similarity", EmbeddingImplementation),
    Operation("cbow_hidden", WordVectorPartsImplementation),
    Operation("noise_distribution", WordVectorPartsImplementation),
    Operation("glove_weight", WordVectorPartsImplementation),
    Operation("char_ngrams", WordVectorPartsImplementation),
    Operation("token_vectors", ContextualImplementation),
))
