"""The protocol's worked examples hold for the reference, and ``specformer protocol`` prints them.

Every :class:`specformer.protocol.examples.Example` is evaluated on the reference
implementation (:data:`specformer.adapters.reference.implementation`), so the examples
on the protocol pages cannot drift from what the reference computes.
"""

from __future__ import annotations

import pytest
import torch

from specformer.adapters.reference import implementation as reference
from specformer.protocol import FAMILIES, OPERATIONS
from specformer.protocol.examples import EXAMPLES, Example, agrees, namespace, run_example
from specformer.runner.cli import main

ALL = [pytest.param(example, id=f"{family}:{example.call[:60]}") for family, examples in EXAMPLES.items()
       for example in examples]


@pytest.mark.parametrize("example", ALL)
def test_every_worked_example_holds_for_the_reference(example: Example) -> None:
    got, expected = run_example(example, reference)
    assert agrees(got, expected, example.atol), f"{example.call} gave {got!r}, the page says {example.result}"


def test_every_family_has_worked_examples_of_its_own_operations() -> None:
    assert set(EXAMPLES) == set(FAMILIES)
    for family, examples in EXAMPLES.items():
        own = {op.method for op in FAMILIES[family].operations}
        for example in examples:
            called = example.call.split("(", 1)[0]
            assert called in own, (family, example.call)
            assert example.shows.strip() and example.result.strip()


def test_the_end_of_word_marker_is_a_symbol_of_its_own() -> None:
    tokenization = {e.call: e.result for e in EXAMPLES["tokenization"]}
    assert tokenization["bpe_encode('low', [])"] == "['l', 'o', 'w', '</w>']"
    assert tokenization["bpe_encode('low', [('w', '</w>')])"] == "['l', 'o', 'w</w>']"


def test_a_wrong_result_is_caught() -> None:
    wrong = Example("bpe_encode('low', [])", "['l', 'o', 'w</w>']", "the other convention")
    assert not agrees(*run_example(wrong, reference), wrong.atol)
    assert not agrees(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.001]), 1e-4)
    assert not agrees(torch.tensor([1.0]), torch.tensor([[1.0]]), 1e-4)
    assert not agrees([("a", "b")], [["a", "b"]], 0.0)
    assert agrees(torch.tensor([0.0, -float("inf")]), torch.tensor([0.0, -float("inf")]), 1e-4)


def test_the_namespace_holds_the_operations_and_no_other_name_of_the_implementation() -> None:
    names = namespace(reference)
    assert {"torch", "inf", "ModelConfig", "MultiHeadParams"} <= names.keys()
    assert set(names) - {"torch", "inf", "ModelConfig", "MultiHeadParams"} <= set(OPERATIONS)


def test_cbow_examples_documents_the_context_the_reference_computes() -> None:
    from specformer.protocol.embeddings import WordVectorTrainingImplementation

    doc = WordVectorTrainingImplementation.cbow_examples.__doc__ or ""
    assert "ids[max(0, t - window):t] + ids[t + 1:t + window + 1]" in doc
    ids, window = [10, 11, 12, 13, 14], 3
    documented = [(ids[max(0, t - window):t] + ids[t + 1:t + window + 1], ids[t]) for t in range(len(ids))]
    assert reference.cbow_examples(ids, window) == documented
    t = 1  # the slice ids[t - window:t] starts at a negative index for t < window: no left context at all
    assert ids[t - window:t] + ids[t + 1:t + window + 1] != documented[t][0] == [10, 12, 13, 14]


def test_the_protocol_command_prints_operations_conventions_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protocol", "tokenization"]) == 0
    out = capsys.readouterr().out
    assert "bpe_encode(word: str, merges: list[tuple[str, str]], *, end_of_word: str = '</w>') -> list[str]" in out
    assert "declared by BPEImplementation" in out
    assert "tokenizer_kind: 'words', 'characters', 'bpe', 'byte-bpe', 'wordpiece', 'unigram', 'bert'" in out
    assert ">>> bpe_encode('low', [])\n  ['l', 'o', 'w', '</w>']" in out
    assert "``" not in out and ":data:" not in out and "```" not in out
    assert main(["protocol", "embeddings"]) == 0
    out = capsys.readouterr().out
    assert "    sum_{X_ij > 0} f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2" in out  # a formula, indented
    assert main(["protocol"]) == 0
    listed = capsys.readouterr().out
    assert all(family in listed for family in FAMILIES)
    assert main(["protocol", "tokenisation"]) == 2
    assert "unknown family 'tokenisation'" in capsys.readouterr().err
