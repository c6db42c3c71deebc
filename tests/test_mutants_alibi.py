"""Every property of ``properties/positions/alibi.py`` catches at least one wrong implementation.

The mutants are the reference with ``alibi_bias`` broken in one way each. Refutations are
"caught" by a mutant under which the claim as written is true (learned, random slopes):
the property then finds no counterexample and the row fails. Properties about the
mathematics (``needs=()``) run on the pseudo-implementation ``math`` and are caught by a
monkeypatched mis-statement of what they check.
"""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.adapters.reference import ReferenceImplementation
from specformer.protocol import Capabilities
from specformer.protocol.base import NotApplicable
from specformer.properties.positions import alibi
from specformer.reference.blocks.size import count_parameters
from specformer.reference.positions.alibi import alibi_slopes


def _grid(t_q: int, t_k: int, device: str | None, offset: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Query positions ``(t_q, 1)`` (shifted by ``offset``) and key positions ``(1, t_k)``, float64."""
    i = torch.arange(t_q, dtype=torch.float64, device=device)[:, None] + offset
    j = torch.arange(t_k, dtype=torch.float64, device=device)[None, :]
    return i, j


class _Mutant(ReferenceImplementation):
    """The reference with ``alibi_bias`` built from :meth:`values` (float64, before the mask)."""

    name = "mutant"
    masks_diagonal = False
    keeps_future = False
    offset_bottom_right = False

    def slopes(self, h: int) -> torch.Tensor:
        return alibi_slopes(h)

    def values(self, m: torch.Tensor, i: torch.Tensor, j: torch.Tensor, t_k: int) -> torch.Tensor:
        return -m * (i - j).abs()

    def alibi_bias(self, h: int, t_q: int, t_k: int, *, causal: bool = False, dtype: torch.dtype,
                   device: str) -> torch.Tensor:
        i, j = _grid(t_q, t_k, device, offset=t_k - t_q if self.offset_bottom_right else 0)
        m = self.slopes(h).to(device)[:, None, None]  # (h, 1, 1)
        bias = self.values(m, i, j, t_k)  # (h, t_q, t_k)
        if causal and not self.keeps_future:
            bias = bias.masked_fill(j >= i if self.masks_diagonal else j > i, float("-inf"))
        return bias.to(dtype)


class PositiveSign(_Mutant):
    name = "alibi-plus-m-distance"

    def values(self, m, i, j, t_k):
        return m * (i - j).abs()


class SignedDistance(_Mutant):
    name = "alibi-signed-distance"

    def values(self, m, i, j, t_k):
        return -m * (i - j)


class BloomForm(_Mutant):
    name = "alibi-plus-m-j"

    def values(self, m, i, j, t_k):
        return m * j + 0 * i


class QuadraticDistance(_Mutant):
    name = "alibi-squared-distance"

    def values(self, m, i, j, t_k):
        return -m * (i - j) ** 2


class LengthNormalised(_Mutant):
    name = "alibi-distance-over-length"

    def values(self, m, i, j, t_k):
        return -m * (i - j).abs() * 8 / t_k


class BottomRight(_Mutant):
    name = "alibi-aligned-bottom-right"
    offset_bottom_right = True


class CausalIgnored(_Mutant):
    name = "alibi-causal-ignored"
    keeps_future = True


class CausalMasksDiagonal(_Mutant):
    name = "alibi-causal-masks-diagonal"
    masks_diagonal = True


class LearnedSlopes(_Mutant):
    """Slopes initialised at random, as a learned parameter would be (a fixed seed per number of heads)."""

    name = "alibi-learned-slopes"

    def slopes(self, h):
        return torch.rand(h, generator=torch.Generator().manual_seed(1000 + h), dtype=torch.float64) + 0.01


class PowerOfTwoRuleEverywhere(_Mutant):
    """``2^(-8k/h)`` for every ``h``, ignoring the paper's rule for other numbers of heads."""

    name = "alibi-slopes-8k-over-h"

    def slopes(self, h):
        return torch.exp2(-8.0 * torch.arange(1, h + 1, dtype=torch.float64) / h)


CASES = [
    ("alibi.the_bias_is_minus_a_positive_slope_times_the_distance", PositiveSign()),
    ("alibi.the_bias_is_minus_a_positive_slope_times_the_distance", SignedDistance()),
    ("alibi.the_bias_is_minus_a_positive_slope_times_the_distance", QuadraticDistance()),
    ("alibi.with_t_q_and_t_k_apart_queries_and_keys_count_from_the_first", BottomRight()),
    ("alibi.with_t_q_and_t_k_apart_queries_and_keys_count_from_the_first", SignedDistance()),
    ("alibi.the_causal_bias_is_minus_the_slope_times_i_minus_j_and_minus_infinity_above", CausalIgnored()),
    ("alibi.the_causal_bias_is_minus_the_slope_times_i_minus_j_and_minus_infinity_above", CausalMasksDiagonal()),
    ("alibi.the_causal_bias_is_minus_the_slope_times_i_minus_j_and_minus_infinity_above", BloomForm()),
    ("alibi.the_causal_bias_is_minus_the_slope_times_i_minus_j_and_minus_infinity_above", QuadraticDistance()),
    ("alibi.the_causal_bias_with_t_q_and_t_k_apart_is_aligned_top_left", BottomRight()),
    ("alibi.the_causal_bias_with_t_q_and_t_k_apart_is_aligned_top_left", CausalIgnored()),
    ("alibi.the_implementations_causal_bias_gives_the_papers_attention_weights", QuadraticDistance()),
    ("alibi.the_implementations_causal_bias_gives_the_papers_attention_weights", CausalIgnored()),
    ("alibi.the_implementations_causal_bias_gives_the_papers_attention_weights", CausalMasksDiagonal()),
    ("alibi.the_slopes_are_the_papers_fixed_geometric_sequence", LearnedSlopes()),
    ("alibi.the_slopes_are_the_papers_fixed_geometric_sequence", PowerOfTwoRuleEverywhere()),
    # the claim as written (learned slopes, not fixed by h) is true of randomly initialised slopes
    ("alibi.the_slopes_are_learned_coefficients_not_fixed_by_the_number_of_heads_as_written", LearnedSlopes()),
    ("alibi.the_bias_of_a_short_input_is_the_top_left_block_of_a_longer_ones", LengthNormalised()),
]

MATH = [
    ("alibi.under_a_causal_mask_forms_that_differ_by_a_row_constant_give_the_same_weights", "pass"),
    ("alibi.the_weight_beyond_the_training_length_is_a_geometric_tail", "pass"),
    ("alibi.beyond_the_training_length_attention_stays_within_trained_distances_as_written", "refuted"),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: _Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("qualname", sorted({q for q, _ in CASES}), ids=lambda q: q.split(".", 1)[1])
def test_the_reference_passes_or_is_refuted(qualname: str, dtype: str, properties) -> None:
    row = run_row(qualname, ReferenceImplementation(), dtype)
    expected = "refuted" if properties[qualname].expect == "counterexample" else "pass"
    assert row.outcome == expected, f"{qualname} in {dtype}: {row.outcome}, {row.message}"


@pytest.mark.parametrize(("qualname", "outcome"), MATH, ids=[q.split(".", 1)[1] for q, _ in MATH])
def test_math_property_has_its_expected_outcome(qualname: str, outcome: str) -> None:
    row = run_row(qualname, None)
    assert row.outcome == outcome, f"{qualname}: {row.outcome}, {row.message}"


def test_a_form_that_is_not_a_row_shift_changes_the_causal_weights(monkeypatch) -> None:
    monkeypatch.setitem(alibi.CAUSAL_FORMS, "-m(i-j)^2", lambda i, j, m: -m * (i - j) ** 2)
    row = run_row("alibi.under_a_causal_mask_forms_that_differ_by_a_row_constant_give_the_same_weights", None)
    assert row.outcome == "fail", row.message


ALIBI_ATTENTION = "alibi.attention_with_alibi_adds_the_fixed_slopes_bias_inside_the_softmax"
NO_POSITIONS = "alibi.an_implementations_alibi_model_holds_no_position_parameters"
SMALLER = "alibi.an_implementations_alibi_model_is_smaller_than_its_sinusoidal_one_as_written"


def _alibi_attention_with(slopes=alibi_slopes, outside=False, causal_shift=0):
    """ALiBi attention built from a slope rule, with the bias added inside (or after) the softmax."""

    def attention(q, k, v, *, causal=False):
        h, t = q.shape[1], q.shape[2]
        i, j = _grid(t, t, None)
        bias = -slopes(h)[:, None, None] * (i - j).abs()  # (h, t, t)
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if not outside:
            scores = scores + bias
        if causal:
            scores = scores.masked_fill(j > i + causal_shift, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        if outside:
            weights = weights + bias.exp() / bias.exp().sum(-1, keepdim=True)  # mixed in after the softmax
        return weights @ v

    return attention


def _linear_slopes(h):
    return torch.arange(1, h + 1, dtype=torch.float64) / h  # positive, but not geometric


def _base_four_slopes(h):
    n = 2 ** (h.bit_length() - 1)
    return torch.exp2(-4.0 * torch.arange(1, h + 1, dtype=torch.float64) / n)  # 2^(-4k/h): the wrong ratio


def _reversed_slopes(h):
    return alibi_slopes(h).flip(0)


ATTENTION_MUTANTS = [
    Mutant("alibi-attention-linear-slopes", alibi_attention=_alibi_attention_with(_linear_slopes)),
    Mutant("alibi-attention-slopes-2^(-4k/h)", alibi_attention=_alibi_attention_with(_base_four_slopes)),
    Mutant("alibi-attention-slopes-reversed", alibi_attention=_alibi_attention_with(_reversed_slopes)),
    Mutant("alibi-bias-outside-the-softmax", alibi_attention=_alibi_attention_with(outside=True)),
    Mutant("alibi-attention-sees-the-next-key", alibi_attention=_alibi_attention_with(causal_shift=1)),
]


@pytest.mark.parametrize("mutant", ATTENTION_MUTANTS, ids=lambda m: m.name)
def test_alibi_attention_catches_wrong_slopes_and_placement(mutant) -> None:
    assert_caught(ALIBI_ATTENTION, mutant)


def test_slopes_only_the_attention_sees_wrong() -> None:
    """Reversed slopes in ``alibi_attention`` while ``alibi_bias`` is right: the bias properties pass, the
    attention property (an independent check of the slopes) fails."""
    mutant = Mutant("alibi-attention-slopes-reversed", alibi_attention=_alibi_attention_with(_reversed_slopes))
    assert run_row("alibi.the_slopes_are_the_papers_fixed_geometric_sequence", mutant).outcome == "pass"
    assert_caught(ALIBI_ATTENTION, mutant)


UNEQUAL = "alibi.attention_with_t_q_and_t_k_apart_counts_queries_and_keys_from_the_first"
EQUAL_SCORES = "alibi.with_equal_scores_each_step_of_distance_divides_the_weight_by_e_to_the_slope"
SCALE = "alibi.alibi_attention_scales_the_scores_by_root_d_k_with_several_heads"
SCALE_AS_WRITTEN = "alibi.alibi_attention_scales_the_scores_by_the_root_of_the_embedding_width_as_written"


def _attention_of_any_lengths(bias_offset=False, mask_offset=False, width=None, distance=lambda d: d.abs()):
    """ALiBi attention for ``t_q`` queries over ``t_k`` keys, correct unless told: the bias's query rows placed at
    the end of the keys (``bias_offset``, the key-value-cache convention), the causal mask aligned bottom-right
    (``mask_offset``), the scores divided by ``sqrt(width(h, d_k))``, or another function of ``i - j``."""

    def attention(q, k, v, *, causal=False):
        h, t_q, t_k, d_k = q.shape[1], q.shape[2], k.shape[2], q.shape[3]
        i, j = _grid(t_q, t_k, None, offset=t_k - t_q if bias_offset else 0)
        bias = -alibi_slopes(h)[:, None, None] * distance(i - j)  # (h, t_q, t_k)
        scores = q @ k.transpose(-2, -1) / (width(h, d_k) if width else d_k) ** 0.5 + bias
        if causal:
            row, col = _grid(t_q, t_k, None, offset=t_k - t_q if mask_offset else 0)
            scores = scores.masked_fill(col > row, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

    return attention


ALIGNED_BOTTOM_RIGHT = Mutant("alibi-attention-queries-at-the-end", alibi_attention=_attention_of_any_lengths(
    bias_offset=True, mask_offset=True))
MASK_BOTTOM_RIGHT = Mutant("alibi-attention-mask-bottom-right", alibi_attention=_attention_of_any_lengths(
    mask_offset=True))
SCALED_BY_MODEL_WIDTH = Mutant("alibi-attention-scaled-by-root-h-d_k", alibi_attention=_attention_of_any_lengths(
    width=lambda h, d_k: h * d_k))
SQUARED = Mutant("alibi-attention-squared-distance", alibi_attention=_attention_of_any_lengths(
    distance=lambda d: d.square()))
SIGNED = Mutant("alibi-attention-signed-distance", alibi_attention=_attention_of_any_lengths(distance=lambda d: d))


@pytest.mark.parametrize(("qualname", "mutant"), [
    (UNEQUAL, ALIGNED_BOTTOM_RIGHT), (UNEQUAL, MASK_BOTTOM_RIGHT),
    (EQUAL_SCORES, SQUARED), (EQUAL_SCORES, SIGNED), (EQUAL_SCORES, ATTENTION_MUTANTS[0]),
    (EQUAL_SCORES, ATTENTION_MUTANTS[3]), (EQUAL_SCORES, ATTENTION_MUTANTS[4]),
    (SCALE, SCALED_BY_MODEL_WIDTH),
], ids=lambda x: x.name if isinstance(x, Mutant) else x.split(".", 1)[1])
def test_the_second_attention_properties_catch_their_mutants(qualname: str, mutant: Mutant) -> None:
    assert_caught(qualname, mutant)


def test_only_unequal_lengths_reveal_an_attention_aligned_bottom_right() -> None:
    """With ``t_q = t_k`` the bottom-right alignment is the top-left one: the square-length properties pass it."""
    for qualname in (ALIBI_ATTENTION, EQUAL_SCORES, SCALE):
        assert run_row(qualname, ALIGNED_BOTTOM_RIGHT).outcome == "pass", qualname
    assert_caught(UNEQUAL, ALIGNED_BOTTOM_RIGHT)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("qualname", [UNEQUAL, EQUAL_SCORES, SCALE, SCALE_AS_WRITTEN], ids=lambda q: q.split(".", 1)[1])
def test_the_reference_passes_the_second_attention_properties(qualname: str, dtype: str, properties) -> None:
    row = run_row(qualname, ReferenceImplementation(), dtype)
    expected = "refuted" if properties[qualname].expect == "counterexample" else "pass"
    assert row.outcome == expected, (row.outcome, row.message)


def test_an_attention_scaled_by_the_embedding_width_leaves_nothing_to_refute() -> None:
    row = run_row(SCALE_AS_WRITTEN, SCALED_BY_MODEL_WIDTH)
    assert row.outcome == "fail", (row.outcome, row.message)


class _SquareOnly(ReferenceImplementation):
    """Correct ALiBi attention that answers ``t_q = t_k`` only, and says so."""

    name = "alibi-square-only"
    capabilities = Capabilities(conventions={"alibi_lengths": frozenset({"equal"})})

    def alibi_attention(self, q, k, v, *, causal=False):
        if q.shape[2] != k.shape[2]:
            raise NotApplicable("t_q = t_k only")
        return super().alibi_attention(q, k, v, causal=causal)


def test_an_attention_that_declares_equal_lengths_is_never_asked_for_others() -> None:
    impl = _SquareOnly()
    assert run_row(UNEQUAL, impl).outcome == "not-applicable"
    for qualname in (ALIBI_ATTENTION, EQUAL_SCORES, SCALE):
        assert run_row(qualname, impl).outcome == "pass", qualname
    assert run_row(SCALE_AS_WRITTEN, impl).outcome == "refuted"


def _counts_with(change):
    return Mutant("miscounts", count_parameters=lambda config: change(config, count_parameters(config)))


def test_learned_slopes_add_parameters() -> None:
    mutant = _counts_with(lambda c, n: n + c.heads * (c.encoder_layers + c.decoder_layers) if c.positions == "alibi"
                          else n)
    assert_caught(NO_POSITIONS, mutant)


def test_an_alibi_model_with_a_position_table_is_caught() -> None:
    mutant = _counts_with(lambda c, n: n + c.max_len * c.d_model if c.positions == "alibi" else n)
    assert_caught(NO_POSITIONS, mutant)


def test_a_learned_table_in_place_of_sinusoidal_leaves_nothing_to_refute() -> None:
    mutant = _counts_with(lambda c, n: n + c.max_len * c.d_model if c.positions == "sinusoidal" else n)
    row = run_row(SMALLER, mutant)
    assert row.outcome == "fail", row.message


@pytest.mark.parametrize("qualname, outcome", [(NO_POSITIONS, "pass"), (SMALLER, "refuted"), (ALIBI_ATTENTION, "pass")])
def test_the_reference_passes_the_count_and_attention_properties(qualname: str, outcome: str) -> None:
    row = run_row(qualname, ReferenceImplementation())
    assert row.outcome == outcome, (row.outcome, row.message)


def test_a_wrong_tail_formula_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(alibi, "mass_beyond_closed_form", lambda m, trained, t: torch.exp(-m * trained))
    row = run_row("alibi.the_weight_beyond_the_training_length_is_a_geometric_tail", None)
    assert row.outcome == "fail", row.message


def test_steep_slopes_leave_the_extrapolation_reading_nothing_to_refute(monkeypatch) -> None:
    monkeypatch.setattr(alibi, "paper_slopes", lambda h: torch.full((h,), 4.0, dtype=torch.float64))
    row = run_row("alibi.beyond_the_training_length_attention_stays_within_trained_distances_as_written", None)
    assert row.outcome == "fail", row.message


def test_the_paper_slopes_of_the_property_module() -> None:
    """The property module's own sequence, written as a start and a ratio, against the paper's numbers."""
    assert alibi.paper_slopes(8).tolist() == [2.0 ** -k for k in range(1, 9)]
    assert alibi.paper_slopes(3).tolist() == [1 / 16, 1 / 256, 1 / 4]
    assert alibi.paper_slopes(1).tolist() == [2.0 ** -8]
    torch.testing.assert_close(alibi.paper_slopes(12)[8:], torch.exp2(-torch.tensor([1, 3, 5, 7.0]) / 2).double())


def test_every_alibi_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {q for q, _ in MATH} | {ALIBI_ATTENTION, NO_POSITIONS, SMALLER, UNEQUAL,
                                                               EQUAL_SCORES, SCALE, SCALE_AS_WRITTEN}
    mine = {q for q, p in properties.items() if p.module == "alibi"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"
