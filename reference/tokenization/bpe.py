"""Byte pair encoding (BPE): training merges from word counts, and encoding with them.

BPE (Sennrich et al., 2016, after Gage's 1994 compression scheme) builds a subword
vocabulary bottom-up. Every word starts as a sequence of base symbols; training counts
each pair of adjacent symbols, weighted by how often its word occurs, merges the most
frequent pair everywhere into one new symbol, and repeats. The ordered list of merged
pairs is the result. Two variants are here:

* character level, as in the documents' ``learn_bpe_merges``: a word is its characters
  plus an end-of-word marker (``"</w>"``), so ``"low"`` starts as ``l o w </w>`` and a
  suffix such as ``"er</w>"`` differs from the same letters inside a word. Words come from
  :func:`word_counts` (a plain whitespace split);
* byte level, as in GPT-2: a word is its UTF-8 bytes, no marker, so any text, in any
  script, can be encoded without an unknown token. Words come from :func:`byte_pieces`.

**Tie rule.** Among pairs of equal count the merged pair is the smallest one in Python's
ordering of ``(left, right)`` tuples: by the left symbol, then the right, strings compared
code point by code point (bytes byte by byte). So ``("a", "z")`` beats ``("b", "a")`` and
``("a", "b")`` beats ``("a", "c")``. The documents' ``max(pairs, key=pairs.get)`` returns
whichever tied pair was counted first, which depends on the order of the words in a dict:
rename or reorder the corpus and the merges change. The rule here depends only on the
counts and the symbols. (Hugging Face ``tokenizers`` prefers the pair of smaller token ids,
which favours older tokens: its merges agree with these up to the first tie they break
differently; ``benchmarks/bpe_train.py`` reports where.)

**When to stop.** Like the documents' code, training stops after ``num_merges`` merges or
when no adjacent pair is left, whichever comes first. A pair that occurs once (in one word
of count 1) is still merged: the result then has exactly ``num_merges`` merges whenever
the corpus has that many pairs to merge. Such merges only memorise rare words; filter by a
minimum count afterwards if that matters.

Two trainers give the same merges (tests check it on random corpora, ties included):

* :func:`train_bpe_naive` is the documents' algorithm, written plainly: after every merge
  it recounts every pair of every word. Its cost is ``num_merges`` times the corpus.
* :func:`train_bpe` and :func:`train_byte_bpe` count the pairs once, then keep the counts
  up to date: an index from each pair to the words that contain it says which words a
  merge touches, only those words are rewritten, and only the pairs around each merged
  occurrence change count. The best pair comes from a heap whose stale entries are
  skipped (or re-filed at their current count) when they surface: lazy invalidation.
  ``benchmarks/bpe_train.py`` times the two against each other and against ``tokenizers``.

Encoding (:func:`encode`, :func:`encode_bytes`) applies the merges in rank order, the order
in which training learned them: repeatedly, the adjacent pair of lowest rank present in the
word is merged at every occurrence, left to right, until no pair of the word has a rank.
This is not "the longest subword first" (the documents' summary) and not "the most
frequent pair first": see the tests for a word where these differ.

Not here: GPT-2's regular-expression pre-tokenizer and its byte-to-unicode table, special
tokens, a vocabulary with ids, dropout, SentencePiece's whitespace marker, WordPiece and
Unigram, and a fast encoder (each word is encoded by a search over its pairs).
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

__all__ = [
    "END_OF_WORD",
    "byte_pieces",
    "byte_word_counts",
    "decode",
    "decode_bytes",
    "encode",
    "encode_bytes",
    "train_bpe",
    "train_bpe_naive",
    "train_byte_bpe",
    "train_byte_bpe_naive",
    "train_on_sequences",
    "train_on_sequences_naive",
    "word_counts",
]

#: The end-of-word marker of the character-level variant, as in the documents.
END_OF_WORD = "</w>"

#: A symbol: a ``str`` (character level) or ``bytes`` (byte level); never both in one run.
Symbol = TypeVar("Symbol", str, bytes)

#: Byte-level pre-tokenisation: a run of whitespace goes with the word that follows it.
_BYTE_PIECE = re.compile(r"\s*\S+|\s+")


# --------------------------------------------------------------------------- pre-tokenisation


def word_counts(text: str) -> Counter[str]:
    """How often each whitespace-separated word occurs in ``text`` (``str.split()`` with no argument).

    This is the pre-tokenisation of the character-level variant: runs of whitespace
    (anything ``str.isspace`` accepts) separate words and are dropped, punctuation stays
    attached (``"end."`` is one word). Which whitespace it was is forgotten, so text cannot be
    rebuilt exactly from these words; the byte-level variant can (:func:`byte_pieces`).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return Counter(text.split())


def byte_pieces(text: str) -> list[str]:
    """Split ``text`` into words for the byte-level variant; ``"".join`` of the result is ``text``.

    Each piece is a run of whitespace (possibly empty) followed by a run of non-whitespace,
    so a word keeps the spaces before it (``"a  b"`` -> ``["a", "  b"]``); whitespace at the
    end of the text is a piece of its own. Simpler than GPT-2's pattern, which also splits off
    punctuation, digits and contractions; nothing is lost, which is what matters here.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _BYTE_PIECE.findall(text)


def byte_word_counts(text: str) -> Counter[bytes]:
    """How often each piece of :func:`byte_pieces` occurs, as UTF-8 bytes (lone surrogates allowed).

    Encoded with ``"surrogatepass"``, like :func:`encode_bytes`, so any ``str`` is accepted.
    """
    return Counter(piece.encode("utf-8", "surrogatepass") for piece in byte_pieces(text))


# --------------------------------------------------------------------------- training


def train_bpe_naive(words: Mapping[str, int], num_merges: int, *,
                    end_of_word: str = END_OF_WORD) -> list[tuple[str, str]]:
    """Learn up to ``num_merges`` character-level merges the documents' way: recount after every merge.

    ``words`` maps each word to how often it occurs (:func:`word_counts`); each becomes its
    characters plus ``end_of_word``. Returns the merged pairs in the order learned (rank
    order). Ties and stopping: see the module. The documents' ``learn_bpe_merges`` takes the
    list of words itself; ``word_counts`` of their text gives the counts it builds. The
    baseline for :func:`train_bpe`, which returns the same list much faster.
    """
    return train_on_sequences_naive(_character_sequences(words, end_of_word), num_merges)


def train_bpe(words: Mapping[str, int], num_merges: int, *,
              end_of_word: str = END_OF_WORD) -> list[tuple[str, str]]:
    """Learn up to ``num_merges`` character-level merges with incremental pair counts.

    Same input and output as :func:`train_bpe_naive` (the same merges, in the same order),
    without recounting the corpus after each merge; see :func:`train_on_sequences`.
    """
    return train_on_sequences(_character_sequences(words, end_of_word), num_merges)


def train_byte_bpe_naive(words: Mapping[bytes, int], num_merges: int) -> list[tuple[bytes, bytes]]:
    """The byte-level variant of :func:`train_bpe_naive`: each word is its bytes, no marker."""
    return train_on_sequences_naive(_byte_sequences(words), num_merges)


def train_byte_bpe(words: Mapping[bytes, int], num_merges: int) -> list[tuple[bytes, bytes]]:
    """Learn up to ``num_merges`` byte-level merges, incrementally; merges are pairs of ``bytes``.

    ``words`` maps each word's bytes to its count (:func:`byte_word_counts`). A word starts as
    its single bytes (``b"hi"`` -> ``b"h" b"i"``); there is no end-of-word marker, since the
    space that begins the next word already marks the boundary. Same merges as
    :func:`train_byte_bpe_naive`.
    """
    return train_on_sequences(_byte_sequences(words), num_merges)


def train_on_sequences_naive(sequences: Mapping[tuple[Symbol, ...], int],
                             num_merges: int) -> list[tuple[Symbol, Symbol]]:
    """The naive trainer on words already split into symbols: every pair recounted after every merge.

    ``sequences`` maps a word's symbols (all ``str`` or all ``bytes``, non-empty) to its
    count; the merged symbol of ``(a, b)`` is ``a + b``. The wrappers start every word from
    single characters or bytes; other splits are allowed (the benchmark starts from
    Hugging Face's, with the marker glued to the last character).
    """
    vocab = _checked_sequences(sequences, num_merges)
    merges: list[tuple[Symbol, Symbol]] = []
    for _ in range(num_merges):
        pair_counts: Counter[tuple[Symbol, Symbol]] = Counter()
        for symbols, count in vocab.items():
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] += count
        if not pair_counts:
            break  # every word is a single symbol: nothing left to merge
        best = min(pair_counts, key=lambda pair: (-pair_counts[pair], pair))  # the tie rule
        merges.append(best)
        rewritten: Counter[tuple[Symbol, ...]] = Counter()
        for symbols, count in vocab.items():
            rewritten[tuple(_merge_pair(symbols, best))] += count  # two splits of one word may meet
        vocab = rewritten
    return merges


def train_on_sequences(sequences: Mapping[tuple[Symbol, ...], int],
                       num_merges: int) -> list[tuple[Symbol, Symbol]]:
    """The incremental trainer on words already split into symbols; same merges as the naive one.

    Input and output as :func:`train_on_sequences_naive`. State kept between merges:

    * ``words[i]``: the current symbols of word ``i`` (a list, rewritten in place) and
      ``weights[i]`` its count;
    * ``where[pair]``: the words that hold ``pair``, one entry per occurrence at the start.
      Words are appended when they gain the pair and never removed, so the list may name
      words that no longer hold the pair (they are found not to and skipped) and may repeat
      words, but it never misses one;
    * ``pair_counts``: the weighted count of every adjacent pair (zero once it is gone);
    * ``heap``: entries ``(-count, pair)``, so the top is the highest count and, among equal
      counts, the smallest pair: the tie rule. An entry is filed whenever a pair's count
      goes up; counts that go down leave their entry behind, too high. An entry that
      surfaces with a count other than its pair's current count is dropped, and re-filed at
      the current count if that is lower but positive. So every pair that occurs has an
      entry at least as high as its count, and the first entry that matches its pair's count
      names the best pair.

    Merging ``(a, b)`` into ``ab`` in a word of count ``w`` changes only the pairs around each
    occurrence: ``(x, a)`` becomes ``(x, ab)`` for the left neighbour ``x``, ``(b, y)`` becomes
    ``(ab, y)`` for the right neighbour ``y`` (``w`` moves from the old pair to the new one),
    and ``(a, b)`` itself ends at zero. Only pairs that contain ``ab`` gain.
    """
    vocab = _checked_sequences(sequences, num_merges)
    words: list[list[Symbol]] = [list(symbols) for symbols in vocab]
    weights: list[int] = list(vocab.values())

    where: dict[tuple[Symbol, Symbol], list[int]] = defaultdict(list)
    for index, word in enumerate(words):
        for pair in zip(word, word[1:]):
            where[pair].append(index)
    pair_counts: dict[tuple[Symbol, Symbol], int] = defaultdict(int)
    for pair, holders in where.items():
        pair_counts[pair] = sum(map(weights.__getitem__, holders))  # a word listed twice counts twice
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)

    merges: list[tuple[Symbol, Symbol]] = []
    while heap and len(merges) < num_merges:
        negative_count, pair = heapq.heappop(heap)
        count = pair_counts[pair]
        if count != -negative_count:  # a stale entry: the count went down since it was filed
            if 0 < count < -negative_count:
                heapq.heappush(heap, (-count, pair))
            continue
        merges.append(pair)
        gained = _merge_everywhere(pair, set(where.pop(pair)), words, weights, pair_counts, where)
        pair_counts[pair] = 0
        for new_pair in gained:
            if pair_counts[new_pair] > 0:  # (ab, a) in "a b a b" is gained, then lost again
                heapq.heappush(heap, (-pair_counts[new_pair], new_pair))
    return merges


def _merge_everywhere(pair: tuple[Symbol, Symbol], candidates: Iterable[int], words: list[list[Symbol]],
                      weights: list[int], pair_counts: dict[tuple[Symbol, Symbol], int],
                      where: dict[tuple[Symbol, Symbol], list[int]]) -> set[tuple[Symbol, Symbol]]:
    """Merge ``pair`` in every candidate word, in place, and move the neighbouring pairs' counts.

    Returns the pairs that gained (each contains the merged symbol; its count may be back to
    zero). The count of ``pair`` itself is left for the caller to zero. Candidates that no
    longer hold ``pair`` are left as they are.

    Occurrences are first grouped by neighbour: ``left_of[x]`` lists the words (once per
    occurrence) in which ``x`` preceded a merged ``a b``, ``right_of[y]`` those in which ``y``
    followed one. Each neighbour then moves the summed weight of its words in one step.
    Within a word the occurrences are merged left to right, each seeing the word as the
    previous ones left it (in ``a b a b`` the second ``a b`` has ``ab`` on its left), which
    is what the naive trainer's rewrite does too.
    """
    left, right = pair
    merged = left + right
    left_of: dict[Symbol, list[int]] = defaultdict(list)
    right_of: dict[Symbol, list[int]] = defaultdict(list)
    for index in candidates:
        word = words[index]
        last = len(word) - 1  # the last position a pair can start at
        unseen = word.count(left)  # occurrences of the left symbol not looked at yet
        i = 0
        while unseen:
            i = word.index(left, i)
            unseen -= 1
            if i == last or word[i + 1] != right:
                i += 1
                continue
            if i > 0:
                left_of[word[i - 1]].append(index)
            if i < last - 1:
                right_of[word[i + 2]].append(index)
            word[i] = merged
            del word[i + 1]
            if right == left:  # the right symbol was an unseen occurrence of the left one
                unseen -= 1
            last -= 1
            i += 1

    gained: set[tuple[Symbol, Symbol]] = set()
    for before, holders in left_of.items():
        gained.add(_move_count((before, left), (before, merged), holders, weights, pair_counts, where))
    for after, holders in right_of.items():
        gained.add(_move_count((right, after), (merged, after), holders, weights, pair_counts, where))
    return gained


def _move_count(old_pair: tuple[Symbol, Symbol], new_pair: tuple[Symbol, Symbol], holders: list[int],
                weights: list[int], pair_counts: dict[tuple[Symbol, Symbol], int],
                where: dict[tuple[Symbol, Symbol], list[int]]) -> tuple[Symbol, Symbol]:
    """Move the weight of ``holders`` (one entry per occurrence) from ``old_pair`` to ``new_pair``."""
    weight = sum(map(weights.__getitem__, holders))
    pair_counts[old_pair] -= weight
    pair_counts[new_pair] += weight
    where[new_pair].extend(holders)
    return new_pair


def _merge_pair(symbols: Sequence[Symbol], pair: tuple[Symbol, Symbol]) -> list[Symbol]:
    """``symbols`` with every occurrence of ``pair`` merged, scanning left to right without overlap.

    ``a a a`` with the pair ``(a, a)`` gives ``aa a``: the first two merge, the third is left.
    """
    left, right = pair
    merged: list[Symbol] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == left and symbols[i + 1] == right:
            merged.append(left + right)
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


# --------------------------------------------------------------------------- encoding


def _merge_ranks(merges: Sequence[tuple[Symbol, Symbol]], kind: type,
                 end_of_word: str | None = None) -> dict[tuple[Symbol, Symbol], int]:
    """Each merge's rank (its index; the first one if a pair is listed twice), after checking the list.

    The base symbols are single characters and ``end_of_word`` (``kind`` ``str``), or single
    bytes (``kind`` ``bytes``). Every symbol of merge ``r`` must be a base symbol or made by
    a merge of rank below ``r``: anything else can never occur while encoding, and the list
    is refused with a ``ValueError`` naming the merge. ``TypeError`` for an entry that is not
    a pair of ``kind`` (a tuple, or a list as JSON gives it back).
    """
    ranks: dict[tuple[Symbol, Symbol], int] = {}
    made: set[Symbol] = set()
    for rank, entry in enumerate(merges):
        if not isinstance(entry, (tuple, list)) or len(entry) != 2 or not all(isinstance(s, kind) for s in entry):
            raise TypeError(f"merge {rank} must be a pair of two {kind.__name__}, got {entry!r}")
        entry = (entry[0], entry[1])
        for symbol in entry:
            if not (len(symbol) == 1 or symbol == end_of_word or symbol in made):
                raise ValueError(f"merge {rank} {entry!r} uses the symbol {symbol!r}, which cannot occur: it is "
                                 f"not a base symbol and no earlier merge makes it")
        ranks.setdefault(entry, rank)
        made.add(entry[0] + entry[1])
    return ranks


def encode(word: str, merges: Sequence[tuple[str, str]], *, end_of_word: str = END_OF_WORD) -> list[str]:
    """Split one ``word`` into symbols with character-level ``merges``, applied in rank order.

    The word becomes its characters plus ``end_of_word``; then, as long as some adjacent pair
    has a rank, the pair of lowest rank is merged at all its occurrences (left to right, no
    overlap). Characters never seen in training simply stay single symbols (there is no
    unknown token). ``ValueError`` if ``merges`` uses a symbol that cannot occur: one that is
    neither a single character, nor the marker, nor made by an earlier merge. The list is
    checked (and ranked) on every call: encoding many words this way repeats that work.
    """
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    _check_end_of_word(end_of_word)
    ranks = _merge_ranks(merges, str, end_of_word)
    return _apply_merges([*word, end_of_word], ranks)


def decode(symbols: Sequence[str], *, end_of_word: str = END_OF_WORD) -> str:
    """The word that :func:`encode` split into ``symbols``: joined, with the final marker removed.

    One word at a time, so that ``decode(encode(w)) == w`` for every string ``w``, even one
    that contains the marker text itself. ``ValueError`` if the symbols do not end with
    ``end_of_word``.
    """
    _check_end_of_word(end_of_word)
    joined = "".join(symbols)
    if not joined.endswith(end_of_word):
        raise ValueError(f"symbols do not end with the end-of-word marker {end_of_word!r}: {list(symbols)!r}")
    return joined[:-len(end_of_word)]


def encode_bytes(text: str, merges: Sequence[tuple[bytes, bytes]]) -> list[bytes]:
    """Encode any ``text`` into byte tokens with byte-level ``merges``, applied in rank order per piece.

    The text is split by :func:`byte_pieces`, each piece is encoded as UTF-8 and merged like
    :func:`encode` does (no marker). Lone surrogates (``"\\ud800"``, which are not Unicode
    scalar values) are encoded with Python's ``"surrogatepass"``: three bytes, as if they were
    characters. That is not valid UTF-8 and other tools refuse it, but :func:`decode_bytes`
    reverses it, so ``decode_bytes(encode_bytes(s, m)) == s`` for every ``str``.
    ``ValueError`` if ``merges`` uses a symbol that cannot occur: neither a single byte nor
    made by an earlier merge.
    """
    ranks = _merge_ranks(merges, bytes)
    tokens: list[bytes] = []
    known: dict[str, list[bytes]] = {}  # pieces repeat: encode each distinct one once
    for piece in byte_pieces(text):
        if piece not in known:
            data = piece.encode("utf-8", "surrogatepass")
            known[piece] = _apply_merges([data[i:i + 1] for i in range(len(data))], ranks)
        tokens.extend(known[piece])
    return tokens


def decode_bytes(tokens: Iterable[bytes]) -> str:
    """The text of byte ``tokens``: their bytes joined and read as UTF-8 (``"surrogatepass"``).

    Exactly reverses :func:`encode_bytes`. Raises ``UnicodeDecodeError`` (a ``ValueError``)
    if the joined bytes are not UTF-8, e.g. a token sequence cut inside a character.
    """
    return b"".join(tokens).decode("utf-8", "surrogatepass")


def _apply_merges(symbols: list[Symbol], ranks: Mapping[tuple[Symbol, Symbol], int]) -> list[Symbol]:
    """Merge the lowest-ranked adjacent pair of ``symbols`` everywhere, until none has a rank."""
    while len(symbols) > 1:
        ranked = [(ranks[pair], pair) for pair in zip(symbols, symbols[1:]) if pair in ranks]
        if not ranked:
            break
        _, best = min(ranked)
        symbols = _merge_pair(symbols, best)
    return symbols


# --------------------------------------------------------------------------- checks


def _check_end_of_word(end_of_word: str) -> None:
    if not isinstance(end_of_word, str) or not end_of_word:
        raise ValueError(f"end_of_word must be a non-empty string, got {end_of_word!r}")


def _check_words(words: Mapping[Symbol, int], kind: type) -> None:
    """Words must be a non-empty mapping from ``kind`` (str or bytes) to positive integer counts."""
    if not isinstance(words, Mapping):
        raise TypeError(f"words must be a mapping from word to count, got {type(words).__name__}")
    if not words:
        raise ValueError("empty corpus: words has no entries, there is nothing to learn merges from")
    for word, count in words.items():
        if not isinstance(word, kind):
            raise TypeError(f"words must be {kind.__name__}, got {word!r}")
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"word counts must be positive integers, got {count!r} for {word!r}")


def _character_sequences(words: Mapping[str, int], end_of_word: str) -> dict[tuple[str, ...], int]:
    """Each word as its characters plus the marker (distinct words stay distinct)."""
    _check_end_of_word(end_of_word)
    _check_words(words, str)
    return {(*word, end_of_word): count for word, count in words.items()}


def _byte_sequences(words: Mapping[bytes, int]) -> dict[tuple[bytes, ...], int]:
    """Each word as its single bytes."""
    _check_words(words, bytes)
    return {tuple(word[i:i + 1] for i in range(len(word))): count for word, count in words.items()}


def _checked_sequences(sequences: Mapping[tuple[Symbol, ...], int],
                       num_merges: int) -> dict[tuple[Symbol, ...], int]:
    """Refuse a negative or non-integer ``num_merges`` and an empty corpus; return a plain dict."""
    if isinstance(num_merges, bool) or not isinstance(num_merges, int):
        raise TypeError(f"num_merges must be an int, got {type(num_merges).__name__}")
    if num_merges < 0:
        raise ValueError(f"num_merges must be >= 0, got {num_merges}")
    if not sequences:
        raise ValueError("empty corpus: no words to learn merges from")
    for symbols, count in sequences.items():
        if not isinstance(symbols, tuple) or not all(symbols):
            raise ValueError(f"each word must be a tuple of non-empty symbols, got {symbols!r}")
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"word counts must be positive integers, got {count!r} for {symbols!r}")
    return dict(sequences)
