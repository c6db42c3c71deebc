"""Properties of ALiBi, attention with linear biases (``spec/positions/alibi.md``).

The implementation's biases come from ``ctx.alibi_bias(h, t_q, t_k, causal=...)`` as
float64 ``(h, t_q, t_k)``. Expected values are written here, in float64, from the paper:
the slopes by :func:`paper_slopes` (the geometric sequence, built as a start and a ratio),
the biases from ``|i - j|`` and ``i - j``. The form properties read each head's slope from
the implementation's own biases (the slopes' values are checked once, by
``alibi.fixed-slopes``), so that a wrong form and wrong slopes are told apart:

* from a bias without mask, ``m_k = (B_k[0, 0] - B_k[0, t - 1]) / (t - 1)``;
* from a causal bias, ``m_k = (B_k[r, r] - B_k[r, 0]) / r`` on the last row ``r``: the
  slope of the row whatever constant the row carries (BLOOM's bias is ``+m_k j``).

Properties with ``needs=()`` check the mathematics: the softmax's indifference to a
constant per row, parameter counts of small PyTorch models built here, and how much
weight the paper's slowest head gives to distances beyond a training length.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context, assert_close
from specformer.properties.tolerances import Tolerance
from specformer.property import claim_property
from specformer.properties.blocks.size import closed_form, conforms, in_declared_layout, model_configs
from specformer.protocol.blocks import ModelConfig

from . import strategies as sf

ALIBI = ("alibi_bias",)
#: Slopes are compared to the paper's to float32 precision in every dtype: which sequence,
#: not how precisely a library computes it (BLOOM computes them in float32: 6.8e-7 relative
#: at h = 128; x-transformers stores them as float32: 4.7e-8).
SLOPE_RTOL = 1e-6


def paper_slopes(h: int) -> torch.Tensor:
    """The paper's slopes ``(h,)`` in float64: the sequence starting at ``2^(-8/n)`` with that
    ratio for the ``n = 2^floor(log2 h)`` heads, then every other term of the ``2n``-head
    sequence (its 1st, 3rd, ...) for the remaining ``h - n``."""
    n = 2 ** math.floor(math.log2(h))
    start = 2.0 ** (-8.0 / n)
    slopes = [start * start**k for k in range(n)]
    start2 = 2.0 ** (-8.0 / (2 * n))
    slopes += [start2 * start2**k for k in range(2 * n)][0::2][: h - n]
    return torch.tensor(slopes, dtype=torch.float64)


def distances(t_q: int, t_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``i - j`` as float64 ``(t_q, t_k)`` and the future ``j > i`` (bool), counted from the first row and column."""
    i = torch.arange(t_q, dtype=torch.float64)[:, None]
    j = torch.arange(t_k, dtype=torch.float64)[None, :]
    return i - j, j > i


def symmetric_formula(m: torch.Tensor, t_q: int, t_k: int) -> torch.Tensor:
    """``-m_k |i - j|``: ``(h, t_q, t_k)`` from slopes ``m (h,)``."""
    signed, _ = distances(t_q, t_k)
    return 0.0 - m[:, None, None] * signed.abs()  # 0 - x: no -0.0 in messages


def causal_formula(m: torch.Tensor, t_q: int, t_k: int) -> torch.Tensor:
    """The paper's ``-m_k (i - j)`` for ``j <= i``, ``-inf`` above: ``(h, t_q, t_k)``."""
    signed, future = distances(t_q, t_k)
    return (0.0 - m[:, None, None] * signed).masked_fill(future, float("-inf"))


def slopes_without_mask(bias: torch.Tensor) -> torch.Tensor:
    """``(B_k[0, 0] - B_k[0, t - 1]) / (t - 1)`` per head; needs ``t_k >= 2``."""
    t = bias.shape[-1]
    return (bias[:, 0, 0] - bias[:, 0, t - 1]) / (t - 1)


def slopes_of_causal(bias: torch.Tensor) -> torch.Tensor:
    """``(B_k[r, r] - B_k[r, 0]) / r`` on the last row ``r`` of a square causal bias; needs ``t >= 2``."""
    r = bias.shape[-1] - 1
    return (bias[:, r, r] - bias[:, r, 0]) / r


def check_mask(bias: torch.Tensor, what: str) -> None:
    """``-inf`` exactly where ``j > i`` and finite elsewhere."""
    _, future = distances(bias.shape[-2], bias.shape[-1])
    wrong = torch.isneginf(bias) != future.expand(bias.shape)
    if wrong.any():
        k, i, j = (int(x) for x in wrong.nonzero()[0])
        raise AssertionError(f"{what}: entry (head {k}, i={i}, j={j}) is {float(bias[k, i, j])!r}; expected "
                             f"{'-inf (j > i)' if j > i else 'a finite bias (j <= i)'}")
    finite = bias.masked_select(~future.expand(bias.shape))
    assert torch.isfinite(finite).all(), f"{what}: a bias at j <= i is not finite"


def heads_and_lengths(max_h: int = 8, max_t: int = 8, min_t: int = 1) -> st.SearchStrategy[tuple[int, int]]:
    """``(h, t)`` for square biases: ``t`` up to ``max_t``, or (one example in three) up to 64."""
    lengths = sf.dimension_in(*[(min_t, max_t)] * 2, (max(min_t, max_t), 64))
    return st.tuples(sf.dimension(1, max_h), lengths)


@st.composite
def unequal_lengths(draw: st.DrawFn, max_t: int = 8) -> tuple[int, int, int]:
    """``(h, t_q, t_k)`` with ``t_q != t_k``."""
    h, t_q = draw(sf.dimension(1, 8)), draw(sf.dimension(1, max_t))
    t_k = draw(sf.dimension_in((1, max_t), other=t_q))
    return h, t_q, t_k


# -- the bias: -m |i - j| ------------------------------------------------------------------


@claim_property("alibi.bias-distance", needs=ALIBI)
@given(case=heads_and_lengths())
@example(case=(2, 4))
def the_bias_is_minus_a_positive_slope_times_the_distance(ctx: Context, case) -> None:
    """Without a mask, ``B_k[i, j] = -m_k |i - j|`` with one slope ``m_k > 0`` per head (so ``B_k`` is symmetric)."""
    h, t = case
    bias = ctx.alibi_bias(h, t, t)
    if t == 1:
        ctx.assert_close(bias, torch.zeros(h, 1, 1, dtype=torch.float64), "the bias of distance 0")
        return
    m = slopes_without_mask(bias)
    assert (m > 0).all(), (f"the bias grows with the distance in head {int((m <= 0).nonzero()[0])}: B[0, 0] - "
                           f"B[0, {t - 1}] = {float(m.min() * (t - 1)):.6g} (expected a penalty, -m |i - j| with m > 0)")
    ctx.assert_close(bias, symmetric_formula(m, t, t), f"B vs -m_k |i - j| with each head's slope, h={h}, t={t}",
                     scale=t)


@claim_property("alibi.bias-distance", needs=ALIBI)
@given(case=unequal_lengths())
@example(case=(1, 2, 3))
def with_t_q_and_t_k_apart_queries_and_keys_count_from_the_first(ctx: Context, case) -> None:
    """``t_q != t_k`` without a mask: ``B_k[i, j] = -m_k |i - j|`` with ``i``, ``j`` counted from the first
    query and key (top-left alignment, the protocol's convention); ``m_k`` from a ``2 x 2`` bias."""
    h, t_q, t_k = case
    m = slopes_without_mask(ctx.alibi_bias(h, 2, 2))
    bias = ctx.alibi_bias(h, t_q, t_k)
    ctx.assert_close(bias, symmetric_formula(m, t_q, t_k), f"B vs -m_k |i - j|, t_q={t_q}, t_k={t_k}",
                     scale=max(t_q, t_k))


# -- the causal bias of the paper ------------------------------------------------------------


@claim_property("alibi.causal-bias", needs=ALIBI)
@given(case=heads_and_lengths())
@example(case=(8, 4))
def the_causal_bias_is_minus_the_slope_times_i_minus_j_and_minus_infinity_above(ctx: Context, case) -> None:
    """``causal=True``: ``B_k[i, j] = -m_k (i - j)`` for ``j <= i`` (the paper's ``m [-(i-1), ..., -1, 0]``
    for query ``i``, counted from 1) and ``-inf`` for ``j > i``."""
    h, t = case
    bias = ctx.alibi_bias(h, t, t, causal=True)
    check_mask(bias, f"causal bias, h={h}, t={t}")
    if t == 1:
        ctx.assert_close(bias, torch.zeros(h, 1, 1, dtype=torch.float64), "the bias of distance 0")
        return
    m = slopes_of_causal(bias)
    assert (m > 0).all(), f"the causal bias does not decrease with the distance (row slope {float(m.min()):.6g})"
    ctx.assert_close(bias, causal_formula(m, t, t), f"B vs -m_k (i - j) for j <= i, h={h}, t={t}", scale=t)


@claim_property("alibi.causal-bias", needs=ALIBI)
@given(case=unequal_lengths())
@example(case=(1, 2, 3))
def the_causal_bias_with_t_q_and_t_k_apart_is_aligned_top_left(ctx: Context, case) -> None:
    """``causal=True``, ``t_q != t_k``: ``-m_k (i - j)`` for ``j <= i`` and ``-inf`` for ``j > i``, counted
    from the first query and key; ``m_k`` from a ``2 x 2`` causal bias."""
    h, t_q, t_k = case
    m = slopes_of_causal(ctx.alibi_bias(h, 2, 2, causal=True))
    bias = ctx.alibi_bias(h, t_q, t_k, causal=True)
    check_mask(bias, f"causal bias, t_q={t_q}, t_k={t_k}")
    ctx.assert_close(bias, causal_formula(m, t_q, t_k), f"B vs -m_k (i - j), t_q={t_q}, t_k={t_k}",
                     scale=max(t_q, t_k))


# -- under the causal mask, a constant per row changes nothing -------------------------------

#: Causal bias forms ``(i, j, m) -> bias`` that differ by a constant per row: the documents'
#: distance, the paper's signed distance, BLOOM's ``+m j``, and the paper's plus ``i^2``.
CAUSAL_FORMS = {
    "-m|i-j| (003)": lambda i, j, m: -m * (i - j).abs(),
    "-m(i-j) (paper)": lambda i, j, m: -m * (i - j),
    "+m j (BLOOM)": lambda i, j, m: m * j,
    "-m(i-j) + i^2": lambda i, j, m: -m * (i - j) + i**2,
}


def masked_softmax(scores: torch.Tensor, future: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis with ``j > i`` at ``-inf``."""
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)


@claim_property("alibi.causal-forms-agree", needs=(), about="library", dtypes=("float64",))
@given(t=st.integers(2, 8), m=st.floats(1 / 256, 1.0), data=st.data())
def under_a_causal_mask_forms_that_differ_by_a_row_constant_give_the_same_weights(ctx: Context, t, m, data) -> None:
    """With ``M_ij = [j <= i]`` every form of :data:`CAUSAL_FORMS` gives the weights of ``-m (i - j)``;
    without the mask ``-m |i - j|`` and ``+m j`` differ (row 0's ratio ``A_01 / A_00`` by ``e^{2m}``)."""
    scores = data.draw(sf.tensors((t, t)), label="scaled scores")
    signed, future = distances(t, t)
    i, j = torch.arange(t, dtype=torch.float64)[:, None], torch.arange(t, dtype=torch.float64)[None, :]
    expected = masked_softmax(scores - m * signed, future)
    for name, form in CAUSAL_FORMS.items():
        ctx.assert_close(masked_softmax(scores + form(i, j, m), future), expected,
                         f"causal weights with the bias {name} vs -m(i-j), m={m:.6g}", scale=t)
    symmetric = torch.softmax(scores - m * signed.abs(), dim=-1)
    bloom = torch.softmax(scores + m * j, dim=-1)
    log_ratio = (bloom[0, 1] / bloom[0, 0]).log() - (symmetric[0, 1] / symmetric[0, 0]).log()
    assert abs(log_ratio.item() - 2 * m) <= 1e-9 * (1 + 2 * m), f"log ratio {log_ratio.item():.9g}, expected 2m"


@st.composite
def heads_lengths_and_scores(draw: st.DrawFn) -> tuple[int, int, torch.Tensor]:
    """``(h, t, S)`` with scaled scores ``S (h, t, t)`` in ``[-3, 3]``."""
    h, t = draw(heads_and_lengths())
    return h, t, draw(sf.tensors((h, t, t)))


@claim_property("alibi.causal-forms-agree", needs=ALIBI)
@given(case=heads_lengths_and_scores())
@example(case=(2, 3, torch.zeros(2, 3, 3, dtype=torch.float64)))
def the_implementations_causal_bias_gives_the_papers_attention_weights(ctx: Context, case) -> None:
    """``softmax(S + B)`` with the implementation's causal bias equals ``softmax(S - m_k (i - j))`` under the
    causal mask, for scaled scores ``S`` in ``[-3, 3]``: the bias is ALiBi up to a constant per row."""
    h, t, scores = case
    bias = ctx.alibi_bias(h, t, t, causal=True)
    _, future = distances(t, t)
    weights = torch.softmax(scores + bias, dim=-1)  # (h, t, t); masked entries must be -inf or underflow
    m = slopes_of_causal(bias) if t > 1 else torch.zeros(h, dtype=torch.float64)
    ctx.assert_close(weights, masked_softmax(scores + causal_formula(m, t, t), future),
                     f"softmax(S + B) vs softmax(S - m(i-j)) under the causal mask, h={h}, t={t}", scale=2 * t)


# -- the slopes: fixed, not learned ------------------------------------------------------------


def implementation_slopes(ctx: Context, h: int, t: int) -> torch.Tensor:
    """The slopes of the implementation's ``t x t`` causal bias, read on its last row."""
    return slopes_of_causal(ctx.alibi_bias(h, t, t, causal=True))


def slope_tolerance(ctx: Context) -> Tolerance:
    return Tolerance(max(ctx.tol.rtol, SLOPE_RTOL), 0.0)


@claim_property("alibi.fixed-slopes", needs=ALIBI)
@given(h=sf.dimension(1, 128), t=sf.dimension(2, 16))
@example(h=8, t=2)
@example(h=3, t=4)
@example(h=12, t=3)
def the_slopes_are_the_papers_fixed_geometric_sequence(ctx: Context, h, t) -> None:
    """The slopes are fixed by ``h``: ``2^(-8k/h)`` for ``h`` a power of 2 (``h = 8``: ``1/2 .. 1/256``) and
    the paper's interleaving otherwise (``h = 3``: ``1/16, 1/256, 1/4``), at every length."""
    assert_close(implementation_slopes(ctx, h, t), paper_slopes(h), f"slopes for h={h} heads (read at t={t})",
                 slope_tolerance(ctx))


@claim_property("alibi.fixed-slopes", needs=ALIBI, expect="counterexample")
@given(h=sf.dimension(1, 128), t=sf.dimension(2, 16))
@example(h=8, t=2)
def the_slopes_are_learned_coefficients_not_fixed_by_the_number_of_heads_as_written(ctx: Context, h, t) -> None:
    """As written (003): each head's slope is a learned coefficient, so an implementation's slopes are not
    the values ``h`` alone determines: some slope differs from the paper's fixed ``2^(-8k/n)`` sequence."""
    m, fixed = implementation_slopes(ctx, h, t), paper_slopes(h)
    tol = slope_tolerance(ctx)
    assert ((m - fixed).abs() > tol.rtol * fixed).any(), (
        f"h={h}: every slope is the fixed value the number of heads determines: {m.tolist()[:8]}"
        + ("..." if h > 8 else ""))


# -- no position embeddings: count the parameters -----------------------------------------------


COUNT = ("count_parameters",)


def without_positions(config: ModelConfig) -> int:
    """``closed_form`` of ``config`` with the position scheme's share taken out (``n_max d_model`` for a learned table)."""
    return closed_form(config) - (config.max_len * config.d_model if config.positions == "learned" else 0)


@claim_property("alibi.no-position-embeddings", needs=COUNT, dtypes=("float64",), max_examples=30)
@given(config=model_configs(("encoder-decoder", "bloom"), positions="alibi"),
       other=st.sampled_from(("none", "sinusoidal", "learned")))
@example(config=ModelConfig(100, 16, 2, 64, 1, 0, positions="alibi", max_len=1024, final_norm=True), other="learned")
def an_implementations_alibi_model_holds_no_position_parameters(ctx: Context, config, other) -> None:
    """The implementation's ALiBi model holds exactly the parameters of its embeddings and layers: none for
    positions. Where it also builds the same model with another scheme, sinusoidal (or none) adds 0 and a
    learned table of ``n_max`` positions ``n_max d_model``."""
    config = in_declared_layout(ctx, config, ("encoder-decoder", "bloom"))
    alibi = ctx.count_parameters(config)
    assert alibi == without_positions(config), (
        f"{config}: {alibi} parameters, the embeddings and layers alone hold {without_positions(config)}")
    if not conforms(config, "encoder-decoder"):  # BLOOM's layout has ALiBi only
        return
    counted = ctx.count_parameters(dataclasses.replace(config, positions=other))
    extra = config.max_len * config.d_model if other == "learned" else 0
    assert counted - alibi == extra, f"{other} - ALiBi = {counted - alibi} parameters, expected {extra}"


@claim_property("alibi.no-position-embeddings", needs=COUNT, expect="counterexample", dtypes=("float64",),
                max_examples=20)
@given(config=model_configs(("encoder-decoder",), positions="alibi", final_norm=True))
def an_implementations_alibi_model_is_smaller_than_its_sinusoidal_one_as_written(ctx: Context, config) -> None:
    """As written (003, next to the comparison with sinusoidal): ALiBi needs no position embeddings, so the
    implementation's model is smaller than the same model with sinusoidal encodings."""
    ctx.require("model_layout", "encoder-decoder")
    alibi = ctx.count_parameters(config)
    sinusoidal = ctx.count_parameters(dataclasses.replace(config, positions="sinusoidal"))
    assert alibi < sinusoidal, f"ALiBi {alibi} parameters, sinusoidal {sinusoidal}: not smaller"


# -- attention with the bias inside the softmax -------------------------------------------------


def geometric_slopes(h: int) -> torch.Tensor:
    """``2^(-8k/h)``, ``k = 1..h`` for ``h`` a power of two (the paper's formula, computed directly);
    :func:`paper_slopes` for other ``h``."""
    if h & (h - 1):
        return paper_slopes(h)
    return torch.tensor([2.0 ** (-8.0 * k / h) for k in range(1, h + 1)], dtype=torch.float64)


@st.composite
def alibi_attention_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``q, k, v (B, h, t, d_k)``: ``B`` 1..3, ``h`` 1..8, ``t`` 1..64, ``d_k`` 1..64 (small sizes shrink
    first), entries in ``[-2, 2]`` from a seed."""
    b, h = draw(sf.dimension(1, 3), label="B"), draw(sf.dimension(1, 8), label="h")
    t = draw(sf.dimension_in((1, 8), (9, 64)), label="t")
    d_k = draw(sf.dimension_in((1, 8), (9, 64)), label="d_k")
    g = torch.Generator().manual_seed(draw(sf.seeds()))
    q, k, v = (4 * torch.rand(b, h, t, d_k, generator=g, dtype=torch.float64) - 2 for _ in range(3))
    return q, k, v


@claim_property("alibi.fixed-slopes", needs=("alibi_attention",))
@given(case=alibi_attention_cases(), causal=st.booleans())
@example(case=tuple(torch.zeros(1, 8, 4, 2, dtype=torch.float64) for _ in range(3)), causal=True)
def attention_with_alibi_adds_the_fixed_slopes_bias_inside_the_softmax(ctx: Context, case, causal) -> None:
    """``softmax(q k^T / sqrt(d_k) - m_k |i - j|) v`` per head ``k`` with the slopes ``2^(-8k/h)`` (the
    paper's interleaving for other ``h``), masked above the diagonal when causal: checked on the
    attention's output, independently of any bias the implementation reports."""
    q, k, v = case
    causal = sf.within(ctx, "alibi_causal", causal, (False, True))
    out = ctx.alibi_attention(q, k, v, causal=causal)
    h, t, d_k = q.shape[1], q.shape[2], q.shape[3]
    signed, future = distances(t, t)
    bias = -geometric_slopes(h)[:, None, None] * signed.abs()  # (h, 1, 1) * (t, t) -> (h, t, t)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k) + bias  # (B, h, t, t)
    if causal:
        scores = scores.masked_fill(future, float("-inf"))
    expected = torch.softmax(scores, dim=-1) @ v  # (B, h, t, t) @ (B, h, t, d_k) -> (B, h, t, d_k)

    def same_dtype(dtype: torch.dtype) -> torch.Tensor:
        from specformer.reference.positions.alibi import alibi_attention

        return alibi_attention(q.to(dtype), k.to(dtype), v.to(dtype), causal=causal)

    ctx.assert_close(out, expected, f"ALiBi attention (h={h}, t={t}{', causal' if causal else ''})",
                     scale=4, same_dtype=same_dtype)


def expected_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                       width: int | None = None) -> torch.Tensor:
    """``softmax(q k^T / sqrt(width) - m_k |i - j|) v`` in float64 (``width`` defaults to ``d_k``), ``i`` and ``j``
    counted from the first query and key, ``-inf`` where ``j > i`` when ``causal``: ``(B, h, t_q, d_v)``."""
    h, t_q, t_k = q.shape[1], q.shape[2], k.shape[2]
    signed, future = distances(t_q, t_k)
    bias = -geometric_slopes(h)[:, None, None] * signed.abs()  # (h, 1, 1) * (t_q, t_k) -> (h, t_q, t_k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(width or q.shape[-1]) + bias  # (B, h, t_q, t_k)
    if causal:
        scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v  # (B, h, t_q, t_k) @ (B, h, t_k, d_v) -> (B, h, t_q, d_v)


def reference_in(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool
                 ) -> Callable[[torch.dtype], torch.Tensor]:
    """The reference's ALiBi attention in a given dtype (``ctx.assert_close``'s ``same_dtype``)."""

    def same_dtype(dtype: torch.dtype) -> torch.Tensor:
        from specformer.reference.positions.alibi import alibi_attention

        return alibi_attention(q.to(dtype), k.to(dtype), v.to(dtype), causal=causal)

    return same_dtype


@st.composite
def unequal_attention_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``q (B, h, t_q, d_k)``, ``k (B, h, t_k, d_k)``, ``v (B, h, t_k, d_v)`` with ``t_q != t_k`` (each 1..8, or
    up to 32 one time in three), entries in ``[-2, 2]`` from a seed."""
    b, h = draw(sf.dimension(1, 2), label="B"), draw(sf.dimension(1, 8), label="h")
    lengths = ((1, 8), (1, 8), (1, 32))
    t_q = draw(sf.dimension_in(*lengths), label="t_q")
    t_k = draw(sf.dimension_in(*lengths, other=t_q), label="t_k")
    d_k, d_v = draw(sf.dimension(1, 16), label="d_k"), draw(sf.dimension(1, 16), label="d_v")
    g = torch.Generator().manual_seed(draw(sf.seeds()))
    return tuple(4 * torch.rand(b, h, t, d, generator=g, dtype=torch.float64) - 2
                 for t, d in ((t_q, d_k), (t_k, d_k), (t_k, d_v)))


@claim_property("alibi.bias-distance", needs=("alibi_attention",))
@given(case=unequal_attention_cases(), causal=st.booleans())
@example(case=(torch.zeros(1, 1, 1, 2, dtype=torch.float64), torch.zeros(1, 1, 3, 2, dtype=torch.float64),
               torch.eye(3, dtype=torch.float64)[None, None]), causal=False)
@example(case=(torch.zeros(1, 1, 3, 2, dtype=torch.float64), torch.zeros(1, 1, 2, 2, dtype=torch.float64),
               torch.eye(2, dtype=torch.float64)[None, None]), causal=True)
def attention_with_t_q_and_t_k_apart_counts_queries_and_keys_from_the_first(ctx: Context, case, causal) -> None:
    """``t_q != t_k``: the attention's output is ``softmax(q k^T / sqrt(d_k) - m_k |i - j|) v`` with ``i`` and ``j``
    counted from the first query and key (top-left alignment, the protocol's convention) and, when causal,
    keys ``j > i`` masked: one query over three keys weighs them ``1 : e^{-m} : e^{-2m}``, not the reverse.
    Implementations that answer ``t_q = t_k`` only declare ``alibi_lengths = {"equal"}``."""
    q, k, v = case
    ctx.require("alibi_lengths", "unequal")
    causal = sf.within(ctx, "alibi_causal", causal, (False, True))
    out = ctx.alibi_attention(q, k, v, causal=causal)
    h, t_q, t_k = q.shape[1], q.shape[2], k.shape[2]
    ctx.assert_close(out, expected_attention(q, k, v, causal),
                     f"ALiBi attention, h={h}, t_q={t_q}, t_k={t_k}{', causal' if causal else ''}", scale=4,
                     same_dtype=reference_in(q, k, v, causal))


@st.composite
def equal_score_cases(draw: st.DrawFn) -> tuple[int, int, torch.Tensor]:
    """``(h, t, k)``: keys ``(B, h, t, t)`` in ``[-2, 2]`` from a seed, ``h`` 1..16, ``t`` 2..12."""
    b, h, t = draw(sf.dimension(1, 2), label="B"), draw(sf.dimension(1, 16), label="h"), draw(sf.dimension(2, 12), label="t")
    g = torch.Generator().manual_seed(draw(sf.seeds()))
    return h, t, 4 * torch.rand(b, h, t, t, generator=g, dtype=torch.float64) - 2


@claim_property("alibi.bias-distance", needs=("alibi_attention",))
@given(case=equal_score_cases(), causal=st.booleans())
@example(case=(8, 4, torch.ones(1, 8, 4, 4, dtype=torch.float64)), causal=True)
def with_equal_scores_each_step_of_distance_divides_the_weight_by_e_to_the_slope(ctx: Context, case,
                                                                                 causal) -> None:
    """A second reading, of the weights alone: with zero queries every score is 0, and values ``V = I``
    make the output the weights ``A_k`` themselves. Each row sums to 1, and one step farther from the
    query divides the weight by ``e^{m_k}`` on either side (``A[i, j±1] = A[i, j] e^{-m_k}`` away from
    ``i``), with the paper's slope ``m_k`` of head ``k``; keys ``j > i`` get 0 when causal."""
    h, t, k = case
    causal = sf.within(ctx, "alibi_causal", causal, (False, True))
    q = torch.zeros_like(k)  # (B, h, t, t): every score is 0
    v = torch.eye(t, dtype=torch.float64).expand_as(k).clone()  # (B, h, t, t): output row i = weights of query i
    weights = ctx.alibi_attention(q, k, v, causal=causal)  # (B, h, t, t)
    ctx.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=torch.float64), "row sums of A")
    m = geometric_slopes(h)[None, :, None, None]  # (1, h, 1, 1)
    i = torch.arange(t)[:, None]
    j = torch.arange(t - 1)[None, :]  # the step from key j to key j + 1
    away = (j >= i).to(torch.float64)  # (t, t - 1): 1 where j + 1 is farther from i than j, 0 where nearer
    if causal:
        future = torch.arange(t)[None, :] > i  # (t, t)
        assert (weights.masked_select(future.expand_as(weights)) == 0).all(), "a key j > i has weight under the mask"
        ctx.assert_close(weights[..., :-1].masked_fill(future[:, 1:], 0.0),
                         (weights[..., 1:] * torch.exp(-m)).masked_fill(future[:, 1:], 0.0),
                         f"A[i, j] vs A[i, j + 1] e^(-m_k) for j < i, h={h}, t={t}, causal", scale=4)
        return
    ratio = torch.exp(m * (2 * away - 1))  # e^{m} where the next key is farther, e^{-m} where it is nearer
    ctx.assert_close(weights[..., :-1], weights[..., 1:] * ratio,
                     f"A[i, j] vs A[i, j + 1] e^(+-m_k), h={h}, t={t}", scale=4)


# -- the scale of the scores: sqrt(d_k), not the embedding width --------------------------------


@st.composite
def multi_head_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``q, k, v (B, h, t, d_k)`` with ``h`` 2..8 heads and ``t`` 2..8 (two keys at least, so the scale shows),
    entries in ``[-2, 2]`` from a seed."""
    b, h = draw(sf.dimension(1, 2), label="B"), draw(sf.dimension(2, 8), label="h")
    t, d_k = draw(sf.dimension(2, 8), label="t"), draw(sf.dimension(1, 16), label="d_k")
    g = torch.Generator().manual_seed(draw(sf.seeds()))
    return tuple(4 * torch.rand(b, h, t, d_k, generator=g, dtype=torch.float64) - 2 for _ in range(3))


SCALE_EXAMPLE = tuple(torch.arange(24, dtype=torch.float64).reshape(1, 2, 3, 4) / 12 - 1 for _ in range(3))


@claim_property("alibi.score-scale", needs=("alibi_attention",))
@given(case=multi_head_cases(), causal=st.booleans())
@example(case=SCALE_EXAMPLE, causal=True)
def alibi_attention_scales_the_scores_by_root_d_k_with_several_heads(ctx: Context, case, causal) -> None:
    """Corrected: with ``h >= 2`` heads of width ``d_k`` (an embedding ``d_model = h d_k``), the scores are
    divided by ``sqrt(d_k)``, the head's width: ``softmax(q k^T / sqrt(d_k) - m_k |i - j|) v``."""
    q, k, v = case
    causal = sf.within(ctx, "alibi_causal", causal, (False, True))
    out = ctx.alibi_attention(q, k, v, causal=causal)
    h, t, d_k = q.shape[1], q.shape[2], q.shape[3]
    ctx.assert_close(out, expected_attention(q, k, v, causal), f"ALiBi attention scaled by sqrt(d_k={d_k}), h={h}, "
                     f"t={t}", scale=4, same_dtype=reference_in(q, k, v, causal))


@claim_property("alibi.score-scale", needs=("alibi_attention",), expect="counterexample")
@given(case=multi_head_cases(), causal=st.booleans())
@example(case=SCALE_EXAMPLE, causal=True)
def alibi_attention_scales_the_scores_by_the_root_of_the_embedding_width_as_written(ctx: Context, case,
                                                                                    causal) -> None:
    """As written (003, the ALiBi formula): the scores are divided by ``sqrt(d)`` with ``d`` the embedding
    width, here ``d_model = h d_k`` for ``h >= 2`` heads: ``softmax(q k^T / sqrt(h d_k) - m_k |i - j|) v``."""
    q, k, v = case
    causal = sf.within(ctx, "alibi_causal", causal, (False, True))
    out = ctx.alibi_attention(q, k, v, causal=causal)
    h, d_k = q.shape[1], q.shape[3]
    ctx.assert_close(out, expected_attention(q, k, v, causal, width=h * d_k),
                     f"ALiBi attention vs scores scaled by sqrt(d_model = h d_k = {h * d_k})", scale=4)


# -- extrapolation ------------------------------------------------------------------------------


@claim_property("alibi.any-length", needs=ALIBI)
@given(case=heads_and_lengths(), longer=sf.dimension(1, 24), causal=st.booleans())
@example(case=(8, 16), longer=240, causal=True)
def the_bias_of_a_short_input_is_the_top_left_block_of_a_longer_ones(ctx: Context, case, longer, causal) -> None:
    """For ``T > t``, ``B(h, T, T)[:, :t, :t] = B(h, t, t)``: the bias is defined at any length and does not
    depend on it (nothing is learned per position or per length)."""
    h, t = case
    causal = sf.within(ctx, "alibi_causal", causal, (False, True))
    short, long = ctx.alibi_bias(h, t, t, causal=causal), ctx.alibi_bias(h, t + longer, t + longer, causal=causal)
    block = long[:, :t, :t]
    assert torch.equal(torch.isneginf(block), torch.isneginf(short)), "the -inf entries differ"
    finite = torch.isfinite(short)
    ctx.assert_close(block.masked_fill(~finite, 0.0), short.masked_fill(~finite, 0.0),
                     f"top-left {t}x{t} block of the bias at length {t + longer} vs the bias at length {t}",
                     scale=t + longer)


def mass_beyond(m: torch.Tensor, trained: int, t: int) -> torch.Tensor:
    """Weight the last query of a causal sequence of ``t`` keys gives to distances ``>= trained``, per slope,
    with equal scores, summed directly from the softmax."""
    d = torch.arange(t, dtype=torch.float64)  # distances 0 .. t-1 from the last query
    weights = torch.softmax(-m[:, None] * d, dim=-1)  # (h, t)
    return weights[:, trained:].sum(-1)


def mass_beyond_closed_form(m: torch.Tensor, trained: int, t: int) -> torch.Tensor:
    """The geometric sum: ``(e^{-mL} - e^{-mt}) / (1 - e^{-mt})``."""
    return (torch.exp(-m * trained) - torch.exp(-m * t)) / -torch.expm1(-m * t)


@st.composite
def extrapolations(draw: st.DrawFn) -> tuple[int, int, int]:
    """``(h, L, t)``: a training length ``L`` and an input ``1.5 L <= t <= 2 L``."""
    h, trained = draw(st.integers(1, 16)), draw(st.integers(16, 1024))
    return h, trained, draw(st.integers(math.ceil(1.5 * trained), 2 * trained))


@claim_property("alibi.any-length", needs=(), about="published-numbers", dtypes=("float64",))
@given(case=extrapolations())
@example(case=(8, 1024, 2048))
def the_weight_beyond_the_training_length_is_a_geometric_tail(ctx: Context, case) -> None:
    """With equal scores, head ``k`` gives distances ``>= L`` the weight ``(e^{-m_k L} - e^{-m_k t}) / (1 - e^{-m_k t})``:
    negligible for steep heads, about 1.8% for the paper's slowest (``m = 1/256``) at ``L = 1024``, ``t = 2048``."""
    h, trained, t = case
    m = paper_slopes(h)
    ctx.assert_close(mass_beyond(m, trained, t), mass_beyond_closed_form(m, trained, t),
                     f"weight beyond L={trained} at t={t}, per head", scale=t)


@claim_property("alibi.any-length", needs=(), about="published-numbers", expect="counterexample", dtypes=("float64",))
@given(case=extrapolations())
@example(case=(8, 1024, 2048))
def beyond_the_training_length_attention_stays_within_trained_distances_as_written(ctx: Context, case) -> None:
    """As written: ALiBi extrapolates by itself, i.e. on inputs longer than the training length ``L`` attention
    keeps to the distances seen in training: keys ``L`` or more away get no weight (equal scores, the paper's slopes)."""
    h, trained, t = case
    mass = mass_beyond(paper_slopes(h), trained, t)
    assert (mass <= ctx.tol.atol).all(), (
        f"h={h}, L={trained}, t={t}: head {int(mass.argmax()) + 1} (slope {float(paper_slopes(h)[mass.argmax()]):.6g}) "
        f"gives {float(mass.max()):.4f} of its weight to distances never seen in training")
