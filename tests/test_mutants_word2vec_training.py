"""Every property of ``properties/embeddings/training.py`` passes the reference's trainers and catches a
trainer that learns nothing from the contexts, one with no context window, one whose negative-sampling sign
is flipped, one whose words and rows are misaligned, and FastText trainers that give unseen words no n-gram
vector."""

from __future__ import annotations

from unittest import mock

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
FT_FLIPPED = Mutant("fasttext-negative-sign-flipped", train_fasttext=_flipped_fasttext)
FT_NO_NGRAMS = Mutant("fasttext-without-ngrams", train_fasttext=_fasttext_without_ngrams)
FT_UNSEEN = Mutant("fasttext-unseen-ignores-ngrams", train_fasttext=_fasttext_unseen_ignores_ngrams)


def test_the_reference_trainers_pass() -> None:
    for qualname in (SIMILAR, UNSEEN, ANALOGY):
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
    for mutant in (ALL_WORDS, ABOVE_MIN_COUNT):
        row = assert_caught(SIMILAR, mutant, "float32")
        assert "min_count=2" in row.message, row.message


def test_a_trainer_without_analogies_is_caught() -> None:
    for mutant in (RANDOM, NO_WINDOW, FLIPPED, MISALIGNED):
        row = assert_caught(ANALOGY, mutant, "float32")
        assert "::" in row.message, row.message


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
    assert mine == {SIMILAR, UNSEEN, ANALOGY}, sorted(mine)
