"""Runs one property against one implementation on one device and dtype, and classifies.

Outcomes (the report's vocabulary):

=================  ==============================================================
``pass``           a ``hold`` property passed every example
``refuted``        a ``counterexample`` property found its counterexample (expected)
``fail``           a ``hold`` property found a counterexample, or a
                   ``counterexample`` property found none
``error``          the implementation raised, crashed, exited, hung, modified an
                   input, refused an example inside its declared capabilities, or
                   returned a malformed result
``inconclusive``   the property passed (or found no counterexample), but the
                   implementation hid what it needs (attention weights) on so many
                   examples that fewer than the profile's minimum were checked
``not-applicable`` the implementation lacks the operation, the row's dtype, device
                   or a convention it needs is outside its declaration, or the
                   property cannot check it here (a library that is not
                   installed, FLOPs the counter cannot see)
``skipped``        the device is not available here
``known-deviation`` a row listed in a deviations file (:mod:`specformer.report.deviations`)
                   that did not end as expected: counted as expected, with its
                   reason and its original outcome
``fixed``          a listed row that ended as expected after all (prune the entry)
=================  ==============================================================

Under a profile that is not derandomized (``thorough``), every row runs from a seed of
its own (drawn here, or given with ``--seed``) recorded in the row and in its
reproduction command, so that the command replays the same examples.

The implementation runs in a worker (:mod:`specformer.runner.supervisor`); the property, its
strategies and its expected values run here. Every failure mode of the implementation
ends in one of these outcomes; nothing escapes but ``KeyboardInterrupt``. A hang is cut
by the row's limit (:mod:`specformer.runner.budget`): CPU seconds of the checker and the
implementation together, with a wall-clock backstop for an implementation that sleeps or
is starved, enforced on every call from outside the worker (and, for rows that call no
implementation, by ``SIGPROF`` and ``SIGALRM`` in the main thread).

A row counts the examples Hypothesis *generated* (calls of the property, shrinking
included), those *checked* (the property ran to its verdict) and those *out of domain*
(the implementation hid what the property needs, such as its attention weights).
"""

from __future__ import annotations

import functools
import random
import shlex
import signal
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from hypothesis import Phase, settings
from hypothesis.errors import FailedHealthCheck, Flaky, Unsatisfiable

from specformer.runner import devices
from specformer.runner.budget import Limit
from specformer.context import Backend, Context, ImplementationError
from specformer.properties.strategies import shape_budget
from specformer.runner.profiles import min_checked, profile_settings, shape_budgeted
from specformer.property import Property
from specformer.optional import missing_message
from specformer.protocol import Capabilities, NotApplicable
from specformer.protocol.capabilities import OutsideDeclaration

#: Out-of-domain examples after which a row none of whose examples was checked is not
#: applicable, without drawing the hundreds more Hypothesis would try: for a domain that
#: covers a tenth of the draws, 100 misses in a row happen with probability 3e-5.
OUT_OF_DOMAIN_LIMIT = 100
from specformer.report.summary import readable_counterexample
from specformer.runner.supervisor import WorkerLost

OUTCOMES = ("pass", "refuted", "fail", "error", "inconclusive", "not-applicable", "skipped", "known-deviation",
            "fixed")
EXPECTED_OUTCOMES = frozenset({"pass", "refuted", "not-applicable", "skipped", "known-deviation", "fixed"})
#: Outcomes of rows that ran and conformed (a listed deviation that ends so is ``fixed``).
CONFORMING_OUTCOMES = frozenset({"pass", "refuted"})
MATH = "math"  # the pseudo-implementation of properties that need no operation
#: Outcomes of rows that checked nothing: the implementation was never judged by them.
UNCHECKED_OUTCOMES = frozenset({"not-applicable", "skipped"})


def unchecked_implementations(rows: Iterable[Mapping[str, Any]], implementations: Iterable[Mapping[str, Any]]
                              ) -> list[str]:
    """The implementations the run was asked to judge (``asked``: named with ``--impl``) that loaded
    but had no row checked: every row of theirs not applicable or skipped, or none at all. Such a
    run checked nothing of theirs, and must not end as if it had."""
    checked = {str(r.get("implementation")) for r in rows if r.get("outcome") not in UNCHECKED_OUTCOMES}
    return [str(i["name"]) for i in implementations
            if i.get("asked") and i.get("status", "loaded") == "loaded" and str(i["name"]) not in checked]


class RowTimeout(BaseException):
    """A row ran past its time limit (a BaseException so Hypothesis does not shrink it)."""


class OutOfDomain(BaseException):
    """A row's first examples were all outside the implementation's domain.

    A BaseException, like ``RowTimeout``: Hypothesis would take an ``Exception`` raised
    from the test for a failure and replay it, and the replay (an example the
    implementation refused) then reads as a flaky test.
    """


@dataclass
class RowResult:
    """One row of the report: a property against one implementation, device and dtype."""

    claim: str
    property: str
    implementation: str
    device: str
    dtype: str
    expect: str
    outcome: str
    family: str = ""
    examples_generated: int = 0
    examples_checked: int = 0
    examples_out_of_domain: int = 0
    min_checked: int = 0
    duration_s: float = 0.0
    message: str = ""
    counterexample: str | None = None
    reproduce: str = ""
    seed: int | None = None
    deviation_reason: str | None = None
    original_outcome: str | None = None
    #: the last call into the implementation before the failure, as Python (``impl.op(...)``)
    call: str | None = None
    #: the distinct shapes each operation was called with: ``{op: {"count": n, "shapes": [the first few]}}``
    shapes: dict[str, Any] | None = None
    #: ``--strict-deviations``: a ``fixed`` row is not as expected (not stored in the report)
    strict_deviations: bool = field(default=False, repr=False)
    #: the worker was lost (crashed, killed, out of time or memory): no deviation entry may hide that
    #: (not stored in the report; the message says it)
    worker_lost: bool = field(default=False, repr=False)

    @property
    def as_expected(self) -> bool:
        """Whether the outcome is one a conforming implementation may have."""
        if self.outcome == "fixed" and self.strict_deviations:
            return False
        return self.outcome in EXPECTED_OUTCOMES

    def to_json(self) -> dict[str, Any]:
        """The row as the report stores it."""
        data = asdict(self)
        del data["strict_deviations"], data["worker_lost"]
        return {**data, "as_expected": self.as_expected}


def reproduce_command(prop: Property, impl_spec: str, device: str, dtype: str, profile: str,
                      seed: int | None = None) -> str:
    """A command that re-runs exactly this row (with its seed, under a random profile)."""
    args = ["specformer", "run", *(["--impl", impl_spec] if impl_spec != MATH else []), "--claims", prop.claim,
            "--property", prop.qualname, "--device", device, "--dtype", dtype, "--profile", profile]
    if seed is not None:
        args += ["--seed", str(seed)]
    return shlex.join(args)


def row_seed(profile: str, seed: int | None = None) -> int | None:
    """The seed of a row: ``None`` under a derandomized profile, else ``seed`` or a fresh one."""
    if profile_settings(profile).derandomize:
        return None
    return seed if seed is not None else random.SystemRandom().randrange(2**32)


@contextmanager
def time_limit(limit: Limit) -> Iterator[None]:
    """Raise :class:`RowTimeout` when ``limit`` runs out: its CPU seconds (this process's, ``ITIMER_PROF``)
    or its wall-clock backstop (``ITIMER_REAL``), whichever first (main thread with signals only)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or (limit.cpu_s is None and limit.backstop_s is None):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise RowTimeout(limit.message("cpu" if signum == signal.SIGPROF else "wall"))

    timers = []
    if limit.cpu_s is not None:
        timers.append((signal.SIGPROF, signal.ITIMER_PROF, max(1e-3, limit.cpu_s - limit.cpu_used())))
    if limit.backstop_s is not None:
        timers.append((signal.SIGALRM, signal.ITIMER_REAL, max(1e-3, limit.deadline - time.monotonic())))
    previous = [(signum, signal.signal(signum, expire)) for signum, _, _ in timers]
    for _, which, seconds in timers:
        signal.setitimer(which, seconds)
    try:
        yield
    finally:
        for _, which, _ in timers:
            signal.setitimer(which, 0)
        for signum, handler in previous:
            signal.signal(signum, handler)


def _notes(exc: BaseException) -> str | None:
    notes = [n for n in getattr(exc, "__notes__", []) if n.strip()]
    return readable_counterexample("\n".join(notes)) if notes else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, (AssertionError, ImplementationError)) else text


def run_property(
    prop: Property,
    backend: Backend | None,
    impl_name: str,
    impl_spec: str,
    device: str,
    dtype: str,
    profile: str = "ci",
    timeout_s: float | None = 120.0,
    operations: frozenset[str] | None = None,
    seed: int | None = None,
    shrink: bool = True,
    capabilities: Capabilities | None = None,
    backstop_s: float | None = None,
) -> RowResult:
    """Run ``prop`` against the implementation behind ``backend``; never raises (but Ctrl-C).

    ``backend`` is ``None`` for properties that call no implementation (``math``).
    ``operations`` are those the implementation said it provides when it was loaded.
    ``seed`` fixes the examples of a profile that is not derandomized (default: a fresh seed).
    ``shrink=False`` reports the first counterexample found, unshrunk (for rows listed as
    known deviations, whose failure is expected: shrinking them is most of their cost).
    ``timeout_s`` is the row's limit in CPU seconds, the checker's and the implementation's
    together; ``backstop_s`` its wall-clock backstop (default: :data:`~specformer.runner.budget.BACKSTOP_FACTOR`
    times ``timeout_s``), :class:`~specformer.runner.budget.Limit`.
    ``capabilities`` is what the implementation declared (None, as nothing declared: every
    operation it has, every dtype, device and convention): a row outside it is not
    applicable at once, and inside it a refused example is an error.
    """
    seed = row_seed(profile, seed)
    if backend is not None and capabilities is None:
        capabilities = Capabilities()  # declaring nothing declares everything: every example is owed an answer
    row = RowResult(prop.claim, prop.qualname, impl_name, device, dtype, prop.expect, "pass", family=prop.family,
                    min_checked=min_checked(profile, prop.max_examples), seed=seed,
                    reproduce=reproduce_command(prop, impl_spec, device, dtype, profile, seed))
    if not devices.available(device):
        row.outcome, row.message = "skipped", f"device {device!r} is not available on this machine"
        return row
    missing = [op for op in prop.needs if op not in (operations or frozenset())] if backend is not None else []
    if missing:
        row.outcome, row.message = "not-applicable", f"{impl_name} does not provide: {', '.join(missing)}"
        return row
    outside = capabilities.outside(prop.needs, device, dtype) if backend is not None and capabilities else None
    if outside:
        row.outcome, row.message = "not-applicable", f"{impl_name} {outside}"
        return row

    start = time.perf_counter()
    limit = Limit(timeout_s, backstop_s) if timeout_s else Limit(None, 24 * 3600.0)
    ctx = Context(backend, impl_name, device, dtype, limit, capabilities) if backend is not None else \
        Context(_NoBackend(), impl_name, device, dtype, limit)
    test = prop.function
    inner = test.hypothesis.inner_test
    first_failure: list[BaseException] = []  # what to report if the time limit cuts shrinking short
    counts = {"generated": 0, "checked": 0}

    @functools.wraps(inner)  # counterexamples then name the property, not this wrapper
    def counted(*args: Any, **kwargs: Any) -> Any:
        ended = limit.ended()
        if ended:
            raise RowTimeout(limit.message(ended))
        counts["generated"] += 1
        if counts["checked"] == 0 and ctx.out_of_domain >= OUT_OF_DOMAIN_LIMIT:
            reason = ctx.not_applicable[-1] if ctx.not_applicable else "outside the implementation's domain"
            raise OutOfDomain(f"{reason} (the first {ctx.out_of_domain} examples were all outside the "
                              "implementation's domain)")
        try:
            result = inner(*args, **kwargs)
        except (AssertionError, ImplementationError) as exc:
            counts["checked"] += 1
            if not first_failure:
                first_failure.append(exc)
            raise
        counts["checked"] += 1
        return result

    saved_settings, saved_seed = test._hypothesis_internal_use_settings, test._hypothesis_internal_use_seed
    test.hypothesis.inner_test = counted
    chosen = profile_settings(profile, prop.max_examples)
    if not shrink:
        chosen = settings(chosen, phases=[phase for phase in chosen.phases if phase is not Phase.shrink])
    test._hypothesis_internal_use_settings = chosen
    test._hypothesis_internal_use_seed = seed  # what @seed(...) sets; None keeps derandomize
    try:
        with time_limit(limit if backend is None else Limit(None)), shape_budget(shape_budgeted(profile)):
            test(ctx)
    except KeyboardInterrupt:
        raise
    except WorkerLost as exc:
        row.outcome, row.message, row.worker_lost = "error", f"{impl_name}: {exc}", True
        if "did not answer in time" in str(exc):
            row.message += _time_limit_note(ctx, limit)
    except RowTimeout as exc:
        if first_failure:  # a failure was found; only its shrinking ran out of time
            found = first_failure[0]
            row.outcome = ("error" if isinstance(found, ImplementationError)
                           else "refuted" if prop.expect == "counterexample" else "fail")
            row.message = f"{_first_line(found)} (not shrunk: {exc})"
        else:
            row.outcome, row.message = _timeout_message(exc, backend, impl_name)
            if backend is not None:
                row.message += _time_limit_note(ctx, limit)
    except Unsatisfiable as exc:
        if ctx.not_applicable:
            row.outcome, row.message = "not-applicable", ctx.not_applicable[-1]
        else:
            row.outcome, row.message = "error", f"no valid example could be generated: {exc}"
    except (NotApplicable, OutOfDomain, OutsideDeclaration) as exc:
        row.outcome, row.message = "not-applicable", str(exc)
    except AssertionError as exc:
        row.outcome = "refuted" if prop.expect == "counterexample" else "fail"
        row.message, row.counterexample = _first_line(exc), _notes(exc)
    except ImplementationError as exc:
        row.outcome, row.message, row.counterexample = "error", _first_line(exc), _notes(exc)
    except FailedHealthCheck as exc:
        row.outcome, row.message = "error", f"Hypothesis health check failed: {exc}"
    except Flaky as exc:  # the same example did not end the same way twice: say what differed
        row.outcome, row.message = _flaky_message(exc, prop, ctx, backend, impl_name, first_failure, limit)
    except ModuleNotFoundError as exc:  # an optional library that is not installed: not applicable
        missing = missing_message(exc.name)
        row.outcome = "not-applicable" if missing else "error"
        row.message = missing or f"property raised {type(exc).__name__}: {exc}"
    except BaseException as exc:  # noqa: BLE001 - a bug in the property or the harness: still one clear row
        row.outcome = "error"
        row.message = f"property raised {type(exc).__name__}: {exc}"
        row.counterexample = _notes(exc) or "".join(traceback.format_exception(exc)[-3:])
    else:
        if prop.expect == "counterexample":
            row.outcome = "fail"
            row.message = f"no counterexample to the claim as written in {counts['checked']} checked examples"
    finally:
        test.hypothesis.inner_test = inner
        test._hypothesis_internal_use_settings = saved_settings
        test._hypothesis_internal_use_seed = saved_seed
        row.duration_s = round(time.perf_counter() - start, 4)
        row.examples_generated, row.examples_checked = counts["generated"], counts["checked"]
        row.examples_out_of_domain = ctx.out_of_domain
        row.shapes = shape_record(ctx.shapes)
    _judge_evidence(row, ctx)
    row.message = printable(row.message)
    row.counterexample = printable(row.counterexample) if row.counterexample is not None else None
    return row


#: Shapes kept per operation in a row's record (the count is of all of them).
SHAPES_KEPT = 8


def shape_record(shapes: dict[str, set[str]]) -> dict[str, Any] | None:
    """A row's distinct call shapes per operation, as the report keeps them (``None``: no call was made)."""
    if not shapes:
        return None
    return {op: {"count": len(seen), "shapes": sorted(seen, key=lambda s: (len(s), s))[:SHAPES_KEPT]}
            for op, seen in sorted(shapes.items())}


def _time_limit_note(ctx: Context, limit: Limit) -> str:
    """What a row cut by its time limit spent its time on, the limit and the flags that change it."""
    times = ctx.call_times()
    spent = f"; its calls: {times}" if times else ""
    return (f"{spent}. The row's limit is {limit.describe()} for all its examples together; --row-timeout "
            "SECONDS changes the CPU limit, --row-backstop SECONDS the backstop")


def _timeout_message(exc: BaseException, backend: Backend | None, impl_name: str) -> tuple[str, str]:
    """The outcome and message of a row cut by its time limit before any failure was found."""
    if backend is None:
        return "error", f"the property itself ran past the time limit ({exc}); it calls no implementation"
    return "error", f"{impl_name}: {exc} (the implementation hangs or is too slow)"


def _flaky_message(exc: BaseException, prop: Property, ctx: Context, backend: Backend | None, impl_name: str,
                   first_failure: list[BaseException], limit: Limit) -> tuple[str, str]:
    """What happened when an example did not end the same way when Hypothesis ran it again.

    Hypothesis calls that flaky (``FlakyFailure``, ``FlakyStrategyDefinition``); the row
    says what made it so: the time limit ran out during the replay, the implementation
    refused on the replay an example it had answered (its refusals are random), or it
    answered the same example differently.
    """
    found = first_failure[0] if first_failure else None
    failed = ("error" if isinstance(found, ImplementationError)
              else "refuted" if prop.expect == "counterexample" else "fail") if found is not None else "error"
    first = f"{_first_line(found)} " if found is not None else ""
    if limit.ended():
        if found is None:
            return _timeout_message(RowTimeout(f"timed out while an example was replayed"), backend, impl_name)
        return failed, f"{first}(not shrunk: the time limit ran out while the example was replayed)"
    if backend is None:
        return "error", (f"the property is not deterministic: the same example did not end the same way twice "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
    if ctx.not_applicable:
        return failed, (f"{first}(not reproducible: when the example was run again {impl_name} refused it as "
                        f"outside its domain: {ctx.not_applicable[-1]}; an implementation that refuses at random "
                        "cannot be checked)")
    replayed = [e for e in getattr(exc, "exceptions", ()) if found is None or _first_line(e) != _first_line(found)]
    if replayed:  # what the replay ended in, e.g. a refusal of the example answered the first time
        return failed, (f"{first}(not reproducible: when the example was run again: {_first_line(replayed[-1])})")
    return failed, (f"{first}(not reproducible: {impl_name} answered the same example differently when it was run "
                    "again)")


def printable(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``a\\ud800b``): UTF-8 has none.

    Text properties hand implementations lone surrogates and quote what comes back; the
    report, the JUnit file and the site are UTF-8, so a row's text is made encodable once, here.
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _judge_evidence(row: RowResult, ctx: Context) -> None:
    """Turn a pass (or an unfound counterexample) on too few in-domain examples into ``inconclusive``.

    Only examples the implementation refused count against it: a property whose own
    strategy has few distinct examples (Hypothesis stops when it has tried them all) is
    not inconclusive.
    """
    passed = row.outcome == "pass" or (row.outcome == "fail" and row.message.startswith("no counterexample"))
    if passed and row.examples_out_of_domain and row.examples_checked < row.min_checked:
        reason = ctx.not_applicable[-1] if ctx.not_applicable else "outside the implementation's domain"
        row.outcome = "inconclusive"
        row.message = (f"only {row.examples_checked} examples checked (at least {row.min_checked} needed); "
                       f"{row.examples_out_of_domain} were outside the implementation's domain: {reason}")


class _NoBackend:
    """The backend of ``math`` rows: calling an implementation there is a bug of the property."""

    def call(self, request: dict[str, Any], what: str, deadline: Limit) -> dict[str, Any]:
        raise RuntimeError(f"a property with needs=() tried {what}")
