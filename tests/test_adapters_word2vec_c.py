"""The word2vec-c adapter: Mikolov et al.'s ``word2vec.c`` (the ``word2vec`` package's program) behind the protocol.

Its ``train_skipgram`` must answer with the protocol's types and shapes: the corpus's words
seen ``min_count`` times or more, without word2vec.c's line-end token ``"</s>"``, most
frequent first, and a float32 ``(V, dim)`` table. word2vec.c has no seed, so two seeds give
the same vectors (listed in ``deviations.toml``); words it would read back as something else
are refused. Skipped without the package; a program that cannot be found must give an
ImportError that names the package.
"""

from __future__ import annotations

import importlib.util
import os
from collections import Counter

import pytest
import torch

from conftest import run_row
from specformer.protocol import provided_operations

needs_word2vec = pytest.mark.skipif(importlib.util.find_spec("word2vec") is None,
                                    reason="the word2vec package (which compiles word2vec.c) is not installed")

#: A corpus of three lines: counts a 4, b 3, c 2, d 1.
CORPUS = [["a", "b", "a", "c"], ["b", "a", "d"], ["c", "a", "b"]]


@pytest.fixture(scope="module")
def word2vec_c():
    from specformer.adapters.word2vec_c import implementation

    return implementation


@needs_word2vec
def test_word2vec_c_provides_skipgram_training(word2vec_c) -> None:
    assert provided_operations(word2vec_c) == {"train_skipgram"}
    assert word2vec_c.capabilities.dtypes == frozenset({"float32"})


@needs_word2vec
@pytest.mark.parametrize("min_count", [1, 2, 3, 5])
def test_the_vocabulary_is_the_corpus_words_by_count_without_the_line_end(word2vec_c, min_count: int) -> None:
    words, vectors = word2vec_c.train_skipgram(CORPUS, 6, 2, 2, 3, 0, min_count=min_count)
    counts = Counter(w for sentence in CORPUS for w in sentence)
    assert all(isinstance(w, str) for w in words)
    assert words == [w for w in "abcd" if counts[w] >= min_count]  # by count, most frequent first; no "</s>"
    assert vectors.dtype == torch.float32 and vectors.device.type == "cpu"
    assert tuple(vectors.shape) == (len(words), 6)
    assert bool(torch.isfinite(vectors).all())


@needs_word2vec
def test_word2vec_c_has_no_seed(word2vec_c) -> None:
    """The finding ``deviations.toml`` lists: the generators start at 1 and at the thread id, whatever the seed."""
    first = word2vec_c.train_skipgram(CORPUS, 6, 2, 2, 3, 0)
    other = word2vec_c.train_skipgram(CORPUS, 6, 2, 2, 3, 12345)
    assert first[0] == other[0] and torch.equal(first[1], other[1])
    fewer = word2vec_c.train_skipgram(CORPUS, 6, 2, 1, 3, 0)  # one noise word fewer: other draws, other vectors
    assert not torch.equal(first[1], fewer[1])


@needs_word2vec
@pytest.mark.parametrize("word", ["</s>", "", "a b", "a\tb", "a\rb", "a\0b", "x" * 99, "\u00e9" * 50, "\ud800"])
def test_words_word2vec_c_would_misread_are_refused(word2vec_c, word: str) -> None:
    with pytest.raises(ValueError):
        word2vec_c.train_skipgram([["a", word], ["a", "b"]], 4, 2, 2, 1, 0)


@needs_word2vec
@pytest.mark.parametrize(("window", "epochs"), [(0, 1), (2, 0)])
def test_a_window_or_epochs_below_one_are_refused(word2vec_c, window: int, epochs: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        word2vec_c.train_skipgram(CORPUS, 4, window, 2, epochs, 0)


@needs_word2vec
def test_the_longest_word_and_unicode_are_read_whole(word2vec_c) -> None:
    long = "x" * 98
    corpus = [[long, "\u6f22\u5b57", long], ["e\u0301\U0001F600", long, "\u6f22\u5b57"]]
    words, vectors = word2vec_c.train_skipgram(corpus, 4, 2, 2, 1, 0)
    assert words == [long, "\u6f22\u5b57", "e\u0301\U0001F600"]  # seen 3, 2 and 1 times
    assert tuple(vectors.shape) == (3, 4)


@needs_word2vec
def test_the_program_is_found_without_path(monkeypatch) -> None:
    from specformer.adapters.word2vec_c import word2vec_program

    monkeypatch.setenv("PATH", "")
    program = word2vec_program()
    assert os.path.basename(program) == "word2vec" and os.access(program, os.X_OK)


@needs_word2vec
def test_the_report_records_the_packages_version() -> None:
    from specformer.adapters import library
    from specformer.adapters.word2vec_c import WORD2VEC_VERSION

    assert library("word2vec-c") == {"name": "word2vec", "version": WORD2VEC_VERSION}


@needs_word2vec
@pytest.mark.parametrize(("qualname", "outcome"), [
    ("training.the_window_decides_which_contexts_make_words_similar", "pass"),
    ("training.training_is_drawn_from_its_seed_and_uses_its_noise_words", "fail"),
])
def test_word2vec_c_against_the_properties(word2vec_c, qualname: str, outcome: str) -> None:
    row = run_row(qualname, word2vec_c, "float32")
    assert row.outcome == outcome, row.message


def test_a_missing_program_is_named(monkeypatch) -> None:
    import importlib.metadata

    from specformer.adapters.word2vec_c import implementation

    def absent(name: str):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", absent)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ImportError, match="the word2vec-c adapter needs the 'word2vec' package"):
        implementation.train_skipgram(CORPUS, 4, 2, 2, 1, 0)
