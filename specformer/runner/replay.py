"""``specformer replay REPORT ROW``: a failing row's inputs, saved for the user's own REPL.

The report keeps a failing row's counterexample as text. To debug an implementation one
wants the very tensors it was called with. :func:`replay` runs the row again (same
property, implementation, device, dtype, profile and seed, so Hypothesis draws the same
examples and shrinks them the same way, :mod:`specformer.runner.shrinking` included), records
every call the property makes to the implementation, keeps the calls of the failing
example, and writes them with ``torch.save``: ``saved['calls']``, the call the summary shows
as ``saved['call']`` (the one whose answer was wrong,
:attr:`specformer.runner.shrinking.ShrinkBudget.failing_call_index`, else the last) and the
property's arguments as ``saved['counterexample']``; the summary's printed call reads from
this file what is too large to print (:func:`specformer.report.summary.printed_call`). It
prints a few lines of Python that load the file and make that call.

The implementation runs in a worker, as in ``specformer run``; the saved inputs are the
checker's copies, exactly what was sent. It is the one ``--impl`` names, or the built-in
one the report names: a report is data, and a file or module it names is never imported
because it names it (:func:`implementation_of`). This module re-runs one row; it changes
no report.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence


class ReplayError(ValueError):
    """The report or the row named cannot be replayed (a usage error)."""


class RecordingBackend:
    """A backend that keeps every request it forwards, grouped by example."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.examples: list[list[dict[str, Any]]] = [[]]

    def new_example(self) -> int:
        """Start recording a new example; its index."""
        self.examples.append([])
        return len(self.examples) - 1

    def call(self, request: dict[str, Any], what: str, deadline: Any) -> dict[str, Any]:
        self.examples[-1].append({"method": request.get("method"), "args": request.get("args", ()),
                                  "kwargs": {**request.get("kwargs", {}), **request.get("optional", {})},
                                  "optional": sorted(request.get("optional", {}))})
        return self.inner.call(request, what, deadline)


def row_label(row: Mapping[str, Any]) -> str:
    """``property[implementation/device/dtype]``: how ``replay`` names a row."""
    return f"{row.get('property')}[{row.get('implementation')}/{row.get('device')}/{row.get('dtype')}]"


def choose_row(report: Mapping[str, Any], wanted: str) -> dict[str, Any]:
    """The failing row of ``report`` that ``wanted`` names: its number in the list of failing rows
    (from 1), or text found in ``claim property[implementation/device/dtype]``."""
    failing = [r for r in report.get("rows", []) if isinstance(r, dict) and not r.get("as_expected", True)]
    if not failing:
        raise ReplayError("every row of the report ended as expected; there is nothing to replay")
    listing = "\n".join(f"  {i}. {r.get('claim')} {row_label(r)}: {r.get('outcome')}"
                        for i, r in enumerate(failing, start=1))
    if wanted.isdigit():
        index = int(wanted)
        if not 1 <= index <= len(failing):
            raise ReplayError(f"row {index}: the report has {len(failing)} failing rows:\n{listing}")
        return failing[index - 1]
    matches = [r for r in failing if wanted in f"{r.get('claim')} {row_label(r)}"]
    if not matches:
        raise ReplayError(f"no failing row matches {wanted!r}; the failing rows:\n{listing}")
    return matches[0]


def _file_name(row: Mapping[str, Any]) -> str:
    from specformer.report.summary import replay_file

    return replay_file(row, ".")[len("./"):]  # the name a failure block reads the call's large inputs from


def inline_call(call: Mapping[str, Any]) -> str | None:
    """``impl.op(...)`` with every argument written out, or ``None`` when one is too large to write (the
    saved file has it)."""
    from specformer.report.summary import render_implementation_call
    from specformer.runner import wire

    from specformer.report.summary import render_value

    args = [wire.unpack(a) for a in call["args"]]
    kwargs = {k: wire.unpack(v) for k, v in call["kwargs"].items()}
    for value in [*args, *kwargs.values()]:
        text = render_value(value)
        if text is None or text.startswith("<tensor"):  # not written out: a glimpse is no argument
            return None
    text = render_implementation_call(str(call["method"]), args, kwargs)  # its imports, then the call
    return text if len(text.splitlines()[-1]) <= 2000 else None


def snippet(path: Path, spec: str, calls: Sequence[Mapping[str, Any]], index: int = -1) -> str:
    """The Python that makes the failing example's call ``index`` (by default its last) into the implementation:
    written out where its arguments are small, and loaded from the saved file in any case."""
    index = index % len(calls)
    last = calls[index]
    which = (f"the last of the failing example's {len(calls)} call(s)" if index == len(calls) - 1 else
             f"call {index + 1} of the failing example's {len(calls)}, whose answer differs from the reference's")
    args = ", ".join(["*call['args']"] + (["**call['kwargs']"] if last["kwargs"] else []))
    written = inline_call(last)
    imports = [line for line in (written.splitlines()[:-1] if written else []) if line != "import torch"]
    return "\n".join([
        "import torch",
        *imports,
        "from specformer.runner.loading import load_implementation",
        f"impl = load_implementation({spec!r}).obj",
        *([f"result = {written.splitlines()[-1]}  # the same call, written out"] if written else []),
        f"saved = torch.load({str(path)!r}, weights_only=False)",
        f"call = saved['calls'][{index}]  # {which}: {last['method']}",
        f"result = impl.{last['method']}({args})",
    ])


def implementation_of(report: Mapping[str, Any], row: Mapping[str, Any], impl: str | None = None) -> str:
    """The ``--impl`` value that replays ``row``: ``impl`` (the user's ``--impl``) when given, else the
    built-in implementation the report names.

    A report is data: a file or module it names is never imported because it names it
    (:class:`ReplayError` saying to pass ``--impl``), nor is anything for a row that calls
    no implementation (``math``).
    """
    from specformer.adapters import BUILTIN

    specs = {str(i.get("name")): str(i.get("spec") or i.get("name")) for i in report.get("implementations") or []
             if isinstance(i, dict)}
    named = specs.get(str(row.get("implementation")), str(row.get("implementation")))
    if named == "math":  # specformer.runner.row.MATH, whose module imports torch
        raise ReplayError(f"{row_label(row)} calls no implementation: there are no inputs to save; rerun it with "
                          f"{row.get('reproduce') or 'its reproduce command'}")
    if impl:
        return impl
    if named in BUILTIN:
        return named
    shown = shlex.quote(named[:200]) if named.isprintable() else "PATH"
    raise ReplayError(f"{row_label(row)} ran on {named[:200]!r}, a file or module the report names, and a report's "
                      f"implementation is never imported: pass --impl {shown} (or where that implementation is now) "
                      "to replay the row on it")


def _row_problem(row: Mapping[str, Any]) -> str | None:
    """A device, dtype or seed of the report's row that cannot be run again."""
    from specformer.runner.selection import DEVICES

    seed = row.get("seed")
    if row.get("device") not in DEVICES or not isinstance(row.get("dtype"), str) \
            or not (seed is None or (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0)):
        return (f"{row_label(row)}: the report's row names no device of {', '.join(DEVICES)}, no dtype or an unusable "
                "seed")
    return None


def replay(report_path: str, wanted: str, out_dir: str, row_timeout: float = 120.0, impl: str | None = None) -> int:
    """Re-run the row, save the failing example's calls, print how to load them (module doc); an exit code.

    The row runs on ``impl`` (``--impl``) or on the built-in implementation the report names
    (:func:`implementation_of`); the report is read bounded (:mod:`specformer.report.reading`).
    """
    from specformer.report.reading import ReportFileError, read_report

    try:
        report = read_report(report_path)
    except ReportFileError as exc:
        raise ReplayError(str(exc)) from None
    row = choose_row(report, wanted)
    spec = implementation_of(report, row, impl)
    problem = _row_problem(row)
    if problem:
        raise ReplayError(problem)

    import torch

    from specformer.context import WorkerBackend
    from specformer.runner.plugin import bounded_shrinking, describe_failure
    from specformer.property import load_properties
    from specformer.runner.profiles import PROFILES
    from specformer.runner.row import run_property
    from specformer.runner.supervisor import WorkerPool, WorkerSettings

    props = load_properties()
    prop = props.get(str(row.get("property")))
    if prop is None:
        raise ReplayError(f"the report's property {row.get('property')!r} is not in this version of the suite")
    profile = str((report.get("environment") or {}).get("profile") or "ci")
    if profile not in PROFILES:
        raise ReplayError(f"the report's profile {profile[:80]!r} is none of {', '.join(PROFILES)}")
    print(f"replaying {row.get('claim')} {row_label(row)} ({row.get('outcome')} in the report)", flush=True)
    pool = WorkerPool(WorkerSettings())
    try:
        answer = pool.load(spec, row_timeout)
        if answer.get("status") != "loaded":
            raise ReplayError(f"{spec!r} could not be loaded: {answer.get('message', '')}")
        backend = RecordingBackend(WorkerBackend(pool, spec))
        with bounded_shrinking(prop, profile) as budget:
            budget.mark = backend.new_example
            result = run_property(prop, backend, str(answer.get("name") or spec), spec, str(row.get("device")),
                                  str(row.get("dtype")), profile, row_timeout,
                                  frozenset(str(op) for op in answer.get("operations", [])), seed=row.get("seed"))
    finally:
        pool.close()
    describe_failure(result, prop, budget)
    if budget.failing_mark is None:
        print(f"the row ended {result.outcome} this time, with no failing call to save: {result.message}")
        return 1
    calls = backend.examples[budget.failing_mark[0]]
    if not calls:
        print(f"the failing example made no call to the implementation ({result.outcome}: {result.message})")
        return 1
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / _file_name(row)
    chosen = budget.failing_call_index
    chosen = chosen if chosen is not None and chosen < len(calls) else len(calls) - 1
    saved = [{"method": c["method"], "args": tuple(c["args"]), "kwargs": dict(c["kwargs"])} for c in calls]
    torch.save({"claim": row.get("claim"), "property": row.get("property"), "implementation": spec,
                "device": row.get("device"), "dtype": row.get("dtype"), "message": result.message,
                "calls": saved, "call": saved[chosen],
                "counterexample": {key: value for key, value in (budget.failing[1] if budget.failing else {}).items()
                                   if type(value).__name__ != "Context"}}, path)
    print(f"{result.outcome}: {result.message}")
    print(f"\nsaved the {len(calls)} call(s) of the failing example to {path}; in Python:\n")
    print(snippet(path, spec, calls, chosen))
    print("\n# the inputs are on the CPU in the row's dtype; the suite moves them to "
          f"{row.get('device')} before calling (saved['device'])")
    return 0


def main(args: Any) -> int:
    """``specformer replay REPORT ROW [-o DIR] [--impl SPEC]`` (see :func:`replay`)."""
    try:
        return replay(args.report, args.row, args.output, args.row_timeout, getattr(args, "impl", None))
    except ReplayError as exc:
        print(f"specformer: error: {exc}", file=sys.stderr)
        return 2


__all__ = ["ReplayError", "choose_row", "implementation_of", "main", "replay"]
