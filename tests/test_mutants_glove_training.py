"""Every property of ``properties/embeddings/glove_training.py`` passes the reference's GloVe trainer (returning
``w + w~`` or ``w`` alone) and mittens', and catches a trainer that ignores its seed, one that ignores its window,
looks one further or always uses window 1, one without the weighting function, ones that ignore or invert
``x_max`` or ignore ``alpha``, one that counts ``min_count`` by sentences, one that returns untrained random
vectors, and one whose words and rows are misaligned. Also: the reference trainer lowers its cost and leaves a word
that meets no other at its start, and mittens' weighting and cost pass the weighting and objective properties."""

from __future__ import annotations

import math
from unittest import mock

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.adapters.reference import implementation as reference
from specformer.properties.embeddings import glove_training
from specformer.reference.embeddings import glove_training as trainer
from specformer.reference.embeddings import word2vec

SEEDED = "glove_training.glove_training_is_drawn_from_its_seed"
WINDOWED = "glove_training.the_counts_within_the_window_decide_the_vectors"
WEIGHTED = "glove_training.the_weighting_caps_each_count_at_x_max"
MIN_COUNT = "glove_training.glove_leaves_out_words_seen_fewer_than_min_count_times"
ALL = (SEEDED, WINDOWED, WEIGHTED, MIN_COUNT)


def _glove_with(window=lambda w: w, seed=lambda s: s, x_max=lambda x: x, alpha=lambda a: a):
    """The reference's GloVe trainer with its window, seed, ``x_max`` and ``alpha`` passed through the functions."""

    def train_glove(sentences, dim, window_, epochs, seed_, x_max_=100.0, alpha_=0.75, min_count=1, *,
                    device="cpu"):
        return reference.train_glove(sentences, dim, window(window_), epochs, seed(seed_), x_max(x_max_),
                                     alpha(alpha_), min_count, device=device)

    return train_glove


def _random_glove(sentences, dim, window, epochs, seed, x_max=100.0, alpha=0.75, min_count=1, *, device="cpu"):
    """Wrong: the right vocabulary, vectors drawn from the seed (nothing trained)."""
    words = list(word2vec.build_vocab(sentences, min_count).words)
    return words, torch.randn(len(words), dim, generator=torch.Generator().manual_seed(seed)).to(device)


def _misaligned_glove(sentences, dim, window, epochs, seed, x_max=100.0, alpha=0.75, min_count=1, *, device="cpu"):
    """Wrong: trained correctly, but the words listed in sorted order while the rows keep the frequency order."""
    words, vectors = reference.train_glove(sentences, dim, window, epochs, seed, x_max, alpha, min_count)
    return sorted(words), vectors.to(device)


def _unweighted(x, x_max=100.0, alpha=0.75):
    """Wrong: every pair weighs 1 (no weighting function)."""
    return torch.ones_like(x)


def _unweighted_glove(*args, **kwargs):
    with mock.patch.object(trainer, "glove_weight", _unweighted):
        return reference.train_glove(*args, **kwargs)


def _vocabulary_by_sentences(sentences, min_count=1):
    """Wrong: a word's count is the number of sentences it is in, not its occurrences."""
    return real_build_vocab([sorted(set(s)) for s in sentences], min_count)


def _counts_sentences(*args, **kwargs):
    with mock.patch.object(trainer, "build_vocab", _vocabulary_by_sentences):
        return reference.train_glove(*args, **kwargs)


real_build_vocab = word2vec.build_vocab
FIXED_SEED = Mutant("glove-fixed-seed", train_glove=_glove_with(seed=lambda s: 0))
WINDOW_FIVE = Mutant("glove-ignores-window", train_glove=_glove_with(window=lambda w: 5))
WINDOW_PLUS_ONE = Mutant("glove-window-plus-1", train_glove=_glove_with(window=lambda w: w + 1))
WINDOW_ONE = Mutant("glove-window-1", train_glove=_glove_with(window=lambda w: 1))
X_MAX_100 = Mutant("glove-ignores-x_max", train_glove=_glove_with(x_max=lambda x: 100.0))
X_MAX_INVERTED = Mutant("glove-x_max-inverted", train_glove=_glove_with(x_max=lambda x: 1.0 / x))
ALPHA_FIXED = Mutant("glove-ignores-alpha", train_glove=_glove_with(alpha=lambda a: 0.75))
UNWEIGHTED = Mutant("glove-without-weighting", train_glove=_unweighted_glove)
RANDOM = Mutant("glove-untrained", train_glove=_random_glove)
MISALIGNED = Mutant("glove-words-misaligned", train_glove=_misaligned_glove)
SENTENCE_COUNTS = Mutant("glove-min_count-by-sentences", train_glove=_counts_sentences)


@pytest.mark.parametrize("qualname", ALL)
def test_the_reference_trainer_passes(qualname) -> None:
    row = run_row(qualname, reference, "float32", profile="mutants")
    assert row.outcome == "pass", (qualname, row.outcome, row.message)


def _word_vectors_alone(sentences, dim, window, epochs, seed, x_max=100.0, alpha=0.75, min_count=1, *,
                        device="cpu"):
    """Right too (the protocol allows it): the reference's trained word vectors ``w`` without ``w~``."""
    model = trainer.train_glove(sentences, dim=dim, window=window, epochs=epochs, x_max=x_max, alpha=alpha,
                                min_count=min_count, seed=seed)
    return list(model.vocab.words), model.w.to(device)


@pytest.mark.parametrize("qualname", ALL)
def test_word_vectors_alone_pass(qualname) -> None:
    row = run_row(qualname, Mutant("glove-w-alone", train_glove=_word_vectors_alone), "float32", profile="mutants")
    assert row.outcome == "pass", (qualname, row.outcome, row.message)


def _glove_in_corpus_order(sentences, dim, window, epochs, seed, x_max=100.0, alpha=0.75, min_count=1, *,
                           device="cpu"):
    """Right too, written another way: the counts in a dictionary filled while reading the corpus, the pairs
    visited one at a time in that order, shuffled each epoch by ``random.Random(seed)``, plain AdaGrad (glove.c's
    rule, in Python floats); the vocabulary by count, ties by first appearance; ``w + w~``."""
    import random
    from collections import Counter

    counts = Counter(w for sentence in sentences for w in sentence)
    words = [w for w, n in sorted(counts.items(), key=lambda item: -item[1]) if n >= min_count]  # stable: ties by first
    index = {w: i for i, w in enumerate(words)}
    x: dict[tuple[int, int], float] = {}
    for sentence in sentences:
        ids = [index[w] for w in sentence if w in index]
        for t in range(len(ids)):
            for d in range(1, window + 1):
                if t + d < len(ids):
                    for a, b in ((ids[t], ids[t + d]), (ids[t + d], ids[t])):
                        x[(a, b)] = x.get((a, b), 0.0) + 1.0 / d
    rng = random.Random(seed)
    start = lambda: [(rng.random() - 0.5) / dim for _ in range(dim + 1)]  # noqa: E731 - w and its bias
    w, c = [start() for _ in words], [start() for _ in words]
    gw, gc = [[1.0] * (dim + 1) for _ in words], [[1.0] * (dim + 1) for _ in words]
    entries = list(x.items())
    for _ in range(epochs):
        rng.shuffle(entries)
        for (i, j), count in entries:
            error = sum(w[i][k] * c[j][k] for k in range(dim)) + w[i][dim] + c[j][dim] - math.log(count)
            scaled = min(1.0, (count / x_max) ** alpha) * error
            grad_w = [scaled * c[j][k] for k in range(dim)] + [scaled]
            grad_c = [scaled * w[i][k] for k in range(dim)] + [scaled]
            for k in range(dim + 1):
                w[i][k] -= 0.05 * grad_w[k] / math.sqrt(gw[i][k])
                c[j][k] -= 0.05 * grad_c[k] / math.sqrt(gc[j][k])
                gw[i][k] += grad_w[k] ** 2
                gc[j][k] += grad_c[k] ** 2
    vectors = torch.tensor([[w[i][k] + c[i][k] for k in range(dim)] for i in range(len(words))], dtype=torch.float32)
    return words, vectors.to(device)


@pytest.mark.parametrize("qualname", ALL)
def test_a_trainer_that_visits_its_pairs_in_corpus_order_passes(qualname) -> None:
    """Which equivalent order a trainer visits its pairs in is its own: no property may depend on it."""
    row = run_row(qualname, Mutant("glove-corpus-order", train_glove=_glove_in_corpus_order), "float32",
                  profile="mutants")
    assert row.outcome == "pass", (qualname, row.outcome, row.message)


@pytest.mark.parametrize("qualname", ALL)
def test_mittens_passes(qualname) -> None:
    pytest.importorskip("mittens")
    from specformer.adapters.mittens_glove import implementation as mittens

    row = run_row(qualname, mittens, "float32", profile="mutants")
    assert row.outcome == "pass", (qualname, row.outcome, row.message)


def test_a_trainer_that_ignores_its_seed_is_caught() -> None:
    row = assert_caught(SEEDED, FIXED_SEED, "float32")
    assert "same vectors" in row.message, row.message


def test_a_trainer_with_the_wrong_window_is_caught() -> None:
    for mutant, said in ((WINDOW_FIVE, "farther"), (WINDOW_PLUS_ONE, "farther"), (WINDOW_ONE, "as far as")):
        row = assert_caught(WINDOWED, mutant, "float32")
        assert said in row.message, (mutant.name, row.message)


def test_a_trainer_with_the_wrong_weighting_is_caught() -> None:
    for mutant in (UNWEIGHTED, X_MAX_100, X_MAX_INVERTED, ALPHA_FIXED):
        row = assert_caught(WEIGHTED, mutant, "float32")
        assert "x_max" in row.message or "alpha" in row.message, (mutant.name, row.message)


def test_untrained_vectors_are_caught() -> None:
    assert_caught(WINDOWED, RANDOM, "float32")
    assert_caught(WEIGHTED, RANDOM, "float32")


def test_misaligned_words_are_caught() -> None:
    assert_caught(WEIGHTED, MISALIGNED, "float32")


def test_min_count_by_sentences_is_caught() -> None:
    row = assert_caught(MIN_COUNT, SENTENCE_COUNTS, "float32")
    assert "min_count=2" in row.message, row.message


def test_the_corpora_hold_what_they_are_for() -> None:
    from collections import Counter

    whole, split = glove_training.window_corpora(3)
    counts = [Counter(w for s in corpus for w in s) for corpus in (whole, split)]
    assert counts[0] == counts[1]
    firsts = [list(dict.fromkeys(w for s in corpus for w in s)) for corpus in (whole, split)]
    assert firsts[0] == firsts[1]
    pairs = [[(s[k], s[k + 1]) for s in corpus for k in range(len(s) - 1)] for corpus in (whole, split)]
    assert pairs[0] == pairs[1]  # at window 1 the pairs come in the same order
    frequent, rare, sentences = glove_training.weighting_corpus(3, 5)
    assert sorted(frequent + rare)[:3] == rare and not set(frequent) & set(rare)
    assert all(set(s) <= set(frequent) or set(s) <= set(rare) for s in sentences)


def test_every_glove_training_property_is_covered(properties) -> None:
    mine = {q for q, p in properties.items() if p.module == "glove_training"}
    assert mine == set(ALL), sorted(mine)


def test_the_reference_trainer_fits_the_nonzero_counts_deterministically() -> None:
    sentences = [["a", "b", "c"], ["c", "b", "a"], ["a", "b"], ["d"]]
    model = trainer.train_glove(sentences, dim=4, window=2, epochs=200, seed=3)
    again = trainer.train_glove(sentences, dim=4, window=2, epochs=200, seed=3)
    assert torch.equal(model.vectors, again.vectors) and torch.equal(model.vectors, model.w + model.w_tilde)
    assert model.losses[-1] < model.losses[0] / 5, model.losses[::50]
    # "d" meets no word: its parameters are never visited and keep the starting draw, |entries| <= 0.5 / d
    d = model.vocab.id("d")
    assert float(model.w[d].abs().max()) <= 0.5 / 4 and float(model.w_tilde[d].abs().max()) <= 0.5 / 4
    with pytest.raises(ValueError, match="nothing to fit"):
        trainer.train_glove([["a"], ["b"]], dim=4)


@pytest.mark.parametrize("qualname", ["glove.the_glove_weight_is_min_of_one_and_x_over_x_max_to_the_alpha",
                                      "glove.the_weight_grows_with_the_count_up_to_x_max_and_then_stays_one",
                                      "glove.the_glove_objective_sums_over_the_pairs_that_co_occur"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mittens_weighting_and_cost_pass(qualname, dtype) -> None:
    pytest.importorskip("mittens")
    from specformer.adapters.mittens_glove import implementation as mittens

    row = run_row(qualname, mittens, dtype, profile="mutants")
    assert row.outcome == "pass", (qualname, dtype, row.outcome, row.message)


def test_mittens_cost_is_half_the_objective() -> None:
    pytest.importorskip("mittens")
    from specformer.adapters.mittens_glove import implementation as mittens
    from specformer.reference.embeddings.glove import glove_loss

    generator = torch.Generator().manual_seed(0)
    x = torch.tensor([[0.0, 3.0, 1.0], [3.0, 0.0, 150.0], [1.0, 150.0, 2.0]], dtype=torch.float64)
    w, w_tilde = torch.randn(3, 4, generator=generator, dtype=torch.float64), torch.randn(3, 4, generator=generator,
                                                                                             dtype=torch.float64)
    b, b_tilde = torch.randn(3, generator=generator, dtype=torch.float64), torch.randn(3, generator=generator,
                                                                                       dtype=torch.float64)
    expected = 0.5 * glove_loss(x, w, w_tilde, b, b_tilde)
    torch.testing.assert_close(mittens.glove_loss(x, w, w_tilde, b, b_tilde), expected)
