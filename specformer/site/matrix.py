"""The results of a claim page: a matrix of outcomes, every row's numbers, and details.

:func:`results_matrix` writes one HTML table per claim: a group of rows per property
(its name as a full-width heading row, so it never wraps letter by letter), a row per
implementation and a column per device and dtype (``cpu`` / ``float64``, ``cuda`` /
``float16``, ...). Each cell gives the outcome in words with a colour (``sf-o-*``
classes of ``specformer/site/docs/assets/specformer.css``), the run it came from as a superscript when
several runs are merged, a tooltip with the numbers, and a link to the row's details
(:func:`row_details`: message, counterexample, reproduction) when it has any. A row whose
outcome differs between the merged runs for its property, implementation and dtype is
marked *differs* (:func:`differs_mark`), with every run's outcome in its tooltip.
:func:`rows_table` lists every row with its examples and time.

Every value read from a report is escaped (:func:`specformer.site.tables.text`, or
literal inside fenced code); classes, ids and links are built from our own words and
counters only. This module does not read reports or label runs (:mod:`specformer.site.runs`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Sequence

from specformer.site.runs import differs, run_number
from specformer.site.tables import (fence, field, indent, known_outcome, number, outcome_class,
                                    outcome_label, outcome_words, plain, text)

#: Devices and dtypes in the order of the matrix columns; others follow, sorted.
DEVICE_ORDER = ("cpu", "cuda", "mps")
DTYPE_ORDER = ("float64", "float32", "float16", "bfloat16")
#: Outcomes that give a row its details even without a message or counterexample.
_ALWAYS_DETAILED = {"inconclusive", "known-deviation", "fixed"}
_DETAILS_KIND = {"fail": "???+ failure", "error": "???+ failure", "inconclusive": "???+ warning",
                 "refuted": "??? success", "known-deviation": "??? info", "fixed": "???+ tip"}
_ROLE = {"hold": "checks the claim", "counterexample": "refutes the claim as written"}


def anchor(n: int) -> str:
    """The id of the details of the ``n``-th row of a page (our counter, never report text)."""
    return f"sf-row-{n}"


def breakable(value: Any) -> str:
    """:func:`text`, with line-break opportunities after ``.`` and ``_`` (long property names)."""
    return text(value).replace("&#46;", "&#46;<wbr>").replace("&#95;", "&#95;<wbr>")


def _order(value: str, known: tuple[str, ...]) -> tuple[int, str]:
    return (known.index(value) if value in known else len(known), value)


def _duration(row: dict[str, Any]) -> str:
    return number(row.get("duration_s"), "{:.2f} s")


def examples(row: dict[str, Any]) -> str:
    """The examples of a row: ``checked/generated`` (schema version 2) or the number run (version 1)."""
    checked, generated = row.get("examples_checked"), row.get("examples_generated")
    if checked is not None or generated is not None:
        return f"{number(checked, '{}')}/{number(generated, '{}')}"
    return number(row.get("examples"), "{}")


def _run_mark(row: dict[str, Any], n_runs: int) -> str:
    """A superscript run number when several runs are merged; ``""`` otherwise."""
    found = run_number(row, n_runs) if n_runs > 1 else None
    return f'<sup class="sf-run" title="run {found}">{found}</sup>' if found else ""


def differs_mark(row: dict[str, Any], n_runs: int) -> str:
    """``differs`` with each run's outcome in a tooltip, for a row whose outcome differs between
    runs for its property, implementation and dtype (:func:`specformer.site.runs.differs`); else ``""``."""
    pairs = differs(row, n_runs)
    if not pairs:
        return ""
    title = ", ".join(f"run {n}: {outcome_words(o)}" for n, o in pairs)
    return f' <span class="sf-differs" title="differs between reports: {title}">differs</span>'


def _tooltip(row: dict[str, Any], n_runs: int) -> str:
    """The numbers of a row for a cell's ``title``, escaped (quotes included)."""
    parts = [f"{outcome_words(row.get('outcome'))}: {examples(row)} examples, {_duration(row)}"]
    found = run_number(row, n_runs) if n_runs > 1 else None
    if found:
        parts.append(f"run {found}")
    message = plain(row.get("message"))
    if message:
        parts.append(text(message[:300] + ("…" if len(message) > 300 else "")))
    return " · ".join(parts)


def _cell(rows: list[dict[str, Any]], anchors: dict[int, str], n_runs: int) -> str:
    """One matrix cell: each row's outcome in words, linked to its details when it has any."""
    if not rows:
        return '<td class="sf-cell sf-o-none" title="no row for this device and dtype">–</td>'
    words = []
    for row in rows:
        label = outcome_words(row.get("outcome"))
        target = anchors.get(id(row))
        label = f'<a href="#{target}">{label}</a>' if target else label
        if len(rows) > 1:
            label = f'<span class="sf-outcome {outcome_class(row.get("outcome"))}">{label}</span>'
        words.append(label + _run_mark(row, n_runs) + differs_mark(row, n_runs))
    colour = outcome_class(rows[0].get("outcome")) if len(rows) == 1 else "sf-o-mixed"
    title = " | ".join(_tooltip(row, n_runs) for row in rows)
    return f'<td class="sf-cell {colour}" title="{title}">{"<br>".join(words)}</td>'


def _columns(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    found = {(field(r, "device"), field(r, "dtype")) for r in rows}
    return sorted(found, key=lambda c: (_order(c[0], DEVICE_ORDER), _order(c[1], DTYPE_ORDER)))


def _head(columns: list[tuple[str, str]]) -> list[str]:
    """Two header rows: devices (spanning their dtypes), then dtypes."""
    devices: list[list[Any]] = []
    for device, _ in columns:
        if devices and devices[-1][0] == device:
            devices[-1][1] += 1
        else:
            devices.append([device, 1])
    top = "".join(f'<th colspan="{span}" scope="colgroup">{text(d)}</th>' for d, span in devices)
    bottom = "".join(f'<th scope="col">{text(dtype)}</th>' for _, dtype in columns)
    return ["<thead>", f'<tr><th rowspan="2" scope="col" class="sf-impl">Implementation</th>{top}</tr>',
            f"<tr>{bottom}</tr>", "</thead>"]


def results_matrix(rows: Sequence[dict[str, Any]], anchors: dict[int, str], n_runs: int = 1) -> str:
    """An HTML table of a claim's rows: a group per property, a row per implementation,
    a column per device and dtype. ``anchors`` maps ``id(row)`` to the id of its details."""
    rows = list(rows)
    columns = _columns(rows)
    groups: dict[tuple[bool, str], dict[str, dict[tuple[str, str], list[dict[str, Any]]]]] = \
        defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    expects: dict[str, str] = {}
    for row in rows:
        prop = field(row, "property")
        expects.setdefault(prop, plain(row.get("expect")))
        groups[expects[prop] == "counterexample", prop][field(row, "implementation")][
            field(row, "device"), field(row, "dtype")].append(row)
    lines = ['<div class="sf-scroll sf-matrix-wrap">', '<table class="sf-matrix">', *_head(columns), "<tbody>"]
    for (_, prop), impls in sorted(groups.items()):
        role = _ROLE.get(expects[prop], "")
        role = f' <span class="sf-role">{role}</span>' if role else ""
        lines.append(f'<tr class="sf-group"><th colspan="{len(columns) + 1}" scope="rowgroup">'
                     f'<code class="sf-prop">{breakable(prop)}</code>{role}</th></tr>')
        for impl in sorted(impls):
            cells = "".join(_cell(impls[impl].get(c, []), anchors, n_runs) for c in columns)
            lines.append(f'<tr><th scope="row" class="sf-impl">{text(impl)}</th>{cells}</tr>')
    lines += ["</tbody>", "</table>", "</div>"]
    return "\n".join(lines)


def _sort_key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(field(row, k, "") for k in ("claim", "property", "implementation", "device", "dtype"))


def rows_table(rows: Sequence[dict[str, Any]], with_claim: bool = False, n_runs: int = 1) -> str:
    """An HTML table of report rows with their examples and time, one line per row.

    ``with_claim`` adds a first column with each row's claim id; with several runs a
    column says which run each row came from.
    """
    head = ["Property", "Implementation", "Device", "Dtype", "Outcome", "Examples", "Duration"]
    head = (["Claim"] if with_claim else []) + head + (["Run"] if n_runs > 1 else [])
    lines = ['<div class="sf-scroll">', '<table class="sf-rows">',
             "<thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead>", "<tbody>"]
    for row in sorted(rows, key=_sort_key):
        cells = [f'<code class="sf-prop">{breakable(field(row, "property"))}</code>']
        cells += [text(field(row, k)) for k in ("implementation", "device", "dtype")]
        cells += [outcome_label(row.get("outcome")) + differs_mark(row, n_runs), examples(row), _duration(row)]
        if with_claim:
            cells.insert(0, f'<code class="sf-prop">{breakable(field(row, "claim"))}</code>')
        if n_runs > 1:
            cells.append(str(run_number(row, n_runs) or "?"))
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines += ["</tbody>", "</table>", "</div>"]
    return "\n".join(lines)


def _counterexample_text(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return value, "text"
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str), "json"


def _shortfall(row: dict[str, Any]) -> str:
    """For an inconclusive row: how many examples were checked against how many are required."""
    parts = [f"Checked {number(row.get('examples_checked'), '{}')} examples"]
    if row.get("min_checked") is not None:
        parts.append(f", fewer than the {number(row.get('min_checked'), '{}')} the profile requires")
    if row.get("examples_out_of_domain") is not None:
        parts.append(f"; {number(row.get('examples_out_of_domain'), '{}')} generated examples were out of domain")
    return "".join(parts) + "."


def _deviation(row: dict[str, Any]) -> str:
    """For a known-deviation or fixed row: why it is listed and what it would be without the listing."""
    reason = text(row.get("deviation_reason")) or "no reason given"
    original = outcome_words(row.get("original_outcome")) if row.get("original_outcome") is not None else "?"
    if row.get("outcome") == "fixed":
        return (f"Listed as a known deviation ({reason}), but the row now ends as expected "
                f"(outcome {original}): the listing can be removed.")
    return f"Listed as a known deviation: {reason}. Outcome without the listing: **{original}**."


def row_details(row: dict[str, Any], target: str = "", n_runs: int = 1) -> str:
    """An admonition for a row with a message or counterexample; ``""`` for other rows.

    Failures, errors, inconclusive and fixed rows open expanded; refutations (the
    expected kind of counterexample), known deviations and the notes of skipped or
    not-applicable rows are collapsed. Inconclusive rows always get one (how few
    examples were checked), and so do known deviations and fixed rows (the listing's
    reason). ``target`` puts an anchor of that id before it (matrix cells link to it).
    """
    message = plain(row.get("message"))
    counterexample = row.get("counterexample")
    outcome = known_outcome(row.get("outcome"))
    if not message and counterexample is None and outcome not in _ALWAYS_DETAILED:
        return ""
    title = " · ".join(text(field(row, k)) for k in ("property", "implementation", "device", "dtype"))
    found = run_number(row, n_runs) if n_runs > 1 else None
    title = f"{title}{f' · run {found}' if found else ''}: {outcome_words(row.get('outcome'))}"
    body: list[str] = []
    if outcome == "inconclusive":
        body.append(_shortfall(row))
    if outcome in ("known-deviation", "fixed"):
        body.append(_deviation(row))
    if message:
        body.append(fence(message, "text"))
    if counterexample is not None:
        content, lang = _counterexample_text(counterexample)
        body += ["Counterexample (shrunk):", fence(content, lang)]
    if row.get("reproduce"):
        body += ["Reproduce:", fence(plain(row["reproduce"]), "bash")]
    admonition = f'{_DETAILS_KIND.get(outcome or "", "??? note")} "{title}"\n\n' + indent("\n\n".join(body))
    return (f'<div class="sf-anchor" id="{target}"></div>\n\n' if target else "") + admonition

