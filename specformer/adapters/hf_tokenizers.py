"""Hugging Face ``tokenizers`` behind the protocol: one implementation, ``hf-tokenizers``.

The library's BPE models (character level with ``"</w>"``, byte level with GPT-2's
``ByteLevel`` split: :mod:`.hf_tokenizers_bpe`) and its WordPiece and Unigram models
(:mod:`.hf_tokenizers_subword`) make one implementation; ``tokenize_text`` and
``detokenize_text`` go to the module that holds the kind (``"bpe"``, ``"byte-bpe"``;
``"wordpiece"``, ``"unigram"``). What each model does and does not do is written in those
modules. Nothing is downloaded; the library is imported on first use.
"""

from __future__ import annotations

from specformer.protocol.capabilities import Capabilities
from specformer.adapters.hf_tokenizers_bpe import HFTokenizersBPE
from specformer.adapters.hf_tokenizers_subword import HFTokenizersSubword

#: The kinds of ``tokenize_text`` the subword module holds; every other kind goes to the BPE module.
SUBWORD_KINDS = ("wordpiece", "unigram")


class HFTokenizers(HFTokenizersBPE, HFTokenizersSubword):
    """Every model of ``tokenizers`` the protocol asks about."""

    name = "hf-tokenizers"
    #: The tokenizer kinds it runs (and, where its library takes valid Unicode only, no lone surrogates).
    capabilities = Capabilities(conventions={"tokenizer_kind": frozenset({"bpe", "byte-bpe", *SUBWORD_KINDS}),
                                             "lone_surrogates": frozenset({False})})

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """The tokens of the library's tokenizer ``kind``, trained on the training text."""
        if kind in SUBWORD_KINDS:
            return HFTokenizersSubword.tokenize_text(self, kind, text)
        return HFTokenizersBPE.tokenize_text(self, kind, text)

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """The decoder of the library's tokenizer ``kind``."""
        if kind in SUBWORD_KINDS:
            return HFTokenizersSubword.detokenize_text(self, kind, tokens)
        return HFTokenizersBPE.detokenize_text(self, kind, tokens)


implementation = HFTokenizers()
