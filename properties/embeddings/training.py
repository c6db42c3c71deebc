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
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass

import torch
from hypothesis import given
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
    :data:`RARE_WORDS` in one-word sentences, and ``min_count=2`` keeps exactly the words seen twice or more."""
    corpus = group_corpus(corpus_seed)
    sentences = corpus.sentences + [[word] for word in RARE_WORDS]  # one-word sentences: no pairs, only counts
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
        near = min(cosine(vector(word), vector(w)) for w in corpus.groups[g])
        far = max(cosine(vector(word), vector(w)) for w in corpus.groups[1 - g])
        assert near - far >= MARGIN, (
            f"unseen {word!r}: cosine at least {near:.3f} to its stem's words {corpus.groups[g]}, at most "
            f"{far:.3f} to the other group's {corpus.groups[1 - g]}; the gap {near - far:.3f} is below {MARGIN}")
    within, across = group_gap(vector, corpus.groups)
    assert within - across >= MARGIN, (
        f"seen words {corpus.groups}: within {within:.3f}, across {across:.3f}, gap {within - across:.3f} "
        f"below {MARGIN}")


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
