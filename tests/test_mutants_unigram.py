"""Every property of ``properties/tokenization/unigram.py`` catches at least one wrong Unigram model.

Segmentation mutants replace ``unigram_segment``, EM and pruning mutants ``unigram_em_step``
and ``unigram_prune``. The sampler property checks the reference's own sampler
(``needs=()``): there the wrong versions are put in place of it with monkeypatch.
"""

from __future__ import annotations

import importlib.util
import math
import random

import pytest

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.tokenization import unigram as props
from specformer.reference.tokenization import unigram as ref
from test_reference_tokenization_subword import implementation as REFERENCE

SEGMENT = "unigram.the_segmentation_has_the_largest_total_log_probability"
SAMPLER = "unigram.sampled_segmentations_follow_the_models_probabilities"
RANDOM_AS_WRITTEN = "unigram.segmenting_a_word_again_gives_another_segmentation_as_written"
EM = "unigram.an_em_step_is_expected_counts_renormalised_and_never_lowers_the_likelihood"
PRUNE_STEP = "unigram.a_pruning_step_drops_the_pieces_of_least_loss_and_renormalises_the_rest"
PRUNING = "unigram.training_prunes_the_vocabulary_down_to_its_target"
XLNET = "unigram.xlnet_tokenizes_with_a_sentencepiece_unigram_model"


def _longest_prefix(word, pieces):
    """Wrong: the longest piece that starts the rest of the word, repeatedly (what WordPiece does)."""
    out, start = [], 0
    while start < len(word):
        end = max(e for e in range(start + 1, len(word) + 1) if word[start:e] in pieces)
        out.append(word[start:end])
        start = end
    return out


def _by(key):
    """Wrong: the segmentation that minimises ``key`` (by enumeration)."""
    return lambda word, pieces: list(min(ref.segmentations(word, pieces), key=lambda s: key(s, pieces)))


GREEDY = Mutant("longest-prefix-first", unigram_segment=_longest_prefix)
FEWEST = Mutant("fewest-pieces", unigram_segment=_by(lambda s, p: (len(s), -ref.score(s, p))))
FIRST_FOUND = Mutant("first-segmentation-found", unigram_segment=lambda w, p: list(next(ref.segmentations(w, p))))
SUMS_PROBABILITIES = Mutant("sums-probabilities", unigram_segment=_by(lambda s, p: -math.fsum(math.exp(p[x]) for x in s)))

CASES = [(SEGMENT, GREEDY), (SEGMENT, FEWEST), (SEGMENT, FIRST_FOUND), (SEGMENT, SUMS_PROBABILITIES)]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


def test_the_reference_is_the_most_probable_and_deterministic() -> None:
    assert run_row(SEGMENT, REFERENCE).outcome == "pass"
    assert run_row(RANDOM_AS_WRITTEN, REFERENCE).outcome == "refuted"


def test_an_implementation_that_samples_leaves_nothing_to_refute() -> None:
    rng = random.Random(0)
    sampling = Mutant("samples-segmentations", unigram_segment=lambda word, pieces: ref.sample(word, pieces, rng))
    row = run_row(RANDOM_AS_WRITTEN, sampling, profile="mutants")
    assert row.outcome == "fail" and row.message.startswith("no counterexample"), row


@pytest.mark.parametrize("wrong", ["viterbi", "uniform"])
def test_a_sampler_that_ignores_the_probabilities_is_caught(monkeypatch, wrong: str) -> None:
    assert run_row(SAMPLER, None).outcome == "pass"
    sample = ref.sample
    if wrong == "viterbi":
        monkeypatch.setattr(ref, "sample", lambda word, pieces, rng, alpha=1.0: ref.viterbi(word, pieces))
    else:
        monkeypatch.setattr(ref, "sample", lambda word, pieces, rng, alpha=1.0: sample(word, pieces, rng, 0.0))
    row = run_row(SAMPLER, None, profile="mutants")
    assert row.outcome == "fail" and "drawn with frequency" in row.message, row


def test_the_sampling_bound() -> None:
    assert 0.049 < props.sampling_tolerance() < 0.050
    assert props.sampling_tolerance(16_000) == pytest.approx(props.sampling_tolerance() / 2)


EM_STEP = ref.em_step
#: The whole reference (its Unigram training steps included).
FULL = Mutant("reference")


def _normalised(table):
    top = max(table.values())
    norm = top + math.log(math.fsum(math.exp(v - top) for v in table.values()))
    return {x: v - norm for x, v in table.items()}


def _inverse_m_step(words, pieces):
    """Wrong: probabilities proportional to the inverse of the expected counts."""
    return _normalised({x: -v for x, v in EM_STEP(words, pieces).items()})


def _hard_em(words, pieces):
    """Wrong (Viterbi training, not EM): counts of the pieces of the best segmentation only."""
    counts = {x: 1e-300 for x in pieces}
    for word, count in words.items():
        for x in ref.viterbi(word, pieces):
            counts[x] += count
    return _normalised({x: math.log(c) for x, c in counts.items()})


def _unnormalised(words, pieces):
    """Wrong: expected counts over the words, not divided by their total."""
    fitted = EM_STEP(words, pieces)
    return {x: min(v + 0.5, 0.0) for x, v in fitted.items()}


def _drops_unused(words, pieces):
    """Wrong: an EM step that removes the longer pieces left with under 1% of the probability (pruning's job)."""
    fitted = EM_STEP(words, pieces)
    return _normalised({x: v for x, v in fitted.items() if v > math.log(0.01) or len(x) == 1})


def _pruner(rule):
    """A wrong pruning step: ``largest-loss`` drops the pieces of largest loss, ``letters`` may drop single
    characters, ``unnormalised`` keeps the old probabilities, ``one-more`` drops one piece too many,
    ``nothing`` drops nothing."""

    def unigram_prune(words, pieces, size):
        if rule == "nothing":
            return dict(pieces)
        losses = {**ref.pruning_losses(words, pieces), **({x: -1.0 for x in pieces if len(x) == 1}
                                                           if rule == "letters" else {})}
        removable = sorted(x for x in pieces if len(x) > 1 or rule == "letters")
        drop = min(max(0, len(pieces) - size) + (rule == "one-more"), len(removable))
        order = sorted(removable, key=lambda x: (-losses[x] if rule == "largest-loss" else losses[x], x))
        kept = {x: v for x, v in pieces.items() if x not in set(order[:drop])}
        return kept if rule == "unnormalised" else _normalised(kept)

    return unigram_prune


def _random_tie_viterbi(word, pieces):
    """Correct: a most probable segmentation, ties broken at random."""
    scored = [(ref.score(s, pieces), s) for s in ref.segmentations(word, pieces)]
    top = max(score for score, _ in scored)
    return list(random.choice([s for score, s in scored if abs(score - top) <= 1e-12 * (1 + abs(top))]))


EM_CASES = [Mutant(name, unigram_em_step=fn) for name, fn in [
    ("m-step-against-the-counts", _inverse_m_step), ("hard-em-viterbi-counts", _hard_em),
    ("em-unnormalised", _unnormalised), ("em-drops-unused-pieces", _drops_unused)]]
PRUNE_CASES = [Mutant(f"prune-{rule}", unigram_prune=_pruner(rule))
               for rule in ("largest-loss", "letters", "unnormalised", "one-more", "nothing")]


@pytest.mark.parametrize("mutant", EM_CASES, ids=lambda m: m.name)
def test_a_wrong_em_step_is_caught(mutant: Mutant) -> None:
    assert run_row(EM, FULL).outcome == "pass"
    row = assert_caught(EM, mutant)
    assert row.message, row


@pytest.mark.parametrize("mutant", PRUNE_CASES, ids=lambda m: m.name)
def test_a_wrong_pruning_step_is_caught(mutant: Mutant) -> None:
    assert run_row(PRUNE_STEP, FULL).outcome == "pass"
    row = assert_caught(PRUNE_STEP, mutant)
    assert row.message, row


@pytest.mark.parametrize("mutant", [EM_CASES[0], EM_CASES[2], PRUNE_CASES[1], PRUNE_CASES[4]],
                         ids=lambda m: m.name)
def test_training_with_a_wrong_step_is_caught(mutant: Mutant) -> None:
    assert run_row(PRUNING, FULL).outcome == "pass"
    row = assert_caught(PRUNING, mutant)
    assert row.message, row


def _em_in_probability_space(words, pieces):
    """Wrong: one EM step in plain probabilities (forward-backward without scaling or logs, no floor); a piece whose
    expected count underflows to 0 gets ``log 0 = -inf``, as ``numpy.log`` gives."""
    p = {x: math.exp(v) for x, v in pieces.items()}
    longest = max(map(len, pieces))
    counts = dict.fromkeys(pieces, 0.0)
    for word, count in words.items():
        n = len(word)
        spans = [(j, i) for j in range(n) for i in range(j + 1, min(n, j + longest) + 1) if word[j:i] in p]
        forward, backward = [1.0] + [0.0] * n, [0.0] * n + [1.0]
        for j, i in sorted(spans, key=lambda span: span[1]):
            forward[i] += forward[j] * p[word[j:i]]
        for j, i in sorted(spans, reverse=True):
            backward[j] += p[word[j:i]] * backward[i]
        for j, i in spans:
            counts[word[j:i]] += count * forward[j] * p[word[j:i]] * backward[i] / forward[n]
    total = math.fsum(counts.values())
    return {x: math.log(c / total) if c > 0 else -math.inf for x, c in counts.items()}


def _prune_keeping_zeros(words, pieces, size):
    """The reference's pruning step on a table whose zero probabilities stay zero (rescaled, ``-inf`` is ``-inf``)."""
    zero = {x for x, v in pieces.items() if v == -math.inf}
    pruned = ref.prune(words, {x: -1000.0 if x in zero else v for x, v in pieces.items()}, size)
    return {x: -math.inf if x in zero else v for x, v in pruned.items()}


#: Wrong: EM in probability space. One step from the properties' tables is right to 1e-9 (nothing underflows), but
#: in training the letters of a word that a longer piece covers underflow to probability 0, and once pruning removes
#: that piece the word has probability 0: training ends with a model that cannot segment its own corpus.
PROBABILITY_SPACE = Mutant("em-in-probability-space", unigram_em_step=_em_in_probability_space,
                           unigram_prune=_prune_keeping_zeros)
#: Wrong: every log-probability ``log 0``.
ALL_ZERO = Mutant("em-gives-every-piece-probability-0", unigram_em_step=lambda words, pieces: dict.fromkeys(
    pieces, -math.inf))
#: Wrong: pruning gives the kept pieces probability 0.
PRUNE_TO_ZERO = Mutant("prune-zeroes-the-kept-pieces", unigram_prune=lambda words, pieces, size: dict.fromkeys(
    ref.prune(words, pieces, size), -math.inf))


def test_em_in_probability_space_fails_training_with_a_message_not_an_error() -> None:
    """Its zero probabilities reach the log-likelihood computed here, which cannot segment a word with them: the
    property checks the table first and fails the implementation, naming the word and the pieces."""
    words = {"aaab": 1}
    pieces = ref.seed_pieces(words, 4, 40)
    for _ in range(40):
        pieces = _em_in_probability_space(words, pieces)
    assert pieces["a"] == pieces["b"] == -math.inf and pieces["aaab"] == 0.0
    assert run_row(EM, PROBABILITY_SPACE).outcome == "pass"  # one step: nothing underflows
    row = run_row(PRUNING, PROBABILITY_SPACE)
    assert row.outcome == "fail" and "has probability 0" in row.message and "log-probability -inf" in row.message, row


@pytest.mark.parametrize(("qualname", "mutant", "message"), [
    (EM, ALL_ZERO, "sum to 0.0"), (PRUNING, ALL_ZERO, "has probability 0"),
    (PRUNE_STEP, PRUNE_TO_ZERO, "probability 0 (log-probability -inf)"), (PRUNING, PRUNE_TO_ZERO, "has probability 0"),
], ids=["em-all-zero", "training-em-all-zero", "prune-to-zero", "training-prune-to-zero"])
def test_a_table_of_zero_probabilities_fails_with_a_message(qualname: str, mutant: Mutant, message: str) -> None:
    row = run_row(qualname, mutant, profile="mutants")
    assert row.outcome == "fail" and message in row.message, row


def test_a_viterbi_with_random_ties_is_correct_and_refutes_alike() -> None:
    viterbi = Mutant("viterbi-random-ties", unigram_segment=_random_tie_viterbi)
    assert run_row(SEGMENT, viterbi).outcome == "pass"
    assert run_row(RANDOM_AS_WRITTEN, viterbi).outcome == "refuted"
    assert run_row(RANDOM_AS_WRITTEN, viterbi, profile="thorough").outcome == "refuted"


def test_the_pruning_step_keeps_the_ratios() -> None:
    words = {"lower": 5, "lowest": 2, "newer": 6, "wider": 3}
    seed = ref.seed_pieces(words, 4, 40)
    pruned = ref.prune(words, seed, 20)
    assert len(pruned) == 20 and {c for w in words for c in w} <= set(pruned)
    shifts = {round(pruned[x] - seed[x], 12) for x in pruned}
    assert len(shifts) == 1
    with pytest.raises(ValueError, match="size must be a positive int"):
        ref.prune(words, seed, 0)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is absent")
def test_a_misstated_xlnet_model_is_caught(monkeypatch) -> None:
    assert run_row(XLNET, None).outcome == "pass"
    monkeypatch.setattr(props, "XLNET", ("XLNetTokenizer", "WordPiece", "\u2581"))
    row = run_row(XLNET, None)
    assert row.outcome == "fail" and "Unigram" in row.message, row


def test_every_unigram_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {SAMPLER, RANDOM_AS_WRITTEN, EM, PRUNE_STEP, PRUNING, XLNET}
    mine = {q for q, p in properties.items() if p.module == "unigram"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="cannot be segmented"):
        ref.viterbi("ax", {"a": -1.0})
    with pytest.raises(TypeError, match="pieces must be a mapping"):
        ref.viterbi("a", [("a", -1.0)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="em_steps must be a non-negative int"):
        ref.train_unigram({"ab": 1}, 5, em_steps=-1)
