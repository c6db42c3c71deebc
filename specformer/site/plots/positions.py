"""Figures of the positions family's claim pages (sinusoidal encoding, ALiBi, RoPE).

Registered with :func:`specformer.site.plots.plot` when :func:`specformer.site.plots.plots`
first runs; drawn from :mod:`specformer.reference.positions`, in float64, with the style
and colours of :mod:`specformer.site.plots`.
"""

from __future__ import annotations

import math

import matplotlib
import torch
from matplotlib.figure import Figure

from specformer.reference.positions.alibi import alibi_bias, alibi_slopes
from specformer.reference.positions.rope import rotary_embedding
from specformer.reference.positions.sinusoidal import sinusoidal_encoding
from specformer.site.plots import BLUE, GREY, ORANGE, _gen, _randn, plot

# --- sinusoidal ---------------------------------------------------------------------------


@plot("sinusoidal.formula",
      "The sinusoidal encoding of positions 0 to 63 at d_model = 64: each pair of columns is the "
      "sine and cosine of one frequency, fast at the left (pair 0 turns once every 2π positions), "
      "almost constant at the right.")
def _sinusoidal_formula(fig: Figure) -> None:
    t, d_model = 64, 64
    pe = sinusoidal_encoding(torch.arange(t), d_model)  # (t, d_model)
    ax = fig.add_subplot()
    image = ax.imshow(pe.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set(xlabel=r"feature ($2i$: $\sin(pos\,\omega_i)$, $2i+1$: $\cos(pos\,\omega_i)$)", ylabel="position $pos$",
           xticks=range(0, d_model + 1, 8), yticks=range(0, t + 1, 8),
           title=rf"$PE_{{(pos,\,\cdot)}}$, $d_{{model}} = {d_model}$, $\omega_i = 10000^{{-2i/d_{{model}}}}$")
    ax.set_xlim(-0.5, d_model - 0.5)
    ax.set_ylim(t - 0.5, -0.5)
    ax.grid(False)
    fig.colorbar(image, ax=ax, shrink=0.9, label="value")


@plot("sinusoidal.similarity-monotone",
      "Cosine similarity of PE(p) and PE(p + k) against the offset k, from p = 0 (lines) and p = 1000 "
      "(dots: the same values); a decreasing curve would equal its running minimum (dashed), and the "
      "shaded gaps are where it rises again.")
def _similarity_monotone(fig: Figure) -> None:
    offsets, second_start = 200, 1000
    k = torch.arange(offsets + 1)
    ax = fig.add_subplot()
    for d_model, color in ((64, ORANGE), (512, BLUE)):
        curves = []
        for start in (0, second_start):
            pe = sinusoidal_encoding(start + k, d_model)  # (offsets + 1, d_model)
            curves.append(torch.nn.functional.cosine_similarity(pe[:1], pe, dim=-1))  # (offsets + 1,)
        first, second = curves
        assert torch.allclose(first, second, atol=1e-9)  # the similarity depends on the offset only
        rises = (first[1:] > first[:-1]).nonzero().flatten() + 1  # the offsets k with s(k) > s(k - 1)
        running_min = first.cummin(0).values  # what a decreasing s would be
        ax.plot(k.numpy(), first.numpy(), color=color, lw=1.3,
                label=rf"$d_{{model}} = {d_model}$, $p = 0$: rises at {len(rises)} offsets, "
                      rf"first at $k = {rises[0].item()}$, largest gap {(first - running_min).max().item():.2f}")
        ax.plot(k[::8].numpy(), second[::8].numpy(), "o", color=color, ms=3,
                label=rf"$d_{{model}} = {d_model}$, $p = {second_start}$ (every 8th $k$)")
        ax.plot(k.numpy(), running_min.numpy(), color=color, lw=1, ls="--")
        ax.fill_between(k.numpy(), running_min.numpy(), first.numpy(), color=color, alpha=0.2, lw=0)
    ax.plot([], [], color=GREY, lw=1, ls="--", label=r"running minimum $\min_{j \leq k} s(j)$")
    ax.set(xlim=(0, offsets), ylim=(0, 1.02), xlabel="offset $k$",
           ylabel=r"$s(k) = \cos\angle\,(PE(p),\ PE(p + k))$",
           title="Similarity of two sinusoidal encodings against their offset (base 10000)")
    ax.legend(loc="upper right", fontsize=7)


# --- ALiBi ---------------------------------------------------------------------------------


@plot("alibi.bias-distance",
      "ALiBi's biases −m·|i − j| at t = 12 for the steepest (m = 1/2) and the flattest (m = 1/256) of 8 "
      "heads, without and with the causal mask (grey: −∞), each head on its own colour scale; right: "
      "row i = 6 of all 8 heads.")
def _alibi_bias_distance(fig: Figure) -> None:
    h, t, row_shown = 8, 12, 6
    slopes = alibi_slopes(h)
    bias = {False: alibi_bias(h, t, t), True: alibi_bias(h, t, t, causal=True)}  # (h, t, t) each
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#e0e0e0")
    grid = fig.add_gridspec(2, 3, width_ratios=(1, 1, 1.5))
    shown_heads = ((0, ORANGE), (h - 1, BLUE))
    for r, (head, color) in enumerate(shown_heads):
        m = slopes[head].item()
        image, row = None, []
        for c, causal in enumerate((False, True)):
            ax = fig.add_subplot(grid[r, c])
            row.append(ax)
            shown = bias[causal][head].masked_fill(bias[causal][head].isneginf(), float("nan"))
            image = ax.imshow(shown.numpy(), cmap=cmap, vmin=-m * (t - 1), vmax=0, interpolation="nearest")
            ax.axhline(row_shown, color=color, lw=1, ls=":")
            ax.set(xticks=range(0, t, 3), yticks=range(0, t, 3), xlabel="key $j$" if r else None)
            if c == 0:
                ax.set_ylabel(f"head {head + 1}, $m = 1/{round(1 / m)}$\nquery $i$", color=color)
            if r == 0:
                ax.set_title("causal" if causal else "no mask")
            ax.grid(False)
        fig.colorbar(image, ax=row, shrink=0.9, format="{x:.3g}")
    profile = fig.add_subplot(grid[:, 2])
    j = torch.arange(t)
    colors = dict(shown_heads)
    ends = bias[False][:, row_shown, -1]  # (h,): the last key's bias, where the slopes are written
    crowded = ends > ends.min() * 0.08  # lines too close together to label one by one
    for head in range(h):
        color = colors.get(head, GREY)
        profile.plot(j.numpy(), bias[False][head, row_shown].numpy(), "o-", color=color, ms=3,
                     lw=1.6 if head in colors else 0.8, alpha=1 if head in colors else 0.6)
        if not crowded[head]:
            profile.text(t - 0.7, ends[head].item(), f"$m = 1/{round(1 / slopes[head].item())}$", va="center",
                         fontsize=7, color=color)
    first, last = crowded.nonzero().flatten()[[0, -1]].tolist()
    profile.text(t - 0.7, ends[crowded].mean().item(), f"$1/{round(1 / slopes[first].item())}$ to "
                 f"$1/{round(1 / slopes[last].item())}$", va="center", fontsize=7, color=GREY)
    profile.set(xlim=(-0.5, t + 2.2), xticks=range(0, t, 2), xlabel="key $j$", ylabel=f"bias $B_k[{row_shown}, j]$",
                title=f"Row $i = {row_shown}$ of all {h} heads")


# --- RoPE ----------------------------------------------------------------------------------


@plot("rope.relative-offset",
      "The score of one query rotated to position m and one key rotated to n (d = 16, RoPE): constant "
      "along every diagonal n − m = const (left); all 1024 scores lie on one curve of n − m (right).")
def _rope_relative_offset(fig: Figure) -> None:
    gen, t, d = _gen(20), 32, 16
    q, k = _randn(gen, d), _randn(gen, d)
    positions = torch.arange(t)
    q_m = rotary_embedding(q.expand(t, d), positions)  # (t, d): row m is q rotated to position m
    k_n = rotary_embedding(k.expand(t, d), positions)  # (t, d)
    scores = q_m @ k_n.T  # (t, t): [m, n] = q_m . k_n
    offset = positions[None, :] - positions[:, None]  # (t, t): n - m
    # the same score with one of the two positions at 0: q_0 . k_delta, or q_{-delta} . k_0
    along = torch.stack([scores[0, s] if s >= 0 else scores[-s, 0] for s in range(-(t - 1), t)])
    spread = max((scores[offset == s] - along[s + t - 1]).abs().max().item() for s in range(-(t - 1), t))
    left, right = fig.subplots(1, 2, width_ratios=(1, 1.3))
    limit = scores.abs().max().item()
    image = left.imshow(scores.numpy(), cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
    left.set(xticks=range(0, t, 8), yticks=range(0, t, 8), xlabel="key position $n$", ylabel="query position $m$",
             title=r"$(R_{\Theta,m}\,q) \cdot (R_{\Theta,n}\,k)$")
    left.grid(False)
    fig.colorbar(image, ax=left, shrink=0.8)
    right.plot(offset.flatten().numpy(), scores.flatten().numpy(), "o", color=BLUE, ms=3,
               label=f"all {t * t} pairs $(m, n)$")
    right.plot(range(-(t - 1), t), along.numpy(), color=ORANGE, lw=1.2,
               label=r"$q^\top R_{\Theta,\,n-m}\,k$ (one position at 0)")
    right.axhline(q.dot(k).item(), color=GREY, ls=":", lw=1, label=r"$q \cdot k$ (offset 0)")
    right.set(xlabel="offset $n - m$", ylabel="score", xlim=(-t, t), ylim=(-1.9 * limit, 1.15 * limit),
              title=f"Largest spread along a diagonal: {spread:.1e}")
    right.legend(loc="lower center", fontsize=7, ncols=2)
    fig.suptitle(rf"RoPE, $d = {d}$, base 10000, interleaved pairs, fixed $q, k \sim \mathcal{{N}}(0, I)$")
    assert spread < 1e-12 * math.sqrt(d) * limit
