"""Every property of ``properties/tokenization/words.py`` catches at least one wrong tokenizer or mis-statement.

Implementation properties run against the reference's word and character tokenizers
(wrapped here until the reference object provides ``tokenize_text``) with one part broken;
library facts (``needs=()``) against a mis-stated library, by replacing the property
module's call of NLTK or spaCy.
"""

from __future__ import annotations

import re
import unicodedata

import pytest

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.tokenization import words as props
from specformer.protocol import NotApplicable
from specformer.reference.tokenization import words as ref
from specformer.reference.tokenization.training import training_text


def text_tokenizer(words=ref.word_tokenize, characters=ref.character_tokenize,
                   detokenize_words=ref.word_detokenize, detokenize_characters=ref.character_detokenize):
    """``tokenize_text`` and ``detokenize_text`` for kinds ``words`` and ``characters``, from swappable parts."""

    def tokenize_text(kind, text):
        if kind == "words":
            return words(text)
        if kind == "characters":
            return characters(text)
        raise NotApplicable(f"kind {kind!r}")

    def detokenize_text(kind, tokens):
        if kind == "words":
            return detokenize_words(tokens)
        if kind == "characters":
            return detokenize_characters(tokens)
        raise NotApplicable(f"kind {kind!r}")

    return {"tokenize_text": tokenize_text, "detokenize_text": detokenize_text}


def with_parts(name: str, **parts) -> Mutant:
    return Mutant(name, **text_tokenizer(**parts))


REFERENCE = with_parts("reference-words")

_SUFFIX = re.compile(r"(ing|ed|er|s)$")
_CJK = re.compile(r"([\u3041-\u3096\u30a1-\u30fa\u4e00-\u9fff])")


def _cjk_per_character(text):
    return [piece for token in ref.word_tokenize(text) for piece in _CJK.split(token) if piece]


KEEPS_PUNCTUATION = with_parts("punctuation-stays-attached", words=str.split,
                               detokenize_words=lambda tokens: " ".join(tokens))
DROPS_PUNCTUATION = with_parts("drops-punctuation", words=lambda text: [
    t for t in ref.word_tokenize(text) if all(map(ref.is_word_character, t))])
SPACES_ONLY = with_parts("splits-at-the-space-character-only",
                         words=lambda text: [t for t in text.split(" ") if t])
STEMMER = with_parts("strips-suffixes", words=lambda text: [
    _SUFFIX.sub("", t) if len(t) > 4 else t for t in ref.word_tokenize(text)])
CJK_PER_CHARACTER = with_parts("cuts-cjk-into-single-characters", words=_cjk_per_character)
CHARACTERS_AS_WORDS = with_parts("words-are-characters", words=lambda text: [c for c in text if not c.isspace()],
                                 detokenize_words="".join)
FIRST_THREE_LETTERS = with_parts("cuts-words-to-three-letters", words=lambda text: [
    t[:3] for t in ref.word_tokenize(text)])
JOINS_WITHOUT_SPACES = with_parts("detokenize-drops-whitespace", detokenize_words="".join)
END_OF_WORD_TOKENS = with_parts("end-of-word-token-after-each-word", words=lambda text: [
    piece for t in ref.word_tokenize(text) for piece in ((t, "</w>") if ref.is_word_character(t[0]) else (t,))])
UTF8_BYTES = with_parts("characters-are-utf8-bytes", characters=lambda text: [
    chr(b) for b in text.encode("utf-8", "surrogatepass")], detokenize_characters=lambda tokens: bytes(
        ord(t) for t in tokens).decode("utf-8", "surrogatepass"))
SPACED_CHARACTERS = with_parts("characters-joined-with-spaces", detokenize_characters=" ".join)
CHARACTERS_WITHOUT_WHITESPACE = with_parts("character-detokenize-drops-whitespace", detokenize_characters=lambda tokens: (
    "".join(t for t in tokens if not t.isspace())))
NFC_CHARACTERS = with_parts("character-detokenize-composes", detokenize_characters=lambda tokens: (
    unicodedata.normalize("NFC", "".join(tokens))))

def _strips_accents(text):
    """Wrong for a word tokenizer: accents taken off (NFD, combining marks dropped) before splitting."""
    return ref.word_tokenize("".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn"))


STRIPS_ACCENTS = with_parts("word-tokens-without-accents", words=_strips_accents)

CASES = [
    ("words.word_tokens_keep_every_character_but_whitespace_in_order", STRIPS_ACCENTS),
    ("words.word_tokens_keep_every_character_but_whitespace_in_order", DROPS_PUNCTUATION),
    ("words.word_tokens_keep_every_character_but_whitespace_in_order", SPACES_ONLY),
    ("words.the_cat_sat_on_the_mat_gives_seven_tokens", KEEPS_PUNCTUATION),
    ("words.the_cat_sat_on_the_mat_gives_seven_tokens", DROPS_PUNCTUATION),
    ("words.variants_of_a_word_are_distinct_whole_tokens", STEMMER),
    ("words.text_without_spaces_stays_one_token", CJK_PER_CHARACTER),
    ("words.distinct_words_keep_growing_with_the_corpus", CHARACTERS_AS_WORDS),
    ("words.distinct_words_keep_growing_with_the_corpus", FIRST_THREE_LETTERS),
    ("words.held_out_text_has_words_the_training_part_lacks", CHARACTERS_AS_WORDS),
    ("words.detokenized_text_tokenizes_back_and_is_a_fixed_point", JOINS_WITHOUT_SPACES),
    ("words.character_tokens_are_the_code_points", UTF8_BYTES),
    ("words.character_tokens_join_back_into_the_text", SPACED_CHARACTERS),
    ("words.character_tokens_join_back_into_the_text", CHARACTERS_WITHOUT_WHITESPACE),
    ("words.character_tokens_join_back_into_the_text", NFC_CHARACTERS),
    ("words.character_tokens_work_the_same_in_every_script", UTF8_BYTES),
    ("words.unseen_characters_are_out_of_a_learned_character_vocabulary", UTF8_BYTES),
    ("words.a_text_has_at_least_as_many_characters_as_word_tokens", END_OF_WORD_TOKENS),
    ("words.english_prose_has_at_least_twice_as_many_characters_as_word_tokens", CHARACTERS_AS_WORDS),
]

#: The claims as written: the reference refutes each; a tokenizer that agrees with the claim must not.
AS_WRITTEN = {
    "words.a_character_vocabulary_has_no_unknown_tokens_as_written": with_parts(
        "unseen-characters-become-question-marks",
        characters=lambda text: [c if c in set(training_text()) else "?" for c in text]),
}


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize("qualname", sorted({q for q, _ in CASES}))
def test_the_reference_passes(qualname: str) -> None:
    row = run_row(qualname, REFERENCE)
    assert row.outcome == "pass", row


@pytest.mark.parametrize("qualname", sorted(AS_WRITTEN))
def test_the_claim_as_written_is_refuted_unless_the_tokenizer_agrees_with_it(qualname: str) -> None:
    assert run_row(qualname, REFERENCE).outcome == "refuted"
    row = run_row(qualname, AS_WRITTEN[qualname], profile="mutants")
    assert row.outcome == "fail", row


# -- library facts: the libraries mis-stated ---------------------------------------------------------

CONTRACTIONS = "words.nltk_and_spacy_split_contractions_with_a_straight_apostrophe"
CONTRACTIONS_AS_WRITTEN = "words.nltk_and_spacy_split_every_contraction_as_written"
DIFFER = "words.nltk_and_spacy_split_punctuation_and_special_characters_differently"
COMPOUNDS = "words.german_compounds_stay_whole"
COMPOUNDS_AS_WRITTEN = "words.nltk_and_spacy_split_german_compounds_as_written"
SPACY_DOC = "words.spacy_docs_rebuild_their_text_exactly"
LIBRARY_PROPERTIES = (CONTRACTIONS, CONTRACTIONS_AS_WRITTEN, DIFFER, COMPOUNDS, COMPOUNDS_AS_WRITTEN, SPACY_DOC)


@pytest.fixture
def libraries() -> None:
    pytest.importorskip("nltk")
    pytest.importorskip("spacy")


def _halves(word: str, language: str = "en") -> list[str]:
    return [word[:len(word) // 2], word[len(word) // 2:]]


@pytest.mark.usefixtures("libraries")
def test_the_libraries_are_as_the_tables_say() -> None:
    for qualname in (CONTRACTIONS, DIFFER, COMPOUNDS, SPACY_DOC):
        assert run_row(qualname, None).outcome == "pass", qualname
    for qualname in (CONTRACTIONS_AS_WRITTEN, COMPOUNDS_AS_WRITTEN):
        row = run_row(qualname, None)
        assert row.outcome == "refuted", row
    assert "NLTK keeps 'don\u2019t'" in run_row(CONTRACTIONS_AS_WRITTEN, None).message


@pytest.mark.usefixtures("libraries")
def test_a_whitespace_split_posing_as_nltk_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(props, "nltk_tokens", str.split)
    assert run_row(CONTRACTIONS, None, profile="mutants").outcome == "fail"
    assert run_row(DIFFER, None, profile="mutants").outcome == "fail"


@pytest.mark.usefixtures("libraries")
def test_an_nltk_that_knows_the_typographic_apostrophe_leaves_nothing_to_refute(monkeypatch) -> None:
    monkeypatch.setattr(props, "nltk_tokens", props.spacy_tokens)
    assert run_row(CONTRACTIONS_AS_WRITTEN, None, profile="mutants").outcome == "fail"
    assert run_row(DIFFER, None, profile="mutants").outcome == "fail"  # the two no longer differ


@pytest.mark.usefixtures("libraries")
def test_decompounding_tokenizers_are_caught_and_agree_with_the_claim_as_written(monkeypatch) -> None:
    monkeypatch.setattr(props, "spacy_tokens", _halves)
    assert run_row(COMPOUNDS, None, profile="mutants").outcome == "fail"
    monkeypatch.setattr(props, "nltk_tokens", _halves)
    assert run_row(COMPOUNDS_AS_WRITTEN, None, profile="mutants").outcome == "fail"


@pytest.mark.usefixtures("libraries")
def test_a_doc_that_forgets_its_whitespace_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(props, "spacy_doc_text", lambda text: " ".join(props.spacy_tokens(text)))
    assert run_row(SPACY_DOC, None, profile="mutants").outcome == "fail"


def test_library_facts_are_not_applicable_without_the_libraries(monkeypatch) -> None:
    def missing(*args, **kwargs):
        raise NotApplicable("NLTK is not installed (test)")

    monkeypatch.setattr(props, "nltk_tokens", missing)
    row = run_row(CONTRACTIONS, None)
    assert row.outcome == "not-applicable" and "not installed" in row.message, row


def test_every_words_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | set(AS_WRITTEN) | set(LIBRARY_PROPERTIES)
    mine = {q for q, p in properties.items() if p.module == "words"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


# -- the reference itself ------------------------------------------------------------------------------


def test_the_reference_tokenizes_the_documents_examples() -> None:
    assert ref.word_tokenize("The cat sat on the mat.") == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert ref.character_tokenize("The cat") == ["T", "h", "e", " ", "c", "a", "t"]
    assert ref.word_tokenize("don't e\u0301t\u00e9 $3.50") == ["don", "'", "t", "e\u0301t\u00e9", "$", "3", ".", "50"]
    assert ref.word_tokenize("\u6211\u559c\u6b22\u732b\u3002") == ["\u6211\u559c\u6b22\u732b", "\u3002"]
    assert ref.word_tokenize(" \t\n") == [] and ref.word_tokenize("") == []
    for text in ("The cat sat on the mat.", "Hello, world!", "Yes: no; maybe?"):
        assert ref.word_detokenize(ref.word_tokenize(text)) == text
    assert ref.word_detokenize(ref.word_tokenize("a  b\t.")) == "a b."
    assert ref.word_detokenize(ref.word_tokenize("x = (a + b) * 2")) == "x=( a+ b)* 2"  # symbols lose their spaces
    assert ref.character_detokenize(ref.character_tokenize("a\ud800\U0001F600")) == "a\ud800\U0001F600"


def test_word_characters_are_letters_marks_and_numbers() -> None:
    for char in ("a", "\u00e9", "\u0301", "\u6f22", "3", "\u0663", "\u2167"):
        assert ref.is_word_character(char), (char, unicodedata.category(char))
    for char in (".", "'", "_", "$", "\U0001F600", "\u200d", "\x00", " "):
        assert not ref.is_word_character(char), (char, unicodedata.category(char))


def test_the_reference_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="text must be a str"):
        ref.word_tokenize(b"bytes")
    with pytest.raises(ValueError, match="text must be a str"):
        ref.character_tokenize(None)
    with pytest.raises(ValueError, match="not a word token"):
        ref.word_detokenize(["a b"])
    with pytest.raises(ValueError, match="not a word token"):
        ref.word_detokenize(["mat."])
    with pytest.raises(ValueError, match="non-empty str"):
        ref.word_detokenize(["a", ""])
    with pytest.raises(ValueError, match="sequence of str, not a single str"):
        ref.word_detokenize("abc")
    with pytest.raises(ValueError, match="single character"):
        ref.character_detokenize(["ab"])


def test_the_no_space_strategy_draws_single_word_runs() -> None:
    from hypothesis import given, settings

    @settings(max_examples=200, database=None)
    @given(text=props.no_space_texts)
    def check(text: str) -> None:
        assert text and all(ref.is_word_character(c) and not c.isspace() for c in text), repr(text)
        assert ref.word_tokenize(text) == [text]

    check()


def test_a_word_tokenizer_that_strips_accents_is_caught_by_the_drawn_texts_alone() -> None:
    """A word tokenizer keeps every character: the drawn texts (precomposed and combining accents among their
    fragments) catch one that strips accents without an explicit example, and the reference passes them."""
    qualname = "words.word_tokens_keep_every_character_but_whitespace_in_order"
    row = run_row(qualname, STRIPS_ACCENTS, profile="search-only")
    assert row.outcome == "fail", (row.outcome, row.message)
    row = run_row(qualname, REFERENCE, profile="search-only")
    assert row.outcome == "pass" and row.examples_checked > 0, (row.outcome, row.message)
