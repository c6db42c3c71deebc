"""Every property of ``properties/embeddings/word2vec.py`` catches a wrong noise distribution, a wrong
CBOW average, or a mis-statement of the documents' code and counts."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.embeddings import word2vec

UNIGRAM = Mutant("noise-exponent-1", noise_distribution=lambda counts, exponent=0.75: counts / counts.sum())
UNNORMALISED = Mutant("noise-normalised-by-its-largest-weight", noise_distribution=lambda counts, exponent=0.75:
                      counts.pow(exponent) / counts.pow(exponent).max())
SUM = Mutant("cbow-sums", cbow_hidden=lambda ids, table: table[ids].sum(dim=1))


def _position_weighted(ids, table):
    weights = torch.linspace(1.0, 2.0, ids.shape[1], dtype=table.dtype)  # nearer the end, heavier
    return (table[ids] * weights[None, :, None]).sum(dim=1) / weights.sum()


def _distinct_mean(ids, table):
    return torch.stack([table[row.unique()].mean(dim=0) for row in ids])


POSITION_WEIGHTED = Mutant("cbow-weighs-by-position", cbow_hidden=_position_weighted)
DISTINCT_MEAN = Mutant("cbow-averages-distinct-words", cbow_hidden=_distinct_mean)

NOISE = "word2vec.the_noise_distribution_is_the_count_to_the_three_quarters_normalised"
DOWN_WEIGHTS = "word2vec.the_three_quarters_power_moves_probability_from_frequent_to_rare_words"
CBOW_MEAN = "word2vec.cbows_hidden_vector_is_the_mean_of_the_context_rows"
CBOW_ORDER = "word2vec.cbows_hidden_vector_ignores_the_order_of_the_context"
OBJECTIVE = "word2vec.the_skipgram_objective_averages_log_p_over_the_window_pairs"
SOFTMAX = "word2vec.the_codes_cross_entropy_is_minus_log_of_the_softmax_with_a_bias"
COST = "word2vec.the_softmax_costs_2_v_d_flops_per_word_and_negative_sampling_2_k_plus_1_d"
NS = "word2vec.the_codes_loss_is_001s_loss_with_one_table_for_both_roles"
NS_AS_WRITTEN = "word2vec.the_codes_loss_is_001s_loss_as_written"
EXAMPLES = "word2vec.skipgram_makes_about_2c_examples_per_word_and_cbow_one"

CASES = [
    (NOISE, UNIGRAM), (NOISE, UNNORMALISED),
    (DOWN_WEIGHTS, UNIGRAM),
    (CBOW_MEAN, SUM), (CBOW_MEAN, POSITION_WEIGHTED), (CBOW_MEAN, DISTINCT_MEAN),
    (CBOW_ORDER, POSITION_WEIGHTED),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_reference_passes(dtype: str) -> None:
    from specformer.adapters.reference import implementation

    for qualname in (NOISE, DOWN_WEIGHTS, CBOW_MEAN, CBOW_ORDER):
        row = run_row(qualname, implementation, dtype)
        assert row.outcome == "pass", (qualname, row.message)


def _wrapping_pairs(tokens, window):
    """Wrong: offsets wrap around the ends of the text."""
    n = len(tokens)
    return [(tokens[t], tokens[(t + j) % n]) for t in range(n) for j in range(-window, window + 1) if j and n > 1]


def test_pairs_that_wrap_around_the_text_are_caught(monkeypatch) -> None:
    assert run_row(OBJECTIVE, None).outcome == "pass"
    monkeypatch.setattr(word2vec, "pairs", _wrapping_pairs)
    row = run_row(OBJECTIVE, None)
    assert row.outcome == "fail", row


def test_a_one_sided_window_is_caught(monkeypatch) -> None:
    assert run_row(EXAMPLES, None).outcome == "pass"
    monkeypatch.setattr(word2vec, "pairs", lambda tokens, window: [
        (tokens[t], tokens[t + j]) for t in range(len(tokens)) for j in range(1, window + 1) if t + j < len(tokens)])
    row = run_row(EXAMPLES, None)
    assert row.outcome == "fail" and "skip-gram pairs" in row.message, row


def test_a_loss_without_the_log_softmax_is_caught(monkeypatch) -> None:
    assert run_row(SOFTMAX, None).outcome == "pass"
    monkeypatch.setattr(word2vec, "code_loss", lambda model, centre, context: F.nll_loss(model(centre), context,
                                                                                         reduction="none"))
    row = run_row(SOFTMAX, None)
    assert row.outcome == "fail", row


def _scores_everything(vocab: int, dim: int, batch: int, k: int) -> int:
    """Wrong: "negative sampling" that scores the whole vocabulary and then picks 1 + k scores."""
    from specformer.flops import count_flops

    out_table = torch.zeros(vocab, dim, dtype=torch.float64, device="meta")
    with count_flops() as flops:
        scores = torch.zeros(batch, dim, dtype=torch.float64, device="meta") @ out_table.T  # (B, V)
        scores[:, : 1 + k]
    return flops[0]


def test_negative_sampling_that_scores_the_vocabulary_is_caught(monkeypatch) -> None:
    assert run_row(COST, None).outcome == "pass"
    monkeypatch.setattr(word2vec, "negative_sampling_flops", _scores_everything)
    row = run_row(COST, None)
    assert row.outcome == "fail" and "2 B (k+1) d" in row.message, row


def test_a_sign_error_in_the_negative_term_is_caught(monkeypatch) -> None:
    assert run_row(NS, None).outcome == "pass"
    code = word2vec.code_002

    def wrong(center, positive, negatives, table):
        right = code(center, positive, negatives, table)
        scores = table[torch.tensor(negatives)] @ table[center]
        return right + F.logsigmoid(-scores).sum() - F.logsigmoid(scores).sum()  # log sigma(+s) for the negatives

    monkeypatch.setattr(word2vec, "code_002", wrong)
    row = run_row(NS, None)
    assert row.outcome == "fail" and "002's code" in row.message, row


def test_a_code_with_its_own_output_table_leaves_nothing_to_refute(monkeypatch) -> None:
    assert run_row(NS_AS_WRITTEN, None).outcome == "refuted"
    monkeypatch.setattr(word2vec, "run_002", lambda c, p, n, v, v_out: word2vec.loss_001(c, p, n, v, v_out))
    row = run_row(NS_AS_WRITTEN, None)
    assert row.outcome == "fail", row


def test_every_word2vec_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {OBJECTIVE, SOFTMAX, COST, NS, NS_AS_WRITTEN, EXAMPLES}
    mine = {q for q, p in properties.items() if p.module == "word2vec"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_input() -> None:
    from specformer.reference.embeddings.word2vec import cbow_context_mean, noise_distribution, skipgram_pairs

    with pytest.raises(ValueError, match="finite and non-negative"):
        noise_distribution(torch.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="every count is zero"):
        noise_distribution(torch.zeros(3))
    with pytest.raises(ValueError, match="non-empty 1-D"):
        noise_distribution(torch.ones(2, 2))
    with pytest.raises(ValueError, match="exponent must be non-negative"):
        noise_distribution(torch.ones(2), -0.5)
    with pytest.raises(ValueError, match=r"context_ids must be \(batch, context_size\)"):
        cbow_context_mean(torch.tensor([0, 1]), torch.ones(2, 3))
    with pytest.raises(ValueError, match="window must be a positive integer"):
        skipgram_pairs([1, 2, 3], 0)
