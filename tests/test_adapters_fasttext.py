"""The fasttext adapter: fastText's own C++ (the fasttext-community bindings) behind the protocol.

Its n-grams must be the reference's except the bare markers at ``minn = 1`` (fastText
leaves them out), and its word vectors must be the mean of the word's row and its n-gram
rows divided by their norm, which is what ``get_word_vector`` of fasttext-community 0.11.9
returns (listed in ``deviations.toml``). Skipped without the bindings; a missing package
must give an ImportError that names it.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from conftest import run_row
from specformer.protocol import provided_operations
from specformer.reference.embeddings.fasttext import char_ngrams

needs_fasttext = pytest.mark.skipif(importlib.util.find_spec("fasttext") is None,
                                    reason="the fasttext bindings are not installed")


@pytest.fixture(scope="module")
def fasttext():
    from specformer.adapters.fasttext_bindings import implementation

    return implementation


@needs_fasttext
def test_fasttext_provides_ngrams_and_word_vectors(fasttext) -> None:
    assert provided_operations(fasttext) == {"char_ngrams", "fasttext_vector", "train_fasttext"}


@needs_fasttext
@pytest.mark.parametrize("word", ["where", "apple", "a", "e\u0301\U0001F600x", "\u6f22\u5b57", "<>"])
@pytest.mark.parametrize(("min_n", "max_n"), [(3, 3), (3, 6), (2, 7)])
def test_fasttexts_ngrams_are_the_references_from_two_characters_on(fasttext, word: str, min_n: int,
                                                                   max_n: int) -> None:
    assert sorted(fasttext.char_ngrams(word, min_n, max_n)) == sorted(char_ngrams(word, min_n, max_n))


@needs_fasttext
def test_fasttext_leaves_out_the_bare_markers() -> None:
    from specformer.adapters.fasttext_bindings import implementation

    assert implementation.char_ngrams("where", 1, 1) == list("where")
    assert "<" in char_ngrams("where", 1, 1) and ">" in char_ngrams("where", 1, 1)


@needs_fasttext
def test_fasttexts_word_vector_is_the_unit_mean(fasttext) -> None:
    g = torch.Generator().manual_seed(0)
    grams = sorted(set(char_ngrams("cat", 3, 6)) | set(char_ngrams("dog", 3, 6)))
    rows = torch.randn(len(grams), 4, generator=g)
    own = torch.randn(2, 4, generator=g)
    cat = rows[[grams.index(x) for x in char_ngrams("cat", 3, 6)]]
    dog = rows[[grams.index(x) for x in char_ngrams("dog", 3, 6)]]
    known = (own[0] + cat.sum(0)) / (len(cat) + 1)
    unseen = dog.mean(0)
    torch.testing.assert_close(fasttext.fasttext_vector("cat", ["cat", "bird"], own, grams, rows, 3, 6),
                               known / known.norm())
    torch.testing.assert_close(fasttext.fasttext_vector("dog", ["cat", "bird"], own, grams, rows, 3, 6),
                               unseen / unseen.norm())


@needs_fasttext
def test_fasttext_converts_float64_and_takes_whitespace_and_empty_words(fasttext) -> None:
    rows = torch.arange(6, dtype=torch.float64).reshape(3, 2) + 1
    vector = fasttext.fasttext_vector("cat", [], rows[:0], ["<ca", "cat", "at>"], rows, 3, 3)
    assert vector.dtype == torch.float64
    mean = rows.mean(0)
    torch.testing.assert_close(vector, mean / mean.norm(), rtol=1e-6, atol=1e-7)
    assert sorted(fasttext.char_ngrams("a b", 2, 3)) == sorted(char_ngrams("a b", 2, 3))
    assert fasttext.char_ngrams("", 2, 2) == ["<>"]


@needs_fasttext
def test_fasttext_declares_the_mean(fasttext) -> None:
    assert fasttext.capabilities.conventions["composition"] == frozenset({"mean"})


@needs_fasttext
@pytest.mark.parametrize(("qualname", "dtype", "outcome"), [
    ("fasttext.the_documents_trigrams_of_apple_and_where", "float64", "pass"),
    ("fasttext.the_implementation_composes_with_one_of_the_three_readings", "float32", "fail"),
    ("fasttext.the_implementation_composes_with_one_of_the_three_readings", "float64", "fail"),
    ("fasttext.an_unseen_word_gets_the_vector_of_its_ngrams", "float32", "fail"),
])
def test_fasttext_against_the_properties(fasttext, qualname: str, dtype: str, outcome: str) -> None:
    row = run_row(qualname, fasttext, dtype)
    assert row.outcome == outcome, row.message


def test_a_missing_fasttext_is_named(monkeypatch) -> None:
    from specformer.adapters.fasttext_bindings import _ngram_model, implementation

    _ngram_model.cache_clear()
    monkeypatch.setitem(sys.modules, "fasttext", None)
    with pytest.raises(ImportError, match="the fasttext adapter needs the 'fasttext-community' package"):
        implementation.char_ngrams("where", 3, 4)
