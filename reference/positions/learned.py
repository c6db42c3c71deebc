"""Learned position tables and the input of the first layer (token embedding plus positions).

A learned position table ``P (n_max, d_model)`` is a trainable matrix with one row per
position ``0 .. n_max - 1`` (BERT's and GPT-2's ``position_embeddings``/``wpe``): a position
is looked up, never computed, so a position ``>= n_max`` has no row and raises, and so does a
negative one (never Python's wrap-around, where ``-1`` is the last row).

The input of the first layer (000, "Adding Positional Information"; 002's
``TransformerEmbedding``) is the sum of the token's embedding and its position's row::

    x[b, i] = E[tokens[b, i]] * s + P[i],     s = sqrt(d_model) or 1

``s = sqrt(d_model)`` is the original paper's convention (section 3.4); the documents and
BERT and GPT-2 add without scaling. ``P`` may be a learned table or the rows of a fixed
encoding (:mod:`.sinusoidal`). This module does not train the tables, drop out, or add
segment (token type) embeddings.
"""

from __future__ import annotations

import math

import torch

__all__ = ["input_embedding", "learned_positions"]


def learned_positions(positions: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Rows ``table[positions]`` ``(t, d)`` of ``table (n_max, d)``; an ``IndexError`` for a position outside ``[0, n_max)``."""
    if positions.dim() != 1 or positions.dtype != torch.int64:
        raise ValueError(f"positions must be int64 (t,), got {positions.dtype} {tuple(positions.shape)}")
    if table.dim() != 2:
        raise ValueError(f"table must be (n_max, d), got shape {tuple(table.shape)}")
    n_max = table.shape[0]
    if positions.numel() and (int(positions.min()) < 0 or int(positions.max()) >= n_max):
        raise IndexError(f"positions must lie in [0, {n_max}) for a table of {n_max} rows, got "
                         f"{int(positions.min())}..{int(positions.max())}")
    return table[positions]  # (n_max, d)[(t,)] -> (t, d)


def input_embedding(tokens: torch.Tensor, token_table: torch.Tensor, position_table: torch.Tensor, *,
                    scale: bool = False) -> torch.Tensor:
    """``E[tokens] * s + P[0 .. t - 1]``: ``tokens (B, t)``, ``E (V, d_model)``, ``P (n_max, d_model)``; ``(B, t, d_model)``."""
    if tokens.dim() != 2 or tokens.dtype != torch.int64:
        raise ValueError(f"tokens must be int64 (B, t), got {tokens.dtype} {tuple(tokens.shape)}")
    vocabulary, d_model = token_table.shape
    if position_table.dim() != 2 or position_table.shape[1] != d_model:
        raise ValueError(f"position_table must be (n_max, {d_model}), got {tuple(position_table.shape)}")
    t = tokens.shape[1]
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocabulary):
        raise IndexError(f"token ids must lie in [0, {vocabulary})")
    positions = torch.arange(t, device=tokens.device)  # (t,)
    rows = learned_positions(positions, position_table)  # (t, d_model)
    x = token_table[tokens]  # (B, t) -> (B, t, d_model)
    if scale:
        x = x * math.sqrt(d_model)
    return x + rows[None]  # (B, t, d_model) + (1, t, d_model)
