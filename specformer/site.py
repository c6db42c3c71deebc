"""The documentation site's generated pages: one per claim, one per topic, an overview.

Every page is a pure function of the claims (:func:`specformer.claims.load_claims`), the
properties (:func:`specformer.property.load_properties`) and, when there is one, a report
written by ``specformer run --report PATH``. :func:`generate` joins them into a mapping
from site-relative paths to Markdown; ``docs/hooks.py`` hands that mapping to MkDocs.
Building blocks (tables, badges, admonitions) live in :mod:`specformer.site_tables`.
"""

from __future__ import annotations

import importlib
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from specformer.claims import NEEDS_REFUTATION, Claim, load_claims, spec_dir
from specformer.property import REGISTRY, Property, property_modules
from specformer.site_tables import (badge, count_table, environment_table, fence, legend,
                                    results_table, row_details, summarize)

REPORT_SCHEMA = "specformer-report"
REPORT_SCHEMA_VERSION = 1
NO_RESULTS = "No results yet: run `specformer run`."
#: Site folder of the claim pages' figures (:mod:`specformer.site_plots`, added by ``docs/hooks.py``).
PLOTS_DIR = "assets/plots"


_TOPIC_LINK = re.compile(r"\]\(([a-z][a-z0-9]*)\.md(?:#[^)\s]*)?\)")


def _prose(claim: Claim, known_topics: Iterable[str] = ()) -> str:
    """The claim's prose, with links to spec files (``attention.md``) sent to topic pages."""
    known = set(known_topics) | {claim.topic}
    return _TOPIC_LINK.sub(
        lambda m: f"](../topics/{m.group(1)}.md)" if m.group(1) in known else m.group(0), claim.prose)


def display_math(tex: str) -> str:
    """LaTeX as a display-math block; text that already holds ``$`` is left as it is."""
    return tex.strip() if "$" in tex else f"$$\n{tex.strip()}\n$$"


def _property_section(prop: Property) -> str:
    if prop.expect == "hold":
        role = "**Checks the claim**: every example must hold (`expect: hold`)."
    else:
        role = ("**Refutes the claim as written**: Hypothesis must find a counterexample "
                "(`expect: counterexample`).")
    needs = ", ".join(f"`{n}`" for n in prop.needs) if prop.needs else "nothing (runs once, against `math`)"
    try:
        code = prop.source
    except (OSError, TypeError):
        code = "# source unavailable"
    parts = [f"### `{prop.qualname}`", role, f"Needs: {needs}."]
    if prop.doc:
        parts.append(prop.doc)
    parts.append(fence(code, "python"))
    return "\n\n".join(parts)


def _results_section(claim: Claim, rows: list[dict[str, Any]] | None) -> str:
    if rows is None:
        return NO_RESULTS
    if not rows:
        return ("Not checked by any property: see the reason above." if not claim.checkable
                else "The report has no rows for this claim.")
    details = [d for d in map(row_details, rows) if d]
    return "\n\n".join([results_table(rows), legend(), *details])


_MD_SPECIAL = re.compile(r"([\\`*_\[\]])")


def plot_markdown(file: str, caption: str) -> str:
    """A figure of :data:`PLOTS_DIR`: the image, with the caption as alt text, then the caption in italics."""
    text = _MD_SPECIAL.sub(r"\\\1", " ".join(caption.split()))
    return f"![{text}](../{PLOTS_DIR}/{file})\n\n*{text}*"


def claim_page(claim: Claim, props: Iterable[Property], rows: list[dict[str, Any]] | None,
               known_topics: Iterable[str] = (), plots: Iterable[tuple[str, str]] = ()) -> str:
    """The page of one claim: sources, statement, verdict, prose, plots, properties and results.

    ``rows`` are the report rows for this claim, ``None`` when there is no report.
    Links in the prose to a spec file of ``known_topics`` (``[masks](masks.md)``) are
    sent to that topic's page. ``plots`` are ``(file name, caption)`` pairs of images in
    :data:`PLOTS_DIR`; with none the page has no *Plots* section.
    """
    out = [
        f"# {claim.title}",
        f"{badge(claim.kind, 'kind')} {badge(claim.verdict, 'verdict')}",
        f"`{claim.id}` · topic [{claim.topic}](../topics/{claim.topic}.md) · `spec/{claim.file}`",
        "## Sources",
        "\n".join(
            f"- *{s.title}* (`{s.document}`), section “{s.section}”" + (f": {s.says}" if s.says else "")
            for s in claim.sources
        ),
        "## Statement",
        display_math(claim.statement),
    ]
    for heading, value, math in (
        ("As written", claim.as_written, False),
        ("Corrected", claim.corrected, True),
        ("Contradiction", claim.contradiction, False),
        ("Reason", claim.reason, False),
        ("False-alarm bound", claim.false_alarm, False),
        ("Note", claim.note, False),
    ):
        if value:
            out += [f"## {heading}", display_math(value) if math else value.strip()]
    if claim.prose:
        out += ["## Discussion", _prose(claim, known_topics)]
    figures = [plot_markdown(file, caption) for file, caption in plots]
    if figures:
        out += ["## Plots", *figures]
    props = list(props)
    out.append("## Properties")
    if props:
        out += [_property_section(p) for p in sorted(props, key=lambda p: (p.expect != "hold", p.qualname))]
    else:
        out.append("No property checks this claim." if not claim.checkable
                   else "No property for this claim is loaded.")
    out += ["## Results", _results_section(claim, rows)]
    return "\n\n".join(out) + "\n"


def _wrong_line(claim: Claim) -> str:
    corrected = " ".join(claim.corrected.split())
    corrected = corrected if "$" in corrected else f"\\({corrected}\\)"
    return (f"- [{claim.title}]({claim.id}.md), *{claim.verdict}*. "
            f"As written: “{claim.as_written.strip()}”; corrected: {corrected}")


def implementation_names(report: dict[str, Any]) -> list[str]:
    """Implementations of a report: those it lists, then any others its rows name."""
    names = [impl["name"] for impl in report.get("implementations", [])]
    for row in report.get("rows", []):
        if row.get("implementation") not in names:
            names.append(row.get("implementation"))
    return [n for n in names if n]


def overview_page(claims: dict[str, Claim], props: dict[str, Property],
                  report: dict[str, Any] | None, notes: Iterable[str] = ()) -> str:
    """The claims overview: counts, false or imprecise claims, the outcome matrix, environment."""
    checked = {p.claim for p in props.values()}
    out = ["# Claims", *(f"!!! warning \"Incomplete\"\n\n    {n}" for n in notes)]
    n_topics = len(topics(claims))
    out += [f"{len(claims)} claims in {n_topics} topic{'s' if n_topics != 1 else ''}; "
            f"{len(checked & claims.keys())} with at least one loaded property.",
            "Topics: " + ", ".join(f"[{t}](../topics/{t}.md)" for t in topics(claims))]
    out += ["## Counts", count_table(Counter(c.verdict for c in claims.values()), "Verdict"),
            count_table(Counter(c.kind for c in claims.values()), "Kind")]
    wrong = [c for c in claims.values() if c.verdict in NEEDS_REFUTATION]
    out.append("## False or imprecise as stated")
    out.append("\n".join(map(_wrong_line, wrong)) or "None.")
    out.append("## Matrix")
    impls = implementation_names(report) if report else []
    by_cell: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in (report or {}).get("rows", []):
        by_cell[row.get("claim"), row.get("implementation")].append(row)
    header = ["Claim", "Verdict", *impls]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for c in claims.values():
        cells = [f"[{c.title.replace('|', '/')}]({c.id}.md)", c.verdict,
                 *(summarize(by_cell[c.id, i]) for i in impls)]
        lines.append("| " + " | ".join(cells) + " |")
    out.append("\n".join(lines))
    out.append(legend() if report else NO_RESULTS)
    if report:
        runs = report.get("runs") or [report]
        out.append("## Environment" if len(runs) == 1 else "## Runs")
        for n, run in enumerate(runs, start=1):
            if len(runs) > 1:
                env = run.get("environment") or {}
                out.append(f"### Run {n}: {', '.join(env.get('devices') or ['?'])} · {env.get('created', '')}")
            out.append(environment_table(run))
    return "\n\n".join(out) + "\n"


def topics(claims: dict[str, Claim]) -> list[str]:
    """The topics that hold at least one claim, sorted."""
    return sorted({c.topic for c in claims.values()})


def topic_title(topic: str, spec: Path | None = None) -> str:
    """The title of a topic: the first ``# `` heading of its spec file, else the topic name."""
    found = sorted((spec or spec_dir()).glob(f"*/{topic}.md"))
    path = found[0] if found else (spec or spec_dir()) / f"{topic}.md"
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return topic.capitalize()


def topic_index(topic: str, claims: dict[str, Claim], title: str | None = None) -> str:
    """The page of one topic: a table of its claims with kind and verdict."""
    mine = [c for c in claims.values() if c.topic == topic]
    lines = ["| Claim | Kind | Verdict |", "|---|---|---|"]
    lines += [f"| [{c.title.replace('|', '/')}](../claims/{c.id}.md) | {c.kind} | {c.verdict} |" for c in mine]
    return "\n\n".join([f"# {title or topic.capitalize()}",
                        f"{len(mine)} claims from `spec/{mine[0].file if mine else topic + '.md'}`.", "\n".join(lines)]) + "\n"


def nav(claims: dict[str, Claim], spec: Path | None = None) -> list[Any]:
    """MkDocs ``nav`` entries for the generated pages: the overview, then a section per topic."""
    entries: list[Any] = [{"Overview": "claims/index.md"}]
    for topic in topics(claims):
        pages = [f"topics/{topic}.md"] + [f"claims/{c.id}.md" for c in claims.values() if c.topic == topic]
        entries.append({topic_title(topic, spec): pages})
    return entries


def load_report(path: Path | None) -> dict[str, Any] | None:
    """Read a report; ``None`` when ``path`` is ``None`` or names no file."""
    if path is None or not Path(path).is_file():
        return None
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    if report.get("schema") != REPORT_SCHEMA or report.get("schema_version") != REPORT_SCHEMA_VERSION:
        raise ValueError(f"{path}: not a {REPORT_SCHEMA} version {REPORT_SCHEMA_VERSION} file")
    return report


def merge_reports(reports: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """One report holding the rows of several runs (e.g. a CPU run and a CUDA run).

    The merged report keeps each run's environment and summary under ``runs``; rows of
    the same (property, implementation, device, dtype) from a later run replace earlier ones.
    """
    if not reports:
        return None
    if len(reports) == 1:
        return reports[0]
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    impls: dict[str, dict[str, Any]] = {}
    for report in reports:
        for row in report.get("rows", []):
            rows[row.get("property"), row.get("implementation"), row.get("device"), row.get("dtype")] = row
        for impl in report.get("implementations", []):
            impls.setdefault(impl.get("name"), impl)
    return {**reports[0], "implementations": list(impls.values()), "rows": list(rows.values()),
            "runs": [{"environment": r.get("environment"), "summary": r.get("summary")} for r in reports]}


def collect_properties() -> tuple[dict[str, Property], list[str]]:
    """Import each property module; return the properties and a note per module that failed."""
    notes: list[str] = []
    try:
        names = property_modules()
    except ImportError as exc:
        return {}, [f"Properties could not be loaded: {exc}"]
    for name in names:
        try:
            importlib.import_module(f"specformer.properties.{name}")
        except ImportError as exc:
            notes.append(f"Property module `{name}` could not be imported ({exc}); its properties are not shown.")
    props = {k: p for k, p in REGISTRY.items()
             if getattr(p.function, "__module__", "").startswith("specformer.properties.")}
    return props, notes


def generate(report_path: Path | Sequence[Path] | None = None, spec: Path | None = None,
             plots: Mapping[str, Sequence[tuple[str, str]]] | None = None) -> dict[str, str]:
    """All generated pages, by site-relative path; a missing report means no results.

    ``report_path`` may name several reports (runs on different devices); their rows
    are merged (:func:`merge_reports`).

    ``plots`` maps a claim id to the ``(file name, caption)`` pairs of its figures in
    :data:`PLOTS_DIR` (the caller writes the images; see ``docs/hooks.py``).
    """
    claims = load_claims(spec)
    props, notes = collect_properties()
    paths = [report_path] if isinstance(report_path, (str, Path)) or report_path is None else list(report_path)
    report = merge_reports([r for r in map(load_report, paths) if r is not None])
    by_claim: dict[str, list[Property]] = defaultdict(list)
    for prop in props.values():
        by_claim[prop.claim].append(prop)
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in (report or {}).get("rows", []):
        rows[row.get("claim")].append(row)
    pages = {"claims/index.md": overview_page(claims, props, report, notes)}
    for claim in claims.values():
        pages[f"claims/{claim.id}.md"] = claim_page(
            claim, by_claim[claim.id], rows[claim.id] if report else None, topics(claims),
            (plots or {}).get(claim.id, ()))
    for topic in topics(claims):
        pages[f"topics/{topic}.md"] = topic_index(topic, claims, topic_title(topic, spec))
    return pages
