"""The documentation site's generated pages: one per claim, one per topic, an overview.

Every page is a pure function of the claims (:func:`specformer.claims.load_claims`), the
properties (:func:`specformer.property.load_properties`) and, when there is one, a report
written by ``specformer run --report PATH``. :func:`generate` joins them into a mapping
from site-relative paths to Markdown; ``docs/hooks.py`` hands that mapping to MkDocs.
Building blocks (tables, badges, admonitions) live in :mod:`specformer.site_tables`.

Reports are untrusted input: every value read from one is escaped where it is written
(:func:`specformer.site_tables.text`, or literal inside fenced code), and values of
unexpected types are shown rather than trusted. Both report schema versions (1 and 2)
are rendered.
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
from specformer.site_tables import (badge, code, count_table, environment_table, fence, field,
                                    indent, legend, plain, results_table, row_details, run_complete,
                                    summarize, text)

REPORT_SCHEMA = "specformer-report"
#: The report schema versions the site renders.
REPORT_SCHEMA_VERSIONS = (1, 2)
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


def records(value: Any) -> list[dict[str, Any]]:
    """The objects of a report list (``rows``, ``implementations``); anything else is skipped."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def implementation_names(report: dict[str, Any]) -> list[str]:
    """Implementations of a report: those it lists that loaded, then any others its rows name."""
    names: list[str] = []
    for impl in records(report.get("implementations")):
        name = field(impl, "name", "")
        if name and name not in names and impl.get("status") != "load-error":
            names.append(name)
    for row in records(report.get("rows")):
        name = field(row, "implementation", "")
        if name and name not in names:
            names.append(name)
    return names


def report_runs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of a (possibly merged, :func:`merge_reports`) report, each with its own summary."""
    return records(report.get("runs")) or [report]


def _run_label(run: dict[str, Any]) -> str:
    """The devices and creation time of a run, escaped: ``cpu, cuda · 2025-01-01T00:00:00Z``."""
    env = run.get("environment")
    env = env if isinstance(env, dict) else {}
    devices = env.get("devices")
    devices = ", ".join(map(plain, devices)) if isinstance(devices, list) else plain(devices)
    return f"{text(devices or '?')} · {text(env.get('created'))}"


def partial_warning(report: dict[str, Any]) -> str:
    """A warning admonition for each run whose ``summary.complete`` is not true; ``""`` when all completed."""
    runs = report_runs(report)
    lines = []
    for n, run in enumerate(runs, start=1):
        if run_complete(run):
            continue
        summary = run.get("summary")
        state = field(summary, "state", "") if isinstance(summary, dict) else ""
        which = "This run" if len(runs) == 1 else f"Run {n} ({_run_label(run)})"
        lines.append(f"{which} did not complete; its results are partial"
                     + (f" (state: {text(state)})." if state else "."))
    if not lines:
        return ""
    return '!!! warning "Partial results"\n\n' + indent("\n\n".join(lines))


def _families(value: Any) -> str:
    """A list of family names, escaped and joined by commas."""
    return text(", ".join(map(plain, value)) if isinstance(value, list) else value)


def implementations_section(report: dict[str, Any]) -> str:
    """Implementations that failed to load (with their message) and families left without rows; ``""`` when none."""
    impls = records(report.get("implementations"))
    out: list[str] = []
    for impl in impls:
        if impl.get("status") != "load-error":
            continue
        body = [f"Named as {code(field(impl, 'spec'))}; it has no rows."]
        message = plain(impl.get("message"))
        if message:
            body.append(fence(message, "text"))
        out.append(f'!!! failure "{text(field(impl, "name"))} did not load"\n\n' + indent("\n\n".join(body)))
    omitted = [f"- {text(field(impl, 'name'))}: {_families(impl['omitted_families'])}"
               for impl in impls if impl.get("omitted_families")]
    if omitted:
        out += ["Families for which an implementation provides no operation, so it has no rows for them:",
                "\n".join(omitted)]
    return "\n\n".join(["## Implementations", *out]) if out else ""


def unknown_claims_section(claims: dict[str, Claim], report: dict[str, Any]) -> str:
    """The rows of claims the spec does not have, with their details; ``""`` when there are none."""
    rows = [r for r in records(report.get("rows")) if field(r, "claim", "") not in claims]
    if not rows:
        return ""
    details = [d for d in map(row_details, rows) if d]
    intro = f"{len(rows)} row{'s' if len(rows) != 1 else ''} of the report name claims this spec does not have."
    return "\n\n".join(["## Rows of unknown claims", intro, results_table(rows, with_claim=True), *details])


def overview_page(claims: dict[str, Claim], props: dict[str, Property],
                  report: dict[str, Any] | None, notes: Iterable[str] = ()) -> str:
    """The claims overview: counts, false or imprecise claims, the outcome matrix, environment.

    A run that did not complete is flagged with a warning at the top; implementations
    that failed to load, families without rows and rows of unknown claims get sections
    of their own.
    """
    checked = {p.claim for p in props.values()}
    out = ["# Claims", *(f"!!! warning \"Incomplete\"\n\n    {n}" for n in notes)]
    if report:
        out.append(partial_warning(report))
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
    for row in records((report or {}).get("rows")):
        by_cell[field(row, "claim", ""), field(row, "implementation", "")].append(row)
    header = ["Claim", "Verdict", *map(text, impls)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for c in claims.values():
        cells = [f"[{c.title.replace('|', '/')}]({c.id}.md)", c.verdict,
                 *(summarize(by_cell[c.id, i]) for i in impls)]
        lines.append("| " + " | ".join(cells) + " |")
    out.append("\n".join(lines))
    out.append(legend() if report else NO_RESULTS)
    if report:
        out += [implementations_section(report), unknown_claims_section(claims, report)]
        runs = report_runs(report)
        out.append("## Environment" if len(runs) == 1 else "## Runs")
        for n, run in enumerate(runs, start=1):
            if len(runs) > 1:
                out.append(f"### Run {n}: {_run_label(run)}")
            out.append(environment_table(run))
    return "\n\n".join(part for part in out if part) + "\n"


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


class ReportError(ValueError):
    """A file that is not a report the site can render; the message names the file and the problem."""


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
    """Read and check a report; :class:`ReportError` when it is not JSON or not a report."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: cannot be read ({exc})") from exc
    except ValueError as exc:
        raise ReportError(f"{path}: not JSON ({exc})") from exc
    problem = report_problem(data)
    if problem:
        raise ReportError(f"{path}: not a {REPORT_SCHEMA} file: {problem}")
    return data


def load_report(path: Path | None) -> dict[str, Any] | None:
    """Read a report (:func:`read_report`); ``None`` when ``path`` is ``None`` or names no file."""
    if path is None or not Path(path).is_file():
        return None
    return read_report(Path(path))


def merge_reports(reports: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """One report holding the rows of several runs (e.g. a CPU run and a CUDA run).

    The merged report keeps each run's environment and summary under ``runs``; rows of
    the same (property, implementation, device, dtype) from a later run replace earlier ones.
    """
    if not reports:
        return None
    if len(reports) == 1:
        return reports[0]
    rows: dict[tuple[str, ...], dict[str, Any]] = {}
    impls: dict[str, dict[str, Any]] = {}
    for report in reports:
        for row in records(report.get("rows")):
            rows[tuple(field(row, k, "") for k in ("property", "implementation", "device", "dtype"))] = row
        for impl in records(report.get("implementations")):
            impls.setdefault(field(impl, "name", ""), impl)
    return {**reports[0], "implementations": list(impls.values()), "rows": list(rows.values()),
            "runs": [{"environment": r.get("environment"), "summary": r.get("summary")} for r in reports]}


def collect_properties() -> tuple[dict[str, Property], list[str]]:
    """Import each property module; return the properties and a note per module that failed."""
    notes: list[str] = []
    try:
        names = property_modules()
    except ImportError as exc:
        return {}, [f"Properties could not be loaded: {text(str(exc))}"]
    for name in names:
        try:
            importlib.import_module(f"specformer.properties.{name}")
        except ImportError as exc:
            notes.append(f"Property module `{name}` could not be imported ({text(str(exc))}); its properties are not shown.")
    props = {k: p for k, p in REGISTRY.items()
             if getattr(p.function, "__module__", "").startswith("specformer.properties.")}
    return props, notes


def generate(report_path: Path | Sequence[Path] | None = None, spec: Path | None = None,
             plots: Mapping[str, Sequence[tuple[str, str]]] | None = None) -> dict[str, str]:
    """All generated pages, by site-relative path; a missing report means no results.

    ``report_path`` may name several reports (runs on different devices); their rows
    are merged (:func:`merge_reports`). A file that is not a report raises
    :class:`ReportError` (a :class:`ValueError`).

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
    for row in records((report or {}).get("rows")):
        rows[field(row, "claim", "")].append(row)
    pages = {"claims/index.md": overview_page(claims, props, report, notes)}
    for claim in claims.values():
        pages[f"claims/{claim.id}.md"] = claim_page(
            claim, by_claim[claim.id], rows[claim.id] if report else None, topics(claims),
            (plots or {}).get(claim.id, ()))
    for topic in topics(claims):
        pages[f"topics/{topic}.md"] = topic_index(topic, claims, topic_title(topic, spec))
    return pages
