"""Markdown building blocks for the documentation site: escaping, badges and result tables.

:mod:`specformer.site` assembles pages from these. Everything here is a pure function of
its arguments; a *row* is one entry of a report's ``rows`` list (see the report schema in
``docs/report-schema.md``).

Reports may come from anyone, so every value read from one goes through :func:`text`
(or, inside a fenced code block, through :func:`fence`) before it reaches a page; values
of unexpected types are shown as JSON rather than trusted or rejected.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from typing import Any, Iterable

#: Outcome name -> the symbol shown for it, in the order of the legend.
OUTCOME_SYMBOLS: dict[str, str] = {
    "pass": "✅",
    "refuted": "🟢",
    "fail": "❌",
    "error": "⚠️",
    "inconclusive": "❔",
    "not-applicable": "–",
    "skipped": "⏭️",
}

#: The symbol of an outcome the site does not know.
UNKNOWN_SYMBOL = "?"

#: How a matrix cell reads, worst first: the first outcome present decides the cell.
#: ``None`` stands for outcomes the site does not know.
_CELL_ORDER: tuple[str | None, ...] = (
    "fail", "error", "inconclusive", None, "refuted", "pass", "skipped", "not-applicable")

#: Outcomes whose matrix cell shows how many rows of the cell have them.
_COUNTED = {"fail", "error", "inconclusive", None}

#: Characters that Markdown (with the site's extensions) or HTML could read as markup:
#: ``<``, ``>``, ``&`` and quotes for HTML, the rest for Markdown (links, images, emphasis,
#: code spans, headings, lists, tables, attribute lists, admonitions and, as ``$`` and
#: ``\(``, pymdownx.arithmatex math). Each is written as an HTML character reference:
#: a backslash escape would not do, because ``\(`` and ``\[`` open arithmatex math.
_MARKUP = "\\`*_{}[]()#+-.!|$~=?:^"
_ESCAPES: dict[int, str] = {ord(c): html.escape(c, quote=True) for c in "&<>\"'"}
_ESCAPES.update({ord(c): f"&#{ord(c)};" for c in _MARKUP})
#: Control characters other than whitespace are shown as U+FFFD.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")


def plain(value: Any) -> str:
    """A report value as an unescaped string: a string as it is, ``None`` as ``""``,
    anything else (a number, a list, an object) as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def field(record: Any, key: str, default: str = "?") -> str:
    """``record[key]`` as an unescaped string (:func:`plain`); ``default`` when it is absent or empty."""
    value = record.get(key) if isinstance(record, dict) else None
    return plain(value) or default


def text(value: Any) -> str:
    """A value made safe to write anywhere in a Markdown page outside fenced code.

    The value (any type: see :func:`plain`) has its whitespace, line breaks included,
    collapsed to single spaces; HTML specials are escaped as by :func:`html.escape` and
    Markdown punctuation is written as character references, so the page shows the
    text literally whether it lands in a paragraph, a heading, a table cell, an
    admonition title or ``<code>``.
    """
    flat = " ".join(_CONTROL.sub("\ufffd", plain(value)).split())
    return flat.translate(_ESCAPES)


def code(value: Any) -> str:
    """A value as inline code, escaped like :func:`text` (a Markdown code span would show
    the escapes)."""
    return f"<code>{text(value)}</code>"


def slug(value: Any) -> str:
    """A CSS-safe slug: ``"false as stated"`` -> ``"false-as-stated"``."""
    return re.sub(r"[^a-z0-9]+", "-", plain(value).lower()).strip("-")


def cell(value: Any) -> str:
    """A value made safe for one Markdown table cell (no pipes, no line breaks): :func:`text`."""
    return text(value)


def fence(content: str, lang: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run in ``content``.

    Fenced code is shown literally, so ``content`` needs no escaping; ``lang`` must be
    a plain word of ours, never a value from a report.
    """
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{content.rstrip()}\n{ticks}"


def indent(block: str, prefix: str = "    ") -> str:
    """Indent every non-empty line of ``block`` (for admonition bodies)."""
    return "\n".join(prefix + line if line.strip() else "" for line in block.splitlines())


def badge(label: Any, family: str) -> str:
    """An inline badge, styled by ``docs/assets/specformer.css``."""
    kind = slug(family)
    return f'<span class="sf-badge sf-{kind} sf-{kind}-{slug(label)}">{text(label)}</span>'


def outcome_symbol(outcome: Any) -> str:
    """The symbol of an outcome; :data:`UNKNOWN_SYMBOL` for one the site does not know."""
    return OUTCOME_SYMBOLS.get(outcome, UNKNOWN_SYMBOL) if isinstance(outcome, str) else UNKNOWN_SYMBOL


def outcome_label(outcome: Any) -> str:
    """The outcome with its symbol, e.g. ``"✅ pass"``, escaped."""
    return f"{outcome_symbol(outcome)} {text(outcome) or '?'}"


def legend() -> str:
    """One line explaining the outcome symbols."""
    return " · ".join(outcome_label(name) for name in OUTCOME_SYMBOLS)


def _number(value: Any, template: str) -> str:
    """A number formatted with ``template``; anything else escaped as it is, or ``–``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return template.format(value)
    return text(value) or "–"


def _duration(row: dict[str, Any]) -> str:
    return _number(row.get("duration_s"), "{:.2f} s")


def examples(row: dict[str, Any]) -> str:
    """The examples of a row: ``checked/generated`` (schema version 2) or the number run (version 1)."""
    checked, generated = row.get("examples_checked"), row.get("examples_generated")
    if checked is not None or generated is not None:
        return f"{_number(checked, '{}')}/{_number(generated, '{}')}"
    return _number(row.get("examples"), "{}")


def _sort_key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(field(row, k, "") for k in ("claim", "implementation", "device", "dtype", "property"))


def results_table(rows: list[dict[str, Any]], with_claim: bool = False) -> str:
    """A table of report rows: implementation × device × dtype, per property.

    ``with_claim`` adds a first column with each row's claim id.
    """
    head = ["Implementation", "Device", "Dtype", "Property", "Outcome", "Examples", "Duration"]
    align = ["---"] * 5 + ["---:"] * 2
    if with_claim:
        head, align = ["Claim", *head], ["---", *align]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for row in sorted(rows, key=_sort_key):
        cells = [text(field(row, k)) for k in ("implementation", "device", "dtype")]
        cells += [code(field(row, "property")), outcome_label(row.get("outcome")), examples(row), _duration(row)]
        if with_claim:
            cells.insert(0, code(field(row, "claim")))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _counterexample_text(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return value, "text"
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str), "json"


def _shortfall(row: dict[str, Any]) -> str:
    """For an inconclusive row: how many examples were checked against how many are required."""
    parts = [f"Checked {_number(row.get('examples_checked'), '{}')} examples"]
    if row.get("min_checked") is not None:
        parts.append(f", fewer than the {_number(row.get('min_checked'), '{}')} the profile requires")
    if row.get("examples_out_of_domain") is not None:
        parts.append(f"; {_number(row.get('examples_out_of_domain'), '{}')} generated examples were out of domain")
    return "".join(parts) + "."


def row_details(row: dict[str, Any]) -> str:
    """An admonition for a row with a message or counterexample; ``""`` for other rows.

    Failures, errors and inconclusive rows open expanded (``???+ failure``,
    ``???+ warning``); refutations, the expected kind of counterexample, are collapsed
    (``??? success``), and so are the notes of skipped or not-applicable rows
    (``??? note``). Inconclusive rows always get one, saying how few examples were checked.
    """
    message = plain(row.get("message"))
    counterexample = row.get("counterexample")
    outcome = row.get("outcome")
    if not message and counterexample is None and outcome != "inconclusive":
        return ""
    title = " · ".join(text(field(row, k)) for k in ("property", "implementation", "device", "dtype"))
    title = f"{title}: {outcome_label(outcome)}"
    kind = {"fail": "???+ failure", "error": "???+ failure", "inconclusive": "???+ warning",
            "refuted": "??? success"}.get(outcome, "??? note") if isinstance(outcome, str) else "??? note"
    body: list[str] = []
    if outcome == "inconclusive":
        body.append(_shortfall(row))
    if message:
        body.append(fence(message, "text"))
    if counterexample is not None:
        content, lang = _counterexample_text(counterexample)
        body += ["Counterexample (shrunk):", fence(content, lang)]
    if row.get("reproduce"):
        body += ["Reproduce:", fence(plain(row["reproduce"]), "bash")]
    return f'{kind} "{title}"\n\n' + indent("\n\n".join(body))


def summarize(rows: Iterable[dict[str, Any]]) -> str:
    """One matrix cell summarising outcomes across devices and dtypes.

    The worst outcome present decides the symbol: any failure is ❌ (with the count of
    failing rows), then ⚠️ for errors and ❔ for inconclusive rows (also counted), ``?``
    for outcomes the site does not know (counted), 🟢 for refutations found as
    expected, ✅ when all that ran passed, ⏭️ when everything was skipped and – when
    nothing applied.
    """
    counts = Counter(o if isinstance(o, str) and o in OUTCOME_SYMBOLS else None
                     for o in (row.get("outcome") for row in rows))
    if not counts:
        return ""
    total = sum(counts.values())
    for outcome in _CELL_ORDER:
        if counts[outcome]:
            symbol = outcome_symbol(outcome)
            return f"{symbol} {counts[outcome]}/{total}" if outcome in _COUNTED else symbol
    return UNKNOWN_SYMBOL  # pragma: no cover - every key of counts is in _CELL_ORDER


def count_table(counter: Counter[str], heading: str) -> str:
    """A two-column table of counts, largest first."""
    lines = [f"| {text(heading)} | Claims |", "|---|---:|"]
    lines += [f"| {cell(key)} | {value} |" for key, value in counter.most_common()]
    return "\n".join(lines)


def _environment_value(key: str, value: Any) -> str:
    """One environment field, escaped: lists joined by commas, ``cuda`` as ``key: value`` pairs."""
    if value is None:
        return "–"
    if isinstance(value, list):
        return text(", ".join(map(plain, value)))
    if key == "cuda" and isinstance(value, dict):
        return text(", ".join(f"{plain(k)}: {plain(v)}" for k, v in value.items()))
    return text(value)


def run_complete(report: dict[str, Any]) -> bool:
    """Whether a report's ``summary.complete`` is ``true`` (absent means no)."""
    summary = report.get("summary")
    return isinstance(summary, dict) and summary.get("complete") is True


def _summary_fields(summary: dict[str, Any], complete: bool) -> list[tuple[str, str]]:
    """The summary's fields as escaped (name, value) pairs; ``ok`` is never "yes" for a partial run."""
    fields = [("rows", _number(summary.get("rows"), "{}"))]
    by_outcome = summary.get("by_outcome")
    if isinstance(by_outcome, dict):
        fields.append(("outcomes", ", ".join(f"{outcome_label(k)}: {_number(v, '{}')}"
                                             for k, v in by_outcome.items())))
    elif by_outcome is not None:
        fields.append(("outcomes", text(by_outcome)))
    ok = summary.get("ok") is True
    fields.append(("ok", "yes" if ok and complete else "no (the run did not complete)" if ok else "no"))
    if "state" in summary:
        fields.append(("state", text(summary["state"]) or "–"))
    fields.append(("complete", "yes" if complete else "no"))
    if summary.get("duration_s") is not None:
        fields.append(("duration", _number(summary["duration_s"], "{:.1f} s")))
    return fields


def environment_table(report: dict[str, Any]) -> str:
    """The report's environment header and summary as a table, every value escaped."""
    env = report.get("environment")
    if isinstance(env, dict):
        fields = [(text(k), _environment_value(plain(k), v)) for k, v in env.items()]
    else:
        fields = [] if env is None else [("environment", text(env))]
    summary = report.get("summary")
    if isinstance(summary, dict) and summary:
        fields += _summary_fields(summary, run_complete(report))
    elif summary is not None:
        fields.append(("summary", text(summary) or "–"))
    lines = ["| Field | Value |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in fields]
    return "\n".join(lines)
