"""Every property of ``properties/positions/sinusoidal.py`` catches a wrong implementation.

Each mutant is the reference with its ``positional_encoding`` broken in one way. A
refutation is "caught" by a mutant under which the claim as written is true (the row then
fails: no counterexample). Properties about the documents' own formulas and code
(``needs=()``) run on the pseudo-implementation ``math`` and are shown to fail under a
mis-statement (monkeypatch).
"""

from __future__ import annotations

import math

import pytest
import torch

from conftest import assert_caught, run_row
from specformer.adapters.reference import ReferenceImplementation
from specformer.properties.positions import sinusoidal


def _sinusoid(positions: torch.Tensor, d_model: int, omega: torch.Tensor, *, cos_first: bool = False) -> torch.Tensor:
    angles = positions.to(torch.float64)[:, None] * omega[None, :]  # (t, d/2)
    out = torch.empty(positions.shape[0], d_model, dtype=torch.float64)
    first, second = (angles.cos(), angles.sin()) if cos_first else (angles.sin(), angles.cos())
    out[:, 0::2], out[:, 1::2] = first, second
    return out


class EncodingMutant(ReferenceImplementation):
    """The reference with ``positional_encoding("sinusoidal", ...)`` replaced by ``encode(positions, d_model, base)``."""

    def __init__(self, name: str, encode) -> None:
        self.name, self.encode = name, encode

    def positional_encoding(self, kind, positions, d_model, *, dtype, **params):
        if kind != "sinusoidal":
            return super().positional_encoding(kind, positions, d_model, dtype=dtype, **params)
        return self.encode(positions, d_model, params.get("base", 10000.0)).to(dtype)


def _omega(d_model: int, base: float) -> torch.Tensor:
    return base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)


#: Every pair turns at one radian per position (the frequencies do not fall).
NO_DECAY = EncodingMutant("no-frequency-decay", lambda p, d, b: _sinusoid(p, d, torch.ones(d // 2, dtype=torch.float64)))
#: Cosine at even features, sine at odd ones.
COS_FIRST = EncodingMutant("cosine-first", lambda p, d, b: _sinusoid(p, d, _omega(d, b), cos_first=True))
#: The slides read literally: the feature index in the exponent.
SLIDE_LITERAL = EncodingMutant("slide-feature-index", lambda p, d, b: sinusoidal.slide_formula(p, d, b))
#: Positions wrap around at 1024, as a table of 1024 rows indexed modulo its length.
WRAPS = EncodingMutant("positions-mod-1024", lambda p, d, b: _sinusoid(p % 1024, d, _omega(d, b)))
#: Positions clamped to a training length of 512.
CLAMPED = EncodingMutant("positions-clamped-512", lambda p, d, b: _sinusoid(p.clamp(max=512), d, _omega(d, b)))
#: Positions divided by 10^4 (the angles stay small: the similarity falls monotonically).
SLOW = EncodingMutant("positions-over-1e4", lambda p, d, b: _sinusoid(p.double() / 1e4, d, _omega(d, b)))
#: Amplitude 1.5.
LOUD = EncodingMutant("amplitude-1.5", lambda p, d, b: 1.5 * _sinusoid(p, d, _omega(d, b)))
#: The angle computed from a float16 position.
HALF_POSITIONS = EncodingMutant("float16-positions", lambda p, d, b: _sinusoid(p.half().double(), d, _omega(d, b)))

CASES = [
    ("sinusoidal.encodings_match_the_formula", NO_DECAY),
    ("sinusoidal.encodings_match_the_formula", COS_FIRST),
    ("sinusoidal.encodings_match_the_formula", HALF_POSITIONS),
    ("sinusoidal.each_sine_and_its_cosine_share_the_frequency_of_their_pair", SLIDE_LITERAL),
    ("sinusoidal.each_sine_and_its_cosine_share_the_frequency_of_their_pair", COS_FIRST),
    ("sinusoidal.position_zero_is_zero_one_alternating", COS_FIRST),
    ("sinusoidal.the_worked_values_follow_the_formula", NO_DECAY),
    # the course notes' values are right for an encoding whose frequencies do not fall
    ("sinusoidal.the_worked_values_at_positions_one_and_two_as_written", NO_DECAY),
    ("sinusoidal.values_lie_in_minus_one_one_and_every_row_has_norm_root_half_d_model", LOUD),
    ("sinusoidal.frequencies_fall_from_the_first_pair_to_the_last", NO_DECAY),
    ("sinusoidal.frequencies_fall_from_the_first_pair_to_the_last", SLIDE_LITERAL),
    ("sinusoidal.distinct_positions_get_distinct_encodings", WRAPS),
    ("sinusoidal.distinct_positions_get_distinct_encodings", HALF_POSITIONS),
    ("sinusoidal.one_block_rotation_per_offset_maps_every_position_to_its_shift", COS_FIRST),
    ("sinusoidal.one_block_rotation_per_offset_maps_every_position_to_its_shift", SLIDE_LITERAL),
    # the slides' matrix without w_i is right when every pair turns at one radian per position
    ("sinusoidal.the_slides_matrix_with_angle_delta_t_maps_every_pair_as_written", NO_DECAY),
    ("sinusoidal.the_slides_matrix_with_angle_omega_i_delta_t_maps_each_pair_and_its_transpose_goes_back", COS_FIRST),
    ("sinusoidal.dot_products_depend_only_on_the_offset", NO_DECAY),
    ("sinusoidal.dot_products_depend_only_on_the_offset", LOUD),
    # with tiny angles every cosine falls on the scanned offsets: the claim as written holds
    ("sinusoidal.similarity_falls_as_the_offset_grows_as_written", SLOW),
    ("sinusoidal.the_adjacent_position_is_the_most_similar", NO_DECAY),
    ("sinusoidal.encodings_past_any_training_length_follow_the_formula", CLAMPED),
]

MATH = [
    ("sinusoidal.the_slides_feature_index_formula_is_the_encoding_as_written", "float64", "refuted"),
    ("sinusoidal.the_documents_float32_code_merges_positions_from_two_to_the_24_the_edge_case", "float32", "pass"),
    ("sinusoidal.the_documents_table_for_a_longer_length_extends_the_shorter_one", "float32", "pass"),
    ("sinusoidal.the_documents_code_computes_the_formula_for_even_d_model", "float32", "pass"),
    ("sinusoidal.the_documents_code_raises_for_odd_d_model_from_three", "float64", "pass"),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: EncodingMutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize(("qualname", "dtype", "outcome"), MATH, ids=[q.split(".", 1)[1] for q, _, _ in MATH])
def test_math_property_has_its_expected_outcome(qualname: str, dtype: str, outcome: str, properties) -> None:
    assert dtype in properties[qualname].dtypes
    row = run_row(qualname, None, dtype)
    assert row.outcome == outcome, f"{qualname} in {dtype}: {row.outcome}, {row.message}"


def test_the_slides_formula_read_with_the_pair_index_leaves_nothing_to_refute(monkeypatch) -> None:
    def pair_index(positions, d_model, k=sinusoidal.BASE):
        i = torch.arange(d_model, dtype=torch.float64)
        angles = positions.double()[:, None] * (k ** (-2 * (i // 2) / d_model))[None, :]
        return torch.where(i.remainder(2) == 0, angles.sin(), angles.cos())

    monkeypatch.setattr(sinusoidal, "slide_formula", pair_index)
    row = run_row("sinusoidal.the_slides_feature_index_formula_is_the_encoding_as_written", None)
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"


def test_the_code_in_float64_gives_distinct_rows_past_two_to_the_24(monkeypatch) -> None:
    monkeypatch.setattr(sinusoidal, "documents_code_rows", lambda p, d: sinusoidal.encoding(p, d))
    row = run_row("sinusoidal.the_documents_float32_code_merges_positions_from_two_to_the_24_the_edge_case", None, "float32")
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"


def test_a_table_scaled_by_its_length_does_not_extend(monkeypatch) -> None:
    original = sinusoidal.documents_code
    monkeypatch.setattr(sinusoidal, "documents_code",
                        lambda max_len, d: original(max_len, d) * (1 + 1 / max_len))
    row = run_row("sinusoidal.the_documents_table_for_a_longer_length_extends_the_shorter_one", None, "float32")
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"


def _code_with_log_base(log_base: float, slice_cosines: bool = False):
    def code(max_len: int, d_model: int) -> torch.Tensor:
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(log_base / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)[:, : d_model // 2] if slice_cosines else torch.cos(position * div_term)
        return pe
    return code


def test_the_formula_check_catches_a_wrong_base_in_the_code(monkeypatch) -> None:
    monkeypatch.setattr(sinusoidal, "documents_code", _code_with_log_base(math.log(1000.0)))
    row = run_row("sinusoidal.the_documents_code_computes_the_formula_for_even_d_model", None, "float32")
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"


def test_code_that_handles_odd_d_model_is_not_what_the_documents_wrote(monkeypatch) -> None:
    monkeypatch.setattr(sinusoidal, "documents_code", _code_with_log_base(math.log(10000.0), slice_cosines=True))
    row = run_row("sinusoidal.the_documents_code_raises_for_odd_d_model_from_three", None)
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"


def test_the_slide_rows_helper_matches_the_code_as_written() -> None:
    """Evaluating the documents' code at chosen positions gives the rows of its full table."""
    table = sinusoidal.documents_code(300, 16)
    rows = sinusoidal.documents_code_rows(torch.tensor([0, 7, 299]), 16)
    assert torch.equal(rows, table[[0, 7, 299]])


def test_every_sinusoidal_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {q for q, _, _ in MATH}
    mine = {q for q, p in properties.items() if p.module == "sinusoidal"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


SIMILARITY = ("sinusoidal.the_adjacent_position_is_the_most_similar",
              "sinusoidal.similarity_falls_as_the_offset_grows_as_written")


def test_the_similarity_comparisons_run_where_the_allowance_can_decide_them(properties) -> None:
    """Half precision's allowance cannot tell s(2) from s(1) at d_model = 512 (the CUDA rows that failed);
    float32's can, and there the reference holds the claim and refutes it as written."""
    from types import SimpleNamespace

    from specformer.adapters.reference import implementation as reference
    from specformer.properties.tolerances import DTYPES, tolerance

    for qualname in SIMILARITY:
        assert properties[qualname].dtypes == sinusoidal.DECIDED_IN == ("float32", "float64")
    gap = float(sinusoidal.similarity(torch.tensor([1]), 512) - sinusoidal.similarity(torch.tensor([2]), 512))
    for dtype in ("float64", "float32", "float16", "bfloat16"):
        ctx = SimpleNamespace(tol=tolerance(dtype), dtype=DTYPES[dtype])
        a = sinusoidal.allowance(ctx, torch.tensor([0, 1, 2]), 512).sum(-1)
        bounds = 4 * (a[0] + a[1:]) / 512  # the bounds of s(1) and s(2)
        assert (float(bounds.sum()) < gap) == (dtype in sinusoidal.DECIDED_IN), (dtype, float(bounds.sum()), gap)
    for dtype in sinusoidal.DECIDED_IN:
        outcomes = [run_row(q, reference, dtype).outcome for q in SIMILARITY]
        assert outcomes == ["pass", "refuted"], (dtype, outcomes)
