"""The parameter count of a transformer built from a :class:`~specformer.protocol.blocks.ModelConfig`.

The model is laid out as the tensors the reference's layers take (the keys of
:data:`~specformer.protocol.blocks.ENCODER_KEYS` and :data:`~specformer.protocol.blocks.DECODER_KEYS`
with their shapes), plus the embedding tables, the final and embedding norms and the
output layer; the count is the sum of their sizes, each shared tensor once. Nothing is
allocated: shapes only. This module does not build or run the model.
"""

from __future__ import annotations

import math

from specformer.protocol.blocks import DECODER_KEYS, ENCODER_KEYS, POSITION_KINDS, ModelConfig

__all__ = ["count_parameters", "parameter_shapes"]


def _layer_shapes(keys: tuple[str, ...], d_model: int, d_ff: int) -> list[tuple[int, ...]]:
    """The shape of each weight of a layer, as :mod:`.encoder_layer` and :mod:`.decoder_layer` take them."""
    shapes: list[tuple[int, ...]] = []
    for key in keys:
        if key == "w_1":
            shapes.append((d_model, d_ff))
        elif key == "w_2":
            shapes.append((d_ff, d_model))
        elif key.startswith("w"):
            shapes.append((d_model, d_model))
        elif key == "b_1":
            shapes.append((d_ff,))
        else:  # the other biases, gamma and beta
            shapes.append((d_model,))
    return shapes


def parameter_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every trainable tensor of the model, by name, with its shape (shared tensors appear once)."""
    c = config
    if c.positions not in POSITION_KINDS:
        raise ValueError(f"positions must be one of {POSITION_KINDS}, got {c.positions!r}")
    for name in ("vocab_size", "d_model", "heads", "d_ff"):
        if getattr(c, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {getattr(c, name)}")
    if c.d_model % c.heads:
        raise ValueError(f"d_model = {c.d_model} is not a multiple of heads = {c.heads}")
    shapes: dict[str, tuple[int, ...]] = {"embedding": (c.vocab_size, c.d_model)}
    if c.encoder_layers and c.decoder_layers and not c.shared_embeddings:
        shapes["target_embedding"] = (c.vocab_size, c.d_model)
    if c.positions == "learned":
        shapes["positions"] = (c.max_len, c.d_model)
    if c.token_types:
        shapes["token_types"] = (c.token_types, c.d_model)
    if c.embedding_norm:
        shapes["embedding_gamma"], shapes["embedding_beta"] = (c.d_model,), (c.d_model,)
    for stack, count, keys in (("encoder", c.encoder_layers, ENCODER_KEYS), ("decoder", c.decoder_layers, DECODER_KEYS)):
        for n in range(count):
            for key, shape in zip(keys, _layer_shapes(keys, c.d_model, c.d_ff), strict=True):
                shapes[f"{stack}.{n}.{key}"] = shape
        if count and c.final_norm:
            shapes[f"{stack}.gamma_f"], shapes[f"{stack}.beta_f"] = (c.d_model,), (c.d_model,)
    if c.output_layer and not c.tied_output:
        shapes["w_out"] = (c.d_model, c.vocab_size)
    return shapes


def count_parameters(config: ModelConfig) -> int:
    """The number of trainable scalars: the sum of :func:`parameter_shapes`' sizes."""
    return sum(math.prod(shape) for shape in parameter_shapes(config).values())
