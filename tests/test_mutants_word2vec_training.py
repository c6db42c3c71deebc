"""Every property of ``properties/embeddings/training.py`` passes the reference's trainers and catches a
trainer that learns nothing from the contexts, one with no context window or the wrong one, one whose
negative-sampling sign is flipped, one without noise words (a full softmax), one that ignores its seed,
ones that miscount ``min_count``, one whose words and rows are misaligned, one that returns its output
vectors and one that ignores the initial vectors it is given, and
FastText trainers that give unseen words no n-gram vector, ignore their seed, their n-gram lengths or the
boundary markers, or drop rare words."""

from __future__ import annotations

from unittest import mock

import pytest

import torch
import torch.nn.functional as F

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.adapters.reference import implementation as reference
from specformer.properties.embeddings import training
from specformer.reference.embeddings import fasttext_training, word2vec

SIMILAR = "training.words_trained_in_the_same_contexts_end_closer_than_words_of_other_contexts"
UNSEEN = "training.an_unseen_word_trains_closer_to_the_words_whose_ngrams_it_shares"
ANALOGY = "training.analogies_emerge_when_the_implementation_trains_on_a_grid_of_contexts"
SEEDED = "training.training_is_drawn_from_its_seed_and_uses_its_noise_words"
FT_SEEDED = "training.fasttext_training_is_drawn_from_its_seed"
WINDOWED = "training.the_window_decides_which_contexts_make_words_similar"
NGRAM_RANGE = "training.fasttext_composes_words_from_the_ngram_lengths_it_is_given"


def _vocabulary(sentences: list[list[str]]) -> list[str]:
    return list(word2vec.build_vocab(sentences).words)


def _random_skipgram(sentences, dim, window, negative, epochs, seed, min_count=1, *, device="cpu"):
    """Wrong: vectors drawn from the seed, whatever the contexts (nothing learnt)."""
    words = _vocabulary(sentences)
    return words, torch.randn(len(words), dim, generator=torch.Generator().manual_seed(seed)).to(device)


def _no_window_skipgram(sentences, dim, window, negative, epochs, seed, min_count=1, *, device="cpu"):
    """Wrong: a window of 0 gives no pairs, so the vectors stay at word2vec's initial ``[-0.5/d, 0.5/d]``."""
    words = _vocabulary(sentences)
    generator = torch.Generator().manual_seed(seed)
    return words, ((torch.rand(len(words), dim, generator=generator) - 0.5) / dim).to(device)


def _misaligned_skipgram(sentences, dim, window, negative, epochs, seed, min_count=1, *, device="cpu"):
    """Wrong: trained correctly, but the words listed in sorted order while the rows keep the frequency order."""
    words, vectors = reference.train_skipgram(sentences, dim, window, negative, epochs, seed, min_count)
    return sorted(words), vectors.to(device)


def _flipped_loss(hidden, positive, negatives, negative_mask=None):
    """Wrong: the noise words' term with the sign of the true word's, ``-log sigma(+v'_k . h)``."""
    scores = (negatives @ hidden[:, :, None])[:, :, 0]  # (B, k, d) @ (B, d, 1) -> (B, k)
    terms = -F.logsigmoid(scores)
    if negative_mask is not None:
        terms = terms * negative_mask.to(terms.dtype)
    return -F.logsigmoid((hidden * positive).sum(dim=-1)) + terms.sum(dim=-1)


def _flipped_skipgram(*args, **kwargs):
    with mock.patch.object(word2vec, "negative_sampling_loss", _flipped_loss):
        return reference.train_skipgram(*args, **kwargs)


def _flipped_fasttext(*args, **kwargs):
    with mock.patch.object(fasttext_training, "negative_sampling_loss", _flipped_loss):
        return reference.train_fasttext(*args, **kwargs)


def _fasttext_without_ngrams(sentences, queries, dim, window, negative, epochs, seed, min_n=3, max_n=6, *,
                             device="cpu"):
    """Wrong: word2vec's skip-gram (no n-grams); an unseen word gets the zero vector (gensim's for no n-gram)."""
    words, vectors = reference.train_skipgram(sentences, dim, window, negative, epochs, seed)
    rows = [vectors[words.index(q)] if q in words else torch.zeros(dim) for q in queries]
    return torch.stack(rows).to(device)


def _fasttext_unseen_ignores_ngrams(sentences, queries, dim, window, negative, epochs, seed, min_n=3, max_n=6, *,
                                    device="cpu"):
    """Wrong: trained with n-grams, but an unseen word gets a vector drawn from the seed, not its n-grams'."""
    vectors = reference.train_fasttext(sentences, queries, dim, window, negative, epochs, seed, min_n, max_n)
    seen = {w for s in sentences for w in s}
    generator = torch.Generator().manual_seed(seed)
    rows = [v if q in seen else torch.randn(dim, generator=generator) for q, v in zip(queries, vectors)]
    return torch.stack(rows).to(device)


def _ignores_min_count(sentences, dim, window, negative, epochs, seed, min_count=1, *, device="cpu"):
    """Wrong: every word kept, whatever ``min_count`` says."""
    return reference.train_skipgram(sentences, dim, window, negative, epochs, seed, 1, device=device)


def _above_min_count(sentences, dim, window, negative, epochs, seed, min_count=1, *, device="cpu"):
    """Wrong: keeps the words seen more than ``min_count`` times, not ``min_count`` or more."""
    return reference.train_skipgram(sentences, dim, window, negative, epochs, seed, min_count + 1, device=device)


RANDOM = Mutant("skipgram-ignores-contexts", train_skipgram=_random_skipgram)
NO_WINDOW = Mutant("skipgram-window-0", train_skipgram=_no_window_skipgram)
FLIPPED = Mutant("skipgram-negative-sign-flipped", train_skipgram=_flipped_skipgram)
MISALIGNED = Mutant("skipgram-words-misaligned", train_skipgram=_misaligned_skipgram)
ALL_WORDS = Mutant("skipgram-ignores-min_count", train_skipgram=_ignores_min_count)
ABOVE_MIN_COUNT = Mutant("skipgram-min_count-exclusive", train_skipgram=_above_min_count)


def _skipgram_with(window=lambda w: w, seed=lambda s: s, **overrides):
    """The reference's skip-gram trainer with its window and seed passed through the given functions and
    ``train_word2vec``'s other arguments overridden."""

    def train_skipgram(sentences, dim, window_, negative, epochs, seed_, min_count=1, *, device="cpu"):
        arguments = dict(architecture="skipgram", loss="negative", dim=dim, window=window(window_), negative=negative,
                         epochs=epochs, min_count=min_count, seed=seed(seed_), dtype=torch.float32)
        model = word2vec.train_word2vec(sentences, **{**arguments, **overrides})
        return list(model.vocab.words), model.input_vectors.to(device)

    return train_skipgram


def _vocabulary_by_sentences(sentences, min_count=1):
    """Wrong: a word's count is the number of sentences it is in, not its occurrences."""
    return real_build_vocab([sorted(set(s)) for s in sentences], min_count)


def _counts_sentences(*args, **kwargs):
    with mock.patch.object(word2vec, "build_vocab", _vocabulary_by_sentences):
        return reference.train_skipgram(*args, **kwargs)


def _fasttext_with(min_n=None, max_n=None, seed=None, min_count=1):
    """The reference's FastText trainer with the n-gram range, the seed or ``min_count`` replaced."""

    def train_fasttext(sentences, queries, dim, window, negative, epochs, seed_, min_n_=3, max_n_=6, *,
                       device="cpu"):
        lo, hi = (min_n_, max_n_) if min_n is None else (min_n(min_n_), max_n(max_n_))
        model = fasttext_training.train_fasttext(sentences, dim=dim, window=window, negative=negative, epochs=epochs,
                                                 min_n=lo, max_n=hi, min_count=min_count,
                                                 seed=seed_ if seed is None else seed)
        return torch.stack([model.vector(word) for word in queries]).to(device)  # (Q, d)

    return train_fasttext


def _unmarked_ngrams(word, min_n=3, max_n=6):
    """Wrong: the n-grams of the bare word, without ``<`` and ``>``."""
    return [word[i:i + n] for n in range(min_n, max_n + 1) for i in range(len(word) - n + 1)]


def _fasttext_unmarked(*args, **kwargs):
    with mock.patch.object(fasttext_training, "char_ngrams", _unmarked_ngrams):
        return reference.train_fasttext(*args, **kwargs)


real_build_vocab = word2vec.build_vocab
FIXED_SEED = Mutant("skipgram-fixed-seed", train_skipgram=_skipgram_with(seed=lambda s: 0))
WINDOW_FIVE = Mutant("skipgram-ignores-window", train_skipgram=_skipgram_with(window=lambda w: 5))
WINDOW_PLUS_ONE = Mutant("skipgram-window-plus-1", train_skipgram=_skipgram_with(window=lambda w: w + 1))
WINDOW_ONE = Mutant("skipgram-window-1", train_skipgram=_skipgram_with(window=lambda w: 1))
SENTENCE_COUNTS = Mutant("skipgram-min_count-by-sentences", train_skipgram=_counts_sentences)
FULL_SOFTMAX = Mutant("skipgram-full-softmax", train_skipgram=_skipgram_with(loss="softmax"))
FT_FIXED_SEED = Mutant("fasttext-fixed-seed", train_fasttext=_fasttext_with(seed=0))
FT_DEFAULT_RANGE = Mutant("fasttext-ignores-min_n-max_n", train_fasttext=_fasttext_with(lambda n: 3, lambda n: 6))
FT_MAX_N_MINUS_ONE = Mutant("fasttext-max_n-minus-1", train_fasttext=_fasttext_with(lambda n: n, lambda n: n - 1))
FT_MIN_COUNT_5 = Mutant("fasttext-min_count-5", train_fasttext=_fasttext_with(min_count=5))
FT_UNMARKED = Mutant("fasttext-without-boundary-markers", train_fasttext=_fasttext_unmarked)
FT_FLIPPED = Mutant("fasttext-negative-sign-flipped", train_fasttext=_flipped_fasttext)
FT_NO_NGRAMS = Mutant("fasttext-without-ngrams", train_fasttext=_fasttext_without_ngrams)
FT_UNSEEN = Mutant("fasttext-unseen-ignores-ngrams", train_fasttext=_fasttext_unseen_ignores_ngrams)


def test_the_reference_trainers_pass() -> None:
    for qualname in (SIMILAR, UNSEEN, ANALOGY, SEEDED, FT_SEEDED, WINDOWED, NGRAM_RANGE):
        row = run_row(qualname, reference, "float32", profile="mutants")
        assert row.outcome == "pass", (qualname, row.outcome, row.message)


def test_a_trainer_that_ignores_the_contexts_is_caught() -> None:
    assert_caught(SIMILAR, RANDOM, "float32")


def test_a_trainer_without_a_window_is_caught() -> None:
    assert_caught(SIMILAR, NO_WINDOW, "float32")


def test_a_trainer_with_the_negative_sign_flipped_is_caught() -> None:
    assert_caught(SIMILAR, FLIPPED, "float32")
    assert_caught(UNSEEN, FT_FLIPPED, "float32")


def test_a_trainer_that_miscounts_min_count_is_caught() -> None:
    for mutant in (ALL_WORDS, ABOVE_MIN_COUNT, SENTENCE_COUNTS):
        row = assert_caught(SIMILAR, mutant, "float32")
        assert "min_count=2" in row.message, row.message


def test_a_trainer_without_analogies_is_caught() -> None:
    for mutant in (RANDOM, NO_WINDOW, FLIPPED, MISALIGNED):
        row = assert_caught(ANALOGY, mutant, "float32")
        assert "::" in row.message, row.message


def test_a_trainer_that_ignores_its_seed_is_caught() -> None:
    row = assert_caught(SEEDED, FIXED_SEED, "float32")
    assert "same vectors" in row.message, row.message
    row = assert_caught(FT_SEEDED, FT_FIXED_SEED, "float32")
    assert "same vectors" in row.message, row.message


def test_a_trainer_without_noise_words_is_caught() -> None:
    row = assert_caught(SEEDED, FULL_SOFTMAX, "float32")
    assert "noise words" in row.message, row.message


def test_a_trainer_with_the_wrong_window_is_caught() -> None:
    for mutant, said in ((WINDOW_FIVE, "farther"), (WINDOW_PLUS_ONE, "farther"), (WINDOW_ONE, "at window 2")):
        row = assert_caught(WINDOWED, mutant, "float32")
        assert said in row.message, (mutant.name, row.message)


def test_fasttext_with_the_wrong_ngrams_or_vocabulary_is_caught() -> None:
    for mutant in (FT_DEFAULT_RANGE, FT_MAX_N_MINUS_ONE, FT_MIN_COUNT_5, FT_UNMARKED):
        assert_caught(NGRAM_RANGE, mutant, "float32")


def test_the_window_and_ngram_corpora_hold_what_they_are_for() -> None:
    corpus = training.window_corpus(5)
    for sentence in corpus.sentences:
        assert len(sentence) == 5 and sentence[1] in training.FILLERS and sentence[3] in training.FILLERS
        g = 0 if sentence[2] in corpus.groups[0] else 1
        assert sentence[2] in corpus.groups[g] and not {sentence[0], sentence[4]} & set(training.FILLERS)
    ngrams = training.ngram_corpus(5)
    seen = {w for s in ngrams.sentences for w in s}
    for g in range(2):
        bigrams = set().union(*(training._marked_grams(w, 2) for w in ngrams.groups[g]))
        trigrams = set().union(*(training._marked_grams(w, 3) for w in ngrams.groups[g]))
        assert training._marked_grams(ngrams.unseen[g], 2) <= bigrams and ngrams.unseen[g] not in seen
        assert not training._marked_grams(ngrams.unseen[g], 3) & trigrams
        assert {f"<{ngrams.letters[g]}", f"{ngrams.letters[g]}>"} <= bigrams and ngrams.letters[g] not in seen
        assert sum(s.count(ngrams.rare[g]) for s in ngrams.sentences) == training.RARE_SEEN
    assert training.ngram_corpus(5) == ngrams and training.ngram_corpus(6) != ngrams


def test_fasttext_without_ngrams_for_unseen_words_is_caught() -> None:
    row = assert_caught(UNSEEN, FT_NO_NGRAMS, "float32")
    assert "zero" in row.message, row.message
    assert_caught(UNSEEN, FT_UNSEEN, "float32")


def test_the_corpus_keeps_the_groups_apart() -> None:
    corpus = training.group_corpus(7)
    for sentence in corpus.sentences:
        g = 0 if sentence[1] in corpus.groups[0] else 1
        assert sentence[1] in corpus.groups[g] and len(sentence) == 3
        assert all(set(c).isdisjoint(set("".join(corpus.groups[1 - g]))) for c in (sentence[0], sentence[2]))
    assert not set(corpus.unseen) & {w for s in corpus.sentences for w in s}
    assert training.group_corpus(7) == corpus and training.group_corpus(8) != corpus


def test_the_grid_corpus_gives_each_word_its_row_and_column_contexts() -> None:
    corpus = training.grid_corpus(11)
    where = {w: rc for rc, w in corpus.words.items()}
    assert len(where) == training.ROWS * training.COLUMNS
    seen: dict[str, set[str]] = {}
    for sentence in corpus.sentences:
        assert len(sentence) == 3 and sentence[1] in where
        seen.setdefault(sentence[1], set()).update((sentence[0], sentence[2]))
    for (r, c), word in corpus.words.items():
        same_row = {x for (r2, _), w in corpus.words.items() if r2 == r for x in seen[w]}
        same_column = {x for (_, c2), w in corpus.words.items() if c2 == c for x in seen[w]}
        assert seen[word] == (same_row & same_column), word  # its contexts: its row's and its column's, no other
    assert training.grid_corpus(11) == corpus and training.grid_corpus(12) != corpus


def test_every_training_property_is_covered(properties) -> None:
    mine = {q for q, p in properties.items() if p.module == "training"}
    assert mine == {SIMILAR, UNSEEN, ANALOGY, SEEDED, FT_SEEDED, WINDOWED, NGRAM_RANGE, MIN_COUNT, STARTED}, \
        sorted(mine)


# --- word2vec.min-count-threshold ------------------------------------------------------------------

MIN_COUNT = "training.words_seen_fewer_than_min_count_times_are_left_out"


def _keeps_every_word(sentences, dim, window, negative, epochs, seed, min_count=1, *, device="cpu"):
    """Wrong: ignores min_count."""
    from specformer.adapters.reference import implementation

    return implementation.train_skipgram(sentences, dim, window, negative, epochs, seed, 1, device=device)


def _strictly_above(sentences, dim, window, negative, epochs, seed, min_count=1, *, device="cpu"):
    """Wrong: keeps the words seen more than min_count times (> instead of >=)."""
    from specformer.adapters.reference import implementation

    return implementation.train_skipgram(sentences, dim, window, negative, epochs, seed, min_count + 1, device=device)


@pytest.mark.parametrize("mutant", [Mutant("min-count-ignored", train_skipgram=_keeps_every_word),
                                    Mutant("min-count-strict", train_skipgram=_strictly_above)],
                         ids=lambda m: m.name)
def test_the_threshold_catches_a_wrong_vocabulary(mutant) -> None:
    row = assert_caught(MIN_COUNT, mutant, "float32")
    assert "min_count" in row.message, row


def test_the_threshold_passes_the_reference() -> None:
    from specformer.adapters.reference import implementation

    assert run_row(MIN_COUNT, implementation, "float32").outcome == "pass"


# --- the vectors returned are the input vectors ----------------------------------------------------------------

STARTED = "training.a_short_training_returns_vectors_near_the_input_vectors_it_started_from"


def _started_skipgram(lr=0.1, reverse=False, returned="input"):
    """The reference's skip-gram trainer started from ``initial`` at rate ``lr``; the vocabulary listed in reverse
    with ``reverse``; ``returned``: ``"input"`` (right), ``"output"`` or ``"drawn"`` (``initial`` ignored)."""

    def train_skipgram(sentences, dim, window, negative, epochs, seed, min_count=1, *, device="cpu", initial=None):
        words = list(word2vec.build_vocab(sentences, min_count).words)
        table = None
        if initial is not None and returned != "drawn":
            table = torch.tensor([initial[w] for w in words], dtype=torch.float64)  # (V, dim)
        model = word2vec.train_word2vec(sentences, dim=dim, window=window, negative=negative, epochs=epochs,
                                        min_count=min_count, seed=seed, lr=lr, dtype=torch.float32, initial=table)
        vectors = model.output_vectors if returned == "output" else model.input_vectors
        if reverse:
            return words[::-1], vectors.flip(0).to(device)  # (V, d), rows in the reversed order
        return words, vectors.to(device)

    return train_skipgram


OUTPUT_VECTORS = Mutant("skipgram-returns-output-vectors", train_skipgram=_started_skipgram(returned="output"))
IGNORES_INITIAL = Mutant("skipgram-ignores-initial", train_skipgram=_started_skipgram(returned="drawn"))


def test_a_trainer_that_returns_its_output_vectors_is_caught() -> None:
    for mutant in (OUTPUT_VECTORS, IGNORES_INITIAL):
        row = assert_caught(STARTED, mutant, "float32")
        assert "started from" in row.message, (mutant.name, row.message)


def test_trainers_started_from_given_vectors_pass_at_their_own_rate_and_order() -> None:
    row = run_row(STARTED, reference, "float32", profile="mutants")
    assert row.outcome == "pass" and row.examples_checked > 0, (row.outcome, row.message)
    for lr, reverse in ((0.05, True), (0.01, True), (0.3, False)):
        right = Mutant(f"skipgram-rate-{lr}", train_skipgram=_started_skipgram(lr=lr, reverse=reverse))
        row = run_row(STARTED, right, "float32", profile="mutants")
        assert row.outcome == "pass", (lr, row.outcome, row.message)


def test_gensim_started_from_given_vectors_passes() -> None:
    pytest.importorskip("gensim")
    from specformer.adapters.gensim_parts import implementation as gensim

    row = run_row(STARTED, gensim, "float32", profile="mutants")
    assert row.outcome == "pass", (row.outcome, row.message)


def test_a_trainer_without_initial_is_not_applicable() -> None:
    row = run_row(STARTED, MISALIGNED, "float32", profile="mutants")
    assert row.outcome == "not-applicable" and "initial" in row.message, (row.outcome, row.message)


def test_the_start_corpus_has_every_word_in_every_sentence() -> None:
    sentences = training.start_corpus(3)
    assert len(sentences) == training.START_SENTENCES
    assert all(sorted(s) == sorted(sentences[0]) and len(set(s)) == training.START_WORDS for s in sentences)
    assert training.start_corpus(3) == sentences and training.start_corpus(4) != sentences
