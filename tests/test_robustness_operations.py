"""Every protocol operation, misbehaving, ends its row as an error that names what happened.

``test_robustness.py`` and ``test_isolation.py`` misbehave through ``attention``. Here
each operation that some property needs (attention, blocks, positions, tokenization,
embeddings) is replaced, on an otherwise correct reference, by one that returns what no
operation returns, by one that raises, and, where the operation takes tensors, by one that
answers correctly but writes NaN into its inputs. The row of a property that needs the
operation must be an ``error`` whose message names the operation and the problem, never a
pass, a refutation or a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from conftest import run_row
from mutants import Mutant
from specformer.adapters.reference import ReferenceImplementation
from specformer.property import load_properties

#: Operations whose arguments include tensors (the in-place test writes into them).
TENSOR_OPERATIONS = (
    "attention", "multihead_attention", "score", "layer_norm", "feed_forward", "encoder_layer", "decoder_layer",
    "positional_encoding", "rotary", "embedding_lookup", "cosine_similarity", "cbow_hidden",
    "noise_distribution", "glove_weight", "euclidean_distance", "lookup_gradient", "tied_logits", "skipgram_softmax",
    "negative_sampling_loss", "glove_loss", "fasttext_vector", "alibi_attention", "learned_positions",
    "input_embedding", "encoder_stack",
)


def _needed() -> dict[str, str]:
    """Each operation some property needs -> the first such property (by name) that must hold."""
    first: dict[str, str] = {}
    for qualname, prop in sorted(load_properties().items()):
        if prop.expect != "hold":
            continue
        for operation in prop.needs:
            first.setdefault(operation, qualname)
    return first


NEEDED = _needed()


def test_every_family_has_operations_under_test() -> None:
    families = {load_properties()[q].family for q in NEEDED.values()}
    assert families >= {"attention", "blocks", "positions", "tokenization", "embeddings"}, families
    assert set(TENSOR_OPERATIONS) <= set(NEEDED), sorted(set(TENSOR_OPERATIONS) - set(NEEDED))


def _replaced(operation: str, fn: Callable[..., Any]) -> Mutant:
    return Mutant(f"{operation.replace('_', '-')}-misbehaves", **{operation: fn})


@pytest.mark.parametrize("operation", sorted(NEEDED))
@pytest.mark.parametrize("returned", [{"not": "an answer"}, None, 3.5, [object()]], ids=["dict", "none", "float", "list"])
def test_a_value_no_operation_returns_is_an_error_naming_the_operation(operation: str, returned: Any) -> None:
    row = run_row(NEEDED[operation], _replaced(operation, lambda *args, **kwargs: returned))
    assert row.outcome == "error", (operation, row.outcome, row.message)
    assert operation in row.message and "returned" in row.message, row.message


@pytest.mark.parametrize("operation", sorted(NEEDED))
def test_an_operation_that_raises_is_an_error_naming_the_exception(operation: str) -> None:
    def raises(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the implementation broke")

    row = run_row(NEEDED[operation], _replaced(operation, raises))
    assert row.outcome == "error", (operation, row.outcome, row.message)
    assert "RuntimeError" in row.message and "the implementation broke" in row.message, row.message


@pytest.mark.parametrize("operation", TENSOR_OPERATIONS)
def test_writing_into_the_inputs_is_an_error_even_with_the_right_answer(operation: str) -> None:
    correct = getattr(ReferenceImplementation(), operation)

    def clobbers(*args: Any, **kwargs: Any) -> Any:
        answer = correct(*args, **kwargs)
        for value in (*args, *kwargs.values()):
            if isinstance(value, torch.Tensor):
                value.fill_(float("nan") if value.is_floating_point() else 0)
        return answer

    row = run_row(NEEDED[operation], _replaced(operation, clobbers))
    assert row.outcome == "error", (operation, row.outcome, row.message)
    assert operation in row.message and "modified its input" in row.message, row.message


def test_the_unmodified_reference_passes_each_chosen_property() -> None:
    # Otherwise an error above could come from the property, not from the misbehaviour.
    failing = {}
    for operation, qualname in sorted(NEEDED.items()):
        row = run_row(qualname, ReferenceImplementation())
        if row.outcome != "pass":
            failing[qualname] = (row.outcome, row.message)
    assert not failing, failing
