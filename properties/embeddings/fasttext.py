"""Properties of FastText: character n-grams with boundary markers and a word's vector from
its n-grams (``spec/embeddings/fasttext.md``).

Expected n-grams are written out here (every substring of ``"<" + word + ">"`` of length
``min_n`` to ``max_n``) and compared as multisets, since implementations list them in
different orders; the documents' own lists are typed in. Implementations are called
through ``ctx.char_ngrams`` and ``ctx.fasttext_vector`` (a word's vector from given word
and n-gram tables, which must follow one of the documents' three readings). The readings
themselves, gensim's composition and gensim's shipped model are checked with ``needs=()``.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

import torch
from hypothesis import assume, example, given
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


@claim_property("fasttext.composition", needs=(), about="documents-code", dtypes=("float64",))
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


#: The compositions a FastText implementation may use (``fasttext_vector``), written out.
COMPOSITIONS = ("sum", "mean", "word_plus_mean")


def composed(own: torch.Tensor | None, z: torch.Tensor, how: str) -> torch.Tensor:
    """A word's vector from its own row ``own (d,)`` (None for an unseen word) and its n-gram rows ``z (n, d)``."""
    n, total = z.shape[0], z.sum(dim=0)  # (n, d) -> (d,)
    if how == "sum":
        return total if own is None else own + total
    if how == "mean":
        return total / n if own is None else (own + total) / (n + 1)
    return total / n if own is None else own + total / n  # word_plus_mean


#: Words whose n-grams repeat: "aaa" twice in "<aaaa>", "aba" and "bab" twice in "<ababab>", "ana" twice in
#: "banana", "ab" twice in "<abab>" (for ``min_n = 2``). A repeated n-gram counts once per occurrence.
REPEATING = ("aaaa", "aaaaaaa", "abab", "ababab", "banana")


def every_substring(word: str) -> list[str]:
    """Every substring of ``"<" + word + ">"`` of every length, each once: the n-grams of ``word`` for any
    ``min_n`` and ``max_n``."""
    return list(dict.fromkeys(ngrams_written_out(word, 1, len(word) + 2)))


@st.composite
def vocabulary_cases(draw: st.DrawFn, missing: bool = False) -> dict[str, Any]:
    """Words (lower-case ASCII, 1 to 7 letters, some with repeated n-grams), the known ones with rows ``(V, d)``,
    and an n-gram table ``(G, d)``: every substring of every word, of every length (so that n-grams shorter than
    ``min_n`` or longer than ``max_n`` have rows an implementation must not use), in a drawn order, plus one
    that belongs to no word. ``max_n`` is often below the marked word's length. With ``missing``, the table
    lacks a drawn, non-empty set of the words' ``min_n..max_n``-grams, each word keeping at least one."""
    min_n = draw(st.integers(2, 4), label="min_n")
    max_n = draw(st.integers(min_n, 6), label="max_n")
    word = st.one_of(st.sampled_from(REPEATING), st.text(st.sampled_from("abcdeinorstw"), min_size=1, max_size=7))
    word = word.filter(lambda w: len(ngrams_written_out(w, min_n, max_n)) > 0)
    queried = draw(st.lists(word, min_size=2, max_size=4, unique=True), label="words")
    known = draw(st.lists(st.sampled_from(queried), min_size=1, max_size=len(queried), unique=True), label="known")
    grams = sorted({g for w in queried for g in every_substring(w)}) + ["<zzz>"]
    if missing:
        used = sorted({g for w in queried for g in ngrams_written_out(w, min_n, max_n)})
        dropped = draw(st.sets(st.sampled_from(used), min_size=1), label="missing n-grams")
        for w in queried:  # every word keeps one of its n-grams
            own = ngrams_written_out(w, min_n, max_n)
            if all(g in dropped for g in own):
                dropped.discard(own[0])
        assume(dropped)
        grams = [g for g in grams if g not in dropped]
    grams = draw(st.permutations(grams), label="n-gram order")
    dim = draw(st.integers(1, 4), label="d")
    return {"queried": queried, "known": known, "grams": grams, "min_n": min_n, "max_n": max_n,
            "word_table": draw(sf.tables(len(known), dim)), "ngram_table": draw(sf.tables(len(grams), dim))}


def _fixed_case(queried: list[str], known: list[str], min_n: int, max_n: int, missing: tuple[str, ...] = ()
                ) -> dict[str, Any]:
    """An explicit vocabulary case with rows drawn from a seeded generator (no two rows, no two readings alike)."""
    grams = [g for g in sorted({g for w in queried for g in every_substring(w)}) if g not in missing] + ["<zzz>"]
    g = torch.Generator().manual_seed(len(grams))
    return {"queried": queried, "known": known, "grams": grams, "min_n": min_n, "max_n": max_n,
            "word_table": torch.randn(len(known), 2, generator=g, dtype=F64),
            "ngram_table": torch.randn(len(grams), 2, generator=g, dtype=F64)}


#: Explicit cases: repeated n-grams ("aaa" in "<aaaa>", "aba" and "bab" in "<ababab>") with ``max_n = 3``
#: below every marked word's length; and the same words with some of their 3-grams missing from the table.
REPEATS_CUT = _fixed_case(["aaaa", "ababab", "where"], ["where", "aaaa"], 3, 4)
MISSING_CUT = _fixed_case(["aaaa", "ababab", "where"], ["where", "aaaa"], 3, 4, missing=("aaa>", "bab", "her"))


def check_readings(ctx: Context, case: dict[str, Any]) -> None:
    """Each queried word's vector is its own row (if known) combined with the rows of those of its
    ``min_n..max_n``-grams that the table lists, one row per occurrence, by a declared reading, the same for
    every word."""
    known, grams, table, ngram_table = case["known"], case["grams"], case["word_table"], case["ngram_table"]
    consistent = set(ctx.choices("composition", COMPOSITIONS))  # the declared readings (all, if undeclared)
    tol = 8 * ctx.tol.rtol
    for word in case["queried"]:
        actual = ctx.fasttext_vector(word, known, table, grams, ngram_table, case["min_n"], case["max_n"])
        own = table[known.index(word)] if word in known else None
        listed = [g for g in ngrams_written_out(word, case["min_n"], case["max_n"]) if g in grams]  # repeats kept
        z = ngram_table[[grams.index(g) for g in listed]]  # (n, d)
        fits = {how for how in consistent
                if bool(((actual - composed(own, z, how)).abs() <= tol * (1 + composed(own, z, how).abs())).all())}
        assert fits, (f"the vector of {'known' if own is not None else 'unseen'} {word!r} ({z.shape[0]} n-grams of "
                      f"{case['min_n']}..{case['max_n']} in the table) is {actual.tolist()}: no reading gives it "
                      f"(sum {composed(own, z, 'sum').tolist()}, mean {composed(own, z, 'mean').tolist()}, "
                      f"word + mean {composed(own, z, 'word_plus_mean').tolist()})")
        consistent &= fits
        assert consistent, f"the words of one vocabulary are composed by different readings (last: {word!r}, {fits})"


@claim_property("fasttext.composition", needs=("fasttext_vector",))
@given(case=vocabulary_cases())
@example(case=REPEATS_CUT)
def the_implementation_composes_with_one_of_the_three_readings(ctx: Context, case) -> None:
    """The implementation's vector of a word is its own row (if it is known) combined with the rows of all
    its ``min_n..max_n``-grams by one of the documents' three readings, the same reading for every word: the
    sum (000, the paper), the average with the word (002's prose, fastText, gensim) or the word's row plus
    the n-grams' mean (002's code); an unseen word gets its n-grams' combination. A repeated n-gram counts
    once per occurrence ("aaa" twice in "<aaaa>"), and rows of n-grams shorter than ``min_n`` or longer than
    ``max_n``, which the table holds, are not used."""
    check_readings(ctx, case)


@claim_property("fasttext.composition", needs=("fasttext_vector",))
@given(case=vocabulary_cases(missing=True))
@example(case=MISSING_CUT)
def ngrams_missing_from_the_table_are_left_out(ctx: Context, case) -> None:
    """With a table that lacks some of a word's ``min_n..max_n``-grams, the implementation's vector is composed
    from the n-grams the table lists only (the protocol: the others are skipped): a mean divides by the number
    of listed occurrences, not by all of the word's n-grams, and no other row stands in for a missing one."""
    check_readings(ctx, case)


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


@claim_property("fasttext.composition", needs=(), about="library", dtypes=("float64",), max_examples=20)
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
    except ImportError as exc:
        from specformer.optional import not_installed

        raise NotApplicable(not_installed(exc, "gensim is not installed: its shipped fastText model is not "
                                               "available")) from None
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


@claim_property("fasttext.morphology", needs=(), about="library", dtypes=("float64",), max_examples=1)
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


# --- FastText against word2vec for an unseen word -----------------------------------------------


@claim_property("fasttext.versus-word2vec", needs=("fasttext_vector",))
@given(case=vocabulary_cases().filter(lambda case: len(case["known"]) < len(case["queried"])))
@example(case=REPEATS_CUT)
def an_unseen_word_gets_the_vector_of_its_ngrams(ctx: Context, case) -> None:
    """FastText answers for a word it never saw (a misspelling, a rare inflection): the implementation's
    vector of an unseen word is its n-grams' mean (or sum), shared with every known word that shares those
    n-grams, where a word2vec table has no row to give."""
    known, grams, table, ngram_table = case["known"], case["grams"], case["word_table"], case["ngram_table"]
    readings = ctx.choices("composition", COMPOSITIONS)
    unseen = [w for w in case["queried"] if w not in known]
    for word in unseen:
        actual = ctx.fasttext_vector(word, known, table, grams, ngram_table, case["min_n"], case["max_n"])
        z = ngram_table[[grams.index(g) for g in ngrams_written_out(word, case["min_n"], case["max_n"])]]  # (n, d)
        tol = 8 * ctx.tol.rtol
        mean, total = z.mean(dim=0), z.sum(dim=0)
        allowed = ([total] if "sum" in readings else []) + ([mean] if set(readings) - {"sum"} else [])
        assert any(bool(((actual - e).abs() <= tol * (1 + e.abs())).all()) for e in allowed), (
            f"the vector of unseen {word!r} is {actual.tolist()}, not its {z.shape[0]} n-grams' mean "
            f"{mean.tolist()} or sum {total.tolist()}"
        )


def swapped(word: str) -> str:
    """A misspelling: the fourth and fifth letters of ``word`` swapped."""
    return word[:3] + word[4] + word[3] + word[5:]


@claim_property("fasttext.versus-word2vec", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def gensims_fasttext_places_a_misspelling_near_its_word_where_word2vec_has_none(ctx: Context, _) -> None:
    """On gensim's shipped fastText model, the misspellings made by swapping the fourth and fifth letters of
    its alphabetic words of 7 letters or more (all unseen) get vectors, and for at least 3/4 of them the right
    word is in the nearer half of the vocabulary by cosine; a plain ``KeyedVectors`` holding the same words and
    vectors (what a word2vec model holds) raises KeyError for every one of them."""
    from gensim.models import KeyedVectors

    model = shipped_fasttext()
    plain = KeyedVectors(model.vector_size)
    plain.add_vectors(list(model.index_to_key), model.vectors)
    unit = torch.tensor(np.asarray(model.get_normed_vectors(), dtype=np.float64))  # (V, d)
    pairs = [(swapped(w), w) for w in model.index_to_key if w.isalpha() and len(w) >= 7
             and swapped(w) != w and swapped(w) not in model.key_to_index]
    assert len(pairs) >= 100, f"only {len(pairs)} misspellings"
    nearer_half, far = 0, []
    for wrong, right in pairs:
        try:
            plain.get_vector(wrong)
        except KeyError:
            pass
        else:
            raise AssertionError(f"word2vec's KeyedVectors gave unseen {wrong!r} a vector")
        v = torch.tensor(np.asarray(model.get_vector(wrong), dtype=np.float64))
        assert float(v.norm()) > 0, f"fastText gave {wrong!r} the zero vector"
        cosines = unit @ (v / v.norm())  # (V,)
        share_above = float((cosines > cosines[model.key_to_index[right]]).to(F64).mean())
        if share_above < 0.5:
            nearer_half += 1
        else:
            far.append(f"{wrong}/{right}: {share_above:.0%} of the vocabulary nearer")
    assert nearer_half >= MAJORITY * len(pairs), (
        f"{nearer_half} of {len(pairs)} misspellings have their word in the nearer half; e.g. {far[:5]}"
    )
