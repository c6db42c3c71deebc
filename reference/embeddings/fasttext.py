"""fastText (Bojanowski et al., 2017): a word as a bag of character n-grams.

The word is wrapped in boundary markers, ``"where" -> "<where>"``, and every substring of
``n`` characters with ``min_n <= n <= max_n`` (fastText's defaults: 3 and 6) is an
n-gram. For ``n = 3``: ``"where"`` gives ``<wh, whe, her, ere, re>`` (002, as in the
paper) and ``"apple"`` gives ``<ap, app, ppl, ple, le>`` (000). The word itself is also
represented: fastText keeps a vector for the in-vocabulary word ``<where>`` besides its
n-grams (002 writes it ``<where>``; 000 writes the bare ``apple``, without markers).
The n-grams are a multiset: ``"banana"`` has ``ana`` twice and both count (000 writes
the n-grams as a set). :func:`char_ngrams` lists them by length, then by position, as
gensim's ``compute_ngrams`` does (fastText's C++ and gensim's hashing use position,
then length; the multiset is the same).

How a word's vector is built from its parts differs between the sources; each is a
``combine`` option of :func:`word_vector`:

* ``"mean"`` -- gensim 4.4 and fastText's C++: an out-of-vocabulary word gets the mean
  of its n-gram vectors (``FastTextKeyedVectors.get_vector``: sum, then divide by the
  number of n-grams); an in-vocabulary word gets ``(v_word + sum_g z_g) / (1 + n)``
  (``adjust_vectors``);
* ``"sum"`` -- the paper's scoring function and 000: ``v_word + sum_g z_g`` (the same
  direction as ``"mean"``, a different length);
* ``"word_plus_mean"`` -- 002's ``FastText.forward``: ``v_word + mean_g z_g``, the word
  vector added at full weight to the n-grams' mean (002's prose says instead that the
  vector is the average over the n-grams *and* ``<where>``, which is ``"mean"``). For an
  out-of-vocabulary word it is the n-grams' mean. 002 averages per group of n-grams and
  then averages the groups' means; with one group (002's ``n = 3`` only) that is this.

Only ``"mean"`` and ``"word_plus_mean"`` coincide for out-of-vocabulary words. N-grams
are looked up in a dictionary here, not hashed into buckets as fastText does; an n-gram
without a vector is skipped. gensim returns the zero vector for a word without any
n-gram; :func:`word_vector` raises a ValueError instead.

This module does not hold training, hashing or the subword tokenizers (BPE, WordPiece).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from .onehot import check_table

__all__ = ["BEGIN", "COMBINE", "END", "char_ngrams", "compose", "oov_vector", "word_vector"]

#: The boundary markers fastText wraps every word in.
BEGIN, END = "<", ">"

#: The ways of combining a word's vector with its n-gram vectors (see the module docstring).
COMBINE = ("mean", "sum", "word_plus_mean")


def char_ngrams(word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
    """The character n-grams of ``"<" + word + ">"`` with ``min_n <= n <= max_n``, repeats kept.

    Ordered by length, then by position. Includes the whole ``<word>`` when it is at
    most ``max_n`` characters long (so do fastText and gensim).
    """
    if not isinstance(word, str):
        raise ValueError(f"word must be a string, got {type(word).__name__}")
    if not isinstance(min_n, int) or not isinstance(max_n, int) or not 1 <= min_n <= max_n:
        raise ValueError(f"need integers 1 <= min_n <= max_n, got min_n={min_n!r}, max_n={max_n!r}")
    marked = f"{BEGIN}{word}{END}"
    return [marked[i:i + n] for n in range(min_n, min(max_n, len(marked)) + 1) for i in range(len(marked) - n + 1)]


def compose(word_vector: torch.Tensor | None, ngram_vectors: torch.Tensor, combine: str = "mean") -> torch.Tensor:
    """Combine an optional word vector ``(d,)`` with n-gram vectors ``(n, d)`` into one ``(d,)`` vector."""
    if combine not in COMBINE:
        raise ValueError(f"unknown combine {combine!r}; known: {', '.join(COMBINE)}")
    if ngram_vectors.dim() != 2:
        raise ValueError(f"ngram_vectors must be (count, dim), got shape {tuple(ngram_vectors.shape)}")
    if word_vector is not None and word_vector.shape != ngram_vectors.shape[1:]:
        raise ValueError(f"mismatched dimensions: the word vector has shape {tuple(word_vector.shape)}, "
                         f"the n-gram vectors {tuple(ngram_vectors.shape)}")
    count = ngram_vectors.shape[0]
    if count == 0 and word_vector is None:
        raise ValueError("no word vector and no n-gram vector: nothing to combine")
    total = ngram_vectors.sum(dim=0)  # (n, d) -> (d,)
    if combine == "sum":
        return total if word_vector is None else word_vector + total
    if combine == "mean":
        return total / count if word_vector is None else (word_vector + total) / (count + 1)
    ngram_mean = total / count if count else torch.zeros_like(total)  # word_plus_mean
    return ngram_mean if word_vector is None else word_vector + ngram_mean


def word_vector(word: str, ngram_index: Mapping[str, int], ngram_table: torch.Tensor, *,
                word_index: Mapping[str, int] | None = None, word_table: torch.Tensor | None = None,
                min_n: int = 3, max_n: int = 6, combine: str = "mean") -> torch.Tensor:
    """The vector of ``word`` from its n-gram vectors, plus its own vector if it is in ``word_index``.

    ``ngram_index`` maps an n-gram string to its row of ``ngram_table (N, d)``;
    ``word_index`` a word to its row of ``word_table (V, d)``. Returns ``(d,)``.
    """
    check_table(ngram_table)
    if (word_index is None) != (word_table is None):
        raise ValueError("give word_index and word_table together, or neither")
    own = None
    if word_table is not None and word_index is not None:
        check_table(word_table)
        if word_table.shape[1] != ngram_table.shape[1]:
            raise ValueError(f"mismatched dimensions: word_table {tuple(word_table.shape)}, "
                             f"ngram_table {tuple(ngram_table.shape)}")
        if word in word_index:
            own = word_table[word_index[word]]  # (d,)
    rows = [ngram_index[g] for g in char_ngrams(word, min_n, max_n) if g in ngram_index]
    if own is None and not rows:
        raise ValueError(f"unknown word {word!r}: it is not in the vocabulary and none of its "
                         f"{min_n}..{max_n}-grams has a vector")
    if rows and not 0 <= min(rows) <= max(rows) < ngram_table.shape[0]:
        raise ValueError(f"ngram_index points outside the {ngram_table.shape[0]} rows of ngram_table")
    ngram_vectors = ngram_table[torch.tensor(rows, dtype=torch.int64, device=ngram_table.device)]  # (n,) -> (n, d)
    return compose(own, ngram_vectors, combine)


def oov_vector(word: str, ngram_index: Mapping[str, int], ngram_table: torch.Tensor, *,
               min_n: int = 3, max_n: int = 6, combine: str = "mean") -> torch.Tensor:
    """The vector of an out-of-vocabulary ``word``: its n-gram vectors only (``"mean"`` is gensim's)."""
    return word_vector(word, ngram_index, ngram_table, min_n=min_n, max_n=max_n, combine=combine)
