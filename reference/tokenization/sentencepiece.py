"""SentencePiece's treatment of whitespace, around a unigram model trained here.

SentencePiece (Kudo and Richardson, 2018) reads text as a plain sequence of characters,
with no language-specific word splitter. Its one convention about words is the marker
``"▁"`` (U+2581, LOWER ONE EIGHTH BLOCK): every space becomes ``"▁"``, and one more is put
in front of the text, so that every word, the first included, begins with a marker:

    ``"the cat"`` -> ``"▁the▁cat"`` -> pieces such as ``▁the ▁c at``

Detokenizing joins the pieces, turns every ``"▁"`` back into a space and drops the space
added in front (:func:`detokenize`). Between the two, the text is cut before every marker
(:func:`split_words`: SentencePiece's default ``split_by_whitespace``, so a piece never
spans two words) and each word is segmented by a unigram model (:mod:`.unigram`).

Here, unlike in the library, nothing is normalised (no NFKC, runs of spaces are kept, so
are spaces at either end) and a character the model does not know stays a piece of its
own instead of becoming ``<unk>``: ``detokenize(tokenize(t)) == t`` for every text ``t``
that has no ``"▁"`` of its own (a ``"▁"`` in the input comes back as a space, in the
library too). Only the space U+0020 is a marker; tabs, newlines and other spaces are
ordinary characters.

:func:`trained_model` trains the unigram model, once per process, on
:func:`~specformer.reference.tokenization.training.tokenizer_training_text`: each non-blank line is
escaped and split into words, whose counts go to
:func:`~specformer.reference.tokenization.unigram.train_unigram` (1,000 pieces; seconds).
Not here: BPE inside SentencePiece, sampling at encoding time, ids, special tokens.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence

from specformer.reference.tokenization.unigram import UnigramModel, train_unigram, viterbi

__all__ = ["MARKER", "VOCAB_SIZE", "detokenize", "escape", "split_words", "tokenize", "trained_model",
           "unescape"]

#: The whitespace marker, U+2581.
MARKER = "\u2581"
#: The size of the trained model's vocabulary.
VOCAB_SIZE = 1000
#: The log-probability given to a character the model does not know (far below any piece).
UNKNOWN_PENALTY = -50.0


def escape(text: str) -> str:
    """``"▁" + text`` with every space replaced by ``"▁"``; the empty text stays empty."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return MARKER + text.replace(" ", MARKER) if text else ""


def unescape(escaped: str) -> str:
    """The inverse of :func:`escape` on texts without a ``"▁"`` of their own."""
    spaced = escaped.replace(MARKER, " ")
    return spaced[1:] if spaced.startswith(" ") else spaced


def split_words(escaped: str) -> list[str]:
    """Cut an escaped text before every marker: each word but possibly the first starts with ``"▁"``."""
    words: list[str] = []
    for ch in escaped:
        if ch == MARKER or not words:
            words.append(ch)
        else:
            words[-1] += ch
    return words


@functools.lru_cache(maxsize=1)
def trained_model() -> UnigramModel:
    """The unigram model of the reference's ``"unigram"`` tokenizer, trained on the suite's tokenizer training text."""
    from specformer.reference.tokenization.training import tokenizer_training_text

    counts: Counter[str] = Counter()
    for line in tokenizer_training_text().splitlines():
        if line.strip():
            counts.update(split_words(escape(line)))
    return train_unigram(counts, VOCAB_SIZE, max_piece_length=8, seed_size=2 * VOCAB_SIZE, em_steps=1)


def tokenize(text: str, model: UnigramModel | None = None) -> list[str]:
    """The pieces of ``text``: escaped, split into words, each word segmented by Viterbi.

    ``model`` defaults to :func:`trained_model`. A character the model lacks is added as a
    piece of its own with a log-probability of :data:`UNKNOWN_PENALTY`, so it ends up
    alone and nothing is lost.
    """
    pieces = (model or trained_model()).pieces
    result: list[str] = []
    for word in split_words(escape(text)):
        unknown = {ch: UNKNOWN_PENALTY for ch in word if ch not in pieces}
        result.extend(viterbi(word, {**pieces, **unknown} if unknown else pieces))
    return result


def detokenize(pieces: Sequence[str]) -> str:
    """The text of ``pieces``: joined, markers back to spaces, the leading space removed."""
    for i, piece in enumerate(pieces):
        if not isinstance(piece, str):
            raise TypeError(f"piece {i} must be a str, got {type(piece).__name__}")
    return unescape("".join(pieces))

