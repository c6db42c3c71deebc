"""Strategies of the positions family: positions, widths and sequences to encode.

Built on the shared :mod:`specformer.properties.strategies` (re-exported here, so a
property module imports one ``strategies``). Everything is float64 on the CPU; positions
are ``int64``.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from specformer.protocol.positions import MAX_LENGTHS
from specformer.properties.strategies import (BOUND, bounded_floats, budgeted, dimension, permutations_of, realistic,
                                              seeds, tensors)

__all__ = ["BOUND", "bounded_floats", "dimension", "permutations_of", "seeds", "tensors", "positions", "even_widths", "within",
           "sinusoidal_base", "rope_base", "table_length", "below", "shift_below", "dimension_in", "large_sizes"]


@st.composite
def positions(draw: st.DrawFn, *, max_t: int = 8, max_position: int = 2048, distinct: bool = False,
              min_t: int = 1) -> torch.Tensor:
    """A 1-D ``int64`` tensor of ``min_t..max_t`` positions in ``[0, max_position]`` (distinct if asked)."""
    n = draw(dimension(min_t, max_t))  # the shape budget's length, or any
    values = draw(st.lists(st.integers(0, max_position), min_size=n, max_size=n, unique=distinct))
    return torch.tensor(values, dtype=torch.int64)


def even_widths(max_d: int = 16) -> st.SearchStrategy[int]:
    """Even feature widths ``2..max_d`` (sinusoidal and rotary encodings pair their features)."""
    return dimension(1, max_d // 2).map(lambda n: 2 * n)


@st.composite
def dimension_in(draw: st.DrawFn, *ranges: tuple[int, int], other: int | None = None) -> int:
    """One size from one of ``ranges`` (``(low, high)`` pairs; a range listed twice is drawn twice as often), other
    than ``other`` when given: drawn freely as ``st.one_of`` of them, or, under the shape budget, the example's
    plan's size (:func:`dimension`) in the last range for the realistic plan and in the first for the others.

    ``other`` is skipped, not filtered out (a plan gives two dimensions of one range the same size): the size is
    drawn in ``[low, high - 1]`` and raised by one from ``other`` on.
    """
    chosen = ranges if not budgeted() else (ranges[-1] if draw(realistic()) else ranges[0],)
    less = 0 if other is None else 1
    options = [dimension(low, high - less) for low, high in chosen]
    n = draw(options[0] if len(options) == 1 else st.one_of(options))
    return n if other is None or n < other else n + 1


@st.composite
def large_sizes(draw: st.DrawFn, one_in: int) -> bool:
    """Whether an example is drawn at the sizes models use: one draw in ``one_in`` (shrinking to false), or,
    under the shape budget, the realistic plan (:func:`realistic`)."""
    if budgeted():
        return draw(realistic())
    return draw(st.integers(1, one_in), label="size class") == one_in


def within(ctx: object, convention: str, drawn: object, values: tuple) -> object:
    """``drawn`` if the implementation declares it follows that value of ``convention``, else the first of
    ``values`` it declares (the row ends not applicable at once when it declares none of them).

    Hypothesis draws every value; an implementation is only ever asked for what it declares.
    """
    allowed = ctx.choices(convention, values)  # type: ignore[attr-defined]
    return drawn if drawn in allowed else allowed[0]


#: The paper's base of the sinusoidal encoding.
PAPER_BASE = 10000.0


def sinusoidal_base(ctx: object, base: float) -> float:
    """``base`` if the implementation takes any base (``sinusoidal_base``, undeclared: any), else the paper's
    10000: an implementation that computes only the paper's base is never passed another."""
    return base if base == PAPER_BASE or ctx.supports("sinusoidal_base", "any") else PAPER_BASE  # type: ignore[attr-defined]


def rope_base(ctx: object, base: float) -> float:
    """``base`` if the implementation's rotary takes any base (``rope_base``, undeclared: any), else the
    RoFormer paper's 10000 (the same value as the sinusoidal encoding's)."""
    return base if base == PAPER_BASE or ctx.supports("rope_base", "any") else PAPER_BASE  # type: ignore[attr-defined]


def table_length(ctx: object) -> int | None:
    """The ``n`` of an implementation that declares sinusoidal encodings for positions below ``n`` only
    (``encoding_max_length``; the largest value it declares), ``None`` when it declares no limit."""
    allowed = ctx.choices("encoding_max_length", MAX_LENGTHS)  # type: ignore[attr-defined]
    return None if "unlimited" in allowed else max(allowed)


def below(ctx: object, positions: torch.Tensor, room: int = 0) -> torch.Tensor:
    """``positions`` unchanged, or for an implementation with a table of ``n`` rows (:func:`table_length`) the
    same positions brought below ``n - room``, keeping their order and which of them are equal: the ``r``-th
    smallest of ``u`` distinct positions ``p`` becomes ``min(p, n - room - u + r)``. Positions already low
    enough keep their value."""
    n = table_length(ctx)
    if n is None:
        return positions
    values, inverse = torch.unique(positions, sorted=True, return_inverse=True)  # (u,) increasing
    limit = n - room - len(values) + torch.arange(len(values))  # (u,) strictly increasing, last n - room - 1
    if int(limit[0]) < 0:
        raise ValueError(f"{len(values)} distinct positions do not fit below {n - room}")
    return torch.minimum(values, limit)[inverse]


def shift_below(ctx: object, positions: torch.Tensor, k: int) -> tuple[torch.Tensor, int]:
    """``(positions, k)`` unchanged, or for a table of ``n`` rows positions below ``n / 2`` (:func:`below`) and
    ``k`` clipped to ``[-min(positions), n / 2]`` (``k >= 1`` stays ``>= 1``), so that both ``positions`` and
    ``positions + k`` lie in the table."""
    n = table_length(ctx)
    if n is None:
        return positions, k
    positions = below(ctx, positions, room=n - n // 2)
    return positions, max(-int(positions.min()), min(k, n // 2))
