"""Figures of the scaling-law claims (``spec/embeddings/laws.md``).

Registered with :func:`specformer.site_plots.plot` when :func:`specformer.site_plots.plots`
first runs; computed from :mod:`specformer.reference.embeddings.scaling` and the table of
001 ("Scaling Laws"), in Python floats. Nothing here is fitted or measured: the curves are
the published formulas.
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from specformer.reference.embeddings import scaling as law
from specformer.site_plots import BLUE, GREEN, GREY, ORANGE, plot

#: 001's table: parameters, training tokens, the document's label.
TABLE = (
    ("GPT-3", 175e9, 300e9, "under-trained"),
    ("Chinchilla", 70e9, 1.4e12, "compute-optimal"),
    ("LLaMA 2", 70e9, 2e12, "over-trained"),
    ("LLaMA 3", 70e9, 15e12, "heavily over-trained"),
)


def _check(condition: bool, message: str) -> None:
    """Fail the render (also under ``python -O``) when a computed check fails."""
    if not condition:
        raise AssertionError(message)


def _logspace(lo: float, hi: float, n: int) -> list[float]:
    return [10 ** (lo + (hi - lo) * i / (n - 1)) for i in range(n)]


@plot("laws.kaplan-law",
      "Kaplan et al.'s L(N) = (N_c/N)^0.076, a straight line on log-log axes, against Hoffmann et al.'s fit "
      "L(N, D) at 20 tokens per parameter, which bends towards its floor E = 1.69 nats. The two papers "
      "measure different data with different tokenizers: compare the shapes, not the values.")
def _loss_against_parameters(fig: Figure) -> None:
    ns = _logspace(6, 13, 120)
    kaplan = [law.kaplan_loss(n) for n in ns]
    chinchilla = [law.chinchilla_loss(n, law.TOKENS_PER_PARAMETER * n) for n in ns]
    slope = (math.log(kaplan[-1]) - math.log(kaplan[0])) / (math.log(ns[-1]) - math.log(ns[0]))
    _check(abs(slope + law.KAPLAN_ALPHA_N) < 1e-12, f"the log-log slope of L(N) is {slope}")
    ax = fig.add_subplot()
    ax.plot(ns, kaplan, color=BLUE, lw=2, label=r"Kaplan: $(N_c/N)^{0.076}$, $N$ non-embedding")
    ax.plot(ns, chinchilla, color=ORANGE, lw=2, label=r"Hoffmann: $E + A/N^{0.34} + B/D^{0.28}$, $D = 20N$")
    ax.axhline(law.CHINCHILLA_FIT[0], color=ORANGE, ls=":", lw=1, label=r"Hoffmann's floor $E = 1.69$")
    for (name, n, d, _), marker in zip(TABLE, "osD^"):
        ax.plot([n], [law.chinchilla_loss(n, d)], marker, color=GREEN, ms=6, mfc="white", mew=1.5, zorder=5,
                label=f"{name}: {n / 1e9:g}B on {d / 1e12:g}T tokens, Hoffmann's fit")
    ax.set(xscale="log", yscale="log", xlabel="parameters $N$", ylabel="loss (nats per token)",
           title="Loss against model size: a pure power law and a power law with a floor")
    ax.set_yticks([1.5, 2, 3, 4, 6, 8], ["1.5", "2", "3", "4", "6", "8"])
    ax.yaxis.set_minor_locator(NullLocator())
    ax.legend(loc="upper right", fontsize=7)


@plot("laws.table",
      "Tokens per parameter of 001's four models against Hoffmann et al.'s rule of about 20 and the optimum of "
      "their parametric fit (published, rounded constants) at each model's own training budget C = 6ND.")
def _tokens_per_parameter(fig: Figure) -> None:
    e, a, b, alpha, beta = law.CHINCHILLA_FIT
    g = (alpha * a / (beta * b)) ** (1 / (alpha + beta))
    ax = fig.add_subplot()
    names = [row[0] for row in TABLE]
    ratios = [law.tokens_per_parameter(n, d) for _, n, d, _ in TABLE]
    fit = []
    for _, n, d, _ in TABLE:
        c = law.training_compute(n, d)
        n_fit = g * (c / law.FLOPS_PER_PARAMETER_TOKEN) ** (beta / (alpha + beta))
        fit.append(c / law.FLOPS_PER_PARAMETER_TOKEN / n_fit / n_fit)
    _check(abs(ratios[1] - 20) < 1e-9, f"Chinchilla holds {ratios[1]} tokens per parameter")
    xs = range(len(TABLE))
    ax.bar([x - 0.2 for x in xs], ratios, width=0.4, color=BLUE, label="the model: D / N")
    ax.bar([x + 0.2 for x in xs], fit, width=0.4, color=ORANGE, alpha=0.6,
           label="optimum of Hoffmann's fit at the same budget")
    ax.axhline(law.TOKENS_PER_PARAMETER, color=GREEN, ls="--", lw=1.5, label="Hoffmann's rule: 20 tokens per parameter")
    for x, ratio, (_, _, _, text) in zip(xs, ratios, TABLE):
        ax.text(x - 0.2, ratio * 1.1, f"{ratio:.3g}\n{text}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(xs), names)
    ax.set(yscale="log", ylim=(1, 2000), ylabel="training tokens per parameter",
           title="001's table: the labels follow the 20-token rule, not the parametric fit")
    ax.tick_params(axis="x", colors=GREY)
    ax.legend(loc="upper left", fontsize=7)
