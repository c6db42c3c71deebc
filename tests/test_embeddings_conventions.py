"""The embeddings family's declarable conventions and the created-elements counter the cost property reads."""

from __future__ import annotations

import pytest
import torch

from specformer.created import count_created
from specformer.protocol import CONVENTIONS, OPERATIONS, Capabilities
from specformer.protocol.capabilities import CapabilityError


@pytest.mark.parametrize(("name", "default", "other"), [
    ("glove_loss_factor", 1.0, 0.5), ("negative_sampling_reduction", "sum", "mean"), ("cosine_norm_clamp", 0.0, 1e-8),
    ("embedding_init_law", "standard-normal", "normal-1/d"),
])
def test_the_loss_and_clamp_conventions_default_to_the_documents_formula(name: str, default: object,
                                                                        other: object) -> None:
    assert CONVENTIONS[name].default == (default,)
    Capabilities(conventions={name: frozenset({other})}).validate(OPERATIONS, CONVENTIONS)


def test_an_eps_the_protocol_does_not_list_is_refused() -> None:
    with pytest.raises(CapabilityError, match="cosine_norm_clamp"):
        Capabilities(conventions={"cosine_norm_clamp": frozenset({1e-7})}).validate(OPERATIONS, CONVENTIONS)


def test_an_initialiser_law_the_protocol_does_not_list_is_refused() -> None:
    with pytest.raises(CapabilityError, match="embedding_init_law"):
        Capabilities(conventions={"embedding_init_law": frozenset({"uniform"})}).validate(OPERATIONS, CONVENTIONS)


def test_the_counter_adds_new_tensors_and_not_views_or_in_place_results() -> None:
    table, hidden = torch.randn(100, 4), torch.randn(3, 4)
    with count_created() as views:
        table.T
        table[:10]
        table.reshape(4, 100)
    assert views == [0]
    buffer = torch.zeros(5)
    with count_created() as in_place:
        buffer.add_(1.0)
    assert in_place == [0]
    with count_created() as gathered:
        table[torch.tensor([1, 2])]  # (2, 4)
    assert gathered == [8]


def test_the_counter_sees_elementwise_work_a_flop_counter_does_not() -> None:
    from specformer.flops import count_flops

    table, hidden = torch.randn(100, 4), torch.randn(3, 4)
    with count_flops() as flops, count_created() as created:
        (hidden[:, None, :] * table[None]).sum(-1)  # (3, 100, 4) product, (3, 100) sum
    assert flops == [0]
    assert created == [3 * 100 * 4 + 3 * 100]
