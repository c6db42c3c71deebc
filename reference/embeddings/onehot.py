"""One-hot vectors and the embedding lookup.

A vocabulary of ``V`` words gives each word an id in ``[0, V)``; its one-hot vector has a
1 at that id and 0 elsewhere. One-hot vectors are pairwise orthogonal and every two of
them are ``sqrt(2)`` apart: they carry no notion of similarity. An embedding table
``E`` of shape ``(V, d)`` maps the id ``i`` to its row ``E[i]``, and that row lookup is
exactly the product ``one_hot(i) @ E``: the lookup is a linear map, computed without
the ``V``-wide sparse vector.

This module does not hold vocabularies (see :func:`.word2vec.build_vocab`), learned
tables or padding conventions.
"""

from __future__ import annotations

import torch

__all__ = [
    "check_ids", "check_table", "initial_table", "lookup", "lookup_gradient", "lookup_via_one_hot", "one_hot", "tied_logits",
]


def check_ids(ids: torch.Tensor, vocab_size: int) -> None:
    """Raise a ValueError unless ``ids`` is an integer tensor with every entry in ``[0, vocab_size)``."""
    if not isinstance(ids, torch.Tensor):
        raise ValueError(f"ids must be a tensor, got {type(ids).__name__}")
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise ValueError(f"ids must be an integer tensor, got dtype {ids.dtype}")
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be at least 1, got {vocab_size}")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(f"ids must lie in [0, {vocab_size}), got values from {int(ids.min())} to {int(ids.max())}")


def check_table(table: torch.Tensor) -> None:
    """Raise a ValueError unless ``table`` is a floating ``(V, d)`` matrix with ``V, d >= 1``."""
    if not isinstance(table, torch.Tensor) or table.dim() != 2:
        shape = tuple(table.shape) if isinstance(table, torch.Tensor) else type(table).__name__
        raise ValueError(f"the embedding table must be a 2-D (vocab_size, dim) tensor, got {shape}")
    if table.shape[0] < 1 or table.shape[1] < 1:
        raise ValueError(f"the embedding table must have at least one row and one column, got {tuple(table.shape)}")
    if not table.dtype.is_floating_point:
        raise ValueError(f"the embedding table must be floating point, got dtype {table.dtype}")


def one_hot(ids: torch.Tensor, vocab_size: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """One-hot vectors ``(..., vocab_size)`` for integer ``ids (...)``, on ``ids``' device."""
    check_ids(ids, vocab_size)
    columns = torch.arange(vocab_size, device=ids.device)  # (V,)
    return (ids[..., None] == columns).to(dtype)  # (..., 1) == (V,) -> (..., V)


def lookup(ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """The rows of ``table (V, d)`` at ``ids (...)``: a ``(..., d)`` tensor (``nn.Embedding``'s forward)."""
    check_table(table)
    check_ids(ids, table.shape[0])
    if ids.device != table.device:
        raise ValueError(f"ids are on {ids.device} but the table is on {table.device}")
    return table[ids]  # (...) -> (..., d)


def lookup_via_one_hot(ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """The same rows as :func:`lookup`, computed as ``one_hot(ids) @ table``: ``(..., V) @ (V, d) -> (..., d)``."""
    check_table(table)
    return one_hot(ids, table.shape[0], dtype=table.dtype).to(table.device) @ table


def lookup_gradient(ids: torch.Tensor, table: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
    """``d/d table`` of ``sum(table[ids] * upstream)``: ``upstream (..., d)`` added into the rows ``ids (...)``.

    Rows never looked up get zero; an id that occurs several times gets the sum of its
    upstream rows. Returns ``(V, d)`` in the table's dtype.
    """
    check_table(table)
    check_ids(ids, table.shape[0])
    if upstream.shape != (*ids.shape, table.shape[1]):
        raise ValueError(f"upstream must have shape {(*ids.shape, table.shape[1])}, got {tuple(upstream.shape)}")
    gradient = torch.zeros_like(table)
    flat = upstream.reshape(-1, table.shape[1]).to(table.dtype)  # (..., d) -> (N, d)
    return gradient.index_add_(0, ids.reshape(-1), flat)  # (N,) ids


def initial_table(vocab_size: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A ``(vocab_size, dim)`` table of independent standard normal entries (``nn.Embedding``'s ``normal_(0, 1)``)."""
    if vocab_size < 1 or dim < 1:
        raise ValueError(f"a table needs at least one row and one column, got ({vocab_size}, {dim})")
    generator = torch.Generator().manual_seed(int(seed))
    return torch.randn(vocab_size, dim, generator=generator, dtype=torch.float64).to(dtype)


def tied_logits(hidden: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """The scores of an output layer whose weight is the embedding ``table``: ``(B, d) @ (d, V) -> (B, V)``."""
    check_table(table)
    if hidden.dim() != 2 or hidden.shape[1] != table.shape[1]:
        raise ValueError(f"hidden must be (batch, {table.shape[1]}), got {tuple(hidden.shape)}")
    return hidden @ table.T
