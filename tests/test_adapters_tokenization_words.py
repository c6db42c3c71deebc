"""The word tokenizer adapters: NLTK's Treebank tokenizer and spaCy's English tokenizer.

Where they should agree with the reference (plain English sentences) they must; where
they differ by design (contractions, quotes, whitespace) the difference is pinned here
and explained in ``spec/tokenization/words.md``. Each test is skipped without its library.
"""

from __future__ import annotations

import importlib

import pytest

from conftest import run_row
from specformer.protocol import NotApplicable, provided_operations
from specformer.reference.tokenization.words import word_tokenize

PLAIN = ("The cat sat on the mat.", "Hello, world!", "Is it (really) true?", "We met on 3 May; it rained.")


def _adapter(module: str, package: str):
    pytest.importorskip(package)
    return importlib.import_module(f"specformer.adapters.{module}").implementation


@pytest.fixture
def nltk_words():
    return _adapter("nltk_words", "nltk")


@pytest.fixture
def spacy_words():
    adapter = _adapter("spacy_words", "spacy")
    return type(adapter)()  # a fresh instance: nothing remembered from other tests


@pytest.fixture(params=["nltk", "spacy"])
def adapter(request):
    return request.getfixturevalue(f"{request.param}_words")


def test_the_adapters_provide_the_text_operations(adapter) -> None:
    assert {"tokenize_text", "detokenize_text"} <= set(provided_operations(adapter))
    assert adapter.name in ("nltk", "spacy")


@pytest.mark.parametrize("text", PLAIN)
def test_plain_english_splits_like_the_reference(adapter, text: str) -> None:
    assert adapter.tokenize_text("words", text) == word_tokenize(text)


@pytest.mark.parametrize("text", PLAIN)
def test_plain_english_round_trips(adapter, text: str) -> None:
    assert adapter.detokenize_text("words", adapter.tokenize_text("words", text)) == text


@pytest.mark.parametrize("kind", ["characters", "bpe", "byte-bpe", "wordpiece", "unigram", "bert"])
def test_other_kinds_are_not_applicable(adapter, kind: str) -> None:
    with pytest.raises(NotApplicable, match="word tokenizer"):
        adapter.tokenize_text(kind, "a b")
    with pytest.raises(NotApplicable, match="word tokenizer"):
        adapter.detokenize_text(kind, ["a", "b"])


def test_both_split_dont_into_do_and_nt(adapter) -> None:
    assert adapter.tokenize_text("words", "I don't know.") == ["I", "do", "n't", "know", "."]


def test_nltk_follows_the_treebank_conventions(nltk_words) -> None:
    assert nltk_words.tokenize_text("words", 'he said "hi"') == ["he", "said", "``", "hi", "''"]
    assert nltk_words.detokenize_text("words", ["he", "said", "``", "hi", "''"]) == 'he said "hi"'
    assert nltk_words.tokenize_text("words", "The cat sat. The dog ran.")[2] == "sat."  # one sentence expected
    assert nltk_words.tokenize_text("words", "don\u2019t") == ["don\u2019t"]
    assert nltk_words.detokenize_text("words", nltk_words.tokenize_text("words", "a  b\n c")) == "a b c"


def test_nltk_detokenized_text_can_tokenize_differently(nltk_words) -> None:
    """The counterexamples the suite finds (a known deviation of the nltk adapter): one it draws, and the
    property's explicit example, a quotation inside a double-quoted one."""
    tokens = nltk_words.tokenize_text("words", "the .the")
    assert tokens == ["the", ".the"]
    assert nltk_words.detokenize_text("words", tokens) == "the.the"
    assert nltk_words.tokenize_text("words", "the.the") == ["the.the"]
    tokens = nltk_words.tokenize_text("words", "He said \"'hi'\"")
    assert tokens == ["He", "said", "``", "'hi", "'", "''"]
    assert nltk_words.detokenize_text("words", tokens) == "He said \"'hi\"'"
    assert nltk_words.tokenize_text("words", "He said \"'hi\"'") == ["He", "said", "``", "'hi", "''", "'"]


@pytest.mark.parametrize("text", ["a  b", "a\tb\n\nc ", "  lead", "trail ", "x\u00a0y", "", " ", "\u6f22\u5b57\u3002"])
def test_spacy_round_trips_whitespace_exactly(spacy_words, text: str) -> None:
    tokens = spacy_words.tokenize_text("words", text)
    assert spacy_words.detokenize_text("words", tokens) == text


def test_spacy_whitespace_tokens_and_remembered_spaces(spacy_words) -> None:
    assert spacy_words.tokenize_text("words", "a  b") == ["a", " ", "b"]
    assert spacy_words.tokenize_text("words", "a ") == ["a"]  # one trailing space lives on the token
    assert spacy_words.detokenize_text("words", ["a"]) == "a "  # the later of "a" and "a " wins
    assert spacy_words.tokenize_text("words", "a") == ["a"]
    assert spacy_words.detokenize_text("words", ["a"]) == "a"
    # a list it never returned: spaCy's default for a Doc built from words, a space after every token
    assert spacy_words.detokenize_text("words", ["x", "y", "."]) == "x y . "


def test_spacy_forgets_the_oldest_lists(spacy_words, monkeypatch) -> None:
    from specformer.adapters import spacy_words as module

    monkeypatch.setattr(module, "REMEMBERED", 2)
    spacy_words.tokenize_text("words", "one.")
    spacy_words.tokenize_text("words", "two.")
    spacy_words.tokenize_text("words", "three.")
    assert spacy_words.detokenize_text("words", ["three", "."]) == "three."
    assert spacy_words.detokenize_text("words", ["one", "."]) == "one . "  # forgotten: the default spaces


def test_spacy_refuses_lone_surrogates(spacy_words) -> None:
    with pytest.raises(NotApplicable, match="lone surrogates"):
        spacy_words.tokenize_text("words", "a\ud800b")
    with pytest.raises(NotApplicable, match="lone surrogates"):
        spacy_words.detokenize_text("words", ["a", "\udc80"])


@pytest.mark.parametrize("name", ["nltk", "spacy"])
def test_the_adapters_run_the_suite(request, name: str) -> None:
    adapter = request.getfixturevalue(f"{name}_words")
    assert run_row("words.the_cat_sat_on_the_mat_gives_seven_tokens", adapter).outcome == "pass"
    assert run_row("words.text_without_spaces_stays_one_token", adapter).outcome == "pass"
    assert run_row("words.english_prose_has_at_least_twice_as_many_characters_as_word_tokens", adapter).outcome == "pass"
    assert run_row("words.character_tokens_are_the_code_points", adapter).outcome == "not-applicable"
    fixed_point = run_row("words.detokenized_text_tokenizes_back_and_is_a_fixed_point", adapter)
    assert fixed_point.outcome == ("fail" if name == "nltk" else "pass"), fixed_point


def test_a_missing_library_gives_a_clear_error(monkeypatch) -> None:
    from specformer.adapters import hf_common, nltk_words

    def missing(name, *args, **kwargs):
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(hf_common.importlib, "import_module", missing)
    nltk_words._treebank.cache_clear()
    try:
        with pytest.raises(ImportError, match="the nltk adapter needs the 'nltk' package"):
            nltk_words.implementation.tokenize_text("words", "a")
    finally:
        monkeypatch.undo()
        nltk_words._treebank.cache_clear()
