"""Markdown building blocks for the documentation site: escaping, badges and result tables.

:mod:`specformer.site` assembles pages from these. Everything here is a pure function of
its arguments; a *row* is one entry of a report's ``rows`` list (see the report schema in
``docs/report-schema.md``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Iterable

#: Outcome name -> the symbol shown for it.
OUTCOME_SYMBOLS: dict[str, str] = {
    "pass": "✅",
    "refuted": "🟢",
    "fail": "❌",
    "error": "⚠️",
    "not-applicable": "–",
    "skipped": "⏭️",
}

#: How a matrix cell reads, worst first: the first outcome present decides the cell.
_CELL_ORDER = ("fail", "error", "refuted", "pass", "skipped", "not-applicable")


def slug(text: str) -> str:
    """A CSS-safe slug: ``"false as stated"`` -> ``"false-as-stated"``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def cell(text: Any) -> str:
    """Text made safe for one Markdown table cell (no pipes, no line breaks)."""
    return re.sub(r"\s*\n\s*", " ", str(text)).replace("|", "\\|").strip()


def fence(code: str, lang: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run in ``code``."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{code.rstrip()}\n{ticks}"


def indent(text: str, prefix: str = "    ") -> str:
    """Indent every non-empty line of ``text`` (for admonition bodies)."""
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())


def badge(text: str, family: str) -> str:
    """An inline badge, styled by ``docs/assets/specformer.css``."""
    return f'<span class="sf-badge sf-{family} sf-{family}-{slug(text)}">{text}</span>'


def outcome_label(outcome: str) -> str:
    """The outcome with its symbol, e.g. ``"✅ pass"``."""
    return f"{OUTCOME_SYMBOLS.get(outcome, '?')} {outcome}"


def legend() -> str:
    """One line explaining the outcome symbols."""
    return " · ".join(outcome_label(name) for name in OUTCOME_SYMBOLS)


def _duration(row: dict[str, Any]) -> str:
    value = row.get("duration_s")
    return f"{value:.2f} s" if isinstance(value, (int, float)) else "–"


def _examples(row: dict[str, Any]) -> str:
    value = row.get("examples")
    return str(value) if value is not None else "–"


def results_table(rows: list[dict[str, Any]]) -> str:
    """A table of report rows: implementation × device × dtype, per property."""
    lines = [
        "| Implementation | Device | Dtype | Property | Outcome | Examples | Duration |",
        "|---|---|---|---|---|---:|---:|",
    ]
    ordered = sorted(rows, key=lambda r: (r.get("implementation", ""), r.get("device", ""),
                                          r.get("dtype", ""), r.get("property", "")))
    for row in ordered:
        lines.append(
            "| " + " | ".join(cell(x) for x in (
                row.get("implementation", "?"), row.get("device", "?"), row.get("dtype", "?"),
                f"`{row.get('property', '?')}`", outcome_label(row.get("outcome", "?")),
                _examples(row), _duration(row),
            )) + " |"
        )
    return "\n".join(lines)


def _counterexample_text(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return value, "text"
    return json.dumps(value, indent=2, sort_keys=True, default=str), "json"


def row_details(row: dict[str, Any]) -> str:
    """An admonition for a row with a message or counterexample; ``""`` for other rows.

    Failures and errors open expanded (``???+ failure``); refutations, the expected kind
    of counterexample, are collapsed (``??? success``), and so are the notes of skipped or
    not-applicable rows (``??? note``).
    """
    message = str(row.get("message") or "")
    counterexample = row.get("counterexample")
    if not message and counterexample is None:
        return ""
    outcome = row.get("outcome", "?")
    title = " · ".join(str(row.get(k, "?")) for k in ("property", "implementation", "device", "dtype"))
    title = f"{title}: {outcome_label(outcome)}".replace('"', "'")
    if outcome in ("fail", "error"):
        head = f'???+ failure "{title}"'
    elif outcome == "refuted":
        head = f'??? success "{title}"'
    else:
        head = f'??? note "{title}"'
    body: list[str] = []
    if message:
        body.append(fence(message, "text"))
    if counterexample is not None:
        text, lang = _counterexample_text(counterexample)
        body += ["Counterexample (shrunk):", fence(text, lang)]
    if row.get("reproduce"):
        body += ["Reproduce:", fence(str(row["reproduce"]), "bash")]
    return head + "\n\n" + indent("\n\n".join(body))


def summarize(rows: Iterable[dict[str, Any]]) -> str:
    """One matrix cell summarising outcomes across devices and dtypes.

    The worst outcome present decides the symbol: any failure is ❌ (with the count of
    failing rows), then ⚠️ for errors, 🟢 for refutations found as expected, ✅ when all
    that ran passed, ⏭️ when everything was skipped and – when nothing applied.
    """
    counts = Counter(row.get("outcome", "?") for row in rows)
    if not counts:
        return ""
    total = sum(counts.values())
    for outcome in _CELL_ORDER:
        if counts[outcome]:
            if outcome in ("fail", "error"):
                return f"{OUTCOME_SYMBOLS[outcome]} {counts[outcome]}/{total}"
            return OUTCOME_SYMBOLS[outcome]
    return "?"


def count_table(counter: Counter[str], heading: str) -> str:
    """A two-column table of counts, largest first."""
    lines = [f"| {heading} | Claims |", "|---|---:|"]
    lines += [f"| {cell(key)} | {value} |" for key, value in counter.most_common()]
    return "\n".join(lines)


def environment_table(report: dict[str, Any]) -> str:
    """The report's environment header and summary as a table."""
    env = dict(report.get("environment") or {})
    cuda = env.get("cuda")
    if isinstance(cuda, dict):
        env["cuda"] = ", ".join(f"{k}: {v}" for k, v in cuda.items())
    if isinstance(env.get("devices"), list):
        env["devices"] = ", ".join(env["devices"])
    summary = report.get("summary") or {}
    if summary:
        by_outcome = summary.get("by_outcome") or {}
        env["rows"] = summary.get("rows", "–")
        env["outcomes"] = ", ".join(f"{outcome_label(k)}: {v}" for k, v in by_outcome.items())
        env["ok"] = "yes" if summary.get("ok") else "no"
        if summary.get("duration_s") is not None:
            env["duration"] = f"{summary['duration_s']:.1f} s"
    lines = ["| Field | Value |", "|---|---|"]
    lines += [f"| {cell(key)} | {cell('–' if value is None else value)} |" for key, value in env.items()]
    return "\n".join(lines)
