"""The saturation refutations (``properties/attention/saturation.py``) are found, and each fails
under a mis-statement: the regime of 4 keys, where the claim as written holds."""

from __future__ import annotations

import pytest

from conftest import run_row
from specformer.properties.attention import saturation

HARD = "saturation.at_d_k_64_the_unscaled_softmax_is_almost_a_hard_selection_as_written"
GRADIENTS = "saturation.at_d_k_64_unscaled_scores_give_smaller_softmax_gradients_than_scaled_ones_as_written"


@pytest.mark.parametrize("qualname", [HARD, GRADIENTS])
def test_the_refutation_finds_its_counterexample(qualname: str) -> None:
    row = run_row(qualname, None)
    assert row.outcome == "refuted", f"{row.outcome}: {row.message}"


@pytest.mark.parametrize("qualname", [HARD, GRADIENTS])
def test_with_four_keys_the_claim_holds_and_the_refutation_fails(monkeypatch, qualname: str) -> None:
    rows = saturation.softmax_rows
    monkeypatch.setattr(saturation, "softmax_rows", lambda t_k, seed: rows(4, seed))
    row = run_row(qualname, None)
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"


def test_the_miss_probabilities_are_tiny() -> None:
    assert saturation.HARD_SELECTION_MISS < 1e-15 and saturation.JACOBIAN_MISS < 1e-9
    assert saturation.binomial_upper_tail(10, 0.5, 5) == pytest.approx(638 / 1024)
