"""The documentation site's generated pages: one per claim, one per topic, an overview.

Every page is a pure function of the claims (:func:`specformer.claims.load_claims`), the
properties (:func:`specformer.property.load_properties`) and, when there is one, a report
written by ``specformer run --report PATH``. :func:`generate` joins them into a mapping
from site-relative paths to Markdown; :mod:`specformer.site.hooks` hands that mapping to MkDocs.
Building blocks live in :mod:`specformer.site.tables` (escaping, badges, outcomes),
:mod:`specformer.site.matrix` (a claim's results matrix and row details) and
:mod:`specformer.site.runs` (reading and merging reports, naming their runs; its
report-reading names are re-exported here).

Reports are untrusted input: every value read from one is escaped where it is written
(:func:`specformer.site.tables.text`, or literal inside fenced code), and values of
unexpected types are shown rather than trusted. Both report schema versions (1 and 2)
are rendered. Spec text (titles, sources, statements, notes, prose) and property
docstrings are Markdown of ours and render as such, through
:func:`specformer.site.spectext.spec_markdown`: a tag-like ``</w>`` is shown as text and
a document cited by number is named by its title.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from specformer.claims import NEEDS_REFUTATION, Claim, load_claims, spec_dir
from specformer.property import REGISTRY, Property, property_modules

try:  # what a property that calls no implementation is about, and how the site says it
    from specformer.property import ABOUT
except ImportError:  # pragma: no cover - a package without the labels
    ABOUT: dict[str, str] = {}
from specformer.site.families import (FAMILY_ORDER, families, family_page, family_title, family_topics,
                                      source_line)
from specformer.site.families import nav as family_nav
from specformer.site.implementations import compatibility_page, implementation_page, page_names
from specformer.site.protocol import protocol_families, protocol_index, protocol_page
from specformer.site.spectext import escape_html, heading_text, spec_inline, spec_markdown, title_link
from specformer.site.matrix import anchor, results_matrix, row_details, rows_table
from specformer.site.runs import (REPORT_SCHEMA, REPORT_SCHEMA_VERSIONS, ReportError, load_report,
                                  differs, merge_reports, read_report, records, report_problem, report_runs,
                                  run_label, run_number, runs_legend)
from specformer.site.tables import (NO_RESULTS, badge, code, count_table, environment_table, fence, field, indent,
                                    legend, plain, run_complete, summarize, text)

#: The public names: the page builders of this module and the report-reading names of
#: :mod:`specformer.site.runs` (:mod:`specformer.site.hooks` imports them from here).
__all__ = [
    "NO_RESULTS", "PLOTS_DIR", "claim_page", "collect_properties", "display_math", "generate",
    "implementation_names", "implementations_section", "nav", "overview_page", "partial_warning",
    "plot_markdown", "topic_index", "topic_title", "topics", "unknown_claims_section",
    "REPORT_SCHEMA", "REPORT_SCHEMA_VERSIONS", "ReportError", "load_report", "merge_reports", "read_report",
    "records", "report_problem", "report_runs",
]

#: Site folder of the claim pages' figures (:mod:`specformer.site.plots`, added by :mod:`specformer.site.hooks`).
PLOTS_DIR = "assets/plots"


_TOPIC_LINK = re.compile(r"\]\(([a-z][a-z0-9]*)\.md(?:#[^)\s]*)?\)")


def cite_ids(value: str) -> str:
    """Spec text as a page writes it (:func:`specformer.site.spectext.spec_markdown`): tags
    shown as text, and documents cited by number (``(003)``, ``002's``) named by title with
    the file in a tooltip."""
    return spec_markdown(value)


def _prose(claim: Claim, known_topics: Iterable[str] = ()) -> str:
    """The claim's prose, with links to spec files (``attention.md``) sent to topic pages,
    tags shown as text and documents named by title (:func:`cite_ids`)."""
    known = set(known_topics) | {claim.topic}
    return cite_ids(_TOPIC_LINK.sub(
        lambda m: f"](../topics/{m.group(1)}.md)" if m.group(1) in known else m.group(0), claim.prose))


def spec_math(tex: str) -> str:
    """A statement as a page writes it: :func:`display_math`, then :func:`cite_ids`."""
    return cite_ids(display_math(tex))


def display_math(tex: str) -> str:
    """LaTeX as a display-math block; text that already holds ``$`` is left as it is.

    A statement written on several lines keeps them (:func:`formula_lines`): joined into one, a long
    formula ran wider than the page's column."""
    if "$" in tex:
        return tex.strip()
    lines = formula_lines(tex)
    body = lines[0] if len(lines) == 1 else "\\displaylines{" + " \\\\\n".join(lines) + "}"
    return f"$$\n{body}\n$$"


_NESTING = re.compile(r"(?P<open>\\begin\{[^}]*\}|\\left\b|(?<!\\)\{)|(?P<close>\\end\{[^}]*\}|\\right\b|(?<!\\)\})")


def formula_lines(tex: str) -> list[str]:
    """The source lines of a formula where it may break: a line ends a piece only outside every brace group,
    ``\\left ... \\right`` pair and environment (a matrix's rows stay in their environment)."""
    pieces: list[str] = []
    current: list[str] = []
    depth = 0
    for line in tex.strip().splitlines():
        current.append(line.strip())
        depth += sum(1 if m.group("open") else -1 for m in _NESTING.finditer(line))
        if depth <= 0:
            pieces.append(" ".join(current).rstrip())
            current, depth = [], 0
    if current:
        pieces.append(" ".join(current))
    return [piece for piece in pieces if piece]


def _property_section(prop: Property) -> str:
    if prop.expect == "hold":
        role = "**Checks the claim**: every example must hold (`expect: hold`)."
    else:
        role = ("**Refutes the claim as written**: Hypothesis must find a counterexample "
                "(`expect: counterexample`).")
    about = getattr(prop, "about", None)
    if prop.needs:
        needs = ", ".join(f"`{n}`" for n in prop.needs)
    elif about:
        needs = f"no implementation: checked on the mathematics, {ABOUT.get(about, about)}"
    else:
        needs = "no implementation (runs once, against `math`)"
    try:
        code = prop.source
    except (OSError, TypeError):
        code = "# source unavailable"
    parts = [f"### `{prop.qualname}`", role, f"Needs: {needs}."]
    if prop.doc:
        parts.append(cite_ids(prop.doc))
    parts.append(fence(code, "python"))
    return "\n\n".join(parts)


def _results_section(claim: Claim, rows: list[dict[str, Any]] | None,
                     runs: Sequence[dict[str, Any]] = ()) -> str:
    """The matrix of outcomes, its legends (outcomes, runs), every row's numbers and the details."""
    if rows is None:
        return NO_RESULTS
    if not rows:
        return ("Not checked by any property: see the reason above." if not claim.checkable
                else "The report has no rows for this claim.")
    n_runs = len(runs)
    ordered = sorted(rows, key=lambda r: tuple(field(r, k, "") for k in ("property", "implementation",
                                                                         "device", "dtype")))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in ordered:
        groups[field(row, "property", ""), field(row, "implementation", "")].append(row)
    folded = {id(r) for rs in groups.values() if all(r.get("outcome") == "not-applicable" for r in rs) for r in rs}
    anchors: dict[int, str] = {}
    details = []
    for row in ordered:
        if id(row) in folded:
            continue
        target = anchor(len(details) + 1)
        block = row_details(row, target, n_runs)
        if block:
            anchors[id(row)] = target
            details.append(block)
    intro = ("One row per property and implementation, one column per device and dtype. "
             "A cell links to its details when there is a message or a counterexample"
             + ("; its superscript is the run it came from (below)." if n_runs > 1 else "."))
    if any(differs(r, n_runs) for r in rows):
        intro += (" A cell marked *differs* has an outcome that differs between the reports for the same "
                  "property, implementation and dtype (on any device); its tooltip gives each run's outcome.")
    shown = [r for r in ordered if id(r) not in folded]
    hidden = [r for r in ordered if id(r) in folded]
    out = [intro]
    if shown:
        out.append(results_matrix(shown, anchors, n_runs))
    if hidden:
        impls = len({field(r, "implementation", "") for r in hidden})
        out.append(f'<details class="sf-na"><summary>{len(hidden)} row{"s" if len(hidden) != 1 else ""} not '
                   f'applicable ({impls} implementation{"s" if impls != 1 else ""} without the operation, dtype or '
                   f'convention; the cells\' tooltips give the reason)</summary>\n\n'
                   f'{results_matrix(hidden, {}, n_runs)}\n\n</details>')
    out.append(legend({plain(r.get("outcome")) for r in rows}))
    if runs:
        counts = Counter(run_number(r, n_runs) or 0 for r in rows)
        out.append(runs_legend(runs, counts))
    out += ["<details class=\"sf-all-rows\"><summary>Every row: examples checked and time</summary>\n"
            + rows_table(ordered, n_runs=n_runs) + "\n</details>", *details]
    return "\n\n".join(out)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]])")


def plot_markdown(file: str, caption: str, prefix: str = "..") -> str:
    """A figure of :data:`PLOTS_DIR` with its caption visible: ``<figure>`` with the image
    (the caption as alt text) and a ``<figcaption>``. ``prefix`` leads from the page's
    folder to the site's root."""
    text = escape_html(_MD_SPECIAL.sub(r"\\\1", " ".join(caption.split())))
    return (f'<figure class="sf-figure" markdown="1">\n\n![{text}]({prefix}/{PLOTS_DIR}/{file})\n\n'
            f'<figcaption markdown="span">{text}</figcaption>\n\n</figure>')


def claim_page(claim: Claim, props: Iterable[Property], rows: list[dict[str, Any]] | None,
               known_topics: Iterable[str] = (), plots: Iterable[tuple[str, str]] = (),
               runs: Sequence[dict[str, Any]] = ()) -> str:
    """The page of one claim: sources, statement, verdict, prose, plots, properties and results.

    ``rows`` are the report rows for this claim, ``None`` when there is no report.
    Links in the prose to a spec file of ``known_topics`` (``[masks](masks.md)``) are
    sent to that topic's page. ``plots`` are ``(file name, caption)`` pairs of images in
    :data:`PLOTS_DIR`; with none the page has no *Plots* section. ``runs`` are the runs
    of the report (:func:`specformer.site.runs.report_runs`), named in a legend under the
    results matrix.
    """
    out = [
        f"# {heading_text(spec_inline(claim.title))}",
        f"{badge(claim.kind, 'kind')} {badge(claim.verdict, 'verdict')}",
        f"`{claim.id}` · " + (f"[{family_title(claim.family)}](../families/{claim.family}.md) › " if claim.family
                              else "") + f"[{topic_title(claim.topic)}](../topics/{claim.topic}.md) · `spec/{claim.file}`",
        "## Sources",
        "\n".join(f"- {source_line(s.document, s.section, s.says)}" for s in claim.sources),
        "## Statement",
        spec_math(claim.statement),
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
            out += [f"## {heading}", spec_math(value) if math else cite_ids(value.strip())]
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
    out += ["## Results", _results_section(claim, rows, runs)]
    return "\n\n".join(out) + "\n"


def _wrong_line(claim: Claim) -> str:
    corrected = " ".join(claim.corrected.split())
    corrected = corrected if "$" in corrected else f"\\({corrected}\\)"
    return (f"- {title_link(claim)}, *{claim.verdict}*. "
            f"As written: “{spec_inline(claim.as_written)}”; corrected: {cite_ids(corrected)}")


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


def partial_warning(report: dict[str, Any]) -> str:
    """A warning admonition for each run whose ``summary.complete`` is not true; ``""`` when all completed."""
    runs = report_runs(report)
    lines = []
    for n, run in enumerate(runs, start=1):
        if run_complete(run):
            continue
        summary = run.get("summary")
        state = field(summary, "state", "") if isinstance(summary, dict) else ""
        which = "This run" if len(runs) == 1 else f"Run {n} ({run_label(run)})"
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
    n_runs = len(report_runs(report))
    details = [d for d in (row_details(r, n_runs=n_runs) for r in rows) if d]
    intro = f"{len(rows)} row{'s' if len(rows) != 1 else ''} of the report name claims this spec does not have."
    return "\n\n".join(["## Rows of unknown claims", intro, rows_table(rows, with_claim=True, n_runs=n_runs),
                        *details])


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
            "Families: " + ", ".join(f"[{family_title(f)}](../families/{f}.md)" for f in families(claims))]
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
        cells = [title_link(c), c.verdict,
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
                out += [f"### Run {n}", run_label(run)]  # report text stays out of heading ids
            out.append(environment_table(run))
    return "\n\n".join(part for part in out if part) + "\n"


def topics(claims: dict[str, Claim]) -> list[str]:
    """The topics that hold at least one claim: by family in the order a transformer works,
    within a family in the documents' order (:mod:`specformer.site.families`)."""
    return [t for family in families(claims) for t in family_topics(family, claims)]


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
    """The page of one topic: its family, then a table of its claims with kind and verdict."""
    mine = [c for c in claims.values() if c.topic == topic]
    family = mine[0].family if mine else ""
    lines = ["| Claim | Kind | Verdict |", "|---|---|---|"]
    lines += [f"| {title_link(c, '../claims/')} | {c.kind} | {badge(c.verdict, 'verdict')} |" for c in mine]
    where = (f"Part of [{family_title(family)}](../families/{family}.md). " if family else "")
    return "\n\n".join([f"# {spec_inline(title or topic.capitalize())}",
                        where + f"{len(mine)} claims from `spec/{mine[0].file if mine else topic + '.md'}`, "
                        "in the order the document states them.", "\n".join(lines)]) + "\n"


def nav(claims: dict[str, Claim], spec: Path | None = None) -> list[Any]:
    """MkDocs ``nav`` of the whole site (:func:`specformer.site.families.nav`)."""
    titles = {t: topic_title(t, spec) for t in topics(claims)}
    return family_nav(claims, titles, protocol_families())


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
    :data:`PLOTS_DIR` (the caller writes the images; see :mod:`specformer.site.hooks`).
    """
    claims = load_claims(spec)
    props, notes = collect_properties()
    paths = [report_path] if isinstance(report_path, (str, Path)) or report_path is None else list(report_path)
    loaded = [(Path(p).name, r) for p, r in ((p, load_report(p)) for p in paths) if r is not None]
    report = merge_reports([r for _, r in loaded], [name for name, _ in loaded])
    runs = report_runs(report) if report else []
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
            (plots or {}).get(claim.id, ()), runs)
    titles = {t: topic_title(t, spec) for t in topics(claims)}
    for topic in topics(claims):
        pages[f"topics/{topic}.md"] = topic_index(topic, claims, titles[topic])
    for family in families(claims):
        pages[f"families/{family}.md"] = family_page(family, claims, titles, rows if report else None, plots,
                                                     figure=plot_markdown)
    all_rows = records((report or {}).get("rows"))
    impl_records = {field(r, "name", ""): r for r in records((report or {}).get("implementations"))}
    names = implementation_names(report) if report else []
    pages["implementations/index.md"] = compatibility_page(claims, names, all_rows, list(impl_records.values()))
    for name, stem in page_names(names).items():
        pages[f"implementations/{stem}.md"] = implementation_page(name, claims, all_rows, impl_records.get(name),
                                                                   stem, [source for source, _ in loaded])
    fams = protocol_families()
    pages["protocol/index.md"] = protocol_index(fams)
    for family in fams:
        pages[f"protocol/{family}.md"] = protocol_page(family)
    return pages
