"""Every property of ``properties/positions/absolute.py`` catches a wrong implementation.

Mutants break the reference's ``positional_encoding`` for one kind; properties about the
web notes' learned-embedding code and ``nn.Embedding`` (``needs=()``) are shown to fail
under a mis-statement (monkeypatch).
"""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from specformer.adapters.reference import ReferenceImplementation
from specformer.properties.positions import absolute, sinusoidal


class KindMutant(ReferenceImplementation):
    """The reference with ``positional_encoding(kind, ...)`` replaced for one ``kind``."""

    def __init__(self, name: str, kind: str, encode) -> None:
        self.name, self.kind, self.encode = name, kind, encode

    def positional_encoding(self, kind, positions, d_model, *, dtype, **params):
        if kind != self.kind:
            return super().positional_encoding(kind, positions, d_model, dtype=dtype, **params)
        return self.encode(positions, d_model).to(dtype)


def _msb_first(positions: torch.Tensor, d_model: int) -> torch.Tensor:
    return absolute.bits(positions, d_model).flip(-1)


def _sinusoid_as_bits(positions: torch.Tensor, d_model: int) -> torch.Tensor:
    """A code that does shift linearly: the sinusoid (a zero column when ``d_model`` is odd)."""
    even = sinusoidal.encoding(positions, d_model - d_model % 2) if d_model > 1 else torch.zeros(len(positions), 0)
    return torch.cat([even, torch.zeros(len(positions), d_model % 2, dtype=torch.float64)], dim=-1)


_noise = torch.Generator().manual_seed(0)

BITS_MSB_FIRST = KindMutant("bits-most-significant-first", "binary", _msb_first)
BITS_SHIFT_LINEARLY = KindMutant("binary-is-a-sinusoid", "binary", _sinusoid_as_bits)
NOISY = KindMutant("sinusoid-plus-fresh-noise", "sinusoidal",
                   lambda p, d: sinusoidal.encoding(p, d) + 1e-3 * torch.randn(len(p), d, generator=_noise,
                                                                              dtype=torch.float64))
CONSTANT = KindMutant("every-position-gets-pe-0", "sinusoidal",
                      lambda p, d: sinusoidal.encoding(torch.zeros_like(p), d))

CASES = [
    ("absolute.an_encoding_depends_on_the_position_alone", NOISY),
    ("absolute.binary_encodings_are_the_bits_and_distinct_below_two_to_the_d", BITS_MSB_FIRST),
    ("absolute.no_linear_map_shifts_binary_encodings", BITS_SHIFT_LINEARLY),
    ("absolute.adding_positions_makes_self_attention_see_the_order", CONSTANT),
]

MATH = [
    ("absolute.a_learned_table_has_no_row_past_its_length", "float64", "pass"),
    ("absolute.the_position_row_is_added_to_every_token_embedding", "float64", "pass"),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: KindMutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize(("qualname", "dtype", "outcome"), MATH, ids=[q.split(".", 1)[1] for q, _, _ in MATH])
def test_math_property_has_its_expected_outcome(qualname: str, dtype: str, outcome: str, properties) -> None:
    assert dtype in properties[qualname].dtypes
    row = run_row(qualname, None, dtype)
    assert row.outcome == outcome, f"{qualname} in {dtype}: {row.outcome}, {row.message}"


def test_a_table_that_clamps_positions_never_refuses_a_long_sequence(monkeypatch) -> None:
    def clamped(self, tokens):
        seq_len = tokens.shape[1]
        positions = torch.arange(seq_len).clamp(max=self.position_embedding.num_embeddings - 1).unsqueeze(0)
        return self.token_embedding(tokens) + self.position_embedding(positions)

    monkeypatch.setattr(absolute.TransformerEmbedding, "forward", clamped)
    row = run_row("absolute.a_learned_table_has_no_row_past_its_length", None)
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"


def test_adding_one_position_row_everywhere_is_caught(monkeypatch) -> None:
    def first_row_only(self, tokens):
        return self.token_embedding(tokens) + self.position_embedding(torch.zeros_like(tokens))

    monkeypatch.setattr(absolute.TransformerEmbedding, "forward", first_row_only)
    row = run_row("absolute.the_position_row_is_added_to_every_token_embedding", None)
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"


def test_binary_encodings_of_the_reference_are_linear_nowhere() -> None:
    """The hand-found counterexample of the spec page: b(1) + b(2) = b(3) but b(2) + b(3) != b(4)."""
    b = absolute.bits(torch.arange(5), 3)
    assert torch.equal(b[1] + b[2], b[3])
    assert not torch.equal(b[2] + b[3], b[4])
    assert torch.equal(b[0] + b[3], b[1] + b[2]) and not torch.equal(b[1] + b[4], b[2] + b[3])


def test_every_absolute_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {q for q, _, _ in MATH}
    mine = {q for q, p in properties.items() if p.module == "absolute"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"
