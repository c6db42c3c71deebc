"""WordPiece encoding: greedy longest match first, with a continuation prefix (BERT's ``##``).

WordPiece (Schuster and Nakajima, 2012; Wu et al., 2016; BERT) splits one word into pieces
of a fixed vocabulary. Encoding is greedy: from the start of the word, take the longest
vocabulary piece that matches there, then continue after it, until the word is used up.
A piece that does not begin the word is looked up with a prefix, ``"##"`` by default, so
``"ing"`` at the start of a word and ``"##ing"`` inside one are different entries:

* ``"embeddings"`` with BERT's uncased vocabulary gives ``em ##bed ##ding ##s``;
* if at some position no piece matches (not even a single character), the *whole* word
  becomes the unknown token, ``[unk]``: BERT does not keep the pieces found before the
  failure, nor fall back to characters;
* a word longer than ``max_chars`` characters (code points; BERT's default is 100) is the
  unknown token without being looked at;
* the empty word has no pieces (``[]``).

The greedy choice is not the segmentation with the fewest pieces: with the vocabulary
``{"ab", "a", "##bc"}`` the word ``"abc"`` takes ``"ab"`` first and then finds no
``"##c"``, so it is ``[unk]``, although ``a ##bc`` covers it. That is the algorithm as
BERT runs it, and what :func:`wordpiece` does.

:func:`words_from_pieces` reverses the split of a sequence of words when no word begins
with the prefix and none became ``[unk]``: a piece without the prefix starts a word.

Not here: training a WordPiece vocabulary (the documents describe a likelihood criterion;
Hugging Face's ``WordPieceTrainer`` is its BPE trainer, see ``spec/tokenization/wordpiece.md``),
BERT's text normalisation and punctuation split (lower-casing, accents, Chinese characters),
token ids and special tokens.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

__all__ = ["MAX_CHARS", "PREFIX", "UNK", "wordpiece", "words_from_pieces"]

#: BERT's unknown token, continuation prefix and longest word, the defaults here.
UNK = "[UNK]"
PREFIX = "##"
MAX_CHARS = 100


def wordpiece(word: str, vocab: Collection[str], *, unk: str = UNK, prefix: str = PREFIX,
              max_chars: int = MAX_CHARS) -> list[str]:
    """The pieces of one ``word`` under ``vocab``, greedy longest match first; ``[unk]`` if it cannot be covered.

    Pieces after the first carry ``prefix`` and are looked up with it. ``vocab`` is any
    collection of strings (a list is turned into a set once per call); ``unk`` need not be
    in it. Whitespace inside ``word`` is an ordinary character: splitting text into words is
    the caller's business. ``ValueError`` for an empty ``unk``, a negative ``max_chars`` or a
    vocabulary entry that is not a non-empty string.
    """
    _check(word, vocab, unk, prefix, max_chars)
    if len(word) > max_chars:
        return [unk]
    pieces = vocab if isinstance(vocab, (set, frozenset)) else set(vocab)
    longest = max(map(len, pieces), default=0)  # no match is longer than the longest piece
    found: list[str] = []
    start = 0
    while start < len(word):
        head = prefix if start > 0 else ""
        for end in range(min(len(word), start + longest), start, -1):  # longest first
            candidate = head + word[start:end]
            if candidate in pieces:
                found.append(candidate)
                start = end
                break
        else:  # nothing matches here, not even one character: the whole word is unknown
            return [unk]
    return found


def words_from_pieces(pieces: Sequence[str], *, prefix: str = PREFIX) -> list[str]:
    """Regroup the pieces of a sequence of words: a piece without ``prefix`` starts a new word.

    The inverse of encoding each word of a list and concatenating the pieces, provided no
    word begins with ``prefix`` itself (its first piece would then read as a continuation)
    and none became the unknown token. ``ValueError`` for an empty ``prefix`` (then every
    piece starts a word and nothing can be regrouped) or a first piece that is a continuation.
    """
    if not isinstance(prefix, str) or not prefix:
        raise ValueError(f"prefix must be a non-empty string to mark continuations, got {prefix!r}")
    words: list[str] = []
    for i, piece in enumerate(pieces):
        if piece.startswith(prefix):
            if not words:
                raise ValueError(f"piece {i} ({piece!r}) continues a word, but no word has started")
            words[-1] += piece[len(prefix):]
        else:
            words.append(piece)
    return words


def _check(word: str, vocab: Collection[str], unk: str, prefix: str, max_chars: int) -> None:
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    if not isinstance(unk, str) or not unk:
        raise ValueError(f"unk must be a non-empty string, got {unk!r}")
    if not isinstance(prefix, str):
        raise ValueError(f"prefix must be a string (possibly empty), got {prefix!r}")
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 0:
        raise ValueError(f"max_chars must be a non-negative int, got {max_chars!r}")
    if isinstance(vocab, (str, bytes)) or not isinstance(vocab, Collection):
        raise ValueError(f"vocab must be a collection of strings (a list or set), got {type(vocab).__name__}")
    for entry in vocab:
        if not isinstance(entry, str) or not entry:
            raise ValueError(f"vocabulary entries must be non-empty strings, got {entry!r}")
