"""Properties of attention masks (``spec/attention/masking.md``).

Masks follow the protocol's convention, True = may attend; the causal, padding and band
masks come from :mod:`specformer.reference.attention.masks`, which only builds boolean matrices
(``tril``, ``arange < length``, ``|i - j| <= w``). Expected values come from the float64
formulas of :mod:`.expected` or from invariance: perturbing what a mask hides must
change nothing. Refutations (``expect="counterexample"``) state a claim exactly as the
documents write it and carry a hand-picked counterexample. The properties that draw
``causal=True`` with ``t_q != t_k`` compare with the causal alignment the implementation
declares (``causal_alignment``; undeclared: top-left, the protocol's).

Properties with ``needs=()`` check the mathematics or PyTorch itself (the fill value of
the documents' code, the mask conventions of PyTorch's two attention entry points).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st
from torch import nn

from specformer.context import Context
from specformer.property import claim_property
from specformer.reference.attention.masks import causal_mask, local_mask, padding_mask

from . import strategies as sf
from ..conventions import under_one_of
from .expected import attention_formula
from .strategies import AttentionCase

#: The documents' causal attention matrix for four tokens (web notes, 001): ones = allowed.
DOCUMENTS_CAUSAL_MATRIX = ((1, 0, 0, 0), (1, 1, 0, 0), (1, 1, 1, 0), (1, 1, 1, 1))

#: The course notes' (000) fill value for masked scores.
LARGE_NEGATIVE = -1e9


@dataclass(frozen=True)
class SequenceCase:
    """Position-aligned ``q (B,t,d_k)``, ``k (B,t,d_k)``, ``v (B,t,d_v)``, a position ``i``
    and replacement inputs ``q2, k2, v2`` of the same shapes (what a perturbation writes)."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    i: int
    q2: torch.Tensor
    k2: torch.Tensor
    v2: torch.Tensor

    @property
    def t(self) -> int:
        """Sequence length."""
        return self.q.shape[1]

    def replaced(self, where: torch.Tensor, *, q: bool = True, k: bool = True,
                 v: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``q, k, v`` with the positions ``where`` (bool ``(t,)`` or ``(B, t)``) taken from the replacements."""
        sel = (where if where.dim() == 2 else where[None, :])[..., None]  # (1|B, t, 1)
        pick = lambda x, x2, on: torch.where(sel, x2, x) if on else x  # noqa: E731
        return pick(self.q, self.q2, q), pick(self.k, self.k2, k), pick(self.v, self.v2, v)


@st.composite
def sequence_cases(draw: st.DrawFn, *, min_t: int = 1, max_t: int = 5, max_d: int = 4,
                   last_i: int = 0, bound: float = sf.BOUND) -> SequenceCase:
    """A sequence of length ``min_t..max_t`` and a position ``i`` in ``[0, t - 1 - last_i]``.

    One example in four is realistic: batch 3-4, length and widths 7-64.
    """
    large = draw(sf.realistic())
    b, t = draw(sf.sizes(large, 1, 2, "batch")), draw(sf.sizes(large, min_t, max_t, "t"))
    d_k, d_v = draw(sf.sizes(large, 1, max_d, "d")), draw(sf.sizes(large, 1, max_d, "d"))
    i = draw(st.integers(0, t - 1 - last_i))
    x = lambda d: draw(sf.tensors((b, t, d), bound))  # noqa: E731
    return SequenceCase(x(d_k), x(d_k), x(d_v), i, x(d_k), x(d_k), x(d_v))


def _positions(t: int) -> torch.Tensor:
    return torch.arange(t)


def _causal_formula(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The formula with ``M_ij = [j <= i]``."""
    return attention_formula(q, k, v, causal_mask(q.shape[1], k.shape[1]))


#: The values of the protocol's ``causal_alignment`` and the keys each lets query ``i`` see.
CAUSAL_ALIGNMENTS = {"top-left": "j <= i", "bottom-right": "j <= i + t_k - t_q"}


def aligned_causal_mask(t_q: int, t_k: int, alignment: str) -> torch.Tensor:
    """``(t_q, t_k)``, True = may attend: ``[j <= i]`` aligned top-left (the protocol's), ``[j <= i + t_k - t_q]``
    aligned bottom-right (the key-value-cache convention; its first ``t_q - t_k`` rows are empty when ``t_q > t_k``)."""
    if alignment == "top-left":
        return causal_mask(t_q, t_k)
    return torch.ones(t_q, t_k, dtype=torch.bool).tril(t_k - t_q)


def _on_rows(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``x (B, t_q, ·)`` with the rows outside ``rows`` (bool, broadcast to ``(B, t_q)``) set to 0: rows with no
    key are judged by ``masking.fully-masked-row``, not here."""
    return x.masked_fill(~rows[..., None], 0.0)


def under_the_declared_alignment(ctx: Context, check: Callable[[str], None]) -> None:
    """``check(alignment)`` for each ``causal_alignment`` the implementation declares (undeclared: top-left, the
    protocol's); passes when one passes, else fails with every failure."""
    under_one_of(ctx.choices("causal_alignment", tuple(CAUSAL_ALIGNMENTS)), check, lambda a: f"aligned {a}")


def causal_against_the_formula(ctx: Context, case: AttentionCase, mask: torch.Tensor | None, what: str) -> None:
    """Attention with ``causal=True`` (and ``mask``, or none) on every path against the formula with the causal
    mask of the declared alignment (and ``mask``), output and weights, on the queries that keep a key."""
    t_q, t_k = case.q.shape[1], case.k.shape[1]
    results = ctx.attention_paths(case.q, case.k, case.v, mask, causal=True)

    def check(alignment: str) -> None:
        allowed = aligned_causal_mask(t_q, t_k, alignment)  # (t_q, t_k)
        if mask is not None:
            allowed = mask & allowed  # (B, t_q, t_k)
        rows = allowed.any(-1)  # every row when aligned top-left (key 0 stays)
        output, weights = attention_formula(case.q, case.k, case.v, allowed)
        rule = CAUSAL_ALIGNMENTS[alignment]
        for path, result in results:
            ctx.assert_close(_on_rows(result.output, rows), _on_rows(output, rows),
                             f"output with causal=True and {what}, t_q={t_q}, t_k={t_k}, keys {rule}{path}")
            if result.weights is not None:
                ctx.assert_close(_on_rows(result.weights, rows), _on_rows(weights, rows),
                                 f"weights with causal=True and {what}, t_q={t_q}, t_k={t_k}, keys {rule}")

    under_the_declared_alignment(ctx, check)


# -- the causal mask ---------------------------------------------------------------------


@claim_property("masking.causal-no-future")
@given(case=sequence_cases(min_t=2, last_i=1))
def later_positions_do_not_change_earlier_outputs(ctx: Context, case) -> None:
    """``causal=True``: replacing ``q_j, k_j, v_j`` for every ``j > i`` leaves ``o_1..o_i`` unchanged."""
    later = _positions(case.t) > case.i
    out = ctx.attention(case.q, case.k, case.v, causal=True).output
    out2 = ctx.attention(*case.replaced(later), causal=True).output
    ctx.assert_close(out2[:, : case.i + 1], out[:, : case.i + 1], "outputs up to i after changing positions > i",
                     scale=case.t)


@claim_property("masking.causal-no-future")
@given(case=sequence_cases(min_t=2, last_i=1))
def later_positions_do_not_change_earlier_outputs_under_an_explicit_causal_mask(ctx: Context, case) -> None:
    """Mask ``M_ij = [j <= i]`` passed as a mask: positions ``j > i`` do not reach ``o_1..o_i``."""
    mask = causal_mask(case.t)
    later = _positions(case.t) > case.i
    out = ctx.attention(case.q, case.k, case.v, mask).output
    out2 = ctx.attention(*case.replaced(later), mask).output
    ctx.assert_close(out2[:, : case.i + 1], out[:, : case.i + 1], "outputs up to i after changing positions > i",
                     scale=case.t)


@st.composite
def unequal_length_cases(draw: st.DrawFn) -> AttentionCase:
    """Inputs without a mask, ``t_q != t_k`` either way (each ``1..5``, or realistic): under the top-left causal
    mask every query keeps key 0."""
    large = draw(sf.realistic())
    b, t_q = draw(sf.sizes(large, 1, 2, "batch")), draw(sf.sizes(large, 1, 5, "t"))
    t_k = draw(sf.sizes(large, 1, 5, "t").filter(lambda t: t != t_q))
    d_k, d_v = draw(sf.sizes(large, 1, 4, "d")), draw(sf.sizes(large, 1, 4, "d"))
    x = lambda t, d: draw(sf.tensors((b, t, d)))  # noqa: E731
    return AttentionCase(x(t_q, d_k), x(t_k, d_k), x(t_k, d_v))


@claim_property("masking.causal-no-future")
@given(case=unequal_length_cases())
@example(case=AttentionCase(  # t_q = 2 < t_k = 3: top-left gives query 0 key 0 only, bottom-right keys 0 and 1
    q=torch.ones(1, 2, 1, dtype=torch.float64), k=torch.tensor([[[0.0], [1.0], [2.0]]], dtype=torch.float64),
    v=torch.tensor([[[1.0], [2.0], [3.0]]], dtype=torch.float64),
))
@example(case=AttentionCase(  # t_q = 3 > t_k = 2: top-left gives query 1 keys 0 and 1, bottom-right key 0 only
    q=torch.ones(1, 3, 1, dtype=torch.float64), k=torch.tensor([[[0.0], [1.0]]], dtype=torch.float64),
    v=torch.tensor([[[1.0], [2.0]]], dtype=torch.float64),
))
def a_causal_flag_without_a_mask_aligns_top_left_when_t_q_and_t_k_differ(ctx: Context, case) -> None:
    """``causal=True`` and no mask, ``t_q < t_k`` or ``t_q > t_k``: the formula with ``M_ij = [j <= i]``, rows and
    columns counted from the first (top-left, the protocol's convention), output and weights on every path.

    An implementation that declares ``causal_alignment`` bottom-right is compared with ``[j <= i + t_k - t_q]``
    instead, on the queries that keep a key.
    """
    causal_against_the_formula(ctx, case, None, "no mask")


@st.composite
def causal_masked_cases(draw: st.DrawFn) -> AttentionCase:
    """Inputs with ``t_q``, ``t_k`` drawn apart (often unequal) and a mask that keeps key 0 in
    every row, so that the mask and the causal mask together leave each query a key."""
    case = draw(sf.attention_cases(masked=True))
    mask = case.mask.clone()
    mask[..., 0] = True
    return AttentionCase(case.q, case.k, case.v, mask)


@claim_property("masking.causal-no-future")
@given(case=causal_masked_cases())
@example(case=AttentionCase(  # t_q = 2 < t_k = 3: top-left gives query 0 key 0 only, bottom-right keys 0 and 1
    q=torch.ones(1, 2, 1, dtype=torch.float64), k=torch.tensor([[[0.0], [1.0], [2.0]]], dtype=torch.float64),
    v=torch.tensor([[[1.0], [2.0], [3.0]]], dtype=torch.float64),
    mask=torch.tensor([[[True, True, True], [True, False, True]]]),
))
def a_causal_flag_and_a_mask_combine_aligned_top_left(ctx: Context, case) -> None:
    """``causal=True`` with a mask ``M``: the formula with ``M_ij and [j <= i]``, rows and columns
    counted from the first (top-left alignment, the protocol's convention), also for ``t_q != t_k``.

    An implementation that declares ``causal_alignment`` bottom-right is compared with
    ``M_ij and [j <= i + t_k - t_q]`` instead, on the queries that keep a key.
    """
    causal_against_the_formula(ctx, case, case.mask, "a mask")


@claim_property("masking.causal-no-future")
@given(case=causal_masked_cases())
def a_causal_flag_with_a_mask_equals_the_combined_mask_without_the_flag(ctx: Context, case) -> None:
    """Second check, without the formula: ``Attention(M, causal=True) = Attention(M and [j <= i], causal=False)``,
    and every key that ``M`` or the causal mask removes gets weight exactly 0.

    An implementation that declares ``causal_alignment`` bottom-right is compared with the mask
    ``M and [j <= i + t_k - t_q]`` instead, on the queries that keep a key.
    """
    t_q, t_k = case.q.shape[1], case.k.shape[1]
    flagged = ctx.attention(case.q, case.k, case.v, case.mask, causal=True)

    def check(alignment: str) -> None:
        combined = case.mask & aligned_causal_mask(t_q, t_k, alignment)  # (B, t_q, t_k)
        rows = combined.any(-1)  # (B, t_q): every row when aligned top-left (key 0 stays)
        explicit = ctx.attention(case.q, case.k, case.v, combined)
        rule = CAUSAL_ALIGNMENTS[alignment]
        ctx.assert_close(_on_rows(flagged.output, rows), _on_rows(explicit.output, rows),
                         f"causal=True with mask M vs mask M and [{rule}] without the flag, t_q={t_q}, t_k={t_k}",
                         scale=t_k)
        if flagged.weights is not None:
            removed = flagged.weights.masked_select(~combined & rows[..., None])
            assert (removed == 0).all(), (
                f"causal=True with a mask: a key removed by the mask or by causality ({rule}) has weight "
                f"{removed.abs().max().item():.3g}, expected exactly 0"
            )

    under_the_declared_alignment(ctx, check)


@claim_property("masking.causal-prefix-consistency")
@given(case=sequence_cases(min_t=1), data=st.data())
def causal_attention_over_a_prefix_gives_the_same_rows(ctx: Context, case, data) -> None:
    """``Attention_causal(X)_{1:n} = Attention_causal(X_{1:n})`` for a prefix of length ``1 <= n <= t``."""
    n = data.draw(sf.dimension(1, case.t), label="prefix length")  # a length: one of the shape plan's sizes
    full = ctx.attention(case.q, case.k, case.v, causal=True).output
    prefix = ctx.attention(case.q[:, :n], case.k[:, :n], case.v[:, :n], causal=True).output
    ctx.assert_close(full[:, :n], prefix, f"rows 1..{n} of the full causal output vs the output on the prefix",
                     scale=case.t)


@claim_property("masking.causal-strictly-past")
@given(case=sequence_cases(min_t=1))
def output_i_depends_on_position_i_itself_and_not_on_later_ones(ctx: Context, case) -> None:
    """``causal=True``: changing ``v_i`` (and all of positions ``> i``) changes ``o_i`` by ``A_ii (v'_i - v_i)``, ``A_ii > 0``."""
    i = case.i
    pos = _positions(case.t)
    q2, k2, _ = case.replaced(pos > i, v=False)
    _, _, v2 = case.replaced(pos >= i)
    out = ctx.attention(case.q, case.k, case.v, causal=True).output
    out2 = ctx.attention(q2, k2, v2, causal=True).output
    weights = _causal_formula(case.q, case.k, case.v)[1]  # (B, t, t)
    a_ii = weights[:, i, i]  # (B,)
    assert (a_ii > 0).all(), "the formula gives A_ii = 0: inputs out of the property's range"
    expected = a_ii[:, None] * (case.v2[:, i] - case.v[:, i])  # (B, d_v)
    ctx.assert_close(out2[:, i] - out[:, i], expected, "change of o_i vs A_ii (v'_i - v_i)", scale=2 * case.t)


@claim_property("masking.causal-strictly-past", expect="counterexample")
@given(case=sequence_cases(min_t=1))
@example(case=SequenceCase(
    q=torch.zeros(1, 1, 1, dtype=torch.float64), k=torch.zeros(1, 1, 1, dtype=torch.float64),
    v=torch.ones(1, 1, 1, dtype=torch.float64), i=0,
    q2=torch.zeros(1, 1, 1, dtype=torch.float64), k2=torch.zeros(1, 1, 1, dtype=torch.float64),
    v2=torch.full((1, 1, 1), 2.0, dtype=torch.float64),
))
def output_i_depends_only_on_earlier_positions_as_written(ctx: Context, case) -> None:
    """As written: ``o_i`` depends only on positions ``j < i``, so changing keys and values ``>= i`` leaves it unchanged."""
    out = ctx.attention(case.q, case.k, case.v, causal=True).output
    out2 = ctx.attention(*case.replaced(_positions(case.t) >= case.i, q=False), causal=True).output
    ctx.assert_close(out2[:, case.i], out[:, case.i], "o_i after changing keys and values at positions >= i",
                     scale=case.t)


@claim_property("masking.causal-matrix")
@given(case=sequence_cases(min_t=1, bound=1.0))
def causal_weights_are_lower_triangular_with_a_positive_diagonal(ctx: Context, case) -> None:
    """``causal=True``: ``A_ij = 0`` exactly for ``j > i``, ``A_ii > 0``, and ``A`` equals the formula with ``M_ij = [j <= i]``."""
    weights = ctx.weights(case.q, case.k, case.v, causal=True)  # (B, t, t)
    future = ~causal_mask(case.t)
    above = weights.masked_select(future.expand(weights.shape))
    assert (above == 0).all(), f"a weight above the diagonal is {above.abs().max().item():.3g}, expected exactly 0"
    diagonal = weights.diagonal(dim1=-2, dim2=-1)
    assert (diagonal > 0).all(), f"a diagonal weight is {diagonal.min().item():.3g}, expected > 0"
    ctx.assert_close(weights, _causal_formula(case.q, case.k, case.v)[1], "causal weights vs the explicit mask")


def documents_upper_triangle(t: int) -> torch.Tensor:
    """The course notes' masked set read literally: the upper triangle, diagonal included (``triu``)."""
    return torch.ones(t, t, dtype=torch.bool).triu()


@claim_property("masking.causal-matrix", needs=(), about="documents-code", expect="counterexample", dtypes=("float64",))
@given(case=sequence_cases(min_t=1, bound=1.0))
@example(case=SequenceCase(
    q=torch.zeros(1, 2, 1, dtype=torch.float64), k=torch.zeros(1, 2, 1, dtype=torch.float64),
    v=torch.ones(1, 2, 1, dtype=torch.float64), i=0,
    q2=torch.zeros(1, 2, 1, dtype=torch.float64), k2=torch.zeros(1, 2, 1, dtype=torch.float64),
    v2=torch.ones(1, 2, 1, dtype=torch.float64),
))
def masking_the_upper_triangle_with_its_diagonal_leaves_every_row_a_distribution_as_written(ctx: Context, case) -> None:
    """As written: setting the upper triangle ``{j >= i}`` to ``-inf`` leaves every row of ``A`` a
    distribution over its allowed keys (some key allowed, masked weights 0, sum 1).

    Checked on the mask and the float64 formula, not on an implementation: what an
    implementation returns for a row with no key (zeros, NaN, or weights leaked onto masked
    keys) must not decide whether the claim as written is refuted.
    """
    masked = documents_upper_triangle(case.t)
    allowed = (~masked).any(dim=-1)  # (t,)
    assert allowed.all(), f"query {int((~allowed).nonzero()[0])} has no allowed key: its row cannot be a distribution"
    weights = attention_formula(case.q, case.k, case.v, ~masked)[1]  # (B, t, t)
    assert (weights.masked_select(masked.expand(weights.shape)) == 0).all(), "a masked key has weight"
    ctx.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=torch.float64), "row sums of A")


# -- masked keys and fully masked rows ---------------------------------------------------


@claim_property("masking.masked-weights-zero")
@given(case=sf.attention_cases(masked=True, bound=10.0), data=st.data())
def masked_keys_get_exactly_zero_weight(ctx: Context, case, data) -> None:
    """``M_ij = 0`` with an allowed key in row ``i`` gives ``A_ij = 0`` exactly; values of keys masked in every row do not matter."""
    weights = ctx.weights(case.q, case.k, case.v, case.mask)
    masked = weights.masked_select(~case.mask)
    assert (masked == 0).all(), f"a masked key has weight {masked.abs().max().item():.3g}, expected exactly 0"
    ctx.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=torch.float64), "row sums of A",
                     scale=weights.shape[-1])
    unused = ~case.mask.any(dim=1, keepdim=True).transpose(1, 2)  # (B, t_k, 1): keys no query may use
    garbage = data.draw(sf.tensors(tuple(case.v.shape), 1e3), label="garbage values")
    out = ctx.attention(case.q, case.k, case.v, case.mask).output
    out2 = ctx.attention(case.q, case.k, torch.where(unused, garbage, case.v), case.mask).output
    ctx.assert_close(out2, out, "output after replacing the values of fully masked keys", scale=case.k.shape[1])


@st.composite
def cases_with_a_fully_masked_row(draw: st.DrawFn) -> AttentionCase:
    """An attention case whose mask has at least one query row with every key masked."""
    case = draw(sf.attention_cases(masked=True))
    b, t_q = case.mask.shape[:2]
    mask = case.mask.clone()
    mask[draw(st.integers(0, b - 1)), draw(st.integers(0, t_q - 1))] = False
    return AttentionCase(case.q, case.k, case.v, mask)


@claim_property("masking.fully-masked-row")
@given(case=cases_with_a_fully_masked_row())
@example(case=AttentionCase(
    q=torch.zeros(1, 2, 1, dtype=torch.float64), k=torch.zeros(1, 2, 1, dtype=torch.float64),
    v=torch.tensor([[[1.0], [2.0]]], dtype=torch.float64), mask=torch.tensor([[[False, False], [True, False]]]),
))
def a_query_with_every_key_masked_gets_zeros_or_nan_and_other_rows_are_unaffected(ctx: Context, case) -> None:
    """Row ``i`` with ``M_ij = 0`` for all ``j``: ``o_i`` is all 0 or all NaN, never a mixture; other rows equal the formula."""
    empty = ~case.mask.any(dim=-1)  # (B, t_q)
    output, weights = attention_formula(case.q, case.k, case.v, case.mask)
    for path, result in ctx.attention_paths(case.q, case.k, case.v, case.mask):
        for name, got in (("output", result.output), ("weights", result.weights)):
            if got is None:
                continue
            rows = got[empty]  # (n_empty, ·)
            zero, nan = (rows == 0).all(-1), torch.isnan(rows).all(-1)
            assert (zero | nan).all(), (
                f"a fully masked row's {name}{path} is {rows[~(zero | nan)][0].tolist()}, expected all zeros or all NaN"
            )
        ctx.assert_close(result.output[~empty], output[~empty], "output rows with an allowed key" + path)
        if result.weights is not None:
            ctx.assert_close(result.weights[~empty], weights[~empty], "weight rows with an allowed key" + path)


@st.composite
def masked_scores(draw: st.DrawFn, *, empty_rows: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores ``(t_q, t_k)`` in ``[-1e3, 1e3]`` and a mask; rows keep a key unless ``empty_rows``."""
    t_q, t_k = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return draw(sf.tensors((t_q, t_k), 1e3)), draw(sf.masks(1, t_q, t_k, empty_rows=empty_rows))[0]


def _fill_softmax(scores: torch.Tensor, mask: torch.Tensor, fill: float) -> torch.Tensor:
    """The documents' code: ``softmax(scores.masked_fill(mask == 0, fill))``."""
    return torch.softmax(scores.masked_fill(~mask, fill), dim=-1)


def float16_refuses_the_fill() -> bool:
    """Whether PyTorch raises when writing ``-1e9`` into a float16 tensor (max 65504)."""
    try:
        torch.zeros(1, dtype=torch.float16).masked_fill(torch.tensor([True]), LARGE_NEGATIVE)
    except RuntimeError:
        return True
    return False


@claim_property("masking.large-negative-fill", needs=(), about="documents-code", dtypes=("float32", "float64"))
@given(scores_and_mask=masked_scores(empty_rows=False))
def minus_1e9_fill_equals_minus_infinity_on_rows_with_an_allowed_key(ctx: Context, scores_and_mask) -> None:
    """``|S_ij| <= 1e3``, a key per row: fill ``-1e9`` gives the softmax of fill ``-inf`` bit for bit; float16 cannot hold ``-1e9``."""
    scores, mask = scores_and_mask
    scores = scores.to(ctx.dtype)
    large, inf = _fill_softmax(scores, mask, LARGE_NEGATIVE), _fill_softmax(scores, mask, float("-inf"))
    assert torch.equal(large, inf), (
        f"fill -1e9 and -inf differ by {(large - inf).abs().max().item():.3g} in {ctx.dtype_name}"
    )
    assert float16_refuses_the_fill(), "float16 accepted masked_fill(-1e9); expected an overflow error"


@claim_property("masking.large-negative-fill", expect="counterexample", needs=(), about="documents-code", dtypes=("float32", "float64"))
@given(scores_and_mask=masked_scores(empty_rows=True))
@example(scores_and_mask=(torch.tensor([[0.0, 0.0]], dtype=torch.float64), torch.tensor([[False, False]])))
def minus_1e9_fill_equals_minus_infinity_as_written(ctx: Context, scores_and_mask) -> None:
    """As written: ``softmax`` with masked scores filled with ``-1e9`` equals it with ``-inf`` (NaN = NaN)."""
    scores, mask = scores_and_mask
    scores = scores.to(ctx.dtype)
    large, inf = _fill_softmax(scores, mask, LARGE_NEGATIVE), _fill_softmax(scores, mask, float("-inf"))
    assert torch.allclose(large, inf, rtol=0, atol=0, equal_nan=True), (
        f"fill -1e9 gives {large.tolist()}, fill -inf gives {inf.tolist()}"
    )


@dataclass(frozen=True)
class VeryNegativeCase:
    """Scores far below ``-1e9``: ``q > 0``, ``k < 0`` entrywise, magnitudes ``10^e``; a key mask
    ``(B, t_k)`` (every sequence keeps a key and masks one); allowed values in ``[-1, 1]``,
    masked values ``+100``."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    keys: torch.Tensor

    @property
    def mask(self) -> torch.Tensor:
        """The key mask as ``(B, t_q, t_k)``."""
        return self.keys[:, None, :].expand(self.q.shape[0], self.q.shape[1], self.k.shape[1])


#: The value written into masked keys' values: far outside the allowed values' range [-1, 1].
MASKED_VALUE = 100.0


@st.composite
def very_negative_cases(draw: st.DrawFn) -> VeryNegativeCase:
    """Every allowed score ``q.k / sqrt(d_k) <= -sqrt(d_k) 10^(2e)``, ``e`` in ``[5, 15]``: below ``-1e10``."""
    large = draw(sf.realistic())
    b, t_q = draw(sf.sizes(large, 1, 2, "batch")), draw(sf.sizes(large, 1, 4, "t"))
    t_k, d_k, d_v = draw(sf.sizes(large, 2, 5, "t")), draw(sf.sizes(large, 1, 4, "d")), draw(sf.sizes(large, 1, 4, "d"))
    e = draw(st.integers(5, 15))
    q = (1.5 + draw(sf.tensors((b, t_q, d_k), 0.5))) * 10.0**e  # (B, t_q, d_k), entries in [1, 2] 10^e
    k = -(1.5 + draw(sf.tensors((b, t_k, d_k), 0.5))) * 10.0**e  # (B, t_k, d_k), entries in [-2, -1] 10^e
    keys = draw(sf.masks(b, 1, t_k))[:, 0]  # (B, t_k): a key kept per sequence
    drop = torch.tensor(draw(st.lists(st.integers(0, t_k - 1), min_size=b, max_size=b)))
    kept = keys.to(torch.int64).argmax(-1)  # (B,): an allowed key to keep
    drop = torch.where(drop == kept, (drop + 1) % t_k, drop)
    keys[torch.arange(b), drop] = False  # (B, t_k): a key masked per sequence
    v = torch.where(keys[..., None], draw(sf.tensors((b, t_k, d_v), 1.0)), MASKED_VALUE)  # (B, t_k, d_v)
    return VeryNegativeCase(q, k, v, keys)


@claim_property("masking.large-negative-fill", dtypes=("float32", "float64"))
@given(case=very_negative_cases())
def masked_keys_get_no_weight_even_when_every_allowed_score_is_below_minus_1e9(ctx: Context, case) -> None:
    """Second check of the fill: with every allowed score below ``-1e10``, masked keys (value ``+100``) still get
    weight exactly 0 and the output stays within the allowed values ``[-1, 1]``; the documents' ``-1e9`` fill
    (computed here in float64) would give the masked keys almost all the weight.

    A ``-inf`` fill or a finite fill below every score drawn (``torch.finfo(dtype).min``) passes; a fill of
    ``-1e9`` (the course notes' code) does not.
    """
    scores = case.q @ case.k.transpose(-2, -1) / case.q.shape[-1] ** 0.5  # (B, t_q, t_k), float64
    documents = torch.softmax(scores.masked_fill(~case.mask, LARGE_NEGATIVE), dim=-1)
    assert (documents.masked_fill(case.mask, 0.0).sum(-1) > 0.99).all(), (
        "premise: the -1e9 fill should give the masked keys almost all the weight on these scores"
    )
    result = ctx.attention(case.q, case.k, case.v, case.mask)
    slack = 1.0 + 10 * ctx.tol.atol
    assert bool((result.output.abs() <= slack).all()), (
        f"every allowed score is below -1e10, and an output entry is {result.output.abs().max().item():.6g}: "
        f"masked keys (values {MASKED_VALUE:g}) got weight, as a finite fill above the scores gives"
    )
    if result.weights is not None:
        leaked = result.weights.masked_select(~case.mask)
        assert (leaked == 0).all(), f"a masked key has weight {leaked.abs().max().item():.3g} with scores below -1e10"


@claim_property("masking.large-negative-fill", expect="counterexample", dtypes=("float32", "float64"))
@given(case=very_negative_cases())
def an_implementation_masks_like_the_minus_1e9_fill_as_written(ctx: Context, case) -> None:
    """As written, of an implementation: its masked attention equals the documents' ``-1e9`` fill on every input.

    The documents' code is computed here in float64; a correct implementation (weight 0 on masked keys)
    departs from it as soon as every allowed score lies below ``-1e9``.
    """
    scores = case.q @ case.k.transpose(-2, -1) / case.q.shape[-1] ** 0.5  # (B, t_q, t_k)
    documents = torch.softmax(scores.masked_fill(~case.mask, LARGE_NEGATIVE), dim=-1) @ case.v
    result = ctx.attention(case.q, case.k, case.v, case.mask)
    ctx.assert_close(result.output, documents, "masked attention vs the documents' -1e9 fill", scale=MASKED_VALUE)


# -- padding and local windows -----------------------------------------------------------


@dataclass(frozen=True)
class PaddedCase:
    """A padded batch: ``SequenceCase`` inputs of length ``T`` and the real lengths ``(B,)``."""

    seq: SequenceCase
    lengths: torch.Tensor


@st.composite
def padded_cases(draw: st.DrawFn, max_t: int = 5) -> PaddedCase:
    """Sequences padded to a common length ``T``, with real lengths in ``[1, T]``."""
    seq = draw(sequence_cases(min_t=1, max_t=max_t))
    b, t = seq.q.shape[:2]
    lengths = torch.tensor(draw(st.lists(st.integers(1, t), min_size=b, max_size=b)))
    return PaddedCase(seq, lengths)


@claim_property("masking.padding")
@given(case=padded_cases())
def padded_keys_do_not_change_the_real_positions(ctx: Context, case) -> None:
    """Mask ``[j < L_b]``: rows ``< L_b`` equal attention on the unpadded ``X_{1:L_b}``, whatever the padding holds."""
    seq, t = case.seq, case.seq.t
    mask = padding_mask(case.lengths, t)  # (B, 1, t)
    padded = _positions(t)[None, :] >= case.lengths[:, None]  # (B, t)
    changed = ctx.attention_paths(*seq.replaced(padded), mask)
    for (path, result), (_, result2) in zip(ctx.attention_paths(seq.q, seq.k, seq.v, mask), changed):
        out, out2 = result.output, result2.output
        for b, length in enumerate(case.lengths.tolist()):
            real = slice(b, b + 1), slice(0, length)
            expected, _ = attention_formula(seq.q[real], seq.k[real], seq.v[real])
            ctx.assert_close(out[real], expected,
                             f"real rows of sequence {b} vs attention on its {length} real positions{path}")
            ctx.assert_close(out2[real], out[real], f"real rows of sequence {b} after changing its padding{path}",
                             scale=t)


@st.composite
def windowed_cases(draw: st.DrawFn, max_t: int = 6) -> tuple[SequenceCase, int]:
    """A sequence of length ``>= 2`` and a window ``w <= t - 2`` (so some position lies outside)."""
    seq = draw(sequence_cases(min_t=2, max_t=max_t))
    return seq, draw(st.integers(0, seq.t - 2))


@claim_property("masking.local-window")
@given(case=windowed_cases())
def positions_outside_the_window_do_not_change_the_output(ctx: Context, case) -> None:
    """Mask ``[|i - j| <= w]``: ``o_i`` ignores positions with ``|i - l| > w`` and equals the formula."""
    seq, w = case
    mask = local_mask(seq.t, w)
    out = ctx.attention(seq.q, seq.k, seq.v, mask).output
    ctx.assert_close(out, attention_formula(seq.q, seq.k, seq.v, mask)[0], "output with a band mask")
    outside = (_positions(seq.t) - seq.i).abs() > w
    out2 = ctx.attention(*seq.replaced(outside), mask).output
    ctx.assert_close(out2[:, seq.i], out[:, seq.i], f"o_i after changing positions farther than {w} from i",
                     scale=seq.t)


# -- the convention: True = may attend ---------------------------------------------------


def documents_code_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The documents' code: ``softmax((Q K^T / sqrt(d_k)).masked_fill(mask == 0, -inf)) V``."""
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return torch.softmax(scores.masked_fill(mask == 0, float("-inf")), dim=-1) @ v


def multihead_module_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                               attn_mask: torch.Tensor) -> torch.Tensor:
    """``nn.MultiheadAttention`` with one head, identity projections, no bias, given ``attn_mask``."""
    d = q.shape[-1]
    mha = nn.MultiheadAttention(d, 1, bias=False, batch_first=True, dtype=q.dtype)
    eye = torch.eye(d, dtype=q.dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([eye, eye, eye]))
        mha.out_proj.weight.copy_(eye)
        return mha.eval()(q, k, v, attn_mask=attn_mask, need_weights=False)[0]


@st.composite
def two_sided_masks(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``q, k, v`` with ``d_k = d_v`` and a ``(t_q, t_k)`` mask whose every row has a True and a False."""
    b, t_q, t_k, d = draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(2, 4)), draw(st.integers(1, 4))
    mask = draw(sf.masks(1, t_q, t_k))[0]
    off = torch.tensor(draw(st.lists(st.integers(0, t_k - 1), min_size=t_q, max_size=t_q)))
    first_on = mask.to(torch.int64).argmax(-1)  # an allowed key of each row
    off = torch.where(off == first_on, (off + 1) % t_k, off)  # a different key, to be masked
    mask[torch.arange(t_q), off] = False
    x = lambda t: draw(sf.tensors((b, t, d)))  # noqa: E731
    return x(t_q), x(t_k), x(t_k), mask


@claim_property("masking.mask-convention", needs=(), about="library", dtypes=("float64",))
@given(case=two_sided_masks())
def boolean_masks_mean_may_attend_in_sdpa_and_may_not_in_multihead_attention(ctx: Context, case) -> None:
    """The documents' ``masked_fill(mask == 0, -inf)`` equals ``sdpa(attn_mask=mask)`` and ``MultiheadAttention(attn_mask=~mask)``."""
    q, k, v, mask = case
    documents = documents_code_attention(q, k, v, mask)
    ctx.assert_close(F.scaled_dot_product_attention(q, k, v, attn_mask=mask), documents,
                     "scaled_dot_product_attention(attn_mask=mask) vs masked_fill(mask == 0, -inf)")
    ctx.assert_close(multihead_module_attention(q, k, v, ~mask), documents,
                     "MultiheadAttention(attn_mask=~mask) vs masked_fill(mask == 0, -inf)")
    ctx.assert_close(multihead_module_attention(q, k, v, mask), documents_code_attention(q, k, v, ~mask),
                     "MultiheadAttention(attn_mask=mask) vs masked_fill(mask == 1, -inf)")


@claim_property("masking.mask-convention", needs=(), about="library", dtypes=("float64",))
@given(q=sf.tensors((1, 4, 3)), k=sf.tensors((1, 4, 3)), v=sf.tensors((1, 4, 2)))
def the_documents_causal_matrix_gives_causal_attention(ctx: Context, q, k, v) -> None:
    """The 0/1 matrix with ones on and below the diagonal, used as ``masked_fill(M == 0, -inf)``, equals ``is_causal=True``."""
    matrix = torch.tensor(DOCUMENTS_CAUSAL_MATRIX)
    ctx.assert_close(documents_code_attention(q, k, v, matrix), F.scaled_dot_product_attention(q, k, v, is_causal=True),
                     "the documents' causal matrix vs scaled_dot_product_attention(is_causal=True)")
