"""Strategies of the positions family: positions, widths and sequences to encode.

Built on the shared :mod:`specformer.properties.strategies` (re-exported here, so a
property module imports one ``strategies``). Everything is float64 on the CPU; positions
are ``int64``.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from specformer.properties.strategies import BOUND, bounded_floats, permutations_of, seeds, tensors

__all__ = ["BOUND", "bounded_floats", "permutations_of", "seeds", "tensors", "positions", "even_widths", "within"]


@st.composite
def positions(draw: st.DrawFn, *, max_t: int = 8, max_position: int = 2048, distinct: bool = False,
              min_t: int = 1) -> torch.Tensor:
    """A 1-D ``int64`` tensor of ``min_t..max_t`` positions in ``[0, max_position]`` (distinct if asked)."""
    values = draw(st.lists(st.integers(0, max_position), min_size=min_t, max_size=max_t, unique=distinct))
    return torch.tensor(values, dtype=torch.int64)


def even_widths(max_d: int = 16) -> st.SearchStrategy[int]:
    """Even feature widths ``2..max_d`` (sinusoidal and rotary encodings pair their features)."""
    return st.integers(1, max_d // 2).map(lambda n: 2 * n)


def within(ctx: object, convention: str, drawn: object, values: tuple) -> object:
    """``drawn`` if the implementation declares it follows that value of ``convention``, else the first of
    ``values`` it declares (the row ends not applicable at once when it declares none of them).

    Hypothesis draws every value; an implementation is only ever asked for what it declares.
    """
    allowed = ctx.choices(convention, values)  # type: ignore[attr-defined]
    return drawn if drawn in allowed else allowed[0]
