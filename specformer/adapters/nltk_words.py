"""NLTK's Penn Treebank word tokenizer behind the tokenization family's protocol (kind ``"words"``).

* ``tokenize_text("words", text)``: ``nltk.tokenize.TreebankWordTokenizer().tokenize(text)``.
  It splits English contractions (``don't`` -> ``do n't``, ``can't`` -> ``ca n't``), splits
  most punctuation off words, and rewrites double quotes the Penn Treebank way (an opening
  ``"`` becomes two backquotes, a closing one two apostrophes). It is written for one sentence
  at a time: a full stop is split off only at the end of the input (``sat. The`` keeps
  ``sat.``). NLTK's ``word_tokenize``, which runs the Punkt sentence splitter first, needs a
  downloaded model and is not used: nothing here downloads anything.
* ``detokenize_text("words", tokens)``: ``nltk.tokenize.TreebankWordDetokenizer().detokenize``,
  which undoes the Treebank conventions it knows (quotes, contractions, spaces before
  punctuation) and writes single spaces elsewhere: the original whitespace is not restored.

Every other kind (``"characters"``, the subword kinds) is not applicable. NLTK is imported on
first use, with a clear error when it is missing (install the ``thirdparty`` extra).
"""

from __future__ import annotations

import functools
from typing import Any

from specformer.protocol.capabilities import Capabilities
from specformer.adapters.hf_common import import_library
from specformer.protocol.base import NotApplicable

#: The release the adapter is written against (the extra pins it).
NLTK_VERSION = "3.10.4"


@functools.lru_cache(maxsize=1)
def _treebank() -> tuple[Any, Any]:
    tokenize = import_library("nltk.tokenize", "nltk", "nltk")
    return tokenize.TreebankWordTokenizer(), tokenize.TreebankWordDetokenizer()


def _words_only(kind: str) -> None:
    if kind != "words":
        raise NotApplicable(f"NLTK's Treebank tokenizer is a word tokenizer; kind {kind!r} is not provided")


class NLTKWords:
    """``TreebankWordTokenizer`` and ``TreebankWordDetokenizer`` for kind ``"words"``."""

    name = "nltk"
    #: The tokenizer kinds it runs (and, where its library takes valid Unicode only, no lone surrogates).
    capabilities = Capabilities(conventions={"tokenizer_kind": frozenset({"words"})})

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """The Treebank tokens of ``text`` (one sentence expected; see the module)."""
        _words_only(kind)
        return list(_treebank()[0].tokenize(text))

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """The Treebank detokenizer's text of ``tokens``."""
        _words_only(kind)
        return _treebank()[1].detokenize(list(tokens))


implementation = NLTKWords()
