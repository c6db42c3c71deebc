"""Every property of ``properties/blocks/cost.py`` catches at least one layer of the wrong cost."""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught
from mutants import Mutant
from specformer.reference.blocks.encoder_layer import encoder_layer


def _twice(x, w, *, heads, norm_first, activation="relu", eps=1e-5, causal=False):
    """Runs the whole layer twice (the attention products and everything else counted double)."""
    encoder_layer(x, w, heads=heads, norm_first=norm_first, activation=activation, eps=eps, causal=causal)
    return encoder_layer(x, w, heads=heads, norm_first=norm_first, activation=activation, eps=eps, causal=causal)


def _wide(x, w, *, heads, norm_first, activation="relu", eps=1e-5, causal=False):
    """A network of width 2 d_ff: the weights repeated, the second map halved (the same function)."""
    wide = dict(w, w_1=torch.cat([w["w_1"], w["w_1"]], 1), b_1=torch.cat([w["b_1"], w["b_1"]]),
                w_2=torch.cat([w["w_2"], w["w_2"]], 0) / 2)
    return encoder_layer(x, wide, heads=heads, norm_first=norm_first, activation=activation, eps=eps, causal=causal)


CASES = [
    ("cost.a_layer_costs_linear_terms_plus_attentions_quadratic_products", Mutant("runs-twice", encoder_layer=_twice)),
    ("cost.a_layer_costs_linear_terms_plus_attentions_quadratic_products",
     Mutant("network-twice-as-wide", encoder_layer=_wide)),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[m.name for _, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


def test_every_cost_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES}
    mine = {q for q, p in properties.items() if p.module == "cost"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"
