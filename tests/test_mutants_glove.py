"""Every property of ``properties/embeddings/glove.py`` catches a wrong weighting or a mis-statement of
the documents' objective, code and counts."""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.embeddings import glove

NO_CAP = Mutant("glove-weight-without-the-cap", glove_weight=lambda x, x_max=100.0, alpha=0.75: (x / x_max).pow(alpha))
LINEAR = Mutant("glove-weight-exponent-1", glove_weight=lambda x, x_max=100.0, alpha=0.75: (x / x_max).clamp(max=1))
FIXED_X_MAX = Mutant("glove-weight-ignores-x_max",
                     glove_weight=lambda x, x_max=100.0, alpha=0.75: (x / 100.0).pow(alpha).clamp(max=1))

WEIGHTING = "glove.the_glove_weight_is_min_of_one_and_x_over_x_max_to_the_alpha"
CAPPED = "glove.the_weight_grows_with_the_count_up_to_x_max_and_then_stays_one"
CAPPED_AS_WRITTEN = "glove.a_more_frequent_pair_always_weighs_more_as_written"
OBJECTIVE = "glove.the_glove_objective_sums_over_the_pairs_that_co_occur"
OBJECTIVE_AS_WRITTEN = "glove.the_objective_sums_over_all_pairs_as_written"
CODE = "glove.the_corrected_code_is_the_objective_with_one_table_and_one_bias"
CODE_AS_WRITTEN = "glove.the_codes_glove_loss_runs_as_printed"
SYMMETRIC = "glove.co_occurrence_counts_of_a_symmetric_window_are_symmetric"

CASES = [
    (WEIGHTING, NO_CAP), (WEIGHTING, LINEAR), (WEIGHTING, FIXED_X_MAX),
    (CAPPED, NO_CAP),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_reference_passes_and_refutes(dtype: str) -> None:
    from specformer.adapters.reference import implementation

    assert run_row(WEIGHTING, implementation, dtype).outcome == "pass"
    assert run_row(CAPPED, implementation, dtype).outcome == "pass"
    assert run_row(CAPPED_AS_WRITTEN, implementation, dtype).outcome == "refuted"


def test_a_weight_without_the_cap_leaves_nothing_to_refute() -> None:
    """A weight that keeps growing past x_max agrees with 002's comment: the refutation must fail."""
    row = run_row(CAPPED_AS_WRITTEN, NO_CAP, profile="mutants")
    assert row.outcome == "fail", row


def _log_one_plus(x, w, w_tilde, b, b_tilde, x_max=100.0, alpha=0.75):
    """Wrong: the common variant that fits log(1 + X) over every pair."""
    weights = glove.weight_formula(x, x_max, alpha)
    error = w @ w_tilde.T + b[:, None] + b_tilde[None, :] - torch.log1p(x)
    return (weights * error.square()).sum()


def test_an_objective_on_log_one_plus_x_is_caught(monkeypatch) -> None:
    assert run_row(OBJECTIVE, None).outcome == "pass"
    monkeypatch.setattr(glove, "glove_loss", _log_one_plus)
    row = run_row(OBJECTIVE, None)
    assert row.outcome == "fail" and "positive counts" in row.message, row


def test_a_formula_over_the_positive_counts_leaves_nothing_to_refute(monkeypatch) -> None:
    row = run_row(OBJECTIVE_AS_WRITTEN, None)
    assert row.outcome == "refuted" and "nan" in row.message, row
    monkeypatch.setattr(glove, "objective_as_written", glove.objective_written_out)
    assert run_row(OBJECTIVE_AS_WRITTEN, None).outcome == "fail"


def test_a_corrected_code_that_counts_each_pair_once_is_caught(monkeypatch) -> None:
    assert run_row(CODE, None).outcome == "pass"
    corrected = glove.code_002_corrected
    monkeypatch.setattr(glove, "code_002_corrected", lambda e, b, x: corrected(e, b, x.triu()))
    row = run_row(CODE, None)
    assert row.outcome == "fail", row


def test_a_code_that_runs_leaves_nothing_to_refute(monkeypatch) -> None:
    row = run_row(CODE_AS_WRITTEN, None)
    assert row.outcome == "refuted" and "raises" in row.message, row
    monkeypatch.setattr(glove, "code_002_as_printed", glove.code_002_corrected)
    assert run_row(CODE_AS_WRITTEN, None).outcome == "fail"


def _left_contexts(sentences, vocab, window, weighting="harmonic"):
    """Wrong for a symmetric window: only the words before each word count (GloVe's symmetric=0)."""
    x = torch.zeros(vocab, vocab, dtype=torch.float64)
    for sentence in sentences:
        for t, i in enumerate(sentence):
            for d in range(1, min(window, t) + 1):
                x[i, sentence[t - d]] += 1.0 / d if weighting == "harmonic" else 1.0
    return x


def test_left_context_counts_are_caught(monkeypatch) -> None:
    assert run_row(SYMMETRIC, None).outcome == "pass"
    monkeypatch.setattr(glove, "cooccurrence_counts", _left_contexts)
    row = run_row(SYMMETRIC, None)
    assert row.outcome == "fail" and "co-occurrence counts" in row.message, row


def test_every_glove_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {CAPPED_AS_WRITTEN, OBJECTIVE, OBJECTIVE_AS_WRITTEN, CODE, CODE_AS_WRITTEN,
                                       SYMMETRIC}
    mine = {q for q, p in properties.items() if p.module == "glove"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_input() -> None:
    from specformer.reference.embeddings.glove import cooccurrence_counts, glove_loss, glove_weight

    with pytest.raises(ValueError, match="finite and non-negative"):
        glove_weight(torch.tensor([-1.0]))
    with pytest.raises(ValueError, match="x_max must be positive"):
        glove_weight(torch.tensor([1.0]), x_max=0.0)
    with pytest.raises(ValueError, match="alpha must be positive"):
        glove_weight(torch.tensor([1.0]), alpha=0.0)
    with pytest.raises(ValueError, match="window must be a positive integer"):
        cooccurrence_counts([[0, 1]], 2, 0)
    with pytest.raises(ValueError, match="the corpus is empty"):
        cooccurrence_counts([[]], 2, 1)
    w = torch.ones(2, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"X must be \(2, 2\)"):
        glove_loss(torch.ones(3, 3, dtype=torch.float64), w, w, torch.ones(2), torch.ones(2))
