"""word2vec (Mikolov et al., 2013): skip-gram and CBOW, full softmax and negative sampling.

Each word ``w`` has two vectors: an input vector ``v_w`` (a row of the embedding table,
the one kept afterwards) and an output vector ``v'_w`` (a row of the output table).

* Skip-gram predicts each context word ``w_O`` within ``window`` positions of the centre
  word ``w_I``: ``p(w_O | w_I) = exp(v'_{w_O} . v_{w_I}) / sum_w exp(v'_w . v_{w_I})``
  (001, "Skip-Gram and CBOW"; 002's ``SkipGram`` adds a bias to the output layer).
* CBOW predicts the centre word from the *mean* of its context words' input vectors
  (002's ``context_embeds.mean(dim=1)``; word2vec's C code and gensim's default
  ``cbow_mean=1`` also average; a sum only rescales the hidden vector).
* Negative sampling replaces the ``V``-way softmax by ``k`` binary decisions. 001 writes,
  per pair, ``L = -log sigma(v'_{w_O} . v_{w_I}) - sum_{i=1}^{k} E_{w_i ~ P_n} log
  sigma(-v'_{w_i} . v_{w_I})`` with ``P_n(w) ∝ f(w)^{3/4}``; one sample per term turns
  the expectation into ``- sum_i log sigma(-v'_{w_i} . v_{w_I})``. 002's
  ``negative_sampling_loss`` computes the same expression, ``-logsigmoid(pos) -
  logsigmoid(-neg).sum()``, but looks every vector up in one table (``embedding``), so
  its "output" vectors are the input vectors: the two agree exactly when ``v' = v`` and
  differ otherwise (:func:`compare_negative_sampling`). 002 does not say how the
  negatives are drawn.

The trainer (:func:`train_word2vec`) is small and deterministic: a fixed window (word2vec
and gensim shrink it at random per centre word), no subsampling of frequent words, no
hierarchical softmax, mini-batch SGD in plain PyTorch, negatives drawn from a seeded
generator, and a negative equal to the positive word is skipped (masked), as word2vec's C
code and gensim do. Input vectors start uniform in ``[-0.5/d, 0.5/d]`` (or at a given
table) and output vectors at zero, as in word2vec's C code. The C code and gensim train skip-gram with the
*context* word's input vector predicting the centre word; with a fixed symmetric window
the multiset of ``(centre, context)`` pairs is symmetric, so that is the same data.

This module does not hold hierarchical softmax, phrase detection or hashing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import torch
import torch.nn.functional as F

from .onehot import check_ids, check_table

__all__ = [
    "skipgram_probabilities",
    "NegativeSamplingComparison",
    "Vocabulary",
    "Word2VecModel",
    "build_vocab",
    "cbow_context_mean",
    "cbow_examples",
    "compare_negative_sampling",
    "negative_sampling_loss",
    "negative_sampling_loss_as_002_codes",
    "noise_distribution",
    "sample_negatives",
    "sgd_step",
    "skipgram_pairs",
    "skipgram_softmax_loss",
    "softmax_loss",
    "train_word2vec",
]

T = TypeVar("T", bound=Hashable)


# --------------------------------------------------------------------------- vocabulary


@dataclass(frozen=True)
class Vocabulary:
    """Words by id, most frequent first (ties: first appearance first), with their counts."""

    words: tuple[str, ...]
    counts: tuple[int, ...]
    _ids: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.words) != len(self.counts):
            raise ValueError(f"{len(self.words)} words but {len(self.counts)} counts")
        object.__setattr__(self, "_ids", {word: i for i, word in enumerate(self.words)})
        if len(self._ids) != len(self.words):
            raise ValueError("the vocabulary lists a word twice")

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self._ids

    def id(self, word: str) -> int:
        """The id of ``word``; a ValueError naming it if it is not in the vocabulary."""
        if word not in self._ids:
            raise ValueError(f"unknown word {word!r}: not in the vocabulary of {len(self)} words")
        return self._ids[word]

    def encode(self, sentence: Sequence[str], skip_unknown: bool = False) -> list[int]:
        """The ids of ``sentence``'s words; unknown words raise, or are dropped with ``skip_unknown``."""
        if skip_unknown:
            return [self._ids[w] for w in sentence if w in self._ids]
        return [self.id(w) for w in sentence]

    def count_tensor(self, dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu") -> torch.Tensor:
        """The counts as a ``(V,)`` tensor, by id."""
        return torch.tensor(self.counts, dtype=dtype, device=device)


def _check_corpus(sentences: Sequence[Sequence[str]]) -> None:
    if isinstance(sentences, str) or any(isinstance(s, str) for s in sentences):
        raise ValueError("the corpus must be a list of sentences, each a list of word strings, not a string")
    if not any(len(s) for s in sentences):
        raise ValueError("the corpus is empty: it has no words")


def build_vocab(sentences: Sequence[Sequence[str]], min_count: int = 1) -> Vocabulary:
    """The words occurring at least ``min_count`` times in ``sentences``, most frequent first."""
    _check_corpus(sentences)
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count}")
    counts = Counter(word for sentence in sentences for word in sentence)  # insertion order = first appearance
    kept = [(word, n) for word, n in counts.items() if n >= min_count]
    if not kept:
        raise ValueError(f"the corpus is empty after min_count={min_count}: no word occurs that often "
                         f"(the most frequent occurs {max(counts.values())} times)")
    kept.sort(key=lambda item: -item[1])  # stable: ties stay in first-appearance order
    return Vocabulary(tuple(w for w, _ in kept), tuple(n for _, n in kept))


# --------------------------------------------------------------------------- training examples


def _check_window(window: int) -> None:
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive integer, got {window!r}")


def skipgram_pairs(tokens: Sequence[T], window: int) -> list[tuple[T, T]]:
    """``(centre, context)`` for every position and every other position at most ``window`` away.

    In order of centre position, then of offset ``-window..window`` (0 skipped); offsets
    that fall outside the sequence are dropped. A sequence of ``n >= window + 1`` tokens
    gives ``2 * window * n - window * (window + 1)`` pairs.
    """
    _check_window(window)
    pairs = []
    for t, centre in enumerate(tokens):
        for j in range(max(0, t - window), min(len(tokens), t + window + 1)):
            if j != t:
                pairs.append((centre, tokens[j]))
    return pairs


def cbow_examples(tokens: Sequence[T], window: int) -> list[tuple[list[T], T]]:
    """``(context words, centre)`` for every position that has at least one context word."""
    _check_window(window)
    examples = []
    for t, centre in enumerate(tokens):
        context = [tokens[j] for j in range(max(0, t - window), min(len(tokens), t + window + 1)) if j != t]
        if context:
            examples.append((context, centre))
    return examples


def cbow_context_mean(context_ids: torch.Tensor, table: torch.Tensor,
                      mask: torch.Tensor | None = None) -> torch.Tensor:
    """The mean of the context words' rows of ``table (V, d)``: ``(B, C)`` ids -> ``(B, d)``.

    ``mask (B, C)`` (True = a real context word) lets contexts of different lengths share
    one padded tensor; the mean is over the real words only.
    """
    check_table(table)
    if context_ids.dim() != 2:
        raise ValueError(f"context_ids must be (batch, context_size), got shape {tuple(context_ids.shape)}")
    check_ids(context_ids, table.shape[0])
    if mask is None:
        mask = torch.ones(context_ids.shape, dtype=torch.bool, device=context_ids.device)
    if mask.shape != context_ids.shape or mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor of shape {tuple(context_ids.shape)}, "
                         f"got {mask.dtype} {tuple(mask.shape)}")
    sizes = mask.sum(dim=1)  # (B,)
    if (sizes == 0).any():
        raise ValueError(f"example {int(torch.nonzero(sizes == 0)[0])} has no context word; its mean is undefined")
    vectors = table[context_ids] * mask[..., None].to(table.dtype)  # (B, C) -> (B, C, d), padding zeroed
    return vectors.sum(dim=1) / sizes[:, None].to(table.dtype)  # (B, d) / (B, 1)


# --------------------------------------------------------------------------- losses


def _check_hidden_and_outputs(hidden: torch.Tensor, out_table: torch.Tensor) -> None:
    check_table(out_table)
    if hidden.dim() != 2 or hidden.shape[1] != out_table.shape[1]:
        raise ValueError(f"mismatched dimensions: hidden must be (batch, {out_table.shape[1]}) to match the output "
                         f"table {tuple(out_table.shape)}, got {tuple(hidden.shape)}")


def softmax_loss(hidden: torch.Tensor, targets: torch.Tensor, out_table: torch.Tensor,
                 out_bias: torch.Tensor | None = None) -> torch.Tensor:
    """``-log softmax(hidden @ out_table^T + out_bias)[target]`` per example: ``(B, d)`` -> ``(B,)``.

    The full ``V``-way softmax of 001's ``p(w_O | w_I)``; ``out_bias`` is 002's ``nn.Linear`` bias.
    """
    _check_hidden_and_outputs(hidden, out_table)
    check_ids(targets, out_table.shape[0])
    if targets.shape != hidden.shape[:1]:
        raise ValueError(f"targets must have shape ({hidden.shape[0]},), got {tuple(targets.shape)}")
    logits = hidden @ out_table.T  # (B, d) @ (d, V) -> (B, V)
    if out_bias is not None:
        if out_bias.shape != (out_table.shape[0],):
            raise ValueError(f"out_bias must have shape ({out_table.shape[0]},), got {tuple(out_bias.shape)}")
        logits = logits + out_bias
    return -torch.log_softmax(logits, dim=-1).gather(1, targets[:, None])[:, 0]  # (B, V) -> (B, 1) -> (B,)


def skipgram_softmax_loss(centres: torch.Tensor, contexts: torch.Tensor, in_table: torch.Tensor,
                          out_table: torch.Tensor) -> torch.Tensor:
    """The full-softmax skip-gram loss ``-log p(context | centre)`` per pair: ``(B,)`` ids -> ``(B,)``."""
    check_table(in_table)
    check_ids(centres, in_table.shape[0])
    if in_table.shape != out_table.shape:
        raise ValueError(f"in_table {tuple(in_table.shape)} and out_table {tuple(out_table.shape)} differ in shape")
    return softmax_loss(in_table[centres], contexts, out_table)  # (B,) -> (B, d) -> (B,)


def skipgram_probabilities(centres: torch.Tensor, in_table: torch.Tensor, out_table: torch.Tensor) -> torch.Tensor:
    """001's full softmax ``p(w | w_I) = exp(v'_w . v_I) / sum_u exp(v'_u . v_I)``: ``(B,)`` ids -> ``(B, V)``."""
    check_table(in_table)
    check_table(out_table)
    check_ids(centres, in_table.shape[0])
    if in_table.shape[1] != out_table.shape[1]:
        raise ValueError(f"in_table {tuple(in_table.shape)} and out_table {tuple(out_table.shape)} differ in width")
    return torch.softmax(in_table[centres] @ out_table.T, dim=-1)  # (B, d) @ (d, V) -> (B, V)


def negative_sampling_loss(hidden: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor,
                           negative_mask: torch.Tensor | None = None) -> torch.Tensor:
    """001's per-pair loss ``-log sigma(v'_O . h) - sum_i log sigma(-v'_i . h)``: ``(B,)``.

    ``hidden (B, d)`` is ``v_{w_I}`` (skip-gram) or the context mean (CBOW); ``positive
    (B, d)`` the output vector of the true word; ``negatives (B, k, d)`` the output vectors
    of ``k`` noise words. ``negative_mask (B, k)`` (True = keep) drops individual terms.
    """
    if hidden.dim() != 2 or positive.shape != hidden.shape:
        raise ValueError(f"hidden and positive must both be (batch, dim), got {tuple(hidden.shape)} "
                         f"and {tuple(positive.shape)}")
    if negatives.dim() != 3 or negatives.shape[0] != hidden.shape[0] or negatives.shape[2] != hidden.shape[1]:
        raise ValueError(f"mismatched dimensions: negatives must be ({hidden.shape[0]}, k, {hidden.shape[1]}), "
                         f"got {tuple(negatives.shape)}")
    positive_score = (hidden * positive).sum(dim=-1)  # (B,)
    negative_scores = (negatives @ hidden[:, :, None])[:, :, 0]  # (B, k, d) @ (B, d, 1) -> (B, k, 1) -> (B, k)
    negative_terms = -F.logsigmoid(-negative_scores)  # (B, k)
    if negative_mask is not None:
        if negative_mask.shape != negative_terms.shape:
            raise ValueError(f"negative_mask must have shape {tuple(negative_terms.shape)}, "
                             f"got {tuple(negative_mask.shape)}")
        negative_terms = negative_terms * negative_mask.to(negative_terms.dtype)
    return -F.logsigmoid(positive_score) + negative_terms.sum(dim=-1)


def negative_sampling_loss_as_002_codes(center: int, positive: int, negatives: Sequence[int],
                                        embedding: torch.Tensor) -> torch.Tensor:
    """002's ``negative_sampling_loss``, transcribed: one example, every vector from one table.

    ``embedding (V, d)`` stands for 002's ``embedding(...)`` lookup, which serves the
    centre, the positive and the negatives alike. Returns a 0-d tensor.
    """
    check_table(embedding)
    ids = torch.tensor([center, positive, *negatives], device=embedding.device)
    check_ids(ids, embedding.shape[0])
    center_embed = embedding[center]  # (d,)
    pos_score = torch.dot(center_embed, embedding[positive])
    pos_loss = -F.logsigmoid(pos_score)
    neg_embeds = embedding[ids[2:]]  # (k, d)
    neg_scores = neg_embeds @ center_embed  # (k, d) @ (d,) -> (k,)
    neg_loss = -F.logsigmoid(-neg_scores).sum()
    return pos_loss + neg_loss


@dataclass(frozen=True)
class NegativeSamplingComparison:
    """001's loss (separate input and output tables), 002's coded loss (one table), and whether they agree."""

    loss_001: float
    loss_002: float
    agree: bool


def compare_negative_sampling(center: int, positive: int, negatives: Sequence[int], in_table: torch.Tensor,
                              out_table: torch.Tensor, atol: float = 1e-12) -> NegativeSamplingComparison:
    """Evaluate 001's formula with ``v = in_table``, ``v' = out_table`` and 002's code with ``embedding = in_table``.

    They agree (to ``atol``) when ``out_table`` equals ``in_table`` on the rows used, and
    in general not otherwise: the formula is the same, the vectors are not.
    """
    check_table(in_table)
    if in_table.shape != out_table.shape:
        raise ValueError(f"in_table {tuple(in_table.shape)} and out_table {tuple(out_table.shape)} differ in shape")
    negative_ids = torch.tensor(list(negatives), dtype=torch.int64, device=in_table.device)
    check_ids(negative_ids, in_table.shape[0])
    loss_001 = negative_sampling_loss(in_table[[center]], out_table[[positive]], out_table[negative_ids][None])[0]
    loss_002 = negative_sampling_loss_as_002_codes(center, positive, negatives, in_table)
    return NegativeSamplingComparison(float(loss_001), float(loss_002), abs(float(loss_001 - loss_002)) <= atol)


# --------------------------------------------------------------------------- noise distribution


def noise_distribution(counts: torch.Tensor, exponent: float = 0.75) -> torch.Tensor:
    """``P_n(w) = f(w)^exponent / sum_u f(u)^exponent`` for word counts ``f (V,)``.

    ``exponent = 1`` is the unigram distribution, ``0`` the uniform one (every word, seen
    or not, since ``0^0 = 1``), and 001's ``3/4`` lies between: it raises rare words'
    share at the expense of frequent ones. Returns float64 unless ``counts`` is floating,
    then ``counts``' dtype: half-precision counts are raised and summed in float32 and the
    probabilities rounded once (in float16, ``2048^1.5`` and a sum of counts past 65,504 are
    ``inf``, and ``inf / inf`` is NaN).
    """
    if not isinstance(counts, torch.Tensor) or counts.dim() != 1 or counts.numel() == 0:
        raise ValueError(f"counts must be a non-empty 1-D tensor, got {getattr(counts, 'shape', type(counts))}")
    counts = counts.to(counts.dtype if counts.dtype.is_floating_point else torch.float64)
    if not torch.isfinite(counts).all() or (counts < 0).any():
        raise ValueError("counts must be finite and non-negative")
    if not exponent >= 0:
        raise ValueError(f"exponent must be non-negative, got {exponent}")
    if exponent > 0 and counts.sum() == 0:
        raise ValueError("every count is zero: the noise distribution is undefined")
    wide = torch.promote_types(counts.dtype, torch.float32)  # float16, bfloat16 -> float32
    weights = counts.to(wide).pow(exponent)  # (V,)
    return (weights / weights.sum()).to(counts.dtype)


def sample_negatives(noise: torch.Tensor, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """Word ids drawn with replacement from ``noise (V,)`` into a tensor of ``shape``, on ``noise``' device.

    Drawn on the CPU (the generator's device) so a seed gives the same ids on every device.
    """
    count = 1
    for size in shape:
        count *= size
    ids = torch.multinomial(noise.detach().cpu(), count, replacement=True, generator=generator)  # (count,)
    return ids.reshape(shape).to(noise.device)  # (count,) -> shape


# --------------------------------------------------------------------------- trainer


@dataclass
class Word2VecModel:
    """What :func:`train_word2vec` returns: the vocabulary, both tables and the mean loss of each epoch."""

    vocab: Vocabulary
    input_vectors: torch.Tensor  # (V, d): v, the embeddings
    output_vectors: torch.Tensor  # (V, d): v'
    losses: list[float]

    def vector(self, word: str) -> torch.Tensor:
        """The input vector of ``word`` (a ValueError if it is not in the vocabulary)."""
        return self.input_vectors[self.vocab.id(word)]


def _examples(encoded: list[list[int]], architecture: str, window: int,
              device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(inputs (N, C), mask (N, C), targets (N,))``: skip-gram has ``C = 1`` (the centre)."""
    if architecture == "skipgram":
        pairs = [pair for sentence in encoded for pair in skipgram_pairs(sentence, window)]
        if not pairs:
            raise ValueError("the corpus gives no training pairs: every sentence has fewer than two known words")
        ids = torch.tensor(pairs, dtype=torch.int64, device=device)  # (N, 2): centre, context
        return ids[:, :1], torch.ones_like(ids[:, :1], dtype=torch.bool), ids[:, 1]
    examples = [example for sentence in encoded for example in cbow_examples(sentence, window)]
    if not examples:
        raise ValueError("the corpus gives no training examples: every sentence has fewer than two known words")
    width = max(len(context) for context, _ in examples)
    inputs = torch.zeros(len(examples), width, dtype=torch.int64)
    mask = torch.zeros(len(examples), width, dtype=torch.bool)
    for row, (context, _) in enumerate(examples):
        inputs[row, :len(context)] = torch.tensor(context)
        mask[row, :len(context)] = True
    targets = torch.tensor([centre for _, centre in examples], dtype=torch.int64)
    return inputs.to(device), mask.to(device), targets.to(device)


def sgd_step(loss: torch.Tensor, tables: tuple[torch.Tensor, ...], lr: float) -> float:
    """One step of plain gradient descent on ``tables`` (leaf tensors that require gradients) for
    ``loss``, in place; returns the loss's value."""
    grads = torch.autograd.grad(loss, tables)
    with torch.no_grad():
        for table, grad in zip(tables, grads):
            table -= lr * grad
    return float(loss.detach())


def train_word2vec(sentences: Sequence[Sequence[str]], *, architecture: str = "skipgram", loss: str = "negative",
                   dim: int = 16, window: int = 2, negative: int = 5, epochs: int = 20, lr: float = 0.1,
                   batch_size: int = 16, min_count: int = 1, exponent: float = 0.75, seed: int = 0,
                   dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu",
                   initial: torch.Tensor | None = None, initial_output: torch.Tensor | None = None) -> Word2VecModel:
    """Train word2vec on a small tokenized corpus with mini-batch SGD; deterministic for a ``seed``.

    ``architecture``: ``"skipgram"`` or ``"cbow"``; ``loss``: ``"negative"`` (``negative``
    noise words per example from :func:`noise_distribution` with ``exponent``) or
    ``"softmax"``. Each step minimises the *sum* of the batch's per-example losses, so
    ``lr`` is a per-example learning rate as in word2vec. ``initial`` ``(V, dim)``, if given,
    holds the input vectors training starts from, in the vocabulary's order (:func:`build_vocab`'s),
    in place of the uniform draw (002, "Embedding Initialization": pre-trained vectors fine-tuned);
    the output vectors start at zero, or at ``initial_output`` ``(V, dim)`` (same order) if given. Returns the
    tables and the
    mean per-example loss of each epoch (computed before each batch's update).
    """
    if architecture not in ("skipgram", "cbow"):
        raise ValueError(f"architecture must be 'skipgram' or 'cbow', got {architecture!r}")
    if loss not in ("negative", "softmax"):
        raise ValueError(f"loss must be 'negative' or 'softmax', got {loss!r}")
    for name, value in (("dim", dim), ("epochs", epochs), ("batch_size", batch_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if loss == "negative" and (not isinstance(negative, int) or negative < 1):
        raise ValueError(f"negative must be a positive integer with loss='negative', got {negative!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr}")
    _check_window(window)
    vocab = build_vocab(sentences, min_count)
    encoded = [vocab.encode(sentence, skip_unknown=True) for sentence in sentences]
    inputs, mask, targets = _examples(encoded, architecture, window, device)

    generator = torch.Generator().manual_seed(seed)
    size = len(vocab)
    in_table = ((torch.rand(size, dim, generator=generator, dtype=dtype) - 0.5) / dim).to(device)
    if initial is not None:  # drawn all the same, so that the noise words that follow are the seed's either way
        if tuple(initial.shape) != (size, dim):
            raise ValueError(f"initial must be ({size}, {dim}): one input vector per vocabulary word, "
                             f"got {tuple(initial.shape)}")
        in_table = initial.detach().to(device=device, dtype=dtype).clone()
    out_table = torch.zeros(size, dim, dtype=dtype, device=device)
    if initial_output is not None:
        if tuple(initial_output.shape) != (size, dim):
            raise ValueError(f"initial_output must be ({size}, {dim}): one output vector per vocabulary word, "
                             f"got {tuple(initial_output.shape)}")
        out_table = initial_output.detach().to(device=device, dtype=dtype).clone()
    in_table.requires_grad_(True)
    out_table.requires_grad_(True)
    noise = noise_distribution(vocab.count_tensor(torch.float64), exponent)

    losses = []
    for _ in range(epochs):
        order = torch.randperm(len(targets), generator=generator).to(device)
        total = 0.0
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]  # (b,)
            hidden = cbow_context_mean(inputs[batch], in_table, mask[batch])  # (b, C) -> (b, d); C = 1: the centre
            if loss == "softmax":
                per_example = softmax_loss(hidden, targets[batch], out_table)  # (b,)
            else:
                noise_ids = sample_negatives(noise, (len(batch), negative), generator).to(device)  # (b, k)
                keep = noise_ids != targets[batch][:, None]  # (b, k): skip a negative equal to the positive word
                per_example = negative_sampling_loss(hidden, out_table[targets[batch]], out_table[noise_ids], keep)
            total += sgd_step(per_example.sum(), (in_table, out_table), lr)
        losses.append(total / len(targets))
    return Word2VecModel(vocab, in_table.detach(), out_table.detach(), losses)
