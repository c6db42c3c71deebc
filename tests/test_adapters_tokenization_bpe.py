"""The BPE adapters: Hugging Face ``tokenizers`` (``hf-tokenizers``) and ``tiktoken``.

Each adapter must agree with the reference where the protocol fixes the answer (rank-order
encoding, merges when no tie arises, exact round trips of Unicode text), provide the
operations its docstring lists, say ``NotApplicable`` for what its library does not take,
and keep the library's own behaviour where it departs from the reference: those
behaviours (tie rule, ``end_of_word_suffix`` nondeterminism, dropped unknown characters,
U+FFFD for invalid UTF-8 and lone surrogates, tiktoken's token-level ranks) are pinned
here, so a conversion that hid them would be caught. Tests of a library that is not
installed are skipped.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections import Counter

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from specformer.properties.tokenization import bpe as props
from specformer.properties.tokenization import strategies as sf
from specformer.protocol import NotApplicable, provided_operations
from specformer.reference.tokenization.bpe import (
    encode,
    encode_bytes,
    train_bpe,
    train_bpe_naive,
    train_byte_bpe,
)

SOME = settings(max_examples=60, deadline=None, derandomize=True, database=None)
BYTE_OPS = {"byte_bpe_encode", "byte_bpe_decode", "tokenize_text", "detokenize_text"}


@pytest.fixture(scope="module")
def hf():
    pytest.importorskip("tokenizers")
    from specformer.adapters.hf_tokenizers_bpe import implementation

    return implementation


@pytest.fixture(scope="module")
def tk():
    pytest.importorskip("tiktoken")
    from specformer.adapters.tiktoken_bpe import implementation

    return implementation


def _tied(words: dict[str, int], merges: list[tuple[str, str]]) -> bool:
    """Whether some step of the replay had more than one pair of the highest count."""
    segments = props.initial_segments(words)
    for pair in merges:
        counts = props.pair_counts(segments, words)
        top = max(counts.values())
        if sum(c == top for c in counts.values()) > 1:
            return True
        segments = {w: props.merge_everywhere(s, pair) for w, s in segments.items()}
    return False


# -- what each adapter provides -------------------------------------------------------------


def test_the_adapters_provide_the_operations_they_document(hf, tk) -> None:
    assert provided_operations(hf) == {"bpe_train", "bpe_encode", "byte_bpe_train"} | BYTE_OPS
    assert provided_operations(tk) == BYTE_OPS
    assert (hf.name, tk.name) == ("hf-tokenizers", "tiktoken")


@pytest.mark.parametrize("kind", ["words", "wordpiece", "unigram", "bert"])
def test_other_text_kinds_are_not_applicable(hf, tk, kind: str) -> None:
    for impl in (hf, tk):
        with pytest.raises(NotApplicable):
            impl.tokenize_text(kind, "text")
    with pytest.raises(NotApplicable, match="only kind 'byte-bpe'"):
        tk.tokenize_text("bpe", "text")


@pytest.mark.parametrize(("module", "package"), [("specformer.adapters.hf_tokenizers_bpe", "tokenizers"),
                                                 ("specformer.adapters.tiktoken_bpe", "tiktoken")])
def test_a_missing_library_gives_a_clear_import_error(monkeypatch, module: str, package: str) -> None:
    adapter = importlib.import_module(module)  # imports without the library: it is imported on first use
    monkeypatch.setitem(sys.modules, package, None)
    loader = adapter._tokenizers if package == "tokenizers" else adapter._tiktoken
    with pytest.raises(ImportError, match=f"needs the '{package}' package.*pip install"):
        loader()


# -- tokenizers: character level --------------------------------------------------------------


@SOME
@given(words=sf.corpora(), num_merges=st.integers(0, 15))
@example(words={"low": 5, "lower": 2, "newest": 6, "widest": 3}, num_merges=3)
@example(words={"abc": 3, "ab": 2}, num_merges=1)  # no tie: (a, b) is seen 5 times
def test_tokenizers_learns_the_reference_merges_when_no_tie_arises(hf, words, num_merges) -> None:
    merges = hf.bpe_train(words, num_merges)
    reference = train_bpe_naive(words, num_merges)
    if not _tied(words, reference):
        assert merges == reference


def test_tokenizers_prefers_older_symbols_in_a_tie(hf) -> None:
    """Its tie rule is by token ids; merged symbols get the newest ids. The protocol's: the smallest strings."""
    assert hf.bpe_train({"cd": 1, "ab": 1}, 2) == [("a", "b"), ("c", "d")]
    assert train_bpe({"cd": 1, "ab": 1}, 2) == [("a", "b"), ("ab", "</w>")]
    # The stand-in for the marker sorts where "</w>" sorts: ties with the marker go the same way.
    assert hf.bpe_train({"aa": 1}, 1) == train_bpe({"aa": 1}, 1) == [("a", "</w>")]


def test_tokenizers_suffix_breaks_ties_differently_from_one_training_to_the_next() -> None:
    """With ``end_of_word_suffix`` the suffixed symbols get ids in hash-map order (why bpe_train avoids it)."""
    tk = pytest.importorskip("tokenizers")
    first = set()
    for _ in range(30):
        tokenizer = tk.Tokenizer(tk.models.BPE(end_of_word_suffix="</w>"))
        tokenizer.pre_tokenizer = tk.pre_tokenizers.WhitespaceSplit()
        trainer = tk.trainers.BpeTrainer(vocab_size=100, end_of_word_suffix="</w>", show_progress=False)
        tokenizer.train_from_iterator(["xb xd xf xh xj"], trainer)
        first.add(tuple(json.loads(tokenizer.to_str())["model"]["merges"][0]))
    assert len(first) > 1, f"thirty trainings all began with {first}"
    assert first <= {("x", f"{c}</w>") for c in "bdfhj"}


@SOME
@given(words=sf.corpora(), num_merges=st.integers(0, 15), word=sf.words("abcdef\u2603", 8))
@example(words={"bc": 10, "ab": 5}, num_merges=4, word="abc")
def test_tokenizers_encodes_in_rank_order(hf, words, num_merges, word) -> None:
    merges = train_bpe_naive(words, num_merges)
    assert hf.bpe_encode(word, merges) == encode(word, merges)


def test_tokenizers_encodes_any_valid_merge_list_pair_by_pair(hf) -> None:
    merges = [("a", "b"), ("b", "c"), ("a", "bc")]
    assert hf.bpe_encode("abc", merges) == encode("abc", merges) == ["ab", "c", "</w>"]


def test_tokenizers_keeps_the_protocols_marker(hf) -> None:
    merges = train_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 10)
    assert hf.bpe_encode("", merges) == ["</w>"]
    assert hf.bpe_encode("lowest", merges) == encode("lowest", merges) == ["low", "est</w>"]
    with pytest.raises(NotApplicable, match="marker text"):
        hf.bpe_encode("a</w>", merges)


# -- tokenizers: byte level ---------------------------------------------------------------------


@SOME
@given(words=props.BYTE_CORPORA, num_merges=st.integers(0, 12))
def test_tokenizers_byte_merges_are_most_frequent_pairs(hf, words, num_merges) -> None:
    merges = hf.byte_bpe_train(words, num_merges)
    assert len(merges) <= num_merges
    segments = {w: [w[i:i + 1] for i in range(len(w))] for w in words}
    for pair in merges:
        counts = props.pair_counts(segments, words)
        assert counts[pair] == max(counts.values())
        segments = {w: props.merge_everywhere(s, pair) for w, s in segments.items()}


def test_tokenizers_byte_training_takes_utf8_words_only(hf) -> None:
    with pytest.raises(NotApplicable, match="not UTF-8"):
        hf.byte_bpe_train({b"\xff": 1}, 1)


def test_tokenizers_decoder_replaces_invalid_utf8_and_refuses_lone_surrogates(hf) -> None:
    assert hf.byte_bpe_decode([b"\xff"]) == "\ufffd"
    assert hf.byte_bpe_decode([b"\xc3", b"\xa9"]) == "\u00e9"
    with pytest.raises(NotApplicable, match="lone surrogate"):
        hf.byte_bpe_encode("a\ud800", [])
    with pytest.raises(NotApplicable, match="lone surrogate"):
        hf.tokenize_text("byte-bpe", "a\ud800")


def test_tokenizers_drops_characters_its_trained_vocabulary_lacks(hf) -> None:
    """No ``unk_token`` is set: a character never seen in training vanishes from the character-level tokens."""
    tokens = hf.tokenize_text("bpe", "a \u2603 b")
    assert hf.detokenize_text("bpe", tokens) == "a b"


# -- tiktoken -----------------------------------------------------------------------------------


def test_tiktoken_ranks_are_the_bytes_then_the_merges() -> None:
    pytest.importorskip("tiktoken")
    from specformer.adapters.tiktoken_bpe import mergeable_ranks

    ranks = mergeable_ranks([(b"a", b"b"), (b"ab", b"c"), (b"b", b"c"), (b"a", b"bc")])
    assert ranks[b"\x00"] == 0 and ranks[b"\xff"] == 255 and ranks[b"ab"] == 256 and ranks[b"abc"] == 257
    assert ranks[b"bc"] == 258 and len(ranks) == 259  # the fourth merge's "abc" keeps the second's rank
    with pytest.raises(ValueError, match="cannot occur"):
        mergeable_ranks([(b"ab", b"c")])
    with pytest.raises(TypeError, match="pair of two non-empty bytes"):
        mergeable_ranks([(b"a", "b")])


def test_tiktoken_ranks_tokens_not_pairs(tk, hf) -> None:
    """An arbitrary merge list: tiktoken finds the token ``abc`` by its bytes; pair-by-pair BPE cannot make it."""
    merges = [(b"a", b"b"), (b"b", b"c"), (b"a", b"bc")]
    assert tk.byte_bpe_encode("abc", merges) == [b"abc"]
    assert encode_bytes("abc", merges) == hf.byte_bpe_encode("abc", merges) == [b"ab", b"c"]


@SOME
@given(words=props.BYTE_CORPORA, num_merges=st.integers(0, 15), text=props.ONE_PIECE)
def test_tiktoken_agrees_with_rank_order_on_trained_merges(tk, words, num_merges, text) -> None:
    merges = train_byte_bpe(words, num_merges)
    assert tk.byte_bpe_encode(text, merges) == encode_bytes(text, merges)


@SOME
@given(text=sf.texts())
@example(text="  don't  stop\t\u00e9\U0001F600 3.50 ")
def test_tiktoken_and_tokenizers_split_text_alike_with_the_same_merges(tk, hf, text) -> None:
    """Both use GPT-2's pattern and apply the same trained merges: the same tokens."""
    from specformer.adapters.tiktoken_bpe import text_merges

    merges = text_merges()
    assert tk.byte_bpe_encode(text, merges) == hf.byte_bpe_encode(text, merges)


def test_tiktoken_replaces_lone_surrogates_and_invalid_utf8(tk) -> None:
    assert tk.byte_bpe_encode("a\ud800b", []) == [b"a", b"\xef", b"\xbf", b"\xbd", b"b"]
    assert tk.detokenize_text("byte-bpe", tk.tokenize_text("byte-bpe", "x\ud800y")) == "x\ufffdy"
    assert tk.byte_bpe_decode([b"\xff"]) == "\ufffd"
    with pytest.raises(ValueError, match="not a token of the encoding"):
        tk.detokenize_text("byte-bpe", ["\u0100\u0100\u0100\u0100\u0100\u0100\u0100\u0100"])


def test_tiktoken_downloads_nothing(tk, monkeypatch) -> None:
    import tiktoken

    def refuse(*args, **kwargs):
        raise AssertionError("tiktoken.get_encoding would download")

    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    monkeypatch.setattr(tiktoken.registry, "get_encoding", refuse)
    tokens = tk.tokenize_text("byte-bpe", "The return statement.")
    assert tk.detokenize_text("byte-bpe", tokens) == "The return statement."


# -- measurements quoted in spec/tokenization/bpe.md ------------------------------------------------


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the spec's numbers are Python 3.11's help topics")
def test_the_measured_splits_of_the_documents_examples(hf, tk) -> None:
    from test_mutants_bpe import tokenize_text

    assert tokenize_text("bpe", "unhappiness tokenization") == [
        "un", "h", "app", "in", "ess</w>", "t", "ok", "en", "iz", "ation</w>"]
    assert hf.tokenize_text("bpe", "unhappiness tokenization") == [
        "un", "h", "app", "in", "es", "s</w>", "to", "k", "en", "iz", "ation</w>"]
    byte_level = ["un", "ha", "pp", "in", "es", "s", "\u0120to", "k", "en", "iz", "ation"]
    assert hf.tokenize_text("byte-bpe", "unhappiness tokenization") == byte_level
    assert tk.tokenize_text("byte-bpe", "unhappiness tokenization") == byte_level


def test_the_bad_input_of_the_adapters_is_refused(hf) -> None:
    with pytest.raises(ValueError, match="empty corpus"):
        hf.bpe_train({}, 1)
    with pytest.raises(ValueError, match="num_merges must be >= 0"):
        hf.bpe_train({"ab": 1}, -1)
    with pytest.raises(ValueError, match="positive integers"):
        hf.byte_bpe_train({b"ab": 0}, 1)
    with pytest.raises(ValueError, match="end_of_word must be a non-empty string"):
        hf.bpe_encode("ab", [], end_of_word="")
    assert Counter(hf.bpe_train({"ab": 1}, 10)) == Counter([("a", "b"), ("ab", "</w>")])
