"""The statistical properties of ``properties/attention/scaling.py``: outcomes, false-alarm bounds, power.

These properties are about the mathematics (``needs=()``), so there is no implementation
to mutate. Instead each test checks that a hold property passes and a refutation
refutes on the pseudo-implementation ``math``, that the stated false-alarm bounds hold,
and that a mis-stated version of the claim (wrong samples, wrong target) is rejected by
the same intervals.
"""

from __future__ import annotations

import math

import pytest
import torch

from conftest import run_row
from specformer.properties.attention import scaling

OUTCOMES = {
    "scaling.dot_products_of_standardised_vectors_have_variance_d_k": "pass",
    "scaling.dot_products_of_unit_variance_vectors_have_variance_d_k_as_written": "refuted",
    "scaling.scaled_dot_products_have_unit_variance": "pass",
    "scaling.dot_products_have_mean_zero_variance_d_k_and_excess_kurtosis_6_over_d_k": "pass",
    "scaling.dot_products_are_normal_as_written": "refuted",
    "scaling.dot_products_have_variance_root_d_k_as_written": "refuted",
    "scaling.dot_products_in_dimension_64_have_standard_deviation_8": "pass",
    "scaling.unscaled_scores_saturate_the_softmax_and_scaled_scores_do_not": "pass",
}


@pytest.mark.parametrize("qualname", sorted(OUTCOMES))  # the math rows; implementation rows below
def test_property_has_its_expected_outcome(qualname: str) -> None:
    row = run_row(qualname, None)
    assert row.outcome == OUTCOMES[qualname], f"{qualname}: {row.outcome}, {row.message}"


def test_every_scaling_property_is_covered(properties) -> None:
    mine = {q for q, p in properties.items() if p.module == "scaling"}
    assert mine <= set(OUTCOMES), f"properties without a check: {sorted(mine - set(OUTCOMES))}"


# -- the false-alarm bounds the docstrings state --------------------------------------------


def test_median_of_blocks_false_alarm_is_below_a_third_of_1e_7() -> None:
    assert scaling.MEDIAN_FALSE_ALARM <= 1e-7 / 3
    # cross-check against a Chernoff bound exp(-m KL(1/2 || p)) for the same binomial tail
    p, m = scaling.BLOCK_MISS, scaling.BLOCKS
    kl = 0.5 * math.log(0.5 / p) + 0.5 * math.log(0.5 / (1 - p))
    assert scaling.MEDIAN_FALSE_ALARM <= math.exp(-m * kl)


def test_median_false_alarm_is_the_binomial_tail() -> None:
    assert scaling.median_false_alarm(1, 0.25) == pytest.approx(0.25)
    assert scaling.median_false_alarm(3, 0.5) == pytest.approx(0.5)  # symmetric: P(Bin(3, 1/2) >= 2)


def test_hoeffding_false_alarm_of_the_saturation_property_is_below_1e_7() -> None:
    assert scaling.hoeffding_false_alarm() <= 1e-7


def test_saturation_thresholds_leave_the_hoeffding_margin() -> None:
    # measured worst cases over t_k in [4, 16] (10^5 rows, standard error <= 0.001), see the docstring
    worst_unscaled = {64: (0.8443, 0.1763), 128: (0.8898, 0.1340), 256: (0.9206, 0.1014), 512: (0.9452, 0.0725)}
    margin = scaling.SATURATION_MARGIN + 0.006
    for d_k, (max_weight, jacobian) in worst_unscaled.items():
        low, high = scaling.UNSCALED_THRESHOLDS[d_k]
        assert max_weight - low >= margin and high - jacobian >= margin, d_k
    high_max, low_jacobian = scaling.SCALED_THRESHOLDS
    assert high_max - 0.5167 >= margin and 0.3046 - low_jacobian >= margin


# -- the moment formulas the intervals use -----------------------------------------------


@pytest.mark.parametrize("d_k", [1, 2, 5])
def test_normal_dot_product_moments_match_the_general_formula(d_k: int) -> None:
    assert scaling.normal_dot_product_moment(d_k, 2) == d_k
    assert scaling.normal_dot_product_moment(d_k, 4) == scaling.dot_product_fourth_moment(d_k, "normal")
    assert scaling.normal_dot_product_moment(d_k, 3) == 0.0


def test_sample_variance_variance_of_normal_samples() -> None:
    # for N(0, 1) samples Var[s^2] = 2 / (n - 1)
    assert scaling.sample_variance_variance(3.0, 1.0, 11) == pytest.approx(2 / 10)


@pytest.mark.parametrize("dist", sorted(scaling.COMPONENT_FOURTH_MOMENT))
def test_components_have_mean_0_variance_1_and_the_stated_fourth_moment(dist: str) -> None:
    x = scaling.components(dist, (400_000,), torch.Generator().manual_seed(1))
    assert abs(x.mean().item()) < 0.01
    assert abs(x.var().item() - 1) < 0.02
    assert abs((x**4).mean().item() - scaling.COMPONENT_FOURTH_MOMENT[dist]) < 0.1


def test_an_unknown_distribution_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown component distribution"):
        scaling.components("cauchy", (3,), torch.Generator())


# -- mis-stated claims are rejected ---------------------------------------------------------


@pytest.fixture
def shifted_components(monkeypatch):
    """Components with mean 1 instead of 0 (still variance 1): the documents' missing assumption."""
    original = scaling.components
    monkeypatch.setattr(scaling, "components", lambda dist, shape, generator, mean=0.0:
                        original(dist, shape, generator, mean + 1.0))


@pytest.mark.parametrize("qualname", [
    "scaling.dot_products_of_standardised_vectors_have_variance_d_k",
    "scaling.scaled_dot_products_have_unit_variance",
    "scaling.dot_products_have_mean_zero_variance_d_k_and_excess_kurtosis_6_over_d_k",
    "scaling.dot_products_in_dimension_64_have_standard_deviation_8",
])
def test_hold_properties_reject_components_with_mean_one(qualname: str, shifted_components) -> None:
    row = run_row(qualname, None)
    assert row.outcome == "fail", f"{qualname} accepted mean-1 components: {row.outcome}, {row.message}"


def test_refutation_finds_nothing_when_the_components_have_mean_zero(monkeypatch) -> None:
    original = scaling.dot_products
    monkeypatch.setattr(scaling, "dot_products", lambda d_k, block, seed, dist="normal", mean=0.0:
                        original(d_k, block, seed, dist, 0.0))
    row = run_row("scaling.dot_products_of_unit_variance_vectors_have_variance_d_k_as_written", None)
    assert row.outcome == "fail", row.message


def test_unscaled_variance_is_not_one() -> None:
    samples = scaling.dot_products(64, scaling.VARIANCE_BLOCK, seed=3)
    with pytest.raises(AssertionError, match="outside"):
        scaling.assert_variance(samples, 1.0, scaling.dot_product_fourth_moment(64) / 64**2, "Var[q.k] = 1")


def test_zero_excess_kurtosis_is_rejected_at_d_k_1() -> None:
    samples = scaling.dot_products(1, scaling.moment_block(1), seed=3)
    scaling.assert_mean(samples**4, 9.0, scaling.normalised_fourth_power_variance(1), "E[X^4] = 9")
    with pytest.raises(AssertionError, match="outside"):
        scaling.assert_mean(samples**4, 3.0, scaling.normalised_fourth_power_variance(1), "E[X^4] = 3")


def test_scaled_scores_do_not_pass_for_unscaled_ones(monkeypatch) -> None:
    original = scaling.saturation_statistics

    def swapped(d_k, t_k, seed, rows=scaling.SATURATION_ROWS):
        stats = original(d_k, t_k, seed, rows)
        return {name.replace("unscaled", "@").replace("scaled", "unscaled").replace("@", "scaled"): value
                for name, value in stats.items()}

    monkeypatch.setattr(scaling, "saturation_statistics", swapped)
    row = run_row("scaling.unscaled_scores_saturate_the_softmax_and_scaled_scores_do_not", None)
    assert row.outcome == "fail", row.message


# -- the same claims on an implementation's attention ---------------------------------------
from conftest import assert_caught  # noqa: E402
from mutants import NO_SCALE, SCALE_BY_D  # noqa: E402

from specformer.adapters.reference import implementation as reference  # noqa: E402

CALLING = [
    "scaling.the_implementations_unscaled_dot_products_have_variance_d_k",
    "scaling.the_implementations_scaled_scores_have_unit_variance",
    "scaling.the_implementations_dot_products_have_excess_kurtosis_6_over_d_k",
    "scaling.at_d_k_64_the_implementations_dot_products_have_sd_8_and_its_scores_sd_1",
    "scaling.the_implementations_softmax_saturates_on_unscaled_scores_and_not_on_scaled_ones",
]
OUTCOMES.update(dict.fromkeys(CALLING, "pass"))


@pytest.mark.parametrize("qualname", CALLING)
def test_the_reference_passes_the_implementation_statistics(qualname: str) -> None:
    dtype = "float32"  # these rows run in float32 only
    row = run_row(qualname, reference, dtype)
    assert row.outcome == "pass", f"{qualname} ({dtype}): {row.outcome}, {row.message}"


@pytest.mark.parametrize("mutant", [NO_SCALE, SCALE_BY_D], ids=lambda m: m.name)
@pytest.mark.parametrize("qualname", CALLING)
def test_a_wrong_scale_is_caught_by_the_implementation_statistics(qualname: str, mutant) -> None:
    assert_caught(qualname, mutant, "float32")


def test_the_implementations_statistics_need_no_exposed_weights() -> None:
    """An implementation that hides its weights (a fused kernel) is still measured, through its output."""

    class OutputOnly:
        name = "output-only"

        def attention(self, q, k, v, mask=None, *, causal=False):
            return reference.attention(q, k, v, mask, causal=causal).output, None

    row = run_row(CALLING[1], OutputOnly(), "float32")
    assert row.outcome == "pass", f"{row.outcome}, {row.message}"
