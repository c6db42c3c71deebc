"""Reports as the site reads them: checked, merged into one, and each run labelled.

A page may show rows of several runs (the local CPU run and a CUDA run published in
``docs/results/``). :func:`merge_reports` keeps every run's environment, summary and
source file under ``runs`` and tags each row with the number of the run it came from
(:data:`RUN_KEY`); :func:`run_label` and :func:`runs_legend` say, for a reader, which
device, torch version, profile, date and file each run number stands for. Where the runs
disagree, a row's outcome for the same property, implementation and dtype differing
between runs (on any device; skipped rows left out), :func:`merge_reports` records every
run's outcome on the row (:data:`DIFFERS_KEY`, read with :func:`differs`), so a page can
mark it.

Reports are untrusted: they are read bounded in size and nesting
(:mod:`specformer.report.reading`), and every value read from one is escaped
(:func:`specformer.site.tables.text`) where it is written. This module does not render
rows or outcomes (see :mod:`specformer.site.matrix`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

from specformer.site.tables import field, plain, run_complete, text

REPORT_SCHEMA = "specformer-report"
#: The report schema versions the site renders.
REPORT_SCHEMA_VERSIONS = (1, 2)
#: Key of a merged row that holds the number (from 1) of the run it came from. Set by
#: :func:`merge_reports` on copies of the rows, replacing whatever a report put there.
RUN_KEY = "_specformer_run"
#: Key of a merged row that holds ``[run number, outcome]`` pairs when the outcomes of its
#: property, implementation and dtype differ between runs (else ``[]``). Set by
#: :func:`merge_reports`, replacing whatever a report put there.
DIFFERS_KEY = "_specformer_differs"

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class ReportError(ValueError):
    """A file that is not a report the site can render; the message names the file and the problem."""


def records(value: Any) -> list[dict[str, Any]]:
    """The objects of a report list (``rows``, ``implementations``); anything else is skipped."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _short(value: Any, limit: int = 60) -> str:
    """``value`` as JSON, cut to ``limit`` characters (for error messages)."""
    shown = json.dumps(value, ensure_ascii=True, default=str)
    return shown if len(shown) <= limit else shown[:limit - 1] + "…"


def report_problem(data: Any) -> str | None:
    """What makes ``data`` unusable as a report, or ``None`` when it is usable.

    A report is an object with ``"schema": "specformer-report"``, a ``schema_version``
    in :data:`REPORT_SCHEMA_VERSIONS` and ``rows``, a list of objects. Everything else is
    optional and checked as it is rendered.
    """
    if not isinstance(data, dict):
        return f"not a JSON object but {type(data).__name__}"
    if data.get("schema") != REPORT_SCHEMA:
        return f"schema is {_short(data.get('schema'))}, not \"{REPORT_SCHEMA}\""
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in REPORT_SCHEMA_VERSIONS:
        return (f"schema_version is {_short(version)}, not one of "
                + ", ".join(map(str, REPORT_SCHEMA_VERSIONS)))
    rows = data.get("rows")
    if not isinstance(rows, list):
        return f"rows is {_short(rows)}, not a list"
    for n, row in enumerate(rows):
        if not isinstance(row, dict):
            return f"rows[{n}] is {_short(row)}, not an object"
    return None


def read_report(path: Path) -> dict[str, Any]:
    """Read and check a report, bounded in size and nesting (:func:`specformer.report.reading.read_json`);
    :class:`ReportError` when it cannot be read, is not JSON or is not a report."""
    from specformer.report import reading

    try:
        data = reading.read_json(path)
    except reading.ReportFileError as exc:
        if exc.reason == reading.NOT_JSON:
            raise ReportError(f"{path}: not JSON ({exc.problem})") from None
        raise ReportError(str(exc)) from None
    problem = report_problem(data) or reading.report_problem(data)
    if problem:
        raise ReportError(f"{path}: not a {REPORT_SCHEMA} file: {problem}")
    return data


def load_report(path: Path | None) -> dict[str, Any] | None:
    """Read a report (:func:`read_report`); ``None`` when ``path`` is ``None`` or names no file."""
    if path is None or not Path(path).is_file():
        return None
    return read_report(Path(path))


def run_entry(report: dict[str, Any], source: str = "") -> dict[str, Any]:
    """What the site keeps of one run: environment, summary, schema version, source file
    name and the devices its rows ran on (unescaped; escaped where shown)."""
    devices: list[str] = []
    for row in records(report.get("rows")):
        device = field(row, "device", "")
        if device and device not in devices:
            devices.append(device)
    return {"environment": report.get("environment"), "summary": report.get("summary"),
            "schema_version": report.get("schema_version"), "source": source, "devices": devices}


def merge_reports(reports: Sequence[dict[str, Any]], sources: Sequence[str] = ()) -> dict[str, Any] | None:
    """One report holding the rows of one or several runs (e.g. a CPU run and a CUDA run).

    The result keeps each run under ``runs`` (:func:`run_entry`, with its file name from
    ``sources``) and tags copies of the rows with their run's number (:data:`RUN_KEY`).
    Rows of the same (property, implementation, device, dtype) from a later run replace
    earlier ones. ``None`` when there is no report.
    """
    if not reports:
        return None
    rows: dict[tuple[str, ...], dict[str, Any]] = {}
    impls: dict[str, dict[str, Any]] = {}
    outcomes: dict[tuple[str, ...], dict[tuple[int, str], None]] = {}  # replaced rows' outcomes count too
    for number, report in enumerate(reports, start=1):
        for row in records(report.get("rows")):
            key = tuple(field(row, k, "") for k in ("property", "implementation", "device", "dtype"))
            rows[key] = {**row, RUN_KEY: number}
            if row.get("outcome") != "skipped":
                outcomes.setdefault(key[:2] + key[3:], {})[number, plain(row.get("outcome"))] = None
        for impl in records(report.get("implementations")):  # every run's, each name's first record
            impls.setdefault(field(impl, "name", ""), impl)
    for key, row in rows.items():
        seen = list(outcomes.get(key[:2] + key[3:], {}))
        disagree = len({n for n, _ in seen}) > 1 and len({o for _, o in seen}) > 1
        row[DIFFERS_KEY] = [[n, o] for n, o in sorted(seen)] if disagree else []
    names = list(sources) + [""] * (len(reports) - len(sources))
    return {**reports[0], "implementations": list(impls.values()), "rows": list(rows.values()),
            "runs": [run_entry(r, s) for r, s in zip(reports, names)]}


def report_runs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of a report: those :func:`merge_reports` recorded, else the report itself as one run."""
    return records(report.get("runs")) or [run_entry(report)]


def run_number(row: dict[str, Any], n_runs: int) -> int | None:
    """The number of the run a merged row came from; ``None`` when it is not one of ``n_runs``."""
    number = row.get(RUN_KEY)
    if isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= n_runs:
        return number
    return None


def differs(row: dict[str, Any], n_runs: int) -> list[tuple[int, str]]:
    """The ``(run number, outcome)`` pairs of a row whose outcome differs between runs for
    its property, implementation and dtype (:data:`DIFFERS_KEY`); ``[]`` otherwise, and for
    anything :func:`merge_reports` did not write (outcomes unescaped)."""
    pairs = row.get(DIFFERS_KEY) if n_runs > 1 else None
    if not isinstance(pairs, list):
        return []
    found = [(p[0], p[1]) for p in pairs if isinstance(p, list) and len(p) == 2 and isinstance(p[1], str)
             and isinstance(p[0], int) and not isinstance(p[0], bool) and 1 <= p[0] <= n_runs]
    return found if len(found) == len(pairs) else []


def _environment(run: dict[str, Any]) -> dict[str, Any]:
    env = run.get("environment")
    return env if isinstance(env, dict) else {}


def run_device(run: dict[str, Any]) -> str:
    """The devices a run's rows used (else those its environment lists), escaped; a CUDA
    device's name follows ``cuda``: ``cuda (NVIDIA H100 80GB HBM3)``."""
    env = _environment(run)
    devices = [plain(d) for d in run.get("devices") or [] if plain(d)]
    if not devices:
        listed = env.get("devices")
        devices = [plain(d) for d in listed] if isinstance(listed, list) else [plain(listed)] if listed else []
    cuda = env.get("cuda")
    name = plain(cuda.get("device_name")) if isinstance(cuda, dict) else ""
    shown = [f"{d} ({name})" if d == "cuda" and name else d for d in devices]
    return text(", ".join(shown)) or "?"


def run_date(run: dict[str, Any]) -> str:
    """The day a run's report was written (``YYYY-MM-DD``), else its ``created`` value, escaped."""
    created = plain(_environment(run).get("created"))
    found = _DATE.match(created)
    return found.group(0) if found else text(created) or "?"


def run_label(run: dict[str, Any]) -> str:
    """One line naming a run, escaped: ``cpu · torch 2.13.0+cpu · profile ci · 2026-11-23 · report.json``."""
    env = _environment(run)
    parts = [run_device(run), f"torch {text(env.get('torch')) or '?'}", f"profile {text(env.get('profile')) or '?'}",
             run_date(run)]
    if run.get("source"):
        parts.append(text(run["source"]))
    return " · ".join(parts)


def runs_legend(runs: Sequence[dict[str, Any]], counts: dict[int, int]) -> str:
    """An HTML table naming each run: device, torch, profile, date, source file, and
    ``counts[run number]`` rows shown on the page; a run that did not complete says so."""
    head = "".join(f"<th>{h}</th>" for h in ("Run", "Device", "Torch", "Profile", "Date", "Source", "Rows here"))
    lines = ['<div class="sf-scroll sf-runs-wrap">', '<table class="sf-runs">',
             "<caption>Runs the results come from</caption>", f"<thead><tr>{head}</tr></thead>", "<tbody>"]
    for number, run in enumerate(runs, start=1):
        env = _environment(run)
        source = text(run.get("source")) or "?"
        version = run.get("schema_version")
        if isinstance(version, int) and not isinstance(version, bool) and version != 2:
            source += f" (report schema v{version})"
        if not run_complete(run):
            source += " · <strong>partial: the run did not complete</strong>"
        cells = [f'<span class="sf-run-no">{number}</span>', run_device(run), text(env.get("torch")) or "?",
                 text(env.get("profile")) or "?", run_date(run), source, str(counts.get(number, 0))]
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines += ["</tbody>", "</table>", "</div>"]
    return "\n".join(lines)
