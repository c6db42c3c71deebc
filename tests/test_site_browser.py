"""The built site in a real browser: both builds (checkout and wheel), at 1,280 and 390 px.

Both builds of :func:`test_site_install.site_builds` (the checkout's ``mkdocs build
--strict`` and ``specformer site`` from an installed wheel, of the same two small reports)
are served on localhost and opened in headless Chromium (Debian's ``/usr/bin/chromium``,
driven by Playwright, which downloads nothing when given ``executable_path``). Every
request that leaves localhost is refused, so the site must work offline. Checks run on the
rendered DOM with its computed layout: no page scrolls sideways, formulas are typeset by
MathJax with no raw TeX left, outcome cells are words on distinct colours, the offline
search finds "softmax", internal links resolve, the navigation lists the families in the
order a transformer works, not-applicable rows are folded, figures have visible captions;
and, on a claim page, property names that do not wrap letter by letter, a legend naming
each run, and cells that open their details.

Skipped, with the reason, where Chromium, Playwright or MkDocs is missing, unless
``SPECFORMER_REQUIRE_BROWSER`` is set: CI installs Chromium (``.ci/run``) and sets it, so
there a missing browser fails the test instead.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

import pytest
from test_site_install import BUILDS, NAV_ORDER, chosen_claim, site_builds

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
WORDS = {"pass", "refuted", "fail", "error", "inconclusive", "not applicable", "skipped", "known deviation",
         "fixed"}
WIDTHS = (1280, 390)
#: A claim with a figure (its page shows it with a caption).
FIGURE_CLAIM = "masking.causal-matrix"

REQUIRE_ENV = "SPECFORMER_REQUIRE_BROWSER"


def missing() -> str:
    """Why the browser test cannot run here, or ``""``."""
    if not CHROMIUM.is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (the dev extra: pip install -e '.[dev]')"
    if importlib.util.find_spec("mkdocs") is None:
        return "mkdocs is not installed (the docs extra)"
    return ""


pytestmark = pytest.mark.skipif(bool(missing()) and not os.environ.get(REQUIRE_ENV), reason=missing())


@pytest.fixture(scope="module")
def claim_page() -> str:
    """The site path of the chosen claim's page (its rows are in the reports of both builds)."""
    return f"claims/{chosen_claim()[0].id}/"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Each build served on localhost: build name -> base URL (ending in ``/``)."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    running = []
    urls = {}
    for build, root in site_builds(tmp_path_factory).items():
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        running.append((httpd, thread))
        urls[build] = f"http://127.0.0.1:{httpd.server_address[1]}/"
    yield urls
    for httpd, thread in running:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium with a fresh profile; nothing downloaded, nothing fetched beyond localhost."""
    if missing():
        pytest.fail(f"{REQUIRE_ENV} is set but {missing()}")
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        outside: list[str] = []

        def local_only(route: Any) -> None:
            if urlsplit(route.request.url).hostname == "127.0.0.1":
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort()

        context.route("**/*", local_only)
        context.outside = outside
        yield context
        context.close()


def open_page(browser: Any, url: str, width: int, math: bool = True) -> Any:
    """The page at ``url`` in a viewport ``width`` pixels wide, once MathJax has typeset it;
    fails on a request that failed or left localhost."""
    page = browser.new_page()
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.on("response", lambda response: failed.append(response.url) if response.status >= 400 else None)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    if math:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("() => MathJax.startup.promise")
    page.wait_for_load_state("networkidle")
    assert not failed, failed
    assert not browser.outside, browser.outside
    return page


def background(page: Any, selector: str) -> str:
    return page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor")


def pages_to_check(claim_page: str) -> list[str]:
    """A page of each kind: home, family, topic, claim, claims overview, implementations, protocol."""
    return ["", "families/attention/", "topics/masking/", claim_page, f"claims/{FIGURE_CLAIM}/", "claims/",
            "implementations/", "implementations/reference/", "protocol/attention/", "conventions/"]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("build", BUILDS)
def test_no_page_scrolls_sideways_and_no_raw_tex_is_left(browser, servers, claim_page, build, width):
    typeset = 0
    for path in pages_to_check(claim_page):
        page = open_page(browser, servers[build] + path, width)
        found = page.evaluate("""() => {
            const formulas = [...document.querySelectorAll('.md-content .arithmatex')];
            return {page: document.documentElement.scrollWidth - window.innerWidth,
                    body: document.body.scrollWidth - window.innerWidth,
                    formulas: formulas.length,
                    raw: formulas.filter(f => !f.querySelector('mjx-container')).map(f => f.textContent.slice(0, 80)),
                    errors: document.querySelectorAll('mjx-merror').length};
        }""")
        assert found["page"] <= 0 and found["body"] <= 0, (path, found)
        assert found["raw"] == [] and found["errors"] == 0, (path, found)
        typeset += found["formulas"]
        page.close()
    assert typeset >= 20


def test_every_page_typesets_every_formula(browser, servers, tmp_path_factory):
    """Every page of the checkout's build, not a sample: no MathJax error and no formula left as raw TeX
    (formulas escaped twice are found in the spec itself: tests/test_claims.py)."""
    root = site_builds(tmp_path_factory)["checkout"]
    paths = sorted(str(page.parent.relative_to(root)) + "/" for page in root.rglob("index.html"))
    paths = ["" if path == "./" else path for path in paths]
    assert len(paths) > 250, len(paths)  # the claim pages, the topic, family, protocol and implementation pages
    bad = []
    for path in paths:
        page = open_page(browser, servers["checkout"] + path, 1280)
        found = page.evaluate("""() => {
            const formulas = [...document.querySelectorAll('.md-content .arithmatex')];
            return {raw: formulas.filter(f => !f.querySelector('mjx-container')).map(f => f.textContent.slice(0, 80)),
                    errors: [...document.querySelectorAll('mjx-merror')].map(e => e.getAttribute('data-mjx-error')
                                                                                 || e.textContent.slice(0, 80))};
        }""")
        if found["raw"] or found["errors"]:
            bad.append((path, found["raw"][:2], found["errors"][:2]))
        page.close()
    assert not bad, bad[:10]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("build", BUILDS)
def test_navigation_lists_the_families_in_the_order_a_transformer_works(browser, servers, build, width):
    page = open_page(browser, servers[build], width)
    if width >= 1220:  # tabs across the top
        shown = page.eval_on_selector_all(".md-tabs__link", "ls => ls.map(l => l.textContent.trim())")
    else:  # the drawer's top level
        shown = page.eval_on_selector_all(
            ".md-nav--primary > .md-nav__list > .md-nav__item",
            "items => items.map(i => i.querySelector(':scope > .md-nav__link').textContent.trim()"
            ".replace(/\\s+/g, ' '))")
    assert shown == NAV_ORDER, shown
    page.close()


@pytest.mark.parametrize("build", BUILDS)
def test_offline_search_finds_softmax(browser, servers, build):
    page = open_page(browser, servers[build], 1280)
    page.locator(".md-search__input").click()
    # typed as a reader types, once the index is ready: a query set in one go (fill) while the
    # search worker still loads its index is dropped, and the results never come
    page.wait_for_function("() => { const m = document.querySelector('.md-search-result__meta');"
                           " return m && !/initializ/i.test(m.textContent); }", timeout=600_000)
    page.locator(".md-search__input").press_sequentially("softmax", delay=20)
    page.wait_for_selector(".md-search-result__item", timeout=600_000)
    assert page.locator(".md-search-result__item").count() > 0
    assert "softmax" in page.locator(".md-search-result").inner_text().lower()
    page.close()


@pytest.mark.parametrize("build", BUILDS)
def test_internal_links_of_each_kind_of_page_resolve(browser, servers, claim_page, build):
    base = servers[build]
    seen: set[str] = set()
    for path in pages_to_check(claim_page):
        page = open_page(browser, base + path, 1280, math=False)
        hrefs = page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)")
        page.close()
        for href in hrefs:
            url = href.split("#")[0]
            if url.startswith(base) and url not in seen:
                seen.add(url)
                response = browser.request.get(url)
                assert response.ok, (path, href, response.status)
    assert len(seen) > 100


@pytest.mark.parametrize("build", BUILDS)
def test_not_applicable_rows_are_folded_with_their_count(browser, servers, claim_page, build):
    page = open_page(browser, servers[build] + claim_page, 1280)
    folded = page.locator("details.sf-na")
    assert folded.count() == 1
    assert folded.get_attribute("open") is None
    assert "4 rows not applicable" in folded.locator("summary").inner_text()
    assert not folded.locator("table.sf-matrix").is_visible()
    folded.locator("summary").click()
    assert folded.locator("table.sf-matrix").is_visible()
    assert "hf-bloom" in folded.inner_text()
    page.close()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("build", BUILDS)
def test_figures_show_their_caption(browser, servers, build, width):
    page = open_page(browser, servers[build] + f"claims/{FIGURE_CLAIM}/", width)
    figure = page.locator("figure.sf-figure").first
    assert figure.locator("figcaption").is_visible()
    assert len(figure.locator("figcaption").inner_text()) > 20
    assert figure.locator("img").evaluate("i => i.complete && i.naturalWidth > 0")
    box, view = figure.locator("img").bounding_box(), page.viewport_size
    assert box["x"] + box["width"] <= view["width"] + 1, (box, view)
    page.close()


@pytest.mark.parametrize("build", BUILDS)
def test_outcome_cells_are_words_with_distinct_colours(browser, servers, claim_page, build):
    page = open_page(browser, servers[build] + claim_page, 1280)
    cells = page.eval_on_selector_all("table.sf-matrix td.sf-cell:not(.sf-o-none)",
                                      "cells => cells.filter(c => !c.closest('details.sf-na'))"
                                      ".map(c => c.innerText.trim())")
    assert len(cells) == 8, cells
    for shown in cells:
        assert re.sub(r"\s*\d+$", "", shown) in WORDS, shown  # the words, then the run number
    colours = {name: background(page, f"td.sf-o-{name}")
               for name in ("pass", "refuted", "fail", "error", "known-deviation", "fixed")}
    assert len(set(colours.values())) == len(colours), colours
    assert "rgba(0, 0, 0, 0)" not in colours.values(), colours
    page.close()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("build", BUILDS)
def test_property_names_do_not_wrap_letter_by_letter(browser, servers, claim_page, build, width):
    page = open_page(browser, servers[build] + claim_page, width)
    narrowest = page.evaluate("""() => {
        const probe = document.createElement('code');
        probe.className = 'sf-prop';
        probe.textContent = '000000';
        document.querySelector('table.sf-matrix').appendChild(probe);
        const six = probe.getBoundingClientRect().width;
        probe.remove();
        const cells = [...document.querySelectorAll('table.sf-matrix th, table.sf-matrix td, table.sf-rows td')]
            .filter(c => c.querySelector('code.sf-prop'));
        return [six, cells.length, Math.min(...cells.map(c => c.getBoundingClientRect().width)),
                Math.min(...cells.map(c => c.querySelector('code.sf-prop').getBoundingClientRect().width))];
    }""")
    six, count, cell, name = narrowest
    assert count >= 2 and six > 0
    assert cell >= six and name >= six, narrowest
    page.close()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("build", BUILDS)
def test_content_does_not_overflow_and_formulas_scroll(browser, servers, claim_page, build, width):
    page = open_page(browser, servers[build] + claim_page, width)
    overflow = page.evaluate("""() => {
        const content = document.querySelector('.md-content');
        const box = content.getBoundingClientRect();
        const formulas = [...document.querySelectorAll('.md-content div.arithmatex')];
        // a formula is wide when it, or the MathJax container inside it, has more to show than fits
        const wide = f => [f, ...f.querySelectorAll('mjx-container')].some(e => e.scrollWidth > e.clientWidth + 1);
        return {page: document.documentElement.scrollWidth - window.innerWidth,
                content: content.scrollWidth - content.clientWidth,
                formulas: formulas.length,
                wide: formulas.filter(wide).length,
                unscrollable: formulas.filter(f => wide(f) && ![f, ...f.querySelectorAll('mjx-container')].some(
                    e => e.scrollWidth > e.clientWidth + 1
                         && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX))).length,
                outside: formulas.filter(f => f.getBoundingClientRect().right > box.right + 1).length};
    }""")
    assert overflow["page"] <= 0 and overflow["content"] <= 0, overflow
    assert overflow["formulas"] >= 2 and overflow["unscrollable"] == 0 and overflow["outside"] == 0, overflow
    if width < 600:
        assert overflow["wide"] >= 1, overflow  # the long corrected formula does need to scroll
    page.close()


@pytest.mark.parametrize("build", BUILDS)
def test_run_legend_names_each_run_and_cells_cite_their_run(browser, servers, claim_page, build):
    page = open_page(browser, servers[build] + claim_page, 1280)
    legend = page.eval_on_selector_all("table.sf-runs tbody tr", "rows => rows.map(r => r.innerText)")
    assert len(legend) == 2, legend
    assert "cpu" in legend[0] and "2.13.0+cpu" in legend[0] and "cpu-run.json" in legend[0], legend
    assert "2026-01-02" in legend[0] and "ci" in legend[0]
    assert "Test GPU 80GB" in legend[1] and "2.11.0+cu130" in legend[1] and "gpu-run.json" in legend[1], legend
    runs = page.eval_on_selector_all("table.sf-matrix td.sf-cell sup.sf-run",
                                     "s => s.filter(e => !e.closest('details.sf-na')).map(e => e.innerText)")
    assert sorted(set(runs)) == ["1", "2"], runs
    headers = page.eval_on_selector_all("table.sf-matrix thead th", "h => h.map(e => e.innerText.trim())")
    assert {"cpu", "cuda", "float64", "float32", "float16"} <= set(headers), headers
    page.close()


@pytest.mark.parametrize("build", BUILDS)
def test_a_cell_opens_its_details(browser, servers, claim_page, build):
    page = open_page(browser, servers[build] + claim_page, 1280)
    link = page.locator("table.sf-matrix td.sf-o-refuted a")
    target = link.get_attribute("href")
    assert target and target.startswith("#sf-row-")
    details = page.locator(f"{target} + details")
    assert details.get_attribute("open") is None  # a refutation's details start collapsed
    link.click()
    page.wait_for_function(f"() => document.querySelector('{target} + details').open")
    assert "Falsifying example: y=2" in details.inner_text()
    page.close()
