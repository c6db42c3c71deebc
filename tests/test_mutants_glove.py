"""Every property of ``properties/embeddings/glove.py`` catches a wrong weighting or a mis-statement of
the documents' objective, code and counts."""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import Mutant, declaring
from specformer.properties.embeddings import glove
from specformer.protocol import Capabilities

NO_CAP = Mutant("glove-weight-without-the-cap", glove_weight=lambda x, x_max=100.0, alpha=0.75: (x / x_max).pow(alpha))
LINEAR = Mutant("glove-weight-exponent-1", glove_weight=lambda x, x_max=100.0, alpha=0.75: (x / x_max).clamp(max=1))
FIXED_X_MAX = Mutant("glove-weight-ignores-x_max",
                     glove_weight=lambda x, x_max=100.0, alpha=0.75: (x / 100.0).pow(alpha).clamp(max=1))

WEIGHTING = "glove.the_glove_weight_is_min_of_one_and_x_over_x_max_to_the_alpha"
CAPPED = "glove.the_weight_grows_with_the_count_up_to_x_max_and_then_stays_one"
CAPPED_AS_WRITTEN = "glove.a_more_frequent_pair_always_weighs_more_as_written"
OBJECTIVE = "glove.the_glove_objective_sums_over_the_pairs_that_co_occur"
EPOCH_BOUND = "glove.an_epoch_over_x_touches_at_most_the_windows_pairs"
ONE_PASS_AS_WRITTEN = "glove.one_pass_over_x_trains_glove_as_written"
CODE = "glove.the_corrected_code_is_the_objective_with_one_table_and_one_bias"
CODE_AS_WRITTEN = "glove.the_codes_glove_loss_runs_as_printed"
SYMMETRIC = "glove.co_occurrence_counts_of_a_symmetric_window_are_symmetric"

def _log_one_plus(x, w, w_tilde, b, b_tilde, x_max=100.0, alpha=0.75):
    """Wrong: the common variant that fits log(1 + X) over every pair."""
    weights = glove.weight_formula(x, x_max, alpha).to(x.dtype)
    error = w @ w_tilde.T + b[:, None] + b_tilde[None, :] - torch.log1p(x)
    return (weights * error.square()).sum()


def _every_pair_literally(x, w, w_tilde, b, b_tilde, x_max=100.0, alpha=0.75):
    """Wrong: 000's sum evaluated literally over every pair: 0 * inf = NaN at a zero count."""
    weights = (x / x_max).pow(alpha).clamp(max=1)
    error = w @ w_tilde.T + b[:, None] + b_tilde[None, :] - torch.log(x)
    return (weights * error.square()).sum()


def _unweighted(x, w, w_tilde, b, b_tilde, x_max=100.0, alpha=0.75):
    """Wrong: the plain least squares over the positive counts, no f(X)."""
    error = w @ w_tilde.T + b[:, None] + b_tilde[None, :] - torch.log(torch.where(x > 0, x, torch.ones_like(x)))
    return error.square()[x > 0].sum()


def _left_contexts(ids, vocab, window, *, dtype=torch.float64, device="cpu"):
    """Wrong for a symmetric window: only the words before each word count (GloVe's symmetric=0)."""
    x = torch.zeros(vocab, vocab, dtype=dtype, device=device)
    for t, i in enumerate(ids):
        for d in range(1, min(window, t) + 1):
            x[i, ids[t - d]] += 1.0 / d
    return x


def _uniform_counts(ids, vocab, window, *, dtype=torch.float64, device="cpu"):
    """Wrong for GloVe: every pair in the window counts 1, not 1/d."""
    from specformer.reference.embeddings.glove import cooccurrence_counts

    return cooccurrence_counts([ids], vocab, window, "uniform", dtype=dtype, device=device)


def _all_pairs(ids, vocab, window, *, dtype=torch.float64, device="cpu"):
    """Wrong: a dense matrix, every pair of the vocabulary counted once (ignores the text)."""
    return torch.ones(vocab, vocab, dtype=dtype, device=device) + torch.eye(vocab, dtype=dtype, device=device)


def _hard_coded_weighting(x, w, w_tilde, b, b_tilde, x_max=100.0, alpha=0.75):
    """Wrong: the paper's x_max = 100 and alpha = 3/4 written into the loss, whatever is passed."""
    from specformer.reference.embeddings.glove import glove_loss

    return glove_loss(x, w, w_tilde, b, b_tilde, 100.0, 0.75)


def _half(x, w, w_tilde, b, b_tilde, x_max=100.0, alpha=0.75):
    """glove.c's cost: 1/2 of J (correct under glove_loss_factor = 0.5)."""
    from specformer.reference.embeddings.glove import glove_loss

    return 0.5 * glove_loss(x, w, w_tilde, b, b_tilde, x_max, alpha)


def _half_on_log_one_plus(x, w, w_tilde, b, b_tilde, x_max=100.0, alpha=0.75):
    """Wrong under any factor: half of the log(1 + X) variant."""
    return 0.5 * _log_one_plus(x, w, w_tilde, b, b_tilde, x_max, alpha)


HARD_CODED = Mutant("glove-loss-hard-codes-x_max-and-alpha", glove_loss=_hard_coded_weighting)
HALF_UNDECLARED = Mutant("glove-loss-halved-undeclared", glove_loss=_half)
HALF_DECLARED = declaring(Mutant("glove-loss-halved-declared", glove_loss=_half), glove_loss_factor=0.5)
FULL_DECLARED_HALF = declaring(Mutant("glove-loss-full-declared-halved"), glove_loss_factor=0.5)
HALF_LOG_ONE_PLUS = declaring(Mutant("glove-loss-halved-on-log-1-plus-x", glove_loss=_half_on_log_one_plus),
                              glove_loss_factor=0.5)
LOG_ONE_PLUS = Mutant("glove-loss-on-log-1-plus-x", glove_loss=_log_one_plus)
LITERAL = Mutant("glove-loss-every-pair-literally", glove_loss=_every_pair_literally)
UNWEIGHTED = Mutant("glove-loss-without-f", glove_loss=_unweighted)
LEFT = Mutant("cooccurrence-left-contexts-only", glove_cooccurrence=_left_contexts)
UNIFORM = Mutant("cooccurrence-uniform-weights", glove_cooccurrence=_uniform_counts)
DENSE = Mutant("cooccurrence-every-pair", glove_cooccurrence=_all_pairs)

CASES = [
    (WEIGHTING, NO_CAP), (WEIGHTING, LINEAR), (WEIGHTING, FIXED_X_MAX),
    (CAPPED, NO_CAP), (CAPPED, FIXED_X_MAX),
    (OBJECTIVE, LOG_ONE_PLUS), (OBJECTIVE, LITERAL), (OBJECTIVE, UNWEIGHTED), (OBJECTIVE, HARD_CODED),
    (OBJECTIVE, HALF_UNDECLARED), (OBJECTIVE, FULL_DECLARED_HALF), (OBJECTIVE, HALF_LOG_ONE_PLUS),
    (SYMMETRIC, LEFT), (SYMMETRIC, UNIFORM), (SYMMETRIC, DENSE),
    (EPOCH_BOUND, DENSE),
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
    for qualname in (OBJECTIVE, SYMMETRIC, EPOCH_BOUND):
        row = run_row(qualname, implementation, dtype)
        assert row.outcome == "pass", (qualname, row.message)


def test_glove_c_s_half_cost_declared_ends_every_glove_row_as_the_reference_does(properties) -> None:
    """1/2 J (glove.c's cost), declared as ``glove_loss_factor = 0.5``, is a correct loss: every glove property
    ends for it as for the reference (pass, or refuted for the claims as written)."""
    from specformer.adapters.reference import implementation

    mine = sorted(q for q, p in properties.items() if p.module == "glove")
    assert OBJECTIVE in mine and ONE_PASS_AS_WRITTEN in mine
    for qualname in mine:
        expected = run_row(qualname, implementation).outcome
        row = run_row(qualname, HALF_DECLARED)
        assert row.outcome == expected and expected in ("pass", "refuted"), (qualname, row.outcome, row.message)


def test_a_weight_without_the_cap_leaves_nothing_to_refute() -> None:
    """A weight that keeps growing past x_max agrees with 002's comment: the refutation must fail."""
    row = run_row(CAPPED_AS_WRITTEN, NO_CAP, profile="mutants")
    assert row.outcome == "fail", row


def test_a_loss_that_one_pass_minimises_leaves_nothing_to_refute() -> None:
    """A "loss" that ignores the vectors (constant) is minimised by any pass: the refutation must fail."""
    from specformer.adapters.reference import implementation

    assert run_row(ONE_PASS_AS_WRITTEN, implementation).outcome == "refuted"
    constant = Mutant("glove-loss-constant", glove_loss=lambda x, *args, **kwargs: x.sum() * 0 + 1)
    row = run_row(ONE_PASS_AS_WRITTEN, constant)
    assert row.outcome == "fail", row


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


def test_every_glove_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {CAPPED_AS_WRITTEN, CODE, CODE_AS_WRITTEN, ONE_PASS_AS_WRITTEN}
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
