"""Every property of ``properties/positions/rope.py`` catches at least one wrong implementation.

Each mutant is the reference with its ``rotary`` broken in one way. Refutations are
"caught" by a mutant under which the claim as written is true (it ignores positions, or
the pairing), so that no counterexample is found. The two properties about float32
arithmetic (``needs=()``) are checked against a mis-statement: the angles computed in
another dtype than the libraries' float32.
"""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from specformer.adapters.reference import ReferenceImplementation
from specformer.properties.positions import rope


def _negate_second(x: torch.Tensor, pairing: str) -> torch.Tensor:
    """Negate the second feature of every pair: conjugating a rotation by this reverses its angle."""
    y = x.clone()
    if pairing == "interleaved":
        y[..., 1::2] = -y[..., 1::2]
    else:
        y[..., x.shape[-1] // 2:] = -y[..., x.shape[-1] // 2:]
    return y


class Mutant(ReferenceImplementation):
    """The reference with ``rotary`` replaced by ``fn(super_rotary, x, positions, pairing, base)``."""

    def __init__(self, name: str, fn) -> None:  # noqa: ANN001
        self.name, self.fn = name, fn

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        return self.fn(super().rotary, x, positions, pairing, base)


def _float32_angles(rot, x, p, pairing, base):  # noqa: ANN001, ANN202
    """What the libraries do: angles in float32 (``rope.float32_angles``), whatever the dtype of ``x``."""
    angles = (p.to(torch.float32)[:, None] * (1.0 / base ** (torch.arange(0, x.shape[-1], 2, dtype=torch.float32)
                                                           / x.shape[-1]))).double()
    exact = rot(x, torch.zeros_like(p), pairing=pairing, base=base)  # x itself, through the reference's layout
    first, second = (exact[..., 0::2], exact[..., 1::2]) if pairing == "interleaved" else exact.chunk(2, dim=-1)
    c, s = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    a, b = first * c - second * s, first * s + second * c
    if pairing == "interleaved":
        return torch.stack((a, b), dim=-1).flatten(-2)
    return torch.cat((a, b), dim=-1)


IGNORES_POSITIONS = Mutant("ignores-positions", lambda rot, x, p, pairing, base: x.clone())
ANGLE_PLUS_ONE = Mutant("angle-of-m-plus-1", lambda rot, x, p, pairing, base: rot(x, p + 1, pairing=pairing,
                                                                                    base=base))
QUADRATIC_ANGLE = Mutant("angle-of-m-squared", lambda rot, x, p, pairing, base: rot(x, p * p, pairing=pairing,
                                                                                     base=base))
STRETCHES = Mutant("stretches-by-1.001", lambda rot, x, p, pairing, base: rot(x, p, pairing=pairing,
                                                                              base=base) * 1.001)
SWAPS_PAIRINGS = Mutant("swaps-pairings", lambda rot, x, p, pairing, base: rot(
    x, p, pairing="half" if pairing == "interleaved" else "interleaved", base=base))
IGNORES_PAIRING = Mutant("always-interleaved", lambda rot, x, p, pairing, base: rot(x, p, pairing="interleaved",
                                                                                    base=base))
IGNORES_BASE = Mutant("ignores-base", lambda rot, x, p, pairing, base: rot(x, p, pairing=pairing))
CLOCKWISE = Mutant("clockwise", lambda rot, x, p, pairing, base: _negate_second(
    rot(_negate_second(x, pairing), p, pairing=pairing, base=base), pairing))
ADDS_POSITION = Mutant("adds-a-position-vector", lambda rot, x, p, pairing, base: rot(
    x, p, pairing=pairing, base=base) + 0.01 * torch.sin(p.to(x.dtype))[:, None])
FLOAT32_ANGLES = Mutant("float32-angles", _float32_angles)

CASES = [
    ("rope.rotary_applies_the_rotation_matrix_of_each_rows_position", IGNORES_POSITIONS),
    ("rope.rotary_applies_the_rotation_matrix_of_each_rows_position", ANGLE_PLUS_ONE),
    ("rope.rotary_applies_the_rotation_matrix_of_each_rows_position", SWAPS_PAIRINGS),
    ("rope.rotary_applies_the_rotation_matrix_of_each_rows_position", IGNORES_BASE),
    ("rope.rotary_applies_the_rotation_matrix_of_each_rows_position", CLOCKWISE),
    ("rope.rotary_applies_the_rotation_matrix_of_each_rows_position", FLOAT32_ANGLES),
    ("rope.rotating_by_m_then_by_n_is_rotating_by_m_plus_n", ANGLE_PLUS_ONE),
    ("rope.rotating_by_m_then_by_n_is_rotating_by_m_plus_n", QUADRATIC_ANGLE),
    ("rope.rotating_by_m_then_by_n_is_rotating_by_m_plus_n", STRETCHES),
    ("rope.rotary_keeps_every_pairs_norm_and_dot_products_at_one_position", STRETCHES),
    ("rope.rotary_keeps_every_pairs_norm_and_dot_products_at_one_position", ADDS_POSITION),
    ("rope.rotated_scores_depend_on_the_positions_only_through_their_offset", IGNORES_POSITIONS),
    ("rope.rotated_scores_depend_on_the_positions_only_through_their_offset", QUADRATIC_ANGLE),
    ("rope.rotated_scores_depend_on_the_positions_only_through_their_offset", ADDS_POSITION),
    ("rope.rotated_scores_depend_on_the_positions_only_through_their_offset", CLOCKWISE),
    ("rope.swapping_the_positions_keeps_the_even_part_of_the_score_and_flips_the_odd_part", CLOCKWISE),
    ("rope.swapping_the_positions_keeps_the_even_part_of_the_score_and_flips_the_odd_part", IGNORES_POSITIONS),
    # the claim as written (a symmetric score) is true of an implementation that ignores positions
    ("rope.rotated_scores_depend_only_on_the_distance_as_written", IGNORES_POSITIONS),
    ("rope.half_pairing_is_interleaved_pairing_under_a_fixed_feature_permutation", IGNORES_PAIRING),
    ("rope.half_pairing_is_interleaved_pairing_under_a_fixed_feature_permutation", SWAPS_PAIRINGS),
    # "one rotation whatever the layout" is true of an implementation that ignores the pairing
    ("rope.both_pairings_give_the_same_rotation_as_written", IGNORES_PAIRING),
    ("rope.both_pairings_give_the_same_rotation_as_written", IGNORES_POSITIONS),
    ("rope.attention_over_rotated_queries_and_keys_ignores_a_common_shift_of_positions", QUADRATIC_ANGLE),
    ("rope.attention_over_rotated_queries_and_keys_ignores_a_common_shift_of_positions", ADDS_POSITION),
    ("rope.the_relative_property_holds_at_large_offsets_to_the_dtypes_precision", FLOAT32_ANGLES),
    ("rope.the_relative_property_holds_at_large_offsets_to_the_dtypes_precision", QUADRATIC_ANGLE),
]

MATH = [
    ("rope.float32_angles_keep_the_relative_property_to_within_eps_times_the_position", "pass"),
    ("rope.float32_rope_keeps_the_relative_property_at_any_position_as_written", "refuted"),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize(("qualname", "outcome"), MATH, ids=[q.split(".", 1)[1] for q, _ in MATH])
def test_math_property_has_its_expected_outcome(qualname: str, outcome: str) -> None:
    row = run_row(qualname, None)
    assert row.outcome == outcome, f"{qualname}: {row.outcome}, {row.message}"


def test_half_precision_angles_break_the_float32_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rope, "ANGLE_DTYPE", torch.float16)  # the angles rounded to float16: off by radians
    row = run_row("rope.float32_angles_keep_the_relative_property_to_within_eps_times_the_position", None)
    assert row.outcome == "fail", row.message


def test_float64_angles_leave_nothing_to_refute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rope, "ANGLE_DTYPE", torch.float64)  # exact positions and angles up to 2^53
    row = run_row("rope.float32_rope_keeps_the_relative_property_at_any_position_as_written", None)
    assert row.outcome == "fail", row.message


def test_the_mutants_differ_from_the_reference() -> None:
    """Each mutant is wrong somewhere (else a 'caught' mutant would be a broken property)."""
    x = torch.randn(1, 3, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    p = torch.tensor([3, 0, 2000])
    reference = ReferenceImplementation()
    for mutant in {m.name: m for _, m in CASES}.values():
        wrong = any(not torch.allclose(mutant.rotary(x, p, pairing=pairing, base=base),
                                       reference.rotary(x, p, pairing=pairing, base=base), rtol=1e-9, atol=1e-12)
                    for pairing in rope.PAIRINGS for base in (10000.0, 10.0))
        assert wrong, f"mutant {mutant.name} computes what the reference does"


def test_every_rope_property_is_covered(properties) -> None:  # noqa: ANN001
    covered = {q for q, _ in CASES} | {q for q, _ in MATH} | {BASE}
    mine = {q for q, p in properties.items() if p.module == "rope"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


# -- the second check of the base -----------------------------------------------------------------------
BASE = "rope.at_position_one_pair_i_turns_by_base_to_the_minus_2i_over_d"


@pytest.mark.parametrize("mutant", [
    Mutant("base-always-10000", lambda rot, x, p, pairing, base: rot(x, p, pairing=pairing, base=10000.0)),
    Mutant("base-squared", lambda rot, x, p, pairing, base: rot(x, p, pairing=pairing, base=base * base)),
    Mutant("angle-of-m-plus-1", lambda rot, x, p, pairing, base: rot(x, p + 1, pairing=pairing, base=base)),
], ids=lambda m: m.name)
def test_the_second_check_catches_a_wrong_base(mutant) -> None:
    assert_caught(BASE, mutant)


def test_the_reference_passes_the_second_check() -> None:
    assert run_row(BASE, ReferenceImplementation()).outcome == "pass"


def test_a_rotation_wrong_only_for_long_inputs_is_caught() -> None:
    def long_wrong(rot, x, p, pairing, base):
        out = rot(x, p, pairing=pairing, base=base)
        return out if x.shape[1] <= 6 else torch.cat([out[:, :-1], x[:, -1:]], dim=1)  # last row unrotated

    assert_caught("rope.rotary_applies_the_rotation_matrix_of_each_rows_position",
                  Mutant("last-row-unrotated-above-t-6", long_wrong))
