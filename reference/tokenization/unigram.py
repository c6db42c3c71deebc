"""The unigram language model of subwords: segmenting a word, sampling segmentations, training.

A unigram model (Kudo, 2018) gives every piece ``x`` of its vocabulary a probability
``p(x)`` and treats the pieces of a segmentation as drawn independently, so a segmentation
``s = (x_1, ..., x_m)`` of a word has probability ``P(s) = p(x_1) ... p(x_m)``, and the word
the total ``P(w)`` over all its segmentations. Models here are tables ``piece -> log p``.

* :func:`viterbi` returns a segmentation of maximal ``log P(s)``: dynamic programming over
  the word's positions, ``best[i] = max_j best[j] + log p(w[j:i])``, in time proportional
  to its length times the longest piece. Ties: at each position the longest last piece
  wins (the first ``j`` reached), so the result is one fixed segmentation.
* :func:`segmentations` enumerates every segmentation (exponentially many: words of at
  most :data:`MAX_ENUMERATED` characters) and :func:`best_by_enumeration` takes the best:
  the plain definition that Viterbi must agree with.
* :func:`log_marginal` is ``log P(w)`` (the forward algorithm); :func:`sample` draws a
  segmentation with probability ``P(s)^alpha / Z`` (forward filtering, backward
  sampling), what SentencePiece calls subword regularisation; :func:`distribution` is the
  same law by enumeration.

Training (:func:`train_unigram`) follows the documents' steps: seed a large vocabulary
(every substring up to ``max_piece_length`` characters, the most frequent ones), fit the
probabilities by EM (expected piece counts over all segmentations, by forward-backward,
then ``p(x)`` proportional to them), and prune: drop the pieces whose removal costs the
least likelihood, a share of the vocabulary at a time, refit, repeat until ``vocab_size``
pieces are left. Single characters are never dropped, so every word of the corpus stays
segmentable. Every round is recorded (:class:`PruningRound`). The loss of a piece is
SentencePiece's approximation: how much the corpus's Viterbi log-likelihood falls if each
use of the piece is replaced by the best segmentation of the piece without it. Everything
is deterministic: ties are broken by the piece's text.

Log-probabilities must be finite and at most 0. A word with a character that no piece
covers has no segmentation: ``ValueError`` naming the position. SentencePiece's
whitespace handling is :mod:`.sentencepiece`. Not here: unknown-token fallback (the
caller's choice), n-best lists, byte fallback, SentencePiece's Bayesian (digamma) EM and
its suffix-array seeding, speed (pure Python: seconds for the suite's training text).
"""

from __future__ import annotations

import functools
import math
import random
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

__all__ = ["MAX_ENUMERATED", "PruningRound", "UnigramModel", "best_by_enumeration", "corpus_log_likelihood",
           "distribution", "em_step", "log_marginal", "pruning_losses", "sample", "score", "seed_pieces",
           "segmentations", "train_unigram", "viterbi"]

#: The longest word :func:`segmentations` enumerates (``2^(n-1)`` splits at most).
MAX_ENUMERATED = 16


def viterbi(word: str, pieces: Mapping[str, float]) -> list[str]:
    """A segmentation of ``word`` into ``pieces`` of maximal total log-probability (``[]`` for ``""``)."""
    _check(word, pieces)
    return _viterbi(word, pieces, max(map(len, pieces), default=0))


def _viterbi(word: str, pieces: Mapping[str, float], longest: int, exclude: str | None = None) -> list[str]:
    """:func:`viterbi` without the checks; ``exclude`` is a piece to do without."""
    n = len(word)
    best = [0.0] + [-math.inf] * n  # best[i]: the best log P of a segmentation of word[:i]
    back = [0] * (n + 1)  # back[i]: where the last piece of that segmentation starts
    for i in range(1, n + 1):
        for j in range(max(0, i - longest), i):  # j ascending: on a tie the longest last piece stays
            piece = word[j:i]
            logp = pieces.get(piece)
            if logp is not None and piece != exclude and best[j] + logp > best[i]:
                best[i], back[i] = best[j] + logp, j
    if best[n] == -math.inf:
        raise ValueError(_unsegmentable(word, {x: v for x, v in pieces.items() if x != exclude}))
    found: list[str] = []
    i = n
    while i > 0:
        found.append(word[back[i]:i])
        i = back[i]
    return found[::-1]


def score(segmentation: list[str] | tuple[str, ...], pieces: Mapping[str, float]) -> float:
    """``log P(s)``: the sum of the pieces' log-probabilities (``KeyError`` for a piece not in the model)."""
    return math.fsum(pieces[x] for x in segmentation)


def segmentations(word: str, pieces: Mapping[str, float]) -> Iterator[tuple[str, ...]]:
    """Every segmentation of ``word`` into ``pieces``, in lexicographic order of the piece lengths.

    Brute force, for checking :func:`viterbi`: ``ValueError`` for a word longer than
    :data:`MAX_ENUMERATED` characters. The empty word has one segmentation, ``()``.
    """
    _check(word, pieces)
    if len(word) > MAX_ENUMERATED:
        raise ValueError(f"refusing to enumerate the segmentations of a word of {len(word)} characters "
                         f"(at most {MAX_ENUMERATED})")

    def rest(start: int) -> Iterator[tuple[str, ...]]:
        if start == len(word):
            yield ()
            return
        for end in range(start + 1, len(word) + 1):
            if word[start:end] in pieces:
                for tail in rest(end):
                    yield (word[start:end], *tail)

    return rest(0)


def best_by_enumeration(word: str, pieces: Mapping[str, float]) -> tuple[tuple[str, ...], float]:
    """The segmentation of maximal ``log P(s)`` by trying them all, and that maximum (first one on ties)."""
    best: tuple[tuple[str, ...], float] | None = None
    for s in segmentations(word, pieces):
        value = score(s, pieces)
        if best is None or value > best[1]:
            best = (s, value)
    if best is None:
        raise ValueError(_unsegmentable(word, pieces))
    return best


def log_marginal(word: str, pieces: Mapping[str, float], alpha: float = 1.0) -> float:
    """``log sum_s P(s)^alpha`` over the segmentations of ``word`` (the forward algorithm); ``-inf`` if none."""
    _check(word, pieces)
    return _forward(word, pieces, alpha)[-1]


def sample(word: str, pieces: Mapping[str, float], rng: random.Random, alpha: float = 1.0) -> list[str]:
    """One segmentation drawn with probability ``P(s)^alpha / sum_s' P(s')^alpha``.

    Forward filtering (``f[i] = log sum_j exp(f[j] + alpha log p(w[j:i]))``), then backward
    sampling: from the end, the start ``j`` of the last piece is drawn with probability
    ``exp(f[j] + alpha log p(w[j:i]) - f[i])``. ``alpha = 0`` is uniform over segmentations;
    a large ``alpha`` tends to the Viterbi segmentation. ``rng`` is the only randomness.
    """
    _check(word, pieces)
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
    forward = _forward(word, pieces, alpha)
    if forward[-1] == -math.inf:
        raise ValueError(_unsegmentable(word, pieces))
    longest = max(map(len, pieces), default=0)
    found: list[str] = []
    i = len(word)
    while i > 0:
        starts = [j for j in range(max(0, i - longest), i) if word[j:i] in pieces and forward[j] > -math.inf]
        weights = [math.exp(forward[j] + alpha * pieces[word[j:i]] - forward[i]) for j in starts]
        j = rng.choices(starts, weights)[0]
        found.append(word[j:i])
        i = j
    return found[::-1]


def distribution(word: str, pieces: Mapping[str, float], alpha: float = 1.0) -> dict[tuple[str, ...], float]:
    """The law :func:`sample` draws from, by enumeration: segmentation -> ``P(s)^alpha / Z``."""
    weights = {s: alpha * score(s, pieces) for s in segmentations(word, pieces)}
    if not weights:
        raise ValueError(_unsegmentable(word, pieces))
    top = max(weights.values())
    total = math.fsum(math.exp(v - top) for v in weights.values())
    return {s: math.exp(v - top) / total for s, v in weights.items()}


def _forward(word: str, pieces: Mapping[str, float], alpha: float, longest: int | None = None) -> list[float]:
    """``f[i] = log sum over the segmentations s of word[:i] of P(s)^alpha`` (``-inf`` where there is none)."""
    if longest is None:
        longest = max(map(len, pieces), default=0)
    forward = [0.0] + [-math.inf] * len(word)
    for i in range(1, len(word) + 1):
        terms = [forward[j] + alpha * pieces[word[j:i]] for j in range(max(0, i - longest), i)
                 if word[j:i] in pieces and forward[j] > -math.inf]
        if terms:
            top = max(terms)
            forward[i] = top + math.log(math.fsum(math.exp(t - top) for t in terms))
    return forward


# --------------------------------------------------------------------------- training


@dataclass(frozen=True)
class PruningRound:
    """One round of training: EM on a fixed vocabulary, then (unless small enough) pruning.

    ``log_likelihoods`` is the corpus log-likelihood before the first EM step and after
    each; ``losses`` the loss of every removable piece (empty in the last round, which
    does not prune); ``removed`` the pieces dropped, ``size_before`` and ``size_after`` the
    vocabulary sizes around the round.
    """

    size_before: int
    log_likelihoods: tuple[float, ...]
    losses: dict[str, float]
    removed: tuple[str, ...]
    size_after: int


@dataclass(frozen=True)
class UnigramModel:
    """A trained model: ``pieces`` (piece -> log-probability) and the ``rounds`` that made it."""

    pieces: dict[str, float]
    rounds: tuple[PruningRound, ...]


def seed_pieces(words: Mapping[str, int], max_piece_length: int, seed_size: int) -> dict[str, float]:
    """The initial vocabulary: every character, and the substrings of at most ``max_piece_length``
    characters with the largest ``frequency * length`` (ties by text), up to ``seed_size`` pieces
    in all (more if there are more characters); log-probabilities proportional to frequency."""
    frequency: Counter[str] = Counter()
    for word, count in words.items():
        for start in range(len(word)):
            for end in range(start + 1, min(len(word), start + max_piece_length) + 1):
                frequency[word[start:end]] += count
    characters = [x for x in frequency if len(x) == 1]
    longer = sorted((x for x in frequency if len(x) > 1), key=lambda x: (-frequency[x] * len(x), x))
    kept = characters + longer[:max(0, seed_size - len(characters))]
    total = sum(frequency[x] for x in kept)
    return {x: math.log(frequency[x] / total) for x in kept}


def corpus_log_likelihood(words: Mapping[str, int], pieces: Mapping[str, float]) -> float:
    """``sum_w count(w) log P(w)``, ``P(w)`` summed over all segmentations (the objective of EM)."""
    lattice = _Lattice(pieces)
    return math.fsum(count * lattice.posteriors(word)[1] for word, count in words.items())


def em_step(words: Mapping[str, int], pieces: Mapping[str, float]) -> dict[str, float]:
    """One EM step: expected piece counts over all segmentations (E), then ``p(x)`` proportional to them (M).

    The expected count of an occurrence ``w[j:i]`` is its posterior probability,
    ``f[j] p(w[j:i]) b[i] / P(w)`` with the forward sums ``f`` and backward sums ``b``, times
    the word's count. The step never lowers :func:`corpus_log_likelihood` (the EM
    inequality). The vocabulary does not change: a piece whose expected count vanishes
    keeps a probability of about ``1e-300`` (pruning is what removes pieces).
    """
    return _em_step(words, pieces)[0]


def _em_step(words: Mapping[str, int], pieces: Mapping[str, float]) -> tuple[dict[str, float], float]:
    """:func:`em_step`, and the corpus log-likelihood of the ``pieces`` it started from (a by-product)."""
    lattice = _Lattice(pieces)
    expected: Counter[str] = Counter()
    likelihood = 0.0
    for word, count in words.items():
        posteriors, log_p = lattice.posteriors(word)
        likelihood += count * log_p
        for piece, posterior in posteriors:
            expected[piece] += count * posterior
    counts = {x: max(expected.get(x, 0.0), 1e-300) for x in pieces}  # nothing leaves the vocabulary here
    total = math.fsum(counts.values())
    return {x: math.log(c / total) for x, c in sorted(counts.items())}, likelihood


class _Lattice:
    """Forward-backward over the occurrences of pieces in a word, in plain (not log) arithmetic.

    Every segmentation of a word covers all its characters, so multiplying each piece's
    probability by ``C^len(piece)`` multiplies every segmentation by the same ``C^len(word)``:
    posteriors do not change, and ``log P(w)`` is recovered by subtracting ``len(w) log C``.
    ``C`` (the inverse of the median probability per character) keeps the sums of long words
    inside the range of floats; a word whose sums still overflow or underflow, or that has
    no segmentation, is redone in log space (which raises for the latter), and so is every
    word when some scaled probability is out of range (pieces of vanishing probability).
    """

    def __init__(self, pieces: Mapping[str, float]) -> None:
        self.pieces = pieces
        self.longest = max(map(len, pieces), default=0)
        per_character = sorted(v / len(x) for x, v in pieces.items())
        self.log_c = -per_character[len(per_character) // 2] if per_character else 0.0  # the median
        logs = {x: v + len(x) * self.log_c for x, v in pieces.items()}
        self.linear = all(abs(v) < 300 for v in logs.values())  # else every word goes to log space
        self.scaled = {x: math.exp(v) for x, v in logs.items()} if self.linear else {}

    def posteriors(self, word: str) -> tuple[list[tuple[str, float]], float]:
        """Each occurrence of a piece in ``word`` with its posterior probability, and ``log P(word)``."""
        n, scaled = len(word), self.scaled
        if not self.linear:
            return self._in_log_space(word, [o for o in _substrings(word, self.longest) if o[2] in self.pieces])
        occurrences = [o for o in _substrings(word, self.longest) if o[2] in scaled]  # by start, then end
        forward = [1.0] + [0.0] * n
        for j, i, piece in sorted(occurrences, key=lambda o: o[1]):
            forward[i] += forward[j] * scaled[piece]
        backward = [0.0] * n + [1.0]
        for j, i, piece in reversed(occurrences):  # every occurrence starting after j is done before j's
            backward[j] += scaled[piece] * backward[i]
        total = forward[n]
        if not (0.0 < total < math.inf):
            return self._in_log_space(word, occurrences)
        return ([(piece, forward[j] * scaled[piece] * backward[i] / total) for j, i, piece in occurrences],
                math.log(total) - n * self.log_c)

    def _in_log_space(self, word: str,
                      occurrences: list[tuple[int, int, str]]) -> tuple[list[tuple[str, float]], float]:
        n, pieces = len(word), self.pieces
        forward = [0.0] + [-math.inf] * n
        for j, i, piece in sorted(occurrences, key=lambda o: o[1]):
            forward[i] = _log_add(forward[i], forward[j] + pieces[piece])
        backward = [-math.inf] * n + [0.0]
        for j, i, piece in reversed(occurrences):
            backward[j] = _log_add(backward[j], pieces[piece] + backward[i])
        total = forward[n]
        if total == -math.inf:
            raise ValueError(_unsegmentable(word, pieces))
        return [(piece, math.exp(forward[j] + pieces[piece] + backward[i] - total)) for j, i, piece in occurrences
                if forward[j] > -math.inf and backward[i] > -math.inf], total


@functools.lru_cache(maxsize=1 << 16)
def _substrings(word: str, longest: int) -> tuple[tuple[int, int, str], ...]:
    """Every ``(j, i, word[j:i])`` with ``i - j <= longest``, by start then end (cached: training revisits words)."""
    n = len(word)
    return tuple((j, i, word[j:i]) for j in range(n) for i in range(j + 1, min(n, j + longest) + 1))


def _log_add(a: float, b: float) -> float:
    """``log(exp(a) + exp(b))`` without overflow."""
    if a < b:
        a, b = b, a
    return a if b == -math.inf else a + math.log1p(math.exp(b - a))


def pruning_losses(words: Mapping[str, int], pieces: Mapping[str, float]) -> dict[str, float]:
    """The loss of each piece longer than one character: SentencePiece's Viterbi approximation.

    ``loss(x) = F(x) (log p(x) - sum_{y in alt(x)} log p(y))``, where ``F(x)`` is how often ``x``
    occurs in the Viterbi segmentations of the corpus (weighted by word counts) and
    ``alt(x)`` is the Viterbi segmentation of the string ``x`` without the piece ``x``: the
    fall in Viterbi log-likelihood if every use of ``x`` were replaced (the probabilities
    are not renormalised). A piece no Viterbi segmentation uses costs nothing.
    """
    longest = max(map(len, pieces), default=0)
    used: Counter[str] = Counter()
    for word, count in words.items():
        for x in _viterbi(word, pieces, longest):
            used[x] += count
    losses = {}
    for x, logp in pieces.items():
        if len(x) > 1:
            alternative = score(_viterbi(x, pieces, longest, exclude=x), pieces) if used[x] else 0.0
            losses[x] = used[x] * (logp - alternative) if used[x] else 0.0
    return losses


def prune(words: Mapping[str, int], pieces: Mapping[str, float], size: int) -> dict[str, float]:
    """One pruning step: drop the removable pieces (longer than one character) of smallest
    :func:`pruning_losses` (ties by text) until ``size`` pieces are left, or only characters,
    and renormalise the rest (their ratios unchanged, the probabilities summing to 1).

    ``pieces`` already at or below ``size`` come back renormalised and otherwise unchanged.
    ``ValueError`` for a ``size`` below 1.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive int, got {size!r}")
    for word in words:
        _check(word, pieces)
    removable = sorted(x for x in pieces if len(x) > 1)
    drop = min(max(0, len(pieces) - size), len(removable))
    gone: set[str] = set()
    if drop:
        losses = pruning_losses(words, pieces)
        gone = set(sorted(removable, key=lambda x: (losses[x], x))[:drop])
    kept = {x: v for x, v in pieces.items() if x not in gone}
    top = max(kept.values())
    norm = top + math.log(math.fsum(math.exp(v - top) for v in kept.values()))
    return {x: v - norm for x, v in kept.items()}


def train_unigram(words: Mapping[str, int], vocab_size: int, *, max_piece_length: int = 8,
                  seed_size: int = 2000, em_steps: int = 2, shrink: float = 0.75) -> UnigramModel:
    """Train a unigram model on ``words`` (word -> count) down to ``vocab_size`` pieces.

    Each round runs ``em_steps`` EM steps; then, while the vocabulary is larger than
    ``vocab_size``, the removable pieces (longer than one character) of smallest loss are
    dropped (ties by text): ``1 - shrink`` of the vocabulary at a time, never more than
    needed to reach ``vocab_size``, at least one. The vocabulary cannot shrink below the
    number of distinct characters. ``ValueError`` for bad arguments or an empty corpus.
    """
    _check_training(words, vocab_size, max_piece_length, seed_size, em_steps, shrink)
    pieces = seed_pieces(words, max_piece_length, seed_size)
    rounds: list[PruningRound] = []
    while True:
        size_before = len(pieces)
        likelihoods = []
        for _ in range(em_steps):
            pieces, before = _em_step(words, pieces)
            likelihoods.append(before)  # the likelihood of the pieces the step started from
        likelihoods.append(corpus_log_likelihood(words, pieces))
        removable = sorted((x for x in pieces if len(x) > 1))
        if len(pieces) <= vocab_size or not removable:
            rounds.append(PruningRound(size_before, tuple(likelihoods), {}, (), len(pieces)))
            return UnigramModel(dict(pieces), tuple(rounds))
        losses = pruning_losses(words, pieces)
        drop = min(len(pieces) - vocab_size, max(1, int(len(pieces) * (1 - shrink))), len(removable))
        removed = tuple(sorted(removable, key=lambda x: (losses[x], x))[:drop])
        gone = set(removed)
        kept = {x: v for x, v in pieces.items() if x not in gone}
        top = max(kept.values())
        norm = top + math.log(math.fsum(math.exp(v - top) for v in kept.values()))
        pieces = {x: v - norm for x, v in kept.items()}  # renormalised: the probabilities sum to 1 again
        rounds.append(PruningRound(size_before, tuple(likelihoods), losses, removed, len(pieces)))


def _check_training(words: Mapping[str, int], vocab_size: int, max_piece_length: int, seed_size: int,
                    em_steps: int, shrink: float) -> None:
    if not isinstance(words, Mapping) or not words:
        raise ValueError("empty corpus: words must be a non-empty mapping from word to count")
    for word, count in words.items():
        if not isinstance(word, str) or not word:
            raise ValueError(f"words must be non-empty strings, got {word!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"word counts must be positive integers, got {count!r} for {word!r}")
    for name, value in (("vocab_size", vocab_size), ("max_piece_length", max_piece_length),
                        ("seed_size", seed_size), ("em_steps", em_steps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "em_steps" else 1):
            raise ValueError(f"{name} must be a {'non-negative' if name == 'em_steps' else 'positive'} int, "
                             f"got {value!r}")
    if not (isinstance(shrink, (int, float)) and 0 < shrink < 1):
        raise ValueError(f"shrink must be a fraction strictly between 0 and 1, got {shrink!r}")


def _unsegmentable(word: str, pieces: Mapping[str, float]) -> str:
    """Why ``word`` has no segmentation: the first character no piece covers, if there is one."""
    covered = [False] * len(word)
    for start in range(len(word)):
        for end in range(start + 1, len(word) + 1):
            if word[start:end] in pieces:
                covered[start:end] = [True] * (end - start)
    if False in covered:
        i = covered.index(False)
        return f"{word!r} cannot be segmented: no piece covers position {i} ({word[i]!r})"
    return f"{word!r} cannot be segmented: its pieces do not join up from start to end"


def _check(word: str, pieces: Mapping[str, float]) -> None:
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    if not isinstance(pieces, Mapping):
        raise TypeError(f"pieces must be a mapping from piece to log-probability, got {type(pieces).__name__}")
    for piece, logp in pieces.items():
        if not isinstance(piece, str) or not piece:
            raise ValueError(f"pieces must be non-empty strings, got {piece!r}")
        if isinstance(logp, bool) or not isinstance(logp, (int, float)) or not math.isfinite(logp) or logp > 0:
            raise ValueError(f"the log-probability of {piece!r} must be a finite number <= 0, got {logp!r}")
