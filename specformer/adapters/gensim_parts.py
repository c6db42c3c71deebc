"""gensim's word2vec and FastText parts behind the embeddings family's protocol.

* ``char_ngrams``: ``gensim.models.fasttext.compute_ngrams(word, min_n, max_n)``, the
  n-grams of ``"<" + word + ">"`` by length, then position, on Unicode code points. (The
  vectors themselves are looked up through ``compute_ngrams_bytes``, which for
  ``min_n = 1`` leaves out the bare markers ``"<"`` and ``">"``, as fastText's C++ does.)
* ``noise_distribution``: the table gensim draws negative samples from. ``Word2Vec
  (ns_exponent=e).build_vocab_from_freq(counts)`` builds ``cum_table``, the cumulative
  sums of ``count^e`` scaled to ``domain = 2^31 - 1`` and rounded to integers
  (``make_cum_table``); a word is drawn with probability (its increment) / ``domain``. The
  adapter differentiates the table back into those probabilities, in the order of the
  protocol's counts (gensim sorts its vocabulary by count). Each cumulative value is
  rounded by at most 1/2, so each probability is within ``1 / (2^31 - 1) = 4.7e-10`` of
  ``count^e / sum count^e``. Counts must be whole numbers of at least 1 (gensim's
  vocabulary holds words seen at least ``min_count >= 1`` times).
* ``cbow_hidden``: the CBOW forward pass of ``Word2Vec.predict_output_word`` with
  ``cbow_mean=1``: ``l1 = sum of the context rows / their number`` (with ``cbow_mean=0``
  it would be the sum), followed by ``softmax(l1 syn1neg^T)``. The adapter sets the
  input vectors to the table and ``syn1neg`` to rows ``0, e_1, ..., e_d``, so that
  ``log p_k - log p_0 = l1_k`` recovers the hidden vector from gensim's own output.
  Tables with entries beyond 40 in absolute value are not applicable (the softmax would
  overflow).
* ``fasttext_vector``: ``FastTextKeyedVectors.get_vector`` of a ``FastTextKeyedVectors``
  (``bucket``: the first count of :data:`FASTTEXT_BUCKETS` under which the given n-grams
  fall in distinct buckets) whose vocabulary is the given words with their
  rows (``vectors_vocab``) and whose n-gram table holds each given n-gram's row at the
  bucket gensim hashes it to (``ft_ngram_hashes``), zero elsewhere; then
  ``adjust_vectors``, which stores ``(v + sum z) / (n + 1)`` for a known word, while an
  unseen word gets ``sum z / n`` (the ``mean`` composition). gensim hashes every n-gram of
  a word, so one that is not given still counts, with a zero row; two given n-grams that
  share a bucket, or an n-gram without a bucket of its own in gensim's byte-level
  n-grams (non-ASCII text, ``min_n = 1``), make the example not applicable.
* ``train_skipgram``: ``Word2Vec(sentences, vector_size=dim, window=window, sg=1, hs=0,
  negative=negative, epochs=epochs, seed=seed, min_count=min_count, sample=0, workers=1,
  hashfxn=crc32)``: gensim's own skip-gram with its defaults otherwise (learning rate 0.025
  decaying linearly, a window shrunk at random per centre word, the 3/4-power noise table).
  ``sample=0`` turns off the subsampling of frequent words (on a corpus of a few words every
  word is frequent); one worker and a CRC-32 hash (gensim seeds each word's initial vector by
  hashing the word with the seed; Python's ``hash`` of a string changes per process) make the
  same seed give the same vectors. Returns ``wv.index_to_key`` and ``wv.vectors`` (float32).
  With ``initial``, the model is built without a corpus, ``build_vocab`` lays out the vocabulary
  and draws the vectors, each row of ``wv.vectors`` is then set to the given word's vector, and
  ``train`` runs the epochs; ``syn1neg``, the output vectors, starts at zero, or at the rows of
  ``initial_output`` when given. gensim skips a (word, context) pair whose score lies beyond
  +-6 (its ``MAX_EXP``), where word2vec's C code takes the saturated gradient.
* ``train_fasttext``: ``FastText(sentences, ..., min_n=min_n, max_n=max_n)`` with the same
  settings and 20,011 n-gram buckets (gensim's default of 2,000,000 costs seconds to
  allocate); the queries' vectors are ``wv.get_vector`` (the ``mean`` composition; an unseen
  word gets its hashed n-grams' mean).

gensim is imported on first use; without it each operation raises an ``ImportError``
that names the package. Inputs are float32 or float64 (numpy has no bfloat16); results
come back in the input's dtype, on its device; trained vectors in gensim's float32.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

from specformer.adapters.hf_common import import_library
from specformer.protocol import Capabilities
from specformer.protocol.base import NotApplicable

#: The release the adapter is written against.
GENSIM_VERSION = "4.4.0"
#: Bucket counts of the n-gram table the ``fasttext_vector`` adapter builds, tried in turn (primes).
FASTTEXT_BUCKETS = (100_003, 100_019, 100_043, 100_049, 100_057, 100_069, 100_103, 100_109)
#: The n-gram buckets of the FastText models ``train_fasttext`` trains (a prime; gensim's default is 2,000,000).
TRAINING_BUCKETS = 20_011
#: Entries beyond this are outside the ``cbow_hidden`` domain (``exp`` of the hidden vector).
CBOW_ENTRY_LIMIT = 40.0


def _gensim(module: str) -> ModuleType:
    return import_library(f"gensim.{module}", "gensim", "gensim")


def _numpy_dtype(x: torch.Tensor) -> Any:
    import numpy as np

    if x.dtype not in (torch.float32, torch.float64):
        raise NotApplicable(f"gensim works in numpy float32 and float64, not {x.dtype}")
    return np.float64 if x.dtype == torch.float64 else np.float32


def _word2vec(**settings: Any) -> Any:
    word2vec = _gensim("models.word2vec")
    return word2vec.Word2Vec(min_count=1, workers=1, **settings)


class GensimParts:
    """gensim 4.4's n-grams, negative-sampling table, CBOW forward pass and FastText vectors."""

    name = "gensim"
    capabilities = Capabilities(dtypes=frozenset({"float32", "float64"}),
                                conventions={"composition": frozenset({"mean"})})

    def char_ngrams(self, word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
        """``gensim.models.fasttext.compute_ngrams(word, min_n, max_n)``."""
        fasttext = _gensim("models.fasttext")
        return [str(g) for g in fasttext.compute_ngrams(word, min_n, max_n)]

    def noise_distribution(self, counts: torch.Tensor, exponent: float = 0.75) -> torch.Tensor:
        """The probabilities of gensim's ``cum_table`` for ``counts (V,)`` and ``ns_exponent = exponent``."""
        import numpy as np

        dtype = _numpy_dtype(counts)
        values = counts.detach().cpu().to(torch.float64)
        if not bool((values >= 1).all()) or not bool((values == values.round()).all()):
            raise NotApplicable("gensim's vocabulary takes whole counts of at least 1")
        model = _word2vec(vector_size=1, negative=1, ns_exponent=float(exponent))
        keys = [f"w{i}" for i in range(values.numel())]
        model.build_vocab_from_freq({key: int(c) for key, c in zip(keys, values.tolist())})
        cumulative = model.cum_table.astype(np.float64)  # (V,), by gensim's index; last entry = domain
        increments = np.diff(cumulative, prepend=0.0) / cumulative[-1]  # (V,)
        by_word = np.array([increments[model.wv.get_index(key)] for key in keys])  # the protocol's order
        return torch.from_numpy(by_word.astype(dtype)).to(counts.device)

    def cbow_hidden(self, context_ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """CBOW's hidden vector from ``Word2Vec.predict_output_word`` (``cbow_mean=1``), one context per row."""
        import numpy as np

        dtype = _numpy_dtype(table)
        if bool((table.abs() > CBOW_ENTRY_LIMIT).any()):
            raise NotApplicable(f"the adapter recovers CBOW's hidden vector for entries up to {CBOW_ENTRY_LIMIT}")
        vocab, dim = table.shape
        size = max(vocab, dim + 1)  # room for the rows 0, e_1 .. e_d of syn1neg
        model = _word2vec(vector_size=dim, negative=1, sg=0, cbow_mean=1)
        model.build_vocab_from_freq({f"w{i}": size - i for i in range(size)})  # distinct counts: index i is w{i}
        if model.wv.index_to_key != [f"w{i}" for i in range(size)]:
            raise RuntimeError("gensim did not keep the vocabulary in the order of its counts")
        vectors = np.zeros((size, dim), dtype=dtype)
        vectors[:vocab] = table.detach().cpu().numpy()
        model.wv.vectors = vectors
        model.syn1neg = np.zeros((size, dim), dtype=dtype)
        model.syn1neg[1:dim + 1] = np.eye(dim, dtype=dtype)  # row k + 1 scores l1_k; row 0 scores 0
        hidden = np.zeros((context_ids.shape[0], dim), dtype=dtype)
        for b, row in enumerate(context_ids.detach().cpu().tolist()):
            predicted = model.predict_output_word([int(i) for i in row], topn=size)  # [(key, p)], all words
            p = np.zeros(size, dtype=np.float64)
            for key, probability in predicted:
                p[model.wv.get_index(key)] = probability
            hidden[b] = np.log(p[1:dim + 1]) - np.log(p[0])  # l1_k = log p_{k+1} - log p_0
        return torch.from_numpy(hidden).to(table.device)

    def fasttext_vector(self, word: str, words: list[str], word_table: torch.Tensor, ngrams: list[str],
                        ngram_table: torch.Tensor, min_n: int = 3, max_n: int = 6) -> torch.Tensor:
        """``FastTextKeyedVectors.get_vector(word)`` with the given word rows and n-gram rows placed in gensim's buckets."""
        import numpy as np

        fasttext = _gensim("models.fasttext")
        dtype = _numpy_dtype(ngram_table)
        dim = ngram_table.shape[1]
        if min_n < 2 or not all(w.isascii() for w in [word, *words, *ngrams]):
            raise NotApplicable("gensim hashes byte n-grams and leaves out the bare markers: ASCII and min_n >= 2 only")
        hashes = [fasttext.ft_hash_bytes(gram.encode("utf-8")) for gram in ngrams]
        for buckets in FASTTEXT_BUCKETS:  # the first count that gives every given n-gram a bucket of its own
            if len({h % buckets for h in hashes}) == len(set(ngrams)):
                break
        else:
            raise RuntimeError("the given n-grams share buckets under every bucket count tried")
        vectors = fasttext.FastTextKeyedVectors(dim, min_n, max_n, buckets, dtype=dtype)
        table = np.zeros((buckets, dim), dtype=dtype)
        rows = ngram_table.detach().cpu().numpy()
        for i, h in enumerate(hashes):
            table[h % buckets] = rows[i]
        vectors.vectors_ngrams = table
        if words:
            vocab_rows = word_table.detach().cpu().numpy().astype(dtype)
            vectors.add_vectors(list(words), np.zeros((len(words), dim), dtype=dtype))
            vectors.vectors_vocab = vocab_rows
            vectors.recalc_char_ngram_buckets()
            vectors.adjust_vectors()
        return torch.from_numpy(np.array(vectors.get_vector(word), dtype=dtype)).to(ngram_table.device)

    def train_skipgram(self, sentences: list[list[str]], dim: int, window: int, negative: int, epochs: int,
                       seed: int, min_count: int = 1, *, device: str = "cpu",
                       initial: dict[str, list[float]] | None = None,
                       initial_output: dict[str, list[float]] | None = None) -> tuple[list[str], torch.Tensor]:
        """gensim's ``Word2Vec`` skip-gram with negative sampling, one worker, no subsampling, seeded; with
        ``initial`` (and ``initial_output``), ``wv.vectors`` (and ``syn1neg``) set to the given vectors between
        ``build_vocab`` and ``train``."""
        import numpy as np

        word2vec = _gensim("models.word2vec")
        settings = dict(vector_size=dim, window=window, sg=1, hs=0, negative=negative, epochs=epochs, seed=seed,
                        min_count=min_count, sample=0, workers=1, hashfxn=_crc32)
        if initial is None and initial_output is None:
            model = word2vec.Word2Vec(sentences, **settings)
        else:
            model = word2vec.Word2Vec(**settings)
            model.build_vocab(sentences)
            for word, row in model.wv.key_to_index.items():
                if initial is not None:
                    model.wv.vectors[row] = np.asarray(initial[word], dtype=model.wv.vectors.dtype)
                if initial_output is not None:
                    model.syn1neg[row] = np.asarray(initial_output[word], dtype=model.syn1neg.dtype)
            model.train(sentences, total_examples=model.corpus_count, epochs=epochs)
        vectors = torch.from_numpy(np.array(model.wv.vectors, dtype=np.float32))  # (V, d)
        return [str(w) for w in model.wv.index_to_key], vectors.to(device)

    def train_fasttext(self, sentences: list[list[str]], queries: list[str], dim: int, window: int, negative: int,
                       epochs: int, seed: int, min_n: int = 3, max_n: int = 6, *, device: str = "cpu") -> torch.Tensor:
        """gensim's ``FastText`` skip-gram with negative sampling; ``wv.get_vector`` of each query."""
        import numpy as np

        fasttext = _gensim("models.fasttext")
        model = fasttext.FastText(sentences, vector_size=dim, window=window, sg=1, hs=0, negative=negative,
                                  epochs=epochs, seed=seed, min_count=1, sample=0, workers=1, hashfxn=_crc32,
                                  min_n=min_n, max_n=max_n, bucket=TRAINING_BUCKETS)
        vectors = np.stack([np.array(model.wv.get_vector(word), dtype=np.float32) for word in queries])  # (Q, d)
        return torch.from_numpy(vectors).to(device)


def _crc32(text: str) -> int:
    """A hash of ``text`` that is the same in every process (gensim seeds each word's vector with it)."""
    import zlib

    return zlib.crc32(text.encode("utf-8"))


implementation = GensimParts()
