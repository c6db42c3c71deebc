"""Every property of ``properties/tokenization/bpe.py`` catches at least one wrong byte pair encoding.

The mutants are the reference with one part of BPE done the way implementations get it
wrong: the trainer counts words instead of occurrences, merges only the first occurrence,
breaks ties the other way or stops early; the encoder applies merges by their frequency
in the word, in one pass, by greedy longest match, right to left, or starting from
characters; the decoder drops what is not UTF-8 or normalises. The mutants of the trained
text tokenizers (``tokenize_text`` kinds ``"bpe"`` and ``"byte-bpe"``) change one kind of
:mod:`specformer.reference.tokenization.text` (:data:`TEXT_METHODS`). A library with one
operation (:func:`alone`: an encoder only, or a trainer only) is judged by the properties
that need only that operation, and its wrong versions are caught there.
"""

from __future__ import annotations

import random
import unicodedata
from collections import Counter

import pytest

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.tokenization import bpe
from specformer.protocol import Capabilities, NotApplicable
from specformer.reference.tokenization.bpe import (
    END_OF_WORD,
    byte_pieces,
    decode,
    decode_bytes,
    encode,
    encode_bytes,
    train_bpe,
    train_byte_bpe,
)
from specformer.reference.tokenization.text import detokenize_text, text_char_merges, tokenize_text

# -- the reference's trained text tokenizers ------------------------------------------------

TEXT_METHODS = {"tokenize_text": tokenize_text, "detokenize_text": detokenize_text}


def mutant(name: str, **methods) -> Mutant:
    """The reference (with its text tokenizers) with ``methods`` replaced."""
    return Mutant(name, **{**TEXT_METHODS, **methods})


REFERENCE = mutant("reference")


def alone(operation: str, name: str, fn=None) -> Mutant:
    """A library with one operation: the reference's ``operation`` (or ``fn`` in its place), declared as the only
    one it provides, so that every property that needs another operation is not applicable to it."""
    only = mutant(name, **({operation: fn} if fn is not None else {}))
    only.capabilities = Capabilities(operations={operation})
    return only


ENCODER_ALONE = alone("bpe_encode", "reference-encoder-alone")
TRAINER_ALONE = alone("bpe_train", "reference-trainer-alone")


# -- trainers ---------------------------------------------------------------------------------


def _merge_first(symbols, pair):
    """Wrong: only the first occurrence of ``pair`` is merged."""
    for i in range(len(symbols) - 1):
        if (symbols[i], symbols[i + 1]) == pair:
            return [*symbols[:i], pair[0] + pair[1], *symbols[i + 2:]]
    return list(symbols)


def _by_ids(tied, ids):
    """Among tied pairs, the one of smallest token ids (base symbols by code point, merged ones as created)."""
    return min(tied, key=lambda pair: (ids[pair[0]], ids[pair[1]]))


def trainer(*, weighted=True, everywhere=True, largest=False, min_count=1, budget=lambda n: n, tie=None):
    """A naive character-level trainer with swappable (possibly wrong) parts.

    ``tie`` picks among the tied pairs (given in the order they were counted, and the token ids):
    by default the smallest pair, or the largest with ``largest``.
    """

    def bpe_train(words, num_merges, *, end_of_word=END_OF_WORD):
        segments = {word: [*word, end_of_word] for word in words}
        ids = {symbol: i for i, symbol in enumerate(sorted({s for symbols in segments.values() for s in symbols}))}
        merges = []
        for _ in range(budget(num_merges)):
            counts = Counter()
            for word, symbols in segments.items():
                for pair in zip(symbols, symbols[1:]):
                    counts[pair] += words[word] if weighted else 1
            if not counts or max(counts.values()) < min_count:
                break
            top = max(counts.values())
            tied = [pair for pair in counts if counts[pair] == top]
            best = tie(tied, ids) if tie else max(tied) if largest else min(tied)
            merges.append(best)
            ids.setdefault(best[0] + best[1], len(ids))
            merge = bpe.merge_everywhere if everywhere else _merge_first
            segments = {word: merge(symbols, best) for word, symbols in segments.items()}
        return merges

    return bpe_train


def _documents_code(words, num_merges, *, end_of_word=END_OF_WORD):
    """001's learn_bpe_merges on the words listed as often as they are counted, in the dict's order."""
    return bpe.learn_bpe_merges([w for w, count in words.items() for _ in range(count)], num_merges)


def _padded(words, num_merges, *, end_of_word=END_OF_WORD):
    """The reference's merges, then made-up merges of new symbols until there are ``num_merges``."""
    merges = train_bpe(words, num_merges, end_of_word=end_of_word)
    symbol = end_of_word
    while len(merges) < num_merges:
        merges.append((symbol, end_of_word))  # "</w></w>", "</w></w></w>", ...: never seen, always new
        symbol += end_of_word
    return merges


def _by_word_frequency(words, num_merges, *, end_of_word=END_OF_WORD):
    """Whole words, most frequent first, each built left to right: (w0, w1), (w0w1, w2), ..., then the marker."""
    merges, made = [], set()
    for word in sorted(words, key=lambda w: -words[w]):
        symbols = [*word, end_of_word]
        current = symbols[0]
        for symbol in symbols[1:]:
            if (current, symbol) not in made:
                merges.append((current, symbol))
                made.add((current, symbol))
            current += symbol
    return merges[:num_merges]


def _whole_words_by_frequency(words, num_merges, *, end_of_word=END_OF_WORD):
    """Whole words, most frequent first: each word as the merges so far leave it (replayed), its first two symbols
    joined until it is one; a rarer word is never whole before a commoner one, replayed as training replays."""
    merges = []
    for word in sorted(words, key=lambda w: -words[w]):
        symbols = bpe.replay({word: 1}, merges)[word]
        while len(symbols) > 1 and len(merges) < num_merges:
            merges.append((symbols[0], symbols[1]))
            symbols = bpe.merge_everywhere(symbols, merges[-1])
    return merges


def _lookup(word, merges, *, end_of_word=END_OF_WORD):
    """One symbol for a word the merges spell out whole, characters otherwise."""
    whole = word + end_of_word
    return [whole] if any(a + b == whole for a, b in merges) else [*word, end_of_word]


def _random_ties(words, num_merges, *, end_of_word=END_OF_WORD):
    """Wrong (not deterministic): a tie goes to a pair drawn at random."""
    return trainer(tie=lambda tied, ids: random.choice(tied))(words, num_merges, end_of_word=end_of_word)


def _small_only_trainer(words, num_merges, *, end_of_word=END_OF_WORD):
    """Wrong only at realistic sizes: a corpus of more than 10 words is trained without its last word."""
    kept = dict(list(words.items())[:10]) if len(words) > 10 else words
    return train_bpe(kept, num_merges, end_of_word=end_of_word)


def _short_words_only(word, merges, *, end_of_word=END_OF_WORD):
    """Wrong only at realistic sizes: words over 10 letters are encoded without the first merge."""
    return encode(word, merges[1:] if len(word) > 10 else merges, end_of_word=end_of_word)


UNWEIGHTED = mutant("counts-words-not-occurrences", bpe_train=trainer(weighted=False))
SMALL_ONLY = mutant("drops-the-last-word-of-large-corpora", bpe_train=_small_only_trainer)
SHORT_WORDS_ONLY = mutant("drops-a-merge-for-long-words", bpe_encode=_short_words_only)
RANDOM_TIES = mutant("breaks-ties-at-random", bpe_train=_random_ties)
FIRST_ONLY = mutant("merges-the-first-occurrence-only", bpe_train=trainer(everywhere=False))
#: Correct trainers with another tie rule (every deterministic rule that takes a most frequent pair is right).
TIES_TO_LARGEST = mutant("ties-to-the-largest-pair", bpe_train=trainer(largest=True))
DOCUMENTS_CODE = mutant("documents-learn_bpe_merges", bpe_train=_documents_code)
TIES_FIRST_COUNTED = mutant("ties-to-the-pair-counted-first", bpe_train=trainer(tie=lambda tied, ids: tied[0]))
TIES_BY_IDS = mutant("ties-to-the-smallest-token-ids", bpe_train=trainer(tie=_by_ids))
TIE_RULES = [TIES_TO_LARGEST, DOCUMENTS_CODE, TIES_FIRST_COUNTED, TIES_BY_IDS]
MIN_COUNT_2 = mutant("stops-at-pairs-seen-once", bpe_train=trainer(min_count=2))
ONE_SHORT = mutant("one-merge-short", bpe_train=trainer(budget=lambda n: max(n - 1, 0)))
PADDED = mutant("pads-the-merges-with-new-symbols", bpe_train=_padded)
BY_WORD_FREQUENCY = mutant("memorises-words-by-frequency", bpe_train=_by_word_frequency, bpe_encode=_lookup)

# -- encoders -----------------------------------------------------------------------------------


def _ranks(merges):
    ranks = {}
    for rank, (a, b) in enumerate(merges):
        ranks.setdefault((a, b), rank)
    return ranks


def _by_frequency(symbols, merges):
    """Wrong: merge the learned pair that occurs most often in the word (rank only breaks ties)."""
    ranks = _ranks(merges)
    while True:
        counts = Counter(pair for pair in zip(symbols, symbols[1:]) if pair in ranks)
        if not counts:
            return symbols
        symbols = bpe.merge_everywhere(symbols, min(counts, key=lambda p: (-counts[p], ranks[p])))


def _single_pass(symbols, merges):
    """Wrong: each merge once, in order, at its first occurrence."""
    for pair in merges:
        symbols = _merge_first(symbols, tuple(pair))
    return symbols


def _merge_from_the_right(symbols, pair):
    """``symbols`` with every occurrence of ``pair`` joined, scanning right to left (``a a a`` -> ``a aa``)."""
    out, i = [], len(symbols) - 1
    while i >= 0:
        if i > 0 and (symbols[i - 1], symbols[i]) == pair:
            out.append(pair[0] + pair[1])
            i -= 2
        else:
            out.append(symbols[i])
            i -= 1
    return out[::-1]


def _right_to_left(symbols, merges):
    """Wrong: rank order, but each pair's occurrences merged from the right."""
    ranks = _ranks(merges)
    while True:
        ranked = [(ranks[p], p) for p in zip(symbols, symbols[1:]) if p in ranks]
        if not ranked:
            return symbols
        symbols = _merge_from_the_right(symbols, min(ranked)[1])


def _greedy(word, merges, *, end_of_word=END_OF_WORD):
    """Wrong: the longest learned symbol first, left to right."""
    vocab = set(word) | {end_of_word} | {c for a, b in merges for c in a + b} | {a + b for a, b in merges}
    return bpe.longest_match(word, vocab) if end_of_word == END_OF_WORD else [*word, end_of_word]


def char_encoder(apply):
    def bpe_encode(word, merges, *, end_of_word=END_OF_WORD):
        return apply([*word, end_of_word], [tuple(m) for m in merges])

    return bpe_encode


def _drops_unmerged(word, merges, *, end_of_word=END_OF_WORD):
    """Wrong (what a vocabulary built from the merges alone does): characters no merge names are dropped."""
    named = {c for a, b in merges for c in a + b}
    return encode("".join(c for c in word if c in named), merges, end_of_word=end_of_word)


def _unk_unmerged(word, merges, *, end_of_word=END_OF_WORD):
    """Wrong: characters no merge names become ``[UNK]``."""
    named = {c for a, b in merges for c in a + b}
    return [s if len(s) != 1 or s in named else "[UNK]" for s in encode(word, merges, end_of_word=end_of_word)]


def _ignores_merges(word, merges, *, end_of_word=END_OF_WORD):
    return [*word, end_of_word]


BY_FREQUENCY = mutant("merges-by-frequency-in-the-word", bpe_encode=char_encoder(_by_frequency))
SINGLE_PASS = mutant("one-pass-first-occurrence", bpe_encode=char_encoder(_single_pass))
RIGHT_TO_LEFT = mutant("occurrences-merged-right-to-left", bpe_encode=char_encoder(_right_to_left))
GREEDY = mutant("greedy-longest-match", bpe_encode=_greedy)
DROPS_UNMERGED = mutant("drops-characters-no-merge-names", bpe_encode=_drops_unmerged)
UNK_UNMERGED = mutant("unk-for-characters-no-merge-names", bpe_encode=_unk_unmerged)
IGNORES_MERGES = mutant("ignores-the-merges", bpe_encode=_ignores_merges)

#: The same mistakes in a library that has only an encoder, or only a trainer.
GREEDY_ALONE = alone("bpe_encode", "greedy-longest-match-encoder-alone", _greedy)
DROPS_UNMERGED_ALONE = alone("bpe_encode", "encoder-alone-drops-characters-no-merge-names", _drops_unmerged)
UNK_UNMERGED_ALONE = alone("bpe_encode", "encoder-alone-unk-for-characters-no-merge-names", _unk_unmerged)
IGNORES_MERGES_ALONE = alone("bpe_encode", "encoder-alone-ignores-the-merges", _ignores_merges)
SINGLE_PASS_ALONE = alone("bpe_encode", "encoder-alone-one-pass-first-occurrence", char_encoder(_single_pass))
ONE_SHORT_ALONE = alone("bpe_train", "trainer-alone-one-merge-short", trainer(budget=lambda n: max(n - 1, 0)))
MIN_COUNT_2_ALONE = alone("bpe_train", "trainer-alone-stops-at-pairs-seen-once", trainer(min_count=2))
FIRST_ONLY_ALONE = alone("bpe_train", "trainer-alone-merges-the-first-occurrence-only", trainer(everywhere=False))
BY_WORD_FREQUENCY_ALONE = alone("bpe_train", "trainer-alone-builds-whole-words-by-frequency",
                                _whole_words_by_frequency)


def byte_encoder(apply):
    def byte_bpe_encode(text, merges):
        tokens = []
        for piece in byte_pieces(text):
            data = piece.encode("utf-8", "surrogatepass")
            tokens += apply([data[i:i + 1] for i in range(len(data))], [tuple(m) for m in merges])
        return tokens

    return byte_bpe_encode


def _character_first(text, merges):
    """Wrong ("characters, bytes as a fallback"): each character's bytes start as one symbol."""
    ranks = _ranks([tuple(m) for m in merges])
    tokens = []
    for piece in byte_pieces(text):
        symbols = [c.encode("utf-8", "surrogatepass") for c in piece]
        while True:
            ranked = [(ranks[p], p) for p in zip(symbols, symbols[1:]) if p in ranks]
            if not ranked:
                break
            symbols = bpe.merge_everywhere(symbols, min(ranked)[1])
        tokens += symbols
    return tokens


def byte_trainer(*, weighted=True, everywhere=True, characters=False):
    """A naive byte-level trainer with swappable (possibly wrong) parts; ``characters``: start from whole characters."""

    def byte_bpe_train(words, num_merges):
        segments = {}
        for word in words:
            if characters:
                segments[word] = [c.encode("utf-8", "surrogatepass") for c in word.decode("utf-8", "surrogatepass")]
            else:
                segments[word] = [word[i:i + 1] for i in range(len(word))]
        merges = []
        for _ in range(num_merges):
            counts = Counter()
            for word, symbols in segments.items():
                for pair in zip(symbols, symbols[1:]):
                    counts[pair] += words[word] if weighted else 1
            if not counts:
                break
            top = max(counts.values())
            best = min(pair for pair in counts if counts[pair] == top)
            merges.append(best)
            merge = bpe.merge_everywhere if everywhere else _merge_first
            segments = {word: merge(symbols, best) for word, symbols in segments.items()}
        return merges

    return byte_bpe_train


BYTE_UNWEIGHTED = mutant("byte-trainer-counts-pieces-not-occurrences", byte_bpe_train=byte_trainer(weighted=False))
BYTE_FIRST_ONLY = mutant("byte-trainer-merges-the-first-occurrence-only",
                         byte_bpe_train=byte_trainer(everywhere=False))
BYTE_CHARACTERS = mutant("byte-trainer-starts-from-characters", byte_bpe_train=byte_trainer(characters=True))
BYTE_BY_FREQUENCY = mutant("byte-merges-by-frequency-in-the-piece", byte_bpe_encode=byte_encoder(_by_frequency))
BYTE_SINGLE_PASS = mutant("byte-one-pass-first-occurrence", byte_bpe_encode=byte_encoder(_single_pass))
CHARACTER_FIRST = mutant("characters-first-bytes-as-fallback", byte_bpe_encode=_character_first)
STRIPS_CONTROLS = mutant("byte-encoder-drops-nul-and-bom", byte_bpe_encode=lambda text, merges: encode_bytes(
    text.replace("\x00", "").replace("\ufeff", ""), merges))
REPLACES_SURROGATES = mutant("encoder-replaces-lone-surrogates", byte_bpe_encode=lambda text, merges: encode_bytes(
    text.encode("utf-8", "replace").decode("utf-8"), merges))

# -- decoders and text tokenizers ---------------------------------------------------------------

DECODE_IGNORE = mutant("decode-drops-invalid-bytes", byte_bpe_decode=lambda tokens: b"".join(tokens).decode(
    "utf-8", "ignore"))
DECODE_PER_TOKEN = mutant("decode-token-by-token", byte_bpe_decode=lambda tokens: "".join(
    token.decode("utf-8", "replace") for token in tokens))
DECODE_SURROGATEESCAPE = mutant("decode-surrogateescape", byte_bpe_decode=lambda tokens: b"".join(tokens).decode(
    "utf-8", "surrogateescape"))
DECODE_REPLACE = mutant("decode-replace", byte_bpe_decode=lambda tokens: b"".join(tokens).decode("utf-8", "replace"))
DECODE_NFC = mutant("decode-normalises-to-nfc", byte_bpe_decode=lambda tokens: unicodedata.normalize(
    "NFC", decode_bytes(tokens)))


def _text_with(kind_wanted, tokenize=None, detokenize=None):
    def tokenize_text_(kind, text):
        return tokenize(text) if kind == kind_wanted and tokenize else tokenize_text(kind, text)

    def detokenize_text_(kind, tokens):
        return detokenize(tokens) if kind == kind_wanted and detokenize else detokenize_text(kind, tokens)

    return {"tokenize_text": tokenize_text_, "detokenize_text": detokenize_text_}


JOINS_WITHOUT_SPACES = Mutant("bpe-detokenizer-joins-words-without-spaces", **_text_with(
    "bpe", detokenize=lambda tokens: "".join(tokens).replace(END_OF_WORD, "")))
STRIPS_TEXT = Mutant("byte-text-tokenizer-strips-whitespace", **_text_with(
    "byte-bpe", tokenize=lambda text: tokenize_text("byte-bpe", text.strip())))
ONE_TOKEN = Mutant("bpe-text-as-one-token", **_text_with(
    "bpe", tokenize=lambda text: [text.replace(" ", "") + END_OF_WORD] if text.split() else []))


def _with_spaces(text):
    """Wrong: the spaces between words kept as tokens."""
    out = []
    for i, word in enumerate(text.split()):
        out += ([" "] if i else []) + tokenize_text("bpe", word)
    return out


SPACES_AS_TOKENS = Mutant("bpe-spaces-kept-as-tokens", **_text_with("bpe", tokenize=_with_spaces))
MARKER_ON_EVERY_TOKEN = Mutant("bpe-marker-on-every-token", **_text_with("bpe", tokenize=lambda text: [
    t if t.endswith(END_OF_WORD) else t + END_OF_WORD for t in tokenize_text("bpe", text)]))
NO_MARKER = Mutant("bpe-no-marker", **_text_with("bpe", tokenize=lambda text: [
    t.removesuffix(END_OF_WORD) for t in tokenize_text("bpe", text)]))
#: Correct: SentencePiece's default, NFKC before segmenting ("…" is three full stops).
NFKC_FIRST = Mutant("bpe-normalises-to-nfkc-first", **_text_with("bpe", tokenize=lambda text: tokenize_text(
    "bpe", unicodedata.normalize("NFKC", text))))
#: Wrong: a rewrite that is no normal form (the ellipsis dropped).
DROPS_ELLIPSIS = Mutant("bpe-drops-the-ellipsis", **_text_with("bpe", tokenize=lambda text: tokenize_text(
    "bpe", text.replace("\u2026", ""))))


def _space_only_tokenize(text):
    """Correct, another whitespace rule: words are split at spaces only; a tab or newline is a character of its word."""
    merges = tuple(text_char_merges())
    return [symbol for word in text.split(" ") if word for symbol in encode(word, merges)]


def _space_only_detokenize(tokens):
    words, current = [], []
    for token in tokens:
        current.append(token)
        if token.endswith(END_OF_WORD):
            words.append(decode(current))
            current = []
    return " ".join(words)


SPACES_ONLY = Mutant("bpe-splits-at-spaces-only", **_text_with(
    "bpe", tokenize=_space_only_tokenize, detokenize=_space_only_detokenize))

# -- the cases -------------------------------------------------------------------------------------

P = "bpe."
MOST_FREQUENT = P + "each_merge_is_a_most_frequent_pair_of_the_corpus_as_merged_so_far"
DOCS_AGREE = P + "the_documents_code_merges_most_frequent_pairs_and_agrees_with_the_reference_up_to_a_tie"
DOCS_ORDER = P + "learn_bpe_merges_depends_only_on_the_words_and_their_counts_as_written"
BYTE_MOST_FREQUENT = P + "each_byte_merge_is_a_most_frequent_pair_and_training_stops_only_without_pairs"
DETERMINISTIC = P + "training_the_same_counts_again_gives_the_same_merges"
UNTIED = P + "without_a_tie_the_trainer_learns_the_naive_merges"
VOCAB = P + "each_merge_adds_one_symbol_and_training_stops_early_only_without_pairs"
VOCAB_AS_WRITTEN = P + "the_vocabulary_has_the_base_symbols_plus_num_merges_as_written"
RANK_ORDER = P + "encoding_applies_the_merges_in_the_order_they_were_learned"
TRAINING_SPLIT = P + "encoding_a_training_word_gives_its_training_segmentation"
BYTE_RANK_ORDER = P + "byte_encoding_applies_the_merges_in_the_order_they_were_learned"
LONGEST = P + "encoding_takes_the_longest_vocabulary_symbol_first_as_written"
LONGEST_CORRECTED = P + "where_rank_order_and_longest_match_differ_the_split_is_rank_order"
LONGEST_GIVEN = P + "with_merges_learned_here_the_split_is_rank_order_where_longest_match_differs"
LONGEST_GIVEN_AS_WRITTEN = P + "encoding_with_merges_learned_here_takes_the_longest_vocabulary_symbol_first_as_written"
SPELLED = P + "a_word_of_training_characters_is_spelled_with_vocabulary_symbols"
NO_OOV_AS_WRITTEN = P + "every_word_is_spelled_with_vocabulary_symbols_as_written"
SPELLED_GIVEN = P + "with_merges_learned_here_a_word_of_training_characters_is_spelled_with_vocabulary_symbols"
NO_OOV_GIVEN_AS_WRITTEN = P + "with_merges_learned_here_every_word_is_spelled_with_vocabulary_symbols_as_written"
TEXT_ROUND_TRIP = P + "text_of_training_words_comes_back_word_for_word"
BYTE_VOCAB = P + "byte_level_tokens_are_always_in_the_byte_vocabulary"
BYTE_ROUND_TRIP = P + "byte_level_bpe_decodes_every_text_back_exactly"
DECODE_INVALID = P + "decoding_bytes_that_are_not_utf8_is_refused_or_marked_never_silent"
BYTE_TEXT_ROUND_TRIP = P + "the_byte_level_text_tokenizer_gives_every_text_back"
SURROGATES = P + "lone_surrogates_come_back_exactly_or_are_refused"
SINGLE_BYTES = P + "without_merges_every_token_is_one_byte"
FALLBACK_AS_WRITTEN = P + "tokens_hold_whole_characters_or_a_part_of_one_as_written"
EXAMPLES = P + "merges_learned_from_the_parts_give_the_documents_segmentations"
EXAMPLES_GIVEN = P + "merges_learned_here_from_the_parts_encode_the_documents_segmentations"
EXAMPLES_TRAINED = P + "the_merges_learned_from_the_parts_build_the_documents_segmentations"
MONOTONE = P + "more_merges_never_split_a_word_further_and_enough_make_each_training_word_one_symbol"
COMMON_AS_WRITTEN = P + "frequent_words_become_single_symbols_before_rarer_ones_as_written"
MONOTONE_GIVEN = P + "with_merges_learned_here_more_never_split_a_word_further_and_all_make_training_words_one_symbol"
EXHAUSTED = P + "training_until_no_pair_is_left_makes_each_training_word_one_symbol"
COMMON_TRAINED_AS_WRITTEN = P + "training_makes_frequent_words_single_symbols_before_rarer_ones_as_written"
BETWEEN = P + "a_text_has_at_least_a_token_per_word_and_at_most_one_per_character_and_marker"
WORD_BY_WORD = P + "each_word_is_its_own_tokens_ending_in_one_marker"
GPT2 = P + "gpt2_and_roberta_tokenizers_are_byte_level_bpe_and_xlm_is_character_level"

MARKER_TRAINED = P + "with_another_end_of_word_marker_the_trainer_learns_the_same_merges_spelled_with_it"
MARKER_ENCODED = P + "with_another_end_of_word_marker_the_split_is_the_rank_order_one_spelled_with_it"
#: Wrong: the default marker written in, whatever ``end_of_word`` says.
FIXED_MARKER_TRAINER = mutant("bpe-trainer-ignores-end_of_word",
                              bpe_train=lambda words, num_merges, *, end_of_word=END_OF_WORD: train_bpe(words,
                                                                                                     num_merges))
FIXED_MARKER_ENCODER = mutant("bpe-encoder-ignores-end_of_word",
                              bpe_encode=lambda word, merges, *, end_of_word=END_OF_WORD: encode(word, merges))

CASES = [
    (MOST_FREQUENT, UNWEIGHTED), (MOST_FREQUENT, FIRST_ONLY), (MOST_FREQUENT, SMALL_ONLY),
    (RANK_ORDER, SHORT_WORDS_ONLY),
    (BYTE_MOST_FREQUENT, BYTE_UNWEIGHTED), (BYTE_MOST_FREQUENT, BYTE_FIRST_ONLY),
    (BYTE_MOST_FREQUENT, BYTE_CHARACTERS),
    (DETERMINISTIC, RANDOM_TIES),
    (UNTIED, UNWEIGHTED), (UNTIED, ONE_SHORT),
    (VOCAB, MIN_COUNT_2), (VOCAB, ONE_SHORT),
    (RANK_ORDER, BY_FREQUENCY), (RANK_ORDER, SINGLE_PASS), (RANK_ORDER, GREEDY),
    (TRAINING_SPLIT, RIGHT_TO_LEFT), (LONGEST_CORRECTED, GREEDY),
    (BYTE_RANK_ORDER, BYTE_BY_FREQUENCY), (BYTE_RANK_ORDER, BYTE_SINGLE_PASS),
    (SPELLED, DROPS_UNMERGED), (SPELLED, UNK_UNMERGED),
    (TEXT_ROUND_TRIP, JOINS_WITHOUT_SPACES), (TEXT_ROUND_TRIP, DROPS_ELLIPSIS),
    (BYTE_VOCAB, STRIPS_CONTROLS), (BYTE_VOCAB, CHARACTER_FIRST),
    (BYTE_ROUND_TRIP, DECODE_NFC), (BYTE_ROUND_TRIP, STRIPS_CONTROLS),
    (DECODE_INVALID, DECODE_IGNORE), (DECODE_INVALID, DECODE_PER_TOKEN),
    (BYTE_TEXT_ROUND_TRIP, STRIPS_TEXT),
    (SURROGATES, DECODE_IGNORE), (SURROGATES, REPLACES_SURROGATES),
    (SINGLE_BYTES, CHARACTER_FIRST),
    (EXAMPLES, IGNORES_MERGES), (EXAMPLES, ONE_SHORT),
    (MONOTONE, MIN_COUNT_2), (MONOTONE, SINGLE_PASS),
    (BETWEEN, ONE_TOKEN),
    (WORD_BY_WORD, ONE_TOKEN), (WORD_BY_WORD, SPACES_AS_TOKENS), (WORD_BY_WORD, MARKER_ON_EVERY_TOKEN),
    (WORD_BY_WORD, NO_MARKER), (WORD_BY_WORD, DROPS_ELLIPSIS),
    # one operation alone
    (LONGEST_GIVEN, GREEDY_ALONE),
    (SPELLED_GIVEN, DROPS_UNMERGED_ALONE), (SPELLED_GIVEN, UNK_UNMERGED_ALONE),
    (EXAMPLES_GIVEN, IGNORES_MERGES_ALONE), (EXAMPLES_TRAINED, ONE_SHORT_ALONE),
    (MONOTONE_GIVEN, SINGLE_PASS_ALONE), (MONOTONE_GIVEN, IGNORES_MERGES_ALONE),
    (EXHAUSTED, MIN_COUNT_2_ALONE), (EXHAUSTED, FIRST_ONLY_ALONE),
    # the caller's end-of-word marker
    (MARKER_TRAINED, FIXED_MARKER_TRAINER), (MARKER_TRAINED, UNWEIGHTED),
    (MARKER_ENCODED, FIXED_MARKER_ENCODER), (MARKER_ENCODED, GREEDY),
]

#: Refutations, and a mutant that agrees with the claim as written, so that nothing is left to refute.
AGREES_AS_WRITTEN = [
    (VOCAB_AS_WRITTEN, PADDED),
    (LONGEST, GREEDY),
    (NO_OOV_AS_WRITTEN, DROPS_UNMERGED),
    (FALLBACK_AS_WRITTEN, CHARACTER_FIRST),
    (COMMON_AS_WRITTEN, BY_WORD_FREQUENCY),
    (LONGEST_GIVEN_AS_WRITTEN, GREEDY_ALONE),
    (NO_OOV_GIVEN_AS_WRITTEN, DROPS_UNMERGED_ALONE),
    (COMMON_TRAINED_AS_WRITTEN, BY_WORD_FREQUENCY_ALONE),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize("qualname", sorted({q for q, _ in CASES}))
def test_the_reference_passes(qualname: str) -> None:
    row = run_row(qualname, REFERENCE)
    assert row.outcome == "pass", row


@pytest.mark.parametrize(("qualname", "agrees"), AGREES_AS_WRITTEN,
                         ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in AGREES_AS_WRITTEN])
def test_a_refutation_fails_on_an_implementation_that_agrees_with_the_claim(qualname: str, agrees: Mutant) -> None:
    assert run_row(qualname, REFERENCE).outcome == "refuted"
    row = run_row(qualname, agrees, profile="mutants")
    assert row.outcome == "fail" and row.message.startswith("no counterexample"), row


#: Every property that trains character-level merges: a correct trainer with any tie rule ends each as the reference.
TRAINED = sorted({MOST_FREQUENT, DETERMINISTIC, UNTIED, VOCAB, VOCAB_AS_WRITTEN, TRAINING_SPLIT, LONGEST,
                    LONGEST_CORRECTED, SPELLED, NO_OOV_AS_WRITTEN, EXAMPLES, MONOTONE, COMMON_AS_WRITTEN,
                    EXAMPLES_TRAINED, EXHAUSTED, COMMON_TRAINED_AS_WRITTEN})
#: The properties that need only ``bpe_encode`` (merges the reference learns), or only ``bpe_train`` (merges replayed
#: here, or checked against the naive trainer).
ENCODER_ONLY = [LONGEST_GIVEN, LONGEST_GIVEN_AS_WRITTEN, SPELLED_GIVEN, NO_OOV_GIVEN_AS_WRITTEN, EXAMPLES_GIVEN,
                MONOTONE_GIVEN, RANK_ORDER]
TRAINER_ONLY = [EXAMPLES_TRAINED, EXHAUSTED, COMMON_TRAINED_AS_WRITTEN, MOST_FREQUENT, DETERMINISTIC, UNTIED, VOCAB,
                VOCAB_AS_WRITTEN]


@pytest.mark.parametrize("rule", [TIES_TO_LARGEST, TIES_FIRST_COUNTED, TIES_BY_IDS],
                         ids=lambda m: m.name)
def test_a_trainer_with_another_tie_rule_takes_another_marker_as_the_reference_does(rule: Mutant) -> None:
    """The tie rules that take the caller's marker (001's code writes ``</w>`` in: it would declare so)."""
    assert run_row(MARKER_TRAINED, rule).outcome == "pass"


@pytest.mark.parametrize("qualname", [MARKER_TRAINED, MARKER_ENCODED])
def test_a_library_whose_marker_is_fixed_declares_it_and_is_not_asked_for_another(qualname: str) -> None:
    fixed = mutant("bpe-marker-fixed-declared", bpe_train=FIXED_MARKER_TRAINER.bpe_train,
                   bpe_encode=FIXED_MARKER_ENCODER.bpe_encode)
    fixed.capabilities = Capabilities(conventions={"end_of_word": frozenset({END_OF_WORD})})
    row = run_row(qualname, fixed)
    assert row.outcome == "not-applicable" and "end_of_word" in row.message, row
    assert run_row(qualname, REFERENCE).outcome == "pass"


@pytest.mark.parametrize("rule", TIE_RULES, ids=[m.name for m in TIE_RULES])
@pytest.mark.parametrize("qualname", TRAINED)
def test_a_trainer_with_another_tie_rule_ends_every_row_as_the_reference(qualname: str, rule: Mutant) -> None:
    expected = run_row(qualname, REFERENCE).outcome
    row = run_row(qualname, rule)
    assert row.outcome == expected, row


@pytest.mark.parametrize("qualname", [LONGEST, COMMON_AS_WRITTEN, COMMON_TRAINED_AS_WRITTEN, NO_OOV_AS_WRITTEN,
                                      VOCAB_AS_WRITTEN])
@pytest.mark.parametrize("rule", [REFERENCE, *TIE_RULES], ids=["reference", *[m.name for m in TIE_RULES]])
def test_refutations_find_their_counterexample_by_search_under_every_tie_rule(qualname: str, rule: Mutant) -> None:
    """The thorough profile skips the explicit examples: the search alone must find a counterexample."""
    assert run_row(qualname, rule, profile="thorough").outcome == "refuted"


@pytest.mark.parametrize("qualname", [LONGEST_GIVEN_AS_WRITTEN, NO_OOV_GIVEN_AS_WRITTEN])
def test_encoder_refutations_find_their_counterexample_by_search(qualname: str) -> None:
    """With merges the reference learns, the search alone refutes the claim as written for a correct encoder."""
    assert run_row(qualname, ENCODER_ALONE, profile="thorough").outcome == "refuted"


@pytest.mark.parametrize(("alone_", "judged", "other"), [
    (ENCODER_ALONE, ENCODER_ONLY, [LONGEST_CORRECTED, SPELLED, EXAMPLES, MONOTONE, EXHAUSTED]),
    (TRAINER_ALONE, TRAINER_ONLY, [LONGEST_CORRECTED, SPELLED, EXAMPLES, MONOTONE, MONOTONE_GIVEN]),
], ids=["encoder", "trainer"])
def test_a_library_with_one_operation_gets_a_judged_row_for_each_claim(alone_: Mutant, judged: list[str],
                                                                       other: list[str]) -> None:
    """The reference's encoder alone, or its trainer alone: the properties that need only that operation end as for
    the whole reference; those that need the other are not applicable."""
    for qualname in judged:
        expected = run_row(qualname, REFERENCE).outcome
        row = run_row(qualname, alone_)
        assert row.outcome == expected, (qualname, row)
    for qualname in other:
        row = run_row(qualname, alone_)
        assert row.outcome == "not-applicable" and "does not provide" in row.message, (qualname, row)


@pytest.mark.parametrize("qualname", [TEXT_ROUND_TRIP, BETWEEN, WORD_BY_WORD])
def test_a_tokenizer_that_splits_at_spaces_only_passes(qualname: str) -> None:
    assert _space_only_detokenize(_space_only_tokenize("a\tb  c")) == "a\tb c"
    row = run_row(qualname, SPACES_ONLY)
    assert row.outcome == "pass", row


@pytest.mark.parametrize("qualname", [BETWEEN, WORD_BY_WORD, TEXT_ROUND_TRIP])
def test_a_tokenizer_that_normalises_to_nfkc_first_passes(qualname: str) -> None:
    """SentencePiece's default normaliser spells ``"try"…"finally"`` with three full stops: a word in its NFKC form
    is still the word (seen on a machine whose Hypothesis drew that training word)."""
    assert "..." in "".join(NFKC_FIRST.tokenize_text("bpe", '"try"…"finally"'))
    row = run_row(qualname, NFKC_FIRST)
    assert row.outcome == "pass", row


@pytest.mark.parametrize("decoder", [DECODE_SURROGATEESCAPE, DECODE_REPLACE], ids=lambda m: m.name)
def test_lossless_and_replacing_decoders_pass(decoder: Mutant) -> None:
    row = run_row(DECODE_INVALID, decoder)
    assert row.outcome == "pass", row


def test_the_documents_code_is_refuted_and_agrees_with_the_reference_until_a_tie() -> None:
    assert run_row(DOCS_AGREE, None).outcome == "pass"
    row = run_row(DOCS_ORDER, None)
    assert row.outcome == "refuted" and "reversed corpus" in row.message, row


def test_miscounting_documents_code_is_caught(monkeypatch) -> None:
    """A mis-statement of 001's code: every occurrence counted once, whatever the word's count."""
    monkeypatch.setattr(bpe, "learn_bpe_merges", lambda corpus, n: trainer(weighted=False)(
        dict(Counter(corpus)), n))
    row = run_row(DOCS_AGREE, None, profile="mutants")
    assert row.outcome == "fail", row


def test_documents_code_with_an_explicit_tie_rule_leaves_nothing_to_refute(monkeypatch) -> None:
    monkeypatch.setattr(bpe, "learn_bpe_merges", lambda corpus, n: train_bpe(dict(Counter(corpus)), n))
    row = run_row(DOCS_ORDER, None, profile="mutants")
    assert row.outcome == "fail" and row.message.startswith("no counterexample"), row


def test_the_libraries_are_byte_level_and_character_level_as_stated() -> None:
    row = run_row(GPT2, None)
    assert row.outcome in ("pass", "not-applicable"), row  # not applicable without transformers


def test_a_character_level_gpt2_tokenizer_is_caught(monkeypatch) -> None:
    pytest.importorskip("transformers")
    from tokenizers import pre_tokenizers

    tokenizers = dict(bpe.byte_level_tokenizers())
    gpt2 = tokenizers["GPT2Tokenizer"]
    monkeypatch.setattr(gpt2.backend_tokenizer, "pre_tokenizer", pre_tokenizers.WhitespaceSplit())
    monkeypatch.setattr(bpe, "byte_level_tokenizers", lambda: tokenizers)
    row = run_row(GPT2, None, profile="mutants")
    assert row.outcome == "fail" and "GPT2Tokenizer" in row.message, row


def test_an_xlm_bpe_with_a_separate_marker_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(bpe, "xlm_bpe", lambda word, ranks: " ".join([*word, END_OF_WORD]))
    monkeypatch.setattr(bpe, "byte_level_tokenizers", lambda: {})
    row = run_row(GPT2, None, profile="mutants")
    assert row.outcome == "fail" and "XLMTokenizer" in row.message, row


def test_every_bpe_property_is_covered(properties) -> None:
    slides = {"bpe.the_bert_vocabulary_keeps_frequent_words_whole_and_splits_the_slides_words_otherwise"}  # see
    # tests/test_mutants_slide_examples.py
    covered = ({q for q, _ in CASES} | {q for q, _ in AGREES_AS_WRITTEN} | {DOCS_AGREE, DOCS_ORDER, GPT2} | slides)
    mine = {q for q, p in properties.items() if p.module == "bpe"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


# -- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("call", "match"), [
    (lambda: train_bpe({}, 3), "empty corpus"),
    (lambda: train_byte_bpe({}, 3), "empty corpus"),
    (lambda: train_bpe({"ab": 1}, -1), "num_merges must be >= 0"),
    (lambda: train_byte_bpe({b"ab": 1}, -1), "num_merges must be >= 0"),
    (lambda: train_bpe({"ab": 0}, 1), "positive integers"),
    (lambda: encode("abc", [("ab", "c")]), "cannot occur"),
    (lambda: encode_bytes("abc", [(b"a", b"bc")]), "cannot occur"),
    (lambda: decode_bytes([b"\xff"]), "can't decode byte 0xff"),
    (lambda: decode_bytes([b"\xc3"]), "unexpected end of data"),
    (lambda: decode(["ab"]), "do not end with the end-of-word marker"),
])
def test_the_reference_refuses_bad_input_with_a_clear_value_error(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_the_reference_text_tokenizers_round_trip() -> None:
    text = "The return statement leaves the function."
    assert detokenize_text("bpe", tokenize_text("bpe", "  " + text.replace(" ", "\n"))) == text
    assert detokenize_text("byte-bpe", tokenize_text("byte-bpe", "a\ud800 \u00e9\n")) == "a\ud800 \u00e9\n"
    with pytest.raises(ValueError, match="after the last end-of-word marker"):
        detokenize_text("bpe", ["ab"])
    with pytest.raises(NotApplicable):
        tokenize_text("wordpiece", "x")
