"""A bound on the shrinking of a failing row, and the arguments of its smallest failing example.

Hypothesis shrinks a failing example until no smaller one fails; against an
implementation in a worker each try is a round trip, and a failing row used to cost ten
times a passing one. :class:`ShrinkBudget` wraps a property's test function (inside the
runner's own wrapper) and counts the examples tried after the first failure; past the
profile's budget (:data:`specformer.runner.profiles.SHRINK_BUDGET`, a multiple of the row's
example count) it stops the row with :class:`ShrinkingCut`, which the runner treats as
it treats a time limit hit while shrinking: the failure found stands, unshrunk. So a
failing row costs at most about twice a passing one.

Every failing call's arguments are kept (the last one is the smallest found), so the
summary can show them as Python (:func:`specformer.report.summary.render_call`) and
``specformer replay`` can save them, whether or not the budget cut the shrinking.

This module counts and records; it decides no outcome.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from specformer.runner.row import RowTimeout


class ShrinkingCut(RowTimeout):
    """The shrinking of a failing row used up its budget (a ``BaseException``: Hypothesis lets it through)."""


def _failure_types() -> tuple[type[BaseException], ...]:
    from specformer.context import ImplementationError

    return (AssertionError, ImplementationError)


class ShrinkBudget:
    """Counts the examples after a row's first failure, and records the failing ones' arguments."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.after_failure = 0
        self.cut = False
        self.failing: tuple[tuple[Any, ...], dict[str, Any]] | None = None
        #: called before each example; its value at the last failing example is kept in ``failing_mark``
        self.mark: Callable[[], Any] = lambda: None
        self.failing_mark: Any = None
        #: the message of the last failing example (the smallest found)
        self.failing_message = ""
        #: the last call into the implementation in the last failing example: ``(op, args, kwargs)``
        self.failing_call: tuple[str, tuple[Any, ...], dict[str, Any]] | None = None

    def _cut(self) -> None:
        self.cut = True
        raise ShrinkingCut(f"shrinking stopped after {self.limit} smaller examples (the profile's budget)")

    def wrap(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        """``inner`` with the count and the record (module doc)."""
        failures = _failure_types()

        @functools.wraps(inner)
        def budgeted(*args: Any, **kwargs: Any) -> Any:
            over = False
            if self.failing is not None:
                self.after_failure += 1
                over = self.limit is not None and self.after_failure > self.limit
            # The example runs to its end before the cut: stopping it before its draws would
            # make Hypothesis see a test that draws differently (FlakyStrategyDefinition).
            mark = self.mark()
            ctx = kwargs.get("ctx", args[0] if args else None)
            if hasattr(ctx, "last_call"):
                ctx.last_call = None  # this example's calls only
            try:
                result = inner(*args, **kwargs)
            except failures as exc:
                self.failing, self.failing_mark = (args, kwargs), (mark, self.mark())
                self.failing_message = str(exc).strip() or type(exc).__name__
                self.failing_call = getattr(ctx, "last_call", None)
                if over:
                    self._cut()
                raise
            if over:
                self._cut()
            return result

        return budgeted


def budget_for(profile: str, max_examples: int | None) -> int | None:
    """The number of examples a failing row may try after its first failure under ``profile``."""
    from specformer.runner.profiles import SHRINK_BUDGET, profile_settings

    factor = SHRINK_BUDGET.get(profile)
    if factor is None:
        return None
    return max(1, int(factor * profile_settings(profile, max_examples).max_examples))
