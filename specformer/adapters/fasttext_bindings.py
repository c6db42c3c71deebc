"""fastText's own code (Bojanowski et al.'s C++, through its Python bindings) behind the embeddings protocol.

The bindings are those of the ``fasttext-community`` wheels (a maintained fork of the
``fasttext`` package, which ships no wheels for current Pythons); the module they install
is ``fasttext``. fastText computes n-grams and word vectors only for a model it holds, so
the adapter writes tiny models in fastText's binary format (a vocabulary, zero matrices)
to a temporary folder and loads them with ``fasttext.load_model``:

* ``char_ngrams``: ``model.get_subwords(word)`` of a model with ``minn = min_n`` and
  ``maxn = max_n`` whose vocabulary is one word no query can meet (``"\u2603"``, and
  fastText's end-of-line ``"</s>"``); the entries whose ids are word ids are dropped,
  leaving the n-grams in fastText's order (by start position, then length). One model per
  ``(min_n, max_n)``, kept.
* ``fasttext_vector``: ``model.get_word_vector(word)`` of a model whose vocabulary is
  ``words`` and ``"</s>"``, with ``dim = d``,
  ``minn``, ``maxn`` and :data:`BUCKETS` n-gram buckets, whose input matrix is replaced
  (``set_matrices``) by one that holds each known word's row at its word id and, for the
  queried word, each given n-gram's row at the id ``get_subwords`` reports for it (zero
  elsewhere: an n-gram that is not given counts with a zero row, since fastText hashes
  every n-gram of a word into a bucket). Two different given n-grams of the word in one
  bucket make the example not applicable. One model per vocabulary, the last one kept.

fastText works in float32 only; other dtypes are not applicable. Words with whitespace
(fastText splits its input on it) and ``min_n < 1`` are not applicable. The bindings are
imported on first use; without them each operation raises an ``ImportError`` naming the
package. This module does not load or ship pre-trained models.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from typing import Any

import torch

from specformer.adapters.hf_common import import_library
from specformer.protocol.base import NotApplicable

#: The release the adapter is written against (``pip install fasttext-community==0.11.9``).
FASTTEXT_COMMUNITY_VERSION = "0.11.9"
#: n-gram buckets of the models the adapter trains (fastText's default is 2,000,000).
BUCKETS = 20_011
#: The one word of the model that answers ``char_ngrams``.
PLACEHOLDER = "\u2603"


def _fasttext() -> Any:
    return import_library("fasttext", "fasttext-community", "fasttext")


def _model(words: tuple[str, ...], *, dim: int, min_n: int, max_n: int) -> Any:
    """A fastText skip-gram model with vocabulary ``words`` and ``"</s>"``, zero matrices, loaded by fastText.

    Written in fastText's own binary format (version 12: magic, arguments, dictionary, input
    and output matrices) and read back with ``fasttext.load_model``, so fastText's code builds
    its dictionary and n-gram ids; nothing is trained.
    """
    import struct

    fasttext = _fasttext()
    vocabulary = [*words, "</s>"]
    header = struct.pack("<ii", 793712314, 12)
    # loss 3 (softmax), model 2 (skip-gram): negative sampling would build its 10^7-entry noise table on loading
    arguments = struct.pack("<12id", dim, 5, 1, 1, 5, 1, 3, 2, BUCKETS, min_n, max_n, 100, 1e-4)
    dictionary = struct.pack("<iiiqq", len(vocabulary), len(vocabulary), 0, len(vocabulary), -1)
    for word in vocabulary:
        dictionary += word.encode("utf-8") + b"\0" + struct.pack("<qb", 1, 0)  # count 1, type word
    rows = len(vocabulary) + BUCKETS
    matrices = (b"\0" + struct.pack("<qq", rows, dim) + bytes(4 * rows * dim)
                + b"\0" + struct.pack("<qq", len(vocabulary), dim) + bytes(4 * len(vocabulary) * dim))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.bin")
        with open(path, "wb") as model:
            model.write(header + arguments + dictionary + matrices)
        return fasttext.load_model(path)


@lru_cache(maxsize=64)
def _ngram_model(min_n: int, max_n: int) -> Any:
    return _model((PLACEHOLDER,), dim=1, min_n=min_n, max_n=max_n)


@lru_cache(maxsize=1)
def _vocabulary_model(words: tuple[str, ...], dim: int, min_n: int, max_n: int) -> Any:
    return _model(words, dim=dim, min_n=min_n, max_n=max_n)


def _check_word(word: str, min_n: int, max_n: int) -> None:
    if min_n < 1 or max_n < min_n:
        raise NotApplicable(f"fastText takes 1 <= minn <= maxn, not {min_n}, {max_n}")
    if any(c.isspace() for c in word) or "\x00" in word or word == "":
        raise NotApplicable("fastText splits its input on whitespace: a word is non-empty and has none")
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        raise NotApplicable("fastText reads UTF-8: a word with a lone surrogate has no bytes") from None


class FastTextBindings:
    """fastText's ``get_subwords`` and ``get_word_vector`` on tiny models written here."""

    name = "fasttext"

    def char_ngrams(self, word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
        """``get_subwords(word)`` of a model with ``minn = min_n``, ``maxn = max_n``, word ids dropped."""
        _check_word(word, min_n, max_n)
        model = _ngram_model(min_n, max_n)
        nwords = len(model.words)
        subwords, ids = model.get_subwords(word)
        return [str(s) for s, i in zip(subwords, ids) if int(i) >= nwords]

    def fasttext_vector(self, word: str, words: list[str], word_table: torch.Tensor, ngrams: list[str],
                        ngram_table: torch.Tensor, min_n: int = 3, max_n: int = 6) -> torch.Tensor:
        """``get_word_vector(word)`` with the given word rows and the word's n-gram rows in the input matrix."""
        import numpy as np

        if ngram_table.dtype != torch.float32:
            raise NotApplicable(f"fastText computes in float32, not {ngram_table.dtype}")
        for w in (word, *words):
            _check_word(w, min_n, max_n)
        if "</s>" in words or len(set(words)) != len(words):
            raise NotApplicable("fastText's vocabulary holds '</s>' itself, and each word once")
        dim = ngram_table.shape[1]
        model = _vocabulary_model(tuple(words), dim, min_n, max_n)
        nwords = len(model.words)
        matrix = np.zeros((nwords + BUCKETS, dim), dtype=np.float32)
        rows = word_table.detach().cpu().numpy()
        for i, known in enumerate(words):
            matrix[model.get_word_id(known)] = rows[i]
        grams = ngram_table.detach().cpu().numpy()
        placed: dict[int, str] = {}
        for subword, index in zip(*model.get_subwords(word)):
            index, subword = int(index), str(subword)
            if index < nwords:
                continue  # the word's own row, set above
            if placed.setdefault(index, subword) != subword:
                raise NotApplicable(f"the n-grams {placed[index]!r} and {subword!r} share fastText's bucket {index}")
            if subword in ngrams:
                matrix[index] = grams[ngrams.index(subword)]
        model.set_matrices(matrix, np.zeros((nwords, dim), dtype=np.float32))
        return torch.from_numpy(np.array(model.get_word_vector(word), dtype=np.float32)).to(ngram_table.device)


implementation = FastTextBindings()
