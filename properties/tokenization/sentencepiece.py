"""Properties of SentencePiece-style tokenization (``spec/tokenization/sentencepiece.md``).

The tokenizer under test is the implementation's ``"unigram"`` tokenizer (``tokenize_text``
and ``detokenize_text``; ``"bpe"`` for the BPE round trip), trained by the implementation
on the suite's training text; every SentencePiece-style implementation marks word starts
with ``"▁"`` (U+2581). Where the boundary claim is about ``##``, the ``"wordpiece"`` and
``"bert"`` tokenizers' detokenizers are asked to read the words back from the prefixes.
Expected values are written out here: the escaped text ``"▁" + text.replace(" ", "▁")``,
the words of the text, the text itself (lower-cased for BERT). "Plain" texts are
words of ASCII letters from the training text joined by single spaces: text every
normaliser leaves alone and every tokenizer trained on that text can spell. The library
facts (both model types in ``sentencepiece``, T5 and LLaMA in ``transformers``) are
checked on the libraries themselves, offline.
"""

from __future__ import annotations

import functools
import io
import math
import random
from collections import Counter

from hypothesis import assume, example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.reference.tokenization import unigram as ref

from . import strategies as sf
from .strategies import plain_texts, plain_words
from .wordpiece import EXAMPLES, LETTERS, PREFIX, library, vocabularies

MARKER = "\u2581"


def escaped(text: str) -> str:
    """What SentencePiece's pieces spell for a plain text: a marker in front, markers for spaces."""
    return MARKER + text.replace(" ", MARKER) if text else ""


#: What SentencePiece's default normaliser (nmt_nfkc) rewrites, and the marker itself.
NORMALISED_AWAY = ("\ufb01", "\uff21", "  ", " ", "\u2581", "\u00a0", "\t", "\u2163", "e\u0301")


def round_trip_texts() -> st.SearchStrategy[str]:
    """The family's awkward texts, with NFKC-sensitive characters, whitespace runs and the marker mixed in."""
    return st.lists(st.one_of(sf.texts(max_size=4), st.sampled_from(NORMALISED_AWAY)), max_size=5).map("".join)


# -- the whitespace marker -------------------------------------------------------------------------


@claim_property("sentencepiece.whitespace-marker", needs=("tokenize_text",), dtypes=("float64",))
@given(text=plain_texts())
@example(text="the cat sat on the mat")
def spaces_become_the_marker_and_every_word_starts_with_one(ctx: Context, text) -> None:
    """The pieces of a plain text spell ``"▁" + text`` with every space replaced by ``"▁"``."""
    pieces = ctx.tokenize_text("unigram", text)
    assert "".join(pieces) == escaped(text), f"the pieces {pieces} of {text!r} do not spell {escaped(text)!r}"


@claim_property("sentencepiece.raw-text", needs=("tokenize_text",), dtypes=("float64",))
@given(text=sf.texts())
@example(text="the cat sat on the mat")
def a_piece_never_spans_two_words(ctx: Context, text) -> None:
    """Corrected: on any text, pieces are non-empty and hold the marker only as their first character: a
    piece never crosses a word boundary (SentencePiece's default ``split_by_whitespace``)."""
    pieces = ctx.tokenize_text("unigram", text)
    inside = [p for p in pieces if not p or MARKER in p[1:]]
    assert not inside, f"pieces of {text!r} that are empty or hold the marker after their start: {inside}"


@claim_property("sentencepiece.raw-text", needs=("tokenize_text",), expect="counterexample", dtypes=("float64",))
@given(text=sf.texts())
@example(text="a  b")
def every_whitespace_character_becomes_a_marker_as_written(ctx: Context, text) -> None:
    """As written (000): whitespace is just another character, so each whitespace character of the text
    is one marker in the pieces, after the marker put in front."""
    assume(text)
    pieces = ctx.tokenize_text("unigram", text)
    markers, spaces = "".join(pieces).count(MARKER), sum(ch.isspace() for ch in text)
    assert markers == 1 + spaces, (f"{text!r} has {spaces} whitespace characters, its pieces {pieces} hold "
                                   f"{markers} markers, not {1 + spaces}")


# -- reversibility ------------------------------------------------------------------------------------


def _round_trip(ctx: Context, kind: str, text: str) -> None:
    pieces = ctx.tokenize_text(kind, text)
    back = ctx.detokenize_text(kind, pieces)
    assert back == text, f"{kind}: {text!r} -> {pieces} -> {back!r}"


@claim_property("sentencepiece.round-trip", needs=("tokenize_text", "detokenize_text"), dtypes=("float64",))
@given(text=plain_texts())
@example(text="the cat sat on the mat")
def detokenizing_restores_a_plain_text_unigram(ctx: Context, text) -> None:
    """Corrected: the ``"unigram"`` tokenizer's detokenizer restores text already in normal form (plain words,
    single spaces, no marker of its own) exactly."""
    _round_trip(ctx, "unigram", text)


@claim_property("sentencepiece.round-trip", needs=("tokenize_text", "detokenize_text"), dtypes=("float64",))
@given(text=plain_texts())
@example(text="the cat sat on the mat")
def detokenizing_restores_a_plain_text_bpe(ctx: Context, text) -> None:
    """Corrected: the same for the ``"bpe"`` tokenizer."""
    _round_trip(ctx, "bpe", text)


@claim_property("sentencepiece.round-trip", needs=("tokenize_text", "detokenize_text"), expect="counterexample",
                dtypes=("float64",))
@given(text=round_trip_texts())
@example(text="\ufb01ne")  # the ligature fi: NFKC makes it two letters
@example(text="a  b")  # a run of spaces: the normaliser collapses it
@example(text="x\u2581y")  # the marker itself comes back as a space
@example(text=" a")  # a leading space
def detokenizing_restores_any_text_as_written(ctx: Context, text) -> None:
    """As written (000): SentencePiece preserves the original text, so detokenizing its pieces gives the text back."""
    _round_trip(ctx, "unigram", text)


# -- word boundaries from the markers -------------------------------------------------------------------


def regroup(pieces: list[str], prefix: str = PREFIX) -> list[str]:
    """Words from WordPiece pieces: a piece with the prefix continues the current word (or starts one).

    :func:`specformer.reference.tokenization.wordpiece.words_from_pieces`, except that a first
    piece with the prefix starts a word instead of raising: the refutation feeds it such pieces.
    """
    words: list[str] = []
    for piece in pieces:
        if piece.startswith(prefix) and words:
            words[-1] += piece[len(prefix):]
        else:
            words.append(piece[len(prefix):] if piece.startswith(prefix) else piece)
    return words


@claim_property("sentencepiece.markers-track-boundaries", needs=("wordpiece",), dtypes=("float64",))
@given(words=st.lists(st.text(LETTERS, min_size=1, max_size=5), min_size=1, max_size=5),
       vocab=vocabularies(complete=True))
def wordpiece_prefixes_recover_the_words(ctx: Context, words, vocab) -> None:
    """Corrected: for words that do not begin with ``##`` and are not unknown, a piece without ``##``
    starts a word, so the concatenated pieces of a word list give the words back."""
    pieces = [p for w in words for p in ctx.wordpiece(w, vocab, unk="[UNK]", prefix=PREFIX, max_chars=100)]
    got = regroup(pieces)
    assert got == words, f"the pieces {pieces} of {words} regroup into {got}"


@claim_property("sentencepiece.markers-track-boundaries", needs=("tokenize_text",), dtypes=("float64",))
@given(text=plain_texts())
def sentencepiece_markers_recover_the_words(ctx: Context, text) -> None:
    """Corrected: in the pieces of a plain text, a piece beginning with ``"▁"`` starts a word, and the
    groups so formed are the text's words."""
    pieces = ctx.tokenize_text("unigram", text)
    words: list[str] = []
    for piece in pieces:
        if piece.startswith(MARKER) or not words:
            words.append(piece.removeprefix(MARKER))
        else:
            words[-1] += piece
    assert words == text.split(" "), f"the pieces {pieces} of {text!r} regroup into {words}"


def _words_back(ctx: Context, kind: str, text: str, cased: tuple[bool, ...]) -> None:
    """``detokenize_text(kind, tokenize_text(kind, text))`` is the plain ``text`` (lower-cased, or as written where
    ``cased`` allows it): the detokenizer glues every ``##`` piece to the piece before and spaces the words."""
    pieces = ctx.tokenize_text(kind, text)
    back = ctx.detokenize_text(kind, pieces)
    forms = [text if keep else text.lower() for keep in cased]
    assert back in forms, f"{kind}: {text!r} -> {pieces} -> {back!r}, not {' or '.join(map(repr, dict.fromkeys(forms)))}"


@claim_property("sentencepiece.markers-track-boundaries", needs=("tokenize_text", "detokenize_text"),
                dtypes=("float64",))
@given(text=plain_texts())
@example(text="Tokenization of the transformer")
def the_wordpiece_detokenizer_reads_the_words_back_from_the_prefixes(ctx: Context, text) -> None:
    """Corrected, for ``##``: the ``"wordpiece"`` tokenizer's detokenizer gives a plain text back from its pieces
    (as written, or lower-cased: a WordPiece tokenizer may lower-case first)."""
    _words_back(ctx, "wordpiece", text, (True, False))


@claim_property("sentencepiece.markers-track-boundaries", needs=("tokenize_text", "detokenize_text"),
                dtypes=("float64",))
@given(text=plain_texts())
@example(text="Tokenization of the transformer")
def bert_detokenizer_reads_the_lower_cased_words_back_from_the_prefixes(ctx: Context, text) -> None:
    """Corrected, for ``##``: BERT's detokenizer (kind ``"bert"``) gives a plain text back, lower-cased, from the
    pieces of its uncased tokenizer."""
    _words_back(ctx, "bert", text, (False,))


@claim_property("sentencepiece.markers-track-boundaries", needs=("detokenize_text",), dtypes=("float64",))
@given(words=st.lists(st.sampled_from(sorted(EXAMPLES)), min_size=1, max_size=4))
@example(words=["embeddings"])
def bert_detokenizer_joins_the_documents_pieces_into_their_words(ctx: Context, words) -> None:
    """The documents' BERT pieces (``em ##bed ##ding ##s``, ``token ##ization``, ``transform ##er``), one word's
    after another: BERT's detokenizer (kind ``"bert"``) gives the words, separated by single spaces."""
    pieces = [piece for word in words for piece in EXAMPLES[word]]
    back, expected = ctx.detokenize_text("bert", pieces), " ".join(words)
    assert back == expected, f"bert: the pieces {pieces} detokenize to {back!r}, not {expected!r}"


@claim_property("sentencepiece.markers-track-boundaries", needs=("wordpiece",), expect="counterexample",
                dtypes=("float64",))
@given(words=st.lists(st.sampled_from(["a", "b", "ab", "##a", "##b"]), min_size=1, max_size=4))
@example(words=["a", "##a"])
def subword_markers_always_recover_the_words_as_written(ctx: Context, words) -> None:
    """As written (000): the ``##`` marker tracks token boundaries, for any words (here some begin with ``##``;
    the vocabulary could spell them as ``#`` ``###`` ``##a``, but greedy matching starts with ``##a``)."""
    vocab = ["a", "b", "ab", "##a", "##b", "#", "###"]
    pieces = [p for w in words for p in ctx.wordpiece(w, vocab, unk="[UNK]", prefix=PREFIX, max_chars=100)]
    got = regroup(pieces)
    assert got == words, f"the pieces {pieces} of {words} regroup into {got}"


# -- the library: both algorithms, and who uses it ------------------------------------------------------


@functools.lru_cache(maxsize=2)
def small_model(model_type: str) -> bytes:
    """A ``sentencepiece`` model of 300 pieces trained on the first 1,500 lines of the training text."""
    from specformer.reference.tokenization.training import training_text

    spm = library("sentencepiece")
    lines = [line for line in training_text().splitlines() if line.strip()][:1500]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, model_type=model_type,
                                   vocab_size=300, character_coverage=1.0, num_threads=1, minloglevel=2)
    return model.getvalue()


@claim_property("sentencepiece.bpe-and-unigram", needs=(), about="library", dtypes=("float64",), max_examples=10)
@given(model_type=st.sampled_from(["bpe", "unigram"]), text=plain_texts())
def sentencepiece_trains_both_bpe_and_unigram_models(ctx: Context, model_type, text) -> None:
    """``sentencepiece`` trains either model type on raw lines; both mark words with ``"▁"`` and restore
    plain text. A BPE model scores its pieces ``0, -1, -2, ...`` (merge order); a Unigram model by
    log-probabilities, whose exponentials sum to at most 1."""
    spm = library("sentencepiece")
    processor = spm.SentencePieceProcessor(model_proto=small_model(model_type))
    pieces = processor.encode(text, out_type=str)
    assert "".join(pieces) == escaped(text) and processor.decode_pieces(pieces) == text, (
        f"{model_type}: {text!r} -> {pieces}")
    normal = [i for i in range(processor.get_piece_size())
              if not (processor.is_unknown(i) or processor.is_control(i) or processor.is_unused(i))]
    scores = [processor.get_score(i) for i in normal]
    if model_type == "bpe":
        assert scores == [-float(r) for r in range(len(scores))], f"BPE scores are not the merge ranks: {scores[:8]}"
    else:
        total = math.fsum(math.exp(s) for s in scores)
        assert all(s <= 0 for s in scores) and total <= 1 + 1e-6 and any(s != round(s) for s in scores), (
            f"Unigram scores are not log-probabilities: the first are {scores[:8]}, their exponentials sum to {total}")


#: transformers' tokenizer classes for the documents' SentencePiece users and what each builds.
USED_BY = {"t5": ("T5Tokenizer", "Unigram"), "llama": ("LlamaTokenizer", "BPE")}


@claim_property("sentencepiece.used-by", needs=(), about="library", dtypes=("float64",), max_examples=2)
@given(model=st.sampled_from(sorted(USED_BY)))
def t5_and_llama_tokenizers_are_sentencepiece_models(ctx: Context, model) -> None:
    """``transformers``' T5 tokenizer is a Unigram model and LLaMA's (1 and 2) a BPE model with byte
    fallback, both marking spaces with ``"▁"`` and reading a SentencePiece model file (built offline)."""
    transformers = library("transformers")
    name, expected = USED_BY[model]
    cls = getattr(transformers, name)
    backend = cls().backend_tokenizer
    kind = type(backend.model).__name__
    parts = [part for part in (backend.normalizer, backend.pre_tokenizer, backend.decoder) if part is not None]
    files = getattr(cls, "vocab_files_names", {})
    assert kind == expected, f"{name} builds a {kind} model, expected {expected}"
    assert any(MARKER in repr(part) for part in parts), f"{name} does not mark spaces with {MARKER!r}: {parts}"
    assert str(files.get("vocab_file", "")).endswith(".model"), f"{name} reads {files}, not a SentencePiece model"
    if kind == "BPE":
        assert backend.model.byte_fallback, f"{name}'s BPE model has no byte fallback"


# -- the marker is U+2581, not the underscore -------------------------------------------------------

#: The character the documents name beside the marker: LOW LINE, U+005F.
UNDERSCORE = "_"


@st.composite
def underscored_texts(draw: st.DrawFn) -> str:
    """Plain training words, some joined inside by an underscore (``snake_case``), separated by single spaces."""
    words = draw(st.lists(st.sampled_from(plain_words()), min_size=2, max_size=8), label="words")
    joins = draw(st.lists(st.booleans(), min_size=len(words) - 1, max_size=len(words) - 1), label="underscores")
    text = words[0]
    for word, underscore in zip(words[1:], joins):
        text += (UNDERSCORE if underscore else " ") + word
    return text


@claim_property("sentencepiece.marker-character", needs=("tokenize_text", "detokenize_text"), dtypes=("float64",))
@given(text=underscored_texts())
@example(text="snake_case name")
def the_marker_is_u2581_and_an_underscore_stays_an_ordinary_character(ctx: Context, text) -> None:
    """Corrected: the pieces mark each space (and the start) with U+2581, one per word; an underscore in the text
    is a character like any other: the pieces hold it as often as the text does, and it comes back as itself."""
    pieces = ctx.tokenize_text("unigram", text)
    joined = "".join(pieces)
    assert joined.count(MARKER) == text.count(" ") + 1, (
        f"{text!r}: the pieces {pieces} hold {joined.count(MARKER)} markers U+2581 for {text.count(' ') + 1} words")
    assert joined.count(UNDERSCORE) == text.count(UNDERSCORE), (
        f"{text!r}: the pieces {pieces} hold {joined.count(UNDERSCORE)} underscores, the text "
        f"{text.count(UNDERSCORE)}")
    back = ctx.detokenize_text("unigram", pieces)
    assert back == text, f"{text!r} -> {pieces} -> {back!r}"


@claim_property("sentencepiece.marker-character", needs=("tokenize_text",), expect="counterexample",
                dtypes=("float64",))
@given(text=plain_texts())
def the_marker_is_the_underscore_as_written(ctx: Context, text) -> None:
    """As written (000): the marker is "▁" (underscore): so each word's first piece starts with ``_`` (U+005F)."""
    pieces = ctx.tokenize_text("unigram", text)
    assert pieces and pieces[0].startswith(UNDERSCORE), (
        f"{text!r}: the first piece {pieces[0] if pieces else None!r} starts with "
        f"{pieces[0][:1] if pieces else ''!r} (U+{ord(pieces[0][0]) if pieces and pieces[0] else 0:04X}), "
        "not the underscore U+005F")


# -- any language: text without spaces -----------------------------------------------------------------

#: Two- and three-character Chinese words: the lexicon the unspaced sentences are made of.
CHINESE_WORDS = ("我们 今天 天气 非常 喜欢 学习 语言 模型 中国 北京 朋友 老师 学生 时间 工作 问题 电脑 音乐 "
                 "电影 城市 医生 银行 咖啡 早上 晚上 周末 公园 图书馆 火车站 大学生").split()


def unspaced_sentences(rng: random.Random, n: int) -> list[list[str]]:
    """``n`` sentences, each 3 to 7 words of :data:`CHINESE_WORDS` (written without spaces when joined)."""
    return [[rng.choice(CHINESE_WORDS) for _ in range(rng.randint(3, 7))] for _ in range(n)]


def boundaries(parts: list[str]) -> set[int]:
    """The character offsets between consecutive parts."""
    out, at = set(), 0
    for part in parts[:-1]:
        at += len(part)
        out.add(at)
    return out


@claim_property("sentencepiece.language-agnostic", needs=("unigram_em_step", "unigram_prune", "unigram_segment"),
                dtypes=("float64",), max_examples=5)
@given(seed=st.integers(0, 2**32 - 1))
def trained_on_text_without_spaces_it_finds_the_words(ctx: Context, seed) -> None:
    """Unigram training (the implementation's EM and pruning steps) on 150 Chinese sentences written without
    spaces, down to the characters plus 30 pieces, learns the 30 words they are made of, and its segmentation
    of 50 new sentences puts at least 95% of the word boundaries where they are, and few elsewhere."""
    rng = random.Random(seed)
    sentences = Counter("".join(s) for s in unspaced_sentences(rng, 150))
    words = dict(sentences)
    pieces = ref.seed_pieces(words, 4, 300)
    target = len({c for w in words for c in w}) + len(CHINESE_WORDS)
    for _ in range(60):
        for _ in range(2):
            pieces = ctx.unigram_em_step(words, pieces)
        if len(pieces) <= target:
            break
        pieces = ctx.unigram_prune(words, pieces, max(target, len(pieces) - max(1, len(pieces) // 4)))
    learned = sorted(set(CHINESE_WORDS) - set(pieces))
    assert not learned, f"training on unspaced text left out the words {learned} (pieces: {sorted(pieces)})"
    found = right = expected = 0
    for gold in unspaced_sentences(rng, 50):
        text = "".join(gold)
        segmentation = ctx.unigram_segment(text, pieces)
        assert "".join(segmentation) == text, f"the segmentation {segmentation} does not spell {text!r}"
        got, want = boundaries(segmentation), boundaries(gold)
        found, right, expected = found + len(got), right + len(got & want), expected + len(want)
    recall, precision = right / max(expected, 1), right / max(found, 1)
    assert recall >= 0.95 and precision >= 0.95, (
        f"word boundaries of 50 unspaced sentences: recall {recall:.1%}, precision {precision:.1%} (at least 95%)")
