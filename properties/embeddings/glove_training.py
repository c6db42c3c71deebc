"""What a GloVe trainer does with its corpus, its window, its weighting and its seed: ``train_glove``, trained by
the implementation on small synthetic corpora (claims of ``spec/embeddings/glove.md`` and the vocabulary rule of
``word2vec.md``).

GloVe fits ``w_i . w~_j + b_i + b~_j`` to ``log X_ij`` over the pairs that co-occur and gives the pairs that never
do no term at all (000, "Word Embeddings Techniques › GloVe (Global Vectors)"). Its vectors are therefore not
determined by the corpus alone: where the counts leave a direction free, the initial draw stays, and two words
that never share a context are pushed neither together nor apart. On the corpora of
:mod:`.training` (groups of words seen only with their own group's context words, and the analogy grid) the
reference's GloVe puts the words of a group close together (mittens' less so), but the cosine across the groups is
that of two independent draws, and 3CosAdd does not answer the grid's questions; so the margins that skip-gram meets
there are not asked of GloVe (measured in the spec, ``glove.md``, "What GloVe captures").

What every GloVe trainer must do is checked instead by comparing a trainer with itself, never with numbers fixed in
advance: one seed twice gives the same vectors and another seed other ones; two corpora whose counts within the
window are the same and are met in the same order (``x y z`` and ``x y``, ``y z`` at window 1) give the same
vectors, and counts that differ give other ones; the weighting ``f(x) = min(1, (x / x_max)^alpha)`` is 1 for every count at
or above ``x_max``, so the vectors of words whose counts all reach it do not change with ``x_max`` and ``alpha``,
while the vectors of words with smaller counts do; and the vocabulary is the words seen ``min_count`` times or more.
These hold for any trainer whose result depends on the corpus only through its vocabulary (the words and their
counts, in first-appearance order), its counts and its seed, as the protocol's ``train_glove`` defines it, and
whose cost is the paper's sum over pairs (so that the terms of words that never meet do not interact). They do not
check the update rule itself: a trainer that fits ``log(1 + X)`` passes.
"""

from __future__ import annotations

import random
from collections import Counter

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property

from .training import assert_the_vocabulary, group_corpus, threshold_corpora

#: The training budget: dimensions and epochs (more for the weighting property, whose corpus is six words).
DIM, EPOCHS, WEIGHTING_EPOCHS = 8, 20, 50
#: Two trainings that must agree agree to this (one thread: bit-identical in the reference and mittens); two that must
#: not differ somewhere by more than :data:`DIFFERENT`, a hundred times more. Both relative to the largest entry of the
#: vectors compared (a trainer's scale is its own: the reference's vectors stay near its small start after a short
#: training). The smallest relative differences measured where they must differ: another seed, above 1 (reference
#: and mittens); window 2, 0.03 (reference, 40 draws) and 0.08 (mittens, 100); x_max, 0.15 and 0.007 (mittens, 1000
#: draws); alpha, 0.1 and 0.004 (mittens, 1000). mittens' full-batch AdaGrad divides each step by the parameter's
#: own gradient history, so a weight changes its steps little and mostly through its ratio to the other weights.
SAME, DIFFERENT = 1e-6, 1e-4
#: Sentences ``x y z`` of the window corpus.
TRIPLES = 30
#: The weighting corpus: how often the frequent words' sentence is repeated (at least :data:`X_MAX_BETWEEN`), and the
#: ``x_max`` below every count and between the rare and the frequent counts.
FREQUENT, X_MAX_BELOW, X_MAX_BETWEEN = (5, 8), 0.5, 4.0


def _by_word(words: list[str], vectors: torch.Tensor) -> dict[str, torch.Tensor]:
    return {w: vectors[i] for i, w in enumerate(words)}


def _difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], words: list[str] | None = None) -> float:
    """The largest entry of ``|a[w] - b[w]|`` over ``words`` (by default every word of ``a``; ``b`` must list them),
    divided by the largest ``|a[w]|`` or ``|b[w]|`` over them (0 when both are zero)."""
    words = sorted(a) if words is None else words
    missing = sorted(set(words) - set(a) | set(words) - set(b))
    assert not missing, f"two trainings gave different vocabularies: {missing[:5]} missing from one"
    scale = max(max(float(a[w].abs().max()), float(b[w].abs().max())) for w in words)
    gap = max(float((a[w] - b[w]).abs().max()) for w in words)
    return gap / scale if scale > 0 else gap


def _prefixed(words: list[str], sentences: list[list[str]]) -> list[list[str]]:
    """``sentences`` after one one-word sentence per word of ``words``, in that order: the first appearances (and so
    any vocabulary order by count, ties by first appearance) are the same in every corpus built this way."""
    return [[w] for w in words] + sentences


@claim_property("glove.objective", needs=("train_glove",), dtypes=("float32",), max_examples=3)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 2))
def glove_training_is_drawn_from_its_seed(ctx: Context, corpus_seed, seed) -> None:
    """``train_glove`` draws everything random from ``seed`` (the protocol's contract): trained twice with one seed,
    one thread, the vectors agree to :data:`SAME`; trained with ``seed + 1`` they differ by more than
    :data:`DIFFERENT` somewhere (both relative to the vectors' largest entry). Part of
    :func:`.training.group_corpus`, window 2."""
    sentences = group_corpus(corpus_seed).sentences[:40]
    first = _by_word(*ctx.train_glove(sentences, DIM, 2, EPOCHS, seed))
    gap = _difference(first, _by_word(*ctx.train_glove(sentences, DIM, 2, EPOCHS, seed)))
    assert gap <= SAME, f"two trainings with seed {seed} differ by {gap:.3g} (one thread: at most {SAME})"
    gap = _difference(first, _by_word(*ctx.train_glove(sentences, DIM, 2, EPOCHS, seed + 1)))
    assert gap > DIFFERENT, f"seeds {seed} and {seed + 1} give the same vectors (they differ by {gap:.3g})"


def window_corpora(seed: int) -> tuple[list[list[str]], list[list[str]]]:
    """Two corpora over the words of :func:`.training.group_corpus` ``(seed)``, each word counted the same number of
    times and first seen in the same order (:func:`_prefixed`): :data:`TRIPLES` sentences ``x y z`` (each with a
    one-word sentence ``y``), and each ``x y z`` split into ``x y`` and ``y z``. At window 1 both have the same
    counts, their pairs met in the same order; at window 2 the split one lacks the ``1/2`` of each ``(x, z)``.

    Not a sentence and its reverse: their counts are the same, but a trainer may visit the pairs in the order the
    corpus first shows them (a dictionary filled while reading it), and the order of stochastic steps changes the
    vectors it ends with. That counts are symmetric is checked on ``glove_cooccurrence`` (``glove.symmetric``)."""
    rng = random.Random(seed)
    base = group_corpus(seed)
    words = sorted({w for sentence in base.sentences for w in sentence})
    triples = [rng.sample(words, 3) for _ in range(TRIPLES)]
    whole = _prefixed(words, [list(t) for t in triples] + [[t[1]] for t in triples])
    split = _prefixed(words, [s for t in triples for s in ([t[0], t[1]], [t[1], t[2]])])
    return whole, split


@claim_property("glove.symmetric", needs=("train_glove",), dtypes=("float32",), max_examples=3)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 1))
def the_counts_within_the_window_decide_the_vectors(ctx: Context, corpus_seed, seed) -> None:
    """GloVe sees its corpus only through the counts of the pairs at most ``window`` positions apart inside a
    sentence (glove.md: a pair ``d`` apart adding ``1/d``). On :func:`window_corpora`, with one seed: ``x y z`` and
    its split ``x y``, ``y z`` give the same vectors (to :data:`SAME`) at window 1 and different ones (by more than
    :data:`DIFFERENT`) at window 2, where only ``x y z`` pairs ``x`` with ``z``."""
    whole, split = window_corpora(corpus_seed)
    for window in (1, 2):
        trained = _by_word(*ctx.train_glove(whole, DIM, window, EPOCHS, seed))
        gap = _difference(trained, _by_word(*ctx.train_glove(split, DIM, window, EPOCHS, seed)))
        if window == 1:
            assert gap <= SAME, (
                f"at window 1 'x y z' and 'x y', 'y z' have the same counts, yet their vectors differ by {gap:.3g}: "
                "the trainer looks farther than its window (or across sentences)")
        else:
            assert gap > DIFFERENT, (
                f"at window 2 'x y z' pairs x with z and 'x y', 'y z' does not, yet their vectors agree (they differ "
                f"by {gap:.3g}): the trainer does not look as far as its window")


def weighting_corpus(seed: int, repeats: int) -> tuple[list[str], list[str], list[list[str]]]:
    """``(frequent, rare, sentences)``: the three words of one group of :func:`.training.group_corpus` ``(seed)`` in
    the sentence ``p1 p2 p3`` repeated ``repeats`` times (window 1: counts of ``repeats``), and the three words of
    the other group in ``q1 q2`` once, ``q2 q3`` three times and ``q3 q1`` twice (counts 1, 3 and 2). The frequent
    words come first in the vocabulary by count, the rare words first in alphabetical order. The two groups never
    meet. (Each rare word meets the two others with counts whose weights' ratio changes with ``x_max`` and
    ``alpha``: an optimiser that scales each parameter's steps, as AdaGrad does, sees that ratio more than the
    weights' common scale.)"""
    base = group_corpus(seed)
    rare, frequent = sorted(base.groups[0]), sorted(base.groups[1])  # the first group's letters sort first
    sentences = [list(frequent)] * repeats + [[rare[0], rare[1]]] + [[rare[1], rare[2]]] * 3 + [[rare[2], rare[0]]] * 2
    return frequent, rare, sentences


@claim_property("glove.weighting", needs=("train_glove",), dtypes=("float32",), max_examples=3)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 1),
       repeats=st.integers(*FREQUENT))
def the_weighting_caps_each_count_at_x_max(ctx: Context, corpus_seed, seed, repeats) -> None:
    """The weight ``f(x) = min(1, (x / x_max)^alpha)`` of the objective is 1 for every count ``x >= x_max``. On
    :func:`weighting_corpus` at window 1, :data:`WEIGHTING_EPOCHS` epochs, with one seed: ``x_max`` =
    :data:`X_MAX_BELOW` with ``alpha = 3/4`` and half of it with ``alpha = 1`` give every pair weight 1, so the same
    vectors (to :data:`SAME`); ``x_max`` = :data:`X_MAX_BETWEEN` leaves the frequent words' pairs at weight 1 (their
    vectors stay, to :data:`SAME`) and weighs the rare words' pairs less (their vectors move by more than
    :data:`DIFFERENT`), and so does a change of ``alpha`` from 3/4 to 1/4 at that ``x_max``."""
    frequent, rare, sentences = weighting_corpus(corpus_seed, repeats)

    def train(x_max: float, alpha: float) -> dict[str, torch.Tensor]:
        return _by_word(*ctx.train_glove(sentences, DIM, 1, WEIGHTING_EPOCHS, seed, x_max, alpha))

    capped = train(X_MAX_BELOW, 0.75)
    gap = _difference(capped, train(X_MAX_BELOW / 2, 1.0))
    assert gap <= SAME, (f"every count is above x_max = {X_MAX_BELOW} and {X_MAX_BELOW / 2}, so every weight is 1, "
                         f"yet the vectors differ by {gap:.3g}")
    between = train(X_MAX_BETWEEN, 0.75)
    gap = _difference(capped, between, frequent)
    assert gap <= SAME, (
        f"the counts of {frequent} ({repeats}) are above x_max = {X_MAX_BETWEEN} and {X_MAX_BELOW}, so their weights "
        f"are 1 under both and the other words never meet them, yet their vectors differ by {gap:.3g}")
    gap = _difference(capped, between, rare)
    assert gap > DIFFERENT, (
        f"the counts of {rare} (1 to 3) weigh less under x_max = {X_MAX_BETWEEN} than under {X_MAX_BELOW}, yet "
        f"their vectors agree (they differ by {gap:.3g}): the trainer does not weigh its pairs by x_max")
    gap = _difference(between, train(X_MAX_BETWEEN, 0.25), rare)
    assert gap > DIFFERENT, (
        f"the counts of {rare} weigh (x / {X_MAX_BETWEEN})^alpha, other weights under alpha 3/4 and 1/4, yet their "
        f"vectors agree (they differ by {gap:.3g}): the trainer does not use alpha")


@claim_property("word2vec.min-count-threshold", needs=("train_glove",), dtypes=("float32",), max_examples=10)
@given(case=threshold_corpora(), seed=st.integers(0, 2**31 - 1))
@example(case=([["w0", "w1", "w1"], ["w1", "w2", "w2"], ["w0", "w1"]], 2), seed=0)
def glove_leaves_out_words_seen_fewer_than_min_count_times(ctx: Context, case, seed) -> None:
    """The implementation's GloVe trained with ``min_count`` keeps exactly the words seen ``min_count`` times or more
    (occurrences, not sentences: the explicit example's ``w2`` is seen twice, both times in one sentence), each
    once, with one vector each (``glove.c``'s ``-min-count``, word2vec's rule). The corpus's own counts are
    computed here."""
    sentences, min_count = case
    counts = Counter(w for s in sentences for w in s)
    # inside train_glove's domain: some sentence keeps two words, so that there is a count to fit
    while min_count > 1 and not any(sum(counts[w] >= min_count for w in s) >= 2 for s in sentences):
        min_count -= 1
    words, vectors = ctx.train_glove(sentences, DIM, 2, 2, seed, min_count=min_count)
    assert_the_vocabulary(words, sentences, min_count)
    assert tuple(vectors.shape) == (len(words), DIM), f"{tuple(vectors.shape)} vectors for {len(words)} words"
