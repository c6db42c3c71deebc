"""Word and character tokenization, as the documents describe them: plain Python.

The course notes (000, "Tokenization Methods") describe the most basic tokenizer as one that
divides text along whitespace and punctuation, each punctuation mark a token of its own:
``"The cat sat on the mat."`` gives ``The cat sat on the mat .``. This module writes that
rule down exactly, and the character tokenizer beside it.

**Words** (:func:`word_tokenize`). Every character of the text falls in one of three classes,
by its Unicode general category:

* *whitespace*: anything ``str.isspace`` accepts (spaces, tabs, newlines, the no-break and
  ideographic spaces). It separates tokens and is dropped;
* *word characters*: letters (``L*``), marks (``M*``) and numbers (``N*``). A maximal run of
  them is one token, so a combining accent stays with its letter (``"e\\u0301"``) and
  ``"3"`` and ``"50"`` are words;
* *punctuation*: everything else (``P*``, symbols ``S*``, controls and format characters
  ``C*``, emoji, lone surrogates). Each such character is a token on its own, so ``"don't"``
  gives ``don ' t`` and ``"U.S.A."`` gives ``U . S . A .``.

There are no rules for contractions, abbreviations, numbers, URLs or e-mail addresses: that
is what NLTK's and spaCy's language-aware tokenizers add (see their adapters). Text without
spaces (Chinese, Japanese) stays one token per run of word characters: this tokenizer does
not segment it, and neither does any tokenizer that only looks at spaces.

**Detokenizing words** (:func:`word_detokenize`) cannot restore the text, because the
whitespace is gone: ``"a b"`` and ``"a \\t b"`` have the same tokens. It writes a single space
before every word token except the first, and none before punctuation, which rebuilds
ordinary English (``"The cat sat on the mat."``, ``"Hello, world!"``) and always gives text
that tokenizes back into the same tokens.

**Characters** (:func:`character_tokenize`): one token per code point, the text's ``str``
items (lone surrogates included), so ``"".join`` of the tokens is the text. A "character"
here is a code point, not a user-perceived character (a grapheme cluster): ``"e\\u0301"`` is
two tokens, a family emoji five.

Not here: subword tokenizers (:mod:`.bpe`), vocabularies with ids and special tokens,
sentence splitting, normalisation (case, accents, Unicode forms).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = ["character_detokenize", "character_tokenize", "is_word_character", "word_detokenize", "word_tokenize"]


def is_word_character(char: str) -> bool:
    """Whether ``char`` (one code point) is a letter, a mark or a number: part of a word token."""
    return unicodedata.category(char)[0] in "LMN"


def word_tokenize(text: str) -> list[str]:
    """Split ``text`` at whitespace and punctuation; each punctuation character is a token (see the module).

    ``word_tokenize("The cat sat on the mat.")`` is ``["The", "cat", "sat", "on", "the", "mat", "."]``.
    """
    _check_text(text)
    tokens: list[str] = []
    word: list[str] = []  # the run of word characters being read
    for char in text:
        if is_word_character(char):
            word.append(char)
            continue
        if word:
            tokens.append("".join(word))
            word = []
        if not char.isspace():
            tokens.append(char)  # punctuation, a symbol, a control character: a token of its own
    if word:
        tokens.append("".join(word))
    return tokens


def word_detokenize(tokens: Iterable[str]) -> str:
    """Join word tokens: a space before each word token but the first, none before punctuation.

    ``word_tokenize(word_detokenize(word_tokenize(s))) == word_tokenize(s)`` for every ``str``
    ``s``; the text itself comes back only when its whitespace was exactly that. ``ValueError``
    for a token that :func:`word_tokenize` cannot produce (empty, containing whitespace, or
    mixing word characters with punctuation).
    """
    parts: list[str] = []
    for index, token in enumerate(_checked_tokens(tokens)):
        if not isinstance(token, str) or not token:
            raise ValueError(f"token {index} must be a non-empty str, got {token!r}")
        is_word = all(map(is_word_character, token))
        if not is_word and (len(token) != 1 or token.isspace()):
            raise ValueError(f"token {index} {token!r} is not a word token: neither a run of letters, marks and "
                             "numbers nor a single punctuation character")
        if is_word and parts:
            parts.append(" ")
        parts.append(token)
    return "".join(parts)


def character_tokenize(text: str) -> list[str]:
    """The code points of ``text``, one token each: ``"The cat"`` -> ``T h e ␣ c a t``."""
    _check_text(text)
    return list(text)


def character_detokenize(tokens: Iterable[str]) -> str:
    """The text of character tokens: their concatenation. ``ValueError`` for a token that is not one code point."""
    tokens = _checked_tokens(tokens)
    for index, token in enumerate(tokens):
        if not isinstance(token, str) or len(token) != 1:
            raise ValueError(f"token {index} must be a single character (one code point), got {token!r}")
    return "".join(tokens)


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")


def _checked_tokens(tokens: Iterable[str]) -> list[str]:
    if isinstance(tokens, (str, bytes)):
        raise ValueError(f"tokens must be a sequence of str, not a single {type(tokens).__name__}")
    return list(tokens)
