"""Hugging Face ``tokenizers``' WordPiece and Unigram models behind the protocol.

* ``wordpiece``: ``models.WordPiece(vocab, unk_token, continuing_subword_prefix,
  max_input_chars_per_word)`` in a ``Tokenizer`` with no normaliser and no pre-tokenizer,
  so the whole ``word`` is one word, whitespace included. The library refuses a vocabulary
  without its unknown token; the adapter adds ``unk`` (with the next id) when it is missing,
  which cannot change a split: the protocol's vocabulary is a set of strings, ids are the
  adapter's (in the given order).
* ``unigram_segment``: ``models.Unigram(vocab=[(piece, log_prob), ...])`` without an unknown
  token, again with no normaliser or pre-tokenizer: the library's Viterbi search. A word the
  pieces cannot cover makes the library raise, which the protocol does not ask about.
* ``tokenize_text`` / ``detokenize_text``, trained here, once per process, on
  :func:`specformer.reference.tokenization.training.tokenizer_training_text` (one sentence per
  non-blank line). The library's trainers are not fully reproducible, and nothing in
  their options fixes it: ``WordPieceTrainer`` numbers its ``##`` tokens in hash-map
  order, which changes between runs, and breaks ties between equally frequent pairs by
  those numbers, so a few entries of the vocabulary (2 to 30 of 1,000 to 3,000 here)
  differ from run to run (huggingface/tokenizers issue 1794); ``UnigramTrainer`` finds the
  same pieces every time, with scores that differ slightly (by up to 6e-4 for single
  characters, in the last bits for the rest).

  - ``"wordpiece"``: ``WordPieceTrainer`` (2,000 entries, ``[UNK]``) under BERT's
    pre-tokenizer (whitespace and punctuation), no normaliser (case is kept); detokenizing
    is the ``WordPiece`` decoder (pieces joined, words separated by one space, the space
    before punctuation removed: not lossless, ``"a,b  c"`` comes back as ``"a, b c"``);
  - ``"unigram"``: ``UnigramTrainer`` (1,000 pieces, ``<unk>``) under the ``Metaspace``
    pre-tokenizer and decoder (``"▁"``, prepended always, split at spaces): SentencePiece's
    convention, as ``transformers`` builds T5, ALBERT and XLNet. A character not in the
    vocabulary comes back as itself (the library keeps its text with the unknown id).

The ``tokenizers`` WordPiece trainer is the library's BPE trainer with a ``##`` prefix (see
``spec/tokenization/wordpiece.md``): it merges by frequency. Other kinds: NotApplicable.
The library is imported on first use; without it every call raises an ``ImportError`` that
says how to install it. Nothing is downloaded.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from specformer.adapters.hf_common import import_library
from specformer.protocol import Capabilities, NotApplicable

NAME = "hf-tokenizers"
#: The release this adapter is written against (the ``thirdparty`` extra pins it).
TOKENIZERS_VERSION = "0.23.3"
#: Vocabulary sizes of the trained tokenizers.
WORDPIECE_SIZE, UNIGRAM_SIZE = 2000, 1000


def _tokenizers() -> ModuleType:
    return import_library("tokenizers", "tokenizers", NAME)


@functools.lru_cache(maxsize=2)
def trained(kind: str) -> Any:
    """The ``tokenizers.Tokenizer`` of ``kind`` (``"wordpiece"`` or ``"unigram"``), trained on the tokenizer training text."""
    from specformer.reference.tokenization.training import tokenizer_training_text

    tk = _tokenizers()
    lines = [line for line in tokenizer_training_text().splitlines() if line.strip()]
    if kind == "wordpiece":
        tokenizer = tk.Tokenizer(tk.models.WordPiece(unk_token="[UNK]"))
        tokenizer.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = tk.decoders.WordPiece()
        trainer = tk.trainers.WordPieceTrainer(vocab_size=WORDPIECE_SIZE, special_tokens=["[UNK]"],
                                               show_progress=False)
    elif kind == "unigram":
        tokenizer = tk.Tokenizer(tk.models.Unigram())
        tokenizer.pre_tokenizer = tk.pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
        tokenizer.decoder = tk.decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
        trainer = tk.trainers.UnigramTrainer(vocab_size=UNIGRAM_SIZE, unk_token="<unk>", special_tokens=["<unk>"],
                                             show_progress=False)
    else:
        raise NotApplicable(f"{NAME} trains no {kind!r} tokenizer (only 'wordpiece' and 'unigram')")
    tokenizer.train_from_iterator(lines, trainer)
    return tokenizer


class HFTokenizersSubword:
    """``tokenizers``' WordPiece and Unigram models, and tokenizers trained with them."""

    name = NAME
    #: The tokenizer kinds it runs (and, where its library takes valid Unicode only, no lone surrogates).
    capabilities = Capabilities(conventions={"tokenizer_kind": frozenset({"wordpiece", "unigram"})})

    def wordpiece(self, word: str, vocab: list[str], *, unk: str = "[UNK]", prefix: str = "##",
                  max_chars: int = 100) -> list[str]:
        """``models.WordPiece`` on the given vocabulary (``unk`` added if absent)."""
        tk = _tokenizers()
        ids: dict[str, int] = {}
        for piece in [*vocab, unk]:
            ids.setdefault(piece, len(ids))
        model = tk.models.WordPiece(ids, unk_token=unk, continuing_subword_prefix=prefix,
                                    max_input_chars_per_word=max_chars)
        return list(tk.Tokenizer(model).encode(word).tokens)

    def unigram_segment(self, word: str, pieces: dict[str, float]) -> list[str]:
        """``models.Unigram`` on the given log-probabilities: its Viterbi segmentation."""
        tk = _tokenizers()
        model = tk.models.Unigram([(piece, float(logp)) for piece, logp in pieces.items()])
        return list(tk.Tokenizer(model).encode(word).tokens)

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """The pieces of ``text`` under the trained ``"wordpiece"`` or ``"unigram"`` tokenizer."""
        return list(trained(kind).encode(text).tokens)

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """The trained tokenizer's decoder applied to ``tokens``."""
        return str(trained(kind).decoder.decode(list(tokens)))


implementation = HFTokenizersSubword()
