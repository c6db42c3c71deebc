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

Each example's calls into the implementation are kept with their answers
(:class:`CallRecorder`), and of the smallest failing example one call is chosen to print
(:func:`rejected_call`): the call whose answer was wrong, not merely the last one made. A
property that calls an operation several times (a rotation at two positions, a score
before and after a shift) may end on a call whose answer is right (a rotation at position
0, the identity), and pasting that call reproduces nothing. Where the example failed on an
assertion, each call is sent once more, to the reference implementation in this process on
the CPU, and the first call whose answer differs from the reference's by more than twice
the dtype's tolerance is chosen, provided another call agrees with it (so the comparison
tells calls apart); otherwise, and where the implementation raised or answered malformed,
the last call is. Operations whose answers are drawn or trained from a seed
(:data:`DRAWN`) are not compared: a correct one need not draw as the reference does. This
runs once per failing row, on the last failing example only, after the row ended.

This module counts, records and chooses what to show; it decides no outcome.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

from specformer.runner.row import RowTimeout

#: Operations whose answers are drawn from a seed or trained: a correct implementation need not answer them as the
#: reference does, so :func:`rejected_call` never compares them.
DRAWN = frozenset({"embedding_init", "train_skipgram", "train_fasttext", "train_glove", "token_vectors"})
#: How far an answer may be from the reference's and still agree with it, in multiples of the dtype's tolerance
#: (both answers may be that far from the exact value, on opposite sides).
AGREEMENT = 2.0


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
        self.last_failing_call: tuple[str, tuple[Any, ...], dict[str, Any]] | None = None
        #: the last failing example's calls, each ``(request, answer)``, and whether it failed an assertion
        self.failing_calls: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.failing_assertion = False
        self.failing_tolerance: Any = None
        self._chosen: tuple[int | None] | None = None

    @property
    def failing_call_index(self) -> int | None:
        """The index, in :attr:`failing_calls`, of the call to show (:func:`rejected_call`); ``None`` for the last
        call made. Chosen on first use, once."""
        if self._chosen is None:
            self._chosen = (rejected_call(self.failing_calls, self.failing_tolerance)
                            if self.failing_assertion else None,)
        return self._chosen[0]

    @property
    def failing_call(self) -> tuple[str, tuple[Any, ...], dict[str, Any]] | None:
        """The call of the last failing example to show, ``(op, args, kwargs)``: the one whose answer was
        wrong where the reference tells (module doc), else the last call made."""
        index = self.failing_call_index
        if index is None:
            return self.last_failing_call
        request = self.failing_calls[index][0]
        return (str(request.get("method")), tuple(request.get("args", ())),
                {**request.get("kwargs", {}), **(request.get("optional") or {})})

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
            recorder = None
            if hasattr(ctx, "last_call"):
                ctx.last_call = None  # this example's calls only
            if hasattr(ctx, "last_call") and hasattr(ctx, "backend"):
                recorder = ctx.backend = CallRecorder(ctx.backend)
            try:
                result = inner(*args, **kwargs)
            except failures as exc:
                self.failing, self.failing_mark = (args, kwargs), (mark, self.mark())
                self.failing_message = str(exc).strip() or type(exc).__name__
                self.last_failing_call = getattr(ctx, "last_call", None)
                self.failing_calls = recorder.calls if recorder is not None else []
                self.failing_assertion = isinstance(exc, AssertionError)
                self.failing_tolerance = getattr(ctx, "tol", None)
                self._chosen = None
                if over:
                    self._cut()
                raise
            finally:
                if recorder is not None:
                    ctx.backend = recorder.inner
            if over:
                self._cut()
            return result

        return budgeted


class CallRecorder:
    """A backend that forwards each call and keeps it with its answer (one example's calls, in order)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def call(self, request: dict[str, Any], what: str, deadline: Any) -> dict[str, Any]:
        """The inner backend's answer; the request (as sent) and the answer are kept."""
        sent = dict(request)  # a worker backend takes its routing keys out of the request
        answer = self.inner.call(request, what, deadline)
        self.calls.append((sent, answer))
        return answer


def rejected_call(calls: Sequence[tuple[dict[str, Any], dict[str, Any]]], tol: Any) -> int | None:
    """The index of the first call whose answer differs from the reference implementation's for the same
    request, when another call's answer agrees with the reference's; else ``None`` (module doc).

    It only chooses which call to show: nothing here changes a row's outcome or message. A call the
    reference cannot answer, or whose operation is in :data:`DRAWN`, is neither.
    """
    if len(calls) < 2 or tol is None:
        return None
    try:
        from specformer.runner.loading import load_implementation
        from specformer.runner.worker import run_locally

        reference = load_implementation("reference").obj
    except Exception:  # noqa: BLE001 - without the reference, the last call is shown
        return None
    differs: list[bool | None] = []
    for request, answer in calls:
        if request.get("method") in DRAWN:
            differs.append(None)
            continue
        sent = {key: value for key, value in request.items()
                if key not in ("process", "count_flops", "count_created")}  # the reference's answer only
        try:
            expected = run_locally(reference, {**sent, "device": "cpu", "count_flops": False})
            differs.append(_differs(answer, expected, tol))
        except Exception:  # noqa: BLE001 - a request the reference cannot take tells nothing
            differs.append(None)
    if False not in differs:
        return None
    return differs.index(True) if True in differs else None


def _differs(answer: dict[str, Any], expected: dict[str, Any], tol: Any) -> bool | None:
    """Whether an implementation's answer differs from the reference's (``None``: the reference gave none)."""
    if expected.get("status") != "ok":
        return None
    if answer.get("status") != "ok":
        return True
    return not _same(answer.get("value"), expected.get("value"), float(tol.rtol) * AGREEMENT,
                     float(tol.atol) * AGREEMENT)


def _same(value: Any, expected: Any, rtol: float, atol: float, depth: int = 0) -> bool:
    """``value`` equals ``expected`` (numbers and tensors within ``atol + rtol |expected|``, NaN equal to NaN)."""
    import torch

    from specformer.runner.wire import Opaque, WireTensor

    if depth > 32:
        return True
    if isinstance(value, WireTensor) or isinstance(expected, WireTensor):
        if not (isinstance(value, WireTensor) and isinstance(expected, WireTensor)) or value.shape != expected.shape:
            return False
        if value.data is None or expected.data is None:
            return value.data is None and expected.data is None
        a, e = value.data, expected.data
        if a.is_complex() or e.is_complex():
            a, e = torch.view_as_real(a.to(torch.complex128)), torch.view_as_real(e.to(torch.complex128))
        a, e = a.to(torch.float64), e.to(torch.float64)
        both_nan = a.isnan() & e.isnan()
        close = ((a - e).abs() <= atol + rtol * e.abs()) | (a == e) | both_nan
        return bool(close.all())
    if isinstance(value, Opaque) or isinstance(expected, Opaque):
        return value == expected
    numbers = (int, float)
    if isinstance(value, numbers) and isinstance(expected, numbers) and not isinstance(value, bool) \
            and not isinstance(expected, bool):
        if isinstance(value, int) and isinstance(expected, int):
            return value == expected
        if math.isnan(value) or math.isnan(expected):
            return math.isnan(value) and math.isnan(expected)
        return value == expected or abs(value - expected) <= atol + rtol * abs(expected)
    if isinstance(value, (list, tuple)) and isinstance(expected, (list, tuple)):
        return len(value) == len(expected) and all(_same(v, e, rtol, atol, depth + 1)
                                                   for v, e in zip(value, expected))
    if isinstance(value, dict) and isinstance(expected, dict):
        return value.keys() == expected.keys() and all(_same(value[k], expected[k], rtol, atol, depth + 1)
                                                       for k in value)
    return type(value) is type(expected) and value == expected


def budget_for(profile: str, max_examples: int | None) -> int | None:
    """The number of examples a failing row may try after its first failure under ``profile``."""
    from specformer.runner.profiles import SHRINK_BUDGET, profile_settings

    factor = SHRINK_BUDGET.get(profile)
    if factor is None:
        return None
    return max(1, int(factor * profile_settings(profile, max_examples).max_examples))
