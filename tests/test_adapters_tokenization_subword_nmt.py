"""The ``subword-nmt`` adapter: Sennrich et al.'s ``learn_bpe`` and ``apply_bpe`` (0.3.8).

The adapter must give the protocol's initial split (the marker a separate symbol), agree
with the reference where the protocol fixes the answer, pass the BPE properties, and leave
the library's own behaviour as it is. What the library does by itself is pinned here: the
codes format 0.2 joins the marker to the last character from the start, the default
``min_frequency=2`` stops at pairs seen once, ties go to the largest pair, and the text
tokenizer splits at spaces only. Skipped when ``subword-nmt`` is not installed.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings

from conftest import run_row
from specformer.properties.tokenization import bpe as props
from specformer.properties.tokenization import strategies as sf
from specformer.protocol import NotApplicable
from specformer.reference.tokenization.bpe import encode, train_bpe_naive

pytest.importorskip("subword_nmt")

from specformer.adapters import subword_nmt_bpe as adapter  # noqa: E402 - after the skip

IMPL = adapter.implementation
SOME = settings(max_examples=60, deadline=None, derandomize=True, database=None)


def _native(words: dict[str, int], num_merges: int, **options: object) -> list[tuple[str, str]]:
    """``learn_bpe`` on a dictionary file, with the library's own defaults unless ``options`` says otherwise."""
    from subword_nmt import learn_bpe

    infile, outfile = io.StringIO("".join(f"{w} {c}\n" for w, c in words.items())), io.StringIO()
    learn_bpe.learn_bpe(infile, outfile, num_merges, is_dict=True, **options)
    return [tuple(line.split(" ")) for line in outfile.getvalue().splitlines()[1:]]  # type: ignore[misc]


@SOME
@given(words=sf.corpora(max_count=30), num_merges=props.BUDGETS)
def test_merges_are_the_naive_ones_until_the_first_tie(words: dict[str, int], num_merges: int) -> None:
    merges, naive = IMPL.bpe_train(words, num_merges), train_bpe_naive(words, num_merges)
    tie = props.first_tie(words, naive)
    agreed = len(naive) if tie is None else tie
    assert merges[:agreed] == naive[:agreed]
    assert tie is not None or merges == naive


@SOME
@given(words=sf.corpora(), num_merges=props.BUDGETS, word=sf.words("abcdef", 8))
def test_encoding_is_rank_order(words: dict[str, int], num_merges: int, word: str) -> None:
    merges = train_bpe_naive(words, num_merges)
    assert IMPL.bpe_encode(word, merges) == encode(word, merges)


@pytest.mark.parametrize("qualname", [
    "bpe.each_merge_is_a_most_frequent_pair_of_the_corpus_as_merged_so_far",
    "bpe.training_the_same_counts_again_gives_the_same_merges",
    "bpe.each_merge_adds_one_symbol_and_training_stops_early_only_without_pairs",
    "bpe.encoding_a_training_word_gives_its_training_segmentation",
    "bpe.each_word_is_its_own_tokens_ending_in_one_marker",
])
def test_the_adapter_passes(qualname: str) -> None:
    row = run_row(qualname, IMPL)
    assert row.outcome == "pass", row


def test_the_codes_format_joins_the_marker_to_the_last_character() -> None:
    """Format 0.2: ``ab`` starts as ``a b</w>``, so ``(b, </w>)`` is never a merge; the adapter's stand-in
    restores the separate marker of 001's code and of the paper's Algorithm 1."""
    assert _native({"ab": 3}, 5, min_frequency=1) == [("a", "b</w>")]
    assert IMPL.bpe_train({"ab": 3}, 5) == [("b", "</w>"), ("a", "b</w>")]


def test_the_default_minimum_frequency_stops_at_pairs_seen_once() -> None:
    assert _native({"ab": 1, "cd": 2}, 10) == [("c", "d</w>")]
    assert len(IMPL.bpe_train({"ab": 1, "cd": 2}, 10)) == 4  # min_frequency=1: until no pair is left


def test_ties_go_to_the_largest_pair() -> None:
    assert _native({"ab": 1, "cd": 1}, 1, min_frequency=1) == [("c", "d</w>")]


def test_the_text_tokenizer_splits_at_spaces_only_and_gives_a_tab_back() -> None:
    tokens = IMPL.tokenize_text("bpe", "  the\treturn  value ")
    assert "\t" in "".join(tokens) and all(" " not in t for t in tokens)
    assert IMPL.detokenize_text("bpe", tokens) == "the\treturn value"


def test_what_it_does_not_take_is_not_applicable() -> None:
    for call in (lambda: IMPL.bpe_encode("a b", []), lambda: IMPL.bpe_train({"x\ue000": 1}, 1),
                 lambda: IMPL.bpe_train({"ab": 1}, 1, end_of_word="@"), lambda: IMPL.tokenize_text("wordpiece", "x"),
                 lambda: IMPL.tokenize_text("bpe", "a@@b")):
        with pytest.raises(NotApplicable):
            call()
