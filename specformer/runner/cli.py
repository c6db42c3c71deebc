"""The ``specformer`` command: list claims, run the suite.

``specformer claims [--json] [--topic T] [--check]``
    the catalogue; ``--json`` prints id, sources, kind, verdict, statement and the
    properties that check each claim; ``--check`` exits 1 when claims and properties
    disagree (dangling ids, unchecked or unrefuted claims).

``specformer run [--impl SPEC]... [--claims GLOB]... [--topic T]... [--device cpu|cuda|all]
[--profile quick|ci|thorough] [--seed N] [--deviations FILE]... [--failed REPORT]
[--report PATH] [--junit PATH] [--jobs N] [-- PYTEST-ARGS]``
    runs the properties through pytest (the same options work on ``pytest --pyargs
    specformer.properties``), each implementation in its own worker process, prints
    progress and a summary (a block per row not as expected), and writes the JSON report
    (and, with ``--junit``, JUnit XML). Options are checked before anything runs: a
    selection that matches nothing, CUDA asked for where there is none, a misspelt
    implementation name or an unusable report path is a usage error.

``specformer run ... --shard K/N`` and ``specformer merge A.json B.json ... -o OUT``
    run the K-th of N disjoint parts of the rows, and combine the shards' reports into
    the report of the whole run (:mod:`specformer.runner.sharding`).

``specformer site [--report R]... -o DIR``
    builds the documentation site of the given reports, or of none (:mod:`specformer.site.command`).

``specformer protocol [FAMILY]``
    prints a family's protocol: operations, signatures, conventions, worked examples
    (:mod:`specformer.protocol.describe`).

``specformer diff A.json B.json [--ignore-device | --match-device] [--json]``
    the rows whose outcome differs between two reports (:mod:`specformer.report.diff`).

Exit codes of ``specformer run`` (:data:`EXIT_CODES`):

* 0: the run completed and every claim ended as expected;
* 1: the run completed and some claim did not (or an implementation failed to load, or one
  named with ``--impl`` had no row checked);
* 2: usage error (bad option, missing implementation file, a selection that matches
  nothing, a malformed deviations file, ``--failed`` given something not a report): no
  report is written, and an earlier one at ``--report`` is marked ``stale`` (``ok: false``);
* 3: the run did not complete (interrupted, or the harness itself failed);
* 4: nothing was selected (no row to run).
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import importlib.metadata
import importlib.util
import json
import os
import shlex
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

from specformer.runner import selection
from specformer.adapters import BUILTIN, DEFAULT_IMPLEMENTATIONS
from specformer.runner.loading import file_target
from specformer.runner.options import number_problem

# Imported where used, so that ``--help`` and ``specformer claims`` answer without
# importing torch or Hypothesis: specformer.report.deviations (imports the runner),
# specformer.claims (YAML, JSON schema), specformer.property (its modules import torch).

DEFAULT_REPORT = os.path.join("reports", "report.json")
#: Exit codes of ``specformer run``.
EXIT_CODES = {"ok": 0, "not as expected": 1, "usage": 2, "incomplete": 3, "nothing selected": 4}
#: The names of :data:`specformer.runner.profiles.PROFILES`, without importing Hypothesis before
#: pytest starts (pytest must import it first to rewrite its assertions).
PROFILE_NAMES = ("quick", "ci", "thorough")


def _claims(args: argparse.Namespace) -> int:
    from specformer.claims import check_consistency, load_claims

    claims = load_claims()
    if args.check:
        from specformer.property import load_properties

        props = load_properties()
        problems = check_consistency(claims, props.values())
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{len(claims)} claims, {len(props)} properties: "
              f"{'consistent' if not problems else f'{len(problems)} problems'}")
        return 1 if problems else 0
    props = _catalogue_properties()
    problem = _claims_selection_problem(args, claims, props)
    if problem:
        return _usage(problem)
    selected = [c for c in claims.values() if selection.topic_selects(c.id, c.family, _topics(args))]
    if args.json:
        out = []
        for claim in selected:
            checks = [{"property": p.qualname, "expect": p.expect, "needs": list(p.needs), "about": p.about}
                      for p in props.values() if p.claim == claim.id]
            out.append({**claim.to_json(), "properties": checks})
        json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    width = max((len(c.id) for c in selected), default=10)
    for claim in selected:
        n = sum(p.claim == claim.id for p in props.values())
        print(f"{claim.id:{width}s}  {claim.verdict:15s}  {claim.kind:16s}  {n} prop  {claim.title}")
    print(f"\n{len(selected)} claims")
    return 0


def _catalogue_properties() -> dict[str, Any]:
    """The properties' metadata: read from their source when it can be (fast), else imported."""
    from specformer.property_index import static_properties

    props = static_properties()
    if props is None:
        from specformer.property import load_properties

        props = load_properties()
    return props


def _claims_selection_problem(args: argparse.Namespace, claims: dict[str, Any], props: dict[str, Any]) -> str | None:
    """``claims --topic T``: a topic that matches nothing is a usage error, as for ``run --topic T``."""
    if not args.topic:
        return None
    problems = selection.selection_problems(
        {c.id: c.family for c in claims.values()}, {q: (p.claim, p.name) for q, p in props.items()},
        None, None, _topics(args), None, {})
    return "\n".join(problems) or None


def _topics(args: argparse.Namespace) -> list[str] | None:
    return [args.topic] if isinstance(args.topic, str) else args.topic


def version() -> str:
    """The installed distribution's version, else the package's own."""
    try:
        return importlib.metadata.version("specformer")
    except importlib.metadata.PackageNotFoundError:
        import specformer

        return getattr(specformer, "__version__", "unknown")


def _impl_problem(spec: str) -> str | None:
    """A missing file, or a bare name that is neither built in nor importable (with a did-you-mean)."""
    path = file_target(BUILTIN.get(spec, spec))
    if path is not None:
        return None if path.is_file() else f"implementation file {str(path)!r} does not exist (--impl {spec!r})"
    if spec in BUILTIN or "." in spec or ":" in spec or importlib.util.find_spec(spec) is not None:
        return None
    close = difflib.get_close_matches(spec, list(BUILTIN), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return (f"unknown implementation {spec!r}: {hint}built-in: {', '.join(BUILTIN)}; "
            "or name your own as module:attribute or path/file.py")


def _spec_syntax_problem(spec: str) -> str | None:
    """An ``--impl`` value that names nothing: empty, ``:``, ``module:`` with a bad attribute."""
    if not spec.strip():
        return "--impl needs a value: a built-in name, module:attribute or path/file.py[:attribute]"
    target, sep, attribute = spec.rpartition(":")
    if not sep or (len(target) == 1 and target.isalpha()):  # no attribute, or a Windows drive letter
        return None
    if not target.strip():
        return (f"--impl {spec!r} names no module or file before ':' "
                "(give module:attribute or path/file.py:attribute)")
    if attribute and not attribute.isidentifier():
        return f"--impl {spec!r}: {attribute!r} after ':' is not a Python attribute name"
    if file_target(spec) is None and not all(part.isidentifier() for part in target.split(".")):
        return f"--impl {spec!r}: {target!r} is neither a module name (dotted identifiers) nor a file path"
    return None


def _cap_jobs(args: argparse.Namespace, rows_file: Path | None) -> None:
    """Lower ``--jobs`` to the number of rows the selection can have (one line says so)."""
    if args.jobs <= 1:
        return
    from specformer.runner import devices
    from specformer.property import load_properties

    if rows_file is not None:
        bound = len(json.loads(rows_file.read_text(encoding="utf-8")))
    else:
        globs = selection.claim_globs(args.claims)
        names = args.property or []
        impls = len(dict.fromkeys(args.impl or DEFAULT_IMPLEMENTATIONS))
        wanted = set(args.dtype or [])
        bound = 0
        for prop in load_properties().values():
            if ((globs and not any(fnmatch.fnmatchcase(prop.claim, g) for g in globs))
                    or (names and prop.qualname not in names and prop.name not in names)
                    or not selection.topic_selects(prop.claim, prop.family, args.topic)):
                continue
            for device in devices.requested_devices(args.device):
                dtypes = [d for d in devices.DEVICE_DTYPES[device]
                          if (not prop.dtypes or d in prop.dtypes) and (not wanted or d in wanted)]
                if prop.needs:
                    bound += impls * len(dtypes)
                elif _math_rows(args):
                    bound += min(len(dtypes), 1 if device == "cpu" else 0)
    if args.jobs > max(bound, 1):
        print(f"specformer: --jobs {args.jobs} capped at {max(bound, 1)}, the number of rows selected")
        args.jobs = max(bound, 1)


def _shard_problem(args: argparse.Namespace) -> str | None:
    """A ``--shard`` that is not ``K/N`` with ``1 <= K <= N``."""
    if args.shard is None:
        return None
    from specformer.runner.sharding import parse_shard

    try:
        parse_shard(args.shard)
    except ValueError as exc:
        return str(exc)
    return None


def _merge(args: argparse.Namespace) -> int:
    """``specformer merge A.json B.json ... -o OUT``: shard reports (or device legs) as one report.

    The reports are read bounded (:mod:`specformer.report.reading`); ``-o`` may not be one of them.
    """
    from specformer.report.reading import ReportFileError, read_report
    from specformer.runner import sharding

    problem = _output_is_input(args.output, args.reports) or _path_problem("-o", args.output)
    if problem:
        return _usage(problem)
    reports = []
    for path in args.reports:
        try:
            reports.append((path, read_report(path)))
        except ReportFileError as exc:
            return _usage(f"cannot merge: {exc}")
    try:
        rows, implementations, environment = sharding.merge(reports)
    except sharding.MergeError as exc:
        return _usage(f"cannot merge: {exc}")
    from specformer.report.model import build_report, write_report

    duration = sum(_seconds((r.get("summary") or {}).get("duration_s")) for _, r in reports)
    command = shlex.join(["specformer", "merge", *args.reports, "-o", args.output])
    merged = build_report(rows, implementations, str(environment.get("profile")), duration, complete=True,
                          command=command, environment_extra={**environment, "command": command})
    write_report(merged, Path(args.output))
    summary = merged["summary"]
    print(f"merged {len(reports)} reports: {summary['rows']} rows, "
          f"{'every claim ended as expected' if summary['ok'] else 'SOME CLAIMS DID NOT END AS EXPECTED'} "
          f"-> {args.output}")
    return EXIT_CODES["ok"] if summary["ok"] else EXIT_CODES["not as expected"]


def _output_is_input(output: str, inputs: Sequence[str]) -> str | None:
    """``merge -o`` naming one of the reports it merges (the same path, or a link to it): it would be replaced."""
    target = Path(output)
    for path in inputs:
        try:
            same = target.resolve() == Path(path).resolve() or (target.exists() and target.samefile(path))
        except (OSError, RuntimeError):  # a path that cannot be resolved is no input's
            same = False
        if same:
            return f"-o {output!r} is the report {path!r} being merged; write the merged report elsewhere"
    return None


def _seconds(value: Any) -> float:
    """A report's ``duration_s``; 0 for anything that is not a number."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _path_problem(option: str, value: str) -> str | None:
    """An output path that is a folder, or whose folder cannot be created or written."""
    path = Path(value)
    if path.is_dir():
        return f"{option} {value!r} is a directory; give a file path"
    parent = path.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        return f"{option} {value!r}: its folder {str(parent)!r} cannot be created or written ({exc.strerror or exc})"
    return None


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the ``run`` options, checked without importing any implementation."""
    from specformer.report import deviations

    for spec in args.impl or []:
        problem = _spec_syntax_problem(spec) or _impl_problem(spec)
        if problem:
            return problem
    problem = number_problem(args.row_timeout, args.memory_limit, args.threads, args.jobs, args.seed,
                             args.row_backstop)
    if problem:
        return problem
    problem = _shard_problem(args)
    if problem:
        return problem
    for option, value in (("--report", args.report), ("--junit", args.junit)):
        problem = value and _path_problem(option, value)
        if problem:
            return problem
    try:
        args.deviation_entries = deviations.load_files(args.deviations or [])
    except deviations.DeviationError as exc:
        return str(exc)
    return None


def _selection_problem(args: argparse.Namespace) -> str | None:
    """A selection that matches nothing, or CUDA asked for where there is none (imports torch)."""
    from specformer.report import deviations
    from specformer.runner import devices
    from specformer.claims import load_claims
    from specformer.property import load_properties

    if args.device == "cuda" and not devices.available("cuda"):
        return ("--device cuda: no CUDA device is available on this machine (torch.cuda.is_available() is "
                "False); use --device cpu, or --device all to report the CUDA rows as skipped")
    claims, props = load_claims(), load_properties()
    for warning in deviations.unmatched_warnings(getattr(args, "deviation_entries", []), claims, props):
        print(f"specformer: warning: {warning}", file=sys.stderr)
    problems = selection.selection_problems(
        {c.id: c.family for c in claims.values()}, {q: (p.claim, p.name) for q, p in props.items()},
        args.claims, args.property, args.topic, args.dtype,
        {d: devices.DEVICE_DTYPES[d] for d in devices.requested_devices(args.device)})
    return "\n".join(problems) or None


def _failed_selection(args: argparse.Namespace, rows_file: Path) -> str | None:
    """For ``--failed REPORT``: write the rows to rerun and set impls, devices and profile from it.

    Returns a message to print when there is nothing to rerun, else ``None``. The rows run on
    the built-in implementations the report names and on those ``--impl`` gives, never on a
    file or module because the report names it (:func:`selection.confirmed_rows`).
    """
    report = selection.read_report(args.failed)
    rows = selection.failed_rows(report, args.failed)
    if not rows:
        return f"{args.failed}: every row ended as expected; nothing to rerun"
    rows = selection.confirmed_rows(rows, args.impl, args.failed)
    rows_file.write_text(json.dumps(rows), encoding="utf-8")
    args.impl = args.impl or sorted({r["spec"] for r in rows if r["spec"] != "math"}) or ["reference"]
    used = {r["device"] for r in rows}
    if used:  # none: no failing row ran on the given --impl, and the run selects nothing
        args.device = "all" if len(used) > 1 else used.pop()
    args.profile = args.profile or (report.get("environment") or {}).get("profile")
    if args.profile not in PROFILE_NAMES:
        args.profile = "ci"
    return None


def exit_code(report: dict[str, Any] | None, pytest_status: int) -> int:
    """The command's exit code from the final report (see :data:`EXIT_CODES`)."""
    if pytest_status == 4:  # pytest's usage error
        return EXIT_CODES["usage"]
    if report is None or report.get("summary", {}).get("state") != "complete":
        return EXIT_CODES["incomplete"]
    summary = report["summary"]
    if summary["ok"]:
        return EXIT_CODES["ok"] if summary["rows"] else EXIT_CODES["nothing selected"]
    return EXIT_CODES["not as expected"]


def _interrupt(signum: int, frame: Any) -> None:
    from specformer.runner import interrupt

    reason = f"signal {signal.Signals(signum).name}"
    interrupt.request(reason)  # raised again where the checker waits, should this one be dropped
    raise KeyboardInterrupt(reason)


def _usage(problem: str) -> int:
    print(f"specformer: error: {problem}", file=sys.stderr)
    return EXIT_CODES["usage"]


#: The largest earlier report a refused run reads to mark it stale (a larger file is left as it is).
STALE_READ_LIMIT = 256 * 2**20


def _refused(args: argparse.Namespace, problem: str) -> int:
    """A usage error of ``run``: print it, and mark an earlier report at ``--report`` stale, so that
    nothing reading that file (a CI step) takes an earlier verdict for this run's."""
    code = _usage(problem)
    _mark_stale(getattr(args, "report", None), problem)
    return code


def _mark_stale(path: str | None, problem: str) -> None:
    """Set ``state: stale`` and ``ok: false`` in the specformer report at ``path``, saying why; a file that
    is not one (or is missing, or too large) is left alone."""
    from specformer.report.model import SCHEMA_NAME, write_report

    if not path:
        return
    report_path = Path(path)
    try:
        if not report_path.is_file() or report_path.stat().st_size > STALE_READ_LIMIT:
            return
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return
    summary = report.get("summary") if isinstance(report, dict) and report.get("schema") == SCHEMA_NAME else None
    if not isinstance(summary, dict):
        return
    reason = problem.strip().splitlines()[0][:300] if problem.strip() else "a usage error"
    summary.update(state="stale", ok=False, stale=f"a later `specformer run` with this --report was refused ({reason}); "
                                                  "this report is an earlier run's")
    try:
        write_report(report, report_path)
    except OSError:
        return
    print(f"specformer: {path} is marked stale: it is an earlier run's report, not this one's", file=sys.stderr)


def _math_rows(args: argparse.Namespace) -> bool:
    """Whether the run includes rows that call no implementation (see ``--with-math``)."""
    return bool(args.with_math or not getattr(args, "impl_given", args.impl) or args.failed)


def _run(args: argparse.Namespace, extra: list[str]) -> int:
    args.impl_given = bool(args.impl)
    problem = _usage_problem(args)
    if problem:
        return _refused(args, problem)
    with tempfile.TemporaryDirectory(prefix="specformer-") as scratch:
        rows_file = Path(scratch) / "rows.json"
        if args.failed:
            try:
                nothing = _failed_selection(args, rows_file)
            except selection.SelectionError as exc:
                return _refused(args, str(exc))
            if nothing:
                print(nothing)
                return EXIT_CODES["ok"]
        args.profile = args.profile or "ci"
        return _run_pytest(args, extra, rows_file if args.failed else None)


def _run_pytest(args: argparse.Namespace, extra: list[str], rows_file: Path | None) -> int:
    from specformer.runner import environment

    # before the fork server starts and before pytest: every thread pool pinned, our plugins only
    with environment.owned(args.threads, args.jobs):
        return _run_pytest_owned(args, extra, rows_file)


def _run_pytest_owned(args: argparse.Namespace, extra: list[str], rows_file: Path | None) -> int:
    from specformer.runner import confine, forkserver

    # what a worker leaves behind comes back here, to be ended with the run (not what was here before)
    before = frozenset(forkserver.descendants())
    forkserver.become_subreaper()
    # the workers protect this process and every process under it from the implementations (runner.confine)
    os.environ[confine.CONTROLLER_VARIABLE] = str(os.getpid())
    # torch's import in the fork server overlaps pytest's start here; with several jobs this
    # process only loads implementations, and each job's process has a warmed server of its own
    forkserver.shared(warm=args.jobs == 1).launch()

    problem = _selection_problem(args)
    if problem:
        forkserver.shutdown_shared()
        return _refused(args, problem)
    _cap_jobs(args, rows_file)

    import pytest

    import specformer.properties

    impls = args.impl or list(DEFAULT_IMPLEMENTATIONS)
    report_path = Path(args.report)
    pytest_args = [os.path.dirname(specformer.properties.__file__),
                   "-c", os.devnull, "--rootdir", os.getcwd(), "-p", "no:cacheprovider",
                   # this command imported specformer before pytest could rewrite its asserts;
                   # nothing is lost: every assertion of the properties carries its own message
                   "-W", "ignore::pytest.PytestAssertRewriteWarning",
                   # one summary, specformer's: pytest's own sections (-rN: no short summary; no tracebacks;
                   # no warnings section) and, at -qq, its count line are left out. Not --no-summary: before
                   # pytest 9.2 it also skipped every plugin's terminal summary, specformer's with them
                   "-v" if args.verbose else "-qq", "-rN", "--disable-warnings", "--no-header", "--tb=no",
                   # the properties' assertions carry their own messages; pytest's rewriting adds
                   # "+ where <built-in method ...>" lines to them
                   "--assert=plain",
                   "--device", args.device, "--profile", args.profile, "--report", str(report_path),
                   "--row-timeout", str(args.row_timeout),
                   *(["--row-backstop", str(args.row_backstop)] if args.row_backstop is not None else []),
                   "--threads", str(args.threads),
                   "--memory-limit", str(args.memory_limit)]
    if args.jobs > 1:
        # the plugin's scheduler sends an implementation's rows to one job (see
        # plugin.pytest_xdist_make_scheduler); "load" is the fallback it keeps for small runs
        pytest_args += ["-n", str(args.jobs), "--dist", "load"]
    for flag, values in (("--impl", impls), ("--claims", args.claims), ("--property", args.property),
                         ("--dtype", args.dtype), ("--topic", args.topic), ("--deviations", args.deviations),
                         ("--seed", None if args.seed is None else [str(args.seed)]),
                         ("--rows", rows_file and [str(rows_file)])):
        for value in values or []:
            pytest_args += [flag, value]
    if args.strict_deviations:
        pytest_args.append("--strict-deviations")
    if not args.impl_given:
        pytest_args.append("--default-impls")
    if args.shard:
        pytest_args += ["--shard", args.shard]
    if _math_rows(args):
        pytest_args.append("--with-math")
    from specformer.runner import interrupt

    interrupt.clear()
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a polite kill ends the run as interrupted
    status, report = 3, None
    try:
        status = int(pytest.main(pytest_args + extra))
        if interrupt.requested():  # a stop that came too late for a row to see it still ends the run so
            status = int(pytest.ExitCode.INTERRUPTED)
    finally:
        signal.signal(signal.SIGTERM, previous)
        report = _final_report(report_path, before)
        forkserver.become_subreaper(False)
        if args.junit:
            from specformer.report.junit import write_junit

            write_junit(report, Path(args.junit))
    code = exit_code(report, status)
    if code == EXIT_CODES["usage"] and report is None:  # refused by the plugin before its report started
        _mark_stale(args.report, "a usage error; see above")
    return code


def _final_report(report_path: Path, before: frozenset[int] = frozenset()) -> dict[str, Any] | None:
    """End every process the run left, then write the run's final report again, last.

    The report comes from the plugin's memory, never from the file, which a process left
    behind by an implementation could have rewritten; the file is replaced atomically.
    A run that wrote no final report gets ``None`` (the run is incomplete), and a file
    that claims more is marked interrupted.
    """
    from specformer.runner import forkserver
    from specformer.report.model import write_report

    forkserver.shutdown_shared()
    forkserver.end_descendants(exclude=before)
    plugin = sys.modules.get("specformer.runner.plugin")
    reports = getattr(plugin, "FINAL_REPORTS", {})
    key = str(report_path.resolve())
    if key not in reports:  # the run never started its report (a usage error): the file is not ours
        return None
    report = reports.pop(key)
    if report is not None:
        write_report(report, report_path)
        _verify_report(report, report_path, before)
        return report
    try:
        on_disk = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    summary = on_disk.get("summary") if isinstance(on_disk, dict) else None
    if isinstance(summary, dict) and summary.get("state") != "running":
        summary.update(state="interrupted", ok=False, complete=False)
        write_report(on_disk, report_path)
    return None


def _verify_report(report: dict[str, Any], report_path: Path, before: frozenset[int]) -> None:
    """Make sure the file holds the run's report after its last write: end whatever process is left
    once more, read the file back, and write it again (saying so) if anything changed it."""
    from specformer.runner import forkserver
    from specformer.report.model import report_text, write_report

    forkserver.end_descendants(timeout_s=10.0, exclude=before)
    try:
        intact = report_path.read_bytes() == report_text(report)
    except OSError:
        intact = False
    if not intact:
        print(f"specformer: warning: {report_path} was changed or removed by another process after the run "
              "wrote it; the run's report is written again", file=sys.stderr)
        write_report(report, report_path)


def _plain(text: str) -> str:
    """reStructuredText markup (````code````, ``:data:`X```) as plain text for the terminal."""
    import re

    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def _help_epilog() -> str:
    """The end of ``specformer --help``: a first run and the exit codes, in plain text."""
    codes = ", ".join(f"{code} {meaning}" for meaning, code in EXIT_CODES.items())
    return ("examples:\n"
            "  specformer claims --topic masking        the claims of one topic\n"
            "  specformer new attention -o mine.py      a skeleton adapter to fill in\n"
            "  specformer run --impl mine.py            check it (only its rows)\n"
            "  specformer replay REPORT ROW             a failing row's inputs, to debug in Python\n"
            f"\nexit codes of run: {codes}")


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = argparse.ArgumentParser(prog="specformer", description=_plain(__doc__.split("\n\n")[0]),
                                     epilog=_help_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"specformer {version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    claims = sub.add_parser("claims", help="list the claims of the specification")
    claims.add_argument("--json", action="store_true", help="print the claims as JSON")
    claims.add_argument("--topic", help="only this topic (attention, multihead, scaling, masking, ...)")
    claims.add_argument("--check", action="store_true", help="check claims against properties; exit 1 on problems")

    run = sub.add_parser("run", help="run the conformance suite")
    run.add_argument("--impl", action="append", metavar="SPEC",
                     help=f"{' | '.join(BUILTIN)} | module:attr | path/file.py[:attr] (repeatable; "
                          f"default: {', '.join(DEFAULT_IMPLEMENTATIONS)})")
    run.add_argument("--claims", action="append", metavar="GLOB", help="claim ids to run, e.g. 'masking.*'")
    run.add_argument("--property", action="append", metavar="NAME", help="only this property (topic.function)")
    run.add_argument("--device", default="cpu", choices=["cpu", "cuda", "all"])
    run.add_argument("--dtype", action="append", help="only these dtypes")
    run.add_argument("--topic", action="append", metavar="TOPIC",
                     help="only claims of this spec topic: 'masking' or 'attention/masking' (repeatable)")
    run.add_argument("--profile", default=None, choices=PROFILE_NAMES,
                     help="default: ci (with --failed: the report's profile)")
    run.add_argument("--seed", type=int, default=None, metavar="N",
                     help="the seed of every row under the random profile (thorough); default: one per row")
    run.add_argument("--deviations", action="append", metavar="FILE",
                     help="TOML file of known deviations (repeatable); see the README")
    run.add_argument("--strict-deviations", action="store_true",
                     help="listed deviations that no longer deviate (fixed) fail the run")
    run.add_argument("--failed", metavar="REPORT",
                     help="rerun exactly the rows of REPORT that did not end as expected")
    run.add_argument("--junit", metavar="PATH", help="also write JUnit XML (one testcase per row)")
    run.add_argument("--report", default=DEFAULT_REPORT, metavar="PATH", help=f"default: {DEFAULT_REPORT}")
    run.add_argument("--row-timeout", type=float, default=120.0, metavar="SECONDS",
                     help="CPU seconds a row may use, the checker's and the implementation's together (default: 120)")
    run.add_argument("--row-backstop", type=float, default=None, metavar="SECONDS",
                     help="wall-clock seconds a row may last, for an implementation that sleeps or is starved "
                          "(default: 5 times --row-timeout)")
    run.add_argument("--threads", type=int, default=1, metavar="N",
                     help="threads of every pool (torch, OpenMP, MKL, OpenBLAS, rayon), in the checker and in "
                          "each worker (default: 1)")
    run.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                     help="rows run in N processes at once (pytest-xdist; default: 1)")
    run.add_argument("--memory-limit", type=int, default=4096, metavar="MIB",
                     help="memory limit of each implementation's worker, in MiB of memory it really uses "
                          "with every process it starts (resident anonymous and shared memory, shared pages "
                          "divided among their processes, and shared-memory files it writes in /dev/shm; "
                          "reserved address space and library files do not count); 0 for none (default: 4096)")
    run.add_argument("--with-math", action="store_true",
                     help="with --impl: also run the rows that call no implementation (they run once, in the "
                          "suite's own run without --impl)")
    run.add_argument("-v", "--verbose", action="store_true", help="one line per row")
    run.add_argument("--shard", metavar="K/N", default=None,
                     help="run only the K-th of N disjoint, balanced parts of the selected rows (one CI job per "
                          "part); combine the reports with `specformer merge`")

    merge = sub.add_parser("merge", help="combine the reports of shards (or device legs) into one report")
    merge.add_argument("reports", nargs="+", metavar="REPORT", help="the reports to merge")
    merge.add_argument("-o", "--output", required=True, metavar="PATH", help="where to write the merged report")

    from specformer.site.command import add_parser

    add_parser(sub)
    from specformer.report.diff import add_parser as add_diff_parser

    add_diff_parser(sub)
    _add_new_parser(sub)
    _add_replay_parser(sub)
    protocol = sub.add_parser("protocol", help="print a family's protocol: operations, conventions, examples")
    protocol.add_argument("family", nargs="?", metavar="FAMILY", help=f"one of {', '.join(FAMILY_NAMES)} "
                                                                        "(default: list the families)")
    return parser


def _add_replay_parser(sub: Any) -> None:
    replay = sub.add_parser("replay", help="save a failing row's inputs and print the Python that calls it",
                            description="Run a failing row of a report again, save the inputs of its failing "
                                        "example (torch.save) and print a few lines of Python that load them "
                                        "and call the implementation.")
    replay.add_argument("report", metavar="REPORT", help="a report written by `specformer run`")
    replay.add_argument("row", metavar="ROW", help="the failing row: its number among the report's failing rows "
                                                   "(from 1), or text of 'claim property[impl/device/dtype]'")
    replay.add_argument("-o", "--output", default="replay", metavar="DIR", help="where to save (default: replay)")
    replay.add_argument("--impl", metavar="SPEC",
                        help="the implementation to replay the row on (default: the built-in one the report names; "
                             "a file or module the report names is never imported without this)")
    replay.add_argument("--row-timeout", type=float, default=120.0, metavar="SECONDS")


#: The families of the protocol, without importing it (``specformer new`` checks this list against it).
FAMILY_NAMES = ("attention", "positions", "blocks", "tokenization", "embeddings")


def _add_new_parser(sub: Any) -> None:
    new = sub.add_parser("new", help="write a skeleton adapter for a family, to fill in",
                         description="Write a commented skeleton adapter: every operation of the family's "
                                     "protocol with its signature and documentation, each marked "
                                     "@not_implemented (not provided) until you write it.")
    new.add_argument("family", choices=FAMILY_NAMES, help="the family whose operations to write")
    new.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: print it); an existing "
                                                           "file is not overwritten")
    new.add_argument("--arrays", choices=("torch", "jax", "numpy"), default="torch",
                     help="the arrays your operations take and answer with (default: torch); jax and numpy write "
                          "a skeleton that declares them, and the worker converts")


def _new(args: argparse.Namespace) -> int:
    """``specformer new FAMILY [-o FILE]``."""
    from specformer.runner.skeleton import skeleton

    text = skeleton(args.family, args.arrays)
    if not args.output:
        sys.stdout.write(text)
        return 0
    path = Path(args.output)
    if path.exists():
        return _usage(f"{args.output!r} exists; give another file name (nothing was written)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        return _usage(f"cannot write {args.output!r}: {exc.strerror or exc}")
    print(f"wrote {path}: an adapter for the {args.family} family, every operation marked @not_implemented")
    print(f"write the ones you provide (remove their marker), then: specformer run --impl {path}")
    return 0


def _claim_error() -> type[Exception]:
    from specformer.claims import ClaimError

    return ClaimError


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``specformer`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[: argv.index("--")]
    args = build_parser().parse_args(argv)
    try:
        if args.command == "claims":
            return _claims(args)
        if args.command == "merge":
            return _merge(args)
        if args.command == "new":
            return _new(args)
        if args.command == "replay":
            from specformer.runner.replay import main as replay

            return replay(args)
        if args.command == "diff":
            from specformer.report.diff import main as diff

            return diff(args)
        if args.command == "protocol":
            from specformer.protocol.describe import main as describe

            return describe(args)
        if args.command == "site":
            from specformer.site.command import run_site

            return run_site(args)
        return _run(args, extra)
    except _claim_error() as exc:
        print(f"specformer: invalid specification: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
