"""Hugging Face ``tokenizers`` byte pair encoding behind the tokenization protocol.

Everything runs in the library (``tokenizers`` 0.23.3, Rust): ``trainers.BpeTrainer``
learns the merges, ``models.BPE`` applies them, ``pre_tokenizers.ByteLevel`` and
``decoders.ByteLevel`` do GPT-2's byte-level mapping. The adapter only converts
conventions, which differ from the protocol's in three places:

* **The end-of-word marker.** The library's ``end_of_word_suffix`` glues the marker to the
  last character (``low`` starts as ``l o w</w>``), while the protocol's words start as
  ``l o w </w>``, the marker a symbol of its own that training may merge or not. So for
  ``bpe_train`` and ``bpe_encode`` the adapter appends a stand-in character to every word
  instead (a character the words do not contain, chosen to sort among their characters
  where the marker's text sorts, see :func:`_stand_in`), lets the library treat it as an
  ordinary character, and writes it back as the marker. Training and encoding are then
  the library's, on the protocol's initial split.
  ``tokenize_text("bpe")`` uses ``end_of_word_suffix`` itself, as a user of the library
  would, with ``decoders.BPEDecoder``.
* **Bytes.** The byte-level model works on GPT-2's byte alphabet: each byte is a visible
  character (:func:`byte_alphabet`: ``" "`` is ``"Ġ"``). ``byte_bpe_*`` convert between
  the protocol's ``bytes`` and those characters; ``tokenize_text("byte-bpe")`` returns
  the library's tokens, which are strings in that alphabet. ``byte_bpe_train`` gives each
  word to ``ByteLevel(use_regex=False)`` so that a word stays one piece; the words must be
  UTF-8 (a ``str`` is what the library takes). ``byte_bpe_encode`` splits text with
  ByteLevel's own pattern, GPT-2's (``" ?\\p{L}+"``, digits, punctuation, spaces...).
* **Counts and the number of merges.** The trainer takes text, not counts, and a
  vocabulary size, not a number of merges: each word is fed as often as it is counted, and
  the size asked for is the alphabet plus ``num_merges``. A merge whose new symbol already
  exists does not grow the library's vocabulary, so it may learn more merges than asked:
  the list is cut to ``num_merges``.

What the library does that the protocol does not ask (reported, not hidden):

* ties between pairs of equal count go to the pair of smaller token ids; the alphabet's
  ids follow the characters' code points, merged symbols get ids in the order they are
  made. With ``end_of_word_suffix`` the suffixed symbols (``"w</w>"``) get ids in the
  iteration order of a hash map, so ties between them are broken differently from one
  training to the next (see ``tests/test_adapters_tokenization_bpe.py``);
* a character missing from a trained vocabulary is dropped (no ``unk_token`` is set);
* ``decoders.ByteLevel`` replaces bytes that are not UTF-8 with U+FFFD instead of raising;
* a ``str`` with a lone surrogate cannot be passed to the library at all: ``NotApplicable``.

Text tokenizers (``tokenize_text`` kinds ``"bpe"`` and ``"byte-bpe"``) are trained once
per process on :func:`specformer.reference.tokenization.training.tokenizer_training_text`, with
:data:`MERGES` merges. Nothing is downloaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from specformer.adapters.hf_common import import_library
from specformer.protocol import Capabilities, NotApplicable

#: Merges learned by the text tokenizers (kinds ``"bpe"`` and ``"byte-bpe"``).
MERGES = 1000
#: The release this adapter is written against.
TOKENIZERS_VERSION = "0.23.3"
_ADAPTER = "hf-tokenizers"


def _tokenizers() -> Any:
    return import_library("tokenizers", "tokenizers", _ADAPTER)


@lru_cache(maxsize=1)
def byte_alphabet() -> tuple[str, ...]:
    """GPT-2's byte-to-character table: entry ``b`` is the visible character that stands for byte ``b``.

    Printable Latin-1 bytes (``!`` to ``~``, ``¡`` to ``¬``, ``®`` to ``ÿ``) stand for
    themselves; the other 68 (controls, space, soft hyphen...) take the characters from
    U+0100 on, in byte order. ``tokenizers``' ``ByteLevel`` uses this table.
    """
    kept = {*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    table, extra = [], 0
    for byte in range(256):
        if byte in kept:
            table.append(chr(byte))
        else:
            table.append(chr(0x100 + extra))
            extra += 1
    return tuple(table)


@lru_cache(maxsize=1)
def _byte_of() -> dict[str, int]:
    return {char: byte for byte, char in enumerate(byte_alphabet())}


def bytes_to_text(data: bytes) -> str:
    """``data`` in GPT-2's byte alphabet, one character per byte."""
    table = byte_alphabet()
    return "".join(table[b] for b in data)


def text_to_bytes(token: str) -> bytes:
    """The bytes of a token written in GPT-2's byte alphabet; ``ValueError`` for other characters."""
    byte_of = _byte_of()
    try:
        return bytes(byte_of[c] for c in token)
    except KeyError as exc:
        raise ValueError(f"{token!r} is not written in the byte alphabet: {exc.args[0]!r} stands for no byte") from None


def _check_words(words: Mapping[Any, int], kind: type, num_merges: int) -> None:
    if isinstance(num_merges, bool) or not isinstance(num_merges, int):
        raise TypeError(f"num_merges must be an int, got {type(num_merges).__name__}")
    if num_merges < 0:
        raise ValueError(f"num_merges must be >= 0, got {num_merges}")
    if not isinstance(words, Mapping) or not words:
        raise ValueError("empty corpus: words has no entries, there is nothing to learn merges from")
    for word, count in words.items():
        if not isinstance(word, kind):
            raise TypeError(f"words must be {kind.__name__}, got {word!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"word counts must be positive integers, got {count!r} for {word!r}")


def _stand_in(texts: list[str], end_of_word: str = "") -> str:
    """A character that occurs in none of ``texts``, to stand for the marker.

    Preferably one that compares with the words' characters as ``end_of_word`` does (for
    ``"</w>"``: after ``"<"`` and before every character above it), so that the library's
    ties between a pair with the marker and one without, which follow code points among
    the alphabet's characters, go the protocol's way; otherwise the first private-use
    character (U+E000 on) that is free.
    """
    seen = set().union(*map(set, texts)) if texts else set()
    if end_of_word:
        above = [c for c in seen if c > end_of_word]
        ceiling = ord(min(above)) if above else 0x110000
        for code in range(ord(end_of_word[0]) + 1 if len(end_of_word) > 1 else ord(end_of_word[0]), ceiling):
            char = chr(code)
            if char not in seen and char > end_of_word and not 0xD800 <= code <= 0xDFFF:
                return char
    for code in range(0xE000, 0xF900):
        if chr(code) not in seen:
            return chr(code)
    raise NotApplicable("every private-use character occurs in the words: no stand-in for the marker is left")


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def _refuse_surrogates(*texts: str) -> None:
    if any(_has_surrogate(t) for t in texts):
        raise NotApplicable("tokenizers takes only valid Unicode: a str with a lone surrogate cannot be passed "
                            "to the library (TypeError: TextInputSequence must be str)")


def _merges_of(tokenizer: Any) -> list[tuple[str, str]]:
    """The trained model's merges, in rank order, from its JSON form."""
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in merges]  # type: ignore[misc]


def _feed(words: Mapping[str, int]) -> Iterator[str]:
    for word, count in words.items():
        for _ in range(count):
            yield word


class HFTokenizersBPE:
    """``tokenizers``' BPE trainer and model, character and byte level (see the module)."""

    name = _ADAPTER
    #: The tokenizer kinds it runs (and, where its library takes valid Unicode only, no lone surrogates).
    capabilities = Capabilities(conventions={"tokenizer_kind": frozenset({"bpe", "byte-bpe"}),
                                             "lone_surrogates": frozenset({False})})

    # -- character level ---------------------------------------------------------------
    def bpe_train(self, words: dict[str, int], num_merges: int, *, end_of_word: str = "</w>") -> list[tuple[str, str]]:
        """``BpeTrainer`` on the words, each followed by a stand-in for the marker; merges cut to ``num_merges``."""
        tk = _tokenizers()
        _check_words(words, str, num_merges)
        _check_marker(end_of_word)
        _refuse_surrogates(*words)
        mark = _stand_in(list(words), end_of_word)
        fed = {word + mark: count for word, count in words.items()}
        alphabet = set().union(*map(set, fed))
        tokenizer = tk.Tokenizer(tk.models.BPE())  # no normaliser, no pre-tokenizer: a word is one piece
        trainer = tk.trainers.BpeTrainer(vocab_size=len(alphabet) + num_merges, min_frequency=0,
                                         show_progress=False, special_tokens=[])
        tokenizer.train_from_iterator(_feed(fed), trainer, length=sum(fed.values()))
        back = [(a.replace(mark, end_of_word), b.replace(mark, end_of_word)) for a, b in _merges_of(tokenizer)]
        return back[:num_merges]

    def bpe_encode(self, word: str, merges: list[tuple[str, str]], *, end_of_word: str = "</w>") -> list[str]:
        """``models.BPE`` with the merges (the marker as a stand-in character) on ``word`` plus the stand-in."""
        if not isinstance(word, str):
            raise TypeError(f"word must be a str, got {type(word).__name__}")
        _check_marker(end_of_word)
        if end_of_word in word:
            raise NotApplicable(f"the word contains the marker text {end_of_word!r}: its stand-in would be ambiguous")
        pairs = _checked_pairs(merges, str)
        _refuse_surrogates(word, *(s for pair in pairs for s in pair))
        mark = _stand_in([word, *(s for pair in pairs for s in pair)])

        def mapped(symbol: str) -> str:
            return symbol[:-len(end_of_word)] + mark if symbol.endswith(end_of_word) else symbol

        tokenizer = _char_model(tuple((mapped(a), mapped(b)) for a, b in pairs), frozenset(word + mark))
        tokens = tokenizer.encode(word + mark).tokens
        return [t.replace(mark, end_of_word) for t in tokens]

    # -- byte level --------------------------------------------------------------------
    def byte_bpe_train(self, words: dict[bytes, int], num_merges: int) -> list[tuple[bytes, bytes]]:
        """``BpeTrainer`` behind ``ByteLevel(use_regex=False)`` with the 256-byte alphabet; words must be UTF-8."""
        tk = _tokenizers()
        _check_words(words, bytes, num_merges)
        texts: dict[str, int] = {}
        for word, count in words.items():
            try:
                texts[word.decode("utf-8")] = count
            except UnicodeDecodeError:
                raise NotApplicable(f"tokenizers trains on str: the word {word!r} is not UTF-8") from None
        _refuse_surrogates(*texts)  # "surrogatepass" bytes are not UTF-8 and never get here
        tokenizer = tk.Tokenizer(tk.models.BPE())
        tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        trainer = tk.trainers.BpeTrainer(vocab_size=256 + num_merges, min_frequency=0, show_progress=False,
                                         special_tokens=[], initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet())
        tokenizer.train_from_iterator(_feed(texts), trainer, length=sum(texts.values()))
        return [(text_to_bytes(a), text_to_bytes(b)) for a, b in _merges_of(tokenizer)][:num_merges]

    def byte_bpe_encode(self, text: str, merges: list[tuple[bytes, bytes]]) -> list[bytes]:
        """``models.BPE`` over the byte alphabet behind ``ByteLevel`` (GPT-2's split); tokens as bytes."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        _refuse_surrogates(text)
        pairs = tuple((bytes_to_text(a), bytes_to_text(b)) for a, b in _checked_pairs(merges, bytes))
        return [text_to_bytes(t) for t in _byte_model(pairs).encode(text).tokens]

    def byte_bpe_decode(self, tokens: list[bytes]) -> str:
        """``decoders.ByteLevel`` on the tokens written in the byte alphabet (invalid UTF-8 becomes U+FFFD)."""
        tk = _tokenizers()
        if isinstance(tokens, (bytes, str)) or not all(isinstance(t, bytes) for t in tokens):
            raise TypeError("tokens must be a list of bytes")
        return tk.decoders.ByteLevel().decode([bytes_to_text(t) for t in tokens])

    # -- text --------------------------------------------------------------------------
    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """The tokens of the library's tokenizer ``kind`` (``"bpe"`` or ``"byte-bpe"``) trained on the tokenizer training text."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        tokenizer = _text_tokenizer(kind)
        _refuse_surrogates(text)
        return list(tokenizer.encode(text).tokens)

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """The library's decoder of ``kind``: ``BPEDecoder(suffix="</w>")`` or ``decoders.ByteLevel``."""
        tokenizer = _text_tokenizer(kind)
        if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
            raise TypeError("tokens must be a list of str")
        _refuse_surrogates(*tokens)
        return tokenizer.decoder.decode(list(tokens))


def _check_marker(end_of_word: str) -> None:
    if not isinstance(end_of_word, str) or not end_of_word:
        raise ValueError(f"end_of_word must be a non-empty string, got {end_of_word!r}")


def _checked_pairs(merges: Any, kind: type) -> list[tuple[Any, Any]]:
    pairs = []
    for rank, entry in enumerate(merges):
        if not isinstance(entry, (tuple, list)) or len(entry) != 2 or not all(isinstance(s, kind) and s for s in entry):
            raise TypeError(f"merge {rank} must be a pair of two non-empty {kind.__name__}, got {entry!r}")
        pairs.append((entry[0], entry[1]))
    return pairs


def _model_vocab(pairs: tuple[tuple[str, str], ...], base: list[str]) -> dict[str, int]:
    """Ids for the base symbols, every symbol the merges name, and every merged symbol."""
    vocab: dict[str, int] = {}
    for symbol in [*base, *(s for a, b in pairs for s in (a, b, a + b))]:
        vocab.setdefault(symbol, len(vocab))
    return vocab


@lru_cache(maxsize=64)
def _char_model(pairs: tuple[tuple[str, str], ...], characters: frozenset[str]) -> Any:
    """A tokenizer of one piece per input, ``models.BPE`` with these merges; ``characters`` are in its vocabulary."""
    tk = _tokenizers()
    vocab = _model_vocab(pairs, sorted(characters))
    return tk.Tokenizer(tk.models.BPE(vocab=vocab, merges=list(pairs)))


@lru_cache(maxsize=16)
def _byte_model(pairs: tuple[tuple[str, str], ...]) -> Any:
    """``models.BPE`` over the 256-byte alphabet plus these merges, behind GPT-2's ``ByteLevel`` split."""
    tk = _tokenizers()
    vocab = _model_vocab(pairs, list(byte_alphabet()))
    tokenizer = tk.Tokenizer(tk.models.BPE(vocab=vocab, merges=list(pairs)))
    tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = tk.decoders.ByteLevel()
    return tokenizer


@lru_cache(maxsize=2)
def _text_tokenizer(kind: str) -> Any:
    """The tokenizer of ``kind``, trained on the tokenizer training text (once per process)."""
    if kind not in ("bpe", "byte-bpe"):
        raise NotApplicable(f"{_ADAPTER} holds BPE tokenizers only (kinds 'bpe' and 'byte-bpe'), not {kind!r}")
    tk = _tokenizers()
    from specformer.reference.tokenization.training import tokenizer_training_text, tokenizer_training_words

    if kind == "bpe":
        words = tokenizer_training_words()
        alphabet = set().union(*map(set, words)) | {word[-1] + "</w>" for word in words}
        tokenizer = tk.Tokenizer(tk.models.BPE(end_of_word_suffix="</w>"))
        tokenizer.pre_tokenizer = tk.pre_tokenizers.WhitespaceSplit()
        tokenizer.decoder = tk.decoders.BPEDecoder(suffix="</w>")
        trainer = tk.trainers.BpeTrainer(vocab_size=len(alphabet) + MERGES, min_frequency=0, show_progress=False,
                                         special_tokens=[], end_of_word_suffix="</w>")
        tokenizer.train_from_iterator([tokenizer_training_text()], trainer)  # split by the library's WhitespaceSplit
        return tokenizer
    tokenizer = tk.Tokenizer(tk.models.BPE())
    tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(vocab_size=256 + MERGES, min_frequency=0, show_progress=False, special_tokens=[],
                                     initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([tokenizer_training_text()], trainer)
    return tokenizer


implementation = HFTokenizersBPE()
