"""Strategies of the blocks family: the shared ones (re-exported) and layer weights.

Everything is float64 on the CPU. A layer's weights are drawn from a seed that Hypothesis
draws (dense, no two entries alike, cheap to draw); its shape (``d_model``, heads,
``d_ff``, batch and length) Hypothesis chooses and shrinks.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from hypothesis import strategies as st

from specformer.properties.strategies import BOUND, bounded_floats, budgeted, dimension, permutations_of, seeds, tensors
from specformer.properties.strategies import realistic as _one_in_four
from specformer.protocol.blocks import DECODER_KEYS, ENCODER_KEYS

__all__ = ["BOUND", "DEFAULT_EPS", "LayerCase", "REALISTIC_ONE_IN", "bounded_floats", "epsilons", "layer_cases",
           "layer_weights", "permutations_of", "realistic", "seeds", "tensors", "within"]

#: PyTorch's default ``eps`` of LayerNorm; drawn epsilons shrink to it.
DEFAULT_EPS = 1e-5
#: Other values of ``eps`` every run meets: 1e-12 (BERT's configuration default), 1e-6, and two large
#: enough to change the output of a token of spread 0.1 by several per cent.
NAMED_EPS = (DEFAULT_EPS, 1e-12, 1e-6, 1e-3, 0.1)


def epsilons() -> st.SearchStrategy[float]:
    """LayerNorm's ``eps``: one of :data:`NAMED_EPS` or any float in ``[1e-8, 1/2]``; shrinks to 1e-5.

    Drawn so that an implementation that ignores the ``eps`` it is given (a constant in its code)
    fails: its output differs wherever ``eps`` is not small beside the variance of a token."""
    return st.one_of(st.sampled_from(NAMED_EPS), st.floats(1e-8, 0.5))


def layer_weights(seed: int, d_model: int, d_ff: int, keys: tuple[str, ...] = ENCODER_KEYS,
                  gain: float = 1.0) -> dict[str, torch.Tensor]:
    """Weights for ``keys`` from ``seed``: matrices uniform with variance ``gain^2 / fan_in``,
    biases in ``[-1/2, 1/2]``, ``gamma`` in ``[1/2, 3/2]``, ``beta`` in ``[-1/2, 1/2]``."""
    g = torch.Generator().manual_seed(seed)

    def uniform(*shape: int, low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(*shape, generator=g, dtype=torch.float64)

    weights: dict[str, torch.Tensor] = {}
    for key in keys:
        if key.startswith("w"):
            rows, cols = {"w_1": (d_model, d_ff), "w_2": (d_ff, d_model)}.get(key, (d_model, d_model))
            bound = gain * (3.0 / rows) ** 0.5  # uniform on [-a, a] has variance a^2 / 3
            weights[key] = uniform(rows, cols, low=-bound, high=bound)
        elif key.startswith("gamma"):
            weights[key] = uniform(d_model, low=0.5, high=1.5)
        else:
            weights[key] = uniform(d_ff if key == "b_1" else d_model, low=-0.5, high=0.5)
    return weights


class LayerCase(NamedTuple):
    """An input ``x (B, t, d_model)``, a memory ``(B, s, d_model)``, weights, and the number of heads."""

    x: torch.Tensor
    memory: torch.Tensor
    weights: dict[str, torch.Tensor]
    heads: int


#: One example in this many is drawn at the sizes models use (see :func:`layer_cases`).
REALISTIC_ONE_IN = 3


def realistic(draw: st.DrawFn) -> bool:
    """Whether this example is drawn at realistic sizes: one in :data:`REALISTIC_ONE_IN`, shrinking to small
    (under the shape budget: the plan of sizes models use)."""
    if budgeted():
        return draw(_one_in_four())
    return draw(st.integers(1, REALISTIC_ONE_IN), label="size class") == REALISTIC_ONE_IN


@st.composite
def layer_cases(draw: st.DrawFn, decoder: bool = False, max_t: int = 5, min_t: int = 1) -> LayerCase:
    """A layer of width ``d_model = heads * d_k`` (2 to 8), ``d_ff`` 1 to 16, inputs in ``[-2, 2]``; one
    example in :data:`REALISTIC_ONE_IN` at the sizes models use: up to 8 heads of width up to 8
    (``d_model`` up to 64), ``d_ff`` up to 256, batch 3 or 4, target and source lengths up to 64."""
    if realistic(draw):
        heads = draw(dimension(1, 8), label="heads")
        d_model = heads * draw(dimension(2, 8), label="d_k")
        d_ff = draw(dimension(16, 256), label="d_ff")
        b, t, s = draw(dimension(3, 4)), draw(dimension(max(min_t, 6), 64)), draw(dimension(5, 64))
    else:
        heads = draw(dimension(1, 2), label="heads")
        d_model = heads * draw(dimension(1 if heads > 1 else 2, 4), label="d_k")
        d_ff = draw(dimension(1, 16), label="d_ff")
        b, t, s = draw(dimension(1, 2)), draw(dimension(min_t, max_t)), draw(dimension(1, 4))
    seed = draw(seeds(), label="seed")
    g = torch.Generator().manual_seed(seed)
    x = 4 * torch.rand(b, t, d_model, generator=g, dtype=torch.float64) - 2  # (B, t, d_model) in [-2, 2]
    memory = 4 * torch.rand(b, s, d_model, generator=g, dtype=torch.float64) - 2  # (B, s, d_model)
    weights = layer_weights(seed + 1, d_model, d_ff, DECODER_KEYS if decoder else ENCODER_KEYS)
    return LayerCase(x, memory, weights, heads)


def within(ctx: object, convention: str, drawn: object, values: tuple) -> object:
    """``drawn`` if the implementation declares it follows that value of ``convention``, else the first of
    ``values`` it declares (the row ends not applicable at once when it declares none of them).

    Hypothesis draws every value; an implementation is only ever asked for what it declares.
    """
    allowed = ctx.choices(convention, values)  # type: ignore[attr-defined]
    return drawn if drawn in allowed else allowed[0]
