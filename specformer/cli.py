"""The ``specformer`` command: list claims, run the suite.

``specformer claims [--json] [--topic T] [--check]``
    the catalogue; ``--json`` prints id, sources, kind, verdict, statement and the
    properties that check each claim; ``--check`` exits 1 when claims and properties
    disagree (dangling ids, unchecked or unrefuted claims).

``specformer run [--impl SPEC]... [--claims GLOB]... [--device cpu|cuda|all]
[--profile quick|ci|thorough] [--report PATH] [--jobs N] [-- PYTEST-ARGS]``
    runs the properties through pytest (the same options work on ``pytest --pyargs
    specformer.properties``), each implementation in its own worker process, prints
    progress and a summary, and writes the JSON report.

Exit codes of ``specformer run`` (:data:`EXIT_CODES`):

* 0: the run completed and every claim ended as expected;
* 1: the run completed and some claim did not (or an implementation failed to load);
* 2: usage error (bad option, missing implementation file);
* 3: the run did not complete (interrupted, or the harness itself failed);
* 4: nothing was selected (no row to run).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, Sequence

from specformer.adapters import BUILTIN, DEFAULT_IMPLEMENTATIONS
from specformer.claims import ClaimError, check_consistency, load_claims
from specformer.loading import file_target
from specformer.property import load_properties

DEFAULT_REPORT = os.path.join("reports", "report.json")
#: Exit codes of ``specformer run``.
EXIT_CODES = {"ok": 0, "not as expected": 1, "usage": 2, "incomplete": 3, "nothing selected": 4}
#: The names of :data:`specformer.profiles.PROFILES`, without importing Hypothesis before
#: pytest starts (pytest must import it first to rewrite its assertions).
PROFILE_NAMES = ("quick", "ci", "thorough")


def _claims(args: argparse.Namespace) -> int:
    claims = load_claims()
    props = load_properties()
    if args.check:
        problems = check_consistency(claims, props.values())
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{len(claims)} claims, {len(props)} properties: "
              f"{'consistent' if not problems else f'{len(problems)} problems'}")
        return 1 if problems else 0
    selected = [c for c in claims.values() if not args.topic or c.topic == args.topic]
    if args.json:
        out = []
        for claim in selected:
            checks = [{"property": p.qualname, "expect": p.expect, "needs": list(p.needs)}
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


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the ``run`` options, checked without importing any implementation."""
    for spec in args.impl or []:
        path = file_target(BUILTIN.get(spec, spec))
        if path is not None and not path.is_file():
            return f"implementation file {str(path)!r} does not exist (--impl {spec!r})"
    if args.jobs < 1:
        return f"--jobs must be at least 1, got {args.jobs}"
    if args.memory_limit < 0:
        return f"--memory-limit must be 0 (none) or a number of MiB, got {args.memory_limit}"
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
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def _run(args: argparse.Namespace, extra: list[str]) -> int:
    problem = _usage_problem(args)
    if problem:
        print(f"specformer: error: {problem}", file=sys.stderr)
        return EXIT_CODES["usage"]
    from specformer import forkserver

    # torch's import in the fork server overlaps pytest's start here; with several jobs this
    # process only loads implementations, and each job's process has a warmed server of its own
    forkserver.shared(warm=args.jobs == 1).launch()

    import pytest

    import specformer.properties

    impls = args.impl or list(DEFAULT_IMPLEMENTATIONS)
    report_path = Path(args.report)
    pytest_args = [os.path.dirname(specformer.properties.__file__),
                   "-c", os.devnull, "--rootdir", os.getcwd(), "-p", "no:cacheprovider",
                   # this command imported specformer before pytest could rewrite its asserts;
                   # nothing is lost: every assertion of the properties carries its own message
                   "-W", "ignore::pytest.PytestAssertRewriteWarning",
                   "-v" if args.verbose else "-q", "--no-header",
                   "--device", args.device, "--profile", args.profile, "--report", str(report_path),
                   "--row-timeout", str(args.row_timeout), "--threads", str(args.threads),
                   "--memory-limit", str(args.memory_limit)]
    if args.jobs > 1:
        pytest_args += ["-n", str(args.jobs), "--dist", "load"]
    else:
        pytest_args += ["-p", "no:xdist"]
    for flag, values in (("--impl", impls), ("--claims", args.claims), ("--property", args.property),
                         ("--dtype", args.dtype)):
        for value in values or []:
            pytest_args += [flag, value]
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a polite kill ends the run as interrupted
    try:
        status = int(pytest.main(pytest_args + extra))
    finally:
        signal.signal(signal.SIGTERM, previous)
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        report = None
    return exit_code(report, status)


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = argparse.ArgumentParser(prog="specformer", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    claims = sub.add_parser("claims", help="list the claims of the specification")
    claims.add_argument("--json", action="store_true", help="print the claims as JSON")
    claims.add_argument("--topic", help="only this topic (attention, multihead, scaling, masking, ...)")
    claims.add_argument("--check", action="store_true", help="check claims against properties; exit 1 on problems")

    run = sub.add_parser("run", help="run the conformance suite")
    run.add_argument("--impl", action="append", metavar="SPEC",
                     help="reference | torch-sdpa | torch-mha | module:attr | path/file.py[:attr] (repeatable; "
                          f"default: {', '.join(DEFAULT_IMPLEMENTATIONS)})")
    run.add_argument("--claims", action="append", metavar="GLOB", help="claim ids to run, e.g. 'masking.*'")
    run.add_argument("--property", action="append", metavar="NAME", help="only this property (topic.function)")
    run.add_argument("--device", default="cpu", choices=["cpu", "cuda", "all"])
    run.add_argument("--dtype", action="append", help="only these dtypes")
    run.add_argument("--profile", default="ci", choices=PROFILE_NAMES)
    run.add_argument("--report", default=DEFAULT_REPORT, metavar="PATH", help=f"default: {DEFAULT_REPORT}")
    run.add_argument("--row-timeout", type=float, default=120.0, metavar="SECONDS")
    run.add_argument("--threads", type=int, default=1, metavar="N",
                     help="torch threads, in the checker and in each worker (default: 1)")
    run.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                     help="rows run in N processes at once (pytest-xdist; default: 1)")
    run.add_argument("--memory-limit", type=int, default=4096, metavar="MIB",
                     help="memory limit of each implementation's worker, in MiB; 0 for none (default: 4096)")
    run.add_argument("-v", "--verbose", action="store_true", help="one line per row")
    return parser


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
        return _run(args, extra)
    except ClaimError as exc:
        print(f"specformer: invalid specification: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
