"""Every property of ``properties/tokenization/unigram.py`` catches at least one wrong Unigram model.

Segmentation mutants replace ``unigram_segment``. The sampler, EM and training properties
check the reference's own algorithm (``needs=()``): there the wrong versions are put in
place of the reference's functions with monkeypatch.
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
EM = "unigram.an_em_step_never_lowers_the_corpus_likelihood"
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


def _inverse_m_step(words, pieces):
    """Wrong: probabilities proportional to the inverse of the expected counts."""
    fitted = EM_STEP(words, pieces)
    inverse = {x: -v for x, v in fitted.items()}
    top = max(inverse.values())
    norm = top + math.log(math.fsum(math.exp(v - top) for v in inverse.values()))
    return {x: v - norm for x, v in inverse.items()}


def test_an_m_step_against_the_counts_is_caught(monkeypatch) -> None:
    assert run_row(EM, None).outcome == "pass"
    monkeypatch.setattr(ref, "em_step", _inverse_m_step)
    row = run_row(EM, None, profile="mutants")
    assert row.outcome == "fail" and "lowered the log-likelihood" in row.message, row


def _trainer(rule: str):
    """A wrong trainer built from the reference's parts: ``largest-loss`` prunes the pieces of largest
    loss, ``letters`` lets letters be pruned, ``early`` stops after the first pruning round."""

    def train_unigram(words, vocab_size, *, max_piece_length=8, seed_size=2000, em_steps=2, shrink=0.75):
        pieces = ref.seed_pieces(words, max_piece_length, seed_size)
        rounds = []
        while True:
            size = len(pieces)
            likelihoods = [ref.corpus_log_likelihood(words, pieces)]
            for _ in range(em_steps):
                pieces = EM_STEP(words, pieces)
                likelihoods.append(ref.corpus_log_likelihood(words, pieces))
            removable = sorted(x for x in pieces if len(x) > 1 or rule == "letters")
            if size <= vocab_size or not removable or (rule == "early" and rounds):
                rounds.append(ref.PruningRound(size, tuple(likelihoods), {}, (), size))
                return ref.UnigramModel(pieces, tuple(rounds))
            losses = {**ref.pruning_losses(words, pieces), **({x: 0.0 for x in pieces if len(x) == 1}
                                                               if rule == "letters" else {})}
            drop = min(size - vocab_size, max(1, int(size * (1 - shrink))), len(removable))
            order = sorted(removable, key=lambda x: (-losses[x] if rule == "largest-loss" else losses[x], x))
            removed = tuple(order[:drop])
            kept = {x: v for x, v in pieces.items() if x not in removed}
            norm = math.log(math.fsum(math.exp(v) for v in kept.values()))
            pieces = {x: v - norm for x, v in kept.items()}
            rounds.append(ref.PruningRound(size, tuple(likelihoods), losses, removed, len(pieces)))

    return train_unigram


@pytest.mark.parametrize("rule", ["largest-loss", "letters", "early"])
def test_a_wrong_trainer_is_caught(monkeypatch, rule: str) -> None:
    assert run_row(PRUNING, None).outcome == "pass"
    monkeypatch.setattr(ref, "train_unigram", _trainer(rule))
    row = run_row(PRUNING, None, profile="mutants")
    # without its letters a word may have no segmentation left: the next EM step raises (an error row)
    assert row.outcome in ("fail", "error") and row.message, row


def test_the_mutant_trainer_is_the_reference_when_nothing_is_changed() -> None:
    words = {"lower": 5, "lowest": 2, "newer": 6, "wider": 3}
    model = _trainer("none")(words, 12, seed_size=40)
    assert model.pieces == pytest.approx(ref.train_unigram(words, 12, seed_size=40, em_steps=2).pieces)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is absent")
def test_a_misstated_xlnet_model_is_caught(monkeypatch) -> None:
    assert run_row(XLNET, None).outcome == "pass"
    monkeypatch.setattr(props, "XLNET", ("XLNetTokenizer", "WordPiece", "\u2581"))
    row = run_row(XLNET, None)
    assert row.outcome == "fail" and "Unigram" in row.message, row


def test_every_unigram_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {SAMPLER, RANDOM_AS_WRITTEN, EM, PRUNING, XLNET}
    mine = {q for q, p in properties.items() if p.module == "unigram"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="cannot be segmented"):
        ref.viterbi("ax", {"a": -1.0})
    with pytest.raises(TypeError, match="pieces must be a mapping"):
        ref.viterbi("a", [("a", -1.0)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="em_steps must be a non-negative int"):
        ref.train_unigram({"ab": 1}, 5, em_steps=-1)
