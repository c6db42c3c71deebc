"""MkDocs hooks for the specformer site.

* ``on_config``: fills the *Claims* section of the navigation with the overview, one
  section per topic and its claim pages;
* ``on_files``: adds the pages :func:`specformer.site.pages.generate` writes from the spec,
  the properties and the reports (below), and the figures of
  :mod:`specformer.site.plots` as PNGs in ``assets/plots/`` (rendered in memory on every
  build; without Matplotlib the pages have no plots);
* ``on_post_build``: copies MathJax (the ``es5`` build shipped by the ``mathjax``
  package of django-static-mathjax) into ``assets/mathjax/``, so the site loads
  nothing from the network.

:class:`PackageDirs` is a Griffe extension for mkdocstrings: the package maps
``specformer.reference`` (and others) to top-level folders through setuptools'
``package-dir``, which static analysis cannot follow on its own.

Reports rendered, merged into one matrix:

* the local run's: ``$SPECFORMER_REPORT`` (one path, or several joined by
  ``os.pathsep``), default ``reports/report.json`` in the repository; a missing file
  means no results yet, a file that is not a report stops the build;
* the published ones: only those listed in ``mkdocs.yml`` under
  ``extra: specformer: published_results:`` (paths relative to ``docs/``). The
  environment variable ``SPECFORMER_PUBLISHED`` (paths joined by ``os.pathsep``,
  relative ones taken from ``docs/``; empty for none) replaces that list, so a build
  can publish reports from elsewhere without touching ``docs/results/``. A listed file
  that is missing, not JSON or not a report (:func:`specformer.site.pages.report_problem`) is
  logged as an error naming it, which fails ``mkdocs build --strict``, and is left out.
  JSON files beside the listed ones or in ``docs/results/`` that are not listed are
  neither rendered nor copied into the site (an info line names each).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import time
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

import griffe
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from specformer.claims import load_claims
from specformer.site.pages import PLOTS_DIR, ReportError, generate, nav, read_report

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_REPORT = ROOT / "reports" / "report.json"
NAV_SECTION = "Claims"
log = logging.getLogger("mkdocs.hooks.specformer")


#: The folder of ``docs/`` that holds reports of runs made elsewhere (a GPU machine).
RESULTS_DIR = "results"
#: Environment variable that replaces the list of published reports.
PUBLISHED_ENV = "SPECFORMER_PUBLISHED"
#: Where ``mkdocs.yml`` lists the published reports.
PUBLISHED_SETTING = "extra.specformer.published_results"


def local_report_paths() -> list[Path]:
    """The local run's reports that exist: ``$SPECFORMER_REPORT`` (one path, or several
    joined by ``os.pathsep``) or the default."""
    value = os.environ.get("SPECFORMER_REPORT")
    paths = [Path(v).expanduser() for v in value.split(os.pathsep) if v] if value else [DEFAULT_REPORT]
    found = [p for p in paths if p.is_file()]
    for missing in set(paths) - set(found):
        log.info("specformer: no report at %s", missing)
    return found


def published_entries(config: MkDocsConfig) -> list[str]:
    """The published reports' paths as given: ``$SPECFORMER_PUBLISHED`` or the ``mkdocs.yml`` list."""
    value = os.environ.get(PUBLISHED_ENV)
    if value is not None:
        return [v for v in value.split(os.pathsep) if v]
    section = config.extra.get("specformer") or {}
    setting = section.get("published_results", []) if isinstance(section, dict) else section
    if not isinstance(setting, list) or not all(isinstance(v, str) for v in setting):
        log.error("specformer: %s must be a list of paths relative to docs/, not %r", PUBLISHED_SETTING, setting)
        return []
    return setting


def published_paths(config: MkDocsConfig) -> list[Path]:
    """The listed published reports, absolute (relative entries are taken from ``docs/``)."""
    docs = Path(config.docs_dir)
    return [(docs / Path(entry).expanduser()).resolve() for entry in published_entries(config)]


def valid_reports(paths: list[Path]) -> list[Path]:
    """The listed reports that can be rendered; each other one is logged as an error naming it."""
    valid = []
    for path in paths:
        if not path.is_file():
            log.error("specformer: published report %s (listed in %s or $%s) does not exist",
                      path, PUBLISHED_SETTING, PUBLISHED_ENV)
            continue
        try:
            read_report(path)
        except ReportError as exc:
            log.error("specformer: published report %s", exc)
            continue
        valid.append(path)
    return valid


def unlisted_reports(config: MkDocsConfig, listed: list[Path]) -> list[Path]:
    """JSON files in ``docs/results/`` or beside a listed report that are not listed."""
    folders = {(Path(config.docs_dir) / RESULTS_DIR).resolve(), *(p.parent for p in listed)}
    found = {p.resolve() for folder in folders if folder.is_dir() for p in folder.glob("*.json")}
    return sorted(found - set(listed))


def report_paths(config: MkDocsConfig, listed: list[Path]) -> list[Path]:
    """The reports to render: the local run's, then the valid ones of the ``listed`` published reports."""
    for path in unlisted_reports(config, listed):
        log.info("specformer: %s is not listed in %s (or $%s); not published",
                 path, PUBLISHED_SETTING, PUBLISHED_ENV)
    return local_report_paths() + valid_reports(listed)


def drop_unlisted(files: Files, listed: list[Path]) -> None:
    """Remove the JSON files of ``docs/results/`` that are not ``listed`` from the site's files."""
    for file in list(files):
        path = Path(file.abs_src_path).resolve() if file.abs_src_path else None
        if (path is not None and path.suffix == ".json" and file.src_uri.startswith(f"{RESULTS_DIR}/")
                and path not in listed):
            files.remove(file)


def mathjax_dir() -> Path:
    """The installed MathJax 3 ``es5`` folder."""
    return Path(str(resources.files("mathjax") / "static" / "mathjax" / "es5"))


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Replace the pages of the ``Claims`` nav section with the generated ones."""
    for entry in config.nav or []:
        if isinstance(entry, dict) and NAV_SECTION in entry:
            entry[NAV_SECTION] = nav(load_claims())
    return config


def plot_files(config: MkDocsConfig) -> tuple[list[File], dict[str, list[tuple[str, str]]]]:
    """The figures of the known claims as generated files, and their captions by claim."""
    try:
        from specformer.site.plots import render
    except ImportError as exc:  # Matplotlib comes with the ``docs`` extra
        log.info("specformer: no plots (%s)", exc)
        return [], {}
    start = time.perf_counter()
    rendered = render(only=load_claims().keys())
    log.info("specformer: %d plots rendered in %.1f s", len(rendered), time.perf_counter() - start)
    captions: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for plot, png in rendered:
        captions[plot.claim].append((plot.file, plot.caption))
    return [File.generated(config, f"{PLOTS_DIR}/{plot.file}", content=png) for plot, png in rendered], captions


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated claim, topic and overview pages and the plots they show; drop unlisted results."""
    listed = published_paths(config)
    drop_unlisted(files, listed)
    images, captions = plot_files(config)
    for image in images:
        files.append(image)
    for src_uri, content in generate(report_paths(config, listed), plots=captions).items():
        files.append(File.generated(config, src_uri, content=content))
    return files


def on_post_build(config: MkDocsConfig) -> None:
    """Vendor MathJax into ``assets/mathjax/`` of the built site."""
    shutil.copytree(mathjax_dir(), Path(config.site_dir) / "assets" / "mathjax", dirs_exist_ok=True)


_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`~?\.?([^`]+)`")


class PackageDirs(griffe.Extension):
    """Load subpackages that ``[tool.setuptools.package-dir]`` maps to other folders.

    Also turns reST roles (``:class:`X```) in docstrings into plain code spans.
    """

    def __init__(self, pyproject: str = str(ROOT / "pyproject.toml")) -> None:
        self.root = Path(pyproject).parent
        table = tomllib.loads(Path(pyproject).read_text(encoding="utf-8"))
        self.dirs: dict[str, str] = table.get("tool", {}).get("setuptools", {}).get("package-dir", {})

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """Attach the mapped subpackages of ``pkg`` that the loader did not find."""
        for name, folder in sorted(self.dirs.items()):
            parent, _, child = name.rpartition(".")
            init = self.root / folder / "__init__.py"
            if parent != pkg.path or child in pkg.members or not init.is_file():
                continue
            # Griffe has no public call to load a package from an arbitrary folder.
            module = loader._load_module(child, init, submodules=True, parent=pkg)
            pkg.set_member(child, module)

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite reST cross-reference roles as code spans."""
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(r"`\1`", obj.docstring.value)
