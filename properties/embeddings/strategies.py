"""Strategies of the embeddings family: tables, ids, vector pairs, word counts, co-occurrence counts, words.

Everything is float64 (or int64 ids) on the CPU; the context moves it to the device and
dtype under test. Tables and vectors come from the shared :func:`tensors` (bounded by
3, five draws in six seeded); ids are drawn per entry, so repeats and the first and last
row are common. Word counts are whole numbers from 1 to ``10^6`` (exact in float32), with
ties. Co-occurrence counts mix the values where GloVe's weight changes shape (0, just
below, at and above ``x_max = 100``) with arbitrary non-negative floats. Words for
FastText's n-grams mix English words, the documents' examples and the tokenization
family's awkward text (combining marks, emoji, whitespace, the empty string); no lone
surrogates.

This module does not draw corpora of sentences: the word2vec and GloVe properties that
need one build it from a seed.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from specformer.properties.strategies import BOUND, bounded_floats, permutations_of, seeds, tensors
from specformer.properties.tokenization.strategies import texts

__all__ = [
    "BOUND", "X_MAX", "bounded_floats", "context_cases", "cooccurrences", "fit_counts", "id_tensors", "lookup_cases",
    "nonzero_rows", "permutations_of", "seeds", "tables", "tensors", "vector_pairs", "word_counts", "words",
]

#: GloVe's cut-off (the paper's value; 002 uses ``x_max`` without defining it).
X_MAX = 100.0


def tables(vocab: int, dim: int, bound: float = BOUND) -> st.SearchStrategy[torch.Tensor]:
    """An embedding table ``(vocab, dim)`` with entries in ``[-bound, bound]``."""
    return tensors((vocab, dim), bound)


@st.composite
def id_tensors(draw: st.DrawFn, vocab: int, shape: tuple[int, ...]) -> torch.Tensor:
    """int64 ids of ``shape``, each in ``[0, vocab)``, chosen per entry (repeats and both ends are common)."""
    count = 1
    for size in shape:
        count *= size
    ids = draw(st.lists(st.integers(0, vocab - 1), min_size=count, max_size=count), label="ids")
    return torch.tensor(ids, dtype=torch.int64).reshape(shape)  # (count,) -> shape


@st.composite
def lookup_cases(draw: st.DrawFn, max_vocab: int = 12, max_dim: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, table)``: a table ``(V, d)`` and ids of shape ``()``, ``(n,)`` or ``(B, t)``."""
    vocab, dim = draw(st.integers(1, max_vocab), label="V"), draw(st.integers(1, max_dim), label="d")
    shape = draw(st.sampled_from([(), (1,), (3,), (2, 3), (1, 5), (4, 2)]), label="ids shape")
    return draw(id_tensors(vocab, shape)), draw(tables(vocab, dim))


def nonzero_rows(x: torch.Tensor, min_norm: float) -> torch.Tensor:
    """``x (n, d)`` with every row of norm below ``min_norm`` replaced by a unit basis vector.

    Cosine similarity is undefined for a zero vector and libraries clamp tiny norms
    (``torch``: ``eps = 1e-8``), so the general properties keep away from both.
    """
    x = x.clone()
    for i in range(x.shape[0]):
        if float(x[i].norm()) < min_norm:
            x[i] = 0.0
            x[i, i % x.shape[1]] = 1.0
    return x


@st.composite
def vector_pairs(draw: st.DrawFn, min_norm: float = 0.1, max_n: int = 5,
                 max_dim: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """``a, b (n, d)`` whose rows all have norm at least ``min_norm``; ``d`` from 1."""
    n, dim = draw(st.integers(1, max_n), label="n"), draw(st.integers(1, max_dim), label="d")
    a = nonzero_rows(draw(tensors((n, dim)), label="a"), min_norm)
    b = nonzero_rows(draw(tensors((n, dim)), label="b"), min_norm)
    return a, b


@st.composite
def context_cases(draw: st.DrawFn, max_vocab: int = 10, max_dim: int = 6,
                  max_context: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """``(context_ids (B, c), table (V, d))`` with ``c >= 1``; a context may repeat a word."""
    vocab, dim = draw(st.integers(1, max_vocab), label="V"), draw(st.integers(1, max_dim), label="d")
    b, c = draw(st.integers(1, 3), label="B"), draw(st.integers(1, max_context), label="c")
    return draw(id_tensors(vocab, (b, c))), draw(tables(vocab, dim))


@st.composite
def word_counts(draw: st.DrawFn, max_vocab: int = 12, max_count: int = 10**6) -> torch.Tensor:
    """Word counts ``(V,)``, whole numbers in ``[1, max_count]`` as float64; ties and a wide spread are common."""
    count = st.one_of(st.integers(1, 10), st.integers(1, max_count), st.sampled_from([1, 2, 1000, max_count]))
    values = draw(st.lists(count, min_size=1, max_size=max_vocab), label="counts")
    return torch.tensor(values, dtype=torch.float64)


def cooccurrences(max_size: int = 8, x_max: float = X_MAX) -> st.SearchStrategy[torch.Tensor]:
    """Non-negative co-occurrence counts ``(n,)``: 0, values around and at ``x_max``, and arbitrary floats up to 1e6."""
    special = st.sampled_from([0.0, 1.0, 0.5, x_max - 1, x_max, x_max + 1, 2 * x_max, 1e4])
    value = st.one_of(special, st.floats(0, 1e6, allow_nan=False, allow_subnormal=False),
                      st.integers(0, 300).map(float))
    return st.lists(value, min_size=1, max_size=max_size).map(lambda v: torch.tensor(v, dtype=torch.float64))


def fit_counts(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` (non-negative float64) capped at the largest whole number ``dtype`` holds exactly with all below it.

    float16 holds every whole number up to 2048 and bfloat16 up to 256; a word count of
    10^6 is inf in float16. Properties cap their counts with this before casting, so
    that the dtype under test receives the counts the expected value is computed from.
    """
    limit = {torch.float16: 2048.0, torch.bfloat16: 256.0}.get(dtype)
    return x if limit is None else x.clamp(max=limit)


def words(max_size: int = 8) -> st.SearchStrategy[str]:
    """Words for FastText: English, the documents' examples, awkward text, and ``""``."""
    english = st.sampled_from(["where", "apple", "banana", "run", "running", "dog", "dogs", "a", "the", "her"])
    return st.one_of(english, st.text(st.sampled_from("abn<>"), max_size=max_size),
                     texts(max_size=3).filter(lambda w: len(w) <= 4 * max_size))
