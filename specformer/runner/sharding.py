"""Runs split across machines: ``specformer run --shard K/N`` and ``specformer merge``.

Sharding. Every process of a run collects the same rows; the rows are ordered by a
stable hash of their key (property, implementation *name*, device, dtype: never a path
that differs between machines) and dealt round-robin, so shard ``K`` of ``N`` runs rows
``K-1, K-1+N, ...`` of that order: the shards are disjoint, together they are the whole
run, and their sizes differ by at most one. Every shard must select the same rows (the
same options, the same libraries installed); its report records its shard and how many
rows the whole run has, and :func:`merge` checks both.

Merging. :func:`merge` combines shard reports (or device legs of one run) into one report
whose rows are those of a single run: it refuses reports that are incomplete, that were
made by different versions, profiles or seeds, that disagree about an implementation
(which ones ran; for each, its file's digest where it was named by its file, else its
``--impl`` value, its library version, status and operations), that selected rows with
other options (:func:`run_options`: ``--claims``, ``--property``, ``--topic``, ``--dtype``,
deviations, ``--failed``, pytest's own arguments; and ``--device`` between shards, which
device legs differ in), that hold the same row twice, or a sharded set with a shard
missing; the message names the field that differs. Rows are ordered by their key, so the
merged report does not depend on the order of its inputs. A merged report records the
options its inputs share (``environment.run_options``), so that it can be merged again.

This module runs nothing; :mod:`specformer.runner.plugin` deals the rows and
:mod:`specformer.runner.cli` reads and writes the files.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import shlex
from typing import Any, Iterable, Mapping, Sequence

#: Environment fields every merged report must agree on.
SAME_ENVIRONMENT = ("specformer", "python", "torch", "hypothesis", "numpy", "profile", "seed", "commit")
#: The ``specformer run`` options that choose a run's rows or how they are judged (:func:`run_options`); the
#: reports of one run share them. Not among them: where the reports go, and the limits a machine may set for
#: itself (``--jobs``, ``--threads``, ``--row-timeout``, ``--row-backstop``, ``--memory-limit``).
RUN_OPTIONS = ("--claims", "--property", "--topic", "--dtype", "--deviations", "--strict-deviations", "--with-math",
               "--failed", "--device", "pytest arguments after --")
#: The rows that call no implementation (:data:`specformer.runner.row.MATH`, which imports torch).
_MATH = "math"
#: An implementation's fields, in the order a difference between two reports is named.
_IMPLEMENTATION_FIELDS = ("sha256", "spec", "library", "status", "operations", "capabilities")


class MergeError(ValueError):
    """Reports that cannot be merged (the message says which and why)."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)`` with ``1 <= K <= N``; :class:`ValueError` with a message otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match:
        raise ValueError(f"--shard {text!r}: give K/N, the K-th of N shards (e.g. 1/4)")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"--shard {text!r}: K must be between 1 and N (got K={k}, N={n})")
    return k, n


def row_key(prop: str, implementation: str, device: str, dtype: str) -> str:
    """A row's identity across machines."""
    return f"{prop}|{implementation}|{device}|{dtype}"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def deal(keys: Sequence[str], k: int, n: int) -> list[int]:
    """The indexes (into ``keys``) of the rows of shard ``k`` of ``n``, in their original order."""
    order = sorted(range(len(keys)), key=lambda i: (_digest(keys[i]), keys[i]))
    mine = {index for position, index in enumerate(order) if position % n == k - 1}
    return [i for i in range(len(keys)) if i in mine]


def _key_of(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (str(row["property"]), str(row["implementation"]), str(row["device"]), str(row["dtype"]))


def run_options(report: Mapping[str, Any]) -> dict[str, Any] | None:
    """The :data:`RUN_OPTIONS` of the run that wrote ``report``, read from its ``environment.command``
    (or, for a merged report, its ``environment.run_options``); ``None`` when the command is not a
    ``specformer run`` (pytest's own command line, or none)."""
    environment = report.get("environment") or {}
    recorded = environment.get("run_options")
    if isinstance(recorded, dict):
        return recorded
    command = environment.get("command")
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:  # the command is written unquoted: a quote in a value
        words = command.split()
    if "run" not in words[1:]:
        return None
    words = words[words.index("run", 1):]
    extra = words[words.index("--") + 1:] if "--" in words else []
    words = words[:words.index("--")] if "--" in words else words
    from specformer.runner.cli import build_parser
    from specformer.runner.selection import claim_globs

    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            args = build_parser().parse_args(words)
    except SystemExit:  # not a command line this version reads
        return None
    return {"--claims": sorted(set(claim_globs(args.claims))), "--property": sorted(set(args.property or [])),
            "--topic": sorted(set(args.topic or [])), "--dtype": sorted(set(args.dtype or [])),
            "--deviations": list(args.deviations or []), "--strict-deviations": bool(args.strict_deviations),
            "--with-math": bool(args.with_math), "--failed": args.failed, "--device": args.device,
            "pytest arguments after --": extra}


def _shown(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _report_problem(report: Any) -> str | None:
    """What in a report ``merge`` cannot use: a row or implementation without the fields it reads."""
    if not isinstance(report, dict) or report.get("schema") != "specformer-report":
        return "not a specformer report"
    for n, row in enumerate(report.get("rows") or []):
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in
                                                ("property", "implementation", "device", "dtype", "outcome")) \
                or not isinstance(row.get("as_expected"), bool):
            return (f"rows[{n}] lacks a property, implementation, device, dtype, outcome (text) or "
                    "as_expected (true or false)")
    for n, entry in enumerate(report.get("implementations") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) \
                or not isinstance(entry.get("spec"), str):
            return f"implementations[{n}] lacks a name or spec (text)"
    environment = report.get("environment") or {}
    devices = environment.get("devices", [])
    if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
        return "environment.devices is not a list of device names"
    shard = environment.get("shard")
    if shard is not None and not (isinstance(shard, dict) and all(type(shard.get(k)) is int for k in ("index", "count"))
                                  and (shard.get("rows_in_run") is None or type(shard.get("rows_in_run")) is int)):
        return "environment.shard is not {index, count, rows_in_run} of whole numbers"
    return None


def implementation_difference(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """The first field in which two reports' entries for one implementation differ, as ``field A against B``;
    ``None`` when they are the same implementation.

    An implementation named by its file is the same where its file's ``sha256`` is (the file's path may
    differ between machines); one named otherwise, where its ``--impl`` value (``spec``) is.
    """
    from specformer.runner.loading import file_target

    fields = [f for f in _IMPLEMENTATION_FIELDS if f != "spec"] + sorted((set(a) | set(b)) - {*_IMPLEMENTATION_FIELDS})
    by_file = file_target(str(a.get("spec"))) is not None and file_target(str(b.get("spec"))) is not None
    if not by_file:
        fields.insert(1, "spec")
    for field in fields:
        if field != "name" and a.get(field) != b.get(field):
            return f"{field} {_shown(b.get(field))} against {_shown(a.get(field))}"
    return None


def merge(reports: Sequence[tuple[str, dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                                   dict[str, Any]]:
    """The rows, implementations and environment of the reports ``(source, report)`` merged (module doc)."""
    if not reports:
        raise MergeError("nothing to merge")
    for source, report in reports:
        problem = _report_problem(report)
        if problem:
            raise MergeError(f"{source}: {problem}")
        summary = report.get("summary") or {}
        if summary.get("state") != "complete":
            raise MergeError(f"{source}: the run is {summary.get('state', 'of unknown state')}, not complete; "
                             "rerun that shard")
    first_source, first = reports[0]
    env0 = first.get("environment") or {}
    for source, report in reports[1:]:
        env = report.get("environment") or {}
        for field in SAME_ENVIRONMENT:
            if env.get(field) != env0.get(field):
                raise MergeError(f"{source}: {field} {env.get(field)!r} differs from {first_source}'s "
                                 f"{env0.get(field)!r}; only reports of one run can be merged")
        if report.get("schema_version") != first.get("schema_version"):
            raise MergeError(f"{source}: schema version {report.get('schema_version')} differs from "
                             f"{first_source}'s {first.get('schema_version')}")
    expected = _check_shards(reports)
    sharded = any((r.get("environment") or {}).get("shard") for _, r in reports)
    options = _check_options(reports, sharded)
    _check_implementations(reports)
    implementations: dict[str, dict[str, Any]] = {}
    for source, report in reports:
        for entry in report.get("implementations", []):
            implementations.setdefault(entry["name"], entry)
    rows: dict[tuple[str, str, str, str], tuple[str, dict[str, Any]]] = {}
    for source, report in reports:
        for row in report.get("rows", []):
            key = _key_of(row)
            if key in rows:
                raise MergeError(f"row {' | '.join(key)} is in both {rows[key][0]} and {source}; "
                                 "shards must not overlap")
            rows[key] = (source, row)
    if expected is not None and len(rows) != expected:
        raise MergeError(f"the shards hold {len(rows)} rows, but the run they split has {expected}")
    environment = dict(env0)
    environment["devices"] = sorted({d for _, r in reports for d in (r.get("environment") or {}).get("devices", [])})
    environment["cuda"] = next(((r.get("environment") or {}).get("cuda") for _, r in reports
                                if (r.get("environment") or {}).get("cuda")), None)
    environment.pop("shard", None)
    if options is not None:
        # the shards' device is the merged report's; device legs have several
        environment["run_options"] = {k: v for k, v in options.items() if sharded or k != "--device"}
    environment["merged_from"] = [
        {"report": source, "shard": (r.get("environment") or {}).get("shard"),
         "platform": (r.get("environment") or {}).get("platform"), "rows": len(r.get("rows", []))}
        for source, r in reports]
    return [row for _, row in sorted(rows.values(), key=lambda sr: _key_of(sr[1]))], \
        list(implementations.values()), environment


def _check_options(reports: Sequence[tuple[str, dict[str, Any]]], sharded: bool) -> dict[str, Any] | None:
    """The :func:`run_options` the reports share (``--device`` compared between shards only); ``None`` when
    no report was written by ``specformer run``. :class:`MergeError` naming the option that differs."""
    first_source, first = reports[0]
    options0 = run_options(first)
    for source, report in reports[1:]:
        options = run_options(report)
        if (options is None) != (options0 is None):
            written, other = (source, first_source) if options is not None else (first_source, source)
            command = (dict(reports)[other].get("environment") or {}).get("command")
            raise MergeError(f"{other}: its command {_shown(command)} is not a `specformer run` this version reads, "
                             f"and {written}'s is: cannot tell that they selected the same rows")
        if options is None or options0 is None:
            continue
        for option in RUN_OPTIONS:
            if option == "--device" and not sharded:  # device legs of one run differ in their device
                continue
            if options.get(option) != options0.get(option):
                raise MergeError(f"{source}: {option} {_shown(options.get(option))} differs from {first_source}'s "
                                 f"{_shown(options0.get(option))}; only reports of one run can be merged")
    return options0


def _check_implementations(reports: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """The same implementations in every report, each the same (:func:`implementation_difference`)."""
    first_source, first = reports[0]
    names0 = sorted({e["name"] for e in first.get("implementations") or []} - {_MATH})
    seen: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for source, report in reports:
        names = sorted({e["name"] for e in report.get("implementations") or []} - {_MATH})
        if names != names0:
            raise MergeError(f"{source}: implementations {_shown(names)} differ from {first_source}'s "
                             f"{_shown(names0)}; only reports of one run can be merged")
        for entry in report.get("implementations") or []:
            if entry["name"] not in seen:
                seen[entry["name"]] = (source, entry)
                continue
            difference = implementation_difference(seen[entry["name"]][1], entry)
            if difference:
                raise MergeError(f"{source}: implementation {entry['name']!r} differs from the one of "
                                 f"{seen[entry['name']][0]}: its {difference}")


def _check_shards(reports: Iterable[tuple[str, dict[str, Any]]]) -> int | None:
    """Sharded reports: one shard count, each shard once, none missing, the same whole run.

    Returns the number of rows of the whole run (``None``: the reports are not shards).
    """
    shards = [(source, (r.get("environment") or {}).get("shard")) for source, r in reports]
    sharded = [(source, s) for source, s in shards if s]
    if not sharded:
        return None
    if len(sharded) != len(shards):
        raise MergeError("some reports are shards and some are not: merge the shards of one run, or whole runs "
                         "of different devices")
    counts = {s["count"] for _, s in sharded}
    totals = {s.get("rows_in_run") for _, s in sharded}
    if len(counts) != 1:
        raise MergeError(f"the reports are shards of different splits (N = {sorted(counts)})")
    if None in totals:  # a shard run with several jobs does not know the size of the whole run
        totals = {None}
    elif len(totals) != 1:
        raise MergeError(f"the shards selected different rows (the whole run has {sorted(map(str, totals))} rows "
                         "by their reports): run every shard with the same options and libraries")
    n = counts.pop()
    seen: dict[int, str] = {}
    for source, s in sharded:
        if s["index"] in seen:
            raise MergeError(f"{source} and {seen[s['index']]} are both shard {s['index']}/{n}")
        seen[s["index"]] = source
    missing = [k for k in range(1, n + 1) if k not in seen]
    if missing:
        raise MergeError(f"shard(s) {', '.join(f'{k}/{n}' for k in missing)} missing: a merged report must hold "
                         "every row of the run")
    total = totals.pop()
    return None if total is None else int(total)
