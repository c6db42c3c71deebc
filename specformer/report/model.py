"""The JSON report: an environment header and one row per property × implementation × device × dtype.

The schema is versioned (``schema_version``) and published in ``docs/report-schema.md``;
:data:`REPORT_SCHEMA` is its machine-readable form, used by the tests.

A run keeps its report honest with :class:`ReportWriter`: the file is written when the
run starts, marked ``state: running`` (never ``ok``), rewritten atomically as rows
finish, and marked ``complete`` only at the end of a run that ran every row. Whatever
stops the run early leaves a file that says so. This module does not run anything.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import hypothesis
import numpy
import torch

import specformer
from specformer.protocol.versions import PROTOCOL_VERSION
from specformer.runner import devices
from specformer.runner.row import OUTCOMES, RowResult, unchecked_implementations

SCHEMA_NAME = "specformer-report"
SCHEMA_VERSION = 2
#: Run states: ``running`` while rows are still coming, ``complete`` when every collected
#: row ran, ``interrupted`` when the run ended early.
#: A report's states: ``stale`` marks an earlier run's report that a later, refused run (a usage error) found
#: at its ``--report`` path; its ``summary.stale`` says which.
STATES = ("running", "complete", "interrupted", "stale")

_ROW_FIELDS = {
    "claim": {"type": "string"},
    "family": {"type": "string"},
    "property": {"type": "string"},
    "implementation": {"type": "string"},
    "device": {"type": "string"},
    "dtype": {"type": "string"},
    "expect": {"enum": ["hold", "counterexample"]},
    "outcome": {"enum": list(OUTCOMES)},
    "as_expected": {"type": "boolean"},
    "examples_generated": {"type": "integer", "minimum": 0},
    "examples_checked": {"type": "integer", "minimum": 0},
    "examples_out_of_domain": {"type": "integer", "minimum": 0},
    "min_checked": {"type": "integer", "minimum": 0},
    "duration_s": {"type": "number", "minimum": 0},
    "message": {"type": "string"},
    "counterexample": {"type": ["string", "null"]},
    "reproduce": {"type": "string"},
    # optional (added within version 2; older version-2 reports lack them)
    "seed": {"type": ["integer", "null"], "minimum": 0},
    "deviation_reason": {"type": ["string", "null"]},
    "original_outcome": {"enum": [*OUTCOMES, None]},
    "call": {"type": ["string", "null"]},  # the last call into the implementation before a failure
    # the distinct shapes each operation was called with: {op: {"count": n, "shapes": [the first few]}}
    "shapes": {"type": ["object", "null"],
               "additionalProperties": {"type": "object", "required": ["count", "shapes"],
                                        "properties": {"count": {"type": "integer", "minimum": 0},
                                                       "shapes": {"type": "array", "items": {"type": "string"}}}}},
}
#: Row fields every row has; the others of ``_ROW_FIELDS`` came later within version 2.
_REQUIRED_ROW_FIELDS = [f for f in _ROW_FIELDS
                        if f not in ("seed", "deviation_reason", "original_outcome", "call", "shapes")]

#: JSON schema of a report (version 2).
REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema", "schema_version", "environment", "implementations", "summary", "rows"],
    "properties": {
        "schema": {"const": SCHEMA_NAME},
        "schema_version": {"const": SCHEMA_VERSION},
        "environment": {
            "type": "object",
            "required": ["specformer", "python", "torch", "hypothesis", "numpy", "platform", "devices", "cuda",
                         "commit", "created", "profile", "command"],
        },
        "implementations": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "spec", "operations", "status", "message", "omitted_families"],
                "properties": {
                    "status": {"enum": ["loaded", "load-error"]},
                    "operations": {"type": "array", "items": {"type": "string"}},
                    "omitted_families": {"type": "array", "items": {"type": "string"}},
                    # optional (added within version 2): named on the command line (--impl), not a default
                    "asked": {"type": "boolean"},
                    # optional (added within version 2): the distribution a built-in implementation wraps
                    "library": {"type": ["object", "null"], "required": ["name", "version"],
                                "properties": {"name": {"type": "string"},
                                               "version": {"type": ["string", "null"]}}},
                    # optional (added within version 2): its operations written before a protocol change, and
                    # what the harness does for them (specformer.protocol.versions)
                    "protocol_notes": {"type": "array", "items": {"type": "string"}},
                    # optional (added within version 2): the SHA-256 of an implementation named by its file
                    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                },
            },
        },
        "summary": {
            "type": "object",
            "required": ["rows", "by_outcome", "ok", "complete", "state", "duration_s"],
            "properties": {"ok": {"type": "boolean"}, "complete": {"type": "boolean"},
                           "state": {"enum": list(STATES)}},
        },
        "rows": {
            "type": "array",
            "items": {"type": "object", "required": _REQUIRED_ROW_FIELDS, "properties": _ROW_FIELDS,
                      "additionalProperties": False},
        },
    },
}


def git_commit(cwd: Path | None = None) -> str | None:
    """The commit checked out in ``cwd`` (or the current folder), or None outside git."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def environment(profile: str, command: str) -> dict[str, Any]:
    """The report's environment header."""
    return {
        "specformer": specformer.__version__,
        "protocol": PROTOCOL_VERSION,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "hypothesis": hypothesis.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        **devices.describe(),
        "commit": git_commit(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "profile": profile,
        "command": command,
    }


def implementation_entry(name: str, spec: str, operations: list[str] | None = None, status: str = "loaded",
                         message: str = "", omitted_families: list[str] | None = None,
                         capabilities: dict[str, Any] | None = None, find_library: bool = True) -> dict[str, Any]:
    """One entry of the report's ``implementations`` list.

    ``capabilities`` is the implementation's declaration as plain data
    (:meth:`specformer.protocol.Capabilities.to_plain`), or None when it declares none.
    ``library`` is the distribution a built-in implementation wraps and its installed
    version (:func:`specformer.adapters.library`; None for others, and with ``find_library=False``).
    ``sha256``, only for an implementation named by its file, is the digest of that file as
    the run found it (:func:`file_digest`; not looked up with ``find_library=False``):
    ``specformer merge`` refuses shards whose files differ.
    """
    from specformer.adapters import library

    digest = file_digest(spec) if find_library else None
    return {"name": name, "spec": spec, "operations": sorted(operations or []), "status": status,
            "message": message, "omitted_families": sorted(omitted_families or []), "capabilities": capabilities,
            "library": library(spec) if find_library else None, **({"sha256": digest} if digest else {})}


def file_digest(spec: str) -> str | None:
    """The SHA-256 (hex) of the file an ``--impl`` value names, read and never imported; ``None`` for a
    built-in name, a module, or a file that cannot be read. The file alone: not what it imports."""
    import hashlib

    from specformer.adapters import BUILTIN
    from specformer.runner.loading import file_target

    path = None if spec in BUILTIN else file_target(spec)
    if path is None or not path.is_file():
        return None
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def naming_problem(implementations: list[dict[str, Any]]) -> str | None:
    """Why the loaded implementations cannot share one report, or ``None``.

    Rows, deviations and the site tell implementations apart by name, so names must be
    unique within a run, and the shipped names (:data:`specformer.adapters.BUILTIN`, and
    ``math``, the rows that call no implementation) belong to the shipped
    implementations: a user's object named ``reference`` would otherwise take the
    reference's place, its deviations and its failures. Such a clash is a usage error;
    the user renames the object (its ``name`` attribute).
    """
    from specformer.adapters import BUILTIN

    reserved = {*BUILTIN, "math"}
    seen: dict[str, str] = {}
    for entry in implementations:
        name, spec = str(entry["name"]), str(entry["spec"])
        if not name.strip() or any(ch in name for ch in "[]") or not name.isprintable():
            return (f"--impl {spec!r}: the implementation's name {name!r} cannot name rows (it must be printable, "
                    "non-empty and without brackets); set its `name` attribute")
        if name in reserved and spec != name:
            return (f"--impl {spec!r}: the implementation is named {name!r}, a name reserved for the shipped "
                    f"implementation {name!r} (`--impl {name}`); give your object another `name`, e.g. "
                    f"name = \"my-{name}\"")
        if name in seen:
            return (f"--impl {seen[name]!r} and --impl {spec!r} are both named {name!r}; a report cannot tell "
                    "their rows apart: give one of them another `name`")
        seen[name] = spec
    return None


def _row_json(row: RowResult | dict[str, Any]) -> dict[str, Any]:
    return row.to_json() if isinstance(row, RowResult) else row


def build_report(rows: Iterable[RowResult | dict[str, Any]], implementations: list[dict[str, Any]], profile: str,
                 duration_s: float, complete: bool = True, command: str | None = None,
                 state: str | None = None, environment_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole report as a JSON-ready dict.

    ``ok`` needs a complete run, every row as expected, every implementation loaded, and a row
    checked of every implementation named with ``--impl`` (``summary.unchecked`` lists those without).
    ``environment_extra`` adds to (or replaces fields of) the environment header: the
    run's ``seed`` and ``shard``, or a merged report's whole header.
    """
    rows = [_row_json(r) for r in rows]
    counts = Counter(r["outcome"] for r in rows)
    state = state or ("complete" if complete else "interrupted")
    complete = complete and state == "complete"
    loaded = all(i.get("status", "loaded") == "loaded" for i in implementations)
    sharded = bool((environment_extra or {}).get("shard"))  # a shard holds part of the rows: its merge decides
    unchecked = unchecked_implementations(rows, implementations) if complete and not sharded else []
    return {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "environment": {**environment(profile, command or " ".join(sys.argv)), **(environment_extra or {})},
        # defaults for entries of older reports (a merge): no library is made up for them
        "implementations": [{**implementation_entry(i["name"], i["spec"], find_library=False), **i}
                            for i in implementations],
        "summary": {
            "rows": len(rows),
            "by_outcome": {o: counts[o] for o in OUTCOMES if counts[o]},
            "ok": complete and loaded and not unchecked and all(r["as_expected"] for r in rows),
            "complete": complete,
            # implementations named with --impl that had no row checked (every row not applicable or skipped)
            "unchecked": unchecked,
            "state": state,
            "duration_s": round(duration_s, 3),
        },
        "rows": rows,
    }


def report_text(report: dict[str, Any]) -> bytes:
    """The bytes :func:`write_report` writes for ``report``."""
    return (json.dumps(report, indent=1, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")


def write_report(report: dict[str, Any], path: Path) -> None:
    """Write ``report`` to ``path`` atomically (a partial file never replaces a whole one).

    A lone surrogate (text properties pass them to implementations, and messages quote what
    comes back) has no UTF-8 encoding: it is written as its JSON escape (``\\ud800``), which
    reads back as the same string.
    """
    text = report_text(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a fresh name created exclusively: nothing prepared at a predictable name (a link) is written through
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


class ReportWriter:
    """Keeps the report on disk in step with a run (see the module docstring).

    ``every_s`` throttles rewrites while rows arrive (0: a rewrite per row), and so does the cost of the last one:
    the next rewrite waits :data:`COST_FACTOR` times as long as the last took (a report of
    thousands of rows takes tens of milliseconds to write, and the controlling process
    shares the cores with the jobs). :meth:`finish` always writes.
    """

    #: How many times the last rewrite's duration to wait before the next.
    COST_FACTOR = 50

    def __init__(self, path: Path, implementations: list[dict[str, Any]], profile: str, command: str | None = None,
                 every_s: float = 0.5, environment_extra: dict[str, Any] | None = None) -> None:
        self.path, self.implementations, self.profile = path, implementations, profile
        self.environment_extra = dict(environment_extra or {})
        self.command = command
        self.rows: list[dict[str, Any]] = []
        self.every_s = every_s
        self._start = time.perf_counter()
        self._last = 0.0
        self._cost = 0.0
        #: The final report (:meth:`finish`), as written.
        self.final: dict[str, Any] | None = None

    def _write(self, state: str) -> dict[str, Any]:
        start = time.perf_counter()
        report = build_report(self.rows, self.implementations, self.profile, time.perf_counter() - self._start,
                              complete=state == "complete", command=self.command, state=state,
                              environment_extra=self.environment_extra)
        write_report(report, self.path)
        self._last = time.perf_counter()
        self._cost = self._last - start
        return report

    def start(self) -> None:
        """Replace any previous report by one that says this run is running."""
        self._write("running")

    def add(self, row: RowResult | dict[str, Any]) -> None:
        """Record a finished row (and rewrite the file if the last write is old enough)."""
        self.rows.append(_row_json(row))
        wait = max(self.every_s, self.COST_FACTOR * self._cost) if self.every_s > 0 else 0.0  # 0: every row
        if time.perf_counter() - self._last >= wait:
            self._write("running")

    def finish(self, complete: bool) -> dict[str, Any]:
        """The final write: ``complete`` or ``interrupted``; returns the report."""
        state = "complete" if complete else "interrupted"
        # the report as written, from memory: the file may be rewritten by anyone after this
        self.final = json.loads(json.dumps(self._write(state)))
        return self.final
