"""Google's ``sentencepiece`` library behind the protocol: BPE and Unigram models trained here.

``tokenize_text(kind, text)`` for ``kind`` ``"bpe"`` or ``"unigram"`` is the library's
``encode(text, out_type=str)`` with a model of that type trained, once per process, on
:func:`specformer.reference.tokenization.training.tokenizer_training_text` (each non-blank line a
sentence, fed through ``sentence_iterator``, the model written to memory): 1,000 pieces,
``character_coverage=1.0`` (every character of the tokenizer training text is a piece),
``num_threads=1`` and the library's random generator seeded, so that the model is the same
on every run. Everything else is the library's default, as a user would train it:

* the ``nmt_nfkc`` normaliser: NFKC (``"ﬁ"`` becomes ``"fi"``, full-width letters become
  ASCII), runs of whitespace collapsed to one space and spaces at either end removed;
* a ``"▁"`` put in front of the text (``add_dummy_prefix``) and every space written ``"▁"``;
  pieces never span a space (``split_by_whitespace``);
* no byte fallback: a character missing from the model is one piece with the unknown id.
  Returned as pieces (strings), it keeps its text, so decoding these pieces restores it;
  decoding the ids instead would give ``" ⁇ "``.

``detokenize_text(kind, tokens)`` is ``decode_pieces(tokens)``. Other kinds:
NotApplicable. The library is imported on first use (an ``ImportError`` that says how to
install it otherwise). Nothing is downloaded.
"""

from __future__ import annotations

import functools
import io
from types import ModuleType
from typing import Any

from specformer.adapters.hf_common import import_library
from specformer.protocol import Capabilities, NotApplicable

NAME = "sentencepiece"
#: The release this adapter is written against (the ``thirdparty`` extra pins it).
SENTENCEPIECE_VERSION = "0.2.3"
#: The size of both trained models.
VOCAB_SIZE = 1000
KINDS = ("bpe", "unigram")


def _spm() -> ModuleType:
    return import_library("sentencepiece", "sentencepiece", NAME)


def training_options(kind: str) -> dict[str, Any]:
    """The trainer's options for ``kind`` (the library's defaults otherwise)."""
    return dict(model_type=kind, vocab_size=VOCAB_SIZE, character_coverage=1.0, num_threads=1, minloglevel=2)


@functools.lru_cache(maxsize=2)
def processor(kind: str) -> Any:
    """A ``SentencePieceProcessor`` with a ``kind`` model trained on the tokenizer training text."""
    from specformer.reference.tokenization.training import tokenizer_training_text

    if kind not in KINDS:
        raise NotApplicable(f"{NAME} trains no {kind!r} tokenizer (only {', '.join(map(repr, KINDS))})")
    spm = _spm()
    spm.set_random_generator_seed(0)
    lines = [line for line in tokenizer_training_text().splitlines() if line.strip()]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, **training_options(kind))
    return spm.SentencePieceProcessor(model_proto=model.getvalue())


class SentencePieceTokenizers:
    """``sentencepiece``'s BPE and Unigram tokenizers, trained on the suite's tokenizer training text."""

    name = NAME
    #: The tokenizer kinds it runs (and, where its library takes valid Unicode only, no lone surrogates).
    capabilities = Capabilities(conventions={"tokenizer_kind": frozenset(KINDS)})

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """``encode(text, out_type=str)``: the pieces, ``"▁"`` marking the start of each word."""
        return [str(piece) for piece in processor(kind).encode(text, out_type=str)]

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """``decode_pieces(tokens)``: pieces joined, ``"▁"`` back to spaces, the leading one removed."""
        return str(processor(kind).decode_pieces(list(tokens)))


implementation = SentencePieceTokenizers()
