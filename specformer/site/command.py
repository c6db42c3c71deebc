"""``specformer site --report R [--report R2 ...] -o DIR``: the site of some reports, from the package alone.

The site of a checkout is built by ``mkdocs build`` with ``mkdocs.yml`` and ``docs/``;
neither is installed with the package. This command needs neither: it writes a
temporary MkDocs project whose pages come from the installed package (the spec, the
properties and :func:`specformer.site.pages.generate`), renders the given reports into it
(merged, as the checkout's site merges its local and published reports), and builds it
into ``DIR`` with ``python -m mkdocs``. In a checkout it also copies the hand-written
pages and assets of ``docs/`` it finds (conventions, report schema, stylesheet);
installed, the site has a generated home page, the claim pages and the overview.

This module is also the project's MkDocs hooks file (``on_config``, ``on_files``,
``on_post_build``): the reports to render are in the configuration under
``extra: specformer_site: reports``. It does not run the suite, and it reads no report
that is not named on its command line. Needs the ``docs`` extra (MkDocs, Material;
Matplotlib for plots, the ``mathjax`` package to vendor MathJax).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

PACKAGE_DIR = Path(__file__).resolve().parent
#: The hand-written pages of ``docs/`` copied when found (a checkout), with their nav titles.
STATIC_PAGES = {"conventions.md": "Conventions", "report-schema.md": "Report schema"}
STATIC_ASSETS = ("assets/specformer.css", "assets/specformer.js", "assets/mathjax-config.js")
SETTING = "specformer_site"
MATHJAX_CONFIG = """window.MathJax = {
  tex: {inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]], processEscapes: true},
  options: {ignoreHtmlClass: ".*|", processHtmlClass: "arithmatex"}
};
"""
log = logging.getLogger("mkdocs.hooks.specformer_site")


def checkout_docs() -> Path | None:
    """The ``docs/`` folder beside the package in a source checkout, else ``None``."""
    docs = PACKAGE_DIR.parent / "docs"
    return docs if (PACKAGE_DIR.parent / "pyproject.toml").is_file() and docs.is_dir() else None


def home_page(reports: list[Path]) -> str:
    """The generated home page: what the site shows and which reports it renders."""
    from specformer.site.tables import code

    listed = "\n".join(f"- {code(str(p.name))}" for p in reports)
    return ("# specformer results\n\n"
            "Claims about the transformer, each checked by Hypothesis properties against the "
            "implementations of the reports below. The [claims overview](claims/index.md) has the "
            "outcome matrix and a page per claim.\n\n"
            f"## Reports rendered\n\n{listed}\n")


def project(reports: list[Path], folder: Path, plots: bool = True) -> Path:
    """Write the temporary MkDocs project into ``folder``; return its configuration file."""
    docs = folder / "docs"
    (docs / "assets").mkdir(parents=True)
    (docs / "index.md").write_text(home_page(reports), encoding="utf-8")
    source = checkout_docs()
    nav: list[Any] = [{"Home": "index.md"}, {"Claims": ["claims/index.md"]}]
    for page, title in STATIC_PAGES.items():
        if source is not None and (source / page).is_file():
            shutil.copyfile(source / page, docs / page)
            nav.append({title: page})
    for asset in STATIC_ASSETS:
        if source is not None and (source / asset).is_file():
            shutil.copyfile(source / asset, docs / asset)
    if not (docs / "assets" / "mathjax-config.js").is_file():
        (docs / "assets" / "mathjax-config.js").write_text(MATHJAX_CONFIG, encoding="utf-8")
    material = importlib.util.find_spec("material") is not None
    config: dict[str, Any] = {
        "site_name": "specformer",
        "docs_dir": "docs",
        "theme": {"name": "material", "font": False} if material else {"name": "mkdocs"},
        "extra": {"generator": False, SETTING: {"reports": [str(p) for p in reports], "plots": plots}},
        "hooks": [str(Path(__file__).resolve())],
        "extra_css": ["assets/specformer.css"] if (docs / "assets" / "specformer.css").is_file() else [],
        "extra_javascript": (["assets/specformer.js"] if (docs / "assets" / "specformer.js").is_file() else [])
        + ["assets/mathjax-config.js", "assets/mathjax/tex-mml-chtml.js"],
        "markdown_extensions": ["admonition", "attr_list", "md_in_html", "tables", {"toc": {"permalink": True}},
                                "pymdownx.details", "pymdownx.superfences", "pymdownx.highlight",
                                {"pymdownx.arithmatex": {"generic": True}}],
        "validation": {"nav": {"omitted_files": "info", "not_found": "warn"},
                       "links": {"not_found": "warn", "anchors": "warn", "unrecognized_links": "info"}},
        "nav": nav,
    }
    path = folder / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


# -- MkDocs hooks (this file is the generated project's hooks file) -------------------------


def _setting(config: Any) -> dict[str, Any]:
    value = (config.extra or {}).get(SETTING) or {}
    return value if isinstance(value, dict) else {}


def on_config(config: Any) -> Any:
    """Fill the *Claims* section of the navigation with the generated pages."""
    from specformer.claims import load_claims
    from specformer.site.pages import nav

    for entry in config.nav or []:
        if isinstance(entry, dict) and "Claims" in entry:
            entry["Claims"] = nav(load_claims())
    return config


def on_files(files: Any, config: Any) -> Any:
    """Add the claim, topic and overview pages of the configured reports, and their plots."""
    from mkdocs.structure.files import File

    from specformer.claims import load_claims
    from specformer.site.pages import PLOTS_DIR, generate

    setting = _setting(config)
    captions: dict[str, list[tuple[str, str]]] = {}
    if setting.get("plots", True):
        try:
            from specformer.site.plots import render
        except ImportError as exc:  # Matplotlib comes with the ``docs`` extra
            log.info("specformer: no plots (%s)", exc)
        else:
            for plot, png in render(only=load_claims().keys()):
                files.append(File.generated(config, f"{PLOTS_DIR}/{plot.file}", content=png))
                captions.setdefault(plot.claim, []).append((plot.file, plot.caption))
    reports = [Path(p) for p in setting.get("reports", [])]
    for src_uri, content in generate(reports, plots=captions).items():
        files.append(File.generated(config, src_uri, content=content))
    return files


def on_post_build(config: Any) -> None:
    """Vendor MathJax into the site when the ``mathjax`` package is installed."""
    if importlib.util.find_spec("mathjax") is None:
        log.warning("specformer: the mathjax package is not installed; formulas will not render")
        return
    from importlib import resources

    source = Path(str(resources.files("mathjax") / "static" / "mathjax" / "es5"))
    shutil.copytree(source, Path(config.site_dir) / "assets" / "mathjax", dirs_exist_ok=True)


# -- the command ------------------------------------------------------------------------------


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``site`` to the ``specformer`` command's subcommands."""
    site = sub.add_parser("site", help="build the documentation site of some reports")
    site.add_argument("--report", action="append", required=True, metavar="PATH",
                      help="a report written by `specformer run` (repeatable; rows are merged)")
    site.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to build the site into")
    site.add_argument("--strict", action="store_true", help="fail on MkDocs warnings")
    site.add_argument("--no-plots", action="store_true", help="leave out the figures (faster)")
    return site


def run_site(args: argparse.Namespace) -> int:
    """Check the reports, write the project, build it; 0 on success, 2 on a usage error, 1 if MkDocs fails."""
    from specformer.site.pages import ReportError, read_report

    reports = [Path(p).resolve() for p in args.report]
    for path in reports:
        if not path.is_file():
            print(f"specformer: error: --report {str(path)!r} does not exist", file=sys.stderr)
            return 2
        try:
            read_report(path)
        except ReportError as exc:
            print(f"specformer: error: --report {exc}", file=sys.stderr)
            return 2
    output = Path(args.output).resolve()
    if output.exists() and not output.is_dir():
        print(f"specformer: error: -o {str(output)!r} is a file, not a folder", file=sys.stderr)
        return 2
    if importlib.util.find_spec("mkdocs") is None:
        print("specformer: error: building the site needs MkDocs: pip install 'specformer[docs]'", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="specformer-site-") as scratch:
        config = project(reports, Path(scratch), plots=not args.no_plots)
        command = [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config), "-d", str(output)]
        # the build's hooks import this same package, wherever it was imported from here
        path = os.pathsep.join(filter(None, [str(PACKAGE_DIR.parent), os.environ.get("PYTHONPATH")]))
        done = subprocess.run(command + (["--strict"] if args.strict else []), cwd=scratch,
                              env={**os.environ, "PYTHONPATH": path, "NO_MKDOCS_2_WARNING": "1"})
    if done.returncode != 0:
        print(f"specformer: error: mkdocs build failed (exit {done.returncode})", file=sys.stderr)
        return 1
    print(f"site: {output}")
    return 0
