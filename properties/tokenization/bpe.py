"""Properties of byte pair encoding, character level and byte level (``spec/tokenization/bpe.md``).

Expected values are computed here, never by the implementation under test: replays of
training written out below (pair counts of the corpus as merged so far, merges applied at
every occurrence), 001's ``learn_bpe_merges`` re-typed as :func:`learn_bpe_merges`, a
greedy longest-match segmenter, and the reference (:mod:`specformer.reference.tokenization.bpe`:
its naive trainer with the smallest-pair tie rule, its rank-order encoders, and byte-level
merges it learns once from the training text). Round trips compare the implementation
with itself. Corpora are small word counts over ``abcde`` (``properties/tokenization/strategies.py``),
so that pairs and ties repeat; tokenizers do not depend on dtype, so every property runs
in float64 rows only.
"""

from __future__ import annotations

import functools
import itertools
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context, ImplementationError
from specformer.optional import not_installed
from specformer.property import claim_property
from specformer.reference.tokenization.bpe import (
    byte_word_counts,
    encode,
    encode_bytes,
    train_bpe_naive,
    train_byte_bpe,
    train_byte_bpe_naive,
)
from specformer.reference.tokenization.training import tokenizer_training_words, training_text

from . import strategies as sf
from ..differences import first_difference

S = TypeVar("S", str, bytes)

#: The end-of-word marker of the protocol and of 001's code.
EOW = "</w>"
#: SentencePiece's word-start marker (U+2581), the other way to mark words in running text.
WORD_START = "\u2581"
#: Tokenizers are dtype-free: one row per implementation.
F64 = ("float64",)
#: More merges than any corpus of :func:`sf.corpora` can use (8 words of at most 6 letters and the marker).
EXHAUSTIVE = 60
#: Merges the text properties' byte-level merges are learned with (from the training text).
TEXT_MERGES = 300

BUDGETS = st.integers(0, 12)
#: Word lists as 001's code takes them: the words themselves, repeats included, in corpus order.
WORD_LISTS = st.lists(sf.words("abcd", 5), min_size=1, max_size=8)
#: Letters of 1, 2, 3 and 4 UTF-8 bytes (all ``\\p{L}``, so a word of them is one piece under
#: GPT-2's split and the reference's alike).
LETTERS = "ab\u00e9\u6f22\U0001D538"
#: A single pre-tokenisation piece: an optional leading space and letters.
ONE_PIECE = st.builds(str.__add__, st.sampled_from(["", " "]), sf.words(LETTERS, 6))
BYTE_CORPORA = st.dictionaries(ONE_PIECE.map(str.encode), st.integers(1, 5), min_size=1, max_size=6)
#: Whitespace runs that every whitespace splitter agrees on.
_SEPARATORS = st.sampled_from([" ", "  ", "\n", "\t", " \n\n "])


# --------------------------------------------------------------------------- the mathematics


def merge_everywhere(symbols: Sequence[S], pair: tuple[S, S]) -> list[S]:
    """``symbols`` with every occurrence of ``pair`` joined, scanning left to right without overlap."""
    out: list[S] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def pair_counts(segments: Mapping[Any, Sequence[S]], counts: Mapping[Any, int]) -> Counter[tuple[S, S]]:
    """How often each adjacent pair occurs, each word weighted by its count."""
    pairs: Counter[tuple[S, S]] = Counter()
    for word, symbols in segments.items():
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += counts[word]
    return pairs


def initial_segments(words: Mapping[str, int], end_of_word: str = EOW) -> dict[str, list[str]]:
    """Every word as its characters and the marker."""
    return {word: [*word, end_of_word] for word in words}


def replay(words: Mapping[str, int], merges: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """The training words after applying ``merges`` one by one, each at every occurrence."""
    segments = initial_segments(words)
    for pair in merges:
        segments = {word: merge_everywhere(symbols, tuple(pair)) for word, symbols in segments.items()}
    return segments


def base_symbols(words: Mapping[str, int]) -> set[str]:
    """The characters of the corpus and the marker: the vocabulary before any merge."""
    return set("".join(words)) | {EOW}


def vocabulary(words: Mapping[str, int], merges: Sequence[tuple[str, str]]) -> set[str]:
    """The base symbols and every merged symbol."""
    return base_symbols(words) | {a + b for a, b in merges}


def longest_match(word: str, vocab: set[str], end_of_word: str = EOW) -> list[str]:
    """Greedy longest match, left to right, of ``word`` plus the marker ``end_of_word`` over ``vocab`` (unknown
    characters alone)."""
    text, out, i = word + end_of_word, [], 0
    while i < len(text):
        end = next((j for j in range(len(text), i, -1) if text[i:j] in vocab), i + 1)
        out.append(text[i:end])
        i = end
    return out


def learn_bpe_merges(corpus: list[str], num_merges: int) -> list[tuple[str, str]]:
    """001's ``learn_bpe_merges`` as the document writes it, re-typed.

    Words are counted into a dict keyed by their symbols (characters and ``"</w>"``) in the
    order they first occur; each round counts the pairs in that order into a ``Counter``
    and takes ``max(pairs, key=pairs.get)``, which among tied pairs returns the first one
    counted; the merge is applied left to right in every word, and a rewritten word's
    count is assigned (not added) under its new symbols.
    """
    vocab: dict[tuple[str, ...], int] = {}
    for word in corpus:
        key = (*word, EOW)
        vocab[key] = vocab.get(key, 0) + 1
    merges: list[tuple[str, str]] = []
    for _ in range(num_merges):
        pairs: Counter[tuple[str, str]] = Counter()
        for symbols, count in vocab.items():
            for i in range(len(symbols) - 1):
                pairs[(symbols[i], symbols[i + 1])] += count
        if not pairs:
            break
        best = max(pairs, key=pairs.get)  # type: ignore[arg-type]  # the first of the tied pairs
        merges.append(best)
        rewritten: dict[tuple[str, ...], int] = {}
        for symbols, count in vocab.items():
            rewritten[tuple(merge_everywhere(symbols, best))] = count
        vocab = rewritten
    return merges


@functools.lru_cache(maxsize=2)
def training_byte_merges(num_merges: int = TEXT_MERGES) -> tuple[tuple[bytes, bytes], ...]:
    """Byte-level merges the reference learns from the training text (its own split), once per process."""
    return tuple(train_byte_bpe(byte_word_counts(training_text()), num_merges))


def byte_vocabulary(merges: Sequence[tuple[bytes, bytes]]) -> set[bytes]:
    """The 256 single bytes and every merged symbol."""
    return {bytes([b]) for b in range(256)} | {a + b for a, b in merges}


def tokens_mixing_characters(text: str, tokens: Sequence[bytes]) -> list[bytes]:
    """Tokens that hold part of a character together with anything else (another character or a part of one).

    A token is "whole" when it starts and ends on character boundaries of the text's UTF-8
    bytes, and "inside" when it lies within one character's bytes; the rest are returned.
    """
    starts = []  # the byte offset where each character starts
    offset = 0
    for char in text:
        starts.append(offset)
        offset += len(char.encode("utf-8"))
    boundaries = set(starts) | {offset}
    bad, at = [], 0
    for token in tokens:
        end = at + len(token)
        whole = at in boundaries and end in boundaries
        first = max(s for s in starts if s <= at) if starts else 0
        inside = end <= min((b for b in boundaries if b > first), default=offset)
        if not (whole or inside):
            bad.append(token)
        at = end
    return bad


@functools.lru_cache(maxsize=1)
def _clean_training_words() -> tuple[str, ...]:
    """The tokenizers' training words (``TRAINING_CORPUS``'s) without the marker's text, sorted (a fixed order for
    Hypothesis)."""
    return tuple(sorted(word for word in tokenizer_training_words() if EOW not in word))


@st.composite
def training_texts(draw: st.DrawFn) -> str:
    """Words the tokenizers train on (``TRAINING_CORPUS``) joined by whitespace runs (leading and trailing ones included)."""
    words = draw(st.lists(st.sampled_from(_clean_training_words()), max_size=12))
    parts = [draw(_SEPARATORS) if draw(st.booleans()) else ""]
    for word in words:
        parts += [word, draw(_SEPARATORS)]
    return "".join(parts)


SURROGATE_TEXTS = st.builds(lambda a, s, b: a + s + b, sf.texts(max_size=4),
                            st.sampled_from(["\ud800", "\udfff", "\udc80", "\ud83d"]), sf.texts(max_size=4))


# --------------------------------------------------------------------------- training


@claim_property("bpe.most-frequent-pair", needs=("bpe_train",), dtypes=F64)
@given(words=sf.sized_corpora(), num_merges=st.one_of(BUDGETS, st.integers(0, 64)))
@example(words={"cd": 5, "ab": 1, "ae": 1}, num_merges=1)  # counting words, not occurrences, picks (a, b)
@example(words={"abab": 1}, num_merges=3)  # merging only the first "ab" leaves one to merge again
# A corpus of more than 10 words whose last word is by far the most frequent: the first merge is (g, h) or
# (h, </w>), 50 times each, which a trainer that looks at the first 10 words only does not learn.
@example(words={"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1, "ab": 1, "cd": 1, "ef": 1, "gh": 50},
         num_merges=2)
def each_merge_is_a_most_frequent_pair_of_the_corpus_as_merged_so_far(ctx: Context, words, num_merges) -> None:
    """Replaying the merges, each one is a pair of the highest weighted count at its turn (ties: any of them)."""
    merges = ctx.bpe_train(words, num_merges)
    segments = initial_segments(words)
    for rank, pair in enumerate(merges):
        counts = pair_counts(segments, words)
        assert counts, f"merge {rank} {pair!r} was learned when no adjacent pair was left: {segments}"
        best = max(counts.values())
        assert counts.get(pair, 0) == best, (
            f"merge {rank} {pair!r} occurs {counts.get(pair, 0)} times in the corpus as merged so far, but "
            f"{max(counts, key=counts.__getitem__)!r} occurs {best} times (segments {segments}, merges {merges})")
        segments = {word: merge_everywhere(symbols, pair) for word, symbols in segments.items()}


@claim_property("bpe.most-frequent-pair", needs=("byte_bpe_train",), dtypes=F64)
@given(words=BYTE_CORPORA, num_merges=BUDGETS)
@example(words={"a\u00e9".encode(): 3, b"ab": 1}, num_merges=3)
def each_byte_merge_is_a_most_frequent_pair_and_training_stops_only_without_pairs(ctx: Context, words,
                                                                                 num_merges) -> None:
    """Byte level: replaying the implementation's merges on the pieces' bytes, each is a pair of highest weighted
    count at its turn (ties: any of them), and fewer merges than asked leave every piece a single symbol."""
    merges = ctx.byte_bpe_train(words, num_merges)
    assert len(merges) <= num_merges, f"{len(merges)} merges for a budget of {num_merges}"
    segments: dict[bytes, list[bytes]] = {word: [word[i:i + 1] for i in range(len(word))] for word in words}
    for rank, pair in enumerate(merges):
        counts = pair_counts(segments, words)
        best = max(counts.values(), default=0)
        assert best and counts.get(pair, 0) == best, (
            f"byte merge {rank} {pair!r} occurs {counts.get(pair, 0)} times in the pieces as merged so far, the "
            f"most frequent pair {best} times (merges {merges})")
        segments = {word: merge_everywhere(symbols, pair) for word, symbols in segments.items()}
    if len(merges) < num_merges:
        split = {word: symbols for word, symbols in segments.items() if len(symbols) > 1}
        assert not split, f"training stopped after {len(merges)} of {num_merges} merges with pairs left: {split}"


@claim_property("bpe.learn-bpe-merges", needs=(), about="documents-code", dtypes=F64)
@given(corpus=WORD_LISTS, num_merges=BUDGETS)
@example(corpus=["low", "low", "lower", "newest", "widest"], num_merges=8)
def the_documents_code_merges_most_frequent_pairs_and_agrees_with_the_reference_up_to_a_tie(
        ctx: Context, corpus, num_merges) -> None:
    """Corrected: 001's code learns most frequent pairs; its merges are the reference's until the first tie."""
    learned = learn_bpe_merges(corpus, num_merges)
    counts = Counter(corpus)
    segments = initial_segments(counts)
    first_tie = None
    for rank, pair in enumerate(learned):
        pairs = pair_counts(segments, counts)
        best = max(pairs.values(), default=0)
        assert pairs.get(pair, 0) == best > 0, (f"learn_bpe_merges' merge {rank} {pair!r} occurs "
                                               f"{pairs.get(pair, 0)} times; the most frequent pair {best}")
        if first_tie is None and sum(c == best for c in pairs.values()) > 1:
            first_tie = rank
        segments = {word: merge_everywhere(symbols, pair) for word, symbols in segments.items()}
    reference = train_bpe_naive(counts, num_merges)
    agreed = len(learned) if first_tie is None else first_tie
    assert learned[:agreed] == reference[:agreed] and (first_tie is not None or learned == reference), (
        f"learn_bpe_merges gives {learned}, the reference's naive trainer {reference} "
        f"(first tie at merge {first_tie})")


@claim_property("bpe.learn-bpe-merges", needs=(), about="documents-code", expect="counterexample", dtypes=F64)
@given(corpus=WORD_LISTS, num_merges=st.integers(1, 12))
@example(corpus=["ab", "cd"], num_merges=1)
def learn_bpe_merges_depends_only_on_the_words_and_their_counts_as_written(ctx: Context, corpus, num_merges) -> None:
    """As written: 001's code returns the same merges for the same words in another order."""
    forward, backward = learn_bpe_merges(corpus, num_merges), learn_bpe_merges(corpus[::-1], num_merges)
    assert forward == backward, (f"learn_bpe_merges({corpus}) = {forward} but the reversed corpus gives {backward}: "
                                 "max() returns whichever tied pair was counted first")


def first_tie(words: Mapping[str, int], merges: Sequence[tuple[str, str]], end_of_word: str = EOW) -> int | None:
    """The rank of the first of ``merges`` (learned with ``end_of_word``) taken when the highest pair count was
    shared, or None (no tie)."""
    segments = initial_segments(words, end_of_word)
    for rank, pair in enumerate(merges):
        counts = pair_counts(segments, words)
        best = max(counts.values(), default=0)
        if sum(c == best for c in counts.values()) > 1:
            return rank
        segments = {word: merge_everywhere(symbols, pair) for word, symbols in segments.items()}
    return None


@claim_property("bpe.learn-bpe-merges", needs=("bpe_train",), dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS)
@example(words={"ab": 1, "cd": 1}, num_merges=2)
def training_the_same_counts_again_gives_the_same_merges(ctx: Context, words, num_merges) -> None:
    """Corrected: the tie rule is the implementation's, but deterministic: the same counts, listed in the same
    order, give the same merges a second time, in the same process and in another one whose string hashes
    differ (a tie broken by a set's iteration order gives other merges there)."""
    first = ctx.bpe_train(words, num_merges)
    second = ctx.bpe_train(dict(words), num_merges)
    assert first == second, f"{words} gives {first}, and trained again {second}: they {first_difference(second, first)}"
    with ctx.in_another_process():
        elsewhere = ctx.bpe_train(dict(words), num_merges)
    assert first == elsewhere, (
        f"{words} gives {first}, and trained again in another process (another PYTHONHASHSEED) {elsewhere}: "
        f"they {first_difference(elsewhere, first)}")


@claim_property("bpe.learn-bpe-merges", needs=("bpe_train",), dtypes=F64)
@given(words=sf.corpora(max_count=30), num_merges=BUDGETS)
@example(words={"cd": 5, "ab": 1, "ae": 1}, num_merges=3)
def without_a_tie_the_trainer_learns_the_naive_merges(ctx: Context, words, num_merges) -> None:
    """Corrected: up to the first step where the highest pair count is shared, every correct trainer learns the
    reference's naive merges (001's algorithm); when no step is tied, the whole list, its length included.
    After a tie any most frequent pair is right (bpe.most-frequent-pair checks those)."""
    merges = ctx.bpe_train(words, num_merges)
    naive = train_bpe_naive(words, num_merges)
    tie = first_tie(words, naive)
    agreed = len(naive) if tie is None else tie
    assert merges[:agreed] == naive[:agreed], (
        f"{words}: the implementation learns {merges}, the naive trainer {naive}; no pair count was tied "
        f"before merge {agreed}")
    if tie is None:
        assert merges == naive, (f"{words}, no tie: the implementation learns {merges}, the naive trainer {naive}: "
                                 f"they {first_difference(merges, naive)}")


#: End-of-word markers other than the default ``</w>``: the protocol's ``end_of_word`` argument, drawn so that a
#: marker written into an implementation shows (none of their characters is a letter of the corpora).
OTHER_MARKERS = st.sampled_from(["_", "</s>", "$", "\u2581"])


@claim_property("bpe.learn-bpe-merges", needs=("bpe_train",), dtypes=F64)
@given(words=sf.corpora(max_count=30), num_merges=BUDGETS, marker=OTHER_MARKERS)
@example(words={"cd": 5, "ab": 1, "ae": 1}, num_merges=4, marker="_")
def with_another_end_of_word_marker_the_trainer_learns_the_same_merges_spelled_with_it(
        ctx: Context, words, num_merges, marker) -> None:
    """The marker is the caller's (``end_of_word``): trained with another marker, the implementation's merges are the
    naive trainer's with that marker up to the first step where the highest pair count is shared (the counts, and so
    the ties, do not depend on how the marker is spelled), and no symbol holds the default ``</w>``."""
    ctx.require("end_of_word", "any")
    merges = ctx.bpe_train(words, num_merges, end_of_word=marker)
    naive = train_bpe_naive(words, num_merges, end_of_word=marker)
    tie = first_tie(words, naive, marker)
    agreed = len(naive) if tie is None else tie
    default = [pair for pair in merges if any(EOW in symbol for symbol in pair)]
    assert not default, f"{words} with end_of_word={marker!r}: merges {default} hold the default marker {EOW!r}"
    assert merges[:agreed] == naive[:agreed], (
        f"{words} with end_of_word={marker!r}: the implementation learns {merges}, the naive trainer {naive}; no pair "
        f"count was tied before merge {agreed}")


@claim_property("bpe.vocabulary-size", needs=("bpe_train",), dtypes=F64)
@given(words=sf.corpora(), num_merges=st.integers(0, EXHAUSTIVE), fewer=st.integers(0, EXHAUSTIVE))
@example(words={"ab": 1}, num_merges=5, fewer=1)
def each_merge_adds_one_symbol_and_training_stops_early_only_without_pairs(ctx: Context, words, num_merges,
                                                                          fewer) -> None:
    """Corrected: ``|V| = |B| + len(merges)``, ``len(merges) = num_merges`` unless no pair is left; a smaller
    budget gives a prefix of the merges."""
    merges = ctx.bpe_train(words, num_merges)
    assert len(merges) <= num_merges, f"{len(merges)} merges for a budget of {num_merges}"
    vocab = base_symbols(words)
    segments = initial_segments(words)
    for rank, pair in enumerate(merges):
        assert pair[0] + pair[1] not in vocab, f"merge {rank} {pair!r} makes a symbol already in the vocabulary"
        vocab.add(pair[0] + pair[1])
        segments = {word: merge_everywhere(symbols, pair) for word, symbols in segments.items()}
    if len(merges) < num_merges:
        split = {word: symbols for word, symbols in segments.items() if len(symbols) > 1}
        assert not split, f"training stopped after {len(merges)} of {num_merges} merges with pairs left: {split}"
    k = min(fewer, num_merges)
    smaller = ctx.bpe_train(words, k)
    assert smaller == merges[:k], f"a budget of {k} gives {smaller}, not the first {k} of {merges}"


@claim_property("bpe.vocabulary-size", needs=("bpe_train",), expect="counterexample", dtypes=F64)
@given(words=sf.corpora(), num_merges=st.integers(0, EXHAUSTIVE))
@example(words={"ab": 1}, num_merges=5)
def the_vocabulary_has_the_base_symbols_plus_num_merges_as_written(ctx: Context, words, num_merges) -> None:
    """As written: ``num_merges`` merges give a vocabulary of the base symbols plus ``num_merges``."""
    merges = ctx.bpe_train(words, num_merges)
    size, target = len(vocabulary(words, merges)), len(base_symbols(words)) + num_merges
    assert size == target, (f"{words} with {num_merges} merges: a vocabulary of {size} symbols, not {target} "
                            f"({len(merges)} merges before no pair was left)")


# --------------------------------------------------------------------------- encoding


@claim_property("bpe.merge-order", needs=("bpe_encode",), dtypes=F64)
@given(words=sf.sized_corpora(), num_merges=st.one_of(BUDGETS, st.integers(0, 64)),
       word=st.one_of(sf.words("abcdef", 8), st.text(st.sampled_from("abcdefghi"), min_size=12, max_size=32)))
@example(words={"bc": 3}, num_merges=1, word="bcbc")  # one pass, first occurrence only: bc b c
@example(words={"bbbc": 2}, num_merges=2, word="bbcbc")  # the pair most frequent in the word first: b bc bc
@example(words={"bbcb": 1}, num_merges=2, word="bb")  # the longest symbol first: bb </w>
@example(words={"ab": 2}, num_merges=1, word="ab" * 6)  # a word over 10 letters: ab ab ab ab ab ab </w>
def encoding_applies_the_merges_in_the_order_they_were_learned(ctx: Context, words, num_merges, word) -> None:
    """With merges the reference learned, the implementation's symbols of a word are the reference's rank-order ones."""
    merges = train_bpe_naive(words, num_merges)
    symbols, expected = ctx.bpe_encode(word, merges), encode(word, merges)
    assert symbols == expected, f"{word!r} with merges {merges}: {symbols}, in rank order {expected}"


@claim_property("bpe.merge-order", needs=("bpe_encode",), dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS, word=sf.words("abcdef", 8), marker=OTHER_MARKERS)
@example(words={"ab": 3}, num_merges=2, word="abab", marker="_")  # a b_ -> ab_ : ab | ab_
def with_another_end_of_word_marker_the_split_is_the_rank_order_one_spelled_with_it(ctx: Context, words, num_merges,
                                                                                     word, marker) -> None:
    """The marker is the caller's (``end_of_word``): with merges the reference learned with another marker, the
    implementation's symbols of a word are the reference's rank-order ones, its last symbol ending with that
    marker."""
    ctx.require("end_of_word", "any")
    merges = train_bpe_naive(words, num_merges, end_of_word=marker)
    symbols, expected = ctx.bpe_encode(word, merges, end_of_word=marker), encode(word, merges, end_of_word=marker)
    assert symbols == expected, (f"{word!r} with end_of_word={marker!r} and merges {merges}: {symbols}, in rank "
                                 f"order {expected}")


@claim_property("bpe.merge-order", needs=("bpe_train", "bpe_encode"), dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS)
@example(words={"aaa": 2}, num_merges=1)  # training merges "a a a" left to right: aa a
def encoding_a_training_word_gives_its_training_segmentation(ctx: Context, words, num_merges) -> None:
    """With its own merges, the implementation encodes each training word as training left it."""
    merges = ctx.bpe_train(words, num_merges)
    segments = replay(words, merges)
    for word, expected in segments.items():
        symbols = ctx.bpe_encode(word, merges)
        assert symbols == expected, f"{word!r}: encoded as {symbols}, training left it as {expected} ({merges})"


@claim_property("bpe.merge-order", needs=("byte_bpe_encode",), dtypes=F64)
@given(words=BYTE_CORPORA, num_merges=BUDGETS, text=ONE_PIECE)
@example(words={b"ba": 2}, num_merges=1, text="baba")
@example(words={b"bbbc": 4}, num_merges=2, text="bcbbcb")
def byte_encoding_applies_the_merges_in_the_order_they_were_learned(ctx: Context, words, num_merges, text) -> None:
    """Byte level: on one pre-tokenisation piece the tokens are the reference's rank-order ones."""
    merges = train_byte_bpe_naive(words, num_merges)
    tokens, expected = ctx.byte_bpe_encode(text, merges), encode_bytes(text, merges)
    assert tokens == expected, f"{text!r} with merges {merges}: {tokens}, in rank order {expected}"


def words_upto(alphabet: str, length: int) -> list[str]:
    """Every word of 1 to ``length`` letters over ``alphabet``, shortest first."""
    return ["".join(letters) for n in range(1, length + 1) for letters in itertools.product(alphabet, repeat=n)]


def rank_order_differs(merges: Sequence[tuple[str, str]], vocab: set[str], alphabet: str,
                       limit: int = 3) -> list[str]:
    """Up to ``limit`` of the shortest words over ``alphabet`` (at most 4 letters) whose rank-order split with
    ``merges`` (the reference's encoder, used only to choose where to look) is not the greedy longest match."""
    found = []
    for word in words_upto(alphabet, 4):
        try:
            differs = encode(word, merges) != longest_match(word, vocab)
        except ValueError:  # merges that no trainer learns (a symbol that cannot occur): nothing to search
            return found
        if differs:
            found.append(word)
            if len(found) == limit:
                break
    return found


def split_in_rank_order_where_longest_match_differs(ctx: Context, words: Mapping[str, int],
                                                    merges: Sequence[tuple[str, str]], source: str) -> None:
    """Assert that the implementation splits, in rank order, the words of up to 4 letters over the corpus's letters
    where rank order and the greedy longest match over the vocabulary disagree (``source`` names the merges)."""
    letters = "".join(sorted(set("".join(words))))
    for word in rank_order_differs(merges, vocabulary(words, merges), letters):
        symbols, expected = ctx.bpe_encode(word, merges), encode(word, merges)
        assert symbols == expected, f"{word!r} with {source} {merges}: {symbols}, in rank order {expected}"


def split_by_longest_match(ctx: Context, words: Mapping[str, int], merges: Sequence[tuple[str, str]], word: str,
                           source: str) -> None:
    """Assert, as written, that the implementation splits ``word`` and the words of up to 4 letters over the corpus's
    letters whose rank-order split differs from the longest match by the greedy longest match (``source`` names the
    merges)."""
    vocab = vocabulary(words, merges)
    letters = "".join(sorted(set("".join(words))))
    for candidate in [word, *rank_order_differs(merges, vocab, letters)]:
        symbols, greedy = ctx.bpe_encode(candidate, merges), longest_match(candidate, vocab)
        assert symbols == greedy, (f"{candidate!r} with {source} {merges}: BPE gives {symbols}, the longest match "
                                   f"over the vocabulary {greedy}")


@claim_property("bpe.longest-match", needs=("bpe_train", "bpe_encode"), dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS)
@example(words={"bc": 10, "bcd": 1, "ab": 5, "abe": 1}, num_merges=3)
def where_rank_order_and_longest_match_differ_the_split_is_rank_order(ctx: Context, words, num_merges) -> None:
    """Corrected: on the words where the two rules disagree (found with the implementation's own merges), the
    implementation's split is the rank-order one, not the longest match."""
    merges = ctx.bpe_train(words, num_merges)
    split_in_rank_order_where_longest_match_differs(ctx, words, merges, "its own merges")


@claim_property("bpe.longest-match", needs=("bpe_encode",), dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS)
@example(words={"bc": 10, "bcd": 1, "ab": 5, "abe": 1}, num_merges=3)
def with_merges_learned_here_the_split_is_rank_order_where_longest_match_differs(ctx: Context, words,
                                                                                 num_merges) -> None:
    """Corrected, the encoder alone: with merges the reference learned from the corpus, on the words where rank
    order and the greedy longest match disagree, the implementation's split is the rank-order one."""
    merges = train_bpe_naive(words, num_merges)
    split_in_rank_order_where_longest_match_differs(ctx, words, merges, "the reference's merges")


@claim_property("bpe.longest-match", needs=("bpe_train", "bpe_encode"), expect="counterexample", dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS, word=sf.words("abcde", 6))
@example(words={"bc": 10, "bcd": 1, "ab": 5, "abe": 1}, num_merges=3, word="abc")  # no tie: any tie rule
def encoding_takes_the_longest_vocabulary_symbol_first_as_written(ctx: Context, words, num_merges, word) -> None:
    """As written: encoding greedily takes the longest learned subword, left to right. Searched with the
    implementation's own merges (whatever its tie rule): besides the drawn word, the words of up to 4 letters
    of the corpus whose rank-order split differs from the longest match are encoded."""
    merges = ctx.bpe_train(words, num_merges)
    split_by_longest_match(ctx, words, merges, word, "its own merges")


@claim_property("bpe.longest-match", needs=("bpe_encode",), expect="counterexample", dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS, word=sf.words("abcde", 6))
@example(words={"bc": 10, "bcd": 1, "ab": 5, "abe": 1}, num_merges=3, word="abc")
def encoding_with_merges_learned_here_takes_the_longest_vocabulary_symbol_first_as_written(ctx: Context, words,
                                                                                           num_merges, word) -> None:
    """As written, the encoder alone: with merges the reference learned from the corpus, the implementation's
    split of the drawn word, and of the words of up to 4 letters of the corpus whose rank-order split differs from
    the longest match, is the greedy longest match over the vocabulary."""
    merges = train_bpe_naive(words, num_merges)
    split_by_longest_match(ctx, words, merges, word, "the reference's merges")


# --------------------------------------------------------------------------- coverage and OOV


def spelled_with_vocabulary_symbols(ctx: Context, words: Mapping[str, int], merges: Sequence[tuple[str, str]],
                                    word: str) -> None:
    """Assert that the implementation's symbols of ``word`` spell it and the marker, and are all in the vocabulary
    of ``words`` and ``merges``."""
    symbols = ctx.bpe_encode(word, merges)
    assert symbols and all(symbols) and symbols[-1].endswith(EOW), f"{word!r}: symbols {symbols}"
    assert "".join(symbols) == word + EOW, f"{word!r}: the symbols {symbols} spell {''.join(symbols)!r}"
    unknown = [s for s in symbols if s not in vocabulary(words, merges)]
    assert not unknown, f"{word!r}: symbols {unknown} are not in the vocabulary (merges {merges})"


def no_symbol_out_of_the_vocabulary(ctx: Context, words: Mapping[str, int], merges: Sequence[tuple[str, str]],
                                    word: str) -> None:
    """Assert, as written, that every symbol of the implementation's split of ``word`` is in the vocabulary."""
    symbols = ctx.bpe_encode(word, merges)
    unknown = [s for s in symbols if s not in vocabulary(words, merges)]
    assert not unknown, (f"{word!r} is encoded as {symbols}; {unknown} never occurred in the corpus {words}: "
                         "out of the vocabulary")


@claim_property("bpe.no-oov", needs=("bpe_train", "bpe_encode"), dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS, data=st.data())
def a_word_of_training_characters_is_spelled_with_vocabulary_symbols(ctx: Context, words, num_merges, data) -> None:
    """Corrected: a word made of characters seen in training is covered by the vocabulary and spelled exactly."""
    alphabet = sorted(set("".join(words)))
    word = data.draw(st.text(st.sampled_from(alphabet), max_size=8), label="word")
    merges = ctx.bpe_train(words, num_merges)
    spelled_with_vocabulary_symbols(ctx, words, merges, word)


@claim_property("bpe.no-oov", needs=("bpe_encode",), dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS, data=st.data())
def with_merges_learned_here_a_word_of_training_characters_is_spelled_with_vocabulary_symbols(ctx: Context, words,
                                                                                             num_merges,
                                                                                             data) -> None:
    """Corrected, the encoder alone: with merges the reference learned from the corpus, a word made of the
    corpus's characters is spelled exactly (its characters and the marker) with symbols of the vocabulary."""
    alphabet = sorted(set("".join(words)))
    word = data.draw(st.text(st.sampled_from(alphabet), max_size=8), label="word")
    spelled_with_vocabulary_symbols(ctx, words, train_bpe_naive(words, num_merges), word)


@claim_property("bpe.no-oov", needs=("bpe_train", "bpe_encode"), expect="counterexample", dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS, word=sf.words("abcdez\u2603", 6))
@example(words={"ab": 2}, num_merges=2, word="a\u2603")
def every_word_is_spelled_with_vocabulary_symbols_as_written(ctx: Context, words, num_merges, word) -> None:
    """As written: subword units leave no word out of the vocabulary."""
    no_symbol_out_of_the_vocabulary(ctx, words, ctx.bpe_train(words, num_merges), word)


@claim_property("bpe.no-oov", needs=("bpe_encode",), expect="counterexample", dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS, word=sf.words("abcdez\u2603", 6))
@example(words={"ab": 2}, num_merges=2, word="a\u2603")
def with_merges_learned_here_every_word_is_spelled_with_vocabulary_symbols_as_written(ctx: Context, words,
                                                                                      num_merges, word) -> None:
    """As written, the encoder alone: with merges the reference learned from the corpus, no symbol of any word
    (over the corpus's letters and others) is out of the vocabulary."""
    no_symbol_out_of_the_vocabulary(ctx, words, train_bpe_naive(words, num_merges), word)


@claim_property("bpe.no-oov", needs=("tokenize_text", "detokenize_text"), dtypes=F64)
@given(text=training_texts())
@example(text="  return\tthe\n value ")
@example(text='\u2018"try"\u2026"except"\u2019 ')  # NFKC writes the ellipsis as three full stops
def text_of_training_words_comes_back_word_for_word(ctx: Context, text) -> None:
    """Character level on running text: the words come back in order. Whitespace between them may come back as it
    was or as single spaces (a tokenizer that splits on spaces only keeps a tab inside a word; one that splits on
    all whitespace keeps none); ``back.split() == text.split()`` either way. The text may come back in its NFKC
    form (a tokenizer may normalise first, as SentencePiece does by default: ``\u2026`` comes back as ``...``)."""
    tokens = ctx.tokenize_text("bpe", text)
    back = ctx.detokenize_text("bpe", tokens)
    assert back.split() in (text.split(), nfkc(text).split()), (
        f"{text!r} -> {tokens} -> {back!r}: other words (nor the words of its NFKC form)")


@claim_property("bpe.no-oov", needs=("byte_bpe_encode",), dtypes=F64)
@given(text=sf.texts())
@example(text="\U0001F600 \x00\u200d\U0001D11E")
def byte_level_tokens_are_always_in_the_byte_vocabulary(ctx: Context, text) -> None:
    """Byte level: the tokens of any text are single bytes or merged symbols, and hold the text's UTF-8 bytes."""
    merges = training_byte_merges()
    tokens = ctx.byte_bpe_encode(text, merges)
    assert b"".join(tokens) == text.encode("utf-8"), f"{text!r}: tokens {tokens} do not hold its UTF-8 bytes"
    vocab = byte_vocabulary(merges)
    unknown = [t for t in tokens if t not in vocab]
    assert not unknown, f"{text!r}: tokens {unknown} are outside the byte vocabulary"


# --------------------------------------------------------------------------- byte level


@claim_property("bpe.byte-level-round-trip", needs=("byte_bpe_encode", "byte_bpe_decode"), dtypes=F64)
@given(text=sf.texts())
@example(text="e\u0301 \u00e9 \U0001F468\u200d\U0001F469\u200d\U0001F467 \r\n\x00\ufeff")
def byte_level_bpe_decodes_every_text_back_exactly(ctx: Context, text) -> None:
    """``decode(encode(text)) == text`` for any Unicode text, with merges learned from the training text."""
    tokens = ctx.byte_bpe_encode(text, training_byte_merges())
    back = ctx.byte_bpe_decode(tokens)
    assert back == text, f"{text!r} -> {tokens} -> {back!r}"


@claim_property("bpe.byte-level-round-trip", needs=("tokenize_text", "detokenize_text"), dtypes=F64)
@given(text=sf.texts())
@example(text="  two\tspaces\u00a0and\u3000more  \n")
def the_byte_level_text_tokenizer_gives_every_text_back(ctx: Context, text) -> None:
    """The implementation's trained byte-level tokenizer: detokenising the tokens gives the text back."""
    tokens = ctx.tokenize_text("byte-bpe", text)
    back = ctx.detokenize_text("byte-bpe", tokens)
    assert back == text, f"{text!r} -> {tokens} -> {back!r}"


@claim_property("bpe.byte-level-round-trip", needs=("byte_bpe_encode", "byte_bpe_decode"), dtypes=F64)
@given(text=SURROGATE_TEXTS)
@example(text="a\ud800b")
def lone_surrogates_come_back_exactly_or_are_refused(ctx: Context, text) -> None:
    """A ``str`` with a lone surrogate (not Unicode text) round-trips; an implementation may declare that it
    refuses such strings (``lone_surrogates=False``: not applicable), never alter one."""
    ctx.require("lone_surrogates", True)
    tokens = ctx.byte_bpe_encode(text, training_byte_merges())
    back = ctx.byte_bpe_decode(tokens)
    same = back == text  # not in the assert: pytest's rewritten diff would print the raw surrogate
    assert same, f"{text!r} -> {tokens} -> {back!r}"


#: What a byte-level decoder may do with bytes that are not UTF-8 (no encoder makes them from a ``str``).
INVALID_UTF8 = (b"\xff", b"\xc3", b"\x80", b"\xe6\xbc", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xed\xa0\x80",
                b"\xf8\x88\x80\x80\x80")
#: The exception types that count as refusing the bytes (``ValueError`` and its Unicode subclasses).
REFUSALS = ("ValueError", "UnicodeDecodeError", "UnicodeError")


@st.composite
def byte_token_sequences(draw: st.DrawFn) -> list[bytes]:
    """Byte tokens: UTF-8 of awkward text with invalid sequences spliced in, cut at arbitrary byte offsets."""
    parts = draw(st.lists(st.one_of(sf.texts(max_size=3).map(str.encode), st.sampled_from(INVALID_UTF8),
                                    st.binary(max_size=4)), max_size=6), label="parts")
    data = b"".join(parts)
    cuts = sorted(draw(st.sets(st.integers(1, max(len(data) - 1, 1)), max_size=6), label="cuts"))
    bounds = [0, *[c for c in cuts if c < len(data)], len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def _encodes_to(text: str, errors: str, data: bytes) -> bool:
    """Whether ``text`` encodes to ``data`` in UTF-8 with the error handler ``errors``."""
    try:
        return text.encode("utf-8", errors) == data
    except UnicodeEncodeError:
        return False


@claim_property("bpe.byte-level-round-trip", needs=("byte_bpe_decode",), dtypes=F64)
@given(tokens=byte_token_sequences())
@example(tokens=[b"a", b"\xc3", b"\xa9", b"\xff", b"b"])
def decoding_bytes_that_are_not_utf8_is_refused_or_marked_never_silent(ctx: Context, tokens) -> None:
    """Any byte tokens, cut anywhere: UTF-8 (a character may span tokens) decodes exactly; other bytes are refused
    with a ``ValueError``, decoded losslessly (bytes that re-encode to the same, such as surrogates with
    ``"surrogatepass"``), or replaced by U+FFFD per maximal ill-formed subpart (Unicode's practice, Python's
    ``"replace"``); never dropped or decoded token by token."""
    data = b"".join(tokens)
    try:
        text = ctx.byte_bpe_decode(tokens)
    except ImplementationError as exc:
        refused = any(f" raised {name}:" in str(exc) for name in REFUSALS)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            if refused:
                return
        raise
    try:
        expected = data.decode("utf-8")
    except UnicodeDecodeError:
        lossless = any(_encodes_to(text, errors, data) for errors in ("surrogatepass", "surrogateescape"))
        replaced = text == data.decode("utf-8", "replace")
        assert lossless or replaced, (f"{tokens} (not UTF-8) decode to {text!r}: neither the bytes themselves nor "
                                      f"U+FFFD per ill-formed subpart {data.decode('utf-8', 'replace')!r}")
        return
    assert text == expected, f"{tokens} (UTF-8 of {expected!r}) decode to {text!r}"


@claim_property("bpe.byte-fallback", needs=("byte_bpe_encode",), dtypes=F64)
@given(text=sf.texts())
@example(text="\u00e9\U0001F600")
def without_merges_every_token_is_one_byte(ctx: Context, text) -> None:
    """Corrected: byte-level BPE starts from the bytes: with no merges the tokens are the text's UTF-8 bytes."""
    tokens = ctx.byte_bpe_encode(text, [])
    expected = [bytes([b]) for b in text.encode("utf-8")]
    assert tokens == expected, f"{text!r} with no merges: {tokens}, its bytes are {expected}"


@st.composite
def byte_corpora_and_a_piece(draw: st.DrawFn) -> tuple[dict[bytes, int], str]:
    """A byte-level corpus and a text to encode: one of the corpus's own words (whose byte pairs the merges are
    learned from) or, as often, a piece drawn on its own."""
    words = draw(BYTE_CORPORA)
    own = st.sampled_from(sorted(word.decode("utf-8") for word in words))
    return words, draw(st.one_of(own, ONE_PIECE))


@claim_property("bpe.byte-fallback", needs=("byte_bpe_encode",), expect="counterexample", dtypes=F64)
@given(case=byte_corpora_and_a_piece(), num_merges=st.integers(1, 10))
@example(case=({"a\u00e9".encode(): 5}, "a\u00e9"), num_merges=1)
def tokens_hold_whole_characters_or_a_part_of_one_as_written(ctx: Context, case, num_merges) -> None:
    """As written (characters first, bytes as a fallback): no token holds part of a character next to anything else."""
    words, text = case
    merges = train_byte_bpe_naive(words, num_merges)
    tokens = ctx.byte_bpe_encode(text, merges)
    mixed = tokens_mixing_characters(text, tokens)
    assert not mixed, f"{text!r} with merges {merges}: the tokens {mixed} cut a character and join it to a neighbour"


# --------------------------------------------------------------------------- what gets merged


#: The documents' two examples: (first part, second part).
DOCUMENTS_EXAMPLES = [("un", "happiness"), ("token", "ization")]


def parts_corpus(first: str, second: str) -> tuple[dict[str, int], int]:
    """The corpus where both parts are frequent (``un-`` and ``happiness`` 20 times each, the whole word once), and
    the number of merges that builds the two parts (one fewer than their symbols, the marker included)."""
    return {first + "-": 20, second: 20, first + second: 1}, len(first) - 1 + len(second)


@claim_property("bpe.subword-examples", needs=("bpe_train", "bpe_encode"), dtypes=F64)
@given(parts=st.sampled_from(DOCUMENTS_EXAMPLES))
def merges_learned_from_the_parts_give_the_documents_segmentations(ctx: Context, parts) -> None:
    """From a corpus where both parts are frequent (``un-``, ``happiness`` 20 times; the whole word once), the
    merges that every pair of count 21 gets give ``un | happiness</w>`` and ``token | ization</w>``."""
    first, second = parts
    words, num_merges = parts_corpus(first, second)
    merges = ctx.bpe_train(words, num_merges)
    symbols = ctx.bpe_encode(first + second, merges)
    assert symbols == [first, second + EOW], f"{first + second!r} with merges {merges}: {symbols}"


@claim_property("bpe.subword-examples", needs=("bpe_encode",), dtypes=F64)
@given(parts=st.sampled_from(DOCUMENTS_EXAMPLES))
def merges_learned_here_from_the_parts_encode_the_documents_segmentations(ctx: Context, parts) -> None:
    """The encoder alone: with the merges the reference learns from the corpus where both parts are frequent (the
    same symbols under every tie rule), the implementation splits ``unhappiness`` as ``un | happiness</w>`` and
    ``tokenization`` as ``token | ization</w>``."""
    first, second = parts
    words, num_merges = parts_corpus(first, second)
    merges = train_bpe_naive(words, num_merges)
    symbols = ctx.bpe_encode(first + second, merges)
    assert symbols == [first, second + EOW], f"{first + second!r} with the reference's merges {merges}: {symbols}"


@claim_property("bpe.subword-examples", needs=("bpe_train",), dtypes=F64)
@given(parts=st.sampled_from(DOCUMENTS_EXAMPLES))
def the_merges_learned_from_the_parts_build_the_documents_segmentations(ctx: Context, parts) -> None:
    """The trainer alone: the implementation's merges from the corpus where both parts are frequent, replayed here
    on the whole word (each at every occurrence), leave it as ``un | happiness</w>`` and ``token | ization</w>``."""
    first, second = parts
    words, num_merges = parts_corpus(first, second)
    merges = ctx.bpe_train(words, num_merges)
    symbols = replay({first + second: 1}, merges)[first + second]
    assert symbols == [first, second + EOW], (
        f"{first + second!r} with the implementation's merges {merges}, replayed: {symbols}")


def more_merges_never_give_more_symbols(ctx: Context, words: Sequence[str], merges: Sequence[tuple[str, str]],
                                        fewer: int) -> None:
    """Assert that the implementation splits each of ``words`` into no more symbols with ``merges`` than with their
    first ``fewer``."""
    k = min(fewer, len(merges))
    for word in words:
        more, less = ctx.bpe_encode(word, merges), ctx.bpe_encode(word, merges[:k])
        assert len(more) <= len(less), f"{word!r}: {less} with {k} merges, {more} with {len(merges)} ({merges})"


def no_rare_word_whole_before_a_commoner_one(words: Mapping[str, int], whole: set[str],
                                             merges: Sequence[tuple[str, str]]) -> None:
    """Assert, as written, that no word of ``whole`` (the training words that are one symbol) is rarer than a split
    one."""
    for rare in whole:
        commoner = [w for w in words if w not in whole and words[w] > words[rare]]
        assert not commoner, (f"with merges {merges}, {rare!r} (seen {words[rare]} times) is one symbol while "
                              f"{commoner} (seen more often) are split")


@claim_property("bpe.common-words", needs=("bpe_train", "bpe_encode"), dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS, fewer=BUDGETS)
@example(words={"abab": 1, "ab": 2}, num_merges=3, fewer=1)
def more_merges_never_split_a_word_further_and_enough_make_each_training_word_one_symbol(
        ctx: Context, words, num_merges, fewer) -> None:
    """Corrected: a word's symbol count never grows with more merges; trained to the end, every training word is one."""
    merges = ctx.bpe_train(words, num_merges)
    more_merges_never_give_more_symbols(ctx, words, merges, fewer)
    everything = ctx.bpe_train(words, EXHAUSTIVE)
    for word in words:
        symbols = ctx.bpe_encode(word, everything)
        assert symbols == [word + EOW], f"{word!r} is {symbols} after training ran out of pairs ({everything})"


@claim_property("bpe.common-words", needs=("bpe_encode",), dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS, fewer=BUDGETS, word=sf.words("abcdef", 8))
@example(words={"abab": 1, "ab": 2}, num_merges=3, fewer=1, word="abab")
def with_merges_learned_here_more_never_split_a_word_further_and_all_make_training_words_one_symbol(
        ctx: Context, words, num_merges, fewer, word) -> None:
    """Corrected, the encoder alone: with merges the reference learned from the corpus, no training word (nor a
    drawn word) gets more symbols from more of them, and with all the merges the reference learns until no pair is
    left every training word is one symbol, its characters and the marker."""
    more_merges_never_give_more_symbols(ctx, [*words, word], train_bpe_naive(words, num_merges), fewer)
    everything = train_bpe_naive(words, EXHAUSTIVE)
    for training_word in words:
        symbols = ctx.bpe_encode(training_word, everything)
        assert symbols == [training_word + EOW], (
            f"{training_word!r} is {symbols} with the {len(everything)} merges the reference learns until no pair "
            f"is left ({everything})")


@claim_property("bpe.common-words", needs=("bpe_train",), dtypes=F64)
@given(words=sf.corpora())
@example(words={"abab": 1, "ab": 2})
def training_until_no_pair_is_left_makes_each_training_word_one_symbol(ctx: Context, words) -> None:
    """Corrected, the trainer alone: the implementation's merges with a budget larger than any corpus here can use
    (60), replayed here on the training words (each at every occurrence), leave every training word one symbol."""
    everything = ctx.bpe_train(words, EXHAUSTIVE)
    split = {word: symbols for word, symbols in replay(words, everything).items() if symbols != [word + EOW]}
    assert not split, f"after training ran out of pairs ({everything}), replayed, training words are split: {split}"


@claim_property("bpe.common-words", needs=("bpe_train", "bpe_encode"), expect="counterexample", dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS)
@example(words={"xab": 10, "ab": 1, "cd": 5}, num_merges=2)
def frequent_words_become_single_symbols_before_rarer_ones_as_written(ctx: Context, words, num_merges) -> None:
    """As written: common words become single tokens while rarer ones are split, so no word is whole while a
    more frequent one is split."""
    merges = ctx.bpe_train(words, num_merges)
    whole = {word for word in words if len(ctx.bpe_encode(word, merges)) == 1}
    no_rare_word_whole_before_a_commoner_one(words, whole, merges)


@claim_property("bpe.common-words", needs=("bpe_train",), expect="counterexample", dtypes=F64)
@given(words=sf.corpora(), num_merges=BUDGETS)
@example(words={"xab": 10, "ab": 1, "cd": 5}, num_merges=2)
def training_makes_frequent_words_single_symbols_before_rarer_ones_as_written(ctx: Context, words,
                                                                             num_merges) -> None:
    """As written, the trainer alone: with the implementation's merges replayed here on the training words, no word
    is one symbol while a more frequent one is split."""
    merges = ctx.bpe_train(words, num_merges)
    whole = {word for word, symbols in replay(words, merges).items() if len(symbols) == 1}
    no_rare_word_whole_before_a_commoner_one(words, whole, merges)


def nfkc(text: str) -> str:
    """``text`` in Unicode's compatibility composition (NFKC): what a tokenizer that normalises its input first,
    as SentencePiece does by default, segments (``"…"`` becomes ``"..."``, ``"ﬁ"`` becomes ``"fi"``)."""
    return unicodedata.normalize("NFKC", text)


@claim_property("bpe.between-characters-and-words", needs=("tokenize_text",), dtypes=F64)
@given(text=training_texts())
@example(text="one\ttwo three")
@example(text='"try"…"finally" …')  # NFKC writes the ellipsis as three full stops
def a_text_has_at_least_a_token_per_word_and_at_most_one_per_character_and_marker(ctx: Context, text) -> None:
    """Character level on training words: at least one token per space-separated chunk holding a word (every
    whitespace rule splits at spaces), at most one per character that is not a space plus one marker per word
    (a word: a space-separated chunk, or a whitespace-separated one, whichever are more). Characters are counted
    in the text or in its NFKC form, whichever has more: a tokenizer may normalise first."""
    tokens = ctx.tokenize_text("bpe", text)
    chunks = [chunk for chunk in text.split(" ") if chunk]  # a chunk may be a tab or a newline alone
    least = sum(not chunk.isspace() for chunk in chunks)
    most = max(sum(c != " " for c in form) for form in (text, nfkc(text))) + max(len(chunks), len(text.split()))
    assert least <= len(tokens) <= most, (
        f"{text!r}: {len(tokens)} tokens for {least} space-separated chunks with a word and at most {most} "
        f"characters and markers: {tokens}")


@st.composite
def spaced_texts(draw: st.DrawFn) -> tuple[str, list[str]]:
    """Training words joined by runs of spaces (the whitespace every splitter splits at), and the words."""
    words = draw(st.lists(st.sampled_from(_clean_training_words()), min_size=1, max_size=12), label="words")
    runs = draw(st.lists(st.sampled_from([" ", "  ", "   "]), min_size=len(words) + 1, max_size=len(words) + 1))
    ends = draw(st.tuples(st.booleans(), st.booleans()))
    text = (runs[0] if ends[0] else "") + "".join(w + r for w, r in zip(words, runs[1:]))
    return (text if ends[1] else text.rstrip(" ")), words


@claim_property("bpe.between-characters-and-words", needs=("tokenize_text",), dtypes=F64)
@given(case=spaced_texts())
@example(case=(" the  value ", ["the", "value"]))
@example(case=('"try"…"finally" …,', ['"try"…"finally"', "…,"]))  # NFKC: the ellipsis is three full stops
def each_word_is_its_own_tokens_ending_in_one_marker(ctx: Context, case) -> None:
    """Word by word: no token holds whitespace; the tokens fall into one group per word, in order, each carrying
    exactly one word marker and spelling the word without it. The marker is the protocol's end-of-word ``</w>``
    at the end of a word's last token, or SentencePiece's ``▁`` at the start of its first (whichever the first
    token shows). A word may be spelled in its NFKC form: normalising before segmenting is SentencePiece's
    default, and no part of this claim."""
    text, words = case
    tokens = ctx.tokenize_text("bpe", text)
    spaced = [t for t in tokens if any(c.isspace() for c in t)]
    assert not spaced, f"{text!r}: tokens {spaced} hold whitespace ({tokens})"
    start = bool(tokens) and tokens[0].startswith(WORD_START)
    marker = WORD_START if start else EOW
    groups: list[list[str]] = []
    for token in tokens:
        assert token.count(marker) <= 1 and (
            marker not in token or (token.startswith(marker) if start else token.endswith(marker))), (
            f"{text!r}: the token {token!r} holds the marker {marker!r} other than once at its "
            f"{'start' if start else 'end'} ({tokens})")
        if start and token.startswith(marker) or not groups or (not start and groups[-1][-1].endswith(marker)):
            groups.append([])
        groups[-1].append(token)
    if not start:
        assert not groups or groups[-1][-1].endswith(marker), (
            f"{text!r}: the tokens {groups[-1]} after the last marker end no word ({tokens})")
    assert all(marker in "".join(g) for g in groups), f"{text!r}: a group of {tokens} has no marker {marker!r}"
    spelled = ["".join(group).replace(marker, "") for group in groups]
    assert len(spelled) == len(words) and all(s in (w, nfkc(w)) for s, w in zip(spelled, words)), (
        f"{text!r}: the tokens {tokens} spell the words {spelled}, not {words} (nor their NFKC forms)")


#: 004's second example and the splits the slide shows (markers dropped).
GRAD_STUDENT = "The best gradient descent method is grad student descent"
SLIDE_SPLITS = {"gradient": ["grad", "i", "ent"], "descent": ["desc", "ent"], "student": ["stud", "ent"]}


@claim_property("bpe.slide-examples", needs=("tokenize_text",), dtypes=F64)
@given(words=st.permutations(GRAD_STUDENT.split()))
def the_bert_vocabulary_keeps_frequent_words_whole_and_splits_the_slides_words_otherwise(ctx: Context,
                                                                                           words) -> None:
    """Depends on the vocabulary: the shipped BERT vocabulary (kind ``"bert"``) on the slide's words in any order
    keeps ``the best method is`` whole, as the slide does, and ``gradient``, ``descent``, ``student`` whole too
    (the slide splits them), while it splits ``grad`` (``gr ##ad``); each word's pieces spell it."""
    text = " ".join(words)
    tokens = ctx.tokenize_text("bert", text)
    pieces: list[list[str]] = []
    for token in tokens:
        if token.startswith("##") and pieces:
            pieces[-1].append(token[2:])
        else:
            pieces.append([token])
    assert ["".join(p) for p in pieces] == [w.lower() for w in words], f"{text!r}: {tokens} do not spell the words"
    split = {w.lower(): p for w, p in zip(words, pieces)}
    whole = [w for w in ("the", "best", "method", "is", *SLIDE_SPLITS) if len(split[w]) != 1]
    assert not whole, f"{text!r}: {tokens} split {whole}, which the shipped vocabulary holds whole"
    assert split["grad"] == ["gr", "ad"], f"{text!r}: 'grad' is {split['grad']}, not gr ##ad"


# --------------------------------------------------------------------------- libraries


@functools.lru_cache(maxsize=1)
def byte_level_tokenizers() -> dict[str, Any]:
    """``transformers``' GPT-2 and RoBERTa tokenizers over the 256-byte alphabet, no merges (nothing downloaded)."""
    from specformer.adapters.hf_common import import_library
    from specformer.protocol import NotApplicable

    try:
        tokenizers = import_library("tokenizers", "tokenizers", "bpe.gpt2-byte-level")
        transformers = import_library("transformers", "transformers", "bpe.gpt2-byte-level")
    except ImportError as exc:
        raise NotApplicable(not_installed(exc, str(exc))) from exc
    alphabet = sorted(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    vocab = {char: i for i, char in enumerate(alphabet)}
    specials = {"<s>": 256, "</s>": 257, "<unk>": 258, "<pad>": 259, "<mask>": 260}
    return {"GPT2Tokenizer": transformers.GPT2Tokenizer(vocab=dict(vocab), merges=[]),
            "RobertaTokenizer": transformers.RobertaTokenizer(vocab={**vocab, **specials}, merges=[])}


def xlm_bpe(word: str, ranks: dict[tuple[str, str], int]) -> str:
    """``transformers``' ``XLMTokenizer.bpe`` on one word (called unbound: the class needs ``sacremoses`` to build)."""
    from types import SimpleNamespace

    from specformer.adapters.hf_common import import_library
    from specformer.protocol import NotApplicable

    try:
        module = import_library("transformers.models.xlm.tokenization_xlm", "transformers", "bpe.gpt2-byte-level")
    except ImportError as exc:
        raise NotApplicable(not_installed(exc, str(exc))) from exc
    return module.XLMTokenizer.bpe(SimpleNamespace(cache={}, bpe_ranks=ranks), word)




@claim_property("bpe.gpt2-byte-level", needs=(), about="library", dtypes=F64, max_examples=10)
@given(text=sf.texts(), word=sf.words("low\u00e9\U0001F600", 5))
@example(text="h\u00e9llo \U0001F601 w\u00f6rld\x00", word="low")
def gpt2_and_roberta_tokenizers_are_byte_level_bpe_and_xlm_is_character_level(ctx: Context, text, word) -> None:
    """``GPT2Tokenizer`` and ``RobertaTokenizer`` are BPE models behind ``ByteLevel``: with no merges, one token per
    UTF-8 byte and exact decoding; ``XLMTokenizer.bpe`` splits a word into characters, the marker on the last."""
    for name, tokenizer in byte_level_tokenizers().items():
        backend = tokenizer.backend_tokenizer
        kinds = type(backend.model).__name__, type(backend.pre_tokenizer).__name__
        assert kinds == ("BPE", "ByteLevel"), f"{name} is {kinds[0]} behind {kinds[1]}"
        ids = tokenizer.encode(text, add_special_tokens=False)
        size = len(text.encode("utf-8"))
        assert len(ids) == size, f"{name}: {len(ids)} tokens for the {size} bytes of {text!r}"
        back = tokenizer.decode(ids, clean_up_tokenization_spaces=False)
        assert back == text, f"{name}: {text!r} decodes to {back!r}"
    split = xlm_bpe(word, {})
    expected = " ".join([*word[:-1], word[-1] + EOW])
    assert split == expected, f"XLMTokenizer.bpe({word!r}) with no merges is {split!r}, not {expected!r}"
    merged = xlm_bpe("low", {("l", "o"): 0, ("lo", "w" + EOW): 1})
    assert merged == "low" + EOW, f"XLMTokenizer.bpe('low') with merges (l, o), (lo, w</w>) is {merged!r}"
