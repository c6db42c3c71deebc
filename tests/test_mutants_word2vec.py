"""Every property of ``properties/embeddings/word2vec.py`` catches a wrong noise distribution, a wrong
CBOW average, or a mis-statement of the documents' code and counts."""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch
import torch.nn.functional as F

from conftest import assert_caught, assert_judged_alone, run_row
from mutants import Mutant, OneOperation, declaring
from specformer.protocol import Capabilities
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

SOFTMAX_OPERATION = "word2vec.the_skipgram_probability_is_the_softmax_of_the_output_scores"
SOFTMAX_LARGE = "word2vec.the_skipgram_probability_stays_the_softmax_at_large_scores"
NS_OPERATION = "word2vec.the_negative_sampling_loss_is_001s_formula"
CBOW_CONTEXT = "word2vec.the_documents_cbow_context_comes_from_a_window"
CBOW_CORRECTED = "word2vec.the_context_of_brown_is_two_words_or_four"
SHIFTED_PMI = "word2vec.sgns_is_optimal_at_pmi_minus_log_k"
RAW_COOCCURRENCE = "word2vec.sgns_factorises_the_co_occurrence_matrix_as_written"
# the properties that need one operation where another property of the same claim needs two
PAIRS = "word2vec.the_skipgram_pairs_are_each_word_with_every_neighbour_within_the_window"
PAIRS_PER_POSITION = "word2vec.skipgram_pairs_each_position_with_up_to_2c_neighbours"
CBOW_EXAMPLES = "word2vec.cbow_makes_one_example_per_position"
SOFTMAX_FLOPS = "word2vec.the_implementations_full_softmax_costs_at_least_2_b_v_d_flops"


def _wrapping_pairs(tokens, window):
    """Wrong: offsets wrap around the ends of the text."""
    n = len(tokens)
    return [(tokens[t], tokens[(t + j) % n]) for t in range(n) for j in range(-window, window + 1) if j and n > 1]


def _one_sided_pairs(tokens, window):
    """Wrong: only the words after the centre are its context."""
    return [(tokens[t], tokens[t + j]) for t in range(len(tokens)) for j in range(1, window + 1) if t + j < len(tokens)]


def _cbow_with_centre(tokens, window):
    """Wrong: the centre word is left in its own context."""
    return [(tokens[max(0, t - window): t + window + 1], tokens[t]) for t in range(len(tokens))]


def _cbow_two_left_one_right(tokens, window):
    """Wrong for the protocol (an asymmetric window): ``window + 1`` words before the centre, ``window`` after."""
    return [(tokens[max(0, t - window - 1): t] + tokens[t + 1: t + window + 1], tokens[t]) for t in range(len(tokens))]


def _dynamic_window_pairs(tokens, window):
    """A dynamic window (word2vec's shrinking, here deterministic: window - t % window): fewer pairs."""
    pairs = []
    for t in range(len(tokens)):
        reach = window - t % window
        pairs += [(tokens[t], tokens[u]) for u in range(max(0, t - reach), min(len(tokens), t + reach + 1)) if u != t]
    return pairs


def _softmax(centres, in_table, out_table, tied=False, temperature=1.0):
    scores = in_table[centres] @ (in_table if tied else out_table).T / temperature  # (B, V)
    return torch.softmax(scores, dim=-1)


def _softmax_without_the_maximum(centres, in_table, out_table):
    """Wrong at large scores: ``exp(s) / sum exp(s)`` without subtracting the row's maximum overflows to NaN."""
    e = torch.exp(in_table[centres] @ out_table.T)  # (B, V)
    return e / e.sum(dim=-1, keepdim=True)


def _ns_loss(centres, contexts, negatives, in_table, out_table, one_table=False, sign=-1.0, mean=False):
    out = in_table if one_table else out_table
    h = in_table[centres]  # (B, d)
    positive = -F.logsigmoid((out[contexts] * h).sum(-1))
    noise = -F.logsigmoid(sign * (out[negatives] @ h[:, :, None])[:, :, 0])  # (B, k)
    return positive + (noise.mean(-1) if mean else noise.sum(-1))


def _ns_scoring_everything(centres, contexts, negatives, in_table, out_table):
    """Wrong for negative sampling's cost: scores the whole vocabulary, then picks the 1 + k scores it needs."""
    scores = in_table[centres] @ out_table.T  # (B, V)
    positive = -F.logsigmoid(scores.gather(1, contexts[:, None])[:, 0])
    return positive - F.logsigmoid(-scores.gather(1, negatives)).sum(-1)


def _ns_scoring_everything_elementwise(centres, contexts, negatives, in_table, out_table):
    """Wrong for the cost, invisible to a FLOP counter: every word scored by a broadcast product and a sum."""
    scores = (in_table[centres][:, None, :] * out_table[None, :, :]).sum(-1)  # (B, 1, d) * (1, V, d) -> (B, V)
    positive = -F.logsigmoid(scores.gather(1, contexts[:, None])[:, 0])
    return positive - F.logsigmoid(-scores.gather(1, negatives)).sum(-1)


def _ns_fused(centres, contexts, negatives, in_table, out_table):
    """Correct and fused differently: one einsum over the 1 + k output rows, one binary cross-entropy with logits."""
    rows = out_table[torch.cat([contexts[:, None], negatives], dim=1)]  # (B, 1 + k, d)
    scores = torch.einsum("bkd,bd->bk", rows, in_table[centres])  # (B, 1 + k)
    labels = torch.zeros_like(scores)
    labels[:, 0] = 1.0
    return F.binary_cross_entropy_with_logits(scores, labels, reduction="none").sum(-1)


def _ns_copying_the_tables(centres, contexts, negatives, in_table, out_table):
    """Correct: copies both tables once per call (an adapter converting them), then gathers only the rows it needs."""
    return _ns_loss(centres, contexts, negatives, in_table.clone(), out_table.clone())


def _ns_in_numpy(centres, contexts, negatives, in_table, out_table):
    """Correct, and invisible to the dispatcher: the loss computed in numpy."""
    import numpy as np

    v, v_out = in_table.numpy(), out_table.numpy()
    h = v[centres.numpy()]  # (B, d)
    positive = np.logaddexp(0.0, -(v_out[contexts.numpy()] * h).sum(-1))  # -log sigma(s) = log(1 + e^-s)
    noise = np.logaddexp(0.0, np.einsum("bkd,bd->bk", v_out[negatives.numpy()], h)).sum(-1)
    return torch.from_numpy(positive + noise)


NS_EVERYTHING = Mutant("negative-sampling-scores-the-vocabulary", negative_sampling_loss=_ns_scoring_everything)
NS_EVERYTHING_ELEMENTWISE = Mutant("negative-sampling-scores-the-vocabulary-elementwise",
                                   negative_sampling_loss=_ns_scoring_everything_elementwise)
NS_WORK = "word2vec.negative_samplings_work_per_pair_does_not_grow_with_the_vocabulary"
SOFTMAX_COST = "word2vec.the_implementations_softmax_grows_with_the_vocabulary_and_negative_sampling_does_not"
WRAPPING = Mutant("skipgram-pairs-wrap-around", skipgram_pairs=_wrapping_pairs)
ONE_SIDED = Mutant("skipgram-pairs-one-sided", skipgram_pairs=_one_sided_pairs)
DYNAMIC = Mutant("skipgram-dynamic-window", skipgram_pairs=_dynamic_window_pairs)
CBOW_CENTRE = Mutant("cbow-context-keeps-the-centre", cbow_examples=_cbow_with_centre)
CBOW_CENTRE.capabilities = Capabilities(conventions={"cbow_context": frozenset({"without_centre"})})  # says it drops it
CBOW_ASYMMETRIC = Mutant("cbow-context-two-left-one-right", cbow_examples=_cbow_two_left_one_right)
SOFTMAX_TIED = Mutant("skipgram-softmax-scores-against-the-input-table",
                      skipgram_softmax=lambda c, i, o: _softmax(c, i, o, tied=True))
SOFTMAX_HOT = Mutant("skipgram-softmax-at-temperature-2", skipgram_softmax=lambda c, i, o: _softmax(c, i, o, temperature=2.0))
SOFTMAX_UNSHIFTED = Mutant("skipgram-softmax-without-max-subtraction", skipgram_softmax=_softmax_without_the_maximum)
NS_ONE_TABLE = Mutant("negative-sampling-with-one-table", negative_sampling_loss=lambda c, p, n, i, o:
                      _ns_loss(c, p, n, i, o, one_table=True))
NS_SIGN = Mutant("negative-sampling-log-sigma-of-plus-the-noise-score", negative_sampling_loss=lambda c, p, n, i, o:
                 _ns_loss(c, p, n, i, o, sign=1.0))
NS_MEAN = Mutant("negative-sampling-averages-the-noise-terms", negative_sampling_loss=lambda c, p, n, i, o:
                 _ns_loss(c, p, n, i, o, mean=True))

def _ns_row_0s_noise(centres, contexts, negatives, in_table, out_table):
    """Wrong at a batch above 1: the first pair's noise words reused for every pair."""
    return _ns_loss(centres, contexts, negatives[:1].expand_as(negatives), in_table, out_table)


def _ns_mean_reduced(centres, contexts, negatives, in_table, out_table):
    """001's loss divided by k + 1: the mean of the 1 + k binary cross-entropies (correct when declared)."""
    scores = torch.cat([(out_table[contexts] * in_table[centres]).sum(-1)[:, None],  # (B, 1)
                        (out_table[negatives] @ in_table[centres][:, :, None])[:, :, 0]], dim=1)  # (B, 1 + k)
    labels = torch.zeros_like(scores)
    labels[:, 0] = 1.0
    return F.binary_cross_entropy_with_logits(scores, labels, reduction="none").mean(-1)


NS_ROW_0 = Mutant("negative-sampling-reuses-row-0s-noise-words", negative_sampling_loss=_ns_row_0s_noise)
NS_MEAN_UNDECLARED = Mutant("negative-sampling-mean-reduced-undeclared", negative_sampling_loss=_ns_mean_reduced)
NS_MEAN_DECLARED = declaring(Mutant("negative-sampling-mean-reduced-declared", negative_sampling_loss=_ns_mean_reduced),
                             negative_sampling_reduction="mean")
NS_SUM_DECLARED_MEAN = declaring(Mutant("negative-sampling-summed-declared-mean"), negative_sampling_reduction="mean")
NS_ONE_TABLE_MEAN = declaring(Mutant(
    "negative-sampling-one-table-mean-reduced", negative_sampling_loss=lambda c, p, n, i, o:
    _ns_mean_reduced(c, p, n, i, i)), negative_sampling_reduction="mean")

CASES = [
    (NS_OPERATION, NS_ROW_0), (NS_OPERATION, NS_MEAN_UNDECLARED), (NS_OPERATION, NS_SUM_DECLARED_MEAN),
    (NS_OPERATION, NS_ONE_TABLE_MEAN),
    (NOISE, UNIGRAM), (NOISE, UNNORMALISED),
    (OBJECTIVE, WRAPPING), (OBJECTIVE, ONE_SIDED), (OBJECTIVE, DYNAMIC), (OBJECTIVE, SOFTMAX_TIED),
    (OBJECTIVE, SOFTMAX_HOT),
    (EXAMPLES, WRAPPING), (EXAMPLES, ONE_SIDED), (EXAMPLES, DYNAMIC), (EXAMPLES, CBOW_CENTRE),
    (EXAMPLES, CBOW_ASYMMETRIC),
    (SOFTMAX_OPERATION, SOFTMAX_TIED), (SOFTMAX_OPERATION, SOFTMAX_HOT),
    (SOFTMAX_LARGE, SOFTMAX_TIED), (SOFTMAX_LARGE, SOFTMAX_UNSHIFTED),
    (NS_OPERATION, NS_ONE_TABLE), (NS_OPERATION, NS_SIGN), (NS_OPERATION, NS_MEAN),
    (SHIFTED_PMI, NS_SIGN),
    (SOFTMAX_COST, NS_EVERYTHING), (NS_OPERATION, NS_ONE_TABLE),
    (NS_WORK, NS_EVERYTHING), (NS_WORK, NS_EVERYTHING_ELEMENTWISE),
    (CBOW_CORRECTED, CBOW_CENTRE), (CBOW_CORRECTED, CBOW_ASYMMETRIC),
    (DOWN_WEIGHTS, UNIGRAM),
    (CBOW_MEAN, SUM), (CBOW_MEAN, POSITION_WEIGHTED), (CBOW_MEAN, DISTINCT_MEAN),
    (CBOW_ORDER, POSITION_WEIGHTED),
    (PAIRS, WRAPPING), (PAIRS, ONE_SIDED), (PAIRS, DYNAMIC),
    (PAIRS_PER_POSITION, WRAPPING), (PAIRS_PER_POSITION, ONE_SIDED), (PAIRS_PER_POSITION, DYNAMIC),
    (CBOW_EXAMPLES, CBOW_CENTRE), (CBOW_EXAMPLES, CBOW_ASYMMETRIC),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_reference_passes(dtype: str) -> None:
    from specformer.adapters.reference import implementation

    for qualname in (NOISE, DOWN_WEIGHTS, CBOW_MEAN, CBOW_ORDER, OBJECTIVE, EXAMPLES, SOFTMAX_OPERATION, NS_OPERATION,
                     CBOW_CORRECTED, PAIRS, PAIRS_PER_POSITION, CBOW_EXAMPLES, SOFTMAX_LARGE):
        row = run_row(qualname, implementation, dtype)
        assert row.outcome == "pass", (qualname, row.message)


def test_a_mean_reduced_negative_sampling_loss_declared_ends_every_row_as_the_reference_does(properties) -> None:
    """001's loss divided by k + 1, declared as ``negative_sampling_reduction = "mean"``, is a correct loss: every
    word2vec property that calls negative_sampling_loss ends for it as for the reference."""
    from specformer.adapters.reference import implementation

    mine = sorted(q for q, p in properties.items() if p.module == "word2vec" and "negative_sampling_loss" in p.needs)
    assert {NS_OPERATION, SHIFTED_PMI, RAW_COOCCURRENCE, SOFTMAX_COST} <= set(mine), mine
    for qualname in mine:
        expected = run_row(qualname, implementation).outcome
        row = run_row(qualname, NS_MEAN_DECLARED)
        assert row.outcome == expected and expected in ("pass", "refuted"), (qualname, row.outcome, row.message)


def test_scoring_the_vocabulary_elementwise_escapes_the_flop_count_but_not_the_created_elements() -> None:
    """The FLOP counter sees no matrix product in a broadcast-and-sum scoring of every word, so the FLOP property
    passes it; the elements it creates grow with V per pair, and the work property fails it."""
    assert run_row(SOFTMAX_COST, NS_EVERYTHING_ELEMENTWISE, "float32").outcome == "pass"
    row = run_row(NS_WORK, NS_EVERYTHING_ELEMENTWISE, "float32")
    assert row.outcome == "fail" and "grows with the vocabulary" in row.message, row


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("loss", [None, _ns_fused, _ns_copying_the_tables, _ns_in_numpy],
                         ids=["reference", "fused", "copies-the-tables-per-call", "numpy"])
def test_correct_negative_sampling_losses_pass_the_work_and_the_formula(loss, dtype: str) -> None:
    """The reference, a loss fused differently, one that copies the tables once per call, and one the dispatcher
    cannot see all pass the cost by created elements, and the formula."""
    impl = Mutant(f"negative-sampling-{getattr(loss, '__name__', 'reference')}",
                  **({} if loss is None else {"negative_sampling_loss": loss}))
    for qualname in (NS_WORK, NS_OPERATION):
        row = run_row(qualname, impl, dtype)
        assert row.outcome == "pass", (qualname, row.message)


def test_an_asymmetric_cbow_window_leaves_the_documents_example_nothing_to_refute() -> None:
    """With two words before the centre and one after, window 1 gives 002's [the, quick, fox]."""
    from specformer.adapters.reference import implementation

    assert run_row(CBOW_CONTEXT, implementation).outcome == "refuted"
    always = Mutant("cbow-context-two-left-one-right-whatever-the-window", cbow_examples=lambda tokens, window:
                    _cbow_two_left_one_right(tokens, 1))
    row = run_row(CBOW_CONTEXT, always)
    assert row.outcome == "fail", row


def test_an_objective_that_factorised_log_counts_would_leave_nothing_to_refute(monkeypatch) -> None:
    from specformer.adapters.reference import implementation

    assert run_row(RAW_COOCCURRENCE, implementation).outcome == "refuted"
    original = word2vec.expected_sgns_loss

    def log_counts(ctx, counts, k, w, c, centre):
        grid, _, pmi = original(ctx, counts, k, w, c, centre)
        return grid, (grid - math.log(float(counts[w, c]))).square(), pmi

    monkeypatch.setattr(word2vec, "expected_sgns_loss", log_counts)
    row = run_row(RAW_COOCCURRENCE, implementation)
    assert row.outcome == "fail", row


def test_a_dynamic_window_is_a_different_convention_that_the_count_property_catches() -> None:
    """word2vec's shrinking window is legitimate, but the protocol asks for a fixed one: declared, not silent."""
    row = assert_caught(EXAMPLES, DYNAMIC)
    assert "skip-gram pairs" in row.message, row.message


def test_a_softmax_without_max_subtraction_is_caught_in_float32_at_ci() -> None:
    """At the default profile the large scores reach past float32's overflow of ``exp``: NaN, named."""
    row = assert_caught(SOFTMAX_LARGE, SOFTMAX_UNSHIFTED, "float32")
    assert "NaN" in row.message, row.message
    row = run_row(SOFTMAX_LARGE, SOFTMAX_UNSHIFTED, "float64", profile="ci")
    assert row.outcome == "fail" and "NaN" in row.message, (row.outcome, row.message)


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
    covered = {q for q, _ in CASES} | {OBJECTIVE, SOFTMAX, COST, NS, NS_AS_WRITTEN, EXAMPLES, CBOW_CONTEXT,
                                       RAW_COOCCURRENCE, "word2vec.gensims_word2vec_takes_001s_arguments_as_the_code_says",
                                       "word2vec.words_sharing_contexts_end_up_closest",
                                       SOFTMAX_FLOPS,  # caught in test_a_softmax_alone_gets_a_judged_cost_row
                                       CAT, CAT_AS_WRITTEN}  # tested at the end
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


def test_a_cbow_that_declares_it_keeps_the_centre_passes_the_count_and_is_spared_the_documents_example() -> None:
    """Keeping the centre word in CBOW's context is a convention: declared, the examples property accepts it,
    and the properties about 002's example (which leaves it out) are not applicable at once."""
    keeps = Mutant("cbow-context-keeps-the-centre-declared", cbow_examples=_cbow_with_centre)
    keeps.capabilities = Capabilities(conventions={"cbow_context": frozenset({"with_centre"})})
    assert run_row(EXAMPLES, keeps).outcome == "pass"
    for qualname in (CBOW_CORRECTED, CBOW_CONTEXT):
        row = run_row(qualname, keeps)
        assert row.outcome == "not-applicable" and "cbow_context" in row.message, row


def test_a_dynamic_window_declared_is_not_applicable_to_the_counting_properties() -> None:
    dynamic = Mutant("skipgram-dynamic-window-declared", skipgram_pairs=_dynamic_window_pairs)
    dynamic.capabilities = Capabilities(conventions={"skipgram_window": frozenset({"dynamic"})})
    for qualname in (EXAMPLES, OBJECTIVE, PAIRS, PAIRS_PER_POSITION):
        row = run_row(qualname, dynamic)
        assert row.outcome == "not-applicable" and "skipgram_window" in row.message, row


GENSIM_API = "word2vec.gensims_word2vec_takes_001s_arguments_as_the_code_says"


@pytest.mark.skipif(importlib.util.find_spec("gensim") is None, reason="gensim is not installed")
def test_a_ranking_that_keeps_the_query_words_is_caught(monkeypatch) -> None:
    assert run_row(GENSIM_API, None).outcome == "pass"

    def keeps_the_query(vectors, positive, negative, topn):
        query = sum(vectors.get_vector(w, norm=True) for w in positive) - sum(vectors.get_vector(w, norm=True)
                                                                            for w in negative)
        return [(w, float(c)) for w, c in vectors.similar_by_vector(query, topn=topn)]

    monkeypatch.setattr(word2vec, "most_similar", keeps_the_query)
    row = run_row(GENSIM_API, None)
    assert row.outcome == "fail" and "most_similar" in row.message, row


SIMILAR_CONTEXTS = "word2vec.words_sharing_contexts_end_up_closest"


@pytest.mark.skipif(importlib.util.find_spec("gensim") is None, reason="gensim is not installed")
def test_words_with_contexts_of_their_own_are_caught(monkeypatch) -> None:
    """If queen and pear swap contexts, king's nearest is pear: the property must fail."""
    assert run_row(SIMILAR_CONTEXTS, None).outcome == "pass"
    original = word2vec.shared_context_corpus

    def swapped(seed):
        return [[{"queen": "pear", "pear": "queen"}.get(w, w) for w in s] for s in original(seed)]

    monkeypatch.setattr(word2vec, "shared_context_corpus", swapped)
    row = run_row(SIMILAR_CONTEXTS, None)
    assert row.outcome == "fail", row


# -- a library with one operation gets judged rows -------------------------------------------------


def _reference_pairs(tokens: list[int], window: int) -> list[tuple[int, int]]:
    from specformer.reference.embeddings.word2vec import skipgram_pairs

    return skipgram_pairs(tokens, window)


def _reference_cbow(tokens: list[int], window: int) -> list[tuple[list[int], int]]:
    from specformer.reference.embeddings.word2vec import cbow_examples

    return cbow_examples(tokens, window)


def _reference_softmax(centres: torch.Tensor, in_table: torch.Tensor, out_table: torch.Tensor) -> torch.Tensor:
    from specformer.reference.embeddings.word2vec import skipgram_probabilities

    return skipgram_probabilities(centres, in_table, out_table)


def _shortlist_softmax(centres: torch.Tensor, in_table: torch.Tensor, out_table: torch.Tensor) -> torch.Tensor:
    """Wrong: scores only a shortlist of the first 64 words, the rest get probability 0 (a cost that stops
    growing with the vocabulary, and a wrong distribution)."""
    short = in_table[centres] @ out_table[:64].T  # (B, min(V, 64))
    p = torch.zeros(len(centres), out_table.shape[0], dtype=in_table.dtype)
    p[:, :64] = torch.softmax(short, dim=-1)
    return p


PAIRS_ONLY = OneOperation("skipgram-pairs-only", skipgram_pairs=_reference_pairs)
WRONG_PAIRS_ONLY = OneOperation("one-sided-skipgram-pairs-only", skipgram_pairs=_one_sided_pairs)
CBOW_ONLY = OneOperation("cbow-examples-only", cbow_examples=_reference_cbow)
WRONG_CBOW_ONLY = OneOperation("cbow-keeping-the-centre-only", cbow_examples=_cbow_with_centre)
SOFTMAX_ONLY = OneOperation("skipgram-softmax-only", skipgram_softmax=_reference_softmax)
SHORTLIST_ONLY = OneOperation("shortlist-softmax-only", skipgram_softmax=_shortlist_softmax)


@pytest.mark.parametrize(("right", "wrong", "alone", "together"), [
    (PAIRS_ONLY, WRONG_PAIRS_ONLY, (PAIRS, PAIRS_PER_POSITION), (OBJECTIVE, EXAMPLES)),
    (CBOW_ONLY, WRONG_CBOW_ONLY, (CBOW_EXAMPLES,), (EXAMPLES,)),
], ids=["skipgram_pairs", "cbow_examples"])
def test_one_operation_gets_judged_rows(right: OneOperation, wrong: OneOperation, alone: tuple[str, ...],
                                        together: tuple[str, ...]) -> None:
    """An implementation of one operation: the properties that need two leave it not applicable, the ones that
    need only its operation pass it when it is right and fail it when it is wrong."""
    assert_judged_alone(right, wrong, alone, together)


def test_a_softmax_alone_gets_a_judged_cost_row() -> None:
    """The FLOP property of the two operations leaves a softmax-only library not applicable; the softmax's own
    cost property passes the reference's softmax and fails a shortlist that stops growing with the vocabulary."""
    from specformer.adapters.reference import implementation

    assert run_row(SOFTMAX_COST, SOFTMAX_ONLY, "float32").outcome == "not-applicable"
    row = run_row(SOFTMAX_FLOPS, SOFTMAX_ONLY, "float32")
    assert row.outcome == "pass" and row.examples_checked > 0, row
    row = run_row(SOFTMAX_FLOPS, SHORTLIST_ONLY, "float32", profile="mutants")
    assert row.outcome == "fail" and "below 2 B V d" in row.message, row
    assert run_row(SOFTMAX_FLOPS, implementation, "float32").outcome == "pass"


def _pairs_by_offset(tokens: list[int], window: int) -> list[tuple[int, int]]:
    """Correct: the same pairs generated offset by offset (all ``t`` for ``j = -c``, then ``j = -c + 1``, ...)."""
    return [(tokens[t], tokens[t + j]) for j in range(-window, window + 1) if j != 0
            for t in range(len(tokens)) if 0 <= t + j < len(tokens)]


def _cbow_nearest_first(tokens: list[int], window: int) -> list[tuple[list[int], int]]:
    """Correct: each context listed nearest word first, and the examples from the end of the text."""
    examples = []
    for t in reversed(range(len(tokens)) if len(tokens) > 1 else range(0)):
        near = sorted((i for i in range(max(0, t - window), min(len(tokens), t + window + 1)) if i != t),
                      key=lambda i: (abs(i - t), i))
        examples.append(([tokens[i] for i in near], tokens[t]))
    return examples


def _cbow_one_word_example(tokens: list[int], window: int) -> list[tuple[list[int], int]]:
    """Wrong: a text of one word gives an example with an empty context."""
    return [([], tokens[0])] if len(tokens) == 1 else _reference_cbow(tokens, window)


def _pairs_one_word_self(tokens: list[int], window: int) -> list[tuple[int, int]]:
    """Wrong: a text of one word pairs the word with itself."""
    return [(tokens[0], tokens[0])] if len(tokens) == 1 else _reference_pairs(tokens, window)


@pytest.mark.parametrize(("qualname", "right"), [
    (PAIRS, OneOperation("skipgram-pairs-by-offset", skipgram_pairs=_pairs_by_offset)),
    (PAIRS_PER_POSITION, OneOperation("skipgram-pairs-by-offset", skipgram_pairs=_pairs_by_offset)),
    (CBOW_EXAMPLES, OneOperation("cbow-nearest-first", cbow_examples=_cbow_nearest_first)),
], ids=["pairs", "pairs-per-position", "cbow"])
def test_examples_in_another_order_pass(qualname: str, right: OneOperation) -> None:
    """The protocol leaves the order of the examples, and of a context's words, to the implementation."""
    row = run_row(qualname, right)
    assert row.outcome == "pass" and row.examples_checked > 0, (row.outcome, row.message)


@pytest.mark.parametrize(("qualname", "wrong"), [
    (CBOW_EXAMPLES, OneOperation("cbow-one-word-example", cbow_examples=_cbow_one_word_example)),
    (PAIRS_PER_POSITION, OneOperation("skipgram-one-word-self-pair", skipgram_pairs=_pairs_one_word_self)),
], ids=["cbow", "pairs"])
def test_a_text_of_one_word_giving_an_example_is_caught(qualname: str, wrong: OneOperation) -> None:
    row = run_row(qualname, wrong)
    assert row.outcome == "fail" and "one word" in row.message, (row.outcome, row.message)


# --- word2vec.cat-examples -------------------------------------------------------------------------

CAT = "word2vec.the_cat_examples_need_window_2_for_skipgram_and_4_for_cbow"
CAT_AS_WRITTEN = "word2vec.one_window_gives_both_cat_examples_as_written"


def _one_sided_pairs(ids: list[int], window: int) -> list[tuple[int, int]]:
    """Wrong: only the words to the right of the centre."""
    return [(ids[t], ids[t + j]) for t in range(len(ids)) for j in range(1, window + 1) if t + j < len(ids)]


def _one_sided_cbow(ids: list[int], window: int) -> list[tuple[list[int], int]]:
    """Wrong: the context is the words to the left of the centre only."""
    return [(list(ids[max(0, t - window):t]), ids[t]) for t in range(1, len(ids))]


@pytest.mark.parametrize("mutant", [Mutant("skipgram-one-sided", skipgram_pairs=_one_sided_pairs),
                                    Mutant("cbow-one-sided", cbow_examples=_one_sided_cbow)],
                         ids=lambda m: m.name)
def test_the_cat_examples_catch_a_one_sided_window(mutant) -> None:
    assert_caught(CAT, mutant)


def test_the_cat_examples_pass_the_reference_and_are_refuted() -> None:
    from specformer.adapters.reference import implementation

    assert run_row(CAT, implementation).outcome == "pass"
    row = run_row(CAT_AS_WRITTEN, implementation)
    assert row.outcome == "refuted" and "not both" in row.message, row
