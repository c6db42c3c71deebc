"""The reference BPE (``reference/tokenization/bpe.py``): the incremental trainer learns exactly
the naive trainer's merges (ties included), encoding follows rank order, byte-level encoding
round-trips any text, and bad input is refused with a clear error."""

from __future__ import annotations

import functools
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from specformer.reference.tokenization.bpe import (
    END_OF_WORD,
    byte_pieces,
    byte_word_counts,
    decode,
    decode_bytes,
    encode,
    encode_bytes,
    train_bpe,
    train_bpe_naive,
    train_byte_bpe,
    train_byte_bpe_naive,
    train_on_sequences,
    train_on_sequences_naive,
    word_counts,
)
from specformer.reference.tokenization.corpus import looks_like_prose, strip_code

MANY = settings(max_examples=300, deadline=None, derandomize=True, database=None)
SOME = settings(max_examples=150, deadline=None, derandomize=True, database=None)

# Small alphabets and small counts: long shared runs, repeated letters ("aaa", overlapping
# pairs) and many pairs of equal count, which is where a tie rule or an incremental update
# can go wrong.
counts = st.integers(1, 4)
char_corpora = st.dictionaries(st.text(alphabet="abc", max_size=9), counts, min_size=1, max_size=12)
byte_corpora = st.dictionaries(st.lists(st.sampled_from([b"a", b"b", b" ", b"\xff"]), max_size=9).map(b"".join),
                               counts, min_size=1, max_size=12)
merge_budgets = st.integers(0, 40)  # often more than the corpus can give: training stops early


@functools.cache
def _pydoc_text() -> str:
    """A small real English text: Python's help topics (about 0.5 MB)."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[name] for name in sorted(topics))


@functools.cache
def _byte_merges() -> tuple[tuple[bytes, bytes], ...]:
    """300 byte-level merges trained on the help topics."""
    return tuple(train_byte_bpe(byte_word_counts(_pydoc_text()), 300))


@functools.cache
def _char_merges() -> tuple[tuple[str, str], ...]:
    """300 character-level merges trained on the help topics."""
    return tuple(train_bpe(word_counts(_pydoc_text()), 300))


# --------------------------------------------------------------------------- fast == naive


@MANY
@given(words=char_corpora, num_merges=merge_budgets)
@example(words={"aaaa": 1, "aaa": 2}, num_merges=10)  # overlapping runs of one letter
@example(words={"abab": 3, "ba": 1}, num_merges=10)  # a merge next to its own result
@example(words={"ab": 1, "ba": 1, "c": 1}, num_merges=10)  # every pair tied at 1
def test_incremental_trainer_learns_the_naive_merges(words: dict[str, int], num_merges: int) -> None:
    assert train_bpe(words, num_merges) == train_bpe_naive(words, num_merges)


@MANY
@given(words=byte_corpora, num_merges=merge_budgets)
@example(words={b"": 2, b"a": 1}, num_merges=3)  # no pair at all: nothing is learned
def test_incremental_byte_trainer_learns_the_naive_merges(words: dict[bytes, int], num_merges: int) -> None:
    assert train_byte_bpe(words, num_merges) == train_byte_bpe_naive(words, num_merges)


@SOME
@given(words=char_corpora.map(lambda d: {w: c for w, c in d.items() if w}).filter(bool), num_merges=merge_budgets)
def test_trainers_agree_on_other_initial_splits(words: dict[str, int], num_merges: int) -> None:
    """Hugging Face's split (the marker glued to the last character), as the benchmark uses it."""
    sequences = {(*word[:-1], word[-1] + END_OF_WORD): count for word, count in words.items()}
    assert train_on_sequences(sequences, num_merges) == train_on_sequences_naive(sequences, num_merges)


@SOME
@given(words=char_corpora, num_merges=merge_budgets, seed=st.integers(0, 2**16))
def test_merges_do_not_depend_on_the_order_of_the_words(words: dict[str, int], num_merges: int, seed: int) -> None:
    """The documents' ``max`` picks the first tied pair it counted; the reference tie rule does not."""
    shuffled = list(words.items())
    random.Random(seed).shuffle(shuffled)
    assert train_bpe(dict(shuffled), num_merges) == train_bpe(words, num_merges)
    assert train_bpe_naive(dict(shuffled), num_merges) == train_bpe_naive(words, num_merges)


def test_ties_go_to_the_smallest_pair() -> None:
    # Every pair occurs once; ("a", "b") < ("b", "</w>") < ("c", "d") < ("d", "</w>").
    assert train_bpe({"cd": 1, "ab": 1}, 2) == [("a", "b"), ("ab", END_OF_WORD)]
    # A higher count wins over a smaller pair.
    assert train_bpe({"ab": 1, "yz": 2}, 1) == [("y", "z")]


@pytest.mark.parametrize("trainer", [train_bpe, train_bpe_naive])
def test_pairs_that_occur_once_are_merged_until_no_pair_is_left(trainer) -> None:
    assert trainer({"abc": 1}, 10) == [("a", "b"), ("ab", "c"), ("abc", END_OF_WORD)]
    assert trainer({"abc": 1}, 0) == []


def test_byte_merges_are_byte_strings() -> None:
    merges = train_byte_bpe({b"low": 5, b" lower": 2, b" newest": 6}, 4)
    assert merges[0] == (b"w", b"e") and all(isinstance(s, bytes) for pair in merges for s in pair)


# --------------------------------------------------------------------------- encoding


def test_encoding_applies_merges_in_rank_order() -> None:
    """In "abbb" the pair (b, b) occurs twice and (a, b) once, but (a, b) has the lower rank."""
    merges = [("a", "b"), ("b", "b")]
    assert encode("abbb", merges) == ["ab", "bb", END_OF_WORD]
    # Most frequent pair of the word first would give ["a", "bb", "b", "</w>"]; rank order
    # reversed gives the same. Reversing the ranks changes the result:
    assert encode("abbb", [("b", "b"), ("a", "b")]) == ["a", "bb", "b", END_OF_WORD]


def test_merges_may_come_back_from_json_as_lists() -> None:
    assert encode("abc", [["b", "c"], ["a", "bc"]]) == ["abc", END_OF_WORD]


def test_encoding_is_not_leftmost_first() -> None:
    """The lower-ranked pair is merged first even when another merge applies further left."""
    merges = [("b", "c"), ("a", "b")]
    assert encode("abc", merges) == ["a", "bc", END_OF_WORD]  # leftmost-first would give ["ab", "c", ...]


def test_encoding_reproduces_the_training_split_of_a_training_word() -> None:
    words = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
    merges = train_bpe(words, 10)
    assert encode("newest", merges) == ["newest</w>"]
    assert encode("lowest", merges) == ["low", "est</w>"]  # an unseen word, from learned parts
    assert encode("zz", merges) == ["z", "z", END_OF_WORD]  # unseen characters stay single


@SOME
@given(word=st.text())
@example(word="x</w>")  # the marker's text inside a word
@example(word="")
def test_character_level_decode_reverses_encode(word: str) -> None:
    symbols = encode(word, _char_merges())
    assert symbols[-1].endswith(END_OF_WORD)
    assert decode(symbols) == word


@SOME
@given(text=st.text())
@example(text="")
@example(text="   \t\n  leading, inner   and trailing whitespace \n\n ")
# a skin tone modifier, a ZWJ sequence (man, woman, girl) and regional indicators (a flag):
@example(text="thumbs \U0001F44D\U0001F3FD family \U0001F468\u200d\U0001F469\u200d\U0001F467 flag \U0001F1EB\U0001F1F7")
@example(text="e\u0301 n\u0303 a\u030a\u0323")  # combining marks
@example(text="\u00a0\u2009\u3000 non-breaking and ideographic spaces")
@example(text="日本語のテキスト, ελληνικά, עברית")
@example(text="lone surrogates \ud800 and \udfff")
def test_byte_level_decode_reverses_encode(text: str) -> None:
    tokens = encode_bytes(text, _byte_merges())
    assert all(isinstance(token, bytes) and token for token in tokens)
    assert decode_bytes(tokens) == text


@SOME
@given(text=st.text(alphabet=st.characters(exclude_categories=())))  # surrogates included
def test_byte_level_round_trip_includes_lone_surrogates(text: str) -> None:
    assert decode_bytes(encode_bytes(text, _byte_merges())) == text


def test_byte_level_encoding_uses_the_merges() -> None:
    text = "The return statement leaves the current function call."
    tokens = encode_bytes(text, _byte_merges())
    assert len(tokens) < len(text.encode()) / 2  # common English words are a token or two
    vocabulary = {bytes([b]) for b in range(256)} | {left + right for left, right in _byte_merges()}
    assert set(tokens) <= vocabulary


@SOME
@given(text=st.text())
def test_byte_pieces_cover_the_text(text: str) -> None:
    pieces = byte_pieces(text)
    assert "".join(pieces) == text
    assert all(piece for piece in pieces)


def test_pre_tokenisation() -> None:
    assert word_counts("the cat  saw\tthe\ndog.") == {"the": 2, "cat": 1, "saw": 1, "dog.": 1}
    assert byte_pieces("a  b c ") == ["a", "  b", " c", " "]
    assert byte_word_counts(" a a") == {b" a": 2}


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("trainer", [train_bpe, train_bpe_naive])
@pytest.mark.parametrize(("words", "num_merges", "error", "match"), [
    ({}, 5, ValueError, r"empty corpus"),
    ({"ab": 1}, -1, ValueError, r"num_merges must be >= 0, got -1"),
    ({"ab": 0}, 1, ValueError, r"word counts must be positive integers, got 0 for 'ab'"),
    ({"ab": 1.5}, 1, ValueError, r"word counts must be positive integers, got 1.5"),
    ({b"ab": 1}, 1, TypeError, r"words must be str, got b'ab'"),
    (["ab"], 1, TypeError, r"words must be a mapping"),
    ({"ab": 1}, 1.0, TypeError, r"num_merges must be an int"),
])
def test_trainers_refuse_bad_input(trainer, words, num_merges, error, match) -> None:
    with pytest.raises(error, match=match):
        trainer(words, num_merges)


@pytest.mark.parametrize("trainer", [train_byte_bpe, train_byte_bpe_naive])
def test_byte_trainers_refuse_bad_input(trainer) -> None:
    with pytest.raises(ValueError, match=r"empty corpus"):
        trainer({}, 3)
    with pytest.raises(TypeError, match=r"words must be bytes, got 'ab'"):
        trainer({"ab": 1}, 3)
    with pytest.raises(ValueError, match=r"num_merges must be >= 0"):
        trainer({b"ab": 1}, -2)


def test_end_of_word_must_be_a_non_empty_string() -> None:
    with pytest.raises(ValueError, match=r"end_of_word must be a non-empty string, got ''"):
        train_bpe({"ab": 1}, 1, end_of_word="")


@pytest.mark.parametrize(("merges", "match"), [
    ([("ab", "c")], r"merge 0 \('ab', 'c'\) uses the symbol 'ab', which cannot occur"),
    ([("x", "ab"), ("a", "b")], r"merge 0 \('x', 'ab'\) uses the symbol 'ab'"),  # made only later
    ([("a", "b"), ("b", "")], r"merge 1 \('b', ''\) uses the symbol ''"),
    ([("a", "</x>")], r"uses the symbol '</x>'"),  # a marker other than the one in use
])
def test_encode_refuses_merges_with_symbols_that_cannot_occur(merges, match) -> None:
    with pytest.raises(ValueError, match=match):
        encode("abc", merges)


def test_encoders_refuse_merges_of_the_wrong_kind() -> None:
    with pytest.raises(ValueError, match=r"merge 0 \(b'ab', b'c'\) uses the symbol b'ab', which cannot occur"):
        encode_bytes("abc", [(b"ab", b"c")])
    with pytest.raises(TypeError, match=r"merge 0 must be a pair of two bytes"):
        encode_bytes("abc", [("a", "b")])
    with pytest.raises(TypeError, match=r"merge 1 must be a pair of two str"):
        encode("abc", [("a", "b"), ("ab",)])


def test_decoders_refuse_what_no_encoding_gives() -> None:
    with pytest.raises(ValueError, match=r"symbols do not end with the end-of-word marker '</w>'"):
        decode(["a", "b"])
    with pytest.raises(UnicodeDecodeError):
        decode_bytes([b"\xe2\x82"])  # the first two bytes of a three-byte character


# --------------------------------------------------------------------------- corpus helpers


def test_corpus_keeps_prose_and_drops_code() -> None:
    assert looks_like_prose("Return the number of items in the container, or zero if it is empty.")
    assert not looks_like_prose("0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8")
    assert not looks_like_prose("Athens Greece Baghdad Iraq Bangkok Thailand Beijing China")
    text = "Add two numbers.\n\n>>> add(1, 2)\n3\n\nThe result is an int.\n```\nx = 1\n```"
    assert strip_code(text) == "Add two numbers.\n\n\nThe result is an int."
