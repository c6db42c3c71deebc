"""One tolerance table per dtype, in one place.

Start from ``torch.testing.assert_close``'s defaults and widen ``atol`` for results that
sum over a few terms (attention sums ``t_k`` products). Inputs are drawn from bounded
ranges (:mod:`.strategies`), so absolute tolerances are meaningful.

In float16 and bfloat16, an entry outside the tolerance still passes when it is no
farther from the float64 answer than twice the error of the same formula computed in
that dtype from the same inputs (PyTorch's op-test rule, "at least as close as the
reference in the same precision", with a factor 2 for a different order of rounding).
The property supplies that same-dtype formula; see
:meth:`specformer.context.Context.assert_close`.
"""

from __future__ import annotations

from typing import NamedTuple

import torch


class Tolerance(NamedTuple):
    """Relative and absolute tolerance for comparing against a float64 answer."""

    rtol: float
    atol: float


#: dtype name -> tolerance. float64 is tight; float32 allows accumulated rounding.
TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(rtol=1e-7, atol=1e-9),
    "float32": Tolerance(rtol=1.3e-6 * 10, atol=1e-5),
    # Half precision: scores up to ~20 (bounded inputs) carry an absolute rounding error
    # of ~20 * eps, which moves the weights by that much relatively.
    "float16": Tolerance(rtol=1e-2, atol=1e-2),
    "bfloat16": Tolerance(rtol=8e-2, atol=8e-2),
}

DTYPES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def tolerance(dtype: str | torch.dtype) -> Tolerance:
    """The tolerance for a dtype, by name or torch dtype."""
    name = dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")
    try:
        return TOLERANCES[name]
    except KeyError:
        raise ValueError(f"no tolerance for dtype {name!r}; known: {sorted(TOLERANCES)}") from None
