"""The text every trained tokenizer of the suite learns from: Python's own documentation topics.

``training_text()`` is the help topics Python ships in ``pydoc_data.topics`` (the
language reference's sections, about 465,000 characters of English prose with code
samples), joined in the order of their names by blank lines: the same text for every
implementation on the same Python, nothing downloaded. Implementations that train a
tokenizer for ``tokenize_text`` (:mod:`specformer.protocol.tokenization`) train on it, so
their round trips are checked on tokenizers that have learned real merges.

``training_words()`` is its whitespace split with counts, the input of the BPE trainers.
This module does not build the larger benchmark corpus (:mod:`.corpus`).
"""

from __future__ import annotations

import functools
from collections import Counter

__all__ = ["training_text", "training_words"]


@functools.lru_cache(maxsize=1)
def training_text() -> str:
    """The ``pydoc_data`` help topics, sorted by name, joined by blank lines."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[name] for name in sorted(topics))


@functools.lru_cache(maxsize=1)
def training_words() -> dict[str, int]:
    """Whitespace-separated words of :func:`training_text` with their counts, in first-seen order."""
    return dict(Counter(training_text().split()))
