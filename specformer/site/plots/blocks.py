"""Figures of the blocks family's claim pages (feed-forward network, cost, encoder layer).

Registered with :func:`specformer.site.plots.plot` when :func:`specformer.site.plots.plots`
first runs; drawn from :mod:`specformer.reference.blocks` and
:mod:`specformer.reference.attention`, in float64, with the style and colours of
:mod:`specformer.site.plots`. Random weights are ``N(0, 1/fan_in)``, biases zero, the
norms' ``gamma = 1`` and ``beta = 0``.
"""

from __future__ import annotations

import math

import torch
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator
from torch.utils.flop_counter import FlopCounterMode

from specformer.protocol.blocks import ENCODER_KEYS
from specformer.reference.attention.attention import scaled_dot_product_attention
from specformer.reference.blocks.attention_sublayer import multi_head
from specformer.reference.blocks.encoder_layer import encoder_layer
from specformer.reference.blocks.ffn import feed_forward
from specformer.site.plots import BLUE, DTYPE, GREEN, GREY, ORANGE, _gen, _randn, plot

PURPLE = "#8e24aa"


def _check(condition: bool, message: str) -> None:
    """Fail the render (also under ``python -O``, unlike ``assert``) when a computed check fails."""
    if not condition:
        raise AssertionError(message)


def _layer_weights(gen: torch.Generator, d: int, d_ff: int) -> dict[str, torch.Tensor]:
    """Random encoder-layer weights: matrices ``N(0, 1/fan_in)``, zero biases, ``gamma = 1``, ``beta = 0``."""
    shapes = {"w_1": (d, d_ff), "w_2": (d_ff, d), "b_1": (d_ff,)}
    weights = {}
    for key in ENCODER_KEYS:
        shape = shapes.get(key, (d, d) if key.startswith("w") else (d,))
        if key.startswith("w"):
            weights[key] = _randn(gen, *shape) / math.sqrt(shape[0])
        else:
            weights[key] = (torch.ones if key.startswith("gamma") else torch.zeros)(shape, dtype=DTYPE)
    return weights


# --- feed-forward network -------------------------------------------------------------------


@plot("ffn.against-collapse",
      "Relative residual of the token representations through 12 layers: a ReLU FFN after each "
      "self-attention does not stop the collapse to a common row; residual connections, alone or in "
      "a post-norm encoder layer, slow it down.")
def _ffn_against_collapse(fig: Figure) -> None:
    gen, t, d, d_ff, layers, trials = _gen(30), 8, 8, 32, 12, 10

    def residual(x: torch.Tensor) -> float:
        return ((x - x.mean(0, keepdim=True)).norm() / x.norm()).item()

    def self_attention(x: torch.Tensor, w: dict[str, torch.Tensor]) -> torch.Tensor:
        return scaled_dot_product_attention(x @ w["w_q"], x @ w["w_k"], x @ w["w_v"]).output

    def ffn(x: torch.Tensor, w: dict[str, torch.Tensor]) -> torch.Tensor:
        return feed_forward(x, w["w_1"], w["b_1"], w["w_2"], w["b_2"], "relu")

    steps = {
        "pure": lambda x, w: self_attention(x, w),
        "ffn": lambda x, w: ffn(self_attention(x, w), w),
        "residual": lambda x, w: x + self_attention(x, w),
        "encoder": lambda x, w: encoder_layer(x[None], w, heads=1, norm_first=False)[0],
    }
    runs: dict[str, list[list[float]]] = {kind: [] for kind in steps}
    for _ in range(trials):
        x0 = _randn(gen, t, d)
        weights = [_layer_weights(gen, d, d_ff) for _ in range(layers)]  # shared by the four stacks
        for kind, step in steps.items():
            x, path = x0, [residual(x0)]
            for w in weights:
                x = step(x, w)
                path.append(residual(x))
            runs[kind].append(path)
    ax = fig.add_subplot()
    depth = list(range(layers + 1))
    floor = 1e-16  # float64 round-off: collapsed representations often come out exactly equal
    ax.axhline(floor, color=GREY, ls=":", lw=1)
    ax.text(layers, floor * 2.5, "float64 round-off (exact collapse clipped here)", ha="right", color=GREY, fontsize=8)
    styles = (
        ("pure", ORANGE, "o", "self-attention only"),
        ("ffn", PURPLE, "s", rf"self-attention, then ReLU FFN ($d_{{ff}} = {d_ff}$), no residual"),
        ("residual", BLUE, "^", r"with residual: $X + \mathrm{SA}(X)$, no FFN"),
        ("encoder", GREEN, "D", r"post-norm encoder layer (residuals, FFN, LayerNorm)"),
    )
    for kind, color, marker, text in styles:
        paths = torch.tensor(runs[kind], dtype=DTYPE).clamp_min(floor)
        for path in paths:  # not antialiased: 40 blended faint lines would double the PNG's size
            ax.plot(depth, path.numpy(), color=color, lw=0.8, alpha=0.35, antialiased=False)
        ax.plot(depth, paths.median(0).values.numpy(), marker=marker, ls="-", color=color, lw=2, ms=5,
                label=f"{text}")
    ax.set(yscale="log", xlabel="layer", xticks=depth,
           ylabel=r"$\Vert X - \mathbf{1}\bar{x}^\top \Vert_F \,/\, \Vert X \Vert_F$",
           ylim=(floor / 3, 3),
           title=rf"Rank collapse with and without FFN: $t = {t}$, $d = {d}$, one head, "
                 rf"medians of {trials} trials (bold)")
    ax.legend(loc="center right", fontsize=7)


# --- cost ------------------------------------------------------------------------------------


@plot("cost.attention-vs-ffn",
      "Matmul FLOPs of one encoder layer's parts (d_model = 512, d_ff = 2048), checked against "
      "FlopCounterMode at t = 16, 32, 64: the FFN dominates short sequences, the t × t matmuls beyond "
      "t = d_ff, the whole attention beyond t = 2 d_model.")
def _attention_vs_ffn(fig: Figure) -> None:
    gen, d, d_ff, heads = _gen(31), 512, 2048, 8
    parts = {
        "projections": lambda t: 8 * t * d * d,  # Q, K, V and output projections: 4 (t x d)(d x d)
        "quadratic": lambda t: 4 * t * t * d,  # Q K^T and A V, over all heads
        "ffn": lambda t: 4 * t * d * d_ff,  # (t x d)(d x d_ff) and (t x d_ff)(d_ff x d)
    }
    counted_lengths = (16, 32, 64)
    weights = _layer_weights(gen, d, d_ff)
    counted: dict[str, list[int]] = {part: [] for part in parts}
    for t in counted_lengths:
        x = _randn(gen, 1, t, d)
        with FlopCounterMode(display=False) as attention:
            multi_head(x, x, weights, heads=heads)
        with FlopCounterMode(display=False) as ffn:
            feed_forward(x, weights["w_1"], weights["b_1"], weights["w_2"], weights["b_2"])
        with FlopCounterMode(display=False) as layer:
            encoder_layer(x, weights, heads=heads, norm_first=False)
        by_op = {str(op): n for op, n in attention.get_flop_counts()["Global"].items()}
        counted["projections"].append(by_op.pop("aten.mm"))  # (B, t, d) @ (d, d): matrix products
        counted["quadratic"].append(by_op.pop("aten.bmm"))  # (B, h, t, .) @ (B, h, ., t): batched
        counted["ffn"].append(ffn.get_total_flops())
        _check(not by_op, f"unexpected operations in the attention: {by_op}")
        for part, formula in parts.items():
            _check(counted[part][-1] == formula(t), f"{part} at t = {t}: counted {counted[part][-1]}, "
                                                    f"the formula gives {formula(t)}")
        _check(layer.get_total_flops() == sum(formula(t) for formula in parts.values()),
               f"the whole layer at t = {t}: counted {layer.get_total_flops()}, not the sum of its parts")
    # crossovers: 8 t d^2 + 4 t^2 d = 4 t d d_ff at t = d_ff - 2 d; 4 t^2 d = 4 t d d_ff at t = d_ff
    t_attention, t_quadratic = d_ff - 2 * d, d_ff
    _check(parts["projections"](t_attention) + parts["quadratic"](t_attention) == parts["ffn"](t_attention)
           and parts["quadratic"](t_quadratic) == parts["ffn"](t_quadratic), "the crossovers are wrong")
    _check(t_attention == 2 * d, "with d_ff = 4 d_model the attention overtakes the FFN at t = 2 d_model")
    ts = torch.logspace(4, 14, 200, base=2, dtype=DTYPE)  # t = 16 .. 16384
    ax = fig.add_subplot()
    curves = (
        ("projections", BLUE, ":", r"attention projections $8td^2$"),
        ("quadratic", ORANGE, "-", r"attention $QK^\top$, $AV$: $4t^2d$"),
        ("ffn", GREEN, "-", r"FFN $4t\,d\,d_{ff}$"),
    )
    for part, color, style, text in curves:
        ax.plot(ts.numpy(), parts[part](ts).numpy(), color=color, ls=style, lw=1.4, label=text)
        ax.plot(counted_lengths, counted[part], "o", color=color, ms=6, mfc="white", mew=1.5)
    total = parts["projections"](ts) + parts["quadratic"](ts)
    ax.plot(ts.numpy(), total.numpy(), color=BLUE, lw=2, label=r"attention total $8td^2 + 4t^2d$")
    ax.plot([], [], "o", color=GREY, mfc="white", mew=1.5,
            label=f"counted (FlopCounterMode), t = {', '.join(map(str, counted_lengths))}")
    bottom = parts["quadratic"](16) / 2
    for t_cross, text in ((t_attention, rf"$t = 2d_{{model}} = {t_attention}$"),
                          (t_quadratic, rf"$t = d_{{ff}} = {t_quadratic}$")):
        ax.axvline(t_cross, color=GREY, ls="--", lw=1)
        ax.plot([t_cross], [parts["ffn"](t_cross)], "*", color="black", ms=10, zorder=5)
        ax.text(t_cross * 1.08, bottom * 1.5, text, rotation=90, ha="left", va="bottom", fontsize=8)
    ax.plot([], [], "*", color="black", ms=10,
            label=r"crossovers with the FFN: attention total at $t = 2d_{model}$, $4t^2d$ at $t = d_{ff}$")
    ax.set(xscale="log", yscale="log", xlabel="sequence length $t$", ylabel="FLOPs (multiply-add = 2)",
           xlim=(13, 20000), ylim=(bottom, None),
           title=rf"Matmul FLOPs of one encoder layer, $d_{{model}} = {d}$, $d_{{ff}} = {d_ff}$, "
                 rf"$h = {heads}$, batch 1")
    lengths = [4**i for i in range(2, 8)]  # 16 .. 16384, labelled as plain numbers (mathtext is slow)
    ax.set_xticks(lengths, [str(t) for t in lengths])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.legend(loc="upper left", fontsize=7)


# --- encoder layer ------------------------------------------------------------------------


@plot("encoder.pre-norm",
      "Mean token norm of the residual stream through 24 encoder layers with random weights: in a "
      "pre-norm stack each layer adds to it and it grows; a post-norm stack renormalises after "
      "every sublayer and stays at √d.")
def _pre_norm(fig: Figure) -> None:
    gen, t, d, d_ff, heads, layers, trials = _gen(32), 8, 16, 64, 2, 24, 10

    def mean_norm(x: torch.Tensor) -> float:
        return x.norm(dim=-1).mean().item()

    runs: dict[bool, list[list[float]]] = {True: [], False: []}
    for _ in range(trials):
        x0 = _randn(gen, 1, t, d)
        weights = [_layer_weights(gen, d, d_ff) for _ in range(layers)]  # shared by both stacks
        for norm_first in runs:
            x, path = x0, [mean_norm(x0)]
            for w in weights:
                x = encoder_layer(x, w, heads=heads, norm_first=norm_first)
                path.append(mean_norm(x))
            runs[norm_first].append(path)
    ax = fig.add_subplot()
    depth = list(range(layers + 1))
    ax.axhline(math.sqrt(d), color=GREY, ls=":", lw=1)
    ax.text(layers, math.sqrt(d) * 0.93, rf"$\sqrt{{d}} = {math.sqrt(d):g}$", ha="right", va="top", color=GREY)
    medians = {}
    for norm_first, color, marker, text in ((True, ORANGE, "o", r"pre-norm: $x + \mathrm{Sublayer}(\mathrm{LN}(x))$"),
                                            (False, BLUE, "s", r"post-norm: $\mathrm{LN}(x + \mathrm{Sublayer}(x))$")):
        paths = torch.tensor(runs[norm_first], dtype=DTYPE)
        for path in paths:  # not antialiased, as in the FFN plot: smaller PNG
            ax.plot(depth, path.numpy(), color=color, lw=0.8, alpha=0.35, antialiased=False)
        medians[norm_first] = paths.median(0).values
        ax.plot(depth, medians[norm_first].numpy(), marker=marker, ls="-", color=color, lw=2, ms=4,
                label=f"{text} (median of {trials})")
    # the pre-norm stream's squared norm grows about linearly: each layer adds roughly independent terms
    pre = medians[True]
    rate = (pre[-1] ** 2 - pre[0] ** 2) / layers
    guide = torch.sqrt(pre[0] ** 2 + rate * torch.arange(layers + 1, dtype=DTYPE))
    ax.plot(depth, guide.numpy(), color=GREY, ls="--", lw=1,
            label=rf"$\sqrt{{\Vert x_0 \Vert^2 + {rate.item():.0f}\,\ell}}$ (through the ends of the median)")
    ax.set(xlabel=r"layer $\ell$", ylabel="mean token norm $\\Vert x_i \\Vert$", xticks=depth[::2], ylim=(0, None),
           title=rf"Residual stream through random encoder layers: $t = {t}$, $d = {d}$, $d_{{ff}} = {d_ff}$, "
                 rf"$h = {heads}$")
    ax.legend(loc="upper left")
