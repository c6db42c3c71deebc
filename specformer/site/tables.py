"""Building blocks for the documentation site: escaping, badges, outcomes in words, small tables.

:mod:`specformer.site.pages` assembles pages from these (the results matrix of a claim page is
:mod:`specformer.site.matrix`). Everything here is a pure function of its arguments; a
*row* is one entry of a report's ``rows`` list (see ``docs/report-schema.md``).

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

#: Outcome name -> (the words shown for it, what it means), in the order of the legend.
#: Pages show outcomes in words with a colour (``sf-o-<outcome>`` in
#: ``specformer/site/docs/assets/specformer.css``), never as a symbol alone.
OUTCOMES: dict[str, tuple[str, str]] = {
    "pass": ("pass", "a property stating the claim held on every example"),
    "refuted": ("refuted", "a refutation found its counterexample to the claim as written, as it must"),
    "known-deviation": ("known deviation", "the row is listed as a known deviation of the "
                        "implementation and counts as expected"),
    "fixed": ("fixed", "the row is listed as a known deviation but now ends as expected: "
              "the listing can be removed"),
    "fail": ("fail", "a property found a counterexample to the claim, or a refutation found none"),
    "error": ("error", "the implementation raised, crashed, hung, ran out of memory or returned "
              "something malformed"),
    "inconclusive": ("inconclusive", "too few examples were checked to conclude"),
    "not-applicable": ("not applicable", "the implementation lacks the operation or dtype"),
    "skipped": ("skipped", "the device was not available"),
}

#: What a page says where a report would give results: the site was built without one.
NO_RESULTS = ("No results yet: this site was built without a report. `specformer run --report R.json` "
              "writes one, and `specformer site --report R.json -o DIR` builds the site with its results.")

#: The CSS class suffix of an outcome the site does not know (``sf-o-unknown``).
UNKNOWN = "unknown"

#: How a matrix cell reads, worst first: the first outcome present decides the cell.
#: ``None`` stands for outcomes the site does not know.
_CELL_ORDER: tuple[str | None, ...] = (
    "fail", "error", "inconclusive", None, "fixed", "known-deviation", "refuted", "pass", "skipped",
    "not-applicable")

#: Outcomes whose matrix cell shows how many rows of the cell have them.
_COUNTED = {"fail", "error", "inconclusive", None, "fixed", "known-deviation"}

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
    """An inline badge, styled by ``specformer/site/docs/assets/specformer.css``."""
    kind = slug(family)
    return f'<span class="sf-badge sf-{kind} sf-{kind}-{slug(label)}">{text(label)}</span>'


def known_outcome(outcome: Any) -> str | None:
    """``outcome`` when the site knows it (:data:`OUTCOMES`), else ``None``."""
    return outcome if isinstance(outcome, str) and outcome in OUTCOMES else None


def outcome_class(outcome: Any) -> str:
    """The CSS class of an outcome: ``sf-o-pass``, ..., ``sf-o-unknown``; never built from report text."""
    return f"sf-o-{known_outcome(outcome) or UNKNOWN}"


def outcome_words(outcome: Any) -> str:
    """The outcome in words, escaped: ``"not applicable"``; an unknown one as it is (or ``?``)."""
    known = known_outcome(outcome)
    return OUTCOMES[known][0] if known else (text(outcome) or "?")


def outcome_label(outcome: Any, extra: str = "") -> str:
    """The outcome in words inside a coloured span, e.g. ``<span class="sf-outcome sf-o-pass">pass</span>``.

    ``extra`` (markup of ours, already escaped) follows the words inside the span.
    """
    return f'<span class="sf-outcome {outcome_class(outcome)}">{outcome_words(outcome)}{extra}</span>'


def legend(outcomes: Iterable[str] | None = None) -> str:
    """A list explaining the outcomes (all of them, or those given that the site knows)."""
    shown = [o for o in OUTCOMES if outcomes is None or o in set(outcomes)]
    return "\n".join(f"- {outcome_label(o)}: {OUTCOMES[o][1]}" for o in shown)


def number(value: Any, template: str) -> str:
    """A number formatted with ``template``; anything else escaped as it is, or ``–``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return template.format(value)
    return text(value) or "–"


def summarize(rows: Iterable[dict[str, Any]]) -> str:
    """One matrix cell summarising outcomes across devices and dtypes, in words.

    The worst outcome present decides the cell (:data:`_CELL_ORDER`): ``fail`` (with
    the count of failing rows), then ``error``, ``inconclusive``, outcomes the site does
    not know, ``fixed`` and ``known deviation`` (all counted), then ``refuted`` when
    refutations found their counterexamples, ``pass`` when all that ran passed,
    ``skipped`` when everything was skipped and ``not applicable`` when nothing applied.
    """
    outcomes = [row.get("outcome") for row in rows]
    counts = Counter(known_outcome(o) for o in outcomes)
    if not counts:
        return ""
    total = sum(counts.values())
    for outcome in _CELL_ORDER:
        if counts[outcome]:
            shown = outcome if outcome is not None else next(o for o in outcomes if known_outcome(o) is None)
            extra = f" {counts[outcome]}/{total}" if outcome in _COUNTED else ""
            return outcome_label(shown, extra)
    raise AssertionError("every key of counts is in _CELL_ORDER")  # pragma: no cover


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
    fields = [("rows", number(summary.get("rows"), "{}"))]
    by_outcome = summary.get("by_outcome")
    if isinstance(by_outcome, dict):
        fields.append(("outcomes", ", ".join(f"{outcome_label(k)}: {number(v, '{}')}"
                                             for k, v in by_outcome.items())))
    elif by_outcome is not None:
        fields.append(("outcomes", text(by_outcome)))
    ok = summary.get("ok") is True
    fields.append(("ok", "yes" if ok and complete else "no (the run did not complete)" if ok else "no"))
    if "state" in summary:
        fields.append(("state", text(summary["state"]) or "–"))
    fields.append(("complete", "yes" if complete else "no"))
    if summary.get("duration_s") is not None:
        fields.append(("duration", number(summary["duration_s"], "{:.1f} s")))
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
