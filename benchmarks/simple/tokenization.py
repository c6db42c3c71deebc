"""A plain tokenization implementation, written as a user would from `specformer protocol tokenization`.

Started from `specformer new tokenization`; every operation is the documents' own textbook
algorithm, loops and all, with nothing made fast:

* BPE training recounts every adjacent pair of every word after each merge and takes the
  most frequent (ties: the pair counted first, as 001's code does); encoding applies the
  merges one after another, each at every occurrence;
* byte-level BPE is the same on UTF-8 bytes; text is pre-split into pieces of an optional
  space and a run of non-space characters, or a run of whitespace (`PIECE`);
* WordPiece is greedy longest-match-first (BERT's loop);
* Unigram segmentation is a Python-loop Viterbi; one EM step is forward-backward in log
  space over every word; one pruning step uses SentencePiece's Viterbi approximation of
  each piece's loss;
* `tokenize_text` runs tokenizers trained here, lazily and once per process, on the
  suite's training text (`TRAINING_CORPUS`): words (a regular expression: runs of
  letters and digits, and every other non-space character alone), characters, BPE,
  byte-level BPE (tokens written as Latin-1 strings, one character per byte) and a
  SentencePiece-style Unigram tokenizer (spaces become "▁", pieces never cross a word).

Not provided: the `"wordpiece"` and `"bert"` text tokenizers (they need a trained or
shipped WordPiece vocabulary; `wordpiece` itself is provided, one word at a time).

Conventions declared: the tokenizer kinds above, and `lone_surrogates=False`: text goes
through `str.encode("utf-8")`, which refuses a lone surrogate.

Check it:  specformer run --impl benchmarks/simple/tokenization.py
"""

from __future__ import annotations

import math
import re
from collections import Counter

from specformer.protocol import Capabilities

#: Merges of the "bpe" and "byte-bpe" text tokenizers, and the size of the "unigram" one.
TEXT_MERGES = 300
UNIGRAM_SIZE = 500
#: Unigram training: the longest seed piece and how many seed pieces (characters come on top).
UNIGRAM_MAX_PIECE = 6
UNIGRAM_SEED = 1000

END_OF_WORD = "</w>"
MARKER = "\u2581"
#: Byte-level pre-split: an optional space and non-space characters, or whitespace.
PIECE = re.compile(r" ?\S+|\s+")
#: Word tokens: runs of letters, digits and underscores, and every other non-space character alone.
WORD = re.compile(r"\w+|[^\w\s]")
NEG_INF = float("-inf")


def training_text() -> str:
    """The suite's training text (`TRAINING_CORPUS` of the protocol)."""
    from specformer.reference.tokenization.training import tokenizer_training_text as text

    return text()


# --------------------------------------------------------------------------- BPE


def merge_pair(symbols: list, pair: tuple) -> list:
    """``symbols`` with every occurrence of ``pair`` joined, left to right."""
    out = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def learn_merges(segments: dict, counts: dict, num_merges: int) -> list:
    """The naive BPE loop: count every pair, merge the most frequent one everywhere, repeat."""
    merges = []
    for _ in range(num_merges):
        pairs: Counter = Counter()
        for word, symbols in segments.items():
            for i in range(len(symbols) - 1):
                pairs[(symbols[i], symbols[i + 1])] += counts[word]
        if not pairs:
            break
        best = max(pairs, key=pairs.get)  # ties: the pair counted first
        merges.append(best)
        segments = {word: merge_pair(symbols, best) for word, symbols in segments.items()}
    return merges


def apply_merges(symbols: list, merges: list) -> list:
    """Apply the merges in the order they were learned."""
    for pair in merges:
        symbols = merge_pair(symbols, tuple(pair))
    return symbols


# --------------------------------------------------------------------------- unigram


def log_add(a: float, b: float) -> float:
    """log(exp(a) + exp(b))."""
    if a == NEG_INF:
        return b
    if b == NEG_INF:
        return a
    top = max(a, b)
    return top + math.log(math.exp(a - top) + math.exp(b - top))


def viterbi(word: str, pieces: dict, exclude: str | None = None) -> list:
    """The segmentation of ``word`` of largest total log-probability, without the piece ``exclude``."""
    n = len(word)
    best = [NEG_INF] * (n + 1)
    back = [0] * (n + 1)
    best[0] = 0.0
    for end in range(1, n + 1):
        for start in range(end):
            piece = word[start:end]
            if piece in pieces and piece != exclude and best[start] != NEG_INF:
                score = best[start] + pieces[piece]
                if score > best[end]:
                    best[end] = score
                    back[end] = start
    if best[n] == NEG_INF:
        raise ValueError(f"{word!r} cannot be segmented with these pieces")
    out = []
    end = n
    while end > 0:
        out.append(word[back[end]:end])
        end = back[end]
    return out[::-1]


def expected_counts(words: dict, pieces: dict) -> dict:
    """E step: the log of the expected count of every piece over all segmentations of every word
    (forward-backward, all in log space so that nothing underflows)."""
    expected = dict.fromkeys(pieces, NEG_INF)
    for word, count in words.items():
        n = len(word)
        forward = [NEG_INF] * (n + 1)
        forward[0] = 0.0
        for end in range(1, n + 1):
            for start in range(end):
                piece = word[start:end]
                if piece in pieces:
                    forward[end] = log_add(forward[end], forward[start] + pieces[piece])
        backward = [NEG_INF] * (n + 1)
        backward[n] = 0.0
        for start in range(n - 1, -1, -1):
            for end in range(start + 1, n + 1):
                piece = word[start:end]
                if piece in pieces:
                    backward[start] = log_add(backward[start], pieces[piece] + backward[end])
        total = forward[n]
        if total == NEG_INF:
            raise ValueError(f"{word!r} cannot be segmented with these pieces")
        for start in range(n):
            for end in range(start + 1, n + 1):
                piece = word[start:end]
                if piece in pieces:
                    posterior = forward[start] + pieces[piece] + backward[end] - total
                    expected[piece] = log_add(expected[piece], math.log(count) + posterior)
    return expected


def normalised(log_weights: dict) -> dict:
    """Log-probabilities proportional to ``exp(log_weights)``."""
    total = NEG_INF
    for value in log_weights.values():
        total = log_add(total, value)
    return {p: value - total for p, value in log_weights.items()}


def em_step(words: dict, pieces: dict) -> dict:
    return normalised(expected_counts(words, pieces))


def prune(words: dict, pieces: dict, size: int) -> dict:
    """Drop the pieces (longer than one character) whose removal costs least until ``size`` are left."""
    singles = [p for p in pieces if len(p) == 1]
    removable = [p for p in pieces if len(p) > 1]
    drop = min(max(0, len(pieces) - max(size, len(singles))), len(removable))
    gone = set()
    if drop:
        used: Counter = Counter()
        for word, count in words.items():
            for piece in viterbi(word, pieces):
                used[piece] += count
        loss = {}
        for piece in removable:
            if used[piece] == 0:
                loss[piece] = 0.0
            else:
                alternative = viterbi(piece, pieces, exclude=piece)
                loss[piece] = used[piece] * (pieces[piece] - sum(pieces[p] for p in alternative))
        gone = set(sorted(removable, key=lambda p: (loss[p], p))[:drop])
    return normalised({p: v for p, v in pieces.items() if p not in gone})


def seed_pieces(words: dict, max_length: int, seed_size: int) -> dict:
    """Every character and the ``seed_size`` most frequent longer substrings, probabilities by frequency."""
    frequency: Counter = Counter()
    for word, count in words.items():
        for start in range(len(word)):
            for end in range(start + 1, min(len(word), start + max_length) + 1):
                frequency[word[start:end]] += count
    chosen = [p for p in frequency if len(p) == 1]
    chosen += sorted((p for p in frequency if len(p) > 1), key=lambda p: (-frequency[p], p))[:seed_size]
    return normalised({p: math.log(frequency[p]) for p in chosen})


def train_unigram(words: dict, size: int) -> dict:
    """EM (two steps a round) and pruning by a quarter, until ``size`` pieces are left."""
    pieces = seed_pieces(words, UNIGRAM_MAX_PIECE, UNIGRAM_SEED)
    while True:
        for _ in range(2):
            pieces = em_step(words, pieces)
        if len(pieces) <= size:
            return pieces
        pieces = prune(words, pieces, max(size, len(pieces) - len(pieces) // 4))


def sentencepiece_words(text: str) -> list:
    """``"▁" + text`` with every space a ``"▁"``, cut before every marker."""
    escaped = MARKER + text.replace(" ", MARKER) if text else ""
    words: list = []
    for ch in escaped:
        if ch == MARKER or not words:
            words.append(ch)
        else:
            words[-1] += ch
    return words


# --------------------------------------------------------------------------- the implementation


class SimpleTokenization:
    """The documents' algorithms, written plainly."""

    name = "simple-tokenization"

    capabilities = Capabilities(
        operations=None,
        dtypes=frozenset({"float32", "float64"}),
        devices=frozenset({"cpu"}),
        conventions={
            "tokenizer_kind": frozenset({"words", "characters", "bpe", "byte-bpe", "unigram"}),
            "lone_surrogates": frozenset({False}),
        },
    )

    def __init__(self) -> None:
        self._trained: dict = {}

    # -- character-level BPE

    def bpe_train(self, words: dict[str, int], num_merges: int, *, end_of_word: str = "</w>") -> list[tuple[str, str]]:
        segments = {word: [*word, end_of_word] for word in words}
        return learn_merges(segments, words, num_merges)

    def bpe_encode(self, word: str, merges: list[tuple[str, str]], *, end_of_word: str = "</w>") -> list[str]:
        return apply_merges([*word, end_of_word], merges)

    # -- byte-level BPE

    def byte_bpe_train(self, words: dict[bytes, int], num_merges: int) -> list[tuple[bytes, bytes]]:
        segments = {word: [word[i:i + 1] for i in range(len(word))] for word in words}
        return learn_merges(segments, words, num_merges)

    def byte_bpe_encode(self, text: str, merges: list[tuple[bytes, bytes]]) -> list[bytes]:
        tokens = []
        for piece in PIECE.findall(text):
            data = piece.encode("utf-8")
            tokens += apply_merges([data[i:i + 1] for i in range(len(data))], merges)
        return tokens

    def byte_bpe_decode(self, tokens: list[bytes]) -> str:
        return b"".join(tokens).decode("utf-8")

    # -- WordPiece

    def wordpiece(self, word: str, vocab: list[str], *, unk: str = "[UNK]", prefix: str = "##",
                  max_chars: int = 100) -> list[str]:
        if len(word) > max_chars:
            return [unk]
        vocabulary = set(vocab)
        pieces = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else prefix + word[start:end]
                if piece in vocabulary:
                    found = piece
                    break
                end -= 1
            if found is None:
                return [unk]
            pieces.append(found)
            start = end
        return pieces

    # -- Unigram

    def unigram_segment(self, word: str, pieces: dict[str, float]) -> list[str]:
        return viterbi(word, pieces)

    def unigram_em_step(self, words: dict[str, int], pieces: dict[str, float]) -> dict[str, float]:
        return em_step(words, pieces)

    def unigram_prune(self, words: dict[str, int], pieces: dict[str, float], size: int) -> dict[str, float]:
        return prune(words, pieces, size)

    # -- running text

    def _model(self, kind: str):
        """The trained model of a kind, trained on the first call."""
        if kind not in self._trained:
            text = training_text()
            if kind == "bpe":
                counts = Counter(text.split())
                self._trained[kind] = self.bpe_train(counts, TEXT_MERGES)
            elif kind == "byte-bpe":
                counts = Counter(piece.encode("utf-8") for piece in PIECE.findall(text))
                self._trained[kind] = self.byte_bpe_train(counts, TEXT_MERGES)
            elif kind == "unigram":
                counts: Counter = Counter()
                for line in text.splitlines():
                    counts.update(sentencepiece_words(line))
                self._trained[kind] = train_unigram(counts, UNIGRAM_SIZE)
        return self._trained[kind]

    def tokenize_text(self, kind: str, text: str) -> list[str]:
        if kind == "words":
            return WORD.findall(text)
        if kind == "characters":
            return list(text)
        if kind == "bpe":
            merges = self._model("bpe")
            return [symbol for word in text.split() for symbol in self.bpe_encode(word, merges)]
        if kind == "byte-bpe":
            return [token.decode("latin-1") for token in self.byte_bpe_encode(text, self._model("byte-bpe"))]
        if kind == "unigram":
            pieces = self._model("unigram")
            tokens = []
            for word in sentencepiece_words(text):
                unknown = {ch: -100.0 for ch in word if ch not in pieces}  # a character never seen: a piece alone
                tokens += viterbi(word, {**pieces, **unknown} if unknown else pieces)
            return tokens
        raise ValueError(f"no tokenizer {kind!r}")

    def detokenize_text(self, kind: str, tokens: list[str]) -> str:
        if kind == "words":
            return " ".join(tokens)
        if kind == "characters":
            return "".join(tokens)
        if kind == "bpe":
            return " ".join("".join(tokens).split(END_OF_WORD)).strip(" ")
        if kind == "byte-bpe":
            return self.byte_bpe_decode([token.encode("latin-1") for token in tokens])
        if kind == "unigram":
            text = "".join(tokens).replace(MARKER, " ")
            return text[1:] if text.startswith(" ") else text
        raise ValueError(f"no tokenizer {kind!r}")


#: What `specformer run --impl benchmarks/simple/tokenization.py` loads.
implementation = SimpleTokenization
