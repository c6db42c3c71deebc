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

PAST_TWO_TO_THE_D = "absolute.positions_past_two_to_the_d_are_refused_or_wrap_around"
#: Wrong: a position past the last one the bits tell apart takes the last one's encoding.
BITS_CLAMPED = KindMutant("binary-clamps-past-two-to-the-d", "binary",
                          lambda p, d: absolute.bits(p.clamp(max=2**d - 1), d))
#: Right: the d lowest bits, whatever the position (no refusal).
BITS_WRAPPED = KindMutant("binary-keeps-the-lowest-bits", "binary", lambda p, d: absolute.bits(p % 2**d, d))


def test_a_position_past_two_to_the_d_refused_or_wrapped_passes() -> None:
    for right in (ReferenceImplementation(), BITS_WRAPPED):
        row = run_row(PAST_TWO_TO_THE_D, right)
        assert row.outcome == "pass", (getattr(right, "name", right), row.outcome, row.message)


from mutants import Mutant  # noqa: E402
from specformer.reference.positions.learned import input_embedding, learned_positions  # noqa: E402


def _clamped(positions, table):
    return table[positions.clamp(max=table.shape[0] - 1)]  # (t, d): the last row past the end


def _wrapped(positions, table):
    return table[positions % table.shape[0]]  # (t, d): wraps around


def _zeros_past(positions, table):
    rows = table[positions.clamp(max=table.shape[0] - 1)]
    return rows.masked_fill((positions >= table.shape[0])[:, None], 0.0)  # (t, d): zeros past the end


def _off_by_one(positions, table):
    return learned_positions((positions + 1).clamp(max=table.shape[0] - 1), table)


def _sum_with(change):
    def embed(tokens, token_table, position_table, *, scale=False):
        return change(tokens, token_table, position_table, scale)

    return embed


TABLE_CLAMPS = Mutant("table-clamps-positions", learned_positions=_clamped)
TABLE_WRAPS = Mutant("table-wraps-around", learned_positions=_wrapped)
TABLE_ZEROS = Mutant("table-gives-zeros-past-its-end", learned_positions=_zeros_past)
TABLE_SHIFTED = Mutant("table-reads-the-next-row", learned_positions=_off_by_one)
SUM_NO_POSITIONS = Mutant("input-without-positions", input_embedding=_sum_with(
    lambda tok, e, p, scale: input_embedding(tok, e, torch.zeros_like(p), scale=scale)))
SUM_IGNORES_SCALE = Mutant("input-never-scaled", input_embedding=_sum_with(
    lambda tok, e, p, scale: input_embedding(tok, e, p, scale=False)))
SUM_SCALES_POSITIONS = Mutant("input-scales-the-positions-too", input_embedding=_sum_with(
    lambda tok, e, p, scale: input_embedding(tok, e, p, scale=False) * (e.shape[1] ** 0.5 if scale else 1.0)))
SUM_FIRST_ROW = Mutant("input-adds-position-0-everywhere", input_embedding=_sum_with(
    lambda tok, e, p, scale: input_embedding(tok, e, p[:1].expand(p.shape[0], -1), scale=scale)))
SUM_BATCH_POSITIONS = Mutant("input-counts-positions-across-the-batch", input_embedding=_sum_with(
    lambda tok, e, p, scale: torch.cat([input_embedding(tok[i:i + 1], e, p[i:], scale=scale) if p.shape[0] - i >= tok.shape[1]
                                        else input_embedding(tok[i:i + 1], e, p, scale=scale)
                                        for i in range(tok.shape[0])])))

def _wraps_negatives(positions, table):
    """Refuses positions past the end, but indexes negative ones as Python does: -1 is the last row."""
    if int(positions.max()) >= table.shape[0]:
        raise IndexError(f"position {int(positions.max())} past a table of {table.shape[0]} rows")
    return table[positions]  # (t, d); table[-1] is the last row


def _checks_the_first_position_only(positions, table):
    if not 0 <= int(positions[0]) < table.shape[0]:
        raise IndexError(f"position {int(positions[0])} outside the table")
    return table[positions.clamp(0, table.shape[0] - 1)]


def _through_float32(positions, table):
    return learned_positions(positions, table.float()).to(table.dtype)  # rows rounded to float32 and back


def _one_hot_product_in_bfloat16(positions, table):
    one_hot = torch.nn.functional.one_hot(positions, table.shape[0]).to(torch.bfloat16)
    return (one_hot @ table.to(torch.bfloat16)).to(table.dtype)  # (t, n_max) @ (n_max, d): rows rounded


TABLE_WRAPS_NEGATIVES = Mutant("table-wraps-negative-positions", learned_positions=_wraps_negatives)
TABLE_CHECKS_FIRST = Mutant("table-checks-the-first-position-only", learned_positions=_checks_the_first_position_only)
TABLE_FLOAT32 = Mutant("table-read-through-float32", learned_positions=_through_float32)
TABLE_BF16_PRODUCT = Mutant("table-one-hot-product-in-bfloat16", learned_positions=_one_hot_product_in_bfloat16)
SUM_WITHOUT_TOKENS = Mutant("input-without-tokens", input_embedding=_sum_with(
    lambda tok, e, p, scale: input_embedding(tok, torch.zeros_like(e), p, scale=scale)))

LEARNED = "absolute.the_implementations_table_has_rows_up_to_its_length_only"
EXACT = "absolute.a_lookup_returns_the_tables_rows_bit_for_bit"
SUMMANDS = "absolute.each_summand_of_the_input_comes_from_its_own_table"
INPUT = "absolute.the_implementations_input_is_the_token_row_plus_the_position_row"

CASES = [
    (LEARNED, TABLE_CLAMPS), (LEARNED, TABLE_WRAPS), (LEARNED, TABLE_ZEROS), (LEARNED, TABLE_SHIFTED),
    (INPUT, SUM_NO_POSITIONS), (INPUT, SUM_IGNORES_SCALE), (INPUT, SUM_SCALES_POSITIONS), (INPUT, SUM_FIRST_ROW),
    (INPUT, SUM_BATCH_POSITIONS), (LEARNED, TABLE_WRAPS_NEGATIVES), (LEARNED, TABLE_CHECKS_FIRST),
    (EXACT, TABLE_FLOAT32), (EXACT, TABLE_BF16_PRODUCT), (EXACT, TABLE_SHIFTED),
    (SUMMANDS, SUM_SCALES_POSITIONS), (SUMMANDS, SUM_NO_POSITIONS), (SUMMANDS, SUM_WITHOUT_TOKENS),
    (SUMMANDS, SUM_IGNORES_SCALE), (SUMMANDS, SUM_FIRST_ROW),
    ("absolute.a_power_of_two_sets_one_feature_and_the_first_feature_flips_every_step", BITS_MSB_FIRST),
    ("absolute.a_power_of_two_sets_one_feature_and_the_first_feature_flips_every_step",
     KindMutant("binary-gray-code", "binary", lambda p, d: absolute.bits(p ^ (p >> 1), d))),
    ("absolute.an_encoding_depends_on_the_position_alone", NOISY),
    ("absolute.binary_encodings_are_the_bits_and_distinct_below_two_to_the_d", BITS_MSB_FIRST),
    ("absolute.no_linear_map_shifts_binary_encodings", BITS_SHIFT_LINEARLY),
    (PAST_TWO_TO_THE_D, BITS_CLAMPED), (PAST_TWO_TO_THE_D, BITS_MSB_FIRST),
    ("absolute.adding_positions_makes_self_attention_see_the_order", CONSTANT),
]

MATH = [
    ("absolute.a_learned_table_has_no_row_past_its_length", "float64", "pass"),
    ("absolute.the_position_row_is_added_to_every_token_embedding", "float64", "pass"),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
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
    covered = {q for q, _ in CASES} | {q for q, _, _ in MATH} | {PERFORMS, EQUAL, MODERN, EXACT, SUMMANDS}
    mine = {q for q, p in properties.items() if p.module == "absolute"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("qualname", [LEARNED, INPUT, EXACT, SUMMANDS])
def test_the_reference_passes_the_implementation_properties(qualname: str, dtype: str) -> None:
    row = run_row(qualname, ReferenceImplementation(), dtype)
    assert row.outcome == "pass", (row.outcome, row.message)


def test_only_a_negative_position_reveals_a_table_that_wraps_around() -> None:
    """Refusing every position past the end is not enough: -1 must raise too, not give the last row."""
    row = assert_caught(LEARNED, TABLE_WRAPS_NEGATIVES)
    assert "gave a row instead of raising" in row.message and "position -" in row.message, row.message


@pytest.mark.parametrize("exception", [IndexError, ValueError, RuntimeError])
def test_a_table_that_refuses_negative_positions_with_any_exception_passes(exception) -> None:
    def refuses(positions, table):
        if int(positions.min()) < 0 or int(positions.max()) >= table.shape[0]:
            raise exception(f"positions must lie in [0, {table.shape[0]})")
        return table[positions]

    row = run_row(LEARNED, Mutant(f"refuses-with-{exception.__name__}", learned_positions=refuses))
    assert row.outcome == "pass", (row.outcome, row.message)


def test_a_one_hot_product_in_the_tables_own_dtype_is_an_exact_lookup() -> None:
    """Correct but different: ``one_hot(positions) @ table`` in the table's dtype adds exact zeros."""

    def one_hot_lookup(positions, table):
        learned_positions(positions, table)  # the same refusals
        return torch.nn.functional.one_hot(positions, table.shape[0]).to(table.dtype) @ table

    impl = Mutant("one-hot-lookup", learned_positions=one_hot_lookup)
    for dtype in ("float32", "float64"):
        for qualname in (LEARNED, EXACT):
            row = run_row(qualname, impl, dtype)
            assert row.outcome == "pass", (qualname, dtype, row.outcome, row.message)


def test_a_table_that_raises_another_exception_past_its_end_passes() -> None:
    """Correct but different: a ``KeyError`` (or any exception) past the end is a refusal too."""

    def refuses(positions, table):
        if int(positions.min()) < 0 or int(positions.max()) >= table.shape[0]:
            raise KeyError(f"no row for positions {int(positions.min())}..{int(positions.max())}")
        return table[positions]

    row = run_row(LEARNED, Mutant("keyerror-past-the-end", learned_positions=refuses))
    assert row.outcome == "pass", (row.outcome, row.message)


PERFORMS = "absolute.learned_embeddings_perform_better_as_written"
EQUAL = "absolute.learned_and_sinusoidal_are_equal_within_a_tenth_of_a_bleu_point"
MODERN = "absolute.gpt2_holds_a_learned_table_and_llama_rotary_embeddings"


def test_the_documents_table_refutes_better_and_supports_equal() -> None:
    assert run_row(PERFORMS, None).outcome == "refuted"
    assert run_row(EQUAL, None).outcome == "pass"
    assert run_row(MODERN, None).outcome == "pass"


def test_a_table_where_learned_wins_leaves_nothing_to_refute(monkeypatch) -> None:
    monkeypatch.setattr(absolute, "POSITION_TABLE", {"sinusoidal": (4.92, 25.8), "learned": (4.90, 26.0)})
    assert run_row(PERFORMS, None).outcome == "fail"
    assert run_row(EQUAL, None).outcome == "fail"


def test_a_gpt2_without_a_learned_table_is_caught(monkeypatch) -> None:
    import transformers

    original = transformers.GPT2Model.__init__

    def without_wpe(self, config):
        original(self, config)
        del self.wpe

    monkeypatch.setattr(transformers.GPT2Model, "__init__", without_wpe)
    row = run_row(MODERN, None)
    assert row.outcome == "fail" and "learned position table" in row.message, row
