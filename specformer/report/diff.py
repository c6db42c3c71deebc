"""Two reports compared row by row: ``specformer diff A.json B.json``.

It loads two reports (``.json`` or gzip-compressed ``.json.gz``, bounded in size and nesting
by :mod:`specformer.report.reading`), matches their rows by
identity (property, implementation, device, dtype: the claim follows from the property)
and shows the rows whose outcome differs, grouped by implementation and then claim, with
both outcomes and the shortened messages of the rows that did not end as expected. Rows
present in only one report are counted and listed compactly. Above them: each report's
environment and the library versions of the implementations where they differ
(the text is written by :mod:`specformer.report.diff_text`; ``--json`` prints the data).

CPU against CUDA: the device is left out of a row's identity when the two reports ran on
disjoint sets of devices and every row of each is still told apart without it (a CPU run
against a CUDA run: their float32 rows are compared); ``--ignore-device`` asks for this
and ``--match-device`` turns it off. Rows present in only one report (float64 on CPU,
float16 on CUDA) are listed but do not make the reports differ.

Exit code: 0 when no matched row differs, 1 when some do, 2 on a usage error (a missing
file, a file that is not a report). It runs nothing, compares no numbers inside a row
(examples, durations, counterexamples) and does not say which report is right; merging
reports is ``specformer merge``. Report text is printed with control characters replaced.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from specformer.report.reading import ReportFileError, read_report

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class DiffError(ValueError):
    """A file that cannot be compared; the message names the file and the problem."""


def load_report(path: str | Path) -> dict[str, Any]:
    """A report from a ``.json`` or gzip-compressed file (told apart by content), bounded and checked
    (:func:`specformer.report.reading.read_report`)."""
    try:
        return read_report(path)
    except ReportFileError as exc:
        raise DiffError(str(exc)) from None


def clean(value: Any, limit: int = 0) -> str:
    """A report value as one line of text: control characters shown as ``?``, cut to ``limit``."""
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    shown = shown.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate cannot be printed
    shown = " ".join(_CONTROL.sub("?", shown.replace("\n", " ")).split())
    return shown[:limit - 1] + "…" if limit and len(shown) > limit else shown


def verdicts(report: dict[str, Any]) -> list[dict[str, Any]]:
    """A report's rows but the *skipped* ones: a device the machine lacks (``--device all`` on a
    CPU-only machine) gives rows without a verdict, and nothing to compare."""
    return [r for r in report["rows"] if r.get("outcome") != "skipped"]


def ran_on(report: dict[str, Any]) -> list[str]:
    """The devices a report's rows (but the skipped ones) ran on."""
    return sorted({clean(r.get("device")) for r in verdicts(report)})


def _key(row: dict[str, Any], ignore_device: bool) -> tuple[str, ...]:
    fields = ("property", "implementation", "dtype") if ignore_device else ("property", "implementation",
                                                                             "device", "dtype")
    return tuple(clean(row.get(f)) for f in fields)


def _index(report: dict[str, Any], ignore_device: bool) -> dict[tuple[str, ...], dict[str, Any]] | None:
    """The rows by identity; ``None`` when two rows share one."""
    rows: dict[tuple[str, ...], dict[str, Any]] = {}
    for row in verdicts(report):
        key = _key(row, ignore_device)
        if key in rows:
            return None
        rows[key] = row
    return rows


def _libraries(report: dict[str, Any]) -> dict[str, str] | None:
    """Implementation name -> ``"library version"``; ``None`` when the report records no library."""
    entries = [i for i in report.get("implementations") or [] if isinstance(i, dict)]
    if not any("library" in i for i in entries):
        return None
    found = {}
    for entry in entries:
        lib = entry.get("library")
        if isinstance(lib, dict):
            found[clean(entry.get("name"))] = f"{clean(lib.get('name'))} {clean(lib.get('version') or '?')}"
    return found


def _names(report: dict[str, Any]) -> set[str]:
    return {clean(i.get("name")) for i in report.get("implementations") or [] if isinstance(i, dict)}


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row.get(k) for k in ("claim", "property", "implementation", "device", "dtype", "outcome",
                                    "as_expected", "message")}


def compare(a: dict[str, Any], b: dict[str, Any], ignore_device: bool | None = None) -> dict[str, Any]:
    """The difference of two loaded reports, as JSON-ready data (``None``: decide on the device)."""
    auto = ignore_device is None
    if auto:
        ignore_device = (not set(ran_on(a)) & set(ran_on(b)) and bool(verdicts(a)) and bool(verdicts(b))
                         and _index(a, True) is not None and _index(b, True) is not None)
    rows_a, rows_b = _index(a, bool(ignore_device)), _index(b, bool(ignore_device))
    for name, rows, report in (("A", rows_a, a), ("B", rows_b, b)):
        if rows is None:
            what = "property, implementation and dtype" if ignore_device else "property, implementation, device, dtype"
            raise DiffError(f"report {name} holds two rows of one {what}"
                            + (" (rows of several devices: leave out --ignore-device)" if ignore_device else ""))
    assert rows_a is not None and rows_b is not None
    differ = [{"a": _brief(rows_a[k]), "b": _brief(rows_b[k])} for k in rows_a
              if k in rows_b and rows_a[k].get("outcome") != rows_b[k].get("outcome")]
    libs_a, libs_b = _libraries(a), _libraries(b)
    both = _names(a) & _names(b) if libs_a is not None and libs_b is not None else set()
    libraries = [{"implementation": n, "a": (libs_a or {}).get(n), "b": (libs_b or {}).get(n)}
                 for n in sorted(both) if (libs_a or {}).get(n) != (libs_b or {}).get(n)]
    return {
        "a": {"rows": len(a["rows"]), "skipped": len(a["rows"]) - len(verdicts(a)), "ran_on": ran_on(a), "environment": a.get("environment"),
              "summary": a.get("summary"), "libraries_recorded": libs_a is not None},
        "b": {"rows": len(b["rows"]), "skipped": len(b["rows"]) - len(verdicts(b)), "ran_on": ran_on(b), "environment": b.get("environment"),
              "summary": b.get("summary"), "libraries_recorded": libs_b is not None},
        "ignore_device": bool(ignore_device), "device_rule": "automatic" if auto else "option",
        "matched": sum(k in rows_b for k in rows_a),
        "differ": differ,
        "changes": dict(Counter(f"{d['a']['outcome']} -> {d['b']['outcome']}" for d in differ).most_common()),
        "libraries": libraries,
        "only_a": [_brief(rows_a[k]) for k in rows_a if k not in rows_b],
        "only_b": [_brief(rows_b[k]) for k in rows_b if k not in rows_a],
    }


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``diff`` to the ``specformer`` command's subcommands."""
    parser = sub.add_parser("diff", help="compare two reports row by row",
                            description="Show the rows whose outcome differs between two reports (.json or "
                                        ".json.gz), grouped by implementation and claim, the rows present in only "
                                        "one, and both environments. Exit 0 when no row differs, 1 when some do.")
    parser.add_argument("report_a", metavar="A", help="a report written by `specformer run` (.json or .json.gz)")
    parser.add_argument("report_b", metavar="B", help="the report to compare it with")
    device = parser.add_mutually_exclusive_group()
    device.add_argument("--ignore-device", action="store_true", default=None,
                        help="match rows on everything but the device (automatic when the reports ran on "
                             "different devices)")
    device.add_argument("--match-device", dest="ignore_device", action="store_false",
                        help="match rows on their device too, even when the reports ran on different devices")
    parser.add_argument("--json", action="store_true", help="print the difference as JSON")
    return parser


def main(args: argparse.Namespace) -> int:
    """``specformer diff``: 0 no row differs, 1 some do, 2 usage error."""
    try:
        a, b = load_report(args.report_a), load_report(args.report_b)
        diff = compare(a, b, args.ignore_device)
    except DiffError as exc:
        print(f"specformer: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump({"a_path": args.report_a, "b_path": args.report_b, **diff}, sys.stdout, indent=1, default=str)
        print()
    else:
        from specformer.report.diff_text import render

        sys.stdout.write(render(diff, (args.report_a, args.report_b)))
    return 1 if diff["differ"] else 0
