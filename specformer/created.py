"""Counting the elements of the tensors an implementation's calls create.

:mod:`specformer.flops` counts matrix products only: work done elementwise (a product
broadcast over the vocabulary and summed, a mask, an exponential) costs nothing there.
:func:`count_created` sees every ATen operation at the dispatcher, through a
``TorchDispatchMode``, and adds up the number of elements of each tensor an operation
returns that is new: a view or an in-place result (a return the operator's schema marks
as aliasing an input) adds nothing, a fresh buffer (``empty``, ``zeros``) adds its size.
Every elementwise or reducing operation writes at least as many elements as it creates,
so the total is a lower bound on the memory traffic of the visible work, and how it grows
with an input's size says how the work grows.

Work the dispatcher does not see (a fused kernel behind one operator, numpy, a C
extension) shows only as the outputs it returns: counts are lower bounds, to compare one
implementation with itself at two sizes, never two implementations. This module does not
count FLOPs or time.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["count_created"]


def _elements(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, (list, tuple)):
        return sum(_elements(v) for v in value)
    return 0


class _CreatedCounter(TorchDispatchMode):
    """Adds up the elements of the non-aliasing tensor outputs of every operation dispatched."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        returns = func._schema.returns  # type: ignore[attr-defined]
        values = out if len(returns) > 1 and isinstance(out, (tuple, list)) else (out,)
        for declared, value in zip(returns, values):
            if declared.alias_info is None:  # a view or an in-place result aliases an input: nothing new
                self.total += _elements(value)
        return out


@contextmanager
def count_created() -> Iterator[list[int]]:
    """Count the elements of the tensors created by the calls made inside; yields a one-element list, filled on exit."""
    total = [0]
    counter = _CreatedCounter()
    with counter:
        yield total
    total[0] = counter.total
