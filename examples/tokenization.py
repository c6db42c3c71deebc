"""A minimal adapter for the tokenization family, written from `specformer new tokenization`.

Character-level byte-pair encoding (Sennrich et al.): training and encoding. Check it with:

    specformer run --impl examples/tokenization.py

Conventions (from the protocol): a word is its characters followed by the end-of-word
marker as a symbol of its own ("a", "b", "</w>"); a merge is a pair of symbols; training
returns the merges in the order they were learned.
"""

from __future__ import annotations

from collections import Counter


def _symbols(word: str, end_of_word: str) -> list[str]:
    return [*word, end_of_word]


def _merge(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


class ExampleTokenization:
    """Byte-pair encoding on characters."""

    name = "example-tokenization"

    def bpe_train(self, words: dict[str, int], num_merges: int, *,
                  end_of_word: str = "</w>") -> list[tuple[str, str]]:
        """Merge the most frequent adjacent pair (counted over word occurrences), ``num_merges`` times at most."""
        vocab = {word: _symbols(word, end_of_word) for word in words if word}
        merges: list[tuple[str, str]] = []
        for _ in range(num_merges):
            pairs: Counter[tuple[str, str]] = Counter()
            for word, symbols in vocab.items():
                for pair in zip(symbols, symbols[1:]):
                    pairs[pair] += words[word]
            if not pairs:
                break
            best = min(pairs, key=lambda p: (-pairs[p], p))  # the most frequent; ties: the smallest pair
            merges.append(best)
            vocab = {word: _merge(symbols, best) for word, symbols in vocab.items()}
        return merges

    def bpe_encode(self, word: str, merges: list[tuple[str, str]], *, end_of_word: str = "</w>") -> list[str]:
        """Apply the merges in the order they were learned."""
        symbols = _symbols(word, end_of_word)
        for pair in merges:
            symbols = _merge(symbols, pair)
        return symbols


#: What `specformer run --impl examples/tokenization.py` loads.
implementation = ExampleTokenization
