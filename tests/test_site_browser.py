"""The built site in a real browser: a claim page's results read well to someone new.

Builds the site (``mkdocs build --strict``) from two small reports (a schema-version-2
CPU run and a schema-version-1 CUDA run), serves it on localhost and opens a claim page
in headless Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright, which
downloads nothing when given ``executable_path``). Checks run on the rendered DOM with
its computed layout: outcomes in words, distinct colours, property names that do not
wrap letter by letter, no horizontal overflow of the content, formulas that scroll, a
legend naming each run, and cells that open their details.

Skipped, with the reason, where Chromium, Playwright or MkDocs is missing, unless
``SPECFORMER_REQUIRE_BROWSER`` is set: CI installs Chromium (``.ci/run``) and sets it, so
there a missing browser fails the test instead.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from collections import defaultdict
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from specformer.claims import Claim, load_claims
from specformer.site.pages import collect_properties

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
WORDS = {"pass", "refuted", "fail", "error", "inconclusive", "not applicable", "skipped", "known deviation",
         "fixed"}

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


def chosen_claim() -> tuple[Claim, str, str]:
    """The claim with a checking and a refuting property whose corrected formula is longest."""
    props, _ = collect_properties()
    by_claim: dict[str, dict[str, str]] = defaultdict(dict)
    for prop in sorted(props.values(), key=lambda p: p.qualname):
        by_claim[prop.claim].setdefault(prop.expect, prop.qualname)
    claims = [c for c in load_claims().values() if by_claim[c.id].keys() == {"hold", "counterexample"}]
    claim = max(claims, key=lambda c: len(c.corrected))
    return claim, by_claim[claim.id]["hold"], by_claim[claim.id]["counterexample"]


def row(claim: str, prop: str, impl: str, device: str, dtype: str, outcome: str, **extra: Any) -> dict[str, Any]:
    return {"claim": claim, "property": prop, "implementation": impl, "device": device, "dtype": dtype,
            "expect": "counterexample" if outcome == "refuted" else "hold", "outcome": outcome,
            "as_expected": outcome not in ("fail", "error"), "examples_generated": 20, "examples_checked": 20,
            "duration_s": 0.1, "message": extra.pop("message", ""), "counterexample": None,
            "reproduce": f"specformer run --claims {claim}", **extra}


def report(version: int, torch: str, devices: list[str], rows: list[dict[str, Any]]) -> dict[str, Any]:
    cuda = {"device_name": "Test GPU 80GB", "capability": "9.0"} if "cuda" in devices else None
    return {"schema": "specformer-report", "schema_version": version,
            "environment": {"torch": torch, "devices": devices, "cuda": cuda, "profile": "ci",
                            "created": "2026-01-02T03:04:05+00:00", "command": "specformer run"},
            "implementations": [], "summary": {"rows": len(rows), "ok": False, "complete": True, "state": "complete"},
            "rows": rows}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The built site and the path of the chosen claim's page."""
    claim, hold, refute = chosen_claim()
    tmp = tmp_path_factory.mktemp("browser")
    cpu_rows = [row(claim.id, hold, "reference", "cpu", "float64", "pass"),
                row(claim.id, hold, "reference", "cpu", "float32", "pass"),
                row(claim.id, hold, "torch-sdpa", "cpu", "float32", "fail", message="weights differ by 0.5",
                    counterexample="Falsifying example: x=1"),
                row(claim.id, hold, "torch-mha", "cpu", "float32", "known-deviation",
                    deviation_reason="documented difference", original_outcome="fail"),
                row(claim.id, hold, "torch-mha", "cpu", "float64", "fixed", deviation_reason="was wrong once",
                    original_outcome="pass"),
                row(claim.id, refute, "reference", "cpu", "float64", "refuted",
                    counterexample="Falsifying example: y=2")]
    cuda_rows = [{**row(claim.id, hold, "reference", "cuda", "float16", "pass"), "examples": 20},
                 row(claim.id, hold, "torch-sdpa", "cuda", "float16", "error", message="CUDA error: boom")]
    cpu = tmp / "cpu-run.json"
    cpu.write_text(json.dumps(report(2, "2.13.0+cpu", ["cpu"], cpu_rows)), encoding="utf-8")
    cuda = tmp / "gpu-run.json"
    cuda.write_text(json.dumps(report(1, "2.11.0+cu130", ["cpu", "cuda"], cuda_rows)), encoding="utf-8")
    out = tmp / "site"
    env = {**os.environ, "SPECFORMER_REPORT": os.pathsep.join([str(cpu), str(cuda)]), "SPECFORMER_PUBLISHED": "",
           "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return out, f"claims/{claim.id}/"


@pytest.fixture(scope="module")
def server(site: tuple[Path, str]) -> Iterator[str]:
    """The site served on localhost: the URL of the claim page."""
    root, page = site

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/{page}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium with a fresh profile; nothing downloaded."""
    if missing():
        pytest.fail(f"{REQUIRE_ENV} is set but {missing()}")
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        yield context
        context.close()


def open_page(browser: Any, url: str, width: int) -> Any:
    """The page at ``url`` in a viewport ``width`` pixels wide, once MathJax has typeset it."""
    page = browser.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(url)
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")
    assert page.locator(".arithmatex mjx-container").count() > 0, "MathJax did not typeset the formulas"
    return page


def background(page: Any, selector: str) -> str:
    return page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor")


def test_outcome_cells_are_words_with_distinct_colours(browser, server):
    page = open_page(browser, server, 1280)
    cells = page.eval_on_selector_all("table.sf-matrix td.sf-cell:not(.sf-o-none)",
                                      "cells => cells.map(c => c.innerText.trim())")
    assert len(cells) == 8, cells
    for shown in cells:
        assert re.sub(r"\s*\d+$", "", shown) in WORDS, shown  # the words, then the run number
    colours = {name: background(page, f"td.sf-o-{name}")
               for name in ("pass", "refuted", "fail", "error", "known-deviation", "fixed")}
    assert len(set(colours.values())) == len(colours), colours
    assert "rgba(0, 0, 0, 0)" not in colours.values(), colours
    page.close()


@pytest.mark.parametrize("width", [1280, 480])
def test_property_names_do_not_wrap_letter_by_letter(browser, server, width):
    page = open_page(browser, server, width)
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


@pytest.mark.parametrize("width", [1280, 480])
def test_content_does_not_overflow_and_formulas_scroll(browser, server, width):
    page = open_page(browser, server, width)
    overflow = page.evaluate("""() => {
        const content = document.querySelector('.md-content');
        const box = content.getBoundingClientRect();
        const formulas = [...document.querySelectorAll('.md-content div.arithmatex')];
        return {page: document.documentElement.scrollWidth - window.innerWidth,
                content: content.scrollWidth - content.clientWidth,
                formulas: formulas.length,
                wide: formulas.filter(f => f.scrollWidth > f.clientWidth + 1).length,
                unscrollable: formulas.filter(f => f.scrollWidth > f.clientWidth + 1
                                             && !['auto', 'scroll'].includes(getComputedStyle(f).overflowX)).length,
                outside: formulas.filter(f => f.getBoundingClientRect().right > box.right + 1).length};
    }""")
    assert overflow["page"] <= 0 and overflow["content"] <= 0, overflow
    assert overflow["formulas"] >= 2 and overflow["unscrollable"] == 0 and overflow["outside"] == 0, overflow
    if width < 600:
        assert overflow["wide"] >= 1, overflow  # the long corrected formula does need to scroll
    page.close()


def test_run_legend_names_each_run_and_cells_cite_their_run(browser, server):
    page = open_page(browser, server, 1280)
    legend = page.eval_on_selector_all("table.sf-runs tbody tr", "rows => rows.map(r => r.innerText)")
    assert len(legend) == 2, legend
    assert "cpu" in legend[0] and "2.13.0+cpu" in legend[0] and "cpu-run.json" in legend[0], legend
    assert "2026-01-02" in legend[0] and "ci" in legend[0]
    assert "Test GPU 80GB" in legend[1] and "2.11.0+cu130" in legend[1] and "gpu-run.json" in legend[1], legend
    runs = page.eval_on_selector_all("table.sf-matrix td.sf-cell sup.sf-run", "s => s.map(e => e.innerText)")
    assert sorted(set(runs)) == ["1", "2"], runs
    headers = page.eval_on_selector_all("table.sf-matrix thead th", "h => h.map(e => e.innerText.trim())")
    assert {"cpu", "cuda", "float64", "float32", "float16"} <= set(headers), headers
    page.close()


def test_a_cell_opens_its_details(browser, server):
    page = open_page(browser, server, 1280)
    link = page.locator("table.sf-matrix td.sf-o-refuted a")
    target = link.get_attribute("href")
    assert target and target.startswith("#sf-row-")
    details = page.locator(f"{target} + details")
    assert details.get_attribute("open") is None  # a refutation's details start collapsed
    link.click()
    page.wait_for_function(f"() => document.querySelector('{target} + details').open")
    assert "Falsifying example: y=2" in details.inner_text()
    page.close()
