"""Hypothesis strategies shared by every family: bounded floats, tensors, permutations, seeds.

Everything is drawn as **float64 on the CPU**; the context moves it to the device and
dtype under test. Values are bounded (default ``[-3, 3]``) and never NaN or infinite:
properties about NaN/inf draw them explicitly. Shapes are small so that hundreds of
examples run in seconds; shrinking goes towards batch 1, short sequences, narrow
features and zeros.

Family strategies (attention cases, ...) live in each family's own ``strategies`` module,
which re-exports these. This module does not draw tokenizer text or corpora yet.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

BOUND = 3.0


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
    """
    chosen = arrays(np.float64, shape, elements=bounded_floats(bound)).map(torch.from_numpy)
    seeded = st.integers(0, 2**32 - 1).map(lambda seed: _seeded(shape, bound, seed))
    return st.one_of(chosen, *[seeded] * 5)


@st.composite
def permutations_of(draw: st.DrawFn, n: int) -> torch.Tensor:
    """A permutation of ``range(n)`` as a long tensor."""
    return torch.tensor(draw(st.permutations(list(range(n)))), dtype=torch.long)


def seeds() -> st.SearchStrategy[int]:
    """Seeds for the sample generators of statistical properties."""
    return st.integers(0, 2**32 - 1)
