"""A check that holds under one of the conventions an implementation declares.

Where an implementation may declare more than one value of a convention (a causal
alignment, a loss's constant), a property computes the expected value for each declared
value and passes when the implementation matches one of them. :func:`under_one_of` runs
the check for each value in turn and stops at the first that passes; when none does, it
fails with every value's failure. It decides nothing itself: the check's own assertions do.
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

T = TypeVar("T")


def under_one_of(values: Sequence[T], check: Callable[[T], None], label: Callable[[T], str] | None = None) -> None:
    """``check(value)`` for each of ``values`` in turn, returning at the first that raises no AssertionError;
    otherwise an AssertionError joining every failure (with ``label``, each prefixed by ``label(value)`` when
    more than one value was tried)."""
    failures = []
    for value in values:
        try:
            check(value)
            return
        except AssertionError as exc:
            failures.append(f"{label(value)}: {exc}" if label is not None and len(values) > 1 else str(exc))
    raise AssertionError("; ".join(failures))
