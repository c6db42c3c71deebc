"""Every property of ``properties/embeddings/laws.py`` catches a wrong formula or a wrong constant.

The properties call no implementation: they check the reference's arithmetic
(:mod:`specformer.reference.embeddings.scaling`) against formulas and counts written in the
property. Each mutant swaps one constant or function of that module (or of the property
module's own statement of the document) and must turn a passing row into a failing one.
"""

from __future__ import annotations

import math

import pytest

from conftest import run_row
from specformer.properties.embeddings import laws as props
from specformer.reference.embeddings import scaling as law

POWER_LAW = "laws.loss_falls_as_a_power_law_of_the_non_embedding_parameters"
COUNT = "laws.kaplans_n_is_the_12_n_layer_d_model_squared_outside_the_embeddings"
AS_WRITTEN = "laws.loss_of_the_total_parameter_count_as_written"
ALLOCATION = "laws.a_doubled_budget_grows_parameters_and_tokens_by_about_sqrt_2_each"
TABLE = "laws.the_tables_labels_follow_the_20_tokens_per_parameter_rule"
FIT = "laws.by_the_parametric_fit_the_optimum_holds_over_80_tokens_per_parameter"
INFERENCE = "laws.more_tokens_per_parameter_buys_a_smaller_model_cheaper_per_token"

ALL = (POWER_LAW, COUNT, ALLOCATION, TABLE, FIT, INFERENCE)


def _kaplan_loss_rising(n: float) -> float:
    return (law.KAPLAN_N_C / n) ** -law.KAPLAN_ALPHA_N


def _kaplan_loss_in_log10(n: float) -> float:
    return math.log10(law.KAPLAN_N_C / n) ** law.KAPLAN_ALPHA_N


def _compute_2nd(n: float, d: float) -> float:
    return 2 * n * d


def _tokens_per_parameter_inverted(n: float, d: float) -> float:
    return n / d


def _compute_optimal_by_kaplan(c: float, ratio: float = law.TOKENS_PER_PARAMETER) -> tuple[float, float]:
    return law.allocate(c, *law.KAPLAN_ALLOCATION)


def _non_embedding_without_square(n_layer: int, d_model: int) -> int:
    return 12 * n_layer * d_model


def _non_embedding_without_ffn(n_layer: int, d_model: int) -> int:
    return 4 * n_layer * d_model * d_model


def _inference_6n(n: float) -> float:
    return 6 * n


MUTANTS = [
    (POWER_LAW, "KAPLAN_ALPHA_N", -0.076),
    (POWER_LAW, "KAPLAN_ALPHA_N", 0.095),
    (POWER_LAW, "kaplan_loss", _kaplan_loss_rising),
    (POWER_LAW, "kaplan_loss", _kaplan_loss_in_log10),
    (COUNT, "non_embedding_parameters", _non_embedding_without_square),
    (COUNT, "non_embedding_parameters", _non_embedding_without_ffn),
    (ALLOCATION, "CHINCHILLA_EXPONENTS", {f"approach {i}": law.KAPLAN_ALLOCATION for i in (1, 2, 3)}),
    (ALLOCATION, "CHINCHILLA_EXPONENTS", {"approach 1": (0.5, 0.5), "approach 2": (0.49, 0.51),
                                          "approach 3": (0.46, 0.46)}),
    (ALLOCATION, "training_compute", _compute_2nd),
    (TABLE, "tokens_per_parameter", _tokens_per_parameter_inverted),
    (TABLE, "training_compute", _compute_2nd),
    (TABLE, "FLOPS_PER_PARAMETER_TOKEN", 2),
    (TABLE, "compute_optimal", _compute_optimal_by_kaplan),
    (FIT, "CHINCHILLA_FIT", (1.69, 406.4, 410.7, 0.28, 0.34)),
    (FIT, "CHINCHILLA_FIT", (1.69, 410.7, 406.4, 0.34, 0.28 * 2)),
    (FIT, "TOKENS_PER_PARAMETER", 50.0),
    (INFERENCE, "FLOPS_PER_PARAMETER_TOKEN", 2),
    (INFERENCE, "inference_flops_per_token", _inference_6n),
]


def test_the_reference_passes_every_property() -> None:
    for qualname in ALL:
        row = run_row(qualname, None)
        assert row.outcome == "pass", (qualname, row.message)


def test_the_document_as_written_is_refuted_by_gpt2_small_or_medium() -> None:
    row = run_row(AS_WRITTEN, None)
    assert row.outcome == "refuted", row
    assert "GPT-2 small" in row.message or "GPT-2 medium" in row.message, row.message


@pytest.mark.parametrize(("qualname", "name", "value"), MUTANTS,
                         ids=[f"{q.split('.', 1)[1][:40]}-{n}-{i}" for i, (q, n, _) in enumerate(MUTANTS)])
def test_a_wrong_formula_or_constant_is_caught(monkeypatch: pytest.MonkeyPatch, qualname: str, name: str,
                                               value: object) -> None:
    assert run_row(qualname, None).outcome == "pass"
    monkeypatch.setattr(law, name, value)
    row = run_row(qualname, None, profile="mutants")
    assert row.outcome == "fail" and row.message, (name, row)


def test_a_misquoted_document_constant_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(props, "DOCUMENT_ALPHA_N", 0.76)
    row = run_row(POWER_LAW, None, profile="mutants")
    assert row.outcome == "fail" and "0.076" in row.message, row


def test_a_table_whose_labels_were_swapped_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    swapped = dict(props.TABLE)
    swapped["LLaMA 2"], swapped["LLaMA 3"] = (70e9, 2e12, "heavily over-trained"), (70e9, 15e12, "over-trained")
    monkeypatch.setattr(props, "TABLE", swapped)
    row = run_row(TABLE, None, profile="mutants")
    assert row.outcome == "fail" and "LLaMA 2" in row.message, row


def test_the_document_as_written_would_stand_if_embeddings_were_negligible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(props, "GPT2_VOCAB", 8)
    monkeypatch.setattr(props, "GPT2_CONTEXT", 8)
    assert run_row(AS_WRITTEN, None).outcome == "fail"


def test_the_fit_optimum_search_finds_a_known_minimum() -> None:
    c = 5.76e23
    e, a, b, alpha, beta = law.CHINCHILLA_FIT
    closed = (alpha * a / (beta * b)) ** (1 / (alpha + beta)) * (c / 6) ** (beta / (alpha + beta))
    assert abs(props.fit_optimum(c) / closed - 1) < 1e-6
    assert 30e9 < closed < 35e9  # 32.2B with the rounded constants; Hoffmann et al.'s Table 3 gives 40B


def test_bad_input_names_the_problem() -> None:
    for call in (lambda: law.kaplan_loss(0), lambda: law.training_compute(-1, 5), lambda: law.compute_optimal(math.inf)):
        with pytest.raises(ValueError, match="positive finite"):
            call()
    with pytest.raises(ValueError, match="n_layer and d_model"):
        law.non_embedding_parameters(0, 64)
