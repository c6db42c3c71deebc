"""Figures for the claim pages of the documentation site, where a picture says more.

Each plot belongs to one claim and is drawn from the reference implementation
(:mod:`specformer.reference`) and plain math, never from a report: the figures show what
the claims say, not how an implementation fared. Everything is deterministic (seeded
``torch.Generator``, float64) and rendered off-screen with Matplotlib's Agg canvas, no
``pyplot`` and no display. :data:`PLOTS` maps a claim id to its plots; :func:`render`
returns the PNG bytes (:mod:`specformer.site.hooks` adds them to the site as generated
files) and :func:`render_plots` writes them to a folder. Rendering all of them takes a few
seconds.

This module holds the registry, the style and the rendering; each family's plots sit in
one module named after the family (:mod:`.attention`, :mod:`.positions`, :mod:`.blocks`,
:mod:`.embeddings`, the scaling laws included), which :func:`plots` (and so
:func:`render`) imports on first use. Code that reads :data:`PLOTS` directly should call
:func:`plots` first. Tokenization has no figures.
"""


from __future__ import annotations

import importlib
import io
import math
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

import matplotlib
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


#: Figure size in inches and resolution: 700 x 400 pixels.
SIZE = (7.0, 4.0)
DPI = 100
DTYPE = torch.float64
STYLE = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
}
BLUE, ORANGE, GREEN, GREY = "#3f51b5", "#e65100", "#2e7d32", "#757575"


@dataclass(frozen=True)
class Plot:
    """One figure: the claim it illustrates, its file stem, its caption and how to draw it."""

    claim: str
    name: str
    caption: str
    draw: Callable[[Figure], None]

    @property
    def file(self) -> str:
        """The PNG's file name."""
        return f"{self.name}.png"


#: Plots by claim id, in the order they appear on the claim's page.
PLOTS: dict[str, list[Plot]] = {}


Draw = Callable[[Figure], None]


def plot(claim: str, caption: str, name: str | None = None) -> Callable[[Draw], Draw]:
    """Register ``draw(fig)`` as a plot of ``claim``; the file is named after the claim."""

    def register(draw: Draw) -> Draw:
        stem = name or claim
        if any(p.name == stem for plots in PLOTS.values() for p in plots):
            raise ValueError(f"two plots named {stem!r}")
        PLOTS.setdefault(claim, []).append(Plot(claim, stem, caption, draw))
        return draw

    return register


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=DTYPE)


def _powers(lo: int, hi: int) -> list[int]:
    return [2**i for i in range(int(math.log2(lo)), int(math.log2(hi)) + 1)]


# --- rendering ----------------------------------------------------------------------------


#: Modules whose plots register themselves on import; they import this module, so they are
#: imported on first use (:func:`plots`), not at the top of this one.
FAMILY_MODULES = ("specformer.site.plots.attention", "specformer.site.plots.positions",
                  "specformer.site.plots.blocks", "specformer.site.plots.embeddings")


def _load_family_plots() -> None:
    """Import the families' plot modules (once; Python caches them), registering their plots."""
    for module in FAMILY_MODULES:
        importlib.import_module(module)


@contextmanager
def _one_thread() -> Iterator[None]:
    """Run PyTorch on one thread: the plots' tensors are tiny, and on a busy machine the
    threads of a parallel matmul wait for each other far longer than the work takes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def plots(only: Iterable[str] | None = None) -> list[Plot]:
    """The registered plots, the families' included, optionally only those of the claims in ``only``."""
    _load_family_plots()
    wanted = None if only is None else set(only)
    return [p for claim, ps in PLOTS.items() if wanted is None or claim in wanted for p in ps]


def render_png(plot: Plot) -> bytes:
    """Draw one plot on a fresh off-screen figure and return it as PNG bytes."""
    with matplotlib.rc_context(STYLE), torch.no_grad(), _one_thread():
        fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        plot.draw(fig)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def render(only: Iterable[str] | None = None) -> list[tuple[Plot, bytes]]:
    """Every plot (of the claims in ``only``, if given) with its PNG bytes."""
    return [(p, render_png(p)) for p in plots(only)]


def render_plots(out_dir: Path, only: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Write the PNGs into ``out_dir``; return claim id -> file names, in page order."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[str]] = {}
    for p, png in render(only):
        (out_dir / p.file).write_bytes(png)
        written.setdefault(p.claim, []).append(p.file)
    return written
