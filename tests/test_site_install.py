"""One site however installed: the checkout's ``mkdocs build`` and ``specformer site`` from a wheel.

:func:`site_builds` builds the site of the same two small reports (a schema-version-2
CPU run and a schema-version-1 CUDA run, with rows of every outcome and rows that are
not applicable) twice, once per code path:

* ``checkout``: ``python -m mkdocs build --strict`` in the checkout, as ``make site`` does;
* ``wheel``: a wheel built from a copy of the checkout (``pip wheel``), installed with
  ``pip install --no-deps --target`` into an otherwise empty folder, and
  ``python -m specformer site --report ... -o DIR`` run from another empty folder
  with only that folder on ``PYTHONPATH`` (the third-party libraries come from the
  environment; nothing of the checkout is importable).

The tests here compare the two builds (page lists, stylesheets and scripts each page
links, the stylesheet's bytes, the navigation) and measure the weight targets (home page
under 60 KB of HTML, the site under 25 MB). ``tests/test_site_browser.py`` opens both
builds in Chromium. The builds are made once per test session (about a minute each,
plots included) and shared by both modules.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from specformer.claims import Claim, load_claims
from specformer.site.families import FAMILY_ORDER
from specformer.site.pages import collect_properties

ROOT = Path(__file__).resolve().parent.parent
BUILDS = ("checkout", "wheel")
#: What a copy of the checkout needs to build the wheel.
SOURCES = ("pyproject.toml", "README.md", "specformer", "reference", "properties", "spec")
HOME_LIMIT = 60 * 1024
SITE_LIMIT = 25 * 1024 * 1024
#: The navigation's top level, in order.
NAV_ORDER = ["Home", *FAMILY_ORDER.values(), "Implementations", "Protocol", "Reference"]

needs_mkdocs = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed")


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


def report(version: int, torch: str, devices: list[str], rows: list[dict[str, Any]],
           impls: list[dict[str, Any]] = ()) -> dict[str, Any]:
    cuda = {"device_name": "Test GPU 80GB", "capability": "9.0"} if "cuda" in devices else None
    return {"schema": "specformer-report", "schema_version": version,
            "environment": {"torch": torch, "devices": devices, "cuda": cuda, "profile": "ci",
                            "created": "2026-01-02T03:04:05+00:00", "command": "specformer run"},
            "implementations": list(impls),
            "summary": {"rows": len(rows), "ok": False, "complete": True, "state": "complete"},
            "rows": rows}


def write_reports(folder: Path) -> list[Path]:
    """The two reports both builds render: a CPU run (version 2) and a CUDA run (version 1)."""
    claim, hold, refute = chosen_claim()
    cpu_rows = [row(claim.id, hold, "reference", "cpu", "float64", "pass"),
                row(claim.id, hold, "reference", "cpu", "float32", "pass"),
                row(claim.id, hold, "torch-sdpa", "cpu", "float32", "fail", message="weights differ by 0.5",
                    counterexample="Falsifying example: x=1"),
                row(claim.id, hold, "torch-mha", "cpu", "float32", "known-deviation",
                    deviation_reason="documented difference", original_outcome="fail"),
                row(claim.id, hold, "torch-mha", "cpu", "float64", "fixed", deviation_reason="was wrong once",
                    original_outcome="pass"),
                row(claim.id, refute, "reference", "cpu", "float64", "refuted",
                    counterexample="Falsifying example: y=2"),
                *(row(claim.id, p, "hf-bloom", "cpu", d, "not-applicable",
                      message="hf-bloom does not provide the operation")
                  for p in (hold, refute) for d in ("float32", "float64"))]
    impls = [{"name": "reference", "spec": "reference", "operations": ["attention", "multihead_attention"]},
             {"name": "torch-sdpa", "spec": "torch-sdpa", "operations": ["attention"]},
             {"name": "torch-mha", "spec": "torch-mha", "operations": ["multihead_attention"]},
             {"name": "hf-bloom", "spec": "hf-bloom", "operations": []}]
    cuda_rows = [{**row(claim.id, hold, "reference", "cuda", "float16", "pass"), "examples": 20},
                 row(claim.id, hold, "torch-sdpa", "cuda", "float16", "error", message="CUDA error: boom")]
    cpu = folder / "cpu-run.json"
    cpu.write_text(json.dumps(report(2, "2.13.0+cpu", ["cpu"], cpu_rows, impls)), encoding="utf-8")
    cuda = folder / "gpu-run.json"
    cuda.write_text(json.dumps(report(1, "2.11.0+cu130", ["cpu", "cuda"], cuda_rows)), encoding="utf-8")
    return [cpu, cuda]


def _run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, **kwargs)
    assert done.returncode == 0, " ".join(command) + "\n" + done.stdout + done.stderr
    return done


def build_checkout(out: Path, reports: list[Path]) -> Path:
    """``mkdocs build --strict`` in the checkout, rendering ``reports`` and no published one."""
    env = {**os.environ, "SPECFORMER_REPORT": os.pathsep.join(map(str, reports)), "SPECFORMER_PUBLISHED": "",
           "NO_MKDOCS_2_WARNING": "1"}
    env.pop("PYTHONPATH", None)  # python -m puts the checkout (the working directory) first
    _run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT, env=env)
    return out


def install_wheel(folder: Path) -> Path:
    """Build a wheel from a copy of the checkout and install it alone into ``folder/lib``."""
    source = folder / "source"
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(folder / "dist"), str(source)])
    wheel = next((folder / "dist").glob("specformer-*.whl"))
    _run([*pip, "install", "--no-deps", "--no-index", "--target", str(folder / "lib"), str(wheel)])
    return folder / "lib"


def installed_env(lib: Path) -> dict[str, str]:
    """An environment in which ``specformer`` is the installed wheel in ``lib``, not the checkout."""
    return {**os.environ, "PYTHONPATH": str(lib), "NO_MKDOCS_2_WARNING": "1"}


def build_wheel(folder: Path, out: Path, reports: list[Path]) -> Path:
    """``specformer site --report ... -o out`` from the installed wheel, run from an empty folder."""
    lib = install_wheel(folder)
    empty = folder / "empty"
    empty.mkdir()
    where = _run([sys.executable, "-c", "import specformer.site; print(specformer.site.__file__)"],
                 cwd=empty, env=installed_env(lib)).stdout.strip()
    assert Path(where).is_relative_to(lib), where
    _run([sys.executable, "-m", "specformer", "site", *(a for r in reports for a in ("--report", str(r))),
          "-o", str(out)], cwd=empty, env=installed_env(lib))
    return out


_BUILT: dict[str, dict[str, Path]] = {}


def site_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both builds of the same reports, made once per session: ``{"checkout": DIR, "wheel": DIR}``."""
    key = str(tmp_path_factory.getbasetemp())
    if key not in _BUILT:
        tmp = tmp_path_factory.mktemp("site-builds")
        reports = write_reports(tmp)
        _BUILT[key] = {"checkout": build_checkout(tmp / "checkout-site", reports),
                       "wheel": build_wheel(tmp / "wheel", tmp / "wheel-site", reports)}
    return _BUILT[key]


class Links(HTMLParser):
    """The stylesheets, scripts, links and top navigation entries of one page."""

    def __init__(self) -> None:
        super().__init__()
        self.styles: list[str] = []
        self.scripts: list[str] = []
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag == "link" and a.get("rel") == "stylesheet":
            self.styles.append(a.get("href") or "")
        elif tag == "script" and a.get("src"):
            self.scripts.append(a.get("src") or "")
        elif tag == "a" and a.get("href"):
            self.hrefs.append(a.get("href") or "")


def parse(path: Path) -> Links:
    links = Links()
    links.feed(path.read_text(encoding="utf-8"))
    return links


def pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))


def broken_links(site: Path) -> list[str]:
    """Internal links of every page whose target file does not exist in the site."""
    broken = []
    for path in sorted(site.rglob("*.html")):
        for href in parse(path).hrefs:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or not parts.path or href.startswith("mailto:"):
                continue
            base = site if parts.path.startswith("/") else path.parent
            target = (base / unquote(parts.path).lstrip("/")).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{path.relative_to(site)} -> {href}")
    return broken


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (the docs extra)")
    return site_builds(tmp_path_factory)


@needs_mkdocs
def test_the_wheel_builds_the_same_pages_and_styles_as_the_checkout(builds):
    checkout, wheel = builds["checkout"], builds["wheel"]
    assert pages(checkout) == pages(wheel)
    assert len(pages(checkout)) > 250
    for page in pages(checkout):
        ours, theirs = parse(checkout / page), parse(wheel / page)
        assert ours.styles == theirs.styles, page
        assert ours.scripts == theirs.scripts, page
        assert "assets/specformer.css" in " ".join(ours.styles), page
    assert (checkout / "assets" / "specformer.css").read_bytes() == (wheel / "assets" / "specformer.css").read_bytes()
    for page in ("conventions/index.html", "report-schema/index.html", "api/index.html",
                 "protocol/attention/index.html", "implementations/index.html", "families/tokenization/index.html"):
        assert (wheel / page).is_file(), page
    shipped = sorted(p.relative_to(checkout).as_posix() for p in checkout.rglob("*") if p.is_file()
                     and p.suffix not in (".html", ".png") and "search" not in p.parts and p.name != "sitemap.xml.gz")
    assert shipped == sorted(p.relative_to(wheel).as_posix() for p in wheel.rglob("*") if p.is_file()
                             and p.suffix not in (".html", ".png") and "search" not in p.parts
                             and p.name != "sitemap.xml.gz")


@needs_mkdocs
@pytest.mark.parametrize("build", BUILDS)
def test_the_site_is_light(builds, build):
    site = builds[build]
    assert (site / "index.html").stat().st_size < HOME_LIMIT
    assert size(site) < SITE_LIMIT, size(site)
    assert [p.name for p in (site / "assets" / "mathjax").iterdir()] == ["tex-svg-full.js"]
    assert not list(site.rglob("*.map"))


@needs_mkdocs
@pytest.mark.parametrize("build", BUILDS)
def test_every_internal_link_resolves(builds, build):
    assert broken_links(builds[build]) == []


@needs_mkdocs
@pytest.mark.parametrize("build", BUILDS)
def test_navigation_follows_the_families_in_order(builds, build):
    html = (builds[build] / "index.html").read_text(encoding="utf-8")
    tabs = [re.sub(r"\s+", " ", t).strip() for t in
            re.findall(r'<a href="[^"]*" class="md-tabs__link[^"]*">(.*?)</a>', html, re.S)]
    assert tabs == NAV_ORDER, tabs
