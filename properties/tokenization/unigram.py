"""Properties of the unigram language model (``spec/tokenization/unigram.md``).

Segmentation is checked against the plain definition: the enumeration of every
segmentation of a short word (:func:`specformer.reference.tokenization.unigram.best_by_enumeration`)
gives the best total log-probability, and the implementation must reach it (ties allowed).
One EM step and one pruning step are operations (``unigram_em_step``, ``unigram_prune``):
the properties compare them with the reference's forward-backward and its pruning losses,
and train with them. Sampling is not an operation: its property checks the reference's
sampler itself (``needs=()``). XLNet's tokenizer is inspected in ``transformers``, offline.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

from hypothesis import assume, example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.reference.tokenization import unigram as ref

from . import strategies as sf
from .wordpiece import library

#: Relative tolerance on sums of log-probabilities (a handful of float64 additions).
RTOL = 1e-9


@st.composite
def piece_tables(draw: st.DrawFn, word: str, alphabet: str = "abc") -> dict[str, float]:
    """Log-probabilities for every letter of ``alphabet`` and for some substrings of ``word`` (up to 4 letters)."""
    substrings = sorted({word[i:j] for i in range(len(word)) for j in range(i + 2, min(len(word), i + 4) + 1)})
    chosen = draw(st.lists(st.sampled_from(substrings), unique=True, max_size=len(substrings))
                  if substrings else st.just([]), label="longer pieces")
    logp = st.floats(-8.0, -0.01, allow_nan=False, allow_infinity=False)
    return {piece: draw(logp, label=f"log p({piece})") for piece in [*alphabet, *chosen]}


@st.composite
def segmentation_cases(draw: st.DrawFn, alphabet: str = "abc", max_size: int = 8) -> tuple[str, dict[str, float]]:
    """A word of 1 to ``max_size`` letters and a piece table that can always segment it."""
    word = draw(st.text(alphabet, min_size=1, max_size=max_size), label="word")
    return word, draw(piece_tables(word, alphabet))


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= RTOL * (1.0 + abs(b))


# -- Viterbi: the most probable segmentation -----------------------------------------------------


@claim_property("unigram.viterbi-most-probable", needs=("unigram_segment",), dtypes=("float64",))
@given(case=segmentation_cases())
@example(case=("aab", {"a": -1.0, "b": -1.0, "c": -1.0, "aa": -5.0, "ab": -0.5}))  # longest prefix first: aa b
@example(case=("abc", {"a": -0.1, "b": -0.1, "c": -0.1, "abc": -2.0}))  # fewest pieces is not most probable
def the_segmentation_has_the_largest_total_log_probability(ctx: Context, case) -> None:
    """The pieces spell the word, are in the table, and their log-probabilities sum to the maximum over all
    segmentations (by enumeration; any of several tied maxima is accepted)."""
    word, pieces = case
    got = ctx.unigram_segment(word, pieces)
    assert "".join(got) == word, f"the segmentation {got} does not spell {word!r}"
    unknown = [p for p in got if p not in pieces]
    assert not unknown, f"the segmentation {got} of {word!r} uses pieces not in the table: {unknown}"
    best, best_score = ref.best_by_enumeration(word, pieces)
    got_score = ref.score(got, pieces)
    assert _close(got_score, best_score), (
        f"{word!r} -> {got} has log P = {got_score:.6g}; the best segmentation {list(best)} has {best_score:.6g}")


# -- deterministic decoding, probabilistic model --------------------------------------------------

#: Hoeffding bound for the sampler test: n samples, at most K segmentations, false alarm delta per example.
SAMPLES, MAX_SEGMENTATIONS, DELTA = 4000, 16, 1e-7


def sampling_tolerance(n: int = SAMPLES, k: int = MAX_SEGMENTATIONS, delta: float = DELTA) -> float:
    """``eps`` with ``P(max_s |freq(s) - p(s)| > eps) <= delta`` for ``n`` samples of ``k`` outcomes (Hoeffding,
    union bound over the ``k`` outcomes and both sides): ``sqrt(ln(2k / delta) / (2n))``."""
    return math.sqrt(math.log(2 * k / delta) / (2 * n))


@claim_property("unigram.probabilistic-segmentation", needs=(), dtypes=("float64",), max_examples=10, about="mathematics")
@given(case=segmentation_cases("ab", max_size=5), alpha=st.sampled_from([0.5, 1.0, 2.0]),
       seed=st.integers(0, 2**32 - 1))
def sampled_segmentations_follow_the_models_probabilities(ctx: Context, case, alpha, seed) -> None:
    """Corrected: the model defines ``P(s | w) = P(s)^alpha / Z``; subword regularisation samples from it.
    The reference sampler's frequencies over 4,000 draws are within the Hoeffding bound of the exact law."""
    word, pieces = case
    law = ref.distribution(word, pieces, alpha)
    assert len(law) <= MAX_SEGMENTATIONS, f"{word!r} has {len(law)} segmentations, more than the bound assumes"
    rng = random.Random(seed)
    counts: dict[tuple[str, ...], int] = {}
    for _ in range(SAMPLES):
        s = tuple(ref.sample(word, pieces, rng, alpha))
        counts[s] = counts.get(s, 0) + 1
    eps = sampling_tolerance()
    assert set(counts) <= set(law), f"sampled segmentations outside the law: {sorted(set(counts) - set(law))}"
    for s, p in law.items():
        freq = counts.get(s, 0) / SAMPLES
        assert abs(freq - p) <= eps, (f"{word!r}: {list(s)} drawn with frequency {freq:.4f}, its probability is "
                                      f"{p:.4f} (alpha = {alpha}; tolerance {eps:.4f})")


#: How often the refutation segments a word.
REPEATS = 32


@st.composite
def untied_cases(draw: st.DrawFn) -> tuple[str, dict[str, float]]:
    """A segmentation case whose best segmentation is unique (by a margin of ``1e-6``): every correct Viterbi,
    whatever its tie rule, returns it. The second best is at most 0.5 below (a probability ratio of at least
    ``e^-0.5``), so that an implementation that samples returns it within :data:`REPEATS` tries but for a chance
    of ``(1 / (1 + e^-0.5))^32 < 3e-7``."""
    word, pieces = draw(segmentation_cases("ab", max_size=6))
    scores = sorted((ref.score(s, pieces) for s in ref.segmentations(word, pieces)), reverse=True)
    assume(len(scores) > 1 and 1e-6 < scores[0] - scores[1] <= 0.5)
    return word, pieces


@claim_property("unigram.probabilistic-segmentation", needs=("unigram_segment",), expect="counterexample",
                dtypes=("float64",))
@given(case=untied_cases())
@example(case=("ab", {"a": -1.0, "b": -1.0, "ab": -1.5}))
def segmenting_a_word_again_gives_another_segmentation_as_written(ctx: Context, case) -> None:
    """As written (000): Unigram tokenization produces probabilistic, not deterministic, segmentations; so
    segmenting a word 32 times gives more than one segmentation. Drawn where the best segmentation is unique, so
    that a Viterbi with any tie rule (even a random one) is refuted alike."""
    word, pieces = case
    seen = {tuple(ctx.unigram_segment(word, pieces)) for _ in range(REPEATS)}
    assert len(seen) > 1, (f"{REPEATS} segmentations of {word!r} (of {sum(1 for _ in ref.segmentations(word, pieces))} "
                           f"possible) were all {list(next(iter(seen)))}")


# -- training: EM and pruning -------------------------------------------------------------------------


@st.composite
def training_cases(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, float]]:
    """Word counts and a piece table over them: every letter of the words, and some of their substrings of 2 to
    4 letters, with random probabilities summing to 1. Small (up to 5 words of 6 letters) or realistic (up to 20
    words of 16 letters seen up to 50 times, up to 48 pieces)."""
    large = draw(st.booleans(), label="large")
    words = draw(st.dictionaries(sf.words("abcd", 16 if large else 6), st.integers(1, 50 if large else 5),
                                 min_size=1, max_size=20 if large else 5), label="words")
    substrings = sorted({w[i:j] for w in words for i in range(len(w)) for j in range(i + 2, min(len(w), i + 4) + 1)})
    chosen = draw(st.lists(st.sampled_from(substrings), unique=True, max_size=44 if large else 12)
                  if substrings else st.just([]), label="longer pieces")
    letters = sorted(set("".join(words)))
    names = [*letters, *chosen]
    weights = draw(st.lists(st.floats(0.01, 1.0), min_size=len(names), max_size=len(names)), label="weights")
    total = math.fsum(weights)
    return words, {p: math.log(w / total) for p, w in zip(names, weights)}


def _total(pieces: dict[str, float]) -> float:
    return math.fsum(math.exp(v) for v in pieces.values())


def _segmentable(word: str, pieces: Mapping[str, float]) -> bool:
    """Whether ``word`` can be written as a sequence of the keys of ``pieces``."""
    longest = max(map(len, pieces), default=0)
    reached = [True] + [False] * len(word)
    for i in range(1, len(word) + 1):
        reached[i] = any(reached[j] and word[j:i] in pieces for j in range(max(0, i - longest), i))
    return reached[-1]


def _log_likelihood(words: dict[str, int], pieces: dict[str, float], after: str) -> float:
    """``sum_w count(w) log P(w)`` under the implementation's piece table, computed here once the table is checked to
    give every word a probability above 0. A piece of log-probability ``-inf`` (what an EM step computed in
    probability space gives a piece whose expected count underflowed) is allowed, but a word that only such pieces
    can spell fails the implementation, naming them (``after`` says what made the table)."""
    usable = {x: v for x, v in pieces.items() if v > -math.inf}
    lost = [word for word in words if not _segmentable(word, usable)]
    assert not lost, (
        f"after {after}, {lost[0]!r} has probability 0: every segmentation of it uses a piece of probability 0 "
        f"(log-probability -inf: {sorted(x for x in pieces if x not in usable and x in lost[0])}) or one the table "
        "lacks; the corpus's log-likelihood is -inf")
    return ref.corpus_log_likelihood(words, usable)


@claim_property("unigram.likelihood-objective", needs=("unigram_em_step",), dtypes=("float64",))
@given(case=training_cases())
@example(case=({"ab": 3, "b": 1}, {"a": math.log(0.25), "b": math.log(0.25), "ab": math.log(0.5)}))
def an_em_step_is_expected_counts_renormalised_and_never_lowers_the_likelihood(ctx: Context, case) -> None:
    """One EM step of the implementation keeps the pieces, gives probabilities summing to 1 that are the expected
    piece counts over all segmentations, normalised (the reference's forward-backward), and does not lower
    ``sum_w count(w) log P(w)`` (computed here)."""
    words, pieces = case
    fitted = ctx.unigram_em_step(words, pieces)
    assert set(fitted) == set(pieces), (f"an EM step changed the pieces: added {sorted(set(fitted) - set(pieces))}, "
                                        f"removed {sorted(set(pieces) - set(fitted))}")
    assert abs(_total(fitted) - 1.0) < 1e-9, f"after an EM step the probabilities sum to {_total(fitted)!r}"
    expected = ref.em_step(words, pieces)
    worst = max(pieces, key=lambda x: abs(math.exp(fitted[x]) - math.exp(expected[x])))
    got, want = math.exp(fitted[worst]), math.exp(expected[worst])
    assert abs(got - want) <= 1e-9 + 1e-7 * want, (
        f"after an EM step p({worst!r}) = {got:.9g}; its expected count normalised gives {want:.9g}")
    before = ref.corpus_log_likelihood(words, pieces)
    after = _log_likelihood(words, fitted, "an EM step")
    assert after >= before - RTOL * (1.0 + abs(before)), (
        f"an EM step lowered the log-likelihood from {before:.9g} to {after:.9g}")


@claim_property("unigram.training-prunes", needs=("unigram_prune",), dtypes=("float64",))
@given(case=training_cases(), data=st.data())
@example(case=({"abab": 2, "ba": 1}, {"a": -1.5, "b": -1.5, "ab": -1.0, "ba": -2.5, "aba": -3.0}), data=None)
def a_pruning_step_drops_the_pieces_of_least_loss_and_renormalises_the_rest(ctx: Context, case, data) -> None:
    """One pruning step to ``size``: single characters stay, exactly ``max(size, #characters)`` pieces are left
    (all of them if already fewer), the dropped pieces have the smallest losses (SentencePiece's Viterbi
    approximation, computed here; ties either way), and the kept probabilities are rescaled to sum to 1."""
    words, pieces = case
    size = data.draw(st.integers(1, len(pieces) + 1), label="size") if data is not None else 3
    pruned = ctx.unigram_prune(words, pieces, size)
    singles = {x for x in pieces if len(x) == 1}
    assert set(pruned) <= set(pieces), f"pruning added pieces: {sorted(set(pruned) - set(pieces))}"
    assert singles <= set(pruned), f"pruning removed single characters: {sorted(singles - set(pruned))}"
    target = len(pieces) if size >= len(pieces) else max(size, len(singles))
    assert len(pruned) == target, f"pruning {len(pieces)} pieces to {size} left {len(pruned)}, not {target}"
    zero = sorted(x for x in pruned if pruned[x] == -math.inf)
    assert not zero, (f"pruning gave the kept pieces {zero} probability 0 (log-probability -inf): the kept pieces "
                      "are rescaled, not zeroed")
    shifts = [pruned[x] - pieces[x] for x in pruned]
    assert max(shifts) - min(shifts) < 1e-9, "the kept pieces' probabilities were not all rescaled by one factor"
    assert abs(_total(pruned) - 1.0) < 1e-9, f"after pruning the probabilities sum to {_total(pruned)!r}"
    removed = set(pieces) - set(pruned)
    if removed:
        losses = ref.pruning_losses(words, pieces)
        kept = [x for x in pruned if len(x) > 1]
        worst = max(removed, key=losses.__getitem__)
        if kept:
            best = min(kept, key=losses.__getitem__)
            assert losses[worst] <= losses[best] + 1e-9 * (1.0 + abs(losses[best])), (
                f"pruning removed {worst!r} (loss {losses[worst]:.6g}) but kept {best!r} (loss {losses[best]:.6g})")


@claim_property("unigram.training-prunes", needs=("unigram_em_step", "unigram_prune"), dtypes=("float64",),
                max_examples=15)
@given(words=sf.corpora("abcd", max_words=6, max_count=5), vocab_size=st.integers(1, 24))
def training_prunes_the_vocabulary_down_to_its_target(ctx: Context, words, vocab_size) -> None:
    """Training with the implementation's steps, from many substrings (the reference's seed): each round's two EM
    steps never lower the likelihood, each pruning keeps every letter and shrinks the vocabulary by a quarter (at
    least one piece, never below the target), and training ends at ``max(vocab_size, letters)`` pieces (or the
    seed, if smaller) with probabilities summing to 1."""
    pieces = ref.seed_pieces(words, 4, 40)
    letters = {c for w in words for c in w}
    seed, sizes = len(pieces), [len(pieces)]
    likelihood = ref.corpus_log_likelihood(words, pieces)  # the seed's pieces all occur in the words
    for _ in range(100):
        for _ in range(2):
            pieces = ctx.unigram_em_step(words, pieces)
            after = _log_likelihood(words, pieces, f"an EM step (vocabulary sizes so far {sizes})")
            assert after >= likelihood - RTOL * (1.0 + abs(likelihood)), (
                f"an EM step lowered the log-likelihood from {likelihood:.9g} to {after:.9g} ({sizes})")
            likelihood = after
        if len(pieces) <= vocab_size or all(len(x) == 1 for x in pieces):
            break
        size = max(vocab_size, len(pieces) - max(1, len(pieces) // 4))
        pruned = ctx.unigram_prune(words, pieces, size)
        assert set(pruned) < set(pieces) and letters <= set(pruned), (
            f"pruning {len(pieces)} pieces to {size} kept {len(pruned)}, letters lost: {sorted(letters - set(pruned))}")
        pieces = pruned
        sizes.append(len(pieces))
        likelihood = _log_likelihood(words, pieces, f"pruning to {size} pieces (vocabulary sizes {sizes})")
    target = min(seed, max(vocab_size, len(letters)))
    assert len(pieces) == target, (f"training ended with {len(pieces)} pieces, expected {target} "
                                   f"(vocab_size {vocab_size}, {len(letters)} letters, seed {seed}); sizes {sizes}")
    assert abs(_total(pieces) - 1.0) < 1e-9, f"the final probabilities sum to {_total(pieces)}, not 1"


# -- which models use it ----------------------------------------------------------------------------

#: transformers' tokenizer class for XLNet and the model and whitespace marker it builds.
XLNET = ("XLNetTokenizer", "Unigram", "\u2581")


@claim_property("unigram.xlnet", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(name=st.just(XLNET[0]))
def xlnet_tokenizes_with_a_sentencepiece_unigram_model(ctx: Context, name) -> None:
    """``transformers``' XLNet tokenizer (built offline, without a vocabulary) is a Unigram model whose
    pre-tokenizer marks spaces with ``"▁"``, as a SentencePiece model does; its file is ``spiece.model``."""
    transformers = library("transformers")
    cls = getattr(transformers, name)
    backend = cls().backend_tokenizer
    model = type(backend.model).__name__
    marker = getattr(backend.decoder, "replacement", None)
    files = getattr(cls, "vocab_files_names", {})
    assert (model, marker) == XLNET[1:], f"{name} builds a {model} model with marker {marker!r}, expected {XLNET[1:]}"
    assert str(files.get("vocab_file", "")).endswith(".model"), f"{name} reads {files}, not a SentencePiece model"
