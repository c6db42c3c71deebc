"""Strategies of the tokenization family: text with the awkward parts, and small corpora.

Text strategies mix ordinary English with what breaks tokenizers: combining marks
(``e`` + U+0301), precomposed letters, emoji and other astral characters, zero-width
joiners (family emoji), mixed scripts (Greek, Cyrillic, CJK, Arabic), whitespace runs of
every kind (tabs, newlines, no-break and ideographic spaces), control characters, and
the empty string; lone surrogates only where a claim admits them (``surrogates=True``).
Corpora are word counts over a small alphabet, so that ties and shared pairs are common.
"Plain" texts are the opposite of awkward: frequent all-letter words of the training text
joined by single spaces, which every normaliser leaves alone (but for case) and every
tokenizer trained on that text can spell.
"""

from __future__ import annotations

import functools
import unicodedata

from hypothesis import strategies as st

__all__ = ["ACCENTS", "AWKWARD", "accented_texts", "corpora", "plain_texts", "plain_words", "sized_corpora", "texts", "words"]

#: Fragments that break careless tokenizers, each a valid ``str`` without lone surrogates.
AWKWARD = (
    "e\u0301", "\u00e9", "n\u0303o", "\U0001F600", "\U0001F468\u200D\U0001F469\u200D\U0001F467", "\u200D",
    "\u200B", "\U0001D11E", "\u03b1\u03b2\u03b3", "\u043f\u0440\u0438\u0432\u0435\u0442", "\u6f22\u5b57",
    "\u0645\u0631\u062d\u0628\u0627", "  ", "\t", "\n\n", "\u00a0", "\u3000", "\r\n", "\x00", "\x7f", "\ufeff",
    "don't", "U.S.A.", "$3.50", "e-mail", "\U0001F1FA\U0001F1F8", '"quoted"',
)

_ENGLISH = ("the", "cat", "sat", "on", "mat", "token", "ization", "low", "lower", "newest", "widest", " ", ".", ",")


def texts(*, surrogates: bool = False, max_size: int = 12) -> st.SearchStrategy[str]:
    """Text made of English words, awkward fragments and arbitrary characters (``""`` included); with
    ``surrogates``, lone surrogates too (a high one may stand before a low one: in a ``str`` they stay two
    code points, which the wire carries as two)."""
    alphabet = st.characters(exclude_categories=() if surrogates else ("Cs",))
    fragment = st.one_of(st.sampled_from(_ENGLISH), st.sampled_from(AWKWARD), st.text(alphabet, max_size=3))
    if surrogates:
        fragment = st.one_of(fragment, st.sampled_from(("\ud800", "\udfff", "a\udc80b", "\ud800\udc00")))
    return st.lists(fragment, max_size=max_size).map("".join)


def words(alphabet: str = "abcde", max_size: int = 6) -> st.SearchStrategy[str]:
    """Non-empty words over a small alphabet (so that pairs repeat across words)."""
    return st.text(st.sampled_from(alphabet), min_size=1, max_size=max_size)


def corpora(alphabet: str = "abcde", max_words: int = 8, max_count: int = 5,
            max_length: int = 6) -> st.SearchStrategy[dict[str, int]]:
    """Word counts: up to ``max_words`` distinct words of up to ``max_length`` letters, each seen 1 to ``max_count``
    times."""
    return st.dictionaries(words(alphabet, max_length), st.integers(1, max_count), min_size=1, max_size=max_words)


def sized_corpora() -> st.SearchStrategy[dict[str, int]]:
    """Small corpora (:func:`corpora`), or, one draw in four, realistic ones: up to 64 words of up to 16 letters
    over ``abcdefgh``, each seen up to 50 times."""
    return st.one_of(corpora(), corpora(), corpora(), corpora("abcdefgh", max_words=64, max_count=50, max_length=16))


@functools.lru_cache(maxsize=1)
def plain_words() -> tuple[str, ...]:
    """The 300 most frequent words of the training text made only of ASCII letters (ties by spelling)."""
    from specformer.reference.tokenization.training import training_words

    counts = training_words()
    letters = [w for w in counts if w.isascii() and w.isalpha()]
    return tuple(sorted(letters, key=lambda w: (-counts[w], w))[:300])


def plain_texts(max_words: int = 6) -> st.SearchStrategy[str]:
    """One to ``max_words`` training words of ASCII letters (:func:`plain_words`), joined by single spaces."""
    return st.lists(st.deferred(lambda: st.sampled_from(plain_words())), min_size=1, max_size=max_words).map(" ".join)


#: Combining accents (category Mn) put on the letters of :func:`accented_texts`: acute, grave, diaeresis,
#: circumflex, tilde; ``""`` leaves a word plain.
ACCENTS = ("", "\u0301", "\u0300", "\u0308", "\u0302", "\u0303")


@st.composite
def accented_texts(draw: st.DrawFn, max_words: int = 6) -> str:
    """:func:`plain_texts` whose words may carry an accent on one letter (:data:`ACCENTS`) and a capital first
    letter, the whole text composed (NFC: ``\u00e9``) or decomposed (NFD: ``e`` + U+0301): what a tokenizer that
    strips accents turns back into the plain words, and one that keeps them does not."""
    chosen = draw(st.lists(st.deferred(lambda: st.sampled_from(plain_words())), min_size=1, max_size=max_words),
                  label="words")
    marked = []
    for word in chosen:
        accent = draw(st.sampled_from(ACCENTS), label="accent")
        at = draw(st.integers(0, len(word) - 1), label="accented letter")
        word = word[: at + 1] + accent + word[at + 1:]
        marked.append(word.capitalize() if draw(st.booleans(), label="capital") else word)
    return unicodedata.normalize(draw(st.sampled_from(["NFC", "NFD"]), label="form"), " ".join(marked))
