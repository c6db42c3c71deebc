"""Word and character tokenization (``spec/tokenization/words.md``).

Implementations are asked for ``tokenize_text(kind, text)`` and ``detokenize_text(kind,
tokens)`` with ``kind`` ``"words"`` or ``"characters"``. Expected values are written out
here or computed from the text itself (its code points, its non-whitespace characters, the
text itself for the character round trip); the word round trip compares the implementation
with itself. Measurements run the implementation's word tokenizer on :func:`training_text`
(Python's help topics, 465,126 characters) and compare with thresholds stated on the spec
page; the numbers there are the measured ones.

Claims about NLTK and spaCy themselves (library facts) call the libraries directly
(``needs=()``): they are not applicable where the library is not installed. What the two
libraries return is written out below; the adapters (``specformer/adapters/nltk_words.py``,
``spacy_words.py``) put the same tokenizers under the protocol.
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.optional import missing_message
from specformer.protocol import NotApplicable
from specformer.reference.tokenization.training import training_text

from .strategies import texts

F64 = ("float64",)
CAT_SAT = "The cat sat on the mat."
CAT_SAT_TOKENS = ["The", "cat", "sat", "on", "the", "mat", "."]
THE_CAT_CHARACTERS = ["T", "h", "e", " ", "c", "a", "t"]


def non_space(text: str) -> str:
    """``text`` without its whitespace characters (``str.isspace``)."""
    return "".join(char for char in text if not char.isspace())


# --------------------------------------------------------------------------- the libraries (library facts)


@functools.lru_cache(maxsize=1)
def _nltk() -> Any:
    try:
        from nltk.tokenize import TreebankWordTokenizer
    except ImportError as exc:
        raise NotApplicable(missing_message(exc.name) or f"NLTK is not installed ({exc})") from None
    return TreebankWordTokenizer()


@functools.lru_cache(maxsize=2)
def _spacy(language: str = "en") -> Any:
    try:
        import spacy
    except ImportError as exc:
        raise NotApplicable(missing_message(exc.name) or f"spaCy is not installed ({exc})") from None
    return spacy.blank(language)


def nltk_tokens(text: str) -> list[str]:
    """NLTK's ``TreebankWordTokenizer().tokenize(text)``."""
    return list(_nltk().tokenize(text))


def spacy_tokens(text: str, language: str = "en") -> list[str]:
    """The token texts of ``spacy.blank(language)(text)`` (a blank pipeline: the tokenizer only)."""
    return [token.text for token in _spacy(language)(text)]


def spacy_doc_text(text: str) -> str:
    """The text spaCy's ``Doc`` rebuilds from its tokens and the whitespace after each (``text_with_ws``)."""
    return "".join(token.text_with_ws for token in _spacy("en")(text))


# --------------------------------------------------------------------------- strategies

#: Chinese ideographs (the classic range), hiragana and katakana: letters, no spaces, no punctuation.
_NO_SPACE_SCRIPTS = st.one_of(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FA5),
                              st.characters(min_codepoint=0x3041, max_codepoint=0x3096),
                              st.characters(min_codepoint=0x30A1, max_codepoint=0x30FA))
no_space_texts = st.text(_NO_SPACE_SCRIPTS, min_size=1, max_size=12)

STEMS = ("run", "walk", "play", "jump", "talk", "look", "help", "work", "learn", "token")
SUFFIXES = ("", "s", "ing", "ed", "er")

#: What the libraries return (NLTK 3.10.4, spaCy 3.8.18): input -> (NLTK's tokens, spaCy's tokens).
LIBRARY_DIFFERENCES: dict[str, tuple[list[str], list[str]]] = {
    "U.S.A.": (["U.S.A", "."], ["U.S.A."]),
    "e-mail": (["e-mail"], ["e", "-", "mail"]),
    '"quoted"': (["``", "quoted", "''"], ['"', "quoted", '"']),
    "Hello, y'all!": (["Hello", ",", "y'all", "!"], ["Hello", ",", "y'", "all", "!"]),
    "The cat sat. The dog ran.": (["The", "cat", "sat.", "The", "dog", "ran", "."],
                                  ["The", "cat", "sat", ".", "The", "dog", "ran", "."]),
    "a/b": (["a/b"], ["a", "/", "b"]),
    "don\u2019t": (["don\u2019t"], ["do", "n\u2019t"]),
}

#: English contractions with a straight apostrophe, split the same way by both libraries.
CONTRACTIONS: dict[str, list[str]] = {
    "don't": ["do", "n't"], "can't": ["ca", "n't"], "won't": ["wo", "n't"], "doesn't": ["does", "n't"],
    "isn't": ["is", "n't"], "I'm": ["I", "'m"], "you're": ["you", "'re"], "it's": ["it", "'s"],
    "they'll": ["they", "'ll"], "we've": ["we", "'ve"], "she'd": ["she", "'d"], "Don't": ["Do", "n't"],
}
#: The same contractions with the typographic apostrophe U+2019, as printed text has them.
CURLY_CONTRACTIONS = {word.replace("'", "\u2019"): [t.replace("'", "\u2019") for t in tokens]
                      for word, tokens in CONTRACTIONS.items()}

GERMAN_COMPOUNDS = ("Donaudampfschifffahrtsgesellschaft", "Haust\u00fcr", "Handschuh", "Kindergarten",
                    "Bundesverfassungsgericht", "Lebensversicherungsgesellschaft", "Fu\u00dfballweltmeisterschaft")


# --------------------------------------------------------------------------- splitting


@claim_property("words.split-rule", needs=("tokenize_text",), dtypes=F64)
@given(text=texts())
@example(text=CAT_SAT)
@example(text='he said "hi"')
def word_tokens_keep_every_character_but_whitespace_in_order(ctx: Context, text) -> None:
    """The tokens hold the text's non-whitespace characters, in order, and no token mixes whitespace with the rest."""
    tokens = ctx.tokenize_text("words", text)
    assert non_space("".join(tokens)) == non_space(text), (
        f"the tokens {tokens!r:.300} do not hold the non-whitespace characters of {text!r:.200} in order"
    )
    mixed = [t for t in tokens if not t or (non_space(t) and non_space(t) != t)]
    assert not mixed, f"tokens {mixed!r:.200} are empty or mix whitespace with other characters"


@claim_property("words.cat-sat", needs=("tokenize_text",), dtypes=F64, max_examples=1)
@given(text=st.just(CAT_SAT))
def the_cat_sat_on_the_mat_gives_seven_tokens(ctx: Context, text) -> None:
    """``"The cat sat on the mat."`` -> ``The cat sat on the mat .``: the full stop is a token of its own."""
    tokens = ctx.tokenize_text("words", text)
    assert tokens == CAT_SAT_TOKENS, f"{text!r} gave {tokens!r}, expected {CAT_SAT_TOKENS!r}"


@claim_property("words.morphological-variants", needs=("tokenize_text",), dtypes=F64)
@given(stem=st.sampled_from(STEMS), suffixes=st.lists(st.sampled_from(SUFFIXES), min_size=2, max_size=5, unique=True))
@example(stem="run", suffixes=["", "ing", "s"])
def variants_of_a_word_are_distinct_whole_tokens(ctx: Context, stem, suffixes) -> None:
    """``run running runs``: each variant is one token, and no two variants share a token."""
    variants = [stem + suffix for suffix in suffixes]
    tokens = ctx.tokenize_text("words", " ".join(variants))
    assert tokens == variants, f"{' '.join(variants)!r} gave {tokens!r}, expected one whole token per word"


@claim_property("words.no-spaces", needs=("tokenize_text",), dtypes=F64)
@given(text=no_space_texts)
@example(text="\u6211\u559c\u6b22\u732b")  # 我喜欢猫, "I like cats"
@example(text="\u732b\u304c\u597d\u304d\u3067\u3059")  # 猫が好きです
def text_without_spaces_stays_one_token(ctx: Context, text) -> None:
    """Chinese or Japanese letters without spaces or punctuation come back as a single token: no segmentation."""
    tokens = ctx.tokenize_text("words", text)
    assert tokens == [text], f"{text!r} gave {tokens!r}: a tokenizer that splits at spaces has no boundary to split at"


# --------------------------------------------------------------------------- the libraries


@claim_property("words.contractions", needs=(), about="library", dtypes=F64)
@given(word=st.sampled_from(sorted(CONTRACTIONS)))
@example(word="don't")
def nltk_and_spacy_split_contractions_with_a_straight_apostrophe(ctx: Context, word) -> None:
    """Corrected: both split ``"don't"`` into ``do n't`` (table: ``can't`` -> ``ca n't``); spaCy also with U+2019."""
    expected = CONTRACTIONS[word]
    got = {"NLTK": nltk_tokens(word), "spaCy": spacy_tokens(word)}
    curly = word.replace("'", "\u2019")
    got["spaCy (U+2019)"], expected_curly = spacy_tokens(curly), CURLY_CONTRACTIONS[curly]
    assert got["NLTK"] == expected and got["spaCy"] == expected and got["spaCy (U+2019)"] == expected_curly, (
        f"{word!r}: {got}, expected {expected} (and {expected_curly} for spaCy with U+2019)"
    )


@claim_property("words.contractions", needs=(), about="library", expect="counterexample", dtypes=F64)
@given(word=st.sampled_from(sorted(CONTRACTIONS) + sorted(CURLY_CONTRACTIONS)))
@example(word="don\u2019t")
def nltk_and_spacy_split_every_contraction_as_written(ctx: Context, word) -> None:
    """As written: NLTK and spaCy split English contractions (``don't`` -> ``do n't``), whatever the apostrophe."""
    for library, tokens in (("NLTK", nltk_tokens(word)), ("spaCy", spacy_tokens(word))):
        assert len(tokens) == 2, f"{library} keeps {word!r} as {tokens!r}: the contraction is not split"


@claim_property("words.libraries-differ", needs=(), about="library", dtypes=F64)
@given(text=st.sampled_from(sorted(LIBRARY_DIFFERENCES)))
def nltk_and_spacy_split_punctuation_and_special_characters_differently(ctx: Context, text) -> None:
    """NLTK's Treebank tokenizer and spaCy's English tokenizer give the tokens of the table, which differ."""
    expected_nltk, expected_spacy = LIBRARY_DIFFERENCES[text]
    got_nltk, got_spacy = nltk_tokens(text), spacy_tokens(text)
    assert (got_nltk, got_spacy) == (expected_nltk, expected_spacy), (
        f"{text!r}: NLTK {got_nltk!r} (expected {expected_nltk!r}), spaCy {got_spacy!r} (expected {expected_spacy!r})"
    )
    assert got_nltk != got_spacy, f"{text!r}: NLTK and spaCy agree on {got_nltk!r}"


@claim_property("words.german-compounds", needs=(), about="library", dtypes=F64)
@given(word=st.sampled_from(GERMAN_COMPOUNDS))
def german_compounds_stay_whole(ctx: Context, word) -> None:
    """Corrected: NLTK's Treebank tokenizer and spaCy's German tokenizer keep a closed compound as one token."""
    got = {"NLTK": nltk_tokens(word), "spaCy (de)": spacy_tokens(word, "de")}
    assert all(tokens == [word] for tokens in got.values()), f"{word!r}: {got}, expected [{word!r}] from both"


@claim_property("words.german-compounds", needs=(), about="library", expect="counterexample", dtypes=F64)
@given(word=st.sampled_from(GERMAN_COMPOUNDS))
@example(word="Haust\u00fcr")
def nltk_and_spacy_split_german_compounds_as_written(ctx: Context, word) -> None:
    """As written: the language-aware tokenizers handle German compounds, splitting them into their parts."""
    for library, tokens in (("NLTK", nltk_tokens(word)), ("spaCy (de)", spacy_tokens(word, "de"))):
        assert len(tokens) > 1, f"{library} keeps the compound {word!r} whole: {tokens!r}"


# --------------------------------------------------------------------------- vocabulary of words


def _doubling_types(tokens: list[str]) -> list[int]:
    """Distinct tokens among the first 1/16, 1/8, 1/4, 1/2 and all of ``tokens``."""
    n = len(tokens)
    return [len(set(tokens[:n // 2**k])) for k in (4, 3, 2, 1, 0)]


@claim_property("words.vocabulary-explosion", needs=("tokenize_text",), dtypes=F64, max_examples=1)
@given(corpus=st.just("training_text"))
def distinct_words_keep_growing_with_the_corpus(ctx: Context, corpus) -> None:
    """On the training text, every doubling of the tokens read adds at least 30% more distinct words."""
    tokens = ctx.tokenize_text("words", training_text())
    types = _doubling_types(tokens)
    growth = [b / a - 1 for a, b in zip(types, types[1:])]
    assert min(growth) >= 0.30, (
        f"distinct words after 1/16, 1/8, 1/4, 1/2, all of the {len(tokens)} tokens: {types}; growth per doubling "
        f"{[round(g, 3) for g in growth]}, below 30%: the vocabulary levels off"
    )


@claim_property("words.out-of-vocabulary", needs=("tokenize_text",), dtypes=F64, max_examples=1)
@given(corpus=st.just("training_text"))
def held_out_text_has_words_the_training_part_lacks(ctx: Context, corpus) -> None:
    """A vocabulary of the first 7/8 of the training text's tokens misses >= 1% of the last 1/8's tokens, >= 10% of its types."""
    tokens = ctx.tokenize_text("words", training_text())
    cut = len(tokens) * 7 // 8
    vocabulary, held_out = set(tokens[:cut]), tokens[cut:]
    unknown = [t for t in held_out if t not in vocabulary]
    token_rate, type_rate = len(unknown) / len(held_out), len(set(unknown)) / len(set(held_out))
    assert token_rate >= 0.01 and type_rate >= 0.10, (
        f"{len(unknown)} of {len(held_out)} held-out tokens ({token_rate:.2%}) and {len(set(unknown))} of "
        f"{len(set(held_out))} types ({type_rate:.2%}) are out of vocabulary; expected >= 1% and >= 10%"
    )


# --------------------------------------------------------------------------- reversibility


@claim_property("words.reversible", needs=("tokenize_text", "detokenize_text"), dtypes=F64)
@given(text=texts())
@example(text=CAT_SAT)
# A quotation inside a double-quoted one: NLTK's Treebank tokenizer writes the closing " as '' after the ', and
# its detokenizer puts the " back before the ' (He said "'hi"'), which tokenizes differently.
@example(text='He said "\'hi\'"')
def detokenized_text_tokenizes_back_and_is_a_fixed_point(ctx: Context, text) -> None:
    """Corrected: ``c = detok(tok(text))`` has the same tokens as ``text``, and ``detok(tok(c)) == c``."""
    tokens = ctx.tokenize_text("words", text)
    rebuilt = ctx.detokenize_text("words", tokens)
    again = ctx.tokenize_text("words", rebuilt)
    assert again == tokens, (
        f"{text!r:.200} -> {tokens!r:.200} -> {rebuilt!r:.200}, which tokenizes to {again!r:.200}"
    )
    assert ctx.detokenize_text("words", again) == rebuilt, f"{rebuilt!r:.200} is not rebuilt from its own tokens"


@claim_property("words.reversible", needs=(), about="library", dtypes=F64)
@given(text=texts())
@example(text="a  b\t.")
def spacy_docs_rebuild_their_text_exactly(ctx: Context, text) -> None:
    """Corrected: a spaCy ``Doc`` keeps the whitespace after each token, and gives the text back exactly."""
    rebuilt = spacy_doc_text(text)
    assert rebuilt == text, f"spaCy rebuilt {rebuilt!r:.200} from {text!r:.200}"


# --------------------------------------------------------------------------- characters


def _texts_for(ctx: Context, data: Any) -> str:
    """A drawn text, with lone surrogates only for an implementation that does not declare it refuses them."""
    return data.draw(texts(surrogates=ctx.supports("lone_surrogates", True)), label="text")


@claim_property("words.characters", needs=("tokenize_text",), dtypes=F64)
@given(data=st.data())
@example(data=None)
def character_tokens_are_the_code_points(ctx: Context, data) -> None:
    """One token per code point, in order (``"The cat"`` -> ``T h e ␣ c a t``)."""
    text = "The cat" if data is None else _texts_for(ctx, data)
    tokens = ctx.tokenize_text("characters", text)
    assert tokens == list(text), f"{text!r:.200} gave {tokens!r:.300}, expected its code points {list(text)!r:.300}"
    if text == "The cat":
        assert tokens == THE_CAT_CHARACTERS, f"'The cat' gave {tokens!r}, the notes give {THE_CAT_CHARACTERS!r}"


@claim_property("words.characters", needs=("tokenize_text", "detokenize_text"), dtypes=F64)
@given(data=st.data())
@example(data=None)
def character_tokens_join_back_into_the_text(ctx: Context, data) -> None:
    """Character tokenization loses nothing: detokenizing the text's code points, and the implementation's own
    character tokens of it, gives the text back exactly (spaces, combining marks and control characters
    included)."""
    text = "The cat" if data is None else _texts_for(ctx, data)
    back = ctx.detokenize_text("characters", list(text))
    same = back == text  # not in the assert: pytest's rewritten diff would print a raw lone surrogate
    assert same, f"the code points {list(text)!r:.300} detokenize to {back!r:.200}, not {text!r:.200}"
    tokens = ctx.tokenize_text("characters", text)
    back = ctx.detokenize_text("characters", tokens)
    same = back == text
    assert same, f"{text!r:.200} -> {tokens!r:.300} -> {back!r:.200}"


@claim_property("words.characters-any-script", needs=("tokenize_text",), dtypes=F64)
@given(text=st.one_of(no_space_texts, st.sampled_from(("\u043f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440",
                                                       "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
                                                       "\u03b1\u03b2\u03b3 \u03b4", "na\u00efve caf\u00e9"))))
@example(text="\u6211\u559c\u6b22\u732b")
def character_tokens_work_the_same_in_every_script(ctx: Context, text) -> None:
    """Text without spaces, Cyrillic, Arabic, Greek: one token per code point, with no change to the tokenizer."""
    tokens = ctx.tokenize_text("characters", text)
    assert tokens == list(text), f"{text!r} gave {tokens!r}, expected {list(text)!r}"


def _character_vocabulary(ctx: Context) -> set[str]:
    """The implementation's character tokens of the training text's distinct characters, in code point order."""
    return set(ctx.tokenize_text("characters", "".join(sorted(set(training_text())))))


@claim_property("words.closed-vocabulary", needs=("tokenize_text",), dtypes=F64)
@given(data=st.data())
@example(data=None)
def unseen_characters_are_out_of_a_learned_character_vocabulary(ctx: Context, data) -> None:
    """Corrected: against the training text's characters, exactly the unseen characters are out of vocabulary;
    every token is one code point, so the vocabulary of all 1,114,112 code points leaves none out."""
    text = "caf\u00e9" if data is None else _texts_for(ctx, data)
    vocabulary = _character_vocabulary(ctx)
    tokens = ctx.tokenize_text("characters", text)
    assert all(len(t) == 1 and ord(t) < 0x110000 for t in tokens), f"{tokens!r:.300}: not all single code points"
    unknown, expected = {t for t in tokens if t not in vocabulary}, set(text) - set(training_text())
    assert unknown == expected, (
        f"{text!r:.200}: out-of-vocabulary tokens {sorted(unknown)!r:.200}, expected the unseen characters "
        f"{sorted(expected)!r:.200}"
    )


@claim_property("words.closed-vocabulary", needs=("tokenize_text",), expect="counterexample", dtypes=F64)
@given(text=texts())
@example(text="caf\u00e9")
def a_character_vocabulary_has_no_unknown_tokens_as_written(ctx: Context, text) -> None:
    """As written: the character set is known in advance, so a character vocabulary leaves nothing unknown."""
    vocabulary = _character_vocabulary(ctx)
    unknown = sorted({t for t in ctx.tokenize_text("characters", text) if t not in vocabulary})
    assert not unknown, f"{text!r:.200} has characters the training text never showed: {unknown!r:.200}"


@claim_property("words.character-length", needs=("tokenize_text",), dtypes=F64)
@given(text=texts())
@example(text="a")
def a_text_has_at_least_as_many_characters_as_word_tokens(ctx: Context, text) -> None:
    """Corrected: ``len(text) >= len(word tokens)`` for every text (each word token holds at least one character)."""
    tokens = ctx.tokenize_text("words", text)
    assert len(text) >= len(tokens), f"{text!r:.200} has {len(text)} characters but {len(tokens)} word tokens"


@functools.lru_cache(maxsize=1)
def prose_paragraphs() -> tuple[str, ...]:
    """The paragraphs of the training text (split at blank lines) of at least 10 words that read as English
    prose (:func:`specformer.reference.tokenization.corpus.looks_like_prose`: letters, function words): 1,521
    of them with Python 3.11's help topics; code samples and tables are left out."""
    import re

    from specformer.reference.tokenization.corpus import looks_like_prose

    return tuple(p for p in re.split(r"\n\s*\n", training_text()) if len(p.split()) >= 10 and looks_like_prose(p))


@claim_property("words.character-length", needs=("tokenize_text",), dtypes=F64)
@given(data=st.data())
def english_prose_has_at_least_twice_as_many_characters_as_word_tokens(ctx: Context, data) -> None:
    """Holds ("much longer" read as at least twice as long): every paragraph of English prose drawn from the
    training text has at least 2 characters (spaces included) per word token."""
    paragraph = data.draw(st.sampled_from(prose_paragraphs()), label="paragraph")
    tokens = ctx.tokenize_text("words", paragraph)
    ratio = len(paragraph) / max(len(tokens), 1)
    assert ratio >= 2, f"{paragraph!r:.200}: {len(paragraph)} characters, {len(tokens)} word tokens ({ratio:.2f})"
