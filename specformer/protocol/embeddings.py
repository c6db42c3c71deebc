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
* ``euclidean_distance(a, b)``: row-wise ``|a - b|`` of ``a``, ``b`` ``(n, d)``, shape ``(n,)``;
* ``lookup_gradient(ids, table, upstream)``: the gradient of ``sum(table[ids] * upstream)``
  with respect to ``table``, shape ``(V, d)``: zero on rows not looked up, and the sum of
  the upstream rows of every occurrence of an id (repeated ids accumulate);
* ``embedding_init(vocab_size, dim, seed, dtype=...)``: a freshly initialised ``(V, d)``
  table, drawn with ``seed``, as the implementation's embedding layer starts (PyTorch's
  ``nn.Embedding``: independent standard normal entries); the same seed gives the same table,
  another seed another;
* ``tied_logits(hidden, table)``: the output layer tied to the embedding table: scores
  ``hidden (B, d) @ table^T``, shape ``(B, V)``;
* ``skipgram_pairs(ids, window)``: the ``(centre, context)`` training pairs of a text of
  word ids (``list[int]``) for skip-gram with a fixed window: every pair of positions at
  most ``window`` apart, inside the text (no dynamic shrinking of the window);
* ``cbow_examples(ids, window)``: CBOW's ``(context ids, centre id)`` examples, one per
  position with at least one neighbour: the context lists the words at most ``window``
  positions away, in text order, the centre word left out;
* ``skipgram_softmax(centre_ids, in_table, out_table)``: the full softmax for each centre
  id ``(B,)``, shape ``(B, V)``:
    ~~~text
    p(w | w_I) = exp(v'_w . v_I) / sum_u exp(v'_u . v_I)
    ~~~
* ``negative_sampling_loss(centre_ids, context_ids, negative_ids, in_table, out_table)``:
  the loss of each pair, ids ``(B,)``, ``(B,)``, ``(B, k)``; shape ``(B,)``:
    ~~~text
    -log sigma(v'_O . v_I) - sum_k log sigma(-v'_k . v_I)
    ~~~
* ``glove_cooccurrence(ids, vocab_size, window, dtype=..., device=...)``: GloVe's ``(V, V)``
  counts of a text of word ids: every two positions ``1 <= d <= window`` apart add ``1/d`` to
  both ``X[a, b]`` and ``X[b, a]``; its inputs are plain integers, so the device under test
  comes as ``device`` (as ``alibi_bias``'s does);
* ``glove_loss(x, w, w_tilde, b, b_tilde, x_max, alpha)``: GloVe's weighted least-squares
  loss as a 0-d tensor (pairs with ``X_ij = 0`` add nothing):
    ~~~text
    sum_{X_ij > 0} f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2
    ~~~
* ``fasttext_vector(word, words, word_table, ngrams, ngram_table, min_n, max_n)``: the vector
  FastText composes for ``word`` from its own row of ``word_table`` (if ``word`` is in
  ``words``) and the rows of ``ngram_table`` of its n-grams listed in ``ngrams`` (others are
  skipped: a mean divides by the listed n-gram occurrences; a repeated n-gram counts once per
  occurrence; only n-grams of ``min_n`` to ``max_n`` characters are used), shape ``(d,)``. The composition is a convention: ``sum`` (Bojanowski et al.),
  ``mean`` of the word's vector and its n-gram vectors (fastText's and gensim's), or
  ``word_plus_mean`` (the word's vector plus the mean of its n-gram vectors);
* ``train_skipgram(sentences, dim, window, negative, epochs, seed, min_count=1, device=...)``:
  word2vec's skip-gram with negative sampling trained on ``sentences`` (``list[list[str]]``)
  with vectors of ``dim`` entries, a context ``window``, ``negative`` noise words per pair,
  ``epochs`` passes, no subsampling of frequent words and one thread, drawn from ``seed``
  (the same seed gives the same vectors); returns the vocabulary (the words seen at least
  ``min_count`` times, ``list[str]``) and their input vectors ``(V, dim)`` on ``device``, in
  the implementation's own floating dtype (training precision is its choice); the learning
  rate and its schedule are the implementation's own. An optional keyword ``initial``
  (``dict[str, list[float]]``: ``dim`` numbers for every word of the corpus, by word, so the
  vocabulary's order is the implementation's) gives the input vectors training starts from, in
  place of the implementation's own draw; the output vectors start at zero, as in word2vec's C
  code and gensim. A trainer that cannot take it leaves the keyword out of its signature;
* ``train_fasttext(sentences, queries, dim, window, negative, epochs, seed, ...)`` (also
  ``min_n=3``, ``max_n=6``, ``device=...``): FastText's skip-gram with negative sampling (the input vector of a word is
  composed from its own row and its character n-grams of ``min_n`` to ``max_n`` characters),
  trained as ``train_skipgram`` with ``min_count`` 1; returns the vectors of the words
  ``queries`` (``list[str]``, seen in the corpus or not) as the trained model composes them,
  ``(len(queries), dim)`` on ``device``, in its own floating dtype. The queries come with the
  corpus because a call keeps no model between calls, and because fastText and gensim hash
  n-grams into buckets, so no finite n-gram table holds every word's n-grams;
* ``train_glove(sentences, dim, window, epochs, seed, x_max=100.0, alpha=0.75, min_count=1, device=...)``: GloVe
  (Pennington et al., 2014) trained on ``sentences`` (``list[list[str]]``): the vocabulary is the words seen at least
  ``min_count`` times (the others are dropped before the windows are laid), the counts are ``glove_cooccurrence``'s
  (a pair ``d <= window`` positions apart inside a sentence adds ``1/d`` to ``X[a, b]`` and ``X[b, a]``; the corpus
  enters the fit only through the vocabulary, the words' counts and ``X``), and the fit
  minimises ``glove_loss`` with the weighting ``f(x) = min(1, (x / x_max)^alpha)`` over ``epochs`` passes, drawn from
  ``seed`` (the same seed gives the same vectors); returns the vocabulary (``list[str]``) and one vector per word
  ``(V, dim)`` on ``device``, in the implementation's own floating dtype. The vectors are the paper's ``w + w~`` (the
  sum of a word's word and context vectors) or the word vectors ``w`` alone: the properties compare a trainer with
  itself (same seed, other corpora of the same counts met in the same order, other weights), never with fixed
  numbers, so either passes; the optimiser, its rate, the initial draw and the order it visits the pairs in are
  the implementation's own;
* ``token_vectors(text, layer=-1)``: a contextual model the implementation holds, run on
  one text: its tokens (``list[str]``, special tokens included as the model sees them) and
  their vectors ``(len(tokens), d)`` after layer ``layer`` (``0``: the input embeddings,
  before any layer; ``-1``: the last layer). A text longer than the model takes raises
  ``ValueError``; it is never cut silently.

Conventions (:data:`CONVENTIONS`, declared in an adapter's ``capabilities``): ``composition``
(``sum``, ``mean``, ``word_plus_mean``), ``skipgram_window`` (``fixed``, ``dynamic``) and
``cbow_context`` (``without_centre``, ``with_centre``), the constants of two losses,
``glove_loss_factor`` (``1.0``, ``0.5``) and ``negative_sampling_reduction`` (``sum``, ``mean``),
and ``cosine_norm_clamp`` (the eps of a norm clamp, ``0.0`` for none); the properties draw only
what an implementation declares. An adapter declares the dtypes its library takes; inside its
declaration it answers every example. This module declares the operations only; :mod:`specformer.checked.embeddings`
calls them and checks what they return.
"""

from __future__ import annotations

from typing import Protocol

import torch

from specformer.protocol.base import Family, Operation
from specformer.protocol.capabilities import Convention

__all__ = ["CONVENTIONS", "ContextualImplementation", "EmbeddingImplementation", "FAMILY", "TableImplementation",
           "WordVectorPartsImplementation", "WordVectorTrainerImplementation",
           "WordVectorTrainingImplementation"]


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


class WordVectorTrainingImplementation(Protocol):
    """What word2vec, GloVe and FastText compute while they train: examples, scores, losses, compositions."""

    name: str

    def skipgram_pairs(self, ids: list[int], window: int) -> list[tuple[int, int]]:
        """Every ``(ids[t], ids[t + j])`` with ``0 < |j| <= window`` inside the text, each once, in any order
        (the order of training examples is the trainer's; the properties compare them as a multiset)."""
        ...

    def cbow_examples(self, ids: list[int], window: int) -> list[tuple[list[int], int]]:
        """``(context, ids[t])`` for each ``t`` with a neighbour, in any order; the context holds the words of
        ``ids[max(0, t - window):t] + ids[t + 1:t + window + 1]`` in any order (CBOW averages them, and the
        claims say the order cannot matter): near the start of the text the words on the left are fewer
        than ``window``, not none. A text of one word has no neighbour, so it gives no example."""
        ...

    def skipgram_softmax(self, centre_ids: torch.Tensor, in_table: torch.Tensor,
                         out_table: torch.Tensor) -> torch.Tensor:
        """``softmax(in_table[centre_ids] @ out_table^T)`` over the vocabulary: ``(B,)`` -> ``(B, V)``."""
        ...

    def negative_sampling_loss(self, centre_ids: torch.Tensor, context_ids: torch.Tensor,
                               negative_ids: torch.Tensor, in_table: torch.Tensor,
                               out_table: torch.Tensor) -> torch.Tensor:
        """001's negative-sampling loss per pair, ``(B,)``; ``negative_ids (B, k)`` index ``out_table``."""
        ...

    def glove_cooccurrence(self, ids: list[int], vocab_size: int, window: int, *,
                           dtype: torch.dtype = torch.float64, device: str = "cpu") -> torch.Tensor:
        """GloVe's symmetric, ``1/d``-weighted co-occurrence counts ``(V, V)`` in ``dtype`` on ``device``."""
        ...

    def glove_loss(self, x: torch.Tensor, w: torch.Tensor, w_tilde: torch.Tensor, b: torch.Tensor,
                   b_tilde: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
        """GloVe's weighted least-squares loss over the pairs with ``X_ij > 0``, a 0-d tensor."""
        ...

    def fasttext_vector(self, word: str, words: list[str], word_table: torch.Tensor, ngrams: list[str],
                        ngram_table: torch.Tensor, min_n: int = 3, max_n: int = 6) -> torch.Tensor:
        """The composed vector ``(d,)`` of ``word`` (its own row if known, and its n-grams' rows)."""
        ...


class WordVectorTrainerImplementation(Protocol):
    """Static word vectors trained on the caller's corpus: word2vec's and FastText's skip-gram with negative sampling,
    and GloVe."""

    name: str

    def train_skipgram(self, sentences: list[list[str]], dim: int, window: int, negative: int, epochs: int,
                       seed: int, min_count: int = 1, *, device: str = "cpu",
                       initial: dict[str, list[float]] | None = None,
                       initial_output: dict[str, list[float]] | None = None) -> tuple[list[str], torch.Tensor]:
        """Train skip-gram with ``negative`` noise words per pair on ``sentences``, drawn from ``seed``; returns
        the vocabulary (words seen ``min_count`` times or more) and their input vectors ``(V, dim)`` on ``device``.

        No subsampling of frequent words (gensim's ``sample=0``): the corpora are a few hundred
        tokens, where every word is frequent and word2vec's default ``1e-3`` would drop most of them.
        The learning rate and its schedule are the implementation's own.

        ``initial`` (optional; a trainer that cannot start from given vectors does not take it): for every
        word of ``sentences`` its ``dim`` starting input-vector entries (rounded to the training dtype), in
        place of the implementation's own draw; the output vectors start at zero (word2vec's C code, gensim).

        ``initial_output`` (optional, given only with ``initial``; a trainer that cannot start from given output
        vectors does not take it): every word's ``dim`` starting output-vector entries (001's ``v'``, word2vec's
        ``syn1neg`` rows), in place of the zeros.
        """
        ...

    def train_fasttext(self, sentences: list[list[str]], queries: list[str], dim: int, window: int, negative: int,
                       epochs: int, seed: int, min_n: int = 3, max_n: int = 6, *,
                       device: str = "cpu") -> torch.Tensor:
        """Train FastText's skip-gram (words and their ``min_n``..``max_n`` n-grams) on ``sentences``; returns
        the trained model's vectors of ``queries`` (seen or unseen words), ``(len(queries), dim)`` on ``device``.

        No subsampling of frequent words, as for ``train_skipgram`` (fastText's ``t=1``).
        """
        ...

    def train_glove(self, sentences: list[list[str]], dim: int, window: int, epochs: int, seed: int,
                    x_max: float = 100.0, alpha: float = 0.75, min_count: int = 1, *,
                    device: str = "cpu") -> tuple[list[str], torch.Tensor]:
        """Train GloVe on the ``1/d``-weighted symmetric counts of ``sentences`` within ``window`` (windows end
        at a sentence's end), weighting each non-zero count by ``min(1, (x / x_max)^alpha)``, ``epochs`` passes,
        drawn from ``seed``; returns the vocabulary (words seen ``min_count`` times or more) and one vector per
        word ``(V, dim)`` on ``device``: ``w + w~`` (the paper's) or ``w``.
        """
        ...


class TableImplementation(Protocol):
    """An embedding table as a layer: its gradient, its initialiser, its use as a tied output layer, distances."""

    name: str

    def lookup_gradient(self, ids: torch.Tensor, table: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
        """``d/d table`` of ``sum(table[ids] * upstream)``: ``ids (...)``, ``upstream (..., d)``; returns ``(V, d)``."""
        ...

    def embedding_init(self, vocab_size: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """A fresh ``(vocab_size, dim)`` table drawn with ``seed``, in ``dtype``."""
        ...

    def tied_logits(self, hidden: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """The scores of an output layer that shares ``table``: ``hidden (B, d) @ table^T``, ``(B, V)``."""
        ...

    def euclidean_distance(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Row-wise ``|a - b|`` for ``a``, ``b`` ``(n, d)``; returns ``(n,)``."""
        ...


class ContextualImplementation(Protocol):
    """A contextual model: one vector per token, depending on the whole text."""

    name: str

    def token_vectors(self, text: str, layer: int = -1) -> tuple[list[str], torch.Tensor]:
        """The tokens of ``text`` and their vectors ``(len(tokens), d)`` after ``layer`` (0: input embeddings)."""
        ...


#: The conventions an embeddings implementation may declare (``Capabilities.conventions``).
CONVENTIONS: dict[str, Convention] = {
    "composition": Convention(
        values=("sum", "mean", "word_plus_mean"),
        doc="How fasttext_vector combines a word's own row with its n-gram rows: their sum (Bojanowski et "
            "al., 000), their mean (fastText, gensim, 002's prose), or the word's row plus the n-grams' mean "
            "(002's code). An unseen word gets its n-grams' sum, or their mean under the other two."),
    "skipgram_window": Convention(
        values=("fixed", "dynamic"),
        doc="Whether skipgram_pairs pairs every word within the window (fixed, the documents' formula) or "
            "shrinks the window per centre word (dynamic, word2vec's and gensim's sampling). The properties "
            "that count pairs need a fixed window. Undeclared: fixed.",
        default=("fixed",)),
    "skipgram_optimizer": Convention(
        values=("sgd", "adaptive"),
        doc="How train_skipgram moves its tables: by stochastic gradient descent, each step the rate times the "
            "loss's gradient (001's training, word2vec's C code, gensim, fastText; with any schedule, batch or "
            "momentum), or by a per-coordinate adaptive optimiser (Adam, AdaGrad), whose first steps follow the "
            "sign of each coordinate's gradient and not its size. The property that tells skip-gram's update "
            "from CBOW's compares how far two words move on their first steps, which only gradient descent "
            "keeps in proportion; under adaptive it is not applicable. Undeclared: sgd.",
        default=("sgd",)),
    "cbow_context": Convention(
        values=("without_centre", "with_centre"),
        doc="Whether cbow_examples' context leaves the centre word out (the documents) or keeps it. "
            "Undeclared: without_centre.",
        default=("without_centre",)),
    "glove_loss_factor": Convention(
        values=(1.0, 0.5),
        doc="The constant in front of glove_loss: 1, 000's J (the documents'), or 1/2, the cost Stanford's "
            "glove.c computes (1/2 f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2 per pair, whose gradient is "
            "f(X_ij) times the error). A positive constant moves neither J's minimum nor its gradient's "
            "direction; the properties compare with the declared multiple of J. Undeclared: 1.",
        default=(1.0,)),
    "negative_sampling_reduction": Convention(
        values=("sum", "mean"),
        doc="What negative_sampling_loss returns per pair: 001's formula, the 1 + k log-sigmoid terms summed "
            "(sum), or their mean, the formula divided by k + 1 (mean: a binary cross-entropy averaged over the "
            "true word and the k noise words). The constant moves neither the optimum nor the gradient's "
            "direction; the properties compare with the declared multiple. Undeclared: sum.",
        default=("sum",)),
    "cosine_norm_clamp": Convention(
        values=(0.0, 1e-12, 1e-8, 1e-6),
        doc="The eps below which cosine_similarity clamps each row's norm, a . b / (max(|a|, eps) max(|b|, eps)) "
            "(torch.nn.functional.cosine_similarity: 1e-8), or 0.0 for none: 000's formula, a zero row refused "
            "with a ValueError. Under a clamp the properties judge rows whose norms lie above eps, where the "
            "clamp changes nothing, and a zero row may give the clamped formula's 0. Undeclared: 0.0.",
        default=(0.0,)),
    "embedding_init_law": Convention(
        values=("standard-normal", "normal-1/d"),
        doc="The law of embedding_init's entries: independent N(0, 1) (standard-normal: PyTorch's nn.Embedding, "
            "the table 002 starts from) or independent N(0, 1/d) for a table of width d (normal-1/d: a "
            "variance-scaling normal with scale 1 over the fan-in d, as Flax's nn.Embed and "
            "jax.nn.initializers.variance_scaling(1.0, 'fan_in', 'normal') draw it). The properties about the "
            "law judge the declared one: entries divided by its standard deviation must be standard normal. "
            "Undeclared: standard-normal.",
        default=("standard-normal",)),
}

#: The embeddings family, registered in :data:`specformer.protocol.FAMILIES`.
FAMILY = Family("embeddings", (
    Operation("embedding_lookup", EmbeddingImplementation),
    Operation("cosine_similarity", EmbeddingImplementation),
    Operation("cbow_hidden", WordVectorPartsImplementation),
    Operation("noise_distribution", WordVectorPartsImplementation),
    Operation("glove_weight", WordVectorPartsImplementation),
    Operation("char_ngrams", WordVectorPartsImplementation),
    Operation("euclidean_distance", TableImplementation),
    Operation("lookup_gradient", TableImplementation),
    Operation("embedding_init", TableImplementation),
    Operation("tied_logits", TableImplementation),
    Operation("skipgram_pairs", WordVectorTrainingImplementation),
    Operation("cbow_examples", WordVectorTrainingImplementation),
    Operation("skipgram_softmax", WordVectorTrainingImplementation),
    Operation("negative_sampling_loss", WordVectorTrainingImplementation),
    Operation("glove_cooccurrence", WordVectorTrainingImplementation),
    Operation("glove_loss", WordVectorTrainingImplementation),
    Operation("fasttext_vector", WordVectorTrainingImplementation),
    Operation("train_skipgram", WordVectorTrainerImplementation),
    Operation("train_fasttext", WordVectorTrainerImplementation),
    Operation("train_glove", WordVectorTrainerImplementation),
    Operation("token_vectors", ContextualImplementation),
), CONVENTIONS)
