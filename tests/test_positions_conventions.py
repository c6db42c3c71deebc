"""Declared conventions of the positions family are honoured, and only narrow what is asked.

* ``sinusoidal_base = {"paper"}``: an implementation that computes only the base 10000 is never
  passed another base;
* ``encoding_max_length = {n}``: an implementation that reads a precomputed table of ``n`` rows
  is asked only for positions below ``n``;
* ``rope_base = {"paper"}``: a rotary that computes only the base 10000 is passed no other base;
* ``alibi_lengths`` is tested with the ALiBi mutants (``tests/test_mutants_alibi.py``).

A correct table-backed sinusoidal encoding that declares both passes every property that
calls ``positional_encoding`` (refutations still find their counterexample, binary-only
properties are not applicable); the same table built wrongly still fails; undeclared,
the suite asks what it always asked (position 10^6, other bases).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from conftest import run_row
from specformer.adapters.reference import ReferenceImplementation
from specformer.properties.positions import strategies as sf
from specformer.protocol import Capabilities
from specformer.protocol.positions import MAX_LENGTHS
from specformer.reference.positions.sinusoidal import sinusoidal_encoding


class SinusoidalTable:
    """The paper's encoding read from a precomputed float64 table of ``rows`` positions (base 10000 only)."""

    def __init__(self, name: str, rows: int, declared: int, base: float = 10000.0) -> None:
        self.name, self.rows, self.base = name, rows, base
        self.capabilities = Capabilities(conventions={"encoding_kind": {"sinusoidal"}, "sinusoidal_base": {"paper"},
                                                      "encoding_max_length": {declared}})
        self.asked: list[tuple[int, dict[str, Any]]] = []

    def positional_encoding(self, kind: str, positions: torch.Tensor, d_model: int, *, dtype: torch.dtype,
                            **params: Any) -> torch.Tensor:
        self.asked.append((int(positions.max()), dict(params)))
        if kind != "sinusoidal" or params:
            raise ValueError(f"only the sinusoidal encoding with base 10000, got {kind!r} {params}")
        if int(positions.min()) < 0 or int(positions.max()) >= self.rows:
            raise IndexError(f"the table holds positions 0 .. {self.rows - 1}, got {int(positions.max())}")
        table = sinusoidal_encoding(torch.arange(self.rows), d_model, base=self.base)  # (rows, d_model)
        return table[positions.cpu()].to(dtype=dtype, device=positions.device)


#: Properties that ask for binary encodings only: not applicable to a sinusoidal-only implementation.
BINARY_ONLY = {"absolute.binary_encodings_are_the_bits_and_distinct_below_two_to_the_d",
               "absolute.a_power_of_two_sets_one_feature_and_the_first_feature_flips_every_step",
               "absolute.no_linear_map_shifts_binary_encodings",
               "absolute.positions_past_two_to_the_d_are_refused_or_wrap_around"}


def _encoding_properties(properties) -> list[str]:
    return sorted(q for q, p in properties.items() if "positional_encoding" in p.needs)


def test_every_property_that_draws_a_base_or_a_position_is_among_those_run(properties) -> None:
    names = _encoding_properties(properties)
    assert any(q.startswith("sinusoidal.") for q in names) and any(q.startswith("absolute.") for q in names)


def test_a_correct_table_of_600_rows_declaring_512_passes_every_encoding_property(properties) -> None:
    impl = SinusoidalTable("sinusoidal-table-600", rows=600, declared=512)
    wrong = []
    for qualname in _encoding_properties(properties):
        prop = properties[qualname]
        row = run_row(qualname, impl)
        binary_only = qualname in BINARY_ONLY
        expected = "not-applicable" if binary_only else "refuted" if prop.expect == "counterexample" else "pass"
        if row.outcome != expected:
            wrong.append(f"{qualname}: {row.outcome} (expected {expected}): {row.message}")
    assert not wrong, "\n".join(wrong)
    assert impl.asked, "no property called the implementation"
    assert max(p for p, _ in impl.asked) < 512, "a position at or past the declared length was asked"
    assert all(not params for _, params in impl.asked), "a base was passed to an implementation of the paper's only"


@pytest.mark.parametrize("qualname", ["sinusoidal.encodings_match_the_formula",
                                      "sinusoidal.frequencies_fall_from_the_first_pair_to_the_last",
                                      "sinusoidal.one_block_rotation_per_offset_maps_every_position_to_its_shift"])
def test_a_wrong_table_that_declares_the_same_still_fails(qualname: str) -> None:
    row = run_row(qualname, SinusoidalTable("sinusoidal-table-base-1000", rows=600, declared=512, base=1000.0))
    assert row.outcome == "fail", (row.outcome, row.message)


def test_undeclared_the_suite_still_asks_position_a_million_and_other_bases() -> None:
    asked: list[tuple[int, dict[str, Any]]] = []

    class Recording(ReferenceImplementation):
        name = "recording-reference"

        def positional_encoding(self, kind, positions, d_model, *, dtype, **params):
            asked.append((int(positions.max()), dict(params)))
            return super().positional_encoding(kind, positions, d_model, dtype=dtype, **params)

    for qualname in ("sinusoidal.values_lie_in_minus_one_one_and_every_row_has_norm_root_half_d_model",
                     "sinusoidal.encodings_match_the_formula"):
        assert run_row(qualname, Recording()).outcome == "pass"
    assert max(p for p, _ in asked) == 10**6
    assert {params.get("base") for _, params in asked} >= {100.0, 1e6}


class _Declared:
    def __init__(self, conventions: dict[str, Any]) -> None:
        self.capabilities = Capabilities(conventions=conventions)

    def choices(self, convention: str, candidates):
        declared = self.capabilities.conventions.get(convention)
        return tuple(c for c in candidates if declared is None or c in declared)

    def supports(self, convention: str, value: Any) -> bool:
        declared = self.capabilities.conventions.get(convention)
        return declared is None or value in declared


def test_positions_brought_below_a_table_keep_their_order_and_equalities() -> None:
    ctx = _Declared({"encoding_max_length": {512}})
    positions = torch.tensor([10**6, 3, 700, 3, 511, 512, 0])
    low = sf.below(ctx, positions)
    assert int(low.max()) < 512 and low[1] == 3 and low[6] == 0 and low[1] == low[3]
    order = torch.argsort(positions, stable=True)
    assert torch.equal(torch.argsort(low, stable=True), order)
    assert len(set(low.tolist())) == len(set(positions.tolist()))
    shifted, k = sf.shift_below(ctx, torch.tensor([400, 5000]), 4000)
    assert int((shifted + k).max()) < 512 and int(shifted.min()) + k >= 0 and k >= 1
    assert torch.equal(sf.below(_Declared({}), positions), positions)
    assert sf.sinusoidal_base(_Declared({"sinusoidal_base": {"paper"}}), 1e6) == 10000.0
    assert sf.sinusoidal_base(_Declared({}), 1e6) == 1e6


def test_the_declarable_lengths_start_above_the_longest_scan() -> None:
    from specformer.properties.positions.sinusoidal import SCAN

    lengths = [n for n in MAX_LENGTHS if n != "unlimited"]
    assert min(lengths) > SCAN + 1 and 5000 in lengths and 2**20 in lengths


class PaperRotary:
    """RoPE with the RoFormer paper's base written in (``scale`` turns the angles, wrongly, when not 1)."""

    def __init__(self, name: str, declared: bool, scale: int = 1) -> None:
        self.name, self.scale = name, scale
        self.capabilities = Capabilities(conventions={"rope_base": {"paper"}} if declared else {})
        self.bases: list[float] = []

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        from specformer.reference.positions.rope import rotary_embedding

        self.bases.append(base)
        return rotary_embedding(x, positions * self.scale, pairing=pairing,
                                base=10000.0)


def _rotary_properties(properties) -> list[str]:
    return sorted(q for q, p in properties.items() if p.needs == ("rotary",))


def test_a_rotary_of_the_papers_base_declaring_it_passes_every_rotary_property(properties) -> None:
    impl = PaperRotary("rope-base-10000-declared", declared=True)
    wrong = []
    for qualname in _rotary_properties(properties):
        row = run_row(qualname, impl)
        expected = "refuted" if properties[qualname].expect == "counterexample" else "pass"
        if row.outcome != expected:
            wrong.append(f"{qualname}: {row.outcome} (expected {expected}): {row.message}")
    assert not wrong, "\n".join(wrong)
    assert impl.bases and set(impl.bases) == {10000.0}, sorted(set(impl.bases))


@pytest.mark.parametrize("qualname", ["rope.rotary_applies_the_rotation_matrix_of_each_rows_position",
                                      "rope.at_position_one_pair_i_turns_by_base_to_the_minus_2i_over_d"])
def test_undeclared_the_papers_base_alone_fails_and_a_wrong_rotary_declaring_it_too(qualname: str) -> None:
    row = run_row(qualname, PaperRotary("rope-base-10000-undeclared", declared=False))
    assert row.outcome == "fail" and "base" in row.message, (row.outcome, row.message)
    row = run_row(qualname, PaperRotary("rope-double-angles-declared", declared=True, scale=2))
    assert row.outcome == "fail", (row.outcome, row.message)
