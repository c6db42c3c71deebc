"""A small contextual encoder: a static word table, sinusoidal positions and two encoder layers.

The reference's ``token_vectors(text, layer)``: the text is split into lower-cased words
(:func:`specformer.reference.tokenization.words.word_tokenize`); each word gets a static
vector of width :data:`D_MODEL` drawn from a generator seeded by the word itself (a
CRC-32 of its UTF-8 bytes), so every word, seen or not, has one fixed vector; layer 0 is
that static vector plus the sinusoidal encoding of its position; layers 1 and 2 are
post-norm encoder layers (:func:`specformer.reference.blocks.encoder_layer.encoder_layer`)
with fixed seeded weights, bidirectional (no causal mask). Everything is float64 on the CPU.

The weights are random, not trained: the model shows the mechanics the documents
describe (a static vector at the bottom, vectors that depend on the whole text above
it), not word senses. Texts of more than :data:`MAX_POSITIONS` words raise ``ValueError``.
This module does not tokenize into subwords, add special tokens or pool sentences.
"""

from __future__ import annotations

import math
import zlib
from functools import lru_cache

import torch

from specformer.protocol.blocks import ENCODER_KEYS
from specformer.reference.blocks.encoder_layer import encoder_layer
from specformer.reference.positions.sinusoidal import sinusoidal_encoding
from specformer.reference.tokenization.words import word_tokenize

__all__ = ["D_MODEL", "HEADS", "LAYERS", "MAX_POSITIONS", "static_vector", "token_vectors"]

#: Width of every vector.
D_MODEL = 32
#: Attention heads per layer (width 8 each).
HEADS = 4
#: Encoder layers above the static vectors.
LAYERS = 2
#: The longest text, in words, the model takes.
MAX_POSITIONS = 512
F64 = torch.float64


def static_vector(word: str) -> torch.Tensor:
    """The word's fixed vector ``(D_MODEL,)``, entries ``N(0, 1)``, seeded by the word's CRC-32."""
    gen = torch.Generator().manual_seed(zlib.crc32(word.encode("utf-8", "surrogatepass")))
    return torch.randn(D_MODEL, generator=gen, dtype=F64)


@lru_cache(maxsize=1)
def layer_weights() -> tuple[dict[str, torch.Tensor], ...]:
    """The encoder layers' weights: matrices ``N(0, 1/fan_in)``, biases zero, ``gamma = 1``, ``beta = 0``."""
    gen = torch.Generator().manual_seed(2018)
    layers = []
    for _ in range(LAYERS):
        weights = {}
        for key in ENCODER_KEYS:
            if key.startswith("w"):
                rows, cols = {"w_1": (D_MODEL, 4 * D_MODEL), "w_2": (4 * D_MODEL, D_MODEL)}.get(key, (D_MODEL, D_MODEL))
                weights[key] = torch.randn(rows, cols, generator=gen, dtype=F64) / math.sqrt(rows)
            else:
                width = 4 * D_MODEL if key == "b_1" else D_MODEL
                weights[key] = (torch.ones if key.startswith("gamma") else torch.zeros)(width, dtype=F64)
        layers.append(weights)
    return tuple(layers)


def token_vectors(text: str, layer: int = -1) -> tuple[list[str], torch.Tensor]:
    """The words of ``text`` and their vectors ``(t, D_MODEL)`` after ``layer`` (0: static + position;
    ``-1`` or :data:`LAYERS`: the last layer)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if not isinstance(layer, int) or not -(LAYERS + 1) <= layer <= LAYERS:
        raise ValueError(f"layer must be an integer from {-(LAYERS + 1)} to {LAYERS}, got {layer!r}")
    tokens = [w.lower() for w in word_tokenize(text)]
    if not tokens:
        raise ValueError("the text has no words: nothing to embed")
    if len(tokens) > MAX_POSITIONS:
        raise ValueError(f"the text has {len(tokens)} words; the model takes at most {MAX_POSITIONS}")
    positions = torch.arange(len(tokens))
    x = torch.stack([static_vector(w) for w in tokens]) + sinusoidal_encoding(positions, D_MODEL)  # (t, d)
    x = x.unsqueeze(0)  # (t, d) -> (1, t, d): one text, batch first
    for weights in layer_weights()[: layer % (LAYERS + 1)]:
        x = encoder_layer(x, weights, heads=HEADS, norm_first=False)
    return tokens, x.squeeze(0)  # (1, t, d) -> (t, d)
