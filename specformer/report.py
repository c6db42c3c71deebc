"""The JSON report: an environment header and one row per property × implementation × device × dtype.

The schema is versioned (``schema_version``) and published in ``docs/report-schema.md``;
:data:`REPORT_SCHEMA` is its machine-readable form, used by the tests. This module
writes reports; it does not run anything.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import hypothesis
import numpy
import torch

import specformer
from specformer import devices
from specformer.runner import OUTCOMES, RowResult

SCHEMA_NAME = "specformer-report"
SCHEMA_VERSION = 1

_ROW_FIELDS = {
    "claim": {"type": "string"},
    "property": {"type": "string"},
    "implementation": {"type": "string"},
    "device": {"type": "string"},
    "dtype": {"type": "string"},
    "expect": {"enum": ["hold", "counterexample"]},
    "outcome": {"enum": list(OUTCOMES)},
    "as_expected": {"type": "boolean"},
    "examples": {"type": "integer", "minimum": 0},
    "duration_s": {"type": "number", "minimum": 0},
    "message": {"type": "string"},
    "counterexample": {"type": ["string", "null"]},
    "reproduce": {"type": "string"},
}

#: JSON schema of a report (version 1).
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
            "items": {"type": "object", "required": ["name", "spec", "operations"]},
        },
        "summary": {
            "type": "object",
            "required": ["rows", "by_outcome", "ok", "complete", "duration_s"],
            "properties": {"ok": {"type": "boolean"}, "complete": {"type": "boolean"}},
        },
        "rows": {
            "type": "array",
            "items": {"type": "object", "required": list(_ROW_FIELDS), "properties": _ROW_FIELDS,
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


def build_report(rows: Iterable[RowResult], implementations: list[dict[str, Any]], profile: str,
                 duration_s: float, complete: bool = True, command: str | None = None) -> dict[str, Any]:
    """The whole report as a JSON-ready dict."""
    rows = list(rows)
    counts = Counter(r.outcome for r in rows)
    return {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "environment": environment(profile, command or " ".join(sys.argv)),
        "implementations": implementations,
        "summary": {
            "rows": len(rows),
            "by_outcome": {o: counts[o] for o in OUTCOMES if counts[o]},
            "ok": complete and all(r.as_expected for r in rows),
            "complete": complete,
            "duration_s": round(duration_s, 3),
        },
        "rows": [r.to_json() for r in rows],
    }


def write_report(report: dict[str, Any], path: Path) -> None:
    """Write ``report`` to ``path`` atomically (a partial file never replaces a whole one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
