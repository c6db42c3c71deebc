"""Similarity between embedding vectors, nearest neighbours and the analogy rule.

* ``dot(a, b) = sum_i a_i b_i``;
* ``cos(a, b) = a . b / (|a| |b|)``, in ``[-1, 1]``; for unit vectors it equals the dot
  product, and ``|a - b|^2 = 2 - 2 cos(a, b)``;
* ``dist(a, b) = |a - b| = sqrt(sum_i (a_i - b_i)^2)``.

Cosine similarity is undefined for a zero vector: :func:`cosine_similarity` raises a
ValueError naming the zero vector instead of returning NaN (``torch.nn.functional.
cosine_similarity`` returns 0 there, gensim divides by a zero norm). Each vector is
scaled by its largest absolute entry before its norm is taken, so tiny and huge vectors
do not underflow or overflow; the result is clamped to ``[-1, 1]`` against rounding.

The analogy "``a`` is to ``b`` as ``c`` is to ?" (``man : king :: woman : ?``) is answered
with the 3CosAdd rule of Mikolov et al. and Levy and Goldberg (2014): the word ``x``,
other than ``a``, ``b`` and ``c``, that maximises ``cos(x, b - a + c)``. gensim's
``KeyedVectors.most_similar(positive=[b, c], negative=[a])`` normalises ``a``, ``b`` and
``c`` to unit length first; so does :func:`analogy` unless ``normalize=False``. With unit
inputs, ``argmax cos(x, b - a + c) = argmax cos(x, b) - cos(x, a) + cos(x, c)``.

Ties are broken towards the lower index. This module does not hold approximate nearest
neighbour search, 3CosMul, or word strings (callers map words to ids).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from .onehot import check_table

__all__ = [
    "analogy",
    "analogy_query",
    "analogy_ranking",
    "cosine_similarity",
    "dot_product",
    "euclidean_distance",
    "most_similar",
]


def _check_pair(a: torch.Tensor, b: torch.Tensor) -> None:
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, torch.Tensor) or not x.dtype.is_floating_point:
            raise ValueError(f"{name} must be a floating-point tensor, got {getattr(x, 'dtype', type(x).__name__)}")
        if x.dim() < 1 or x.shape[-1] < 1:
            raise ValueError(f"{name} must have a non-empty last (feature) axis, got shape {tuple(x.shape)}")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"mismatched dimensions: a has {a.shape[-1]} features, b has {b.shape[-1]}")
    try:
        torch.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    except RuntimeError:
        raise ValueError(f"the leading axes of a {tuple(a.shape)} and b {tuple(b.shape)} do not broadcast") from None
    if a.device != b.device:
        raise ValueError(f"a is on {a.device} but b is on {b.device}")


def dot_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a . b`` over the last axis of ``a (..., d)`` and ``b (..., d)`` (leading axes broadcast)."""
    _check_pair(a, b)
    return (a * b).sum(dim=-1)  # (..., d) -> (...)


def euclidean_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``|a - b|`` over the last axis (leading axes broadcast)."""
    _check_pair(a, b)
    return (a - b).square().sum(dim=-1).sqrt()  # (..., d) -> (...)


def _unit(x: torch.Tensor, name: str) -> torch.Tensor:
    """``x / |x|`` along the last axis; a ValueError for a zero or non-finite vector."""
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contains inf or NaN; cosine similarity is undefined")
    scale = x.abs().amax(dim=-1, keepdim=True)  # (..., 1): the largest entry, guards the norm's squares
    if (scale == 0).any():
        where = torch.nonzero(scale[..., 0] == 0)[0].tolist()
        at = f" at index {tuple(where)}" if where else ""
        raise ValueError(f"{name} has a zero vector{at}: cosine similarity is undefined for a zero vector")
    scaled = x / scale  # (..., d), largest entry +-1
    return scaled / scaled.square().sum(dim=-1, keepdim=True).sqrt()


def cosine_similarity(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a . b / (|a| |b|)`` over the last axis, in ``[-1, 1]``; a ValueError for a zero vector."""
    _check_pair(a, b)
    return (_unit(a, "a") * _unit(b, "b")).sum(dim=-1).clamp(-1.0, 1.0)  # (..., d) -> (...)


def most_similar(query: torch.Tensor, table: torch.Tensor, k: int = 10,
                 exclude: Iterable[int] = ()) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` rows of ``table (V, d)`` most cosine-similar to ``query (d,)``, best first.

    Returns ``(indices (k,), scores (k,))``. Rows whose index is in ``exclude`` are never
    returned (pass the query word's own id to skip it). Ties go to the lower index. A zero
    query or a zero row of the table raises a ValueError (its cosine is undefined).
    """
    check_table(table)
    if not isinstance(query, torch.Tensor) or query.dim() != 1:
        raise ValueError(f"query must be a 1-D (dim,) tensor, got {getattr(query, 'shape', type(query).__name__)}")
    vocab_size = table.shape[0]
    excluded = sorted({int(i) for i in exclude})
    if excluded and (excluded[0] < 0 or excluded[-1] >= vocab_size):
        raise ValueError(f"exclude holds ids outside [0, {vocab_size}): {excluded}")
    remaining = vocab_size - len(excluded)
    if not 1 <= k <= remaining:
        raise ValueError(f"k must lie in [1, {remaining}] ({vocab_size} rows, {len(excluded)} excluded), got {k}")
    if query.shape[0] != table.shape[1] or not query.dtype.is_floating_point:
        raise ValueError(f"mismatched dimensions: query {tuple(query.shape)} {query.dtype} against a table "
                         f"{tuple(table.shape)}")
    if query.device != table.device:
        raise ValueError(f"query is on {query.device} but the table is on {table.device}")
    scores = (_unit(table, "the table") @ _unit(query, "query")).clamp(-1.0, 1.0)  # (V, d) @ (d,) -> (V,)
    keep = torch.ones(vocab_size, dtype=torch.bool, device=table.device)
    keep[excluded] = False
    candidates = torch.nonzero(keep)[:, 0]  # (V - excluded,), ascending
    order = torch.sort(scores[candidates], descending=True, stable=True).indices[:k]  # stable: ties keep index order
    return candidates[order], scores[candidates][order]


def analogy_query(a: int, b: int, c: int, table: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    """The 3CosAdd query vector ``b - a + c`` (of unit rows when ``normalize``), shape ``(d,)``."""
    check_table(table)
    vocab_size = table.shape[0]
    for name, i in (("a", a), ("b", b), ("c", c)):
        if not 0 <= int(i) < vocab_size:
            raise ValueError(f"{name}={i} is not a row of the table (vocab_size {vocab_size})")
    rows = table[[int(a), int(b), int(c)]]  # (3, d)
    if normalize:
        rows = _unit(rows, "the rows a, b, c")
    return rows[1] - rows[0] + rows[2]


def analogy_ranking(a: int, b: int, c: int, table: torch.Tensor, k: int = 1,
                    normalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` best answers to ``a : b :: c : ?`` by ``cos(x, b - a + c)``, ``a``, ``b``, ``c`` excluded."""
    query = analogy_query(a, b, c, table, normalize)
    if query.abs().amax() == 0:
        raise ValueError(f"the analogy query b - a + c is the zero vector (a={a}, b={b}, c={c}); no direction to rank")
    return most_similar(query, table, k, exclude=(a, b, c))


def analogy(a: int, b: int, c: int, table: torch.Tensor, normalize: bool = True) -> int:
    """``argmax_x cos(x, b - a + c)`` over the rows other than ``a``, ``b``, ``c`` (3CosAdd)."""
    return int(analogy_ranking(a, b, c, table, 1, normalize)[0][0])
