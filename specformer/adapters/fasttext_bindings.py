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
  ``minn``, ``maxn`` and about 20,000 n-gram buckets, whose input matrix is replaced
  (``set_matrices``) by one that holds each known word's row at its word id and, for the
  queried word, each given n-gram's row at the id ``get_subwords`` reports for it (zero
  elsewhere: an n-gram that is not given counts with a zero row, since fastText hashes
  every n-gram of a word into a bucket). When two given n-grams of the word share a
  bucket, the next bucket count of :data:`BUCKET_CHOICES` is tried. The last two models
  are kept.
* ``train_fasttext``: ``fasttext.train_unsupervised`` on the corpus written to a temporary
  file (one sentence a line, words joined by spaces), with ``model="skipgram"``, ``dim``,
  ``ws = window``, ``neg = negative``, ``epoch = epochs``, ``minn``, ``maxn``, ``seed`` (passed
  by :func:`_train_unsupervised`: the bindings' own function refuses it), ``minCount = 1``, ``thread = 1`` (one thread: the same seed gives the same vectors),
  ``t = 1`` (no subsampling: fastText keeps a word unless a uniform draw exceeds
  ``sqrt(t / f) + t / f``, at least 2 for ``t = 1``), ``bucket = 20011`` (the default
  2,000,000 rows cost seconds to allocate) and fastText's own learning rate (0.05, decaying
  linearly); the queries' vectors are ``get_word_vector``. fastText's reader adds the
  end-of-line token ``"</s>"`` to every line, so it is a word of the trained model.

fastText works in float32: the tables are converted to it and the vector back to the
dtype under test. The adapter declares the ``mean`` composition (fastText's
``getWordVector`` divides by the number of subwords; ``deviations.toml`` records that
fasttext-community 0.11.9 then also normalises the vector to unit length). The bindings are
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
from specformer.protocol import Capabilities

#: The release the adapter is written against (``pip install fasttext-community==0.11.9``).
FASTTEXT_COMMUNITY_VERSION = "0.11.9"
#: Bucket counts tried in turn until the given n-grams of a word fall in distinct buckets (primes).
BUCKET_CHOICES = (20_011, 20_021, 20_023, 20_029, 20_047, 20_051, 20_063, 20_071)

#: The n-gram buckets of the models ``train_fasttext`` trains (fastText's default is 2,000,000).
TRAINING_BUCKETS = 20_011

#: The one word of the model that answers ``char_ngrams``.
PLACEHOLDER = "\u2603"


def _fasttext() -> Any:
    return import_library("fasttext", "fasttext-community", "fasttext")


def _model(words: tuple[str, ...], *, dim: int, min_n: int, max_n: int, buckets: int = BUCKET_CHOICES[0]) -> Any:
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
    arguments = struct.pack("<12id", dim, 5, 1, 1, 5, 1, 3, 2, buckets, min_n, max_n, 100, 1e-4)
    dictionary = struct.pack("<iiiqq", len(vocabulary), len(vocabulary), 0, len(vocabulary), -1)
    for word in vocabulary:
        dictionary += word.encode("utf-8") + b"\0" + struct.pack("<qb", 1, 0)  # count 1, type word
    rows = len(vocabulary) + buckets
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


@lru_cache(maxsize=2)
def _vocabulary_model(words: tuple[str, ...], dim: int, min_n: int, max_n: int, buckets: int) -> Any:
    return _model(words, dim=dim, min_n=min_n, max_n=max_n, buckets=buckets)


def _check_word(word: str, min_n: int, max_n: int) -> None:
    if min_n < 1 or max_n < min_n:
        raise ValueError(f"fastText takes 1 <= minn <= maxn, not {min_n}, {max_n}")
    word.encode("utf-8")  # a lone surrogate has no UTF-8: UnicodeEncodeError


class FastTextBindings:
    """fastText's ``get_subwords`` and ``get_word_vector`` on tiny models written here."""

    name = "fasttext"
    capabilities = Capabilities(conventions={"composition": frozenset({"mean"})})

    def char_ngrams(self, word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
        """``get_subwords(word)`` of a model with ``minn = min_n``, ``maxn = max_n``, word ids dropped."""
        _check_word(word, min_n, max_n)
        model = _ngram_model(min_n, max_n)
        nwords = len(model.words)
        subwords, ids = model.get_subwords(word)
        return [str(s) for s, i in zip(subwords, ids) if int(i) >= nwords]

    def fasttext_vector(self, word: str, words: list[str], word_table: torch.Tensor, ngrams: list[str],
                        ngram_table: torch.Tensor, min_n: int = 3, max_n: int = 6) -> torch.Tensor:
        """``get_word_vector(word)`` with the given word rows and the word's n-gram rows in the input matrix.

        fastText computes in float32: other dtypes are converted on the way in and back on the way out.
        """
        import numpy as np

        for w in (word, *words):
            _check_word(w, min_n, max_n)
        if any("\0" in w or w == "</s>" for w in words) or len(set(words)) != len(words):
            raise ValueError("fastText's vocabulary holds each word once, without NUL, and '</s>' itself")
        dim = ngram_table.shape[1]
        rows = word_table.detach().cpu().to(torch.float32).numpy()
        grams = ngram_table.detach().cpu().to(torch.float32).numpy()
        for buckets in BUCKET_CHOICES:
            model = _vocabulary_model(tuple(words), dim, min_n, max_n, buckets)
            nwords = len(model.words)
            subwords = [(str(s), int(i)) for s, i in zip(*model.get_subwords(word)) if int(i) >= nwords]
            given = {i: s for s, i in subwords if s in ngrams}
            if len({i for _, i in subwords}) == len({s for s, _ in subwords}):
                break  # each n-gram of the word has a bucket of its own
        else:
            raise RuntimeError(f"the n-grams of {word!r} share buckets under every bucket count tried")
        matrix = np.zeros((nwords + buckets, dim), dtype=np.float32)
        for i, known in enumerate(words):
            matrix[model.get_word_id(known)] = rows[i]
        for index, subword in given.items():
            matrix[index] = grams[ngrams.index(subword)]
        model.set_matrices(matrix, np.zeros((nwords, dim), dtype=np.float32))
        vector = torch.from_numpy(np.array(model.get_word_vector(word), dtype=np.float32))
        return vector.to(dtype=ngram_table.dtype, device=ngram_table.device)

    def train_fasttext(self, sentences: list[list[str]], queries: list[str], dim: int, window: int, negative: int,
                       epochs: int, seed: int, min_n: int = 3, max_n: int = 6, *, device: str = "cpu") -> torch.Tensor:
        """``train_unsupervised(model="skipgram", ...)`` on the corpus in a temporary file; each query's
        ``get_word_vector``."""
        import numpy as np

        fasttext = _fasttext()
        for sentence in sentences:
            for word in sentence:
                if not word or any(c.isspace() or c == "\0" for c in word):
                    raise ValueError(f"fastText reads words separated by white space: {word!r} cannot be one")
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "corpus.txt")
            with open(path, "w", encoding="utf-8") as corpus:
                corpus.write("".join(" ".join(sentence) + "\n" for sentence in sentences))
            model = _train_unsupervised(fasttext, input=path, model="skipgram", dim=dim, ws=window, neg=negative,
                                        epoch=epochs, minn=min_n, maxn=max_n, seed=seed, minCount=1, thread=1,
                                        t=1.0, bucket=TRAINING_BUCKETS, verbose=0)
        vectors = np.stack([np.array(model.get_word_vector(word), dtype=np.float32) for word in queries])  # (Q, d)
        return torch.from_numpy(vectors).to(device)


def _train_unsupervised(fasttext: Any, **arguments: Any) -> Any:
    """``fasttext.train_unsupervised(**arguments)``, with ``seed`` passed on.

    The bindings' ``train_unsupervised`` (fasttext-community 0.11.9) refuses ``seed``, although
    its defaults hold one and fastText's ``Args`` reads it: this is that function's body with
    ``seed`` among the names it takes.
    """
    module = fasttext.FastText
    names = ["input", "model", "lr", "dim", "ws", "epoch", "minCount", "minCountLabel", "minn", "maxn", "neg",
             "wordNgrams", "loss", "bucket", "thread", "lrUpdateRate", "t", "label", "verbose", "pretrainedVectors",
             "seed"]
    args, manually_set = module.read_args((), arguments, names, module.unsupervised_default)
    built = module._build_args(args, manually_set)
    model = module._FastText(args=built)
    module.fasttext.train(model.f, built)
    model.set_args(model.f.getArgs())
    return model


implementation = FastTextBindings()
