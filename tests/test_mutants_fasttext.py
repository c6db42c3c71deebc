"""Every property of ``properties/embeddings/fasttext.py`` catches wrong n-grams or a mis-statement of
how a word's vector is composed."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.embeddings import fasttext
from specformer.reference.embeddings.fasttext import compose


def _ngrams(marked: bool = True, lengths: str = "all", distinct: bool = False):
    def char_ngrams(word, min_n=3, max_n=6):
        s = f"<{word}>" if marked else word
        top = min_n if lengths == "min" else max_n
        grams = [s[i:i + n] for n in range(min_n, top + 1) for i in range(len(s) - n + 1)]
        return list(dict.fromkeys(grams)) if distinct else grams

    return char_ngrams


NO_MARKERS = Mutant("ngrams-without-boundary-markers", char_ngrams=_ngrams(marked=False))
ONE_LENGTH = Mutant("ngrams-of-min_n-only", char_ngrams=_ngrams(lengths="min"))
DISTINCT = Mutant("ngrams-as-a-set", char_ngrams=_ngrams(distinct=True))

NGRAMS = "fasttext.the_ngrams_are_the_substrings_of_the_marked_word"
DOCUMENTED = "fasttext.the_documents_trigrams_of_apple_and_where"
COMPOSITION = "fasttext.the_three_readings_agree_on_direction_only_for_unseen_words"
GENSIM = "fasttext.gensim_averages_the_ngram_vectors"
MORPHOLOGY = "fasttext.on_gensims_shipped_model_words_sharing_ngrams_are_closer_than_unrelated_words"

IMPLEMENTATION_COMPOSES = "fasttext.the_implementation_composes_with_one_of_the_three_readings"
MISSING = "fasttext.ngrams_missing_from_the_table_are_left_out"
UNSEEN = "fasttext.an_unseen_word_gets_the_vector_of_its_ngrams"
SHIPPED_MISSPELLINGS = "fasttext.gensims_fasttext_places_a_misspelling_near_its_word_where_word2vec_has_none"


def _vector_with(how, grams_of=None, mixed=False):
    """A ``fasttext_vector`` composing by ``how`` (or by a reading that depends on the word when ``mixed``)."""
    from specformer.properties.embeddings.fasttext import composed, ngrams_written_out

    def vector(word, words, word_table, ngrams, ngram_table, min_n=3, max_n=6):
        own = word_table[words.index(word)] if word in words else None
        grams = (grams_of or ngrams_written_out)(word, min_n, max_n)
        rows = [ngrams.index(g) for g in grams if g in ngrams]
        reading = ("sum" if len(word) % 2 else "mean") if mixed else how
        return composed(own, ngram_table[rows], reading)

    return vector


def _no_boundary_grams(word, min_n, max_n):
    """Wrong: the n-grams of the bare word, without ``<`` and ``>``."""
    return [word[i:i + n] for n in range(min_n, max_n + 1) for i in range(len(word) - n + 1)]


def _ignores_own_row(word, words, word_table, ngrams, ngram_table, min_n=3, max_n=6):
    """Wrong: a known word's own row is left out (its n-grams' mean only)."""
    return _vector_with("mean")(word, [], word_table, ngrams, ngram_table, min_n, max_n)


def _first_ngram_only(word, words, word_table, ngrams, ngram_table, min_n=3, max_n=6):
    """Wrong: only the word's first n-gram (plus its own row, averaged)."""
    from specformer.properties.embeddings.fasttext import composed, ngrams_written_out

    own = word_table[words.index(word)] if word in words else None
    first = ngrams.index(ngrams_written_out(word, min_n, max_n)[0])
    return composed(own, ngram_table[[first]], "mean")


def _distinct_grams(word, min_n, max_n):
    """Wrong: each n-gram once (a de-duplicating sum: "aaa" counts once in "<aaaa>")."""
    from specformer.properties.embeddings.fasttext import ngrams_written_out

    return list(dict.fromkeys(ngrams_written_out(word, min_n, max_n)))


def _every_length_from_min_n(word, min_n, max_n):
    """Wrong: max_n ignored, every n-gram from min_n up to the whole marked word."""
    from specformer.properties.embeddings.fasttext import ngrams_written_out

    return ngrams_written_out(word, min_n, len(word) + 2)


def _default_max_n(word, min_n, max_n):
    """Wrong: max_n not passed on, fastText's default 6 used instead."""
    from specformer.properties.embeddings.fasttext import ngrams_written_out

    return ngrams_written_out(word, min_n, 6)


def _missing_as_zero_rows(word, words, word_table, ngrams, ngram_table, min_n=3, max_n=6):
    """Wrong per the protocol: an n-gram the table lacks counts as a zero row, so the mean divides by all of the
    word's n-grams (v + sum of the listed rows) / (1 + all n-grams) instead of skipping it."""
    from specformer.properties.embeddings.fasttext import ngrams_written_out

    own = word_table[words.index(word)] if word in words else None
    grams = ngrams_written_out(word, min_n, max_n)
    total = sum((ngram_table[ngrams.index(g)] for g in grams if g in ngrams), torch.zeros_like(ngram_table[0]))
    return total / len(grams) if own is None else (own + total) / (len(grams) + 1)


def _missing_as_last_row(word, words, word_table, ngrams, ngram_table, min_n=3, max_n=6):
    """Wrong: a missing n-gram's index defaults to -1, so the table's last row stands in for it."""
    from specformer.properties.embeddings.fasttext import composed, ngrams_written_out

    own = word_table[words.index(word)] if word in words else None
    rows = [ngrams.index(g) if g in ngrams else -1 for g in ngrams_written_out(word, min_n, max_n)]
    return composed(own, ngram_table[rows], "mean")


MIXED = Mutant("fasttext-vector-mixes-readings", fasttext_vector=_vector_with("mean", mixed=True))
NO_BOUNDARY = Mutant("fasttext-vector-without-boundary-ngrams", fasttext_vector=_vector_with("mean", _no_boundary_grams))
NO_OWN_ROW = Mutant("fasttext-vector-ignores-the-words-row", fasttext_vector=_ignores_own_row)
FIRST_ONLY = Mutant("fasttext-vector-first-ngram-only", fasttext_vector=_first_ngram_only)
ZERO_FOR_UNSEEN = Mutant("fasttext-vector-zero-for-unseen-words", fasttext_vector=lambda w, ws, t, g, gt, a=3, b=6:
                         _vector_with("mean")(w, ws, t, g, gt, a, b) * (1.0 if w in ws else 0.0))

DEDUPLICATING = Mutant("fasttext-vector-sums-each-ngram-once", fasttext_vector=_vector_with("sum", _distinct_grams))
DEDUPLICATING_MEAN = Mutant("fasttext-vector-averages-each-ngram-once",
                            fasttext_vector=_vector_with("mean", _distinct_grams))
IGNORES_MAX_N = Mutant("fasttext-vector-ignores-max_n", fasttext_vector=_vector_with("mean", _every_length_from_min_n))
DEFAULT_MAX_N = Mutant("fasttext-vector-uses-max_n-6", fasttext_vector=_vector_with("mean", _default_max_n))
MISSING_AS_ZERO = Mutant("fasttext-vector-counts-missing-ngrams-as-zero-rows", fasttext_vector=_missing_as_zero_rows)
MISSING_AS_LAST = Mutant("fasttext-vector-uses-the-last-row-for-missing-ngrams", fasttext_vector=_missing_as_last_row)

CASES = [
    (IMPLEMENTATION_COMPOSES, DEDUPLICATING), (IMPLEMENTATION_COMPOSES, DEDUPLICATING_MEAN),
    (IMPLEMENTATION_COMPOSES, IGNORES_MAX_N), (IMPLEMENTATION_COMPOSES, DEFAULT_MAX_N),
    (UNSEEN, DEDUPLICATING), (UNSEEN, IGNORES_MAX_N),
    (MISSING, MISSING_AS_ZERO), (MISSING, MISSING_AS_LAST), (MISSING, DEDUPLICATING), (MISSING, IGNORES_MAX_N),
    (MISSING, MIXED), (MISSING, NO_OWN_ROW),
    (IMPLEMENTATION_COMPOSES, MIXED), (IMPLEMENTATION_COMPOSES, NO_BOUNDARY), (IMPLEMENTATION_COMPOSES, NO_OWN_ROW),
    (IMPLEMENTATION_COMPOSES, FIRST_ONLY), (IMPLEMENTATION_COMPOSES, ZERO_FOR_UNSEEN),
    (UNSEEN, NO_BOUNDARY), (UNSEEN, FIRST_ONLY), (UNSEEN, ZERO_FOR_UNSEEN),
    (NGRAMS, NO_MARKERS), (NGRAMS, ONE_LENGTH), (NGRAMS, DISTINCT),
    (DOCUMENTED, NO_MARKERS),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


def test_the_reference_passes() -> None:
    from specformer.adapters.reference import implementation

    for qualname in (NGRAMS, DOCUMENTED, IMPLEMENTATION_COMPOSES, MISSING, UNSEEN):
        assert run_row(qualname, implementation).outcome == "pass", qualname


def test_a_mean_that_sums_is_caught(monkeypatch) -> None:
    assert run_row(COMPOSITION, None).outcome == "pass"
    monkeypatch.setattr(fasttext, "compose", lambda v, z, combine="mean": compose(v, z, "sum" if combine == "mean"
                                                                                   else combine))
    row = run_row(COMPOSITION, None)
    assert row.outcome == "fail", row


@pytest.mark.skipif(importlib.util.find_spec("gensim") is None, reason="gensim is not installed")
def test_a_statement_that_gensim_sums_is_caught(monkeypatch) -> None:
    assert run_row(GENSIM, None).outcome == "pass"
    monkeypatch.setattr(fasttext, "GENSIM_COMBINE", "sum")
    row = run_row(GENSIM, None)
    assert row.outcome == "fail" and "gensim's vector" in row.message, row


def _shuffled_shipped_model(words: bool, ngrams: bool) -> object:
    """A fresh copy of the shipped model with its word and/or n-gram vectors permuted between rows."""
    import numpy as np

    model = fasttext.shipped_fasttext.__wrapped__()
    rng = np.random.default_rng(0)
    if words:
        model.vectors = model.vectors[rng.permutation(len(model.vectors))]
    if ngrams:
        model.vectors_ngrams = model.vectors_ngrams[rng.permutation(len(model.vectors_ngrams))]
    return model


@pytest.mark.skipif(importlib.util.find_spec("gensim") is None, reason="gensim is not installed")
@pytest.mark.parametrize(("words", "ngrams", "said"), [(True, True, "inflected pairs"), (False, True, "misspellings")])
def test_a_model_whose_vectors_ignore_the_ngrams_is_caught(monkeypatch, words: bool, ngrams: bool, said: str) -> None:
    assert run_row(MORPHOLOGY, None).outcome == "pass"
    shuffled = _shuffled_shipped_model(words, ngrams)
    monkeypatch.setattr(fasttext, "shipped_fasttext", lambda: shuffled)
    row = run_row(MORPHOLOGY, None)
    assert row.outcome == "fail" and said in row.message, row


def test_without_gensim_the_shipped_model_is_not_applicable(monkeypatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_gensim(name, *args, **kwargs):
        if name == "gensim" or name.startswith("gensim."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_gensim)
    fasttext.shipped_fasttext.cache_clear()
    try:
        assert run_row(MORPHOLOGY, None).outcome == "not-applicable"
    finally:
        monkeypatch.undo()
        fasttext.shipped_fasttext.cache_clear()


def test_every_fasttext_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {COMPOSITION, GENSIM, MORPHOLOGY, SHIPPED_MISSPELLINGS}
    mine = {q for q, p in properties.items() if p.module == "fasttext"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_input() -> None:
    from specformer.reference.embeddings.fasttext import char_ngrams

    with pytest.raises(ValueError, match="1 <= min_n <= max_n"):
        char_ngrams("where", 0, 3)
    with pytest.raises(ValueError, match="1 <= min_n <= max_n"):
        char_ngrams("where", 4, 3)
    with pytest.raises(ValueError, match="word must be a string"):
        char_ngrams(b"where")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown combine 'median'"):
        compose(None, torch.ones(2, 3), "median")
    with pytest.raises(ValueError, match="nothing to combine"):
        compose(None, torch.ones(0, 3), "mean")


@pytest.mark.parametrize("how", ["sum", "mean", "word_plus_mean"])
def test_each_reading_passes_the_composition_properties(how: str) -> None:
    """Any of the documents' three readings, used for every word, is a correct FastText."""
    from specformer.protocol import Capabilities

    reading = Mutant(f"fasttext-vector-{how}", fasttext_vector=_vector_with(how))
    for declared in (None, Capabilities(conventions={"composition": frozenset({how})})):
        reading.capabilities = declared
        for qualname in (IMPLEMENTATION_COMPOSES, UNSEEN, MISSING):
            row = run_row(qualname, reading)
            assert row.outcome == "pass", (qualname, how, row.message)
    other = next(h for h in ("sum", "mean") if h != how)
    reading.capabilities = Capabilities(conventions={"composition": frozenset({other})})
    assert run_row(IMPLEMENTATION_COMPOSES, reading).outcome == "fail"  # it does not do what it declares


@pytest.mark.skipif(importlib.util.find_spec("gensim") is None, reason="gensim is not installed")
def test_a_word2vec_table_that_answered_for_unseen_words_is_caught(monkeypatch) -> None:
    """If word2vec's KeyedVectors gave an unseen word a vector, the shipped-model property must fail."""
    from gensim.models import KeyedVectors

    assert run_row(SHIPPED_MISSPELLINGS, None).outcome == "pass"
    monkeypatch.setattr(KeyedVectors, "get_vector", lambda self, key, norm=False: self.vectors[0])
    row = run_row(SHIPPED_MISSPELLINGS, None)
    assert row.outcome == "fail" and "KeyedVectors" in row.message, row


def test_the_explicit_cases_repeat_cut_and_miss_ngrams() -> None:
    """The pinned examples hold what they are for: repeated n-grams, max_n below the marked words' lengths and
    rows for n-grams outside min_n..max_n, and (the second) n-grams missing from the table."""
    from collections import Counter

    from specformer.properties.embeddings.fasttext import MISSING_CUT, REPEATS_CUT, ngrams_written_out

    for case in (REPEATS_CUT, MISSING_CUT):
        lo, hi = case["min_n"], case["max_n"]
        assert any(max(Counter(ngrams_written_out(w, lo, hi)).values()) > 1 for w in case["queried"])
        assert all(len(w) + 2 > hi for w in case["queried"])
        assert any(len(g) > hi for g in case["grams"]) and any(len(g) < lo for g in case["grams"])
    assert all(g in REPEATS_CUT["grams"] for w in REPEATS_CUT["queried"] for g in ngrams_written_out(w, 3, 4))
    lacking = [w for w in MISSING_CUT["queried"] if any(g not in MISSING_CUT["grams"] for g in ngrams_written_out(w, 3, 4))]
    assert sorted(lacking) == ["aaaa", "ababab", "where"]
