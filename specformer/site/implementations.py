"""Conformance by implementation: a compatibility table and a page per implementation.

:func:`compatibility_page` is the table an engineer choosing a library looks at: one row
per implementation, one column per family, each cell counting the family's claims by how
the implementation fared (the worst outcome of a claim's rows decides, as in the claims
overview). :func:`implementation_page` gives one implementation's operations (by family),
its declared capabilities when the report carries them, its outcome claim by claim, the
call into it of each failure (the call ``specformer run`` prints, as Python, and the
``specformer replay`` command that saves its inputs; a failing claim's cell links to them),
and every known deviation with its reason and evidence.

Reports are untrusted: names, messages and capabilities are escaped where they are
written; file names of the pages are built from a slug of the name and a counter, never
from the name alone. This module does not read files.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any, Mapping, Sequence

from specformer.claims import Claim
from specformer.report.summary import grouped_failures, printed_call, replay_command
from specformer.site.families import families, family_title
from specformer.site.spectext import title_link
from specformer.site.runs import RUN_KEY
from specformer.site.tables import (NO_RESULTS, OUTCOMES, badge, code, fence, field, known_outcome, outcome_label,
                                    plain, slug, summarize, text)

#: The pseudo-implementation of the properties that call no implementation.
MATH = "math"
#: Outcomes that count as "as expected" for a claim of an implementation.
EXPECTED = ("pass", "refuted", "known-deviation")
#: Worst first: the first outcome present among a claim's rows decides the claim.
_WORST = ("fail", "error", "inconclusive", None, "fixed", "known-deviation", "refuted", "pass", "skipped",
          "not-applicable")


def page_names(names: Sequence[str]) -> dict[str, str]:
    """A distinct page stem for each implementation name: a slug of a plain name (letters,
    digits, ``.``, ``_``, ``-``), ``implementation-N`` for any other, a counter where they collide."""
    stems: dict[str, str] = {}
    used: set[str] = {"index"}
    for n, name in enumerate(names, start=1):
        stem = (slug(name) if re.fullmatch(r"[A-Za-z0-9._-]{1,64}", name) else "") or f"implementation-{n}"
        while stem in used:
            stem = f"{stem}-{n}"
        used.add(stem)
        stems[name] = stem
    return stems


def claim_outcome(rows: Sequence[dict[str, Any]]) -> str | None:
    """The outcome that decides a claim for one implementation (worst first); ``None`` for unknown ones."""
    found = {known_outcome(r.get("outcome")) for r in rows}
    return next((o for o in _WORST if o in found), "not-applicable")


def _by_impl_claim(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[field(row, "implementation", ""), field(row, "claim", "")].append(row)
    return grouped


def _family_cell(outcomes: Counter[str | None]) -> str:
    """A compatibility cell: claims as expected out of those that applied, and the others counted."""
    applied = sum(n for o, n in outcomes.items() if o not in ("not-applicable", "skipped"))
    if not applied:
        return '<span class="sf-outcome sf-o-not-applicable">not applicable</span>'
    good = sum(outcomes[o] for o in EXPECTED)
    worst = next(o for o in _WORST if outcomes[o])
    label = outcome_label(worst if worst in ("fail", "error", "inconclusive", None, "fixed") else "pass",
                          f" {good}/{applied}")
    others = [f"{outcomes[o]} {OUTCOMES[o][0]}" for o in ("fail", "error", "inconclusive", "fixed", "known-deviation")
              if outcomes[o]]
    return label + (f"<br><small>{', '.join(others)}</small>" if others else "")


def compatibility_page(claims: Mapping[str, Claim], names: Sequence[str], rows: Sequence[dict[str, Any]],
                       records: Sequence[dict[str, Any]] = ()) -> str:
    """Implementations × families: how many of each family's claims ended as expected."""
    out = ["# Implementations",
           "Which implementation conforms to which family of claims. A cell counts the family's claims "
           "that ended as expected for the implementation (passed, refuted as written, or a known "
           "deviation) out of those that applied; the colour is the worst outcome among them. The "
           "implementation's page lists every claim and deviation."]
    if not names:
        return "\n\n".join(out + [NO_RESULTS]) + "\n"
    fams = families(claims)
    grouped = _by_impl_claim(rows)
    stems = page_names(names)
    header = ["Implementation", *(family_title(f) for f in fams)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in names:
        if name == MATH:
            continue
        cells = [f"[{text(name)}]({stems[name]}.md)"]
        for fam in fams:
            outcomes: Counter[str | None] = Counter()
            for claim in claims.values():
                if claim.family == fam and grouped.get((name, claim.id)):
                    outcomes[claim_outcome(grouped[name, claim.id])] += 1
            cells.append(_family_cell(outcomes) if outcomes else "–")
        lines.append("| " + " | ".join(cells) + " |")
    out.append("\n".join(lines))
    if MATH in names:
        out.append(f"Properties that call no implementation run once, against the mathematics: their outcomes are "
                   f"on the page of [{MATH}]({stems[MATH]}.md).")
    failed = [r for r in records if r.get("status") == "load-error"]
    if failed:
        out.append("Did not load: " + ", ".join(text(field(r, "name")) for r in failed) + ".")
    return "\n\n".join(out) + "\n"


def _operations_section(record: dict[str, Any] | None) -> str:
    ops = record.get("operations") if isinstance(record, dict) else None
    if not isinstance(ops, list) or not ops:
        return "The report does not list this implementation's operations."
    try:
        from specformer.protocol import family_of_operation
    except ImportError:  # pragma: no cover - the protocol ships with the package
        family_of_operation = None  # type: ignore[assignment]
    by_family: dict[str, list[str]] = defaultdict(list)
    for op in ops:
        name = plain(op)
        try:
            fam = family_of_operation(name) if family_of_operation else "?"
        except KeyError:
            fam = "?"
        by_family[fam].append(name)
    lines = [f"- {text(family_title(f)) if f != '?' else 'unknown operations'}: "
             + ", ".join(f"[{code(o)}](../protocol/{f}.md)" if f != "?" else code(o) for o in sorted(ops_))
             for f, ops_ in by_family.items()]
    return "\n".join(lines)


def _listed(value: Any, every: str) -> str:
    """A declared list of values, escaped; ``every`` when the declaration leaves it open (``None``)."""
    if value is None:
        return every
    if isinstance(value, list):
        return ", ".join(code(plain(v)) for v in value) or "none"
    return text(plain(value))


def _capabilities_section(record: dict[str, Any] | None) -> str:
    """The implementation's declared capabilities, as the report carries them (``None``: none declared)."""
    if not isinstance(record, dict) or "capabilities" not in record:
        return ""
    caps = record.get("capabilities")
    if caps is None:
        return ("## Declared capabilities\n\nNone declared: every protocol operation it has, on every dtype and "
                "device, under every convention; every example there is owed an answer.")
    if not isinstance(caps, dict):
        return "## Declared capabilities\n\n" + code(plain(caps))
    lines = ["| Declared | Values |", "|---|---|",
             f"| operations | {_listed(caps.get('operations'), 'every protocol operation it has')} |",
             f"| dtypes | {_listed(caps.get('dtypes'), 'every dtype')} |",
             f"| devices | {_listed(caps.get('devices'), 'every device')} |"]
    if caps.get("arrays") not in (None, "torch"):
        lines.append(f"| arrays | {code(plain(caps.get('arrays')))} (its worker converts arguments and answers) |")
    conventions = caps.get("conventions")
    if isinstance(conventions, dict):
        for name in sorted(conventions, key=plain):
            lines.append(f"| convention {code(plain(name))} | {_listed(conventions[name], 'every value')} |")
    elif conventions is not None:
        lines.append(f"| conventions | {text(plain(conventions))} |")
    return ("## Declared capabilities\n\nRows outside the declaration are not applicable at once; inside it, "
            "refusing an example is an error. A convention not named means every value.\n\n" + "\n".join(lines))


def _failing_calls(mine: Sequence[dict[str, Any]], sources: Sequence[str]) -> tuple[dict[str, str], str]:
    """The anchor of each failing claim's first failure, and the section showing each failure's call into the
    implementation as Python and the command that saves its inputs (``""`` when no failure has a call).

    ``sources`` names the report file of each run (a row's :data:`RUN_KEY` counts from 1).
    """
    anchors: dict[str, str] = {}
    parts: list[str] = []
    texts = ("claim", "property", "implementation", "device", "dtype", "outcome", "message", "call", "counterexample",
             "reproduce")  # a report is untrusted: every value read as text
    failing = [{**{key: plain(r.get(key)) for key in texts}, "as_expected": False, RUN_KEY: r.get(RUN_KEY)}
               for r in mine if known_outcome(r.get("outcome")) in ("fail", "error") and plain(r.get("call"))]
    for group in grouped_failures(failing):
        row = group[0]
        call, _ = printed_call(row)
        if not call:
            continue
        anchor = f"failure-{len(parts) + 1}"
        anchors.setdefault(field(row, "claim", ""), anchor)
        run = row.get(RUN_KEY)
        report = sources[run - 1] if isinstance(run, int) and 0 < run <= len(sources) and sources[run - 1] else \
            "REPORT"
        labels = ", ".join(dict.fromkeys(f"{field(r, 'device')}/{field(r, 'dtype')}" for r in group))
        body = [f'<a id="{anchor}"></a>\n**{text(field(row, "claim"))}**: {code(field(row, "property"))} '
                f"on {text(labels)}, {outcome_label(row.get('outcome'))}"]
        message = plain(row.get("message")).strip()
        if message:
            body.append(fence(message, "text"))
        body.append(fence("\n".join(call), "python"))
        command = replay_command(row, report)
        if command:
            unknown = " (`REPORT`: the report file, which this page does not know)" if report == "REPORT" else ""
            body.append(f"Its inputs, saved for a REPL{unknown}:\n\n" + fence(command, "sh"))
        parts.append("\n\n".join(body))
    if not parts:
        return anchors, ""
    return anchors, ("## Failing calls\n\nEach failure's call into the implementation, as `specformer run` printed "
                     "it: the first call whose answer differs from the reference's, else the last one made. Paste "
                     "it after `impl = ...` (the implementation).\n\n" + "\n\n".join(parts))


def implementation_page(name: str, claims: Mapping[str, Claim], rows: Sequence[dict[str, Any]],
                        record: dict[str, Any] | None = None, stem: str | None = None,
                        sources: Sequence[str] = ()) -> str:
    """One implementation: operations, capabilities, outcome claim by claim, failing calls, deviations.

    The page's heading (which MkDocs also writes, unescaped, as the page title) is the
    page's ``stem``, a slug of ours; a name that differs from it is shown, escaped, below.
    ``sources``: the report file of each merged run, for the replay commands.
    """
    mine = [r for r in rows if field(r, "implementation", "") == name]
    anchors, failing = _failing_calls(mine, sources)
    by_claim: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in mine:
        by_claim[field(row, "claim", "")].append(row)
    stem = stem or page_names([name])[name]
    out = [f"# {stem}"]
    if name != stem:
        out.append(f"Reported as {code(name)}.")
    spec = field(record, "spec", "") if record else ""
    if spec:
        out.append(f"Loaded from {code(spec)}.")
    out += ["## Operations", _operations_section(record), _capabilities_section(record)]
    outcomes = Counter(claim_outcome(rs) for rs in by_claim.values())
    out += ["## Outcome by claim",
            ", ".join(f"{n} {OUTCOMES[o][0] if o else 'unknown'}" for o, n in outcomes.most_common())
            + f" ({len(by_claim)} claims)." if by_claim else "No rows for this implementation."]
    for fam in families(claims):
        applied, folded = [], []
        for claim in claims.values():
            if claim.family != fam or claim.id not in by_claim:
                continue
            call = f" · [the failing call](#{anchors[claim.id]})" if claim.id in anchors else ""
            line = (f"| {title_link(claim, '../claims/')} | "
                    f"{badge(claim.verdict, 'verdict')} | {summarize(by_claim[claim.id])}{call} |")
            (folded if claim_outcome(by_claim[claim.id]) in ("not-applicable", "skipped") else applied).append(line)
        if not applied and not folded:
            continue
        out.append(f"### {family_title(fam)}")
        head = "| Claim | Verdict of the documents' claim | Outcome |\n|---|---|---|\n"
        if applied:
            out.append(head + "\n".join(applied))
        if folded:
            # markdown="1" (md_in_html): the table inside is Markdown, rendered like the one above
            out.append(f'<details class="sf-na" markdown="1">\n<summary>{len(folded)} claims not applicable'
                       '</summary>\n\n' + head + "\n".join(folded) + "\n\n</details>")
    out.append(failing)
    deviations = [r for r in mine if r.get("outcome") in ("known-deviation", "fixed") or plain(r.get("deviation_reason"))]
    out.append("## Deviations")
    if not deviations:
        out.append("None listed.")
    else:
        lines = ["| Claim | Property | Device, dtype | Outcome | Reason |", "|---|---|---|---|---|"]
        for r in deviations:
            claim = field(r, "claim", "")
            link = f"[{text(claim)}](../claims/{claim}.md)" if claim in claims else text(claim)
            lines.append(f"| {link} | {code(field(r, 'property'))} | {text(field(r, 'device'))}, "
                         f"{text(field(r, 'dtype'))} | {outcome_label(r.get('outcome'))} | "
                         f"{text(field(r, 'deviation_reason', ''))} |")
        out.append("Rows listed in `specformer/adapters/deviations.toml`: the library contradicts the claim, "
                   "and the reason says why. The claim's page has the counterexample (evidence).\n\n"
                   + "\n".join(lines))
    return "\n\n".join(part for part in out if part) + "\n"
