"""OpenAI's ``tiktoken`` byte-level BPE encoder behind the tokenization protocol.

``tiktoken`` (0.14.0) encodes and decodes; it has no trainer (only a slow educational one)
and its real vocabularies (``cl100k_base``...) are downloaded by ``tiktoken.get_encoding``,
which this adapter never calls. Every ``tiktoken.Encoding`` here is built locally from
merges learned in this project:

* ``byte_bpe_encode(text, merges)``: ``Encoding(name, pat_str, mergeable_ranks,
  special_tokens={})`` with ``mergeable_ranks`` the 256 single bytes at ranks 0 to 255,
  then merge ``r``'s concatenation at rank ``256 + r`` (a concatenation already ranked
  keeps its first rank: tiktoken ranks *tokens*, not pairs). ``encode_ordinary`` gives
  token ids, ``decode_single_token_bytes`` their bytes. Text is split by GPT-2's pattern as
  tiktoken ships it (``tiktoken_ext.openai_public.r50k_pat_str``), the same split as
  ``tokenizers``' ``ByteLevel``.
* ``byte_bpe_decode(tokens)``: an ``Encoding`` whose ranks hold the 256 bytes and the
  given tokens, and its ``decode`` (tiktoken's default ``errors="replace"``: bytes that are
  not UTF-8 become U+FFFD, nothing is raised).
* ``tokenize_text("byte-bpe", text)``: the encoding of :data:`MERGES` merges that the
  reference's byte-level trainer learns from
  :func:`specformer.reference.tokenization.training.tokenizer_training_text` split by the same
  pattern (once per process). Tokens are written in GPT-2's byte alphabet (each byte a
  visible character, ``" "`` as ``"Ġ"``), the alphabet ``tokenizers``' ``ByteLevel`` uses,
  as ``tokenizers`` writes them; ``detokenize_text`` maps them back to ids and decodes.

How tiktoken differs from pair-by-pair BPE: at each step it merges the adjacent pair whose
*concatenation* has the lowest rank, leftmost first, and a piece that is itself a token is
returned whole without merging. For merges a trainer learned these agree with applying
the pairs in rank order; for an arbitrary merge list they need not (``[(a, b), (b, c),
(a, bc)]`` turns ``abc`` into ``ab c`` pair by pair, into ``abc`` in tiktoken; see
``tests/test_adapters_tokenization_bpe.py``).

Lone surrogates: ``Encoding.encode_ordinary`` replaces each one with U+FFFD before
encoding (it catches the ``UnicodeEncodeError``), silently. The adapter passes text as
it is, so the suite sees what the library does. Kinds other than ``"byte-bpe"`` and the
character-level operations are not applicable.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any

from specformer.adapters.hf_common import import_library
from specformer.protocol import Capabilities, NotApplicable

#: Merges of the text tokenizer (kind ``"byte-bpe"``), as for the other adapters.
MERGES = 1000
#: The release this adapter is written against.
TIKTOKEN_VERSION = "0.14.0"
_ADAPTER = "tiktoken"


def _tiktoken() -> Any:
    return import_library("tiktoken", "tiktoken", _ADAPTER)


def gpt2_pattern() -> str:
    """GPT-2's pre-tokenisation pattern, as tiktoken ships it (no download)."""
    import_library("tiktoken_ext.openai_public", "tiktoken", _ADAPTER)
    from tiktoken_ext.openai_public import r50k_pat_str

    return r50k_pat_str


def mergeable_ranks(merges: list[tuple[bytes, bytes]] | tuple[tuple[bytes, bytes], ...]) -> dict[bytes, int]:
    """Every single byte at ranks 0..255, then each merge's concatenation at ``256 + r`` (first rank kept).

    ``ValueError`` for a merge that uses a symbol no earlier merge makes (it could never
    occur), ``TypeError`` for an entry that is not a pair of non-empty ``bytes``.
    """
    ranks = {bytes([b]): b for b in range(256)}
    for rank, entry in enumerate(merges):
        if not isinstance(entry, (tuple, list)) or len(entry) != 2 or not all(isinstance(s, bytes) and s
                                                                               for s in entry):
            raise TypeError(f"merge {rank} must be a pair of two non-empty bytes, got {entry!r}")
        for symbol in entry:
            if symbol not in ranks:
                raise ValueError(f"merge {rank} {tuple(entry)!r} uses the symbol {symbol!r}, which cannot occur: it "
                                 "is not a single byte and no earlier merge makes it")
        ranks.setdefault(entry[0] + entry[1], 256 + rank)
    return ranks


@lru_cache(maxsize=16)
def _encoding(ranks_key: tuple[tuple[bytes, int], ...]) -> Any:
    tiktoken = _tiktoken()
    return tiktoken.Encoding("specformer-byte-bpe", pat_str=gpt2_pattern(), mergeable_ranks=dict(ranks_key),
                             special_tokens={})


def encoding_for(merges: list[tuple[bytes, bytes]] | tuple[tuple[bytes, bytes], ...]) -> Any:
    """The ``tiktoken.Encoding`` of these merges (cached per merge list)."""
    return _encoding(tuple(mergeable_ranks(merges).items()))


@lru_cache(maxsize=1)
def text_merges() -> tuple[tuple[bytes, bytes], ...]:
    """:data:`MERGES` byte-level merges the reference learns from the tokenizer training text split by GPT-2's pattern."""
    regex = import_library("regex", "regex", _ADAPTER)
    from specformer.reference.tokenization.bpe import train_byte_bpe
    from specformer.reference.tokenization.training import tokenizer_training_text

    pieces = Counter(piece.encode("utf-8") for piece in regex.findall(gpt2_pattern(), tokenizer_training_text()))
    return tuple(train_byte_bpe(pieces, MERGES))


@lru_cache(maxsize=1)
def _byte_alphabet() -> tuple[str, ...]:
    """GPT-2's byte-to-character table (entry ``b`` stands for byte ``b``), as ``tokenizers`` uses it.

    Printable Latin-1 bytes stand for themselves; the other 68 take U+0100 on, in byte order.
    """
    kept = {*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    table, extra = [], 0
    for byte in range(256):
        table.append(chr(byte) if byte in kept else chr(0x100 + extra))
        extra += byte not in kept
    return tuple(table)


class TiktokenBPE:
    """tiktoken's encoder and decoder on merges learned here (see the module)."""

    name = _ADAPTER
    #: The tokenizer kinds it runs (and, where its library takes valid Unicode only, no lone surrogates).
    capabilities = Capabilities(conventions={"tokenizer_kind": frozenset({"byte-bpe"})})

    def byte_bpe_encode(self, text: str, merges: list[tuple[bytes, bytes]]) -> list[bytes]:
        """``Encoding.encode_ordinary`` with ranks from the merges; each id's bytes."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        encoding = encoding_for(tuple(tuple(m) for m in merges))
        return [encoding.decode_single_token_bytes(i) for i in encoding.encode_ordinary(text)]

    def byte_bpe_decode(self, tokens: list[bytes]) -> str:
        """``Encoding.decode`` of the tokens' ids in an encoding that holds them (errors="replace")."""
        if isinstance(tokens, (bytes, str)) or not all(isinstance(t, bytes) and t for t in tokens):
            raise TypeError("tokens must be a list of non-empty bytes")
        ranks = {bytes([b]): b for b in range(256)}
        for token in tokens:
            ranks.setdefault(token, len(ranks))
        encoding = _encoding(tuple(ranks.items()))
        return encoding.decode([ranks[t] for t in tokens])

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """Tokens of the training-text encoding, written in GPT-2's byte alphabet."""
        encoding = _text_encoding(kind)
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        table = _byte_alphabet()
        ids = encoding.encode_ordinary(text)
        return ["".join(table[b] for b in encoding.decode_single_token_bytes(i)) for i in ids]

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """The tokens' ids in the training-text encoding, decoded; ``ValueError`` for a token it does not hold."""
        encoding = _text_encoding(kind)
        if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
            raise TypeError("tokens must be a list of str")
        byte_of = {char: byte for byte, char in enumerate(_byte_alphabet())}
        ranks = mergeable_ranks(text_merges())
        ids = []
        for token in tokens:
            try:
                ids.append(ranks[bytes(byte_of[c] for c in token)])
            except KeyError:
                raise ValueError(f"{token!r} is not a token of the encoding") from None
        return encoding.decode(ids)


def _text_encoding(kind: str) -> Any:
    if kind != "byte-bpe":
        raise NotApplicable(f"{_ADAPTER} is a byte-level BPE encoder: only kind 'byte-bpe', not {kind!r}")
    return encoding_for(text_merges())


implementation = TiktokenBPE()
