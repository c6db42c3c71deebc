"""Properties of FastText: character n-grams with boundary markers and a word's vector from
its n-grams (``spec/embeddings/fasttext.md``).

Expected n-grams are written out here (every substring of ``"<" + word + ">"`` of length
``min_n`` to ``max_n``) and compared as multisets, since implementations list them in
different orders; the documents' own lists are typed in. Implementations are called
through ``ctx.char_ngrams``. The composition of a word's vector is checked with
``needs=()`` on the reference's three readings and, where it is installed, on gensim.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.protocol import NotApplicable
from specformer.reference.embeddings.fasttext import compose

from . import strategies as sf

NEEDS = ("char_ngrams",)
F64 = torch.float64

#: The documents' trigrams: 000 ("FastText") for "apple", 002 ("FastText: Subword Embeddings") for "where".
DOCUMENTED = {
    "apple": ["<ap", "app", "ppl", "ple", "le>"],
    "where": ["<wh", "whe", "her", "ere", "re>"],
}


def ngrams_written_out(word: str, min_n: int, max_n: int) -> list[str]:
    """Every substring of ``"<" + word + ">"`` with ``min_n <= length <= max_n``."""
    marked = "<" + word + ">"
    return [marked[i:i + n] for n in range(min_n, max_n + 1) for i in range(len(marked) - n + 1)]


def _show(counter: Counter[str]) -> str:
    return ", ".join(f"{g!r} x{k}" if k > 1 else repr(g) for g, k in sorted(counter.items()))


@claim_property("fasttext.ngrams", needs=NEEDS, dtypes=("float64",))
@given(word=sf.words(), min_n=st.integers(1, 4), extra=st.integers(0, 3))
@example(word="where", min_n=3, extra=0)
@example(word="where", min_n=3, extra=3)
@example(word="banana", min_n=3, extra=0)
def the_ngrams_are_the_substrings_of_the_marked_word(ctx: Context, word, min_n, extra) -> None:
    """The n-grams of ``word`` are the substrings of ``<word>`` of every length from ``min_n`` to ``max_n``,
    repeats kept (a bag: "banana" has "ana" twice), prefixes with ``<`` and suffixes with ``>``."""
    max_n = min_n + extra
    got, expected = Counter(ctx.char_ngrams(word, min_n, max_n)), Counter(ngrams_written_out(word, min_n, max_n))
    assert got == expected, (
        f"n-grams of {word!r} ({min_n}..{max_n}): missing {_show(expected - got) or 'none'}; "
        f"unexpected {_show(got - expected) or 'none'}"
    )


@claim_property("fasttext.ngrams", needs=NEEDS, dtypes=("float64",), max_examples=2)
@given(word=st.sampled_from(sorted(DOCUMENTED)))
@example(word="apple")
@example(word="where")
def the_documents_trigrams_of_apple_and_where(ctx: Context, word) -> None:
    """000's trigrams of "apple" and 002's of "where", as the documents list them."""
    got = ctx.char_ngrams(word, 3, 3)
    assert Counter(got) == Counter(DOCUMENTED[word]), (
        f"trigrams of {word!r}: {got}, the documents list {DOCUMENTED[word]}"
    )


# --- a word's vector from its n-grams ---------------------------------------------------------


@st.composite
def composition_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor]:
    """A word vector ``(d,)`` and its ``n`` n-gram vectors ``(n, d)``, ``n`` from 1 to 8."""
    n, dim = draw(st.integers(1, 8)), draw(st.integers(1, 6))
    return draw(sf.tensors((dim,))), draw(sf.tensors((n, dim)))


def parallel(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether ``a`` and ``b`` point the same way (``|a| |b| - a . b`` at rounding level)."""
    return float(a.norm() * b.norm() - a @ b) <= 1e-9 * float(a.norm() * b.norm() + 1)


@claim_property("fasttext.composition", needs=(), dtypes=("float64",))
@given(case=composition_cases())
@example(case=(torch.tensor([1.0, 0.0], dtype=F64), torch.tensor([[0.0, 1.0], [0.0, 3.0]], dtype=F64)))
def the_three_readings_agree_on_direction_only_for_unseen_words(ctx: Context, case) -> None:
    """For an unseen word (n-grams only) the sum (000, the paper) is ``n`` times the mean (gensim, 002's
    code), so cosines agree; for a word with its own vector ``v`` the sum ``v + sum z`` and the average
    ``(v + sum z) / (n + 1)`` (002's prose, gensim) point the same way, 002's code ``v + mean z`` in general not."""
    v, z = case
    n = z.shape[0]
    total = z.sum(dim=0)  # (n, d) -> (d,)
    ctx.assert_close(compose(None, z, "sum"), total, "unseen word, sum")
    ctx.assert_close(compose(None, z, "mean"), total / n, "unseen word, mean")
    ctx.assert_close(compose(None, z, "word_plus_mean"), total / n, "unseen word, 002's code")
    ctx.assert_close(compose(v, z, "sum"), v + total, "seen word, sum")
    ctx.assert_close(compose(v, z, "mean"), (v + total) / (n + 1), "seen word, average with the word")
    ctx.assert_close(compose(v, z, "word_plus_mean"), v + total / n, "seen word, 002's code")
    if float((v + total).norm()) > 1e-6:
        assert parallel(compose(v, z, "sum"), compose(v, z, "mean")), "the sum and the average differ in direction"


#: How gensim builds a vector from n-gram vectors (the claim's finding: the mean, for an unseen word).
GENSIM_COMBINE = "mean"


def gensim_vectors(ngram_table: torch.Tensor, word: str, seen: bool) -> tuple[torch.Tensor, torch.Tensor] | None:
    """gensim's vector of ``word`` and the rows of its n-grams' buckets (``ngram_table`` holds one row per bucket).

    ``seen``: the word is in the vocabulary with vector 0 before ``adjust_vectors``; None without gensim.
    """
    try:
        import numpy as np
        from gensim.models.fasttext import FastTextKeyedVectors, ft_ngram_hashes
    except ImportError:
        return None
    buckets, dim = ngram_table.shape
    vectors = FastTextKeyedVectors(dim, 3, 6, buckets, dtype=np.float64)
    vectors.vectors_ngrams = ngram_table.numpy().copy()
    if seen:
        vectors.add_vectors([word], np.zeros((1, dim)))
        vectors.vectors_vocab = np.zeros((1, dim))
        vectors.recalc_char_ngram_buckets()
        vectors.adjust_vectors()
    rows = ngram_table[ft_ngram_hashes(word, 3, 6, buckets)]  # (n, d)
    return torch.tensor(np.array(vectors.get_vector(word), dtype=np.float64)), rows


@claim_property("fasttext.composition", needs=(), dtypes=("float64",), max_examples=20)
@given(word=st.sampled_from(["where", "apple", "running", "xylophone", "naïve"]), seen=st.booleans(),
       table=sf.tensors((31, 3)))
def gensim_averages_the_ngram_vectors(ctx: Context, word, seen, table) -> None:
    """gensim 4.4 gives an unseen word the mean of its n-gram vectors (``get_vector``: sum, then divide by
    their number), and a seen one ``(v + sum z) / (n + 1)`` (``adjust_vectors``), ``v = 0`` here."""
    found = gensim_vectors(table, word, seen)
    if found is None:
        return
    vector, rows = found
    expected = compose(torch.zeros(3, dtype=F64) if seen else None, rows, GENSIM_COMBINE)
    ctx.assert_close(vector, expected, f"gensim's vector of {'seen' if seen else 'unseen'} {word!r}", scale=1e3)


# --- gensim's shipped fastText model ------------------------------------------------------------

#: The fastText model gensim's test data ships (trained by fastText on the Lee news corpus).
SHIPPED_MODEL = "lee_fasttext.bin"
#: Suffixes that make the inflected pairs ``(w, w + suffix)``; both words in the vocabulary.
SUFFIXES = ("s", "ing", "ed")
#: The share of pairs that must beat their unrelated words (chance is about one half).
MAJORITY = 0.75


@lru_cache(maxsize=1)
def shipped_fasttext() -> Any:
    """gensim's ``FastTextKeyedVectors`` of :data:`SHIPPED_MODEL`; ``NotApplicable`` without gensim."""
    try:
        import gensim
        from gensim.models.fasttext import load_facebook_vectors
    except ImportError:
        raise NotApplicable("gensim is not installed: its shipped fastText model is not available") from None
    return load_facebook_vectors(str(Path(gensim.__file__).parent / "test" / "test_data" / SHIPPED_MODEL))


def vectors_of(model: Any, words: list[str]) -> torch.Tensor:
    """``(len(words), d)`` float64 unit vectors of ``words`` (unseen ones built from their n-grams)."""
    rows = torch.tensor(np.array([model.get_vector(w) for w in words], dtype=np.float64))  # (n, d)
    return rows / rows.norm(dim=-1, keepdim=True)


def beats_unrelated(model: Any, pairs: list[tuple[str, str]], words: list[str]) -> tuple[int, list[str]]:
    """How many pairs ``(a, b)`` have ``cos(a, b)`` above the mean cosine of ``a`` with every word of
    ``words`` that shares no n-gram with ``a``; and the pairs that do not, as text."""
    grams = [set(ngrams_written_out(w, 3, 6)) for w in words]
    unit = vectors_of(model, words)  # (V, d)
    wins, losers = 0, []
    for a, b in pairs:
        own = set(ngrams_written_out(a, 3, 6))
        unrelated = torch.tensor([not (own & g) for g in grams])  # (V,)
        va, vb = vectors_of(model, [a, b])
        baseline = float((unit[unrelated] @ va).mean())
        if float(va @ vb) > baseline:
            wins += 1
        else:
            losers.append(f"{a}/{b}: {float(va @ vb):.3f} <= {baseline:.3f}")
    return wins, losers


@claim_property("fasttext.morphology", needs=(), dtypes=("float64",), max_examples=1)
@given(st.just(None))
def on_gensims_shipped_model_words_sharing_ngrams_are_closer_than_unrelated_words(ctx: Context, _) -> None:
    """On gensim's shipped fastText model, at least 3/4 of the inflected pairs ``(w, w + s|ing|ed)`` of its
    vocabulary, and of the misspellings made by dropping the fourth letter of its words of 7 letters or
    more (unseen, built from their n-grams), are closer to their word than the word's unrelated
    vocabulary (no shared n-gram) is on average."""
    model = shipped_fasttext()
    vocabulary = set(model.key_to_index)
    words = [w for w in model.index_to_key if w.isalpha()]
    inflected = [(w, w + s) for w in words for s in SUFFIXES if len(w) >= 3 and w + s in vocabulary]
    wins, losers = beats_unrelated(model, inflected, words)
    assert len(inflected) >= 100, f"only {len(inflected)} inflected pairs in the shipped vocabulary"
    assert wins >= MAJORITY * len(inflected), (
        f"{wins} of {len(inflected)} inflected pairs beat the unrelated words; e.g. {losers[:5]}"
    )
    unseen = [(w[:3] + w[4:], w) for w in words if len(w) >= 7 and w[:3] + w[4:] not in vocabulary]
    assert all(float(torch.tensor(model.get_vector(m)).norm()) > 0 for m, _ in unseen), "an unseen word got 0"
    wins, losers = beats_unrelated(model, unseen, words)
    assert wins >= MAJORITY * len(unseen), f"{wins} of {len(unseen)} misspellings beat the unrelated words; {losers[:5]}"
