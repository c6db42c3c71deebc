"""The reference's tokenizers on running text, by kind: what ``tokenize_text`` runs.

Each kind names one tokenizer of the other modules, trained here (deterministically, on
:func:`.training.tokenizer_training_text`, the protocol's ``TRAINING_CORPUS``) where it needs training:

* ``"words"`` and ``"characters"``: :mod:`.words` (punctuation splits words; one token
  per code point);
* ``"bpe"``: character-level BPE with the end-of-word marker (:mod:`.bpe`), 1,000 merges;
  the text is split at whitespace and each word encoded, so detokenizing joins the words
  with single spaces (the whitespace itself is not kept: that is the claim's point);
* ``"byte-bpe"``: byte-level BPE, 1,000 merges, the tokens written in GPT-2's
  byte-to-character alphabet (every byte a printable character) so that a token is a
  ``str`` as for every other kind; decoding is exact for any text, lone surrogates
  included;
* ``"unigram"``: the SentencePiece-style Unigram tokenizer of :mod:`.sentencepiece`.

Not here: ``"wordpiece"`` and ``"bert"`` (WordPiece on running text needs a trained or
shipped vocabulary; the reference checks WordPiece one word at a time, :mod:`.wordpiece`):
they raise :class:`~specformer.protocol.NotApplicable`, as any unknown kind does.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from specformer.protocol.base import NotApplicable
from specformer.reference.tokenization import sentencepiece, words
from specformer.reference.tokenization.bpe import (
    END_OF_WORD,
    byte_word_counts,
    decode,
    decode_bytes,
    encode,
    encode_bytes,
    train_bpe,
    train_byte_bpe,
)
from specformer.reference.tokenization.training import tokenizer_training_text, tokenizer_training_words

__all__ = ["KINDS", "TEXT_MERGES", "byte_alphabet", "detokenize_text", "text_byte_merges", "text_char_merges",
           "tokenize_text"]

#: Merges of the trained BPE text tokenizers.
TEXT_MERGES = 1000

#: The kinds this module runs.
KINDS = ("words", "characters", "bpe", "byte-bpe", "unigram")


@functools.lru_cache(maxsize=1)
def byte_alphabet() -> tuple[str, ...]:
    """GPT-2's byte-to-character table: printable Latin-1 bytes as themselves, the rest from U+0100 on."""
    kept = {*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    table: list[str] = []
    extra = 0
    for byte in range(256):
        table.append(chr(byte) if byte in kept else chr(0x100 + extra))
        extra += byte not in kept
    return tuple(table)


@functools.lru_cache(maxsize=1)
def text_char_merges() -> tuple[tuple[str, str], ...]:
    """The merges of the ``"bpe"`` tokenizer: :data:`TEXT_MERGES` learned from the training words."""
    return tuple(train_bpe(tokenizer_training_words(), TEXT_MERGES))


@functools.lru_cache(maxsize=1)
def text_byte_merges() -> tuple[tuple[bytes, bytes], ...]:
    """The merges of the ``"byte-bpe"`` tokenizer: :data:`TEXT_MERGES` learned from the tokenizer training text's pieces."""
    return tuple(train_byte_bpe(byte_word_counts(tokenizer_training_text()), TEXT_MERGES))


def tokenize_text(kind: str, text: str) -> list[str]:
    """The tokens of ``text`` under the tokenizer ``kind`` (one of :data:`KINDS`)."""
    if kind == "words":
        return words.word_tokenize(text)
    if kind == "characters":
        return words.character_tokenize(text)
    if kind == "bpe":
        merges = text_char_merges()
        return [symbol for word in text.split() for symbol in encode(word, merges)]
    if kind == "byte-bpe":
        table = byte_alphabet()
        return ["".join(table[b] for b in token) for token in encode_bytes(text, text_byte_merges())]
    if kind == "unigram":
        return sentencepiece.tokenize(text)
    raise NotApplicable(f"the reference runs the text tokenizers {', '.join(KINDS)}, not {kind!r}")


def detokenize_text(kind: str, tokens: Sequence[str]) -> str:
    """The text of ``tokens`` under the tokenizer ``kind``; a token no tokenizer of the kind makes raises ``ValueError``."""
    if kind == "words":
        return words.word_detokenize(tokens)
    if kind == "characters":
        return words.character_detokenize(tokens)
    if kind == "bpe":
        found: list[str] = []
        current: list[str] = []
        for token in tokens:
            current.append(token)
            if token.endswith(END_OF_WORD):
                found.append(decode(current))
                current = []
        if current:
            raise ValueError(f"tokens after the last end-of-word marker: {current!r}")
        return " ".join(found)
    if kind == "byte-bpe":
        byte_of = {char: byte for byte, char in enumerate(byte_alphabet())}
        unknown = sorted({c for token in tokens for c in token if c not in byte_of})
        if unknown:
            raise ValueError(f"characters outside the byte alphabet: {unknown[:5]!r}")
        return decode_bytes([bytes(byte_of[c] for c in token) for token in tokens])
    if kind == "unigram":
        return sentencepiece.detokenize(tokens)
    raise NotApplicable(f"the reference runs the text tokenizers {', '.join(KINDS)}, not {kind!r}")
