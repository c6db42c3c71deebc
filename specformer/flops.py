"""Counting the FLOPs of an implementation's matrix products, ``einsum`` included.

``torch.utils.flop_counter.FlopCounterMode`` counts the matrix products it sees at the
dispatcher (``mm``, ``bmm``, ``addmm``, ``baddbmm``, the fused CUDA attention kernels):
a multiply-add is 2 FLOPs. ``torch.einsum`` is decomposed before the dispatcher, and a
contraction with a size-1 dimension is lowered to an elementwise ``aten.mul`` (plus a
``sum``), which the counter does not count. The same product then costs ``2 t^2 d`` at
one length and nothing at another, and a correct einsum implementation would look
neither quadratic nor equal-cost.

:func:`count_flops` therefore counts every ``torch.einsum`` call by its equation, above
the dispatcher, and replaces whatever the dispatcher-level counter saw inside the call:
operands are contracted left to right, and each binary step that sums at least one
index away costs ``2 x`` the product of the sizes of all indices it involves, the
count ``bmm`` gets for the same product. A step that sums nothing (a Hadamard or outer
product) is elementwise work and counts 0, as ``aten.mul`` does. Equations with an
ellipsis, and the sublist form, are left to the dispatcher-level counter.

This module does not count elementwise work, softmax or ``aten.mv``; it counts what the
cost claims are about, the products ``Q K^T`` and ``A V`` and the projections.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["count_flops", "einsum_flops"]


def einsum_flops(equation: str, shapes: list[tuple[int, ...]]) -> int | None:
    """FLOPs of ``torch.einsum(equation, *operands)`` by the rule above; None when not parsable here."""
    if "..." in equation or not shapes:
        return None
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(shapes) or any(len(s) != len(shape) for s, shape in zip(inputs, shapes)):
        return None
    if not arrow:  # implicit output: the indices that appear once, in alphabetical order
        out = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    size: dict[str, int] = {}
    for subscripts, shape in zip(inputs, shapes):
        for index, n in zip(subscripts, shape):
            size[index] = max(size.get(index, 1), n)  # broadcasting: a size-1 index takes the other's size
    flops, current = 0, set(inputs[0])
    for position in range(1, len(inputs)):
        operand = set(inputs[position])
        involved = current | operand
        later = set(out).union(*map(set, inputs[position + 1:]))
        kept = involved & later
        if involved - kept:  # at least one index is summed away: a contraction
            flops += 2 * math.prod(size[i] for i in involved)
        current = kept
    return flops


class _EinsumCounter(TorchFunctionMode):
    """Counts ``torch.einsum`` by its equation, in place of what ``counter`` saw inside it."""

    def __init__(self, counter: Any) -> None:
        super().__init__()
        self.counter = counter
        self.adjustment = 0

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func is not torch.einsum or not args or not isinstance(args[0], str):
            return func(*args, **kwargs)
        operands = args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
        shapes = [tuple(o.shape) for o in operands if isinstance(o, torch.Tensor)]
        counted = einsum_flops(args[0], shapes) if len(shapes) == len(operands) else None
        before = self.counter.get_total_flops()
        result = func(*args, **kwargs)
        if counted is not None:
            self.adjustment += counted - (self.counter.get_total_flops() - before)
        return result


@contextmanager
def count_flops() -> Iterator[list[int]]:
    """Count the FLOPs of the calls made inside; yields a one-element list, filled on exit."""
    from torch.utils.flop_counter import FlopCounterMode

    total = [0]
    counter = FlopCounterMode(display=False)
    einsum = _EinsumCounter(counter)
    with counter, einsum:
        yield total
    total[0] = int(counter.get_total_flops()) + einsum.adjustment
