"""spaCy's English tokenizer behind the tokenization family's protocol (kind ``"words"``).

The pipeline is ``spacy.blank("en")``: spaCy's rule-based English tokenizer (prefix, suffix
and infix rules, tokenizer exceptions such as ``don't`` -> ``do n't``) and nothing else; no
trained model is loaded or downloaded.

* ``tokenize_text("words", text)``: the ``text`` of each token of the ``Doc``. spaCy never
  changes a character. A single space after a token is not a token: the ``Doc`` records it
  on the token (``token.whitespace_``); any other whitespace (a second space, a tab, a
  newline, leading whitespace) becomes a token of its own, made only of whitespace.
* ``detokenize_text("words", tokens)``: ``Doc(vocab, words=tokens, spaces=...).text``. The
  protocol passes token strings only, and the strings do not say which tokens were followed
  by a space, so the adapter keeps the space flags spaCy recorded for the last
  :data:`REMEMBERED` token lists it returned (keyed by the tokens). For such a list the text
  comes back exactly, as the ``Doc`` gives it. For any other list it uses spaCy's own
  default for a ``Doc`` built from words, a space after every token. Two texts with the
  same tokens (``"a"`` and ``"a "``) share a key: the later tokenization wins.

Text holding lone surrogates is not applicable: spaCy's string store encodes every token as
UTF-8 and refuses them. Every kind but ``"words"`` is not applicable. spaCy is imported on
first use (it takes seconds), with a clear error when missing (the ``thirdparty`` extra).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Any

from specformer.protocol.capabilities import Capabilities
from specformer.adapters.hf_common import import_library
from specformer.protocol.base import NotApplicable

#: The release the adapter is written against (the extra pins it).
SPACY_VERSION = "3.8.18"
#: How many token lists' space flags the adapter keeps for ``detokenize_text``.
REMEMBERED = 1024


@functools.lru_cache(maxsize=1)
def _pipeline() -> Any:
    spacy = import_library("spacy", "spacy", "spacy")
    return spacy.blank("en")


def _words_only(kind: str) -> None:
    if kind != "words":
        raise NotApplicable(f"spaCy's tokenizer is a word tokenizer; kind {kind!r} is not provided")


def _no_surrogates(strings: list[str], what: str) -> None:
    for s in strings:
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise NotApplicable(f"spaCy cannot take {what} holding lone surrogates (it stores text as UTF-8)") from None


class SpacyWords:
    """The tokenizer of ``spacy.blank("en")`` for kind ``"words"``, rebuilding text through spaCy's ``Doc``."""

    name = "spacy"
    #: The tokenizer kinds it runs (and, where its library takes valid Unicode only, no lone surrogates).
    capabilities = Capabilities(conventions={"tokenizer_kind": frozenset({"words"}), "lone_surrogates": frozenset({False})})

    def __init__(self) -> None:
        self._spaces: OrderedDict[tuple[str, ...], list[bool]] = OrderedDict()

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """The token texts of spaCy's ``Doc`` of ``text``; the space after each is remembered."""
        _words_only(kind)
        _no_surrogates([text], "text")
        doc = _pipeline()(text)
        tokens = [token.text for token in doc]
        key = tuple(tokens)
        self._spaces[key] = [bool(token.whitespace_) for token in doc]
        self._spaces.move_to_end(key)
        while len(self._spaces) > REMEMBERED:
            self._spaces.popitem(last=False)
        return tokens

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """``Doc(vocab, words=tokens, spaces=...).text``, with the remembered spaces when ``tokens`` came from here."""
        _words_only(kind)
        tokens = list(tokens)
        _no_surrogates(tokens, "tokens")
        from spacy.tokens import Doc

        spaces = self._spaces.get(tuple(tokens))
        return Doc(_pipeline().vocab, words=tokens, spaces=spaces).text


implementation = SpacyWords()
