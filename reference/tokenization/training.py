"""The suite's training text, Python's own documentation topics, and the part of it tokenizers learn from.

``training_text()`` is the help topics Python ships in ``pydoc_data.topics`` (the
language reference's sections, about 465,000 characters of English prose with code
samples), joined in the order of their names by blank lines: the same text for every
implementation on the same Python, nothing downloaded. The word and vocabulary
measurements run on it.

``tokenizer_training_text()`` is every fourth of those topics (:data:`TOPIC_STEP`; about
123,000 characters, 3,835 distinct words on Python 3.11): the protocol's ``TRAINING_CORPUS``.
Implementations that train a tokenizer for ``tokenize_text``
(:mod:`specformer.protocol.tokenization`) train on it, so their round trips are checked on
tokenizers that have learned real merges, and a textbook trainer that recounts every pair
after each merge learns a few hundred merges from it in seconds (the whole text takes four
times as long).

``training_words()`` and ``tokenizer_training_words()`` are their whitespace splits with
counts, the input of the BPE trainers. This module does not build the larger benchmark
corpus (:mod:`.corpus`).
"""

from __future__ import annotations

import functools
from collections import Counter

__all__ = ["TOPIC_STEP", "tokenizer_training_text", "tokenizer_training_words", "training_text", "training_words"]

#: The tokenizers' text takes every this-many-th help topic, in the order of their names, from the first.
TOPIC_STEP = 4


@functools.lru_cache(maxsize=1)
def training_text() -> str:
    """The ``pydoc_data`` help topics, sorted by name, joined by blank lines."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[name] for name in sorted(topics))


@functools.lru_cache(maxsize=1)
def training_words() -> dict[str, int]:
    """Whitespace-separated words of :func:`training_text` with their counts, in first-seen order."""
    return dict(Counter(training_text().split()))


@functools.lru_cache(maxsize=1)
def tokenizer_training_text() -> str:
    """Every :data:`TOPIC_STEP`-th ``pydoc_data`` help topic, sorted by name, joined by blank lines."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[name] for name in sorted(topics)[::TOPIC_STEP])


@functools.lru_cache(maxsize=1)
def tokenizer_training_words() -> dict[str, int]:
    """Whitespace-separated words of :func:`tokenizer_training_text` with their counts, in first-seen order."""
    return dict(Counter(tokenizer_training_text().split()))
