"""Hypothesis strategies shared by every family: bounded floats, tensors, permutations, seeds.

Everything is drawn as **float64 on the CPU**; the context moves it to the device and
dtype under test. Values are bounded (default ``[-3, 3]``) and never NaN or infinite:
properties about NaN/inf draw them explicitly. Most shapes are small so that hundreds of
examples run in seconds; shrinking goes towards batch 1, short sequences, narrow
features and zeros. About one example in four is drawn at a size models use
(:func:`realistic` and :func:`sizes`: sequence length and width 7 to 64, batch 3 or 4, 5 to
8 heads), so that a bug that appears only beyond the small ranges is found too.

**The shape budget.** Code that is jitted or compiled (JAX, ``torch.compile``) compiles
once per tensor shape, so under a budgeted profile (``ci``, ``quick``) a row's sizes come
from at most :data:`SHAPE_PLANS` plans: each example draws one plan, and every dimension
drawn through :func:`dimension` (and :func:`sizes`, :func:`realistic`) in that example takes
the plan's value for it: the smallest sizes (plan 0), the largest small ones (plan 1), mixed
small sizes that differ from one dimension to the next (plan 2), and sizes models use
(plan 3). Values are still drawn freely. ``thorough`` draws every size freely
(:func:`shape_budget`, set per row by the runner from the profile).

Family strategies (attention cases, ...) live in each family's own ``strategies`` module,
which re-exports these. This module does not draw tokenizer text or corpora yet.
"""

from __future__ import annotations

import functools
import itertools
import math
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

BOUND = 3.0

#: Realistic ranges, per kind of dimension: what :func:`sizes` draws for a realistic example.
REALISTIC: dict[str, tuple[int, int]] = {"batch": (3, 4), "t": (7, 64), "d": (7, 64), "h": (5, 8)}
#: Tensors with more entries than this are drawn from the seeded generator only (Hypothesis
#: choosing thousands of entries one by one is slow and overruns its buffer).
CHOSEN_MAX_ENTRIES = 128


#: How many size plans a row of a budgeted profile draws its shapes from (the module doc).
SHAPE_PLANS = 4
_BUDGET = [False]


@contextmanager
def shape_budget(on: bool) -> Iterator[None]:
    """Inside, examples take their sizes from :data:`SHAPE_PLANS` plans (``on``) or draw them freely."""
    saved = _BUDGET[0]
    _BUDGET[0] = on
    try:
        yield
    finally:
        _BUDGET[0] = saved


def budgeted() -> bool:
    """Whether sizes come from the plans now (:func:`shape_budget`)."""
    return _BUDGET[0]


@functools.lru_cache(maxsize=None)
def _plan() -> st.SearchStrategy[int]:
    return st.shared(st.integers(0, SHAPE_PLANS - 1), key="specformer.shape-plan")


@functools.lru_cache(maxsize=None)
def _counter() -> st.SearchStrategy[Iterator[int]]:
    return st.shared(st.builds(itertools.count), key="specformer.shape-counter")


def planned(plan: int, index: int, low: int, high: int) -> int:
    """The size of plan ``plan`` for the ``index``-th dimension an example draws, in ``[low, high]``."""
    span = high - low + 1
    if plan == 0:
        return low
    if plan == 1:
        return high
    return low + (7 * index + 3 * plan + 1) % span


@st.composite
def _dimension(draw: st.DrawFn, low: int, high: int) -> int:
    if low >= high or not budgeted():
        return draw(st.integers(low, high))
    return planned(draw(_plan()), next(draw(_counter())), low, high)


@functools.lru_cache(maxsize=4096)
def dimension(low: int, high: int) -> st.SearchStrategy[int]:
    """One size in ``[low, high]``: drawn freely, or, under the shape budget, the example's plan's.

    One strategy object per range, made once: Hypothesis validates every new strategy it draws
    from, and examples draw thousands of sizes (the same holds for :func:`tensors`)."""
    return _dimension(int(low), int(high))


@functools.lru_cache(maxsize=None)
def realistic() -> st.SearchStrategy[bool]:
    """Whether one example is drawn at a size models use (see :func:`_realistic`)."""
    return _realistic()


@st.composite
def _realistic(draw: st.DrawFn) -> bool:
    """Whether one example is drawn at a size models use: true for about one draw in four
    (under the shape budget: the last plan).

    Drawn (not an ``@example``), so every profile and seed meets realistic sizes; it
    shrinks to false, towards small counterexamples.
    """
    if budgeted():
        return draw(_plan()) == SHAPE_PLANS - 1
    return draw(st.integers(0, 3)) == 3


def sizes(large: bool, low: int, high: int, kind: str) -> st.SearchStrategy[int]:
    """One dimension: in ``[low, high]`` for a small example, in the ``REALISTIC[kind]`` range for a large one.

    ``kind`` is ``"batch"``, ``"t"`` (sequence length), ``"d"`` (width) or ``"h"`` (heads).
    A realistic draw never goes below ``low``.
    """
    if not large:
        return dimension(low, high)
    lo, hi = REALISTIC[kind]
    return dimension(max(lo, low), max(hi, low))


def bounded_floats(bound: float = BOUND) -> st.SearchStrategy[float]:
    """Finite floats in ``[-bound, bound]``, no subnormals."""
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def _seeded(shape: tuple[int, ...], bound: float, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    tensor = (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    tensor._specformer_recipe = (tuple(shape), bound, seed)  # a counterexample shows it as this expression
    return tensor


def tensors(shape: tuple[int, ...], bound: float = BOUND) -> st.SearchStrategy[torch.Tensor]:
    """float64 CPU tensors of ``shape`` with entries in ``[-bound, bound]``.

    Five draws in six take every entry from a seeded uniform generator (fast, dense,
    no two entries alike); one in six lets Hypothesis choose every entry (slower, but
    it reaches zeros, repeated values and the bounds, and shrinks entry by entry). A
    failing example shrinks towards the second kind, so counterexamples read simply.
    Shapes of more than ``CHOSEN_MAX_ENTRIES`` entries (realistic sizes) are always seeded.
    One strategy object per shape and bound, made once.
    """
    return _tensors(tuple(int(n) for n in shape), float(bound))


@functools.lru_cache(maxsize=4096)
def _tensors(shape: tuple[int, ...], bound: float) -> st.SearchStrategy[torch.Tensor]:
    seeded = st.integers(0, 2**32 - 1).map(lambda seed: _seeded(shape, bound, seed))
    if math.prod(shape) > CHOSEN_MAX_ENTRIES:
        return seeded
    chosen = arrays(np.float64, shape, elements=bounded_floats(bound)).map(torch.from_numpy)
    return st.one_of(chosen, *[seeded] * 5)


@st.composite
def permutations_of(draw: st.DrawFn, n: int) -> torch.Tensor:
    """A permutation of ``range(n)`` as a long tensor."""
    return torch.tensor(draw(st.permutations(list(range(n)))), dtype=torch.long)


def seeds() -> st.SearchStrategy[int]:
    """Seeds for the sample generators of statistical properties."""
    return st.integers(0, 2**32 - 1)
