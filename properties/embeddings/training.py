"""What training produces: word2vec's and FastText's skip-gram with negative sampling, trained by the
implementation on small synthetic corpora (claims of ``spec/embeddings/word2vec.md``, ``fasttext.md`` and
the analogy claim of ``similarity.md``).

The corpora are the harness's own, built from drawn seeds so that each claim has a clear
expected outcome: two groups of words, each group's words seen only between two of the
group's own context words (``context word context``), never in the other group's contexts.
Words are built from disjoint letters: each group's words share a stem (consonants and
vowels no other group uses) and differ by a two-digit suffix, and the context words use
letters of their own. The groups, and hence what must end close, come from the corpus, never
from the implementation. Implementations train through ``ctx.train_skipgram`` and
``ctx.train_fasttext`` with a small budget (16 dimensions, window 2, 5 noise words,
:data:`EPOCHS` epochs, 600 tokens), a second or less per example for the reference, gensim and
fastText; the margins in :data:`MARGIN` are far inside what they reach (see the spec).

The analogy corpus (:func:`grid_corpus`) is a grid instead: each word has a row and a column, and is
seen between one context word of its row and one of its column, so that ``b - a + c`` for
``a = (r, c)``, ``b = (r', c)``, ``c = (r, c')`` points at ``(r', c')``, as king - man + woman is meant to
point at queen. The harness ranks the trained vectors itself (3CosAdd in float64); the
implementation only trains.

Four more properties pin what the margins alone cannot: that a trainer draws everything random
from its seed (one seed twice gives the same vectors, two seeds or two numbers of noise words
different ones; short trainings), that its window decides which words count as contexts
(:func:`window_corpus`: a group's context words stand at distance 2 only, so the groups separate at
window 2 and not at window 1), and that FastText composes words from the n-gram lengths it is given,
with the boundary markers, keeping words seen fewer than five times (:func:`ngram_corpus`, bigrams
only). One more starts a short skip-gram training from input vectors it gives (the optional keyword
``initial``) and asks for vectors near them: the input vectors barely move while the output vectors,
which start at zero, are still small, so a trainer that returns its output vectors is caught
(:func:`start_corpus`). The rest of the update rule (skip-gram's step, not CBOW's, and FastText's own
row) is checked in :mod:`.update_rule`.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property

#: Consonants and vowels of each group's stem, and of each group's context words: no letter is shared.
STEM_LETTERS = (("bcdfg", "ae"), ("hjklm", "io"))
CONTEXT_LETTERS = (("npqr", "u"), ("stvw", "y"))
#: Seen words per group, context words per group, sentences per group.
WORDS, CONTEXTS, SENTENCES = 3, 4, 100
#: The training budget every implementation gets.
DIM, WINDOW, NEGATIVE, EPOCHS = 16, 2, 5, 20
#: How far (in cosine) the nearest pair across groups must stay below the farthest pair within one.
MARGIN = 0.2
#: Words in one-word sentences (no context, so no effect on training): seen once, once, and twice.
RARE_WORDS = ("zx", "xz", "zz", "zz")
#: A word seen twice in one sentence (``min_count`` counts occurrences, not the sentences a word is in).
REPEATED_WORD = "xx"
#: The analogy grid: rows, columns, context words per row and per column, sentences per word.
ROWS, COLUMNS, GRID_CONTEXTS, GRID_SENTENCES = 3, 3, 3, 30
#: How far (in cosine to ``b - a + c``) the right answer must lead the best other word of the vocabulary.
ANALOGY_MARGIN = 0.05


@dataclass(frozen=True)
class GroupCorpus:
    """Two groups of words sharing contexts within a group only, and one unseen word per group."""

    groups: tuple[tuple[str, ...], tuple[str, ...]]  # the seen words of each group
    unseen: tuple[str, str]  # per group: its stem with a suffix no sentence has
    sentences: list[list[str]]


def _syllables(rng: random.Random, consonants: str, vowels: str, n: int) -> str:
    return "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(n))


def group_corpus(seed: int) -> GroupCorpus:
    """The corpus of ``seed``: per group a 4-letter stem with :data:`WORDS` + 1 distinct two-digit suffixes
    (the last one never in a sentence), :data:`CONTEXTS` context words, and :data:`SENTENCES` sentences
    ``[context, word, context]`` drawn within the group."""
    rng = random.Random(seed)
    groups, unseen, contexts = [], [], []
    for g in range(2):
        stem = _syllables(rng, *STEM_LETTERS[g], 2)
        suffixes = rng.sample([f"{i:02d}" for i in range(100)], WORDS + 1)
        groups.append(tuple(stem + s for s in suffixes[:WORDS]))
        unseen.append(stem + suffixes[WORDS])
        own: set[str] = set()
        while len(own) < CONTEXTS:
            own.add(_syllables(rng, *CONTEXT_LETTERS[g], 2))
        contexts.append(sorted(own))
    sentences = [[rng.choice(contexts[g]), rng.choice(groups[g]), rng.choice(contexts[g])]
                 for _ in range(SENTENCES) for g in range(2)]
    return GroupCorpus((groups[0], groups[1]), (unseen[0], unseen[1]), sentences)


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """``a . b / (|a| |b|)`` in float64; a zero vector has no direction (an AssertionError)."""
    na, nb = float(a.norm()), float(b.norm())
    assert na > 0 and nb > 0, "a trained vector is zero: it has no direction"
    return float(a @ b) / (na * nb)


def group_gap(vector, groups: tuple[tuple[str, ...], tuple[str, ...]]) -> tuple[float, float]:
    """(the smallest cosine within a group, the largest across the groups) of ``vector(word)``."""
    within = [cosine(vector(a), vector(b)) for group in groups for i, a in enumerate(group) for b in group[i + 1:]]
    across = [cosine(vector(a), vector(b)) for a in groups[0] for b in groups[1]]
    return min(within), max(across)


def word_gap(vector, word: str, groups: tuple[tuple[str, ...], tuple[str, ...]], g: int) -> tuple[float, float]:
    """(the smallest cosine of ``vector(word)`` to group ``g``'s words, the largest to the other group's)."""
    near = min(cosine(vector(word), vector(w)) for w in groups[g])
    far = max(cosine(vector(word), vector(w)) for w in groups[1 - g])
    return near, far


def assert_groups_apart(vector, groups: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
    """The seen words of each group are closer to each other than to the other group's, by :data:`MARGIN`."""
    within, across = group_gap(vector, groups)
    assert within - across >= MARGIN, (
        f"seen words {groups}: within {within:.3f}, across {across:.3f}, gap {within - across:.3f} "
        f"below {MARGIN}")


def assert_the_vocabulary(words: list[str], sentences: list[list[str]], min_count: int) -> None:
    """The trained vocabulary is the corpus's words seen ``min_count`` times or more, each listed once."""
    counts = Counter(w for sentence in sentences for w in sentence)
    expected = {w for w, n in counts.items() if n >= min_count}
    assert set(words) == expected and len(words) == len(expected), (
        f"with min_count={min_count} the vocabulary is the {len(expected)} words seen {min_count} times or more, "
        f"once each; got {len(words)}, missing {sorted(expected - set(words))[:5]}, "
        f"extra {sorted(set(words) - expected)[:5]}")


@claim_property("word2vec.similar-contexts", needs=("train_skipgram",), dtypes=("float32",), max_examples=8)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 1))
def words_trained_in_the_same_contexts_end_closer_than_words_of_other_contexts(ctx: Context, corpus_seed,
                                                                              seed) -> None:
    """Skip-gram with negative sampling, trained by the implementation on a corpus where the words of a group
    share their contexts and never meet the other group's: every two words of one group are closer (cosine)
    than any word of one group to any of the other, by at least :data:`MARGIN`. The corpus also has
    :data:`RARE_WORDS` in one-word sentences and :data:`REPEATED_WORD` twice in one sentence, and
    ``min_count=2`` keeps exactly the words seen twice or more (occurrences, not sentences)."""
    corpus = group_corpus(corpus_seed)
    sentences = corpus.sentences + [[word] for word in RARE_WORDS]  # one-word sentences: no pairs, only counts
    sentences.append([REPEATED_WORD, REPEATED_WORD])  # twice in one sentence: kept at min_count=2
    words, vectors = ctx.train_skipgram(sentences, DIM, WINDOW, NEGATIVE, EPOCHS, seed, min_count=2)
    assert_the_vocabulary(words, sentences, 2)
    index = {w: i for i, w in enumerate(words)}
    within, across = group_gap(lambda w: vectors[index[w]], corpus.groups)
    assert within - across >= MARGIN, (
        f"groups {corpus.groups}: the farthest pair within a group has cosine {within:.3f}, the nearest pair "
        f"across groups {across:.3f}; the gap {within - across:.3f} is below {MARGIN}")


@claim_property("fasttext.morphology", needs=("train_fasttext",), dtypes=("float32",), max_examples=8)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 1))
def an_unseen_word_trains_closer_to_the_words_whose_ngrams_it_shares(ctx: Context, corpus_seed, seed) -> None:
    """FastText trained by the implementation gives a word it never saw, whose n-grams are those of one group's
    stem, a vector closer (cosine) to every word of that group than to any word of the other group, by at
    least :data:`MARGIN`; the seen words keep the similar-contexts gap too."""
    corpus = group_corpus(corpus_seed)
    queries = [*corpus.groups[0], *corpus.groups[1], *corpus.unseen]
    vectors = ctx.train_fasttext(corpus.sentences, queries, DIM, WINDOW, NEGATIVE, EPOCHS, seed, 3, 6)
    index = {w: i for i, w in enumerate(queries)}

    def vector(word: str) -> torch.Tensor:
        return vectors[index[word]]

    for g, word in enumerate(corpus.unseen):
        near, far = word_gap(vector, word, corpus.groups, g)
        assert near - far >= MARGIN, (
            f"unseen {word!r}: cosine at least {near:.3f} to its stem's words {corpus.groups[g]}, at most "
            f"{far:.3f} to the other group's {corpus.groups[1 - g]}; the gap {near - far:.3f} is below {MARGIN}")
    assert_groups_apart(vector, corpus.groups)


@dataclass(frozen=True)
class GridCorpus:
    """Words on a grid of rows and columns, each seen between a context word of its row and one of its column."""

    words: dict[tuple[int, int], str]  # (row, column) -> word
    sentences: list[list[str]]


def grid_corpus(seed: int) -> GridCorpus:
    """The analogy corpus of ``seed``: :data:`ROWS` x :data:`COLUMNS` words (a row syllable pair followed by a
    column syllable pair), :data:`GRID_CONTEXTS` context words per row and per column, and
    :data:`GRID_SENTENCES` sentences per word, ``[row context, word, column context]`` in either order."""
    rng = random.Random(seed)

    def distinct(consonants: str, vowels: str, n: int) -> list[str]:
        out: list[str] = []
        while len(out) < n:
            s = _syllables(rng, consonants, vowels, 2)
            if s not in out:
                out.append(s)
        return out

    row_stems, column_stems = distinct(*STEM_LETTERS[0], ROWS), distinct(*STEM_LETTERS[1], COLUMNS)
    contexts = distinct(*CONTEXT_LETTERS[0], ROWS * GRID_CONTEXTS), distinct(*CONTEXT_LETTERS[1],
                                                                              COLUMNS * GRID_CONTEXTS)
    words = {(r, c): row_stems[r] + column_stems[c] for r in range(ROWS) for c in range(COLUMNS)}
    sentences = []
    for (r, c), word in words.items():
        for _ in range(GRID_SENTENCES):
            left = rng.choice(contexts[0][r * GRID_CONTEXTS:(r + 1) * GRID_CONTEXTS])
            right = rng.choice(contexts[1][c * GRID_CONTEXTS:(c + 1) * GRID_CONTEXTS])
            sentences.append([left, word, right] if rng.random() < 0.5 else [right, word, left])
    rng.shuffle(sentences)
    return GridCorpus(words, sentences)


@claim_property("similarity.analogy", needs=("train_skipgram",), dtypes=("float32",), max_examples=6)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 1))
def analogies_emerge_when_the_implementation_trains_on_a_grid_of_contexts(ctx: Context, corpus_seed,
                                                                           seed) -> None:
    """Skip-gram with negative sampling, trained by the implementation on :func:`grid_corpus`: for every question
    ``a : b :: c : d`` of the grid (``a = (r, c)``, ``b = (r', c)``, ``c = (r, c')``, ``d = (r', c')``), 3CosAdd
    over the whole trained vocabulary with ``a``, ``b``, ``c`` excluded answers ``d``, ahead of every other word
    by at least :data:`ANALOGY_MARGIN` in cosine."""
    corpus = grid_corpus(corpus_seed)
    words, vectors = ctx.train_skipgram(corpus.sentences, DIM, WINDOW, NEGATIVE, EPOCHS, seed, min_count=1)
    assert_the_vocabulary(words, corpus.sentences, 1)
    table = vectors.detach().to("cpu", torch.float64)  # (V, d)
    norms = table.norm(dim=1, keepdim=True)  # (V, 1)
    zero = [words[i] for i in range(len(words)) if not float(norms[i]) > 0]
    assert not zero, f"trained vectors of {zero[:5]} are zero: they have no direction"
    unit = table / norms  # (V, d)
    index = {w: i for i, w in enumerate(words)}
    for (r, r2), (c, c2) in itertools.product(itertools.permutations(range(ROWS), 2),
                                              itertools.permutations(range(COLUMNS), 2)):
        a, b, c_word, d = (corpus.words[r, c], corpus.words[r2, c], corpus.words[r, c2], corpus.words[r2, c2])
        query = unit[index[b]] - unit[index[a]] + unit[index[c_word]]  # (d,)
        scores = unit @ query / query.norm()  # (V,)
        scores[[index[a], index[b], index[c_word]]] = -torch.inf
        answer = float(scores[index[d]])
        scores[index[d]] = -torch.inf
        rival = int(scores.argmax())
        assert answer - float(scores[rival]) >= ANALOGY_MARGIN, (
            f"{a} : {b} :: {c_word} : ?  answers {words[rival]!r} (cosine {float(scores[rival]):.3f}) against "
            f"{d!r} ({answer:.3f}); the grid's answer must lead by {ANALOGY_MARGIN}")


# --------------------------------------------------------------------------- seeds, windows, n-gram ranges

#: Sentences per group and epochs of the seed properties: the vectors only need to move, not to converge.
SEED_SENTENCES, SEED_EPOCHS = 20, 2
#: Two trainings with one seed agree to this (one thread: bit-identical in the reference, gensim and fastText);
#: two seeds (or two numbers of noise words) differ somewhere by more than :data:`DIFFERENT`.
SAME, DIFFERENT = 1e-6, 1e-3
#: The window corpus: sentences per group, and the filler words every group's sentences share.
WINDOW_SENTENCES, FILLERS = 60, ("fa0", "fa1", "fa2", "fa3")
#: The gap (farthest pair within a group minus nearest pair across) the window property asks for at window 2; at
#: window 1 it must stay below half of it. Over 40 corpus seeds gensim's smallest gap at window 2 is 0.26 and its
#: largest at window 1 -0.01 (the reference's: 0.42 and -0.11 over 6 seeds).
WINDOW_MARGIN = 0.1


def _by_word(words: list[str], vectors: torch.Tensor) -> dict[str, torch.Tensor]:
    return {w: vectors[i] for i, w in enumerate(words)}


def _largest_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """The largest entry of ``|a[w] - b[w]|`` over the words of ``a`` (which ``b`` must list too)."""
    missing = sorted(set(a) - set(b))
    assert not missing, f"two trainings on one corpus gave different vocabularies: {missing[:5]} missing from one"
    return max(float((a[w] - b[w]).abs().max()) for w in a)


@claim_property("word2vec.similar-contexts", needs=("train_skipgram",), dtypes=("float32",), max_examples=2)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 2))
def training_is_drawn_from_its_seed_and_uses_its_noise_words(ctx: Context, corpus_seed, seed) -> None:
    """``train_skipgram`` draws everything random from ``seed`` (the protocol's contract): trained twice with one
    seed, one thread, the vectors agree to :data:`SAME`; trained with ``seed + 1``, or with one noise word per
    pair fewer (001, "Negative Sampling": ``k`` noise words enter each pair's loss), they differ by more than
    :data:`DIFFERENT` somewhere. A short training (:data:`SEED_EPOCHS` epochs) on part of :func:`group_corpus`."""
    sentences = group_corpus(corpus_seed).sentences[:2 * SEED_SENTENCES]
    first = _by_word(*ctx.train_skipgram(sentences, DIM, WINDOW, NEGATIVE, SEED_EPOCHS, seed))
    again = _by_word(*ctx.train_skipgram(sentences, DIM, WINDOW, NEGATIVE, SEED_EPOCHS, seed))
    gap = _largest_difference(first, again)
    assert gap <= SAME, f"two trainings with seed {seed} differ by {gap:.3g} (one thread: at most {SAME})"
    other = _by_word(*ctx.train_skipgram(sentences, DIM, WINDOW, NEGATIVE, SEED_EPOCHS, seed + 1))
    gap = _largest_difference(first, other)
    assert gap > DIFFERENT, f"seeds {seed} and {seed + 1} give the same vectors (they differ by {gap:.3g})"
    fewer = _by_word(*ctx.train_skipgram(sentences, DIM, WINDOW, NEGATIVE - 1, SEED_EPOCHS, seed))
    gap = _largest_difference(first, fewer)
    assert gap > DIFFERENT, (f"{NEGATIVE} and {NEGATIVE - 1} noise words per pair give the same vectors (they differ "
                             f"by {gap:.3g}): the trainer does not draw noise words")


@claim_property("fasttext.morphology", needs=("train_fasttext",), dtypes=("float32",), max_examples=2)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 2))
def fasttext_training_is_drawn_from_its_seed(ctx: Context, corpus_seed, seed) -> None:
    """``train_fasttext`` draws everything random from ``seed``: trained twice with one seed, one thread, the
    vectors of the corpus's words agree to :data:`SAME`; trained with ``seed + 1`` they differ by more than
    :data:`DIFFERENT` somewhere. A short training on part of :func:`group_corpus`."""
    corpus = group_corpus(corpus_seed)
    sentences = corpus.sentences[:2 * SEED_SENTENCES]
    queries = sorted({w for sentence in sentences for w in sentence})

    def train(s: int) -> dict[str, torch.Tensor]:
        return _by_word(queries, ctx.train_fasttext(sentences, queries, DIM, WINDOW, NEGATIVE, SEED_EPOCHS, s))

    first = train(seed)
    gap = _largest_difference(first, train(seed))
    assert gap <= SAME, f"two trainings with seed {seed} differ by {gap:.3g} (one thread: at most {SAME})"
    gap = _largest_difference(first, train(seed + 1))
    assert gap > DIFFERENT, f"seeds {seed} and {seed + 1} give the same vectors (they differ by {gap:.3g})"


def window_corpus(seed: int) -> GroupCorpus:
    """Two groups as in :func:`group_corpus`, but each sentence ``[context, filler, word, filler, context]``: a
    group's words meet their group's context words at distance 2 only, and at distance 1 the
    :data:`FILLERS`, which every group shares. :data:`WINDOW_SENTENCES` sentences per group."""
    rng = random.Random(seed)
    base = group_corpus(seed)
    contexts = [sorted({s[0] for s in base.sentences if s[1] in base.groups[g]}
                       | {s[2] for s in base.sentences if s[1] in base.groups[g]}) for g in range(2)]
    sentences = [[rng.choice(contexts[g]), rng.choice(FILLERS), rng.choice(base.groups[g]), rng.choice(FILLERS),
                  rng.choice(contexts[g])] for _ in range(WINDOW_SENTENCES) for g in range(2)]
    return GroupCorpus(base.groups, base.unseen, sentences)


@claim_property("word2vec.similar-contexts", needs=("train_skipgram",), dtypes=("float32",), max_examples=2)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 1))
def the_window_decides_which_contexts_make_words_similar(ctx: Context, corpus_seed, seed) -> None:
    """Skip-gram's contexts are the words at most ``window`` positions away (001, "Skip-Gram and CBOW"). On
    :func:`window_corpus` a group's words share context words at distance 2 and nothing else: trained with
    window 2 the groups stand apart by :data:`WINDOW_MARGIN` (farthest pair within a group against nearest pair
    across, as in the similar-contexts property), trained with window 1 the words see only the shared fillers,
    and the gap stays below ``WINDOW_MARGIN / 2``. (A window shrunk at random per centre word, gensim's and
    word2vec's, reaches distance 2 for half of the centre words, hence the smaller margin.)"""
    corpus = window_corpus(corpus_seed)
    gaps = {}
    for window in (2, 1):
        words, vectors = ctx.train_skipgram(corpus.sentences, DIM, window, NEGATIVE, EPOCHS, seed)
        assert_the_vocabulary(words, corpus.sentences, 1)
        index = {w: i for i, w in enumerate(words)}
        within, across = group_gap(lambda w: vectors[index[w]], corpus.groups)
        gaps[window] = within - across
    assert gaps[2] >= WINDOW_MARGIN, (
        f"groups {corpus.groups} meet their contexts at distance 2: at window 2 the gap (farthest pair within a "
        f"group minus nearest pair across) is {gaps[2]:.3f}, below {WINDOW_MARGIN}")
    assert gaps[1] < WINDOW_MARGIN / 2, (
        f"groups {corpus.groups} meet their contexts only at distance 2, yet at window 1 the gap is {gaps[1]:.3f}, "
        f"not below {WINDOW_MARGIN / 2}: the trainer looks farther than its window")


#: The n-gram corpus: each group's words are strings of its own three letters, the rare words of two more letters
#: and a vowel each; the n-grams are the bigrams alone (``min_n = max_n = 2``).
NGRAM_LETTERS, RARE_LETTERS, NGRAM_RANGE = ("bda", "hjo"), ("cfe", "kmi"), (2, 2)
#: Letters per word, sentences per group, and how often each group's rare word is seen.
NGRAM_WORD_LENGTH, NGRAM_SENTENCES, RARE_SEEN = 5, 60, 2


@dataclass(frozen=True)
class NgramCorpus:
    """Two groups of words of their own letters, seen between their group's context words, and per group: an
    unseen word made of the group's bigrams but none of its trigrams, a one-letter word whose marked bigrams
    ``<x`` and ``x>`` the group's words have, and a rare word seen :data:`RARE_SEEN` times in the group's contexts."""

    groups: tuple[tuple[str, ...], tuple[str, ...]]
    unseen: tuple[str, str]
    letters: tuple[str, str]
    rare: tuple[str, str]
    sentences: list[list[str]]


def _marked_grams(word: str, n: int) -> set[str]:
    marked = f"<{word}>"
    return {marked[i:i + n] for i in range(len(marked) - n + 1)}


def ngram_corpus(seed: int) -> NgramCorpus:
    """The corpus of ``seed`` (see :class:`NgramCorpus`); a group's words are redrawn until the group has its unseen
    and its one-letter word. The context words are those of :func:`group_corpus`."""
    rng = random.Random(seed)
    base = group_corpus(seed)
    contexts = [sorted({s[0] for s in base.sentences if s[1] in base.groups[g]}) for g in range(2)]
    groups, unseen, letters, rare = [], [], [], []
    for g in range(2):
        alphabet = NGRAM_LETTERS[g]
        while True:
            words = sorted({"".join(rng.choice(alphabet) for _ in range(NGRAM_WORD_LENGTH)) for _ in range(WORDS)})
            bigrams = set().union(*(_marked_grams(w, 2) for w in words))
            trigrams = set().union(*(_marked_grams(w, 3) for w in words))
            ones = [x for x in alphabet if f"<{x}" in bigrams and f"{x}>" in bigrams]
            candidates = ("".join(rng.choice(alphabet) for _ in range(NGRAM_WORD_LENGTH)) for _ in range(200))
            found = [u for u in candidates if _marked_grams(u, 2) <= bigrams and not _marked_grams(u, 3) & trigrams]
            if len(words) == WORDS and ones and found:
                break
        groups.append(tuple(words))
        unseen.append(found[0])
        letters.append(ones[0])
        rare.append("".join(rng.choice(RARE_LETTERS[g]) for _ in range(4)))
    sentences = [[rng.choice(contexts[g]), rng.choice(groups[g]), rng.choice(contexts[g])]
                 for _ in range(NGRAM_SENTENCES) for g in range(2)]
    sentences += [[rng.choice(contexts[g]), rare[g], rng.choice(contexts[g])] for _ in range(RARE_SEEN) for g in range(2)]
    rng.shuffle(sentences)
    return NgramCorpus((groups[0], groups[1]), (unseen[0], unseen[1]), (letters[0], letters[1]), (rare[0], rare[1]),
                       sentences)


@claim_property("fasttext.morphology", needs=("train_fasttext",), dtypes=("float32",), max_examples=3)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 1))
def fasttext_composes_words_from_the_ngram_lengths_it_is_given(ctx: Context, corpus_seed, seed) -> None:
    """FastText trained with ``min_n = max_n = 2`` on :func:`ngram_corpus` (fasttext.md: a word's n-grams are the
    substrings of ``<word>`` of ``min_n`` to ``max_n`` characters, and an unseen word's vector is composed from
    them): per group, a word never seen that shares the group's bigrams but none of its trigrams, a one-letter
    word ``x`` whose only bigrams are the markers' ``<x`` and ``x>``, and a word seen only :data:`RARE_SEEN`
    times (``min_count`` is 1) are each closer (cosine) to every word of their group than to any word of the
    other, by :data:`MARGIN`; the seen words keep the similar-contexts gap."""
    corpus = ngram_corpus(corpus_seed)
    queries = [*corpus.groups[0], *corpus.groups[1], *corpus.unseen, *corpus.letters, *corpus.rare]
    vectors = ctx.train_fasttext(corpus.sentences, queries, DIM, WINDOW, NEGATIVE, EPOCHS, seed, *NGRAM_RANGE)
    index = {w: i for i, w in enumerate(queries)}

    def vector(word: str) -> torch.Tensor:
        return vectors[index[word]]

    for what, words in (("unseen word of the group's bigrams", corpus.unseen),
                        ("one-letter word of the markers' bigrams", corpus.letters),
                        (f"word seen {RARE_SEEN} times", corpus.rare)):
        for g, word in enumerate(words):
            near, far = word_gap(vector, word, corpus.groups, g)
            assert near - far >= MARGIN, (
                f"{what} {word!r} at n-gram lengths {NGRAM_RANGE}: cosine at least {near:.3f} to its group "
                f"{corpus.groups[g]}, at most {far:.3f} to the other {corpus.groups[1 - g]}; the gap "
                f"{near - far:.3f} is below {MARGIN}")
    assert_groups_apart(vector, corpus.groups)


# --- words below a count threshold are left out ------------------------------------------------


@st.composite
def threshold_corpora(draw: st.DrawFn) -> tuple[list[list[str]], int]:
    """Sentences in which word ``w<k>`` appears ``k`` times (1 to 5), shuffled into sentences of 2 to 4 words, and a
    threshold ``min_count`` from 1 to 5."""
    counts = draw(st.lists(st.integers(1, 5), min_size=3, max_size=8), label="counts")
    words = [f"w{i}" for i, n in enumerate(counts) for _ in range(n)]
    words = draw(st.permutations(words), label="order")
    sizes, sentences, start = draw(st.lists(st.integers(2, 4), min_size=len(words), max_size=len(words))), [], 0
    for size in sizes:
        if start >= len(words):
            break
        sentences.append(list(words[start:start + size]))
        start += size
    return sentences, draw(st.integers(1, 5), label="min_count")


@claim_property("word2vec.min-count-threshold", needs=("train_skipgram",), dtypes=("float32",), max_examples=10)
@given(case=threshold_corpora(), seed=st.integers(0, 2**31 - 1))
@example(case=([["w0", "w1"], ["w1", "w2"], ["w2", "w2"]], 2), seed=0)
def words_seen_fewer_than_min_count_times_are_left_out(ctx: Context, case, seed) -> None:
    """The implementation's skip-gram trained with ``min_count`` keeps exactly the words seen ``min_count`` times
    or more, each once, with one vector each: the rarer words are left out of the vocabulary (word2vec's and
    gensim's rule; mapping them to an unknown token instead is the other practice 000 names, which a trainer
    returning only its vocabulary does not show). The corpus's own counts are computed here."""
    sentences, min_count = case
    counts = Counter(w for s in sentences for w in s)
    # inside train_skipgram's domain: some sentence keeps two words, so that there is a pair to train on
    while min_count > 1 and not any(sum(counts[w] >= min_count for w in s) >= 2 for s in sentences):
        min_count -= 1
    words, vectors = ctx.train_skipgram(sentences, 8, 2, 2, 1, seed, min_count=min_count)
    assert_the_vocabulary(words, sentences, min_count)
    assert tuple(vectors.shape) == (len(words), 8), f"{tuple(vectors.shape)} vectors for {len(words)} words"


# --- the vectors returned are the input vectors ----------------------------------------------------------

#: The start corpus: distinct words, sentences (each every word once, in a drawn order), noise words per pair; the
#: training is one epoch with window 2 and 16 dimensions.
START_WORDS, START_SENTENCES, START_NEGATIVE, START_EPOCHS = 8, 2, 1, 1
#: The largest ``|V - V_0| / |V_0|`` (Frobenius norms over the vocabulary) of the returned vectors ``V`` against
#: the initial input vectors ``V_0``. Measured over 100 drawn corpora, starts and seeds: the reference (rate 0.1)
#: reaches 0.024, gensim (0.025, decaying) 0.0013, the reference at rate 0.3 0.25 (at 0.4, 0.45), Adam at 0.01 with
#: one pair a step 0.17 (30 draws); the reference's output vectors are 0.99 or more away.
START_BOUND = 0.5


def start_corpus(seed: int) -> list[list[str]]:
    """:data:`START_SENTENCES` sentences of the same :data:`START_WORDS` distinct three-syllable words, each
    sentence the words in an order drawn from ``seed``."""
    rng = random.Random(seed)
    words: list[str] = []
    while len(words) < START_WORDS:
        word = _syllables(rng, "bcdfghjklmnpqrstvwz", "aeiou", 3)
        if word not in words:
            words.append(word)
    return [rng.sample(words, len(words)) for _ in range(START_SENTENCES)]


@claim_property("word2vec.similar-contexts", needs=("train_skipgram",), dtypes=("float32",), max_examples=4)
@given(corpus_seed=st.integers(0, 2**31 - 1), start_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 1))
def a_short_training_returns_vectors_near_the_input_vectors_it_started_from(ctx: Context, corpus_seed, start_seed,
                                                                             seed) -> None:
    """The vectors ``train_skipgram`` returns are the input vectors ``v`` (the similar-contexts claim's), not the
    output vectors ``v'``. Given by word (keyword ``initial``, entries uniform in ``[-1, 1]`` drawn from
    ``start_seed``), the input vectors start there and the output vectors at zero, as in word2vec's C code and
    gensim. 001's negative-sampling loss ``-log sigma(v'_O . v_I) - sum_k log sigma(-v'_k . v_I)`` has the
    gradient ``(sigma(v'_O . v_I) - 1) v'_O + sum_k sigma(v'_k . v_I) v'_k`` in ``v_I``: a sum of output vectors,
    zero at the start. The output vectors grow by the rate times input vectors, and the input vectors move only
    by the square of that: after one epoch over :func:`start_corpus` (one noise word per pair) they stay within
    :data:`START_BOUND` of where they started (relative, over the whole table), whatever the schedule, the order
    of the vocabulary or the rate (measured up to 0.3; word2vec and gensim take 0.025, fastText 0.05). The output
    vectors, small and made of other words' input vectors, are about as far from the start as the start is from
    zero. Not applicable to a trainer that does not take ``initial``."""
    sentences = start_corpus(corpus_seed)
    generator = torch.Generator().manual_seed(start_seed)
    vocabulary = sorted({w for sentence in sentences for w in sentence})
    start = torch.rand(len(vocabulary), DIM, generator=generator, dtype=torch.float64) * 2 - 1  # (V, d)
    initial = {w: start[i].tolist() for i, w in enumerate(vocabulary)}
    words, vectors = ctx.train_skipgram(sentences, DIM, WINDOW, START_NEGATIVE, START_EPOCHS, seed, min_count=1,
                                        initial=initial)
    assert_the_vocabulary(words, sentences, 1)
    started = torch.tensor([initial[w] for w in words], dtype=torch.float64)  # (V, d), in the returned order
    distance = float((vectors.to("cpu", torch.float64) - started).norm() / started.norm())
    assert distance <= START_BOUND, (
        f"after {START_EPOCHS} epoch on {len(sentences)} sentences of {START_WORDS} words the returned vectors are "
        f"{distance:.3f} (relative) from the input vectors training started from, more than {START_BOUND}: the "
        "input vectors' gradient is a sum of output vectors, which start at zero, so they barely move; output "
        "vectors (or vectors drawn anew) are about 1 away")
