"""The reference WordPiece, Unigram and SentencePiece modules: their definitions, and bad input.

``SubwordReference`` is the reference's subword operations as an implementation object
(what :class:`specformer.adapters.reference.ReferenceImplementation` provides once they are
registered there); the mutant tests of ``wordpiece``, ``unigram`` and ``sentencepiece``
build on it. It can be run with ``--impl tests/test_reference_tokenization_subword.py:implementation``.
"""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from specformer.protocol import Capabilities, NotApplicable
from specformer.reference.tokenization import sentencepiece as spref
from specformer.reference.tokenization import unigram
from specformer.reference.tokenization.wordpiece import wordpiece, words_from_pieces

SOME = settings(max_examples=150, deadline=None, derandomize=True, database=None)


class SubwordReference:
    """The reference's ``wordpiece``, ``unigram_segment`` and ``"unigram"`` text tokenizer."""

    name = "reference"
    #: Its text tokenizer is the Unigram one only: declared, so no other kind is asked for.
    capabilities = Capabilities(conventions={"tokenizer_kind": {"unigram"}})

    def wordpiece(self, word: str, vocab: list[str], *, unk: str = "[UNK]", prefix: str = "##",
                  max_chars: int = 100) -> list[str]:
        return wordpiece(word, vocab, unk=unk, prefix=prefix, max_chars=max_chars)

    def unigram_segment(self, word: str, pieces: dict[str, float]) -> list[str]:
        return unigram.viterbi(word, pieces)

    def unigram_em_step(self, words: dict[str, int], pieces: dict[str, float]) -> dict[str, float]:
        return unigram.em_step(words, pieces)

    def unigram_prune(self, words: dict[str, int], pieces: dict[str, float], size: int) -> dict[str, float]:
        return unigram.prune(words, pieces, size)

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        if kind != "unigram":
            raise NotApplicable(f"the reference holds no {kind!r} tokenizer here")
        return spref.tokenize(text)

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        if kind != "unigram":
            raise NotApplicable(f"the reference holds no {kind!r} tokenizer here")
        return spref.detokenize(tokens)


implementation = SubwordReference()

# -- WordPiece ----------------------------------------------------------------------------------

letters = st.text("abc", min_size=1, max_size=3)
vocabs = st.lists(st.one_of(letters, letters.map("##".__add__)), max_size=12)


def _greedy_by_definition(word: str, vocab: list[str], max_chars: int) -> list[str]:
    """Greedy longest match first, written as a search over every split point (the definition, slowly)."""
    if len(word) > max_chars:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        matches = [end for end in range(start + 1, len(word) + 1) if ("##" if start else "") + word[start:end] in vocab]
        if not matches:
            return ["[UNK]"]
        end = max(matches)
        pieces.append(("##" if start else "") + word[start:end])
        start = end
    return pieces


@SOME
@given(word=st.text("abcd", max_size=9), vocab=vocabs, max_chars=st.integers(0, 12))
def test_wordpiece_is_the_greedy_longest_match(word: str, vocab: list[str], max_chars: int) -> None:
    assert wordpiece(word, vocab, max_chars=max_chars) == _greedy_by_definition(word, vocab, max_chars)


def test_wordpiece_examples() -> None:
    assert wordpiece("unaffable", ["un", "##aff", "##able", "##a"]) == ["un", "##aff", "##able"]
    assert wordpiece("abc", ["a", "ab", "##bc"]) == ["[UNK]"]  # greedy is stuck after "ab"
    assert wordpiece("", ["a"]) == []
    assert wordpiece("aaa", ["a", "##a"], max_chars=2) == ["[UNK]"]  # longer than max_chars
    assert wordpiece("ab", ["a", "@@b"], prefix="@@", unk="<unk>") == ["a", "@@b"]
    assert words_from_pieces(["em", "##bed", "##ding", "##s", "token", "##ization"]) == ["embeddings", "tokenization"]


def test_wordpiece_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="unk must be a non-empty string"):
        wordpiece("a", ["a"], unk="")
    with pytest.raises(ValueError, match="max_chars must be a non-negative int"):
        wordpiece("a", ["a"], max_chars=-1)
    with pytest.raises(ValueError, match="vocabulary entries must be non-empty strings"):
        wordpiece("a", ["a", ""])
    with pytest.raises(ValueError, match="vocab must be a collection"):
        wordpiece("a", "abc")
    with pytest.raises(TypeError, match="word must be a str"):
        wordpiece(b"a", ["a"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="continues a word"):
        words_from_pieces(["##a"])
    with pytest.raises(ValueError, match="non-empty string"):
        words_from_pieces(["a"], prefix="")


# -- Unigram -------------------------------------------------------------------------------------------


@st.composite
def tables(draw: st.DrawFn) -> tuple[str, dict[str, float]]:
    word = draw(st.text("ab", min_size=1, max_size=9))
    subs = sorted({word[i:j] for i in range(len(word)) for j in range(i + 2, min(len(word), i + 4) + 1)})
    chosen = draw(st.lists(st.sampled_from(subs), unique=True) if subs else st.just([]))
    return word, {p: draw(st.floats(-6, -0.01)) for p in ["a", "b", *chosen]}


@SOME
@given(case=tables())
def test_viterbi_reaches_the_brute_force_maximum(case: tuple[str, dict[str, float]]) -> None:
    word, pieces = case
    best, value = unigram.best_by_enumeration(word, pieces)
    got = unigram.viterbi(word, pieces)
    assert "".join(got) == word and math.isclose(unigram.score(got, pieces), value, rel_tol=1e-12, abs_tol=1e-12)


@SOME
@given(case=tables())
def test_the_forward_sum_is_the_sum_over_all_segmentations(case: tuple[str, dict[str, float]]) -> None:
    word, pieces = case
    total = math.fsum(math.exp(unigram.score(s, pieces)) for s in unigram.segmentations(word, pieces))
    assert math.isclose(unigram.log_marginal(word, pieces), math.log(total), rel_tol=1e-9)
    assert math.isclose(unigram.corpus_log_likelihood({word: 3}, pieces), 3 * math.log(total), rel_tol=1e-9)
    assert math.isclose(math.fsum(unigram.distribution(word, pieces, 0.5).values()), 1.0)


@pytest.mark.parametrize("word", ["ab" * 300, "a" * 5 + "b" * 700, "ba"])
def test_the_scaled_lattice_agrees_with_log_space_on_long_words(word: str) -> None:
    """Training sums in plain arithmetic with a per-character scale, and falls back to log space when that
    leaves the range of floats (long words, or pieces of vanishing probability)."""
    for pieces in ({"a": -0.7, "b": -3.0, "ab": -2.0, "bb": -9.0}, {"a": -0.5, "b": -600.0, "ba": -0.1}):
        assert math.isclose(unigram.corpus_log_likelihood({word: 2}, pieces), 2 * unigram.log_marginal(word, pieces),
                            rel_tol=1e-9)
    counts = unigram.em_step({word: 1}, {"a": -0.7, "b": -3.0, "ab": -2.0})
    assert math.isclose(math.fsum(math.exp(v) for v in counts.values()), 1.0)


def test_viterbi_examples_and_tie_rule() -> None:
    pieces = {"a": -1.0, "b": -1.0, "aa": -5.0, "ab": -0.5}
    assert unigram.viterbi("aab", pieces) == ["a", "ab"]
    assert unigram.viterbi("ab", {"a": -1.0, "b": -1.0, "ab": -2.0}) == ["ab"]  # a tie: the longest last piece
    assert unigram.viterbi("", {"a": -1.0}) == []
    assert sorted(unigram.segmentations("aa", {"a": -1.0, "aa": -1.0})) == [("a", "a"), ("aa",)]


def test_sampling_is_seeded_and_reaches_every_segmentation() -> None:
    pieces = {"a": math.log(0.5), "b": math.log(0.5), "ab": math.log(0.25)}
    rng = random.Random(7)
    draws = Counter(tuple(unigram.sample("ab", pieces, rng)) for _ in range(400))
    assert set(draws) == {("a", "b"), ("ab",)}
    again = [unigram.sample("abab", pieces, random.Random(3)) for _ in range(3)]
    assert again[0] == again[1] == again[2]
    assert unigram.sample("ab", pieces, random.Random(0), alpha=60.0) in (["a", "b"], ["ab"])


def test_unigram_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"no piece covers position 1 \('c'\)"):
        unigram.viterbi("acb", {"a": -1.0, "b": -1.0})
    with pytest.raises(ValueError, match="do not join up"):
        unigram.viterbi("abc", {"ab": -1.0, "bc": -1.0})
    with pytest.raises(ValueError, match="must be a finite number <= 0"):
        unigram.viterbi("a", {"a": 0.5})
    with pytest.raises(ValueError, match="must be a finite number <= 0"):
        unigram.viterbi("a", {"a": float("nan")})
    with pytest.raises(ValueError, match="non-empty strings"):
        unigram.viterbi("a", {"": -1.0, "a": -1.0})
    with pytest.raises(ValueError, match="refusing to enumerate"):
        list(unigram.segmentations("a" * 17, {"a": -1.0}))
    with pytest.raises(ValueError, match="alpha must be"):
        unigram.sample("a", {"a": -1.0}, random.Random(0), alpha=-1.0)
    with pytest.raises(ValueError, match="empty corpus"):
        unigram.train_unigram({}, 10)
    with pytest.raises(ValueError, match="word counts must be positive"):
        unigram.train_unigram({"ab": 0}, 10)
    with pytest.raises(ValueError, match="vocab_size must be a positive int"):
        unigram.train_unigram({"ab": 1}, 0)
    with pytest.raises(ValueError, match="shrink must be a fraction"):
        unigram.train_unigram({"ab": 1}, 5, shrink=1.0)


def test_training_is_deterministic_and_reaches_its_target() -> None:
    words = {"lower": 5, "lowest": 2, "newer": 6, "wider": 3, "new": 4}
    first, second = unigram.train_unigram(words, 15, seed_size=60), unigram.train_unigram(words, 15, seed_size=60)
    assert first == second
    assert len(first.pieces) == 15 and set("lowerstnid") <= set(first.pieces)
    sizes = [r.size_after for r in first.rounds]
    substrings = {w[i:j] for w in words for i in range(len(w)) for j in range(i + 1, len(w) + 1)}
    assert sizes == sorted(sizes, reverse=True) and first.rounds[0].size_before == len(substrings) == 45
    for r in first.rounds:
        assert all(b >= a - 1e-9 * abs(a) for a, b in zip(r.log_likelihoods, r.log_likelihoods[1:]))


# -- SentencePiece-style whitespace ---------------------------------------------------------------------


@SOME
@given(text=st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\u2581"), max_size=12))
@example(text=" a  b ")
def test_escape_round_trips_text_without_the_marker(text: str) -> None:
    assert spref.unescape(spref.escape(text)) == text
    assert "".join(spref.split_words(spref.escape(text))) == spref.escape(text)


def test_split_words_cuts_before_every_marker() -> None:
    assert spref.escape("the cat") == "\u2581the\u2581cat" and spref.escape("") == ""
    assert spref.split_words("\u2581the\u2581\u2581cat") == ["\u2581the", "\u2581", "\u2581cat"]
    assert spref.detokenize(["\u2581the", "\u2581c", "at"]) == "the cat"
    with pytest.raises(TypeError, match="piece 1 must be a str"):
        spref.detokenize(["\u2581a", 3])  # type: ignore[list-item]


def test_a_small_model_tokenizes_losslessly() -> None:
    model = unigram.train_unigram({"\u2581the": 9, "\u2581cat": 4, "\u2581sat": 3}, 12, seed_size=40)
    for text in ["the cat sat", "  the\tcat ", "caté \U0001F600", ""]:
        pieces = spref.tokenize(text, model)
        assert spref.detokenize(pieces) == text
        assert all(p and "\u2581" not in p[1:] for p in pieces)
    assert spref.detokenize(spref.tokenize("x\u2581y", model)) == "x y"  # the marker itself is not preserved
