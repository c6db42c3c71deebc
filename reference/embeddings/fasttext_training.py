"""FastText's skip-gram with negative sampling (Bojanowski et al., 2017), trained on a small corpus.

FastText is word2vec's skip-gram in which the input vector of a centre word is composed
from the word's own row and the rows of its character n-grams (``char_ngrams``: the
substrings of ``"<" + word + ">"`` of ``min_n`` to ``max_n`` characters). The composition
here is the mean of those rows, fastText's and gensim's (``mean`` in :mod:`.fasttext`).
The output vectors are per word, as in word2vec. After training, a word outside the
vocabulary still gets a vector: the mean of the rows of its n-grams that were trained.

The trainer reuses word2vec's parts: the composition of a centre word *is* a masked mean
of rows of one stacked table ``[word rows; n-gram rows]``, which is CBOW's hidden vector
(:func:`.word2vec.cbow_context_mean`) over the word's id and its n-grams' ids; the loss is
:func:`.word2vec.negative_sampling_loss`. Like :func:`.word2vec.train_word2vec` it uses a
fixed window, no subsampling, mini-batch SGD, negatives from the seeded generator (a
negative equal to the positive word masked out), inputs uniform in ``[-0.5/d, 0.5/d]``
and outputs at zero; the same ``seed`` gives the same vectors.

N-grams are kept in a dictionary (every n-gram of the training words has its own row),
not hashed into buckets as fastText and gensim do; an n-gram of an unseen word that no
training word has is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .fasttext import char_ngrams
from .word2vec import (Vocabulary, build_vocab, cbow_context_mean, negative_sampling_loss, noise_distribution,
                       sample_negatives, sgd_step, skipgram_pairs)

__all__ = ["FastTextModel", "train_fasttext"]


@dataclass
class FastTextModel:
    """What :func:`train_fasttext` returns: the vocabulary, the n-gram index and the trained tables."""

    vocab: Vocabulary
    ngram_index: dict[str, int]
    input_table: torch.Tensor  # (V + G, d): the V word rows, then the G n-gram rows
    output_vectors: torch.Tensor  # (V, d): v', one per word
    min_n: int
    max_n: int
    losses: list[float]

    def rows(self, word: str) -> list[int]:
        """The rows of ``input_table`` that compose ``word``: its own (if known), then its known n-grams'."""
        own = [self.vocab.id(word)] if word in self.vocab else []
        offset = len(self.vocab)
        return own + [offset + self.ngram_index[g] for g in char_ngrams(word, self.min_n, self.max_n)
                      if g in self.ngram_index]

    def vector(self, word: str) -> torch.Tensor:
        """The mean of ``word``'s rows ``(d,)``; a ValueError for a word with no row at all."""
        rows = self.rows(word)
        if not rows:
            raise ValueError(f"unknown word {word!r}: not in the vocabulary and none of its "
                             f"{self.min_n}..{self.max_n}-grams was trained")
        return self.input_table[rows].mean(dim=0)  # (n, d) -> (d,)


def _composition_ids(vocab: Vocabulary, ngram_index: dict[str, int], min_n: int,
                     max_n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids (V, 1 + G_max), mask (V, 1 + G_max))``: each word's own row and its n-grams' rows, padded."""
    rows = []
    for word in vocab.words:
        rows.append([vocab.id(word)] + [len(vocab) + ngram_index[g] for g in char_ngrams(word, min_n, max_n)])
    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.int64)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = True
    return ids, mask


def train_fasttext(sentences: Sequence[Sequence[str]], *, dim: int = 16, window: int = 2, negative: int = 5,
                   epochs: int = 20, lr: float = 0.1, batch_size: int = 16, min_n: int = 3, max_n: int = 6,
                   min_count: int = 1, exponent: float = 0.75, seed: int = 0,
                   dtype: torch.dtype = torch.float32) -> FastTextModel:
    """Train FastText's skip-gram with negative sampling on a tokenized corpus; deterministic for a ``seed``.

    Each step minimises the sum of the batch's per-pair losses (``lr`` per pair, as in
    word2vec); returns the tables and each epoch's mean loss (before each batch's update).
    """
    for name, value in (("dim", dim), ("epochs", epochs), ("batch_size", batch_size), ("negative", negative)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive integer, got {window!r}")
    if not 1 <= min_n <= max_n:
        raise ValueError(f"need 1 <= min_n <= max_n, got {min_n}, {max_n}")
    vocab = build_vocab(sentences, min_count)
    ngram_index: dict[str, int] = {}
    for word in vocab.words:
        for gram in char_ngrams(word, min_n, max_n):
            ngram_index.setdefault(gram, len(ngram_index))
    compose_ids, compose_mask = _composition_ids(vocab, ngram_index, min_n, max_n)  # (V, 1 + G_max) each
    encoded = [vocab.encode(sentence, skip_unknown=True) for sentence in sentences]
    pairs = [pair for sentence in encoded for pair in skipgram_pairs(sentence, window)]
    if not pairs:
        raise ValueError("the corpus gives no training pairs: every sentence has fewer than two known words")
    pair_ids = torch.tensor(pairs, dtype=torch.int64)  # (N, 2): centre, context

    generator = torch.Generator().manual_seed(seed)
    rows = len(vocab) + len(ngram_index)
    input_table = ((torch.rand(rows, dim, generator=generator, dtype=dtype) - 0.5) / dim).requires_grad_(True)
    output_table = torch.zeros(len(vocab), dim, dtype=dtype).requires_grad_(True)
    noise = noise_distribution(vocab.count_tensor(torch.float64), exponent)

    losses = []
    for _ in range(epochs):
        order = torch.randperm(len(pairs), generator=generator)
        total = 0.0
        for start in range(0, len(order), batch_size):
            batch = pair_ids[order[start:start + batch_size]]  # (b, 2)
            centres, contexts = batch[:, 0], batch[:, 1]
            hidden = cbow_context_mean(compose_ids[centres], input_table, compose_mask[centres])  # (b, 1+G) -> (b, d)
            noise_ids = sample_negatives(noise, (len(batch), negative), generator)  # (b, k)
            keep = noise_ids != contexts[:, None]  # (b, k): skip a negative equal to the positive word
            step_loss = negative_sampling_loss(hidden, output_table[contexts], output_table[noise_ids], keep).sum()
            total += sgd_step(step_loss, (input_table, output_table), lr)
        losses.append(total / len(pairs))
    return FastTextModel(vocab, ngram_index, input_table.detach(), output_table.detach(), min_n, max_n, losses)
