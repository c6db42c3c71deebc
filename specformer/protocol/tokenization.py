"""The tokenization family's operations: training and applying subword tokenizers.

Conventions (the same for every implementation; adapters convert):

* character-level BPE works on words (a whitespace split is the caller's business): a
  word is its characters followed by an end-of-word marker (``"</w>"`` by default), a
  symbol of its own, and a merge is a pair of symbol strings; ``bpe_train`` takes word
  counts and returns the merges in the order they were learned; ``bpe_encode`` splits one
  word with them and returns its symbols, the marker included in the last one. Without
  merges the marker is the last symbol, ``bpe_encode("low", []) == ["l", "o", "w", "</w>"]``;
  it joins the last character only through a learned merge such as ``("w", "</w>")``:
  ``["l", "o", "w</w>"]`` (never from the start, as ``subword-nmt``'s codes do: its
  adapter converts);
* the tie rule of a trainer is the implementation's: when several pairs share the highest
  count, any deterministic rule that takes one of them is correct (the first counted, the
  smallest or largest pair, the smallest token ids); the same input must give the same
  merges. What 001's ``learn_bpe_merges`` does on a tie (the pair counted first) is a
  statement about that code, judged on its own (``bpe.learn-bpe-merges``);
* whitespace in running text is the implementation's to split at: every space, or every
  whitespace character (a tab may stay inside a word, or be dropped);
* a byte-level decoder given bytes that are not UTF-8 may raise ``ValueError``, decode
  them losslessly, or replace each maximal ill-formed subpart with U+FFFD; never drop them;
* byte-level BPE works on bytes: a merge is a pair of byte strings; ``byte_bpe_train``
  takes counts of pre-split pieces (``bytes``), ``byte_bpe_encode`` encodes any text
  (its own pre-split, documented by the implementation) into byte tokens and
  ``byte_bpe_decode`` joins them back into text;
* ``wordpiece`` splits one word with a given vocabulary, continuation pieces carrying the
  caller's prefix (``prefix``, ``"##"`` by default, BERT's), returning ``[unk]`` when the
  word cannot be covered;
* ``unigram_segment`` returns a segmentation of one word into pieces of a given unigram
  model (piece -> log-probability) that maximises the sum of the log-probabilities; among
  segmentations of equal total any one may be returned;
* ``unigram_em_step(words, pieces)`` runs one EM step of Unigram training on word counts
  from a piece table (piece -> log-probability): the expected count of every piece over
  all segmentations of every word (E), then probabilities proportional to them (M), over
  the same pieces; ``unigram_prune(words, pieces, size)`` runs one pruning step: the
  pieces longer than one character whose removal costs least are dropped until ``size``
  are left (or only single characters), the rest renormalised. The cost of a piece is
  SentencePiece's Viterbi approximation (how often the Viterbi segmentations of the
  corpus use it, times its log-probability less that of the Viterbi split of its own
  text without it); ties between equal costs may go either way. Neither SentencePiece nor
  Hugging Face ``tokenizers`` exposes a single step (their trainers run the whole loop
  in native code), so only the reference provides them among the shipped adapters;
* ``tokenize_text(kind, text)`` and ``detokenize_text(kind, tokens)`` run a tokenizer the
  implementation holds (trained by itself, deterministically, on :data:`TRAINING_CORPUS`,
  or shipped with its library) on running text. ``kind`` names it: ``"words"`` (a word
  tokenizer), ``"characters"``, ``"bpe"``, ``"byte-bpe"``, ``"wordpiece"``,
  ``"unigram"``, ``"bert"`` (BERT's uncased tokenizer with the shipped vocabulary). For
  three kinds the tokens and the text given back are fixed: ``"characters"`` gives one
  token per code point, and its detokenizer joins them, so every text comes back;
  ``"wordpiece"`` and ``"bert"`` give each word's pieces in order, every piece after a
  word's first carrying ``"##"``, and their detokenizers join each ``"##"`` piece to the
  one before (without the prefix) and put one space between words. ``"bert"`` lower-cases
  and strips accents first; a ``"wordpiece"`` tokenizer may lower-case too; how they
  split and space punctuation is theirs. No property depends on the size of a trained
  tokenizer: a few hundred merges or pieces are enough, and keep a straightforward
  trainer (recounting every pair after each merge) to seconds. Train on first use rather
  than when the implementation is created: a worker started for one row (another
  process, after a crash) then pays only for what the row uses.

Conventions (:data:`CONVENTIONS`, declared by an adapter in its ``capabilities``):
``tokenizer_kind``, the kinds ``tokenize_text`` runs (a property that needs another kind
is not applicable at once); ``end_of_word``, whether ``bpe_train`` and ``bpe_encode`` take
any marker or only ``"</w>"``; ``wordpiece_prefix``, whether ``wordpiece`` takes any
continuation prefix or only ``"##"``; ``lone_surrogates``, whether a ``str`` holding a lone
surrogate is taken (``False``: the library takes valid Unicode only, and the properties
draw none for it). Inside what it declares (everything, without a declaration) an adapter
answers every example: a refusal (:class:`~specformer.protocol.base.NotApplicable`) there
is an error. This module declares the operations only;
:mod:`specformer.checked.tokenization` calls them and checks what they return.
"""

from __future__ import annotations

from typing import Protocol

from specformer.protocol.base import Family, Operation
from specformer.protocol.capabilities import Convention

__all__ = [
    "BPEImplementation",
    "CONVENTIONS",
    "ByteBPEImplementation",
    "FAMILY",
    "TEXT_KINDS",
    "TRAINING_CORPUS",
    "TextTokenizerImplementation",
    "UnigramImplementation",
    "UnigramTrainingImplementation",
    "WordPieceImplementation",
]

#: What ``tokenize_text`` may be asked to run.
TEXT_KINDS = ("words", "characters", "bpe", "byte-bpe", "wordpiece", "unigram", "bert")

#: The text trained tokenizers learn from: :func:`specformer.reference.tokenization.training.tokenizer_training_text`
#: (every fourth of Python's help topics), the same bytes for every implementation on the same installation.
TRAINING_CORPUS = "specformer.reference.tokenization.training:tokenizer_training_text"


class BPEImplementation(Protocol):
    """Character-level byte pair encoding with an end-of-word marker."""

    name: str

    def bpe_train(self, words: dict[str, int], num_merges: int, *, end_of_word: str = "</w>") -> list[tuple[str, str]]:
        """The merges learned from ``words`` (word -> count), at most ``num_merges``, in order."""
        ...

    def bpe_encode(self, word: str, merges: list[tuple[str, str]], *, end_of_word: str = "</w>") -> list[str]:
        """The symbols of ``word`` (its last symbol ends with ``end_of_word``) after applying ``merges``.

        The marker is the caller's: one that takes only ``</w>`` declares ``end_of_word = {"</w>"}``.
        """
        ...


class ByteBPEImplementation(Protocol):
    """Byte-level byte pair encoding (GPT-2 style): any text, no unknown token."""

    name: str

    def byte_bpe_train(self, words: dict[bytes, int], num_merges: int) -> list[tuple[bytes, bytes]]:
        """The merges learned from ``words`` (piece -> count), at most ``num_merges``, in order."""
        ...

    def byte_bpe_encode(self, text: str, merges: list[tuple[bytes, bytes]]) -> list[bytes]:
        """``text`` as byte tokens after applying ``merges``."""
        ...

    def byte_bpe_decode(self, tokens: list[bytes]) -> str:
        """The text of byte ``tokens``."""
        ...


class WordPieceImplementation(Protocol):
    """WordPiece encoding of one word: greedy longest match first, with a continuation prefix."""

    name: str

    def wordpiece(self, word: str, vocab: list[str], *, unk: str = "[UNK]", prefix: str = "##",
                  max_chars: int = 100) -> list[str]:
        """The pieces of ``word`` (pieces after the first carry ``prefix``), or ``[unk]``.

        The prefix is the caller's: one that takes only ``##`` declares ``wordpiece_prefix = {"##"}``.
        """
        ...


class UnigramImplementation(Protocol):
    """Segmentation under a unigram language model (Viterbi)."""

    name: str

    def unigram_segment(self, word: str, pieces: dict[str, float]) -> list[str]:
        """A segmentation of ``word`` into ``pieces`` (piece -> log-probability) of maximal total log-probability."""
        ...


class UnigramTrainingImplementation(Protocol):
    """The two steps of Unigram training: EM on a fixed vocabulary, and pruning it."""

    name: str

    def unigram_em_step(self, words: dict[str, int], pieces: dict[str, float]) -> dict[str, float]:
        """The piece table after one EM step on ``words`` (word -> count): the same pieces, new log-probabilities."""
        ...

    def unigram_prune(self, words: dict[str, int], pieces: dict[str, float], size: int) -> dict[str, float]:
        """The piece table after one pruning step down to ``size`` pieces (single characters are never removed)."""
        ...


class TextTokenizerImplementation(Protocol):
    """A tokenizer the implementation holds, run on text."""

    name: str

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """The tokens of ``text`` under the tokenizer ``kind`` (one of :data:`TEXT_KINDS`)."""
        ...

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """The text of ``tokens`` under the tokenizer ``kind``."""
        ...


#: The tokenization family's conventions (see the module docstring).
CONVENTIONS: dict[str, Convention] = {
    "tokenizer_kind": Convention(values=TEXT_KINDS, doc=(
        "the tokenizers tokenize_text and detokenize_text run: words, characters, bpe, byte-bpe, wordpiece, "
        "unigram, bert")),
    "end_of_word": Convention(values=("any", "</w>"), doc=(
        "which end-of-word markers bpe_train and bpe_encode take: any non-empty marker passed as end_of_word "
        "('any'), or only the default '</w>' written into the library ('</w>', as subword-nmt); properties that "
        "draw another marker are then not applicable")),
    "wordpiece_prefix": Convention(values=("any", "##"), doc=(
        "which continuation prefixes wordpiece takes: any prefix passed as prefix ('any'), or only BERT's "
        "'##' written into the library ('##', as transformers' WordpieceTokenizer); properties that draw another "
        "prefix are then not applicable")),
    "lone_surrogates": Convention(values=(True, False), doc=(
        "whether a str holding a lone surrogate (U+D800 to U+DFFF alone, not Unicode text) is taken; False: "
        "valid Unicode only, as libraries that store text as UTF-8 require")),
}

#: The tokenization family, registered in :data:`specformer.protocol.FAMILIES`.
FAMILY = Family("tokenization", (
    Operation("bpe_train", BPEImplementation),
    Operation("bpe_encode", BPEImplementation),
    Operation("byte_bpe_train", ByteBPEImplementation),
    Operation("byte_bpe_encode", ByteBPEImplementation),
    Operation("byte_bpe_decode", ByteBPEImplementation),
    Operation("wordpiece", WordPieceImplementation),
    Operation("unigram_segment", UnigramImplementation),
    Operation("unigram_em_step", UnigramTrainingImplementation),
    Operation("unigram_prune", UnigramTrainingImplementation),
    Operation("tokenize_text", TextTokenizerImplementation),
    Operation("detokenize_text", TextTokenizerImplementation),
), CONVENTIONS)
