"""Which operations a composite operation is usually built from, so a failure can be traced to its cause.

An encoder layer is attention, LayerNorm and a feed-forward network; a wrong
``layer_norm`` therefore shows in every property of ``encoder_layer``, ``decoder_layer``
and ``encoder_stack`` too, and those failures (large inputs, long counterexamples) say
less about the cause than the one of ``layer_norm`` itself. :data:`PARTS` names, for each
composite operation, the protocol operations an implementation typically calls inside it;
:func:`rank` orders operations so that parts come before what is built from them.

These are *likely* dependencies, not facts about a given implementation: an encoder layer
may use a LayerNorm of its own. The summary uses them to order failure blocks and to fold
a composite's failures under a failing part's block, naming them ("which may call the failing
``layer_norm``"); nothing here changes a row's verdict, and the report keeps every row.
"""

from __future__ import annotations

import functools

__all__ = ["PARTS", "parts_of", "rank"]

#: Composite operation -> the operations it is usually built from (operations not listed have no parts).
PARTS: dict[str, tuple[str, ...]] = {
    # attention
    "multihead_attention": ("attention",),
    # positions
    "alibi_attention": ("alibi_bias", "attention"),
    "input_embedding": ("learned_positions", "embedding_lookup"),
    # blocks
    "encoder_layer": ("multihead_attention", "layer_norm", "feed_forward"),
    "decoder_layer": ("multihead_attention", "layer_norm", "feed_forward"),
    "encoder_stack": ("encoder_layer", "layer_norm"),
    # tokenization
    "tokenize_text": ("bpe_train", "bpe_encode", "byte_bpe_train", "byte_bpe_encode", "unigram_segment", "wordpiece"),
    "detokenize_text": ("byte_bpe_decode",),
    "unigram_prune": ("unigram_em_step", "unigram_segment"),
    # embeddings
    "fasttext_vector": ("char_ngrams",),
    "glove_loss": ("glove_weight",),
    "train_skipgram": ("skipgram_pairs", "noise_distribution", "negative_sampling_loss"),
    "train_glove": ("glove_cooccurrence", "glove_weight", "glove_loss"),
    "train_fasttext": ("char_ngrams", "fasttext_vector", "skipgram_pairs", "noise_distribution",
                       "negative_sampling_loss"),
}


@functools.lru_cache(maxsize=None)
def parts_of(operation: str) -> frozenset[str]:
    """Every operation ``operation`` is usually built from, directly or through its parts."""
    found: set[str] = set()
    for part in PARTS.get(operation, ()):
        found |= {part, *parts_of(part)}
    return frozenset(found)


@functools.lru_cache(maxsize=None)
def rank(operation: str) -> int:
    """0 for an operation built from no other; else one more than its highest part (``layer_norm`` 0,
    ``multihead_attention`` 1, ``encoder_layer`` 2, ``encoder_stack`` 3)."""
    return 1 + max(map(rank, PARTS[operation])) if PARTS.get(operation) else 0
