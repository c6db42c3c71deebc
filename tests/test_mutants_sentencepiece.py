"""Every property of ``properties/tokenization/sentencepiece.py`` catches at least one wrong tokenizer.

Mutants wrap the reference's SentencePiece-style ``"unigram"`` tokenizer (or its ``wordpiece``,
or the ``"wordpiece"`` and ``"bert"`` text tokenizers built on it in ``test_mutants_wordpiece``)
and break one thing; the library facts are mis-stated by monkeypatching the property module.
"""

from __future__ import annotations

import importlib.util
import math

import pytest

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.tokenization import sentencepiece as props
from specformer.protocol import NotApplicable
from specformer.reference.tokenization import sentencepiece as spref
from test_mutants_wordpiece import (BERT_KEEPS_CASE, BERT_TEXT, NO_PREFIX, TEXT_NO_PREFIX, WORDPIECE_TEXT,
                                    WORDPIECE_TEXT_LOWER, text_wordpiece)
from test_reference_tokenization_subword import implementation as REFERENCE

MARKER = "\u2581"


def _tokenizer(change=lambda pieces: pieces, kinds=("unigram",)):
    def tokenize_text(kind, text):
        if kind not in kinds:
            raise NotApplicable(f"no {kind!r} tokenizer")
        return change(spref.tokenize(text))

    return tokenize_text


def _detokenizer(join=spref.detokenize, kinds=("unigram",)):
    def detokenize_text(kind, tokens):
        if kind not in kinds:
            raise NotApplicable(f"no {kind!r} tokenizer")
        return join(tokens)

    return detokenize_text


def _no_front_marker(pieces):
    """Wrong: no marker in front of the text (the first word's marker dropped)."""
    if pieces and pieces[0].startswith(MARKER):
        pieces = [pieces[0][1:], *pieces[1:]]
    return [p for p in pieces if p]


def _merge_words(pieces):
    """Wrong: the pieces of every two neighbouring words glued into one piece."""
    words: list[str] = []
    for p in pieces:
        if p.startswith(MARKER) or not words:
            words.append(p)
        else:
            words[-1] += p
    return ["".join(words[i:i + 2]) for i in range(0, len(words), 2)]


def _every_space_a_marker(kind, text):
    """A tokenizer for which the claim as written holds: every whitespace character becomes a marker."""
    if kind != "unigram":
        raise NotApplicable(f"no {kind!r} tokenizer")
    return spref.split_words(MARKER + "".join(MARKER if ch.isspace() else ch for ch in text))


def _characters(kind, text):
    if kind != "unigram":
        raise NotApplicable(f"no {kind!r} tokenizer")
    return list(text)


def _exact_joiner(kind, tokens):
    if kind != "unigram":
        raise NotApplicable(f"no {kind!r} tokenizer")
    return "".join(tokens)


def _initial_pieces_without_prefix(word, vocab, *, unk="[UNK]", prefix="##", max_chars=100):
    """Greedy WordPiece whose first lookup skips entries with the prefix: no word starts with a continuation."""
    vocab, pieces, start = set(vocab), [], 0
    while start < len(word):
        head = prefix if start else ""
        end = next((e for e in range(len(word), start, -1) if head + word[start:e] in vocab
                    and (start or not word[start:e].startswith(prefix))), None)
        if end is None:
            return [unk]
        pieces.append(head + word[start:end])
        start = end
    return pieces


NO_FRONT = Mutant("no-marker-in-front", tokenize_text=_tokenizer(_no_front_marker))
SPACES_KEPT = Mutant("spaces-kept-as-spaces", tokenize_text=_tokenizer(lambda ps: [p.replace(MARKER, " ") for p in ps]))
MERGES_WORDS = Mutant("pieces-span-words", tokenize_text=_tokenizer(_merge_words))
DROPS_MARKERS = Mutant("decode-drops-markers", tokenize_text=_tokenizer(kinds=("unigram", "bpe")),
                       detokenize_text=_detokenizer(lambda ps: "".join(ps).replace(MARKER, ""), ("unigram", "bpe")))
STRIPS_MARKERS = Mutant("pieces-without-markers",
                        tokenize_text=_tokenizer(lambda ps: [q for p in ps if (q := p.replace(MARKER, ""))]))

def _underscore_marker_tokenize(kind, text):
    """Wrong (the claim as written): the marker written as the underscore U+005F."""
    if kind != "unigram":
        raise NotApplicable(f"no {kind!r} tokenizer")
    return [p.replace(MARKER, "_") for p in spref.tokenize(text)]


def _underscore_marker_detokenize(kind, tokens):
    if kind != "unigram":
        raise NotApplicable(f"no {kind!r} tokenizer")
    return "".join(tokens).replace("_", " ").removeprefix(" ")


UNDERSCORE_MARKER = Mutant("marker-is-the-underscore", tokenize_text=_underscore_marker_tokenize,
                           detokenize_text=_underscore_marker_detokenize)
PRUNES_LARGEST = Mutant("prunes-largest-loss", unigram_prune=lambda words, pieces, size: _prune_largest(
    words, pieces, size))
CHARACTER_SEGMENTS = Mutant("segments-into-characters", unigram_segment=lambda word, pieces: list(word))


def _prune_largest(words, pieces, size):
    """Wrong: the removable pieces of largest loss are dropped."""
    from specformer.reference.tokenization import unigram

    losses = unigram.pruning_losses(words, pieces)
    removable = sorted((x for x in pieces if len(x) > 1), key=lambda x: (-losses[x], x))
    gone = set(removable[:min(max(0, len(pieces) - size), len(removable))])
    kept = {x: v for x, v in pieces.items() if x not in gone}
    total = math.log(math.fsum(math.exp(v) for v in kept.values()))
    return {x: v - total for x, v in kept.items()}


#: Detokenizers that do not read the words back from ``##``: glued together, or spaced with the prefix left on.
WORDPIECE_GLUED = text_wordpiece("wordpiece-detokenize-glues-words", "wordpiece",
                                 detokenize=lambda tokens: "".join(tokens).replace("##", ""))
BERT_GLUED = text_wordpiece("bert-detokenize-glues-words", "bert", lower=True,
                            detokenize=lambda tokens: "".join(tokens).replace("##", ""))
BERT_SPACED = text_wordpiece("bert-detokenize-keeps-the-prefix", "bert", lower=True, detokenize=" ".join)

MARKER_CHARACTER = "sentencepiece.the_marker_is_u2581_and_an_underscore_stays_an_ordinary_character"
MARKER_CHARACTER_AS_WRITTEN = "sentencepiece.the_marker_is_the_underscore_as_written"
LANGUAGE_AGNOSTIC = "sentencepiece.trained_on_text_without_spaces_it_finds_the_words"
MARKER_PROPERTY = "sentencepiece.spaces_become_the_marker_and_every_word_starts_with_one"
NO_SPANNING = "sentencepiece.a_piece_never_spans_two_words"
WHITESPACE_AS_WRITTEN = "sentencepiece.every_whitespace_character_becomes_a_marker_as_written"
ROUND_TRIP_UNIGRAM = "sentencepiece.detokenizing_restores_a_plain_text_unigram"
ROUND_TRIP_BPE = "sentencepiece.detokenizing_restores_a_plain_text_bpe"
ROUND_TRIP_AS_WRITTEN = "sentencepiece.detokenizing_restores_any_text_as_written"
WORDPIECE_BOUNDARIES = "sentencepiece.wordpiece_prefixes_recover_the_words"
MARKER_BOUNDARIES = "sentencepiece.sentencepiece_markers_recover_the_words"
BOUNDARIES_AS_WRITTEN = "sentencepiece.subword_markers_always_recover_the_words_as_written"
WORDPIECE_WORDS_BACK = "sentencepiece.the_wordpiece_detokenizer_reads_the_words_back_from_the_prefixes"
BERT_WORDS_BACK = "sentencepiece.bert_detokenizer_reads_the_lower_cased_words_back_from_the_prefixes"
BERT_DOCUMENTS_PIECES = "sentencepiece.bert_detokenizer_joins_the_documents_pieces_into_their_words"
BOTH_MODELS = "sentencepiece.sentencepiece_trains_both_bpe_and_unigram_models"
USED_BY = "sentencepiece.t5_and_llama_tokenizers_are_sentencepiece_models"

CASES = [
    (MARKER_PROPERTY, NO_FRONT), (MARKER_PROPERTY, SPACES_KEPT),
    (NO_SPANNING, MERGES_WORDS),
    (ROUND_TRIP_UNIGRAM, DROPS_MARKERS), (ROUND_TRIP_BPE, DROPS_MARKERS),
    (WORDPIECE_BOUNDARIES, NO_PREFIX),
    (WORDPIECE_WORDS_BACK, WORDPIECE_GLUED), (WORDPIECE_WORDS_BACK, TEXT_NO_PREFIX),
    (BERT_WORDS_BACK, BERT_GLUED), (BERT_WORDS_BACK, BERT_SPACED), (BERT_WORDS_BACK, BERT_KEEPS_CASE),
    (BERT_DOCUMENTS_PIECES, BERT_GLUED), (BERT_DOCUMENTS_PIECES, BERT_SPACED),
    (MARKER_BOUNDARIES, STRIPS_MARKERS), (MARKER_BOUNDARIES, MERGES_WORDS),
    (MARKER_CHARACTER, UNDERSCORE_MARKER), (MARKER_CHARACTER, STRIPS_MARKERS),
    (LANGUAGE_AGNOSTIC, PRUNES_LARGEST), (LANGUAGE_AGNOSTIC, CHARACTER_SEGMENTS),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


def test_the_reference_passes_and_is_refuted_where_the_documents_overstate() -> None:
    for qualname in (MARKER_PROPERTY, NO_SPANNING, ROUND_TRIP_UNIGRAM, WORDPIECE_BOUNDARIES, MARKER_BOUNDARIES,
                     MARKER_CHARACTER):
        assert run_row(qualname, REFERENCE).outcome == "pass", qualname
    assert run_row(LANGUAGE_AGNOSTIC, Mutant("reference")).outcome == "pass"
    assert run_row(MARKER_CHARACTER_AS_WRITTEN, REFERENCE).outcome == "refuted"
    assert run_row(ROUND_TRIP_BPE, REFERENCE).outcome == "not-applicable"
    for qualname in (WHITESPACE_AS_WRITTEN, ROUND_TRIP_AS_WRITTEN, BOUNDARIES_AS_WRITTEN):
        assert run_row(qualname, REFERENCE).outcome == "refuted", qualname


@pytest.mark.parametrize(("qualname", "impl"), [
    (WORDPIECE_WORDS_BACK, WORDPIECE_TEXT), (WORDPIECE_WORDS_BACK, WORDPIECE_TEXT_LOWER),
    (BERT_WORDS_BACK, BERT_TEXT), (BERT_DOCUMENTS_PIECES, BERT_TEXT),
], ids=["wordpiece", "wordpiece-lower-cased", "bert", "bert-documents-pieces"])
def test_detokenizers_that_join_the_continuations_pass(qualname: str, impl: Mutant) -> None:
    row = run_row(qualname, impl)
    assert row.outcome == "pass", row
    assert run_row(qualname, REFERENCE).outcome == "not-applicable"  # the reference holds neither kind


@pytest.mark.parametrize(("qualname", "mutant"), [
    (WHITESPACE_AS_WRITTEN, Mutant("every-space-a-marker", tokenize_text=_every_space_a_marker)),
    (ROUND_TRIP_AS_WRITTEN, Mutant("characters-joined-back", tokenize_text=_characters,
                                   detokenize_text=_exact_joiner)),
    (BOUNDARIES_AS_WRITTEN, Mutant("no-initial-continuation", wordpiece=_initial_pieces_without_prefix)),
    (MARKER_CHARACTER_AS_WRITTEN, UNDERSCORE_MARKER),
], ids=["whitespace", "round-trip", "boundaries", "underscore"])
def test_an_implementation_for_which_the_claim_holds_leaves_nothing_to_refute(qualname: str, mutant: Mutant) -> None:
    row = run_row(qualname, mutant, profile="mutants")
    assert row.outcome == "fail" and row.message.startswith("no counterexample"), row


@pytest.mark.skipif(importlib.util.find_spec("sentencepiece") is None, reason="sentencepiece is absent")
def test_a_bpe_model_that_is_really_unigram_is_caught(monkeypatch) -> None:
    assert run_row(BOTH_MODELS, None).outcome == "pass"
    small_model = props.small_model
    monkeypatch.setattr(props, "small_model", lambda model_type: small_model("unigram"))
    row = run_row(BOTH_MODELS, None, profile="mutants")
    assert row.outcome == "fail" and "merge ranks" in row.message, row


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is absent")
def test_a_misstated_t5_model_is_caught(monkeypatch) -> None:
    assert run_row(USED_BY, None).outcome == "pass"
    monkeypatch.setattr(props, "USED_BY", {**props.USED_BY, "t5": ("T5Tokenizer", "BPE")})
    row = run_row(USED_BY, None)
    assert row.outcome == "fail" and "T5Tokenizer builds a Unigram model" in row.message, row


def test_every_sentencepiece_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {MARKER_CHARACTER_AS_WRITTEN, WHITESPACE_AS_WRITTEN, ROUND_TRIP_AS_WRITTEN, BOUNDARIES_AS_WRITTEN,
                                       BOTH_MODELS, USED_BY}
    mine = {q for q, p in properties.items() if p.module == "sentencepiece"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_input() -> None:
    with pytest.raises(TypeError, match="text must be a str"):
        spref.tokenize(b"the cat")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="piece 0 must be a str"):
        spref.detokenize([b"\xe2\x96\x81a"])  # type: ignore[list-item]
