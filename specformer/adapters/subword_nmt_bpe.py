"""Sennrich et al.'s ``subword-nmt`` (0.3.8), the original BPE code, behind the tokenization protocol.

``subword-nmt`` is the code released with "Neural Machine Translation of Rare Words with
Subword Units" (Sennrich, Haddow and Birch, 2016), the paper the documents' BPE comes
from. It trains with ``learn_bpe.learn_bpe`` and segments with ``apply_bpe.BPE`` (or its
module function ``apply_bpe.encode``). Both are called as they are:

* ``bpe_train(words, num_merges)``: ``learn_bpe(infile, outfile, num_merges,
  min_frequency=1, is_dict=True)`` on a dictionary file of ``word count`` lines (in
  memory). Its codes format 0.2 starts each word as its characters with the marker
  *joined to the last one* (``l o w</w>``), not as a separate symbol. To give the
  protocol's initial split (``l o w </w>``), each word is passed with a stand-in character
  (:data:`STAND_IN`, a private-use character no test word holds) appended: the library then
  starts from ``l o w <stand-in></w>``, whose last symbol plays the protocol's marker, and
  the adapter writes ``"</w>"`` back for it in the merges. The trainer itself runs as
  shipped: ties go to the largest pair by Python's ordering of the (translated) symbols
  (``max(stats, key=lambda x: (stats[x], x))``), a deterministic rule the protocol
  accepts. ``min_frequency=1`` (the library's default is 2, which stops at pairs seen
  once) lets training run until no pair is left, as the protocol's budget asks.
* ``bpe_encode(word, merges)``: ``apply_bpe.encode`` with codes version 0.1, where the
  library appends ``"</w>"`` as a separate symbol and applies the merges in rank order,
  then drops that symbol (or its suffix) from the result. The adapter appends
  :data:`STAND_IN` to the word and writes it for ``"</w>"`` in the merges, so that the
  library's own ``"</w>"`` is never merged and the stand-in carries the protocol's marker
  through; it is written back as ``"</w>"``.
* ``tokenize_text("bpe", text)`` / ``detokenize_text``: the library's own setup, codes
  version 0.2, ``min_frequency`` 2, :data:`MERGES` merges learned by ``learn_bpe`` from the
  tokenizer training text (read line by line as the command line tool reads a file, once per
  process) and ``BPE.segment`` on the text: words are split at spaces only (a tab or a
  newline inside a line stays in its word), non-final subwords carry the ``"@@"``
  separator. The adapter writes the protocol's form: ``"@@"`` dropped, ``"</w>"`` appended
  to each word's last token; ``detokenize_text`` joins the words with single spaces.

Text holding the stand-in, ``"@@"`` in a word, or a word with a space inside (the
dictionary format splits on spaces) is not applicable. There is no byte level, WordPiece
or Unigram here.
"""

from __future__ import annotations

import contextlib
import functools
import io
from typing import Any

from specformer.adapters.hf_common import import_library
from specformer.protocol import Capabilities, NotApplicable

#: The release this adapter is written against.
SUBWORD_NMT_VERSION = "0.3.8"
#: Merges of the ``"bpe"`` text tokenizer, as for the other adapters.
MERGES = 1000
#: Stands for the protocol's end-of-word marker inside the library (a private-use character).
STAND_IN = "\ue000"
#: The library's end-of-word marker and subword separator.
LIBRARY_MARKER, SEPARATOR = "</w>", "@@"
_ADAPTER = "subword-nmt"


def _learn_bpe() -> Any:
    return import_library("subword_nmt.learn_bpe", "subword-nmt", _ADAPTER)


def _apply_bpe() -> Any:
    return import_library("subword_nmt.apply_bpe", "subword-nmt", _ADAPTER)


def _check_marker(end_of_word: str) -> None:
    if end_of_word != LIBRARY_MARKER:
        raise NotApplicable(f"subword-nmt's end-of-word marker is {LIBRARY_MARKER!r}, not {end_of_word!r}")


def _check_word(word: str, *, empty: bool = False) -> None:
    if (not word and not empty) or STAND_IN in word or any(c.isspace() for c in word) or LIBRARY_MARKER in word:
        raise NotApplicable(f"subword-nmt's adapter takes non-empty words without whitespace, {LIBRARY_MARKER!r} "
                            f"or its stand-in, not {word!r:.80}")


def _from_library(symbol: str) -> str:
    """A library symbol in the protocol's terms (the stand-in, with or without the library's marker, is ``</w>``)."""
    return symbol.replace(STAND_IN + LIBRARY_MARKER, LIBRARY_MARKER).replace(STAND_IN, LIBRARY_MARKER)


def learn(lines: list[str], num_merges: int, *, min_frequency: int, is_dict: bool) -> list[tuple[str, str]]:
    """``learn_bpe`` on ``lines`` (in memory), its progress bar silenced; the merges as written to its codes file."""
    learn_bpe = _learn_bpe()
    infile, outfile = io.StringIO("".join(lines)), io.StringIO()
    infile.name = "<memory>"  # read in one process: get_vocabulary looks at the name only for parallel reading
    with contextlib.redirect_stderr(io.StringIO()):
        learn_bpe.learn_bpe(infile, outfile, num_merges, min_frequency=min_frequency, is_dict=is_dict)
    codes = outfile.getvalue().splitlines()
    if not codes or not codes[0].startswith("#version"):
        raise RuntimeError(f"learn_bpe wrote no version line: {codes[:1]!r}")
    return [tuple(line.split(" ")) for line in codes[1:] if line]  # type: ignore[misc]


class SubwordNMT:
    """``subword-nmt``'s ``learn_bpe`` and ``apply_bpe`` as a tokenization implementation."""

    name = "subword-nmt"
    #: The tokenizer kinds it runs (and, where its library takes valid Unicode only, no lone surrogates).
    capabilities = Capabilities(conventions={"tokenizer_kind": frozenset({"bpe"}),
                                             "end_of_word": frozenset({LIBRARY_MARKER})})

    def bpe_train(self, words: dict[str, int], num_merges: int, *, end_of_word: str = "</w>") -> list[tuple[str, str]]:
        _check_marker(end_of_word)
        for word in words:
            _check_word(word)
        lines = [f"{word}{STAND_IN} {count}\n" for word, count in words.items()]
        merges = learn(lines, num_merges, min_frequency=1, is_dict=True)
        return [(_from_library(a), _from_library(b)) for a, b in merges]

    def bpe_encode(self, word: str, merges: list[tuple[str, str]], *, end_of_word: str = "</w>") -> list[str]:
        _check_marker(end_of_word)
        _check_word(word, empty=True)  # the empty word is the marker alone
        apply_bpe = _apply_bpe()
        codes: dict[tuple[str, str], int] = {}
        for rank, (a, b) in enumerate(merges):  # the protocol's marker is the stand-in here
            codes.setdefault((a.replace(LIBRARY_MARKER, STAND_IN), b.replace(LIBRARY_MARKER, STAND_IN)), rank)
        reverse = {a + b: (a, b) for (a, b) in codes}
        symbols = apply_bpe.encode(word + STAND_IN, codes, reverse, None, SEPARATOR, (0, 1), {})
        return [_from_library(s) for s in symbols]

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        if kind != "bpe":
            raise NotApplicable(f"subword-nmt has character-level BPE only, not {kind!r}")
        if SEPARATOR in text:
            raise NotApplicable(f"the text holds subword-nmt's separator {SEPARATOR!r}")
        segmented = _text_bpe().segment(text).split(" ")
        tokens = []
        for piece in segmented:
            if not piece:
                continue
            tokens.append(piece[:-len(SEPARATOR)] if piece.endswith(SEPARATOR) else piece + LIBRARY_MARKER)
        return tokens

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        if kind != "bpe":
            raise NotApplicable(f"subword-nmt has character-level BPE only, not {kind!r}")
        words, current = [], []
        for token in tokens:
            if token.endswith(LIBRARY_MARKER):
                words.append("".join(current) + token[:-len(LIBRARY_MARKER)])
                current = []
            else:
                current.append(token)
        if current:
            raise ValueError(f"tokens after the last end-of-word marker: {current!r}")
        return " ".join(words)


@functools.lru_cache(maxsize=1)
def _text_bpe() -> Any:
    """``apply_bpe.BPE`` over :data:`MERGES` merges ``learn_bpe`` learns from the tokenizer training text (codes 0.2)."""
    from specformer.reference.tokenization.training import tokenizer_training_text

    lines = [line + "\n" for line in tokenizer_training_text().splitlines()]
    merges = learn(lines, MERGES, min_frequency=2, is_dict=False)
    codes = io.StringIO("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return _apply_bpe().BPE(codes, separator=SEPARATOR)


implementation = SubwordNMT()
