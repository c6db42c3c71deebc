"""Strategies of the attention family: attention and multi-head inputs, boolean masks.

Built on the shared :mod:`specformer.properties.strategies` (re-exported here, so a
property module imports one ``strategies``). Everything is float64 on the CPU; masks use
the protocol's convention, True = may attend. Every case strategy draws about one example
in four at a realistic size (t and d up to 64, batch 3 or 4, 5 to 8 heads).
"""

from __future__ import annotations

import functools

from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from specformer.properties.strategies import (CHOSEN_MAX_ENTRIES, REALISTIC, BOUND, bounded_floats, dimension,
                                              permutations_of, realistic, seeds, sizes, tensors)
from specformer.reference.attention.multihead import MultiHeadParams

__all__ = ["BOUND", "REALISTIC", "bounded_floats", "dimension", "permutations_of", "realistic", "seeds", "sizes",
           "tensors",
           "AttentionCase", "masks", "projection_bound",
           "attention_cases", "MultiHeadCase", "multihead_params", "multihead_cases"]


def projection_bound(d_in: int) -> float:
    """Entries of a projection from width ``d_in``: ``min(1, 2 / sqrt(d_in))``, so projected inputs stay of size
    about 1 at realistic widths (scores of size ~ sqrt(d_k), as with initialised models, not ~ d)."""
    return min(1.0, 2.0 / d_in**0.5)


@dataclass(frozen=True)
class AttentionCase:
    """Inputs of one attention call: ``q (B,t_q,d_k)``, ``k (B,t_k,d_k)``, ``v (B,t_k,d_v)``, mask."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    mask: torch.Tensor | None = None

    @property
    def shape(self) -> tuple[int, int, int, int, int]:
        """``(B, t_q, t_k, d_k, d_v)``."""
        return (self.q.shape[0], self.q.shape[1], self.k.shape[1], self.q.shape[2], self.v.shape[2])


_DENSITIES = st.sampled_from([0.1, 0.5, 0.9])


@functools.lru_cache(maxsize=1024)
def _bool_arrays(shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    return arrays(np.bool_, shape)


@functools.lru_cache(maxsize=1024)
def _index_arrays(shape: tuple[int, ...], n: int) -> st.SearchStrategy[np.ndarray]:
    """Arrays of ``shape`` with entries in ``[0, n)``."""
    return arrays(np.int64, shape, elements=st.integers(0, n - 1))


@st.composite
def masks(draw: st.DrawFn, batch: int, t_q: int, t_k: int, *, empty_rows: bool = False) -> torch.Tensor:
    """``(B, t_q, t_k)`` boolean masks, True = may attend; every row keeps a key unless ``empty_rows``.

    Large masks (realistic sizes) come from a seeded generator, with a drawn density.
    """
    if batch * t_q * t_k > CHOSEN_MAX_ENTRIES:
        generator = torch.Generator().manual_seed(draw(seeds()))
        density = draw(_DENSITIES)
        mask = torch.rand(batch, t_q, t_k, generator=generator) < density
        keep = torch.randint(0, t_k, (batch, t_q), generator=generator)
    else:
        mask = torch.from_numpy(draw(_bool_arrays((batch, t_q, t_k))))
        keep = torch.from_numpy(draw(_index_arrays((batch, t_q), t_k)))
    if not empty_rows:
        mask.scatter_(-1, keep[..., None], True)  # one allowed key per row
    return mask


@st.composite
def attention_cases(
    draw: st.DrawFn,
    *,
    max_batch: int = 2,
    max_t: int = 5,
    max_d: int = 6,
    self_attention: bool = False,
    masked: bool | None = False,
    bound: float = BOUND,
) -> AttentionCase:
    """Queries, keys and values; ``self_attention`` gives ``t_q == t_k``; ``masked=None`` draws either.

    About one example in four is realistic: batch 3-4, lengths and widths 7-64.
    """
    large = draw(realistic())
    b = draw(sizes(large, 1, max_batch, "batch"))
    t_k = draw(sizes(large, 1, max_t, "t"))
    t_q = t_k if self_attention else draw(sizes(large, 1, max_t, "t"))
    d_k, d_v = draw(sizes(large, 1, max_d, "d")), draw(sizes(large, 1, max_d, "d"))
    q = draw(tensors((b, t_q, d_k), bound))
    k = draw(tensors((b, t_k, d_k), bound))
    v = draw(tensors((b, t_k, d_v), bound))
    use_mask = draw(st.booleans()) if masked is None else masked
    mask = draw(masks(b, t_q, t_k)) if use_mask else None
    return AttentionCase(q, k, v, mask)


@dataclass(frozen=True)
class MultiHeadCase:
    """Inputs of one multi-head call: ``query (B,t_q,d_model)``, ``source (B,t_k,d_model)``, weights."""

    query: torch.Tensor
    source: torch.Tensor
    params: MultiHeadParams


@st.composite
def multihead_params(
    draw: st.DrawFn, *, d_model: int | None = None, h: int | None = None, d_v: int | None = None,
    max_h: int = 4, max_head_width: int = 4, large: bool | None = None,
) -> MultiHeadParams:
    """Projection weights; by default ``d_k = d_v = d_model / h`` (what PyTorch's module needs).

    A realistic draw (one in four, unless ``h`` and ``d_model`` are given) has 5 to 8 heads
    and ``d_model`` up to 64.
    """
    if large is None:
        large = draw(realistic()) if h is None or d_model is None else False
    h = h if h is not None else draw(sizes(large, 1, max_h, "h"))
    if d_model is None:
        d_model = h * draw(dimension(5, max(5, REALISTIC["d"][1] // h)) if large else dimension(1, max_head_width))
    d_k = d_model // h
    d_v = d_k if d_v is None else d_v
    w = lambda rows, cols: draw(tensors((rows, cols), projection_bound(rows)))  # noqa: E731
    return MultiHeadParams(w(d_model, h * d_k), w(d_model, h * d_k), w(d_model, h * d_v), w(h * d_v, d_model), h)


@st.composite
def multihead_cases(draw: st.DrawFn, *, max_batch: int = 2, max_t: int = 5, self_attention: bool = False,
                    h: int | None = None) -> MultiHeadCase:
    """Multi-head inputs; ``self_attention`` makes the source the query sequence itself.

    About one example in four is realistic: 5 to 8 heads, batch 3-4, lengths 7-64.
    """
    large = draw(realistic())
    params = draw(multihead_params(h=h if h is not None else draw(sizes(large, 1, 4, "h")), large=large))
    b, t_q = draw(sizes(large, 1, max_batch, "batch")), draw(sizes(large, 1, max_t, "t"))
    query = draw(tensors((b, t_q, params.d_model)))
    source = query if self_attention else draw(tensors((b, draw(sizes(large, 1, max_t, "t")), params.d_model)))
    return MultiHeadCase(query, source, params)
