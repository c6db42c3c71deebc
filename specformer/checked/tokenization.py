"""Checked calls of the tokenization family.

Mixed into :class:`specformer.context.Context`: calls the operation in the
implementation's worker and checks that the result has the promised type (a list of
strings, of byte strings, of pairs of either, or a string) before a property reads it.
Nothing here depends on the dtype or device under test: tokenizers are run once, on the
CPU, in float64 rows only (see :func:`specformer.property.claim_property`'s ``dtypes``).
"""

from __future__ import annotations

from typing import Any

from specformer.checked import register
from specformer.checked.base import ContextBase as _Base
from specformer.checked.base import ImplementationError

#: The longest list a tokenization operation may return (a bound against runaway output).
MAX_ITEMS = 1_000_000


def _items(op: str, value: Any, item: type, what: str) -> list[Any]:
    from specformer.runner.wire import describe

    if not isinstance(value, (list, tuple)):
        raise ImplementationError(f"{op} returned {describe(value)} for {what}, expected a list of {item.__name__}")
    if len(value) > MAX_ITEMS:
        raise ImplementationError(f"{op} returned {len(value)} items for {what}, more than {MAX_ITEMS}")
    for i, x in enumerate(value):
        if type(x) is not item:
            raise ImplementationError(f"{op} returned {describe(x)} at index {i} of {what}, expected {item.__name__}")
    return list(value)


def _pairs(op: str, value: Any, item: type, what: str) -> list[tuple[Any, Any]]:
    if not isinstance(value, (list, tuple)):
        _items(op, value, tuple, what)  # raises with the type found
    pairs = []
    for i, pair in enumerate(value):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not all(type(s) is item for s in pair):
            raise ImplementationError(f"{op} returned {pair!r:.200} at index {i} of {what}, expected a pair of "
                                      f"{item.__name__}")
        pairs.append((pair[0], pair[1]))
    if len(pairs) > MAX_ITEMS:
        raise ImplementationError(f"{op} returned {len(pairs)} items for {what}, more than {MAX_ITEMS}")
    return pairs


def _log_probabilities(op: str, value: Any, what: str) -> dict[str, float]:
    from specformer.runner.wire import describe

    if not isinstance(value, dict):
        raise ImplementationError(f"{op} returned {describe(value)} for {what}, expected a dict of str to float")
    if len(value) > MAX_ITEMS:
        raise ImplementationError(f"{op} returned {len(value)} items for {what}, more than {MAX_ITEMS}")
    table = {}
    for piece, logp in value.items():
        if type(piece) is not str or type(logp) not in (float, int) or not logp <= 1e-12:
            raise ImplementationError(f"{op} returned {piece!r:.100}: {logp!r:.100} in {what}, expected a piece "
                                      "(str) and a log-probability (a float <= 0)")
        table[piece] = float(logp)
    return table


@register
class TokenizationCalls(_Base):
    """The tokenization family's operations, as a property calls them."""

    def bpe_train(self, words: dict[str, int], num_merges: int, *, end_of_word: str = "</w>") -> list[tuple[str, str]]:
        """The implementation's character-level merges, checked to be pairs of strings."""
        result = self.call("bpe_train", dict(words), num_merges, names=("words", "num_merges"),
                           end_of_word=end_of_word)
        return _pairs("bpe_train", result, str, "the merges")

    def bpe_encode(self, word: str, merges: list[tuple[str, str]], *, end_of_word: str = "</w>") -> list[str]:
        """The implementation's symbols of ``word``."""
        result = self.call("bpe_encode", word, [tuple(m) for m in merges], names=("word", "merges"),
                           end_of_word=end_of_word)
        return _items("bpe_encode", result, str, f"the symbols of {word!r:.100}")

    def byte_bpe_train(self, words: dict[bytes, int], num_merges: int) -> list[tuple[bytes, bytes]]:
        """The implementation's byte-level merges, checked to be pairs of byte strings."""
        result = self.call("byte_bpe_train", dict(words), num_merges, names=("words", "num_merges"))
        return _pairs("byte_bpe_train", result, bytes, "the merges")

    def byte_bpe_encode(self, text: str, merges: list[tuple[bytes, bytes]]) -> list[bytes]:
        """The implementation's byte tokens of ``text``."""
        result = self.call("byte_bpe_encode", text, [tuple(m) for m in merges], names=("text", "merges"))
        return _items("byte_bpe_encode", result, bytes, "the byte tokens")

    def byte_bpe_decode(self, tokens: list[bytes]) -> str:
        """The implementation's text of byte ``tokens``."""
        result = self.call("byte_bpe_decode", list(tokens), names=("tokens",))
        return self._text("byte_bpe_decode", result)

    def wordpiece(self, word: str, vocab: list[str], *, unk: str = "[UNK]", prefix: str = "##",
                  max_chars: int = 100) -> list[str]:
        """The implementation's WordPiece pieces of ``word``."""
        result = self.call("wordpiece", word, list(vocab), names=("word", "vocab"), unk=unk, prefix=prefix,
                           max_chars=max_chars)
        return _items("wordpiece", result, str, f"the pieces of {word!r:.100}")

    def unigram_segment(self, word: str, pieces: dict[str, float]) -> list[str]:
        """The implementation's unigram segmentation of ``word``."""
        result = self.call("unigram_segment", word, dict(pieces), names=("word", "pieces"))
        return _items("unigram_segment", result, str, f"the segmentation of {word!r:.100}")

    def unigram_em_step(self, words: dict[str, int], pieces: dict[str, float]) -> dict[str, float]:
        """The implementation's piece table after one EM step, checked to be log-probabilities."""
        result = self.call("unigram_em_step", dict(words), dict(pieces), names=("words", "pieces"))
        return _log_probabilities("unigram_em_step", result, "the piece table after an EM step")

    def unigram_prune(self, words: dict[str, int], pieces: dict[str, float], size: int) -> dict[str, float]:
        """The implementation's piece table after one pruning step, checked to be log-probabilities."""
        result = self.call("unigram_prune", dict(words), dict(pieces), size, names=("words", "pieces", "size"))
        return _log_probabilities("unigram_prune", result, "the piece table after pruning")

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        """The tokens of ``text`` under the implementation's tokenizer ``kind`` (not applicable at once for a kind
        the implementation declares it does not run)."""
        self.require("tokenizer_kind", kind)
        result = self.call("tokenize_text", kind, text, names=("kind", "text"))
        return _items("tokenize_text", result, str, f"the {kind} tokens")

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        """The text of ``tokens`` under the implementation's tokenizer ``kind``."""
        self.require("tokenizer_kind", kind)
        result = self.call("detokenize_text", kind, list(tokens), names=("kind", "tokens"))
        return self._text("detokenize_text", result)

    def _text(self, op: str, value: Any) -> str:
        from specformer.runner.wire import describe

        if type(value) is not str:
            raise ImplementationError(f"{op} returned {describe(value)}, expected a str")
        return value
