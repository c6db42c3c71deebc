"""``specformer site [--report R ...] -o DIR``: the site of some reports, or of none, from the package alone.

The site is the same however the package is installed. The pages, styles, scripts and
MkDocs configuration ship with the package (``specformer/site/mkdocs.yml`` and
``specformer/site/docs/``), and the MkDocs hooks :mod:`specformer.site.hooks` add them and
the generated pages to every build. The checkout's ``mkdocs.yml`` inherits the shipped
configuration; this command writes a temporary one that inherits it too, with an empty
``docs_dir``, and builds it into ``DIR`` with ``python -m mkdocs`` (strict, as the
checkout's build: the shipped configuration says ``strict: true``). The given reports are
rendered, merged, through ``$SPECFORMER_REPORT``; no published report is added
(``$SPECFORMER_PUBLISHED`` is empty). Without ``--report`` the site has every claim,
protocol and reference page, and its claim pages say that it was built without a report
(``$SPECFORMER_REPORT`` is empty).

It does not run the suite, and it reads no report that is not named on its command line.
Needs the ``docs`` extra (MkDocs, Material, mkdocstrings; Matplotlib for plots, the
``mathjax`` package to vendor MathJax).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

SITE_DIR = Path(__file__).resolve().parent
PACKAGE_DIR = SITE_DIR.parent
#: The shipped MkDocs configuration every build inherits, and the hooks every build names.
BASE_CONFIG = SITE_DIR / "mkdocs.yml"
HOOKS = SITE_DIR / "hooks.py"


def project(folder: Path, plots: bool = True) -> Path:
    """Write the temporary MkDocs project into ``folder``; return its configuration file."""
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "INHERIT": str(BASE_CONFIG),
        "docs_dir": "docs",
        "hooks": [str(HOOKS)],
        "extra": {"specformer": {"published_results": [], "plots": plots}},
    }
    path = folder / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


# -- the command ------------------------------------------------------------------------------


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``site`` to the ``specformer`` command's subcommands."""
    site = sub.add_parser("site", help="build the documentation site of some reports")
    site.add_argument("--report", action="append", default=[], metavar="PATH",
                      help="a report written by `specformer run` (repeatable; rows are merged); without one, "
                           "the site has the claims and the protocol but no results")
    site.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to build the site into")
    site.add_argument("--strict", action="store_true",
                      help="fail on MkDocs warnings (always the case: the site's configuration is strict)")
    site.add_argument("--no-plots", action="store_true", help="leave out the figures (faster)")
    return site


def run_site(args: argparse.Namespace) -> int:
    """Check the reports, write the project, build it; 0 on success, 2 on a usage error, 1 if MkDocs fails."""
    from specformer.site.runs import ReportError, read_report

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
        config = project(Path(scratch), plots=not args.no_plots)
        command = [sys.executable, "-m", "mkdocs", "build", "-q", "--strict", "-f", str(config), "-d", str(output)]
        # the build's hooks import this same package, wherever it was imported from here
        path = os.pathsep.join(filter(None, [str(PACKAGE_DIR.parent), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONPATH": path, "NO_MKDOCS_2_WARNING": "1",
               "SPECFORMER_REPORT": os.pathsep.join(map(str, reports)), "SPECFORMER_PUBLISHED": ""}
        done = subprocess.run(command, cwd=scratch, env=env)
    if done.returncode != 0:
        print(f"specformer: error: mkdocs build failed (exit {done.returncode})", file=sys.stderr)
        return 1
    print(f"site: {output}" + ("" if reports else " (built without a report: the claim pages show no results)"))
    return 0
