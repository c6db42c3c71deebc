"""Figures of the attention family's claims (``spec/attention/``): scaled dot products,
the slides' worked example, quadratic cost, rank collapse, Gaussian scores, causal masks.

Registered with :func:`specformer.site.plots.plot` when :func:`specformer.site.plots.plots`
first runs; drawn from :mod:`specformer.reference.attention` in float64 with the style and
colours of :mod:`specformer.site.plots`. Nothing here reads a report.
"""

from __future__ import annotations

import math

import matplotlib
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle
from torch.utils.flop_counter import FlopCounterMode

from specformer.reference.attention.attention import scaled_dot_product_attention
from specformer.reference.attention.scores import gaussian_scores
from specformer.reference.attention.softmax import softmax
from specformer.site.plots import BLUE, DTYPE, GREEN, GREY, ORANGE, _gen, _powers, _randn, plot


# --- scaling ------------------------------------------------------------------------------


@plot("scaling.dot-product-variance",
      "The sample variance of q·k grows like dₖ for independent N(0, 1) components, "
      "but like 3dₖ when the unit-variance components have mean 1, so the course notes' "
      "“variance 1” alone is not enough.")
def _dot_product_variance(fig: Figure) -> None:
    gen, n = _gen(0), 5_000
    dims = _powers(1, 256)
    zero_mean, mean_one = [], []
    for d in dims:
        q, k = _randn(gen, n, d), _randn(gen, n, d)
        zero_mean.append((q * k).sum(-1).var().item())
        mean_one.append(((q + 1) * (k + 1)).sum(-1).var().item())
    ax = fig.add_subplot()
    ax.plot(dims, dims, color=BLUE, lw=1.2, label=r"$d_k$ (the claim)")
    ax.plot(dims, [3 * d for d in dims], color=ORANGE, lw=1.2, ls="--", label=r"$3d_k$")
    ax.plot(dims, zero_mean, "o", color=BLUE, label=r"sampled: $q_i, k_i \sim \mathcal{N}(0, 1)$")
    ax.plot(dims, mean_one, "s", color=ORANGE, label=r"sampled: $q_i, k_i \sim \mathcal{N}(1, 1)$ (refutes)")
    ax.set(xscale="log", yscale="log", xlabel=r"$d_k$", ylabel=r"sample variance of $q \cdot k$",
           title=rf"Var$(q \cdot k)$ vs $d_k$ ({n:,} samples per point)")
    ax.set_xscale("log", base=2)
    ax.legend(loc="upper left")


@plot("scaling.unscaled-saturation",
      "With 8 keys, unscaled scores q·kⱼ push the largest softmax weight towards 1 and the "
      "softmax Jacobian towards 0 as dₖ grows; scaled by 1/√dₖ both settle to values "
      "that do not depend on dₖ.")
def _unscaled_saturation(fig: Figure) -> None:
    gen, n, t_k = _gen(1), 4_000, 8
    dims = _powers(1, 512)
    curves: dict[str, tuple[list[float], list[float]]] = {"unscaled": ([], []), "scaled": ([], [])}
    for d in dims:
        # Given q, the scores q . k_j of independent k_j ~ N(0, I) are independent
        # N(0, |q|^2): sample them as |q| z_j rather than forming t_k dot products of length d.
        q = _randn(gen, n, d)
        dots = q.norm(dim=-1, keepdim=True) * _randn(gen, n, t_k)  # (n, t_k)
        for label, scores in (("unscaled", dots), ("scaled", dots / math.sqrt(d))):
            a = softmax(scores)  # (n, t_k)
            jac = torch.diag_embed(a) - a[:, :, None] * a[:, None, :]  # (n, t_k, t_k)
            curves[label][0].append(a.amax(-1).mean().item())
            curves[label][1].append(torch.linalg.matrix_norm(jac).mean().item())
    left, right = fig.subplots(1, 2)
    for label, color, marker in (("unscaled", ORANGE, "s"), ("scaled", BLUE, "o")):
        text = r"unscaled $q \cdot k_j$" if label == "unscaled" else r"scaled $q \cdot k_j / \sqrt{d_k}$"
        left.plot(dims, curves[label][0], marker=marker, color=color, label=text)
        right.plot(dims, curves[label][1], marker=marker, color=color, label=text)
    left.axhline(1 / t_k, color=GREY, ls=":", lw=1, label=f"uniform, 1/{t_k}")
    left.set(ylim=(0, 1.05), ylabel="mean largest weight", title=r"Largest weight $\max(a)$")
    right.set(ylim=(0, 0.4), ylabel="mean Frobenius norm",
              title=r"Softmax Jacobian $\mathrm{diag}(a) - a a^{\top}$")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel(r"$d_k$")
    left.legend(loc="center right")
    fig.suptitle(rf"Softmax over $t_k = {t_k}$ keys, $q, k_j \sim \mathcal{{N}}(0, I)$, {n:,} draws per point")


@plot("scaling.dot-product-normal",
      "Histograms of q·k/√dₖ: for dₖ = 1 it follows the density K₀(|x|)/π with a spike at "
      "zero, far from normal; for dₖ = 64 it is close to, but still not exactly, the "
      "standard normal.")
def _dot_product_normal(fig: Figure) -> None:
    gen, n = _gen(2), 50_000
    x = torch.linspace(-4, 4, 801, dtype=DTYPE)
    normal = torch.exp(-x**2 / 2) / math.sqrt(2 * math.pi)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, d in zip(axes, (1, 64)):
        s = (_randn(gen, n, d) * _randn(gen, n, d)).sum(-1) / math.sqrt(d)
        kurt = ((s - s.mean()) ** 4).mean().item() / s.var().item() ** 2 - 3
        ax.hist(s.numpy(), bins=80, range=(-4, 4), density=True, color=BLUE, alpha=0.45,
                label=f"{n:,} samples")
        ax.plot(x.numpy(), normal.numpy(), color=ORANGE, lw=1.5, label=r"$\mathcal{N}(0, 1)$ density")
        if d == 1:
            exact = torch.special.modified_bessel_k0(x.abs().clamp_min(1e-3)) / math.pi
            ax.plot(x.numpy(), exact.numpy(), color=GREEN, lw=1.2, ls="--", label=r"exact: $K_0(|x|)/\pi$")
        ax.set(xlim=(-4, 4), ylim=(0, 1.0), xlabel=r"$q \cdot k / \sqrt{d_k}$",
               title=rf"$d_k = {d}$" + f"\nexcess kurtosis {kurt:.2f} (theory {6 / d:.2f}, normal 0)")
        ax.legend(loc="upper right")
    axes[0].set_ylabel("density")


# --- attention ----------------------------------------------------------------------------

SLIDE_A = [[0.6, 0.1, 0.3], [0.3, 0.5, 0.2], [0.2, 0.1, 0.7]]
SLIDE_V = [[2.0, 1.0], [-0.5, 2.0], [-1.0, -0.5]]
TOKENS = ("I", "am", "Sam")


def _annotate(ax, values: torch.Tensor, fmt: str = "{:.2f}", threshold: float = 0.5) -> None:
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            value = values[i, j].item()
            if not math.isnan(value):
                ax.text(j, i, fmt.format(value), ha="center", va="center", fontsize=8,
                        color="white" if value > threshold else "black")


@plot("attention.slide-example",
      "The slide's weights A (left) mix the value rows of “I am Sam”; each output row of AV "
      "is a convex combination of the value rows, so it lies in the triangle they span (right).")
def _slide_example(fig: Figure) -> None:
    a, v = torch.tensor(SLIDE_A, dtype=DTYPE), torch.tensor(SLIDE_V, dtype=DTYPE)
    zeros = torch.zeros(1, 3, 2, dtype=DTYPE)
    out = scaled_dot_product_attention(zeros, zeros, v[None], scores=a.log()[None])  # softmax(log A) = A
    weights, av = out.weights[0], out.output[0]
    left, right = fig.subplots(1, 2, width_ratios=(1, 1.25))
    left.imshow(weights.numpy(), cmap="Blues", vmin=0, vmax=1)
    _annotate(left, weights, "{:.1f}")
    left.set(xticks=range(3), yticks=range(3), xticklabels=TOKENS, yticklabels=TOKENS,
             xlabel="key (value row)", ylabel="query (output row)", title=r"Weights $A$ (rows sum to 1)")
    left.grid(False)
    right.add_patch(Polygon(v.numpy(), closed=True, facecolor=BLUE, alpha=0.12, edgecolor=BLUE,
                            label="convex hull of the rows of $V$"))
    right.plot(v[:, 0].numpy(), v[:, 1].numpy(), "o", color=BLUE, ms=7, label=r"value rows $v_j$")
    right.plot(av[:, 0].numpy(), av[:, 1].numpy(), "D", color=ORANGE, ms=6, label=r"output rows $(AV)_i$")
    for token, (x, y) in zip(TOKENS, v.tolist()):
        right.annotate(rf"$v_{{\mathrm{{{token}}}}}$", (x, y), xytext=(6, 4), textcoords="offset points", color=BLUE)
    for token, (x, y) in zip(TOKENS, av.tolist()):
        right.annotate(f"{token}: ({x:.2f}, {y:.2f})", (x, y), xytext=(6, -10), textcoords="offset points",
                       color=ORANGE, fontsize=8)
    right.set(xlim=(-1.5, 2.8), ylim=(-1.0, 2.5), aspect="equal", xlabel="dimension 1", ylabel="dimension 2",
              title=r"Outputs $AV$ inside the values' hull")
    right.legend(loc="upper right", fontsize=7)


@plot("attention.quadratic-cost",
      "Floating-point operations of the reference attention, counted by PyTorch's "
      "FlopCounterMode, lie on 2t²(dₖ + dᵥ): doubling the sequence length quadruples the cost.")
def _quadratic_cost(fig: Figure) -> None:
    gen, d_k, d_v = _gen(3), 64, 64
    lengths = _powers(8, 256)
    counted = []
    for t in lengths:
        q, k, v = _randn(gen, 1, t, d_k), _randn(gen, 1, t, d_k), _randn(gen, 1, t, d_v)
        with FlopCounterMode(display=False) as counter:
            scaled_dot_product_attention(q, k, v)
        counted.append(counter.get_total_flops())
    ts = torch.linspace(lengths[0], lengths[-1], 200, dtype=DTYPE)
    ax = fig.add_subplot()
    ax.plot(ts.numpy(), (2 * ts**2 * (d_k + d_v)).numpy(), color=BLUE, lw=1.2,
            label=r"$2t^2(d_k + d_v)$")
    linear = counted[0] * ts / lengths[0]
    ax.plot(ts.numpy(), linear.numpy(), color=GREY, ls=":", lw=1.2, label=r"linear in $t$, for comparison")
    ax.plot(lengths, counted, "o", color=ORANGE, ms=7, label="counted (FlopCounterMode)")
    ax.set(xscale="log", yscale="log", xlabel=r"sequence length $t = t_q = t_k$", ylabel="FLOPs",
           title=rf"Cost of $\mathrm{{softmax}}(QK^\top/\sqrt{{d_k}})V$, $d_k = d_v = {d_k}$, batch 1")
    ax.set_xscale("log", base=2)
    ax.legend(loc="upper left")


@plot("attention.rank-collapse",
      "Stacking self-attention layers without residual connections drives the token "
      "representations to a common row (relative residual towards 0); with residual "
      "connections they stay apart.")
def _rank_collapse(fig: Figure) -> None:
    gen, t, d, layers, trials = _gen(4), 8, 8, 12, 10
    std = 1 / math.sqrt(d)

    def residual(x: torch.Tensor) -> float:
        return ((x - x.mean(0, keepdim=True)).norm() / x.norm()).item()

    runs: dict[str, list[list[float]]] = {"pure": [], "residual": []}
    for _ in range(trials):
        x0 = _randn(gen, t, d)
        weights = [[_randn(gen, d, d) * std for _ in range(3)] for _ in range(layers)]
        for kind in runs:
            x, path = x0, [residual(x0)]
            for w_q, w_k, w_v in weights:
                y = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v).output
                x = y if kind == "pure" else x + y
                path.append(residual(x))
            runs[kind].append(path)
    ax = fig.add_subplot()
    depth = list(range(layers + 1))
    floor = 1e-16  # float64 round-off: collapsed representations often come out exactly equal
    ax.axhline(floor, color=GREY, ls=":", lw=1)
    ax.text(layers, floor * 2.5, "float64 round-off (exact collapse clipped here)", ha="right", color=GREY, fontsize=8)
    styles = (("pure", ORANGE, "self-attention only"), ("residual", BLUE, r"with residual: $X + \mathrm{SA}(X)$"))
    for kind, color, text in styles:
        paths = torch.tensor(runs[kind], dtype=DTYPE).clamp_min(floor)
        for path in paths:
            ax.plot(depth, path.numpy(), color=color, lw=0.6, alpha=0.3)
        ax.plot(depth, paths.median(0).values.numpy(), "o-", color=color, lw=2, label=f"{text} (median of {trials})")
    ax.set(yscale="log", xlabel="layer", xticks=depth,
           ylabel=r"$\Vert X - \mathbf{1}\bar{x}^\top \Vert_F \,/\, \Vert X \Vert_F$",
           ylim=(floor / 3, 3), title=rf"Rank collapse: $t = {t}$, $d = {d}$, weights $\mathcal{{N}}(0, 1/d)$")
    ax.legend(loc="center right")


@plot("attention.gaussian-score-sign",
      "Weights over keys at positions 0 to 4 for a query at 0 (σ = 2): the slide's "
      "+(q − k)²/σ² gives the farthest key the most weight, the corrected −(q − k)²/σ² "
      "gives the nearest one the most.")
def _gaussian_score_sign(fig: Figure) -> None:
    sigma = 2.0
    keys = torch.arange(5, dtype=DTYPE).reshape(1, 5, 1)
    query = torch.zeros(1, 1, 1, dtype=DTYPE)
    corrected = gaussian_scores(query, keys, sigma=sigma)
    weights = {"as written": softmax(-corrected)[0, 0], "corrected": softmax(corrected)[0, 0]}
    ax = fig.add_subplot()
    pos = torch.arange(5, dtype=DTYPE).numpy()
    for offset, (label, color, text) in zip((-0.2, 0.2), (
            ("as written", ORANGE, r"as written: $f = +(q - k)^2/\sigma^2$"),
            ("corrected", BLUE, r"corrected: $f = -(q - k)^2/\sigma^2$"))):
        bars = ax.bar(pos + offset, weights[label].numpy(), width=0.38, color=color, label=text)
        ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
    ax.set(xticks=pos, xticklabels=[f"$k = {i}$" for i in range(5)], ylim=(0, 0.9),
           xlabel="key position = distance from the query at 0", ylabel="attention weight",
           title=rf"Gaussian score, query at 0, keys at 0…4, $\sigma = {sigma:g}$")
    ax.grid(axis="x", visible=False)
    ax.legend(loc="upper center")


# --- masking ------------------------------------------------------------------------------


@plot("masking.causal-matrix",
      "Causal weights for t = 6: masking only j > i keeps the diagonal (left); masking the "
      "upper triangle including the diagonal leaves query 0 with no key at all, a row of zeros "
      "rather than a distribution (right).")
def _causal_matrix(fig: Figure) -> None:
    gen, t, d = _gen(5), 6, 8
    q, k, v = _randn(gen, 1, t, d), _randn(gen, 1, t, d), _randn(gen, 1, t, d)
    strict_lower = torch.ones(t, t, dtype=torch.bool).tril(diagonal=-1)  # allowed: j < i
    panels = (
        ("Causal: mask $j > i$, keep the diagonal", torch.ones(t, t, dtype=torch.bool).tril(),
         scaled_dot_product_attention(q, k, v, causal=True).weights[0]),
        ("Masking $j \\geq i$ (diagonal too)", strict_lower,
         scaled_dot_product_attention(q, k, v, mask=strict_lower).weights[0]),
    )
    cmap = matplotlib.colormaps["Blues"].with_extremes(bad="#e0e0e0")
    axes = fig.subplots(1, 2)
    image = None
    for ax, (title, allowed, weights) in zip(axes, panels):
        shown = weights.masked_fill(~allowed, float("nan"))
        image = ax.imshow(shown.numpy(), cmap=cmap, vmin=0, vmax=1)
        _annotate(ax, shown)
        ax.set(xticks=range(t), yticks=range(t), xlabel="key $j$", ylabel="query $i$", title=title)
        ax.grid(False)
    axes[1].add_patch(Rectangle((-0.5, -0.5), t, 1, fill=False, edgecolor=ORANGE, lw=2))
    axes[1].text(t / 2 - 0.5, 0, "row 0: no key left, all weights 0", ha="center", va="center",
                 color=ORANGE, fontsize=8, fontweight="bold")
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="weight (grey: masked)")
