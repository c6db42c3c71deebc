"""The site treats reports as untrusted: hostile strings are shown, never interpreted.

Unit tests check the escaping helper (:func:`specformer.site.tables.text`) on each
payload under the Markdown extensions of ``mkdocs.yml``; end-to-end tests run the real
``mkdocs build --strict`` on a hostile schema-version-2 report and inspect every HTML
file it writes, and check which published reports are rendered (``SPECFORMER_PUBLISHED``
points the build at a temporary folder, so nothing is written into ``docs/results/``).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from specformer.claims import load_claims
from specformer.site.pages import ReportError, generate, overview_page, read_report, report_problem
from specformer.site.matrix import examples, results_matrix, row_details, rows_table
from specformer.site.tables import fence, outcome_label, summarize, text

ROOT = Path(__file__).resolve().parent.parent
needs_mkdocs = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed")

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "![x](http://evil/x.png)",
    '<a href="http://evil">',
    "**boldmark**",
    "`code`",
    "$mathmark$",
    "| table | break |",
    "line one\n\n# headmark\n    indented\n<script>alert(2)</script>",
    "-->",
    "<!--",
    '"><svg onload=alert(1)>',
    r"\(mathmark\) \[mathmark\]",
    '{: onclick="alert(1)" }',
    "```\n<script>alert(3)</script>\n```",
    "&amp; &lt;b&gt; &#60;i&#62;",
    "1. item\n- item\n=== \n!!! note \"x\"",
]
#: Words inside payloads that must never end up inside the element a payload tries to make.
MARKS = {"boldmark": {"strong", "em", "b", "i"}, "mathmark": {"arithmatex"},
         "headmark": {"h1", "h2", "h3", "h4", "h5", "h6"}}


def flat(value: str) -> str:
    """``value`` with whitespace runs collapsed, as a browser shows inline text."""
    return " ".join(value.split())


# --- Markdown rendering with the site's extensions ---------------------------------------

def site_markdown():
    """A Markdown converter with the extensions (and their settings) of ``specformer/site/mkdocs.yml``."""
    import markdown

    config = yaml.safe_load((ROOT / "specformer" / "site" / "mkdocs.yml").read_text(encoding="utf-8"))  # shipped
    names, settings = [], {}
    for entry in config["markdown_extensions"]:
        name, options = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
        names.append(name)
        if options:
            settings[name] = options
    return markdown.Markdown(extensions=names, extension_configs=settings)


class Page(HTMLParser):
    """The elements, attributes, scripts and visible text of one HTML document."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.text: list[str] = []
        self.marked: list[tuple[str, str]] = []  # (mark, element) for MARKS found inside their element
        self.stack: list[tuple[str, set[str]]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))
        if tag == "script":
            self.scripts.append((dict(attrs), ""))
        if tag not in self.VOID:
            classes = set((dict(attrs).get("class") or "").split())
            self.stack.append((tag, classes | {tag}))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        for n in range(len(self.stack) - 1, -1, -1):
            if self.stack[n][0] == tag:
                del self.stack[n:]
                break

    def handle_data(self, data: str) -> None:
        inside = {name for _, names in self.stack for name in names}
        if "script" in inside:
            attrs, body = self.scripts[-1]
            self.scripts[-1] = (attrs, body + data)
            return
        if "style" in inside:
            return
        self.text.append(data)
        for mark, forbidden in MARKS.items():
            if mark in data and inside & forbidden:
                self.marked.append((mark, ", ".join(sorted(inside & forbidden))))

    @property
    def visible(self) -> str:
        """The visible text, whitespace collapsed."""
        return flat(" ".join(self.text))

    def tags(self) -> set[str]:
        """The names of all elements."""
        return {tag for tag, _ in self.elements}


# --- the escaping helper -----------------------------------------------------------------

@pytest.mark.parametrize("payload", PAYLOADS)
def test_text_renders_each_payload_as_plain_text(payload):
    md = site_markdown()
    escaped = text(payload)
    assert "\n" not in escaped
    page = Page(md.reset().convert(escaped))
    assert page.tags() <= {"p"}, page.elements
    assert page.visible == flat(payload)


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("template, allowed", [
    ("## {}", {"h2", "a"}),                                     # a: the toc permalink
    ('!!! note "{}"\n\n    body', {"div", "p"}),
    ('??? failure "{}"\n\n    body', {"details", "summary", "p"}),
    ("| a | b |\n|---|---|\n| {} | x |", {"table", "thead", "tbody", "tr", "th", "td"}),
    ("- x <code>{}</code> y", {"ul", "li", "code"}),
    ('<table class="sf-matrix">\n<tbody>\n<tr><th scope="row">{}</th></tr>\n</tbody>\n</table>',
     {"table", "tbody", "tr", "th"}),
])
def test_text_stays_plain_in_every_place_the_site_writes_it(payload, template, allowed):
    md = site_markdown()
    page = Page(md.reset().convert(template.format(text(payload))))
    assert page.tags() <= allowed, page.elements
    assert flat(payload) in page.visible
    assert all(set(inside.split(", ")) <= allowed for _, inside in page.marked), page.marked
    if template.startswith("|"):
        assert sum(tag == "td" for tag, _ in page.elements) == 2


@pytest.mark.parametrize("payload", PAYLOADS)
def test_text_stays_plain_in_an_attribute_of_the_results_matrix(payload):
    html = site_markdown().convert(f'<table>\n<tbody>\n<tr><td class="sf-cell" title="{text(payload)}">x</td></tr>'
                                   '\n</tbody>\n</table>')
    page = Page(html)
    cells = [dict(attrs) for tag, attrs in page.elements if tag == "td"]
    assert page.tags() == {"table", "tbody", "tr", "td"} and len(cells) == 1, page.elements
    assert cells[0] == {"class": "sf-cell", "title": flat(payload)}


@pytest.mark.parametrize("value, shown", [
    (None, ""), (3, "3"), (1.5, "1.5"), (True, "true"),
    ({"b": "<i>", "a": [1]}, '{"a": [1], "b": "<i>"}'), (["x", 2], '["x", 2]'),
    ("a\r\n b\u2028c\x00", "a b c\ufffd"),
])
def test_text_shows_values_of_any_type(value, shown):
    page = Page(site_markdown().convert(text(value)))
    assert page.visible == shown
    assert page.tags() <= {"p"}


def test_fence_outgrows_backtick_runs():
    block = fence("a ```` b", "text")
    assert block.startswith("`````text\n") and block.endswith("\n`````")


# --- pages from a hostile report, without MkDocs -----------------------------------------

def hostile_claim() -> str:
    """A claim the spec has, so the hostile rows land on its page."""
    return next(iter(load_claims()))


def hostile_report() -> dict[str, Any]:
    """A schema-version-2 report with a payload in every string a report can hold."""
    claim = hostile_claim()
    rows = []
    for n, p in enumerate(PAYLOADS):
        rows.append({
            "claim": claim, "property": f"prop {p}", "family": p, "implementation": p, "device": p,
            "dtype": p, "expect": p, "outcome": ("fail", "error", "inconclusive", p, "known-deviation", "fixed")[n % 6],
            "deviation_reason": p, "original_outcome": p,
            "as_expected": False, "examples_generated": 10, "examples_checked": 3,
            "examples_out_of_domain": 7, "min_checked": 5, "duration_s": 0.1, "message": p,
            "counterexample": p if n % 2 else {"q": p, "list": [p, 1]}, "reproduce": f"specformer run {p}",
        })
    rows.append({  # a claim the spec does not have, and values of unexpected types
        "claim": "nope." + " ".join(PAYLOADS), "property": {"x": PAYLOADS[0]}, "implementation": 5,
        "device": ["cpu"], "dtype": None, "outcome": {"o": PAYLOADS[1]}, "examples_checked": "many",
        "duration_s": "slow", "message": {"nested": PAYLOADS[2]}, "counterexample": [PAYLOADS[3]],
        "reproduce": 7,
    })
    env_keys = ["specformer", "python", "torch", "hypothesis", "numpy", "platform", "commit", "created",
                "profile", "command"]
    environment: dict[str, Any] = dict(zip(env_keys, PAYLOADS))
    environment.update({"devices": PAYLOADS[:3], "cuda": {"device_name": PAYLOADS[4], PAYLOADS[5]: PAYLOADS[6]},
                        PAYLOADS[7]: PAYLOADS[8], "extra": {"nested": PAYLOADS[12]}})
    implementations: list[Any] = [
        {"name": p, "spec": p, "operations": [p], "status": "load-error" if n % 2 else "loaded",
         "message": p, "omitted_families": [p, "masking"]} for n, p in enumerate(PAYLOADS)]
    implementations += [5, {"name": {"n": PAYLOADS[0]}, "omitted_families": PAYLOADS[1]}]
    return {
        "schema": "specformer-report", "schema_version": 2, "environment": environment,
        "implementations": implementations,
        "summary": {"rows": PAYLOADS[0], "by_outcome": {PAYLOADS[1]: 1, "fail": 2}, "ok": True,
                    "complete": False, "state": PAYLOADS[2], "duration_s": "x"},
        "rows": rows,
    }


def write(path: Path, report: Any) -> Path:
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def test_hostile_report_generates_pages(tmp_path):
    pages = generate(write(tmp_path / "report.json", hostile_report()))
    overview = pages["claims/index.md"]
    assert "did not complete; its results are partial" in overview
    assert "| ok | no (the run did not complete) |" in overview
    assert "## Rows of unknown claims" in overview and "did not load" in overview
    assert "inconclusive" in pages[f"claims/{hostile_claim()}.md"]


def test_v2_rows_show_checked_over_generated_and_inconclusive():
    row = {"claim": "c", "property": "p", "implementation": "i", "device": "cpu", "dtype": "float32",
           "outcome": "inconclusive", "examples_generated": 40, "examples_checked": 3,
           "examples_out_of_domain": 37, "min_checked": 10}
    assert examples(row) == "3/40" and examples({"examples": 25}) == "25" and examples({}) == "–"
    assert "<td>3/40</td>" in rows_table([row])
    assert outcome_label("inconclusive") == '<span class="sf-outcome sf-o-inconclusive">inconclusive</span>'
    details = row_details(row)
    assert details.startswith('???+ warning') and "fewer than the 10" in details
    cell = [{"outcome": "pass"}, {"outcome": "inconclusive"}, {"outcome": "refuted"}]
    assert summarize(cell) == '<span class="sf-outcome sf-o-inconclusive">inconclusive 1/3</span>'
    assert summarize(cell + [{"outcome": "error"}]) == '<span class="sf-outcome sf-o-error">error 1/4</span>'
    assert summarize([{"outcome": "pass"}, {"outcome": "<b>"}]) == '<span class="sf-outcome sf-o-unknown">&lt;b&gt; 1/2</span>'
    assert outcome_label("<b>") == '<span class="sf-outcome sf-o-unknown">&lt;b&gt;</span>'
    assert outcome_label("not-applicable") == '<span class="sf-outcome sf-o-not-applicable">not applicable</span>'


def test_known_deviations_and_fixed_rows_say_why_they_are_listed():
    base = {"claim": "c", "property": "p", "implementation": "i", "device": "cuda", "dtype": "float16"}
    known = {**base, "outcome": "known-deviation", "deviation_reason": "<b>half</b> precision",
             "original_outcome": "fail", "message": "off by 0.2"}
    fixed = {**base, "dtype": "float32", "outcome": "fixed", "deviation_reason": "was wrong", "original_outcome": "pass"}
    details = row_details(known)
    assert details.startswith('??? info "p · i · cuda · float16: known deviation"')
    assert "<b>" not in details and "&lt;b&gt;half" in details and "**fail**" in details
    assert "off by 0.2" in details
    details = row_details(fixed)
    assert details.startswith("???+ tip \"p · i · cuda · float32: fixed\"") and "the listing can be removed" in details
    assert summarize([{"outcome": "pass"}, known]) == ('<span class="sf-outcome sf-o-known-deviation">'
                                                       'known deviation 1/2</span>')
    assert summarize([fixed, known]) == '<span class="sf-outcome sf-o-fixed">fixed 1/2</span>'
    assert summarize([fixed, known, {"outcome": "fail"}]) == '<span class="sf-outcome sf-o-fail">fail 1/3</span>'
    matrix = results_matrix([known, fixed], {})
    assert 'class="sf-cell sf-o-known-deviation"' in matrix and ">known deviation<" in matrix
    assert 'class="sf-cell sf-o-fixed"' in matrix


def test_overview_lists_load_errors_omitted_families_and_flags_partial_runs():
    claims = load_claims()
    report = {"schema": "specformer-report", "schema_version": 2, "rows": [],
              "implementations": [
                  {"name": "good", "spec": "good", "status": "loaded", "omitted_families": ["masking"]},
                  {"name": "bad", "spec": "pkg:Bad", "status": "load-error", "message": "ImportError: no pkg"}],
              "summary": {"ok": True, "complete": False, "state": "interrupted"}}
    page = overview_page(claims, {}, report)
    assert '!!! warning "Partial results"' in page and "(state: interrupted)" in page
    assert '!!! failure "bad did not load"' in page and "ImportError: no pkg" in page
    assert "- good: masking" in page
    assert "| ok | no (the run did not complete) |" in page
    header = next(line for line in page.splitlines() if line.startswith("| Claim |"))
    assert "good" in header and "bad" not in header
    report["summary"]["complete"] = True
    page = overview_page(claims, {}, report)
    assert "Partial results" not in page and "| ok | yes |" in page


@pytest.mark.parametrize("data, problem", [
    ([], "not a JSON object"),
    ({"schema": "x", "schema_version": 1, "rows": []}, "schema is"),
    ({"schema": "specformer-report", "schema_version": 3, "rows": []}, "schema_version is 3"),
    ({"schema": "specformer-report", "schema_version": True, "rows": []}, "schema_version is true"),
    ({"schema": "specformer-report", "schema_version": 2}, "rows is null"),
    ({"schema": "specformer-report", "schema_version": 2, "rows": [{}, "x"]}, "rows[1]"),
])
def test_report_problem_names_the_problem(data, problem):
    assert problem in report_problem(data)


def test_reports_of_both_versions_are_accepted(tmp_path):
    for version in (1, 2):
        assert report_problem({"schema": "specformer-report", "schema_version": version, "rows": []}) is None
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ReportError, match="bad.json: not JSON"):
        read_report(bad)


# --- the hooks' list of published reports ------------------------------------------------

def load_hooks():
    from specformer.site import hooks

    return hooks


@needs_mkdocs
def test_published_reports_come_from_the_setting_or_the_environment(tmp_path, monkeypatch, caplog):
    hooks = load_hooks()
    config = SimpleNamespace(docs_dir=str(ROOT / "docs"),
                             extra={"specformer": {"published_results": ["results/cuda-h100.json"]}})
    monkeypatch.delenv(hooks.PUBLISHED_ENV, raising=False)
    assert hooks.published_paths(config) == [(ROOT / "docs" / "results" / "cuda-h100.json").resolve()]
    monkeypatch.setenv(hooks.PUBLISHED_ENV, os.pathsep.join([str(tmp_path / "a.json"), "results/b.json"]))
    assert hooks.published_paths(config) == [(tmp_path / "a.json").resolve(),
                                             (ROOT / "docs" / "results" / "b.json").resolve()]
    monkeypatch.setenv(hooks.PUBLISHED_ENV, "")
    assert hooks.published_paths(config) == []
    monkeypatch.delenv(hooks.PUBLISHED_ENV)
    config.extra = {"specformer": {"published_results": "results/cuda-h100.json"}}
    with caplog.at_level(logging.ERROR, logger=hooks.log.name):
        assert hooks.published_paths(config) == []
    assert "extra.specformer.published_results must be a list" in caplog.text


# --- end to end: mkdocs build --strict ---------------------------------------------------

def mkdocs_build(site: Path, report: Path | str, published: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPECFORMER_REPORT": str(report), "SPECFORMER_PUBLISHED": published,
           "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)


def is_site_file(site: Path, page: Path, url: str, folder: str = "") -> bool:
    """Whether ``url``, used in ``page``, is a relative link to an existing file of the site (under ``folder``)."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return False
    base = site if parts.path.startswith("/") else page.parent  # 404.html links from the site root
    target = (base / parts.path.lstrip("/")).resolve()
    return target.is_file() and target.is_relative_to((site / folder).resolve())


def dangerous_url(value: str) -> bool:
    """Whether a link or source URL runs script or points at the payloads' host."""
    squeezed = "".join(ch for ch in value if ch.isprintable() and not ch.isspace()).lower()
    return squeezed.startswith(("javascript:", "vbscript:", "data:text/html")) or "evil" in squeezed


def check_page(site: Path, path: Path, allowed_inline: set[str]) -> Page:
    """Parse one built page and assert that nothing in it is active that the site did not put there."""
    page = Page(path.read_text(encoding="utf-8"))
    where = path.relative_to(site)
    for tag, attrs in page.elements:
        assert tag not in {"iframe", "object", "embed", "base", "frame", "applet"}, (where, tag)
        for name, value in attrs:
            assert not name.lower().startswith("on"), (where, tag, name, value)
            if name.lower() in {"href", "src", "action", "formaction", "xlink:href", "srcset", "data", "poster"}:
                assert not dangerous_url(value or ""), (where, tag, name, value)
        if tag == "img":
            assert is_site_file(site, path, dict(attrs).get("src") or "", "assets"), (where, attrs)
        if tag == "svg":
            assert not any(name.lower() == "onload" for name, _ in attrs), (where, attrs)
        if tag == "meta":
            assert (dict(attrs).get("http-equiv") or "").lower() != "refresh", (where, attrs)
    for attrs, body in page.scripts:
        if attrs.get("src") is not None:
            assert is_site_file(site, path, attrs["src"] or ""), (where, attrs)
        else:
            assert body in allowed_inline, (where, body[:200])
    assert not page.marked, (where, page.marked)
    return page


@needs_mkdocs
def test_mkdocs_build_of_a_hostile_report_shows_every_payload_as_text(tmp_path):
    published = tmp_path / "published"
    published.mkdir()
    listed = dict(hostile_report(), rows=[], implementations=[{"name": "listed-impl-mark", "spec": "x"}],
                  summary={"complete": True, "ok": True})
    unlisted = dict(listed, implementations=[{"name": "unlisted-impl-mark", "spec": "x"}])
    write(published / "listed.json", listed)
    write(published / "unlisted.json", unlisted)
    site = tmp_path / "site"
    result = mkdocs_build(site, write(tmp_path / "hostile.json", hostile_report()), str(published / "listed.json"))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "unlisted.json is not listed" in output

    # Pages the report does not touch give the inline scripts the site itself writes.
    plain_pages = [site / "index.html", site / "404.html", site / "conventions" / "index.html",
                   *site.glob("topics/*/index.html")]
    allowed_inline = {body for p in plain_pages for attrs, body in Page(p.read_text(encoding="utf-8")).scripts
                      if attrs.get("src") is None}
    for p in plain_pages:
        assert "alert(" not in Page(p.read_text(encoding="utf-8")).visible, p

    pages = {path.relative_to(site).as_posix(): check_page(site, path, allowed_inline)
             for path in sorted(site.rglob("*.html"))}
    assert len(pages) > 50
    assert not any("unlisted-impl-mark" in p.visible for p in pages.values())
    assert not (site / "results" / "unlisted.json").exists()

    overview = pages["claims/index.html"].visible
    claim = pages[f"claims/{hostile_claim()}/index.html"].visible
    assert "listed-impl-mark" in overview
    assert "did not complete; its results are partial" in overview  # run 2 of 2: the hostile one
    for payload in PAYLOADS:
        assert flat(payload) in overview, payload
        assert flat(payload) in claim, payload
    assert "<script>alert(1)</script>" in claim


@needs_mkdocs
def test_mkdocs_build_fails_on_a_listed_report_that_is_not_one(tmp_path):
    not_json = tmp_path / "not-json.json"
    not_json.write_text("{oops", encoding="utf-8")
    wrong = write(tmp_path / "wrong-version.json", {"schema": "specformer-report", "schema_version": 9, "rows": []})
    missing = tmp_path / "missing.json"
    published = os.pathsep.join(map(str, (not_json, wrong, missing)))
    result = mkdocs_build(tmp_path / "site", tmp_path / "no-local-report.json", published)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert f"{not_json}: not JSON" in output
    assert f"{wrong}: not a specformer-report file: schema_version is 9" in output
    assert f"{missing} (listed in" in output and "does not exist" in output


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_mark_of_an_outcome_that_differs_between_reports_stays_plain(payload):
    from specformer.site.pages import merge_reports

    def one(outcome: str, key: Any = None) -> dict[str, Any]:
        found = {"claim": "c", "property": "p", "implementation": payload, "device": "cpu", "dtype": "float32",
                 "outcome": outcome}
        return {"schema": "specformer-report", "schema_version": 2, "rows": [
            found if key is None else {**found, "_specformer_differs": key}]}

    merged = merge_reports([one(payload, [[1, payload]]), one("pass", payload)])
    page = Page(site_markdown().convert(results_matrix(merged["rows"], {}, 2) + "\n\n"
                                        + rows_table(merged["rows"], n_runs=2)))
    assert page.tags() <= {"div", "table", "thead", "tbody", "tr", "th", "td", "span", "sup", "code", "br", "wbr"}, \
        page.elements
    marks = [dict(attrs) for tag, attrs in page.elements if tag == "span" and dict(attrs).get("class") == "sf-differs"]
    title = flat(f"differs between reports: run 1: {payload}, run 2: pass")
    assert marks == [{"class": "sf-differs", "title": title}] * 2  # a report's own marks are replaced
    assert not page.marked, page.marked
