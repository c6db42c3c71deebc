"""Properties of the unigram language model (``spec/tokenization/unigram.md``).

Segmentation is checked against the plain definition: the enumeration of every
segmentation of a short word (:func:`specformer.reference.tokenization.unigram.best_by_enumeration`)
gives the best total log-probability, and the implementation must reach it (ties allowed).
Training, EM and sampling are not operations of the protocol: their properties check
the reference's algorithm itself (``needs=()``), as a statement of what the documents
describe. XLNet's tokenizer is inspected in ``transformers``, offline.
"""

from __future__ import annotations

import math
import random

from hypothesis import example, given
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


@claim_property("unigram.probabilistic-segmentation", needs=(), dtypes=("float64",), max_examples=10)
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


@st.composite
def tied_cases(draw: st.DrawFn) -> tuple[str, dict[str, float]]:
    """A word of 2 to 6 letters over ``a b`` and pieces of up to 3 letters with ``log p = -len``: every
    segmentation has the same probability, ``e^-len(word)``."""
    word = draw(st.text("ab", min_size=2, max_size=6), label="word")
    pieces = {word[i:j]: float(i - j) for i in range(len(word)) for j in range(i + 1, min(len(word), i + 3) + 1)}
    return word, pieces


@claim_property("unigram.probabilistic-segmentation", needs=("unigram_segment",), expect="counterexample",
                dtypes=("float64",))
@given(case=tied_cases())
@example(case=("ab", {"a": -1.0, "b": -1.0, "ab": -2.0}))
def segmenting_a_word_again_gives_another_segmentation_as_written(ctx: Context, case) -> None:
    """As written (000): Unigram tokenization produces probabilistic, not deterministic, segmentations; so
    segmenting a word whose segmentations are all equally probable, 16 times, gives more than one."""
    word, pieces = case
    seen = {tuple(ctx.unigram_segment(word, pieces)) for _ in range(16)}
    assert len(seen) > 1, (f"16 segmentations of {word!r}, whose {sum(1 for _ in ref.segmentations(word, pieces))} "
                           f"segmentations are equally probable, were all {list(next(iter(seen)))}")


# -- training: EM and pruning -------------------------------------------------------------------------


@claim_property("unigram.likelihood-objective", needs=(), dtypes=("float64",), max_examples=15)
@given(words=sf.corpora("abc", max_words=5, max_count=4), data=st.data())
def an_em_step_never_lowers_the_corpus_likelihood(ctx: Context, words, data) -> None:
    """From any piece table (every letter present), one EM step of the reference (expected counts over all
    segmentations, then renormalised) does not lower ``sum_w count(w) log P(w)``."""
    substrings = sorted({w[i:j] for w in words for i in range(len(w))
                         for j in range(i + 2, min(len(w), i + 3) + 1)})
    chosen = data.draw(st.lists(st.sampled_from(substrings), unique=True) if substrings else st.just([]),
                       label="longer pieces")
    weights = data.draw(st.lists(st.floats(0.01, 1.0), min_size=3 + len(chosen), max_size=3 + len(chosen)),
                        label="weights")
    total = math.fsum(weights)
    pieces = {p: math.log(w / total) for p, w in zip(["a", "b", "c", *chosen], weights)}
    before = ref.corpus_log_likelihood(words, pieces)
    after = ref.corpus_log_likelihood(words, ref.em_step(words, pieces))
    assert after >= before - RTOL * abs(before), (
        f"an EM step lowered the log-likelihood from {before:.9g} to {after:.9g}")


@claim_property("unigram.training-prunes", needs=(), dtypes=("float64",), max_examples=15)
@given(words=sf.corpora("abcd", max_words=6, max_count=5), vocab_size=st.integers(1, 24))
def training_prunes_the_vocabulary_down_to_its_target(ctx: Context, words, vocab_size) -> None:
    """Starting from many substrings, each round keeps every letter, drops the pieces of smallest loss, never
    grows the vocabulary, and training ends at ``max(vocab_size, letters)`` pieces (or the seed, if smaller)."""
    model = ref.train_unigram(words, vocab_size, max_piece_length=4, seed_size=40, em_steps=2)
    letters = {c for w in words for c in w}
    seed = model.rounds[0].size_before
    sizes = [(r.size_before, r.size_after) for r in model.rounds]
    for previous, current in zip(model.rounds, model.rounds[1:]):
        assert current.size_before == previous.size_after, f"the vocabulary changed between rounds: {sizes}"
    for r in model.rounds:
        assert r.size_after == r.size_before - len(r.removed) and r.size_after <= r.size_before, (
            f"a round did not shrink the vocabulary by what it removed: {sizes}")
        assert not any(len(x) == 1 for x in r.removed), f"a round removed a letter: {r.removed}"
        if r.removed:
            kept = [loss for x, loss in r.losses.items() if x not in r.removed]
            worst = max(r.losses[x] for x in r.removed)
            assert not kept or worst <= min(kept), (
                f"a round removed a piece of loss {worst:.4g} but kept one of loss {min(kept):.4g}")
    assert letters <= set(model.pieces), f"letters lost in training: {sorted(letters - set(model.pieces))}"
    target = min(seed, max(vocab_size, len(letters)))
    assert len(model.pieces) == target, (f"training ended with {len(model.pieces)} pieces, expected {target} "
                                         f"(vocab_size {vocab_size}, {len(letters)} letters, seed {seed}); {sizes}")
    probability = math.fsum(math.exp(v) for v in model.pieces.values())
    assert abs(probability - 1.0) < 1e-9, f"the final probabilities sum to {probability}, not 1"


# -- which models use it ----------------------------------------------------------------------------

#: transformers' tokenizer class for XLNet and the model and whitespace marker it builds.
XLNET = ("XLNetTokenizer", "Unigram", "\u2581")


@claim_property("unigram.xlnet", needs=(), dtypes=("float64",), max_examples=1)
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
