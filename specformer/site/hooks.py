"""MkDocs hooks of the specformer site: every build runs these, wherever the package is.

The checkout's ``mkdocs.yml`` and the configuration ``specformer site`` writes both
inherit the shipped ``specformer/site/mkdocs.yml`` and name this file as their hooks, so
a wheel installed anywhere builds the same pages, styles and scripts as the checkout:

* ``on_config``: the navigation (home, the five families in the order a transformer
  processes text, implementations, protocol and reference pages), built by
  :func:`specformer.site.pages.nav`;
* ``on_files``: adds the hand-written pages and assets shipped in
  ``specformer/site/docs/`` (a file of the same path in the build's own ``docs_dir``
  wins), the pages :func:`specformer.site.pages.generate` writes from the spec, the
  properties and the reports (below), and the figures of :mod:`specformer.site.plots`
  as PNGs in ``assets/plots/`` (rendered in memory on every build; without Matplotlib,
  or with ``extra: specformer: plots: false``, the pages have no plots);
* ``on_post_build``: copies the one MathJax component the pages load
  (:data:`MATHJAX_FILE`, from the ``mathjax`` package of django-static-mathjax) into
  ``assets/mathjax/``, so the site loads nothing from the network.

:class:`PackageDirs` is a Griffe extension for mkdocstrings: in a checkout the package
maps ``specformer.reference`` (and others) to top-level folders through setuptools'
``package-dir``, which static analysis cannot follow on its own (installed, the folders
are where Griffe looks and the extension does nothing).

Reports rendered, merged into one matrix:

* the local run's: ``$SPECFORMER_REPORT`` (one path, or several joined by
  ``os.pathsep``; set but empty for none), default ``reports/report.json`` beside the
  configuration file; a missing file means no results yet, a file that is not a report
  stops the build;
* the published ones: only those listed in the configuration under
  ``extra: specformer: published_results:`` (paths relative to ``docs_dir``). The
  environment variable ``SPECFORMER_PUBLISHED`` (paths joined by ``os.pathsep``,
  relative ones taken from ``docs_dir``; empty for none) replaces that list, so a build
  can publish reports from elsewhere without touching ``docs/results/``. A listed file
  that is missing, not JSON or not a report (:func:`specformer.site.pages.report_problem`)
  is logged as an error naming it, which fails the (strict) build, and is left out.
  JSON files beside the listed ones or in ``docs/results/`` that are not listed are
  neither rendered nor copied into the site (an info line names each).

``specformer site`` (:mod:`specformer.site.command`) sets ``SPECFORMER_REPORT`` to its
reports and ``SPECFORMER_PUBLISHED`` to nothing. The hooks never run the suite.
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
from specformer.site.spectext import spec_markdown

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: The shipped pages, styles and scripts (package data).
SHIPPED_DOCS = Path(__file__).resolve().parent / "docs"
#: The local report's default path, relative to the folder of the configuration file.
DEFAULT_REPORT = Path("reports") / "report.json"
#: The MathJax component the pages load (``extra_javascript`` of ``specformer/site/mkdocs.yml``):
#: TeX input, SVG output and every TeX extension in one file, so nothing else is fetched.
MATHJAX_FILE = "tex-svg-full.js"
log = logging.getLogger("mkdocs.hooks.specformer")


#: The folder of ``docs/`` that holds reports of runs made elsewhere (a GPU machine).
RESULTS_DIR = "results"
#: Environment variable that replaces the list of published reports.
PUBLISHED_ENV = "SPECFORMER_PUBLISHED"
#: Where ``mkdocs.yml`` lists the published reports.
PUBLISHED_SETTING = "extra.specformer.published_results"


def local_report_paths(config: MkDocsConfig | None = None) -> list[Path]:
    """The local run's reports that exist: ``$SPECFORMER_REPORT`` (one path, or several
    joined by ``os.pathsep``; set but empty: none) or the default beside the configuration file."""
    value = os.environ.get("SPECFORMER_REPORT")
    base = Path(config.config_file_path).parent if config is not None and config.config_file_path else Path.cwd()
    if value is None:
        paths = [base / DEFAULT_REPORT]
    else:
        paths = [Path(v).expanduser() for v in value.split(os.pathsep) if v]
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
    return local_report_paths(config) + valid_reports(listed)


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


def _setting(config: MkDocsConfig) -> dict[str, Any]:
    value = (config.extra or {}).get("specformer") or {}
    return value if isinstance(value, dict) else {}


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Set the navigation: home, the families in order, implementations, protocol, reference."""
    config.nav = nav(load_claims())
    return config


def shipped_files(config: MkDocsConfig, files: Files) -> list[File]:
    """The shipped pages and assets of ``specformer/site/docs/`` that the build's ``docs_dir`` lacks."""
    found = []
    for path in sorted(SHIPPED_DOCS.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        uri = path.relative_to(SHIPPED_DOCS).as_posix()
        if files.get_file_from_path(uri) is None:
            found.append(File(uri, str(SHIPPED_DOCS), config.site_dir, config.use_directory_urls))
    return found


def plot_files(config: MkDocsConfig) -> tuple[list[File], dict[str, list[tuple[str, str]]]]:
    """The figures of the known claims as generated files, and their captions by claim."""
    if _setting(config).get("plots", True) is False:
        return [], {}
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
    """Add the shipped pages and assets, the generated pages and their plots; drop unlisted results."""
    listed = published_paths(config)
    drop_unlisted(files, listed)
    for file in shipped_files(config, files):
        files.append(file)
    images, captions = plot_files(config)
    for image in images:
        files.append(image)
    for src_uri, content in generate(report_paths(config, listed), plots=captions).items():
        files.append(File.generated(config, src_uri, content=content))
    return files


def prune_theme_assets(site: Path, config: MkDocsConfig) -> list[Path]:
    """Remove what the theme copies but no page loads: source maps, and the search's
    stemmers of other languages when the search is in English only. Returns what went."""
    gone = sorted((site / "assets").rglob("*.map"))
    search = config.plugins.get("search")
    langs = getattr(search, "config", {}).get("lang") if search is not None else None
    if langs in (None, ["en"], "en") and (site / "assets" / "javascripts" / "lunr").is_dir():
        gone.append(site / "assets" / "javascripts" / "lunr")
    for path in gone:
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return gone


def on_post_build(config: MkDocsConfig) -> None:
    """Vendor the one MathJax component the pages load into ``assets/mathjax/``; prune the theme's unused assets."""
    prune_theme_assets(Path(config.site_dir), config)
    try:
        source = mathjax_dir() / MATHJAX_FILE
    except ModuleNotFoundError:
        log.warning("specformer: the mathjax package (django-static-mathjax) is not installed; formulas will not render")
        return
    target = Path(config.site_dir) / "assets" / "mathjax"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target / MATHJAX_FILE)


_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`~?\.?([^`]+)`")


def checkout_pyproject() -> Path | None:
    """The checkout's ``pyproject.toml``: beside this package when it is imported from a
    checkout, else in the working folder (``mkdocs build`` in a checkout with the package
    installed); ``None`` when neither is specformer's (an installed wheel needs none)."""
    for folder in (Path(__file__).resolve().parents[2], Path.cwd()):
        path = folder / "pyproject.toml"
        if path.is_file() and (folder / "specformer" / "site" / "mkdocs.yml").is_file():
            return path
    return None


class PackageDirs(griffe.Extension):
    """Load subpackages that ``[tool.setuptools.package-dir]`` maps to other folders.

    Also turns reST roles (``:class:`X```) in docstrings into plain code spans, shows text
    that looks like an HTML tag (``"</w>"`` outside code) as text and names the documents
    cited by number (:func:`specformer.site.spectext.spec_markdown`).
    """

    def __init__(self, pyproject: str | None = None) -> None:
        path = Path(pyproject) if pyproject else checkout_pyproject()
        self.root = path.parent if path else Path.cwd()
        table = tomllib.loads(path.read_text(encoding="utf-8")) if path and path.is_file() else {}
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
        """Rewrite reST cross-reference roles as code spans; escape tags, name documents."""
        if obj.docstring is not None:
            obj.docstring.value = spec_markdown(_ROLE.sub(r"`\1`", obj.docstring.value))
