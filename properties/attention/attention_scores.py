"""Properties of the score functions, kernel regression as attention, and attention's cost
(``spec/attention/attention.md``).

The slides write attention as ``softmax(f(Q, K)) V`` for a score function ``f`` and
tabulate four choices (Gaussian, cosine, additive, general); the course notes add the
dot product and its scaled version. The score properties call the implementation's
``score(kind, q, k, **params)`` and compare with each formula written out here in
float64 (``einsum`` and explicit differences, not :mod:`specformer.reference.attention.scores`).
Refutations (``expect="counterexample"``) state the table's formulas exactly as written
and carry a hand-picked counterexample.

Costs are counted with :func:`specformer.flops.count_flops`: ``torch.utils.flop_counter.FlopCounterMode``
for the matrix products it knows (``mm``, ``bmm``, ``addmm``, ``baddbmm``, the fused CUDA
attention kernels), and ``torch.einsum`` counted by its equation (PyTorch lowers an einsum
with a size-1 dimension to an elementwise product the counter does not see): a
multiply-add is 2 FLOPs; elementwise work (``tanh``, ``exp``, the softmax) and
matrix-vector products (``aten.mv``) are not counted. PyTorch's
fused CPU kernel ``_scaled_dot_product_flash_attention_for_cpu`` (4-D inputs) is not in
its table either; where an implementation's products are invisible to it, the cost
property is not applicable.
"""

from __future__ import annotations

import inspect
import math
import weakref
from dataclasses import dataclass
from fractions import Fraction

import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.flops import count_flops
from specformer.property import claim_property
from specformer.protocol import NotApplicable
from specformer.reference.attention import scores as reference_scores

from . import strategies as sf

SCORE = ("score",)

#: Vectors shorter than this are degenerate for the cosine score (0/0 at the zero vector):
#: their entries are not checked, whatever convention the implementation uses there.
MIN_NORM = 1e-3


# -- inputs ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ScoreCase:
    """Queries ``q (B,t_q,d_k)``, keys ``k (B,t_k,d_k)`` and every score function's parameters.

    ``w (d_k,d_k)`` for the general score, ``w_a (d_a,2d_k)`` and ``v_a (d_a,)`` for the
    additive score, ``sigma > 0`` for the Gaussian score.
    """

    q: torch.Tensor
    k: torch.Tensor
    w: torch.Tensor
    w_a: torch.Tensor
    v_a: torch.Tensor
    sigma: float


def score_case(q: list, k: list, sigma: float = 1.0) -> ScoreCase:
    """A hand-written case (for ``@example``): ``q``, ``k`` as nested lists ``(B,t,d)``; ``W = I``."""
    q_t, k_t = torch.tensor(q, dtype=torch.float64), torch.tensor(k, dtype=torch.float64)
    d = q_t.shape[-1]
    return ScoreCase(q_t, k_t, torch.eye(d, dtype=torch.float64), torch.ones(1, 2 * d, dtype=torch.float64),
                     torch.ones(1, dtype=torch.float64), sigma)


@st.composite
def score_cases(draw, *, max_batch: int = 2, max_t: int = 4, max_d: int = 4, max_d_a: int = 4,
                min_t_k: int = 1, bound: float = sf.BOUND) -> ScoreCase:
    """Queries and keys with entries in ``[-bound, bound]``; weights in ``[-1, 1]``; sigma in ``[0.5, 3]``.

    The score functions' weights come from a drawn seed (dense, no two entries alike),
    which keeps the draw cheap; the queries and keys use :func:`.strategies.tensors`.
    """
    large = draw(sf.realistic())  # one in four: batch 3-4, lengths and widths 7-64
    b, t_q = draw(sf.sizes(large, 1, max_batch, "batch")), draw(sf.sizes(large, 1, max_t, "t"))
    t_k = draw(sf.sizes(large, min_t_k, max_t, "t"))
    d_k, d_a = draw(sf.sizes(large, 1, max_d, "d")), draw(sf.sizes(large, 1, max_d_a, "d"))
    seed = draw(sf.seeds())
    return ScoreCase(
        q=draw(sf.tensors((b, t_q, d_k), bound)),
        k=draw(sf.tensors((b, t_k, d_k), bound)),
        w=_seeded((d_k, d_k), seed),
        w_a=_seeded((d_a, 2 * d_k), seed + 1),
        v_a=_seeded((d_a,), seed + 2),
        sigma=draw(st.floats(0.5, 3.0)),
    )


def _seeded(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Fixed pseudo-random float64 entries in [-1, 1]."""
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1


# -- the formulas, written out ---------------------------------------------------------
def _squared_distances(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``||q_i - k_j||^2`` from explicit differences: ``(B, t_q, t_k)``."""
    return (q[:, :, None, :] - k[:, None, :, :]).square().sum(-1)  # (B, t_q, t_k, d) -> (B, t_q, t_k)


def _norms(x: torch.Tensor) -> torch.Tensor:
    """Row norms ``||x_i||``: ``(B, t)``."""
    return x.square().sum(-1).sqrt()


def _defined_pairs(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Boolean ``(B, t_q, t_k)``: pairs whose query and key are both at least :data:`MIN_NORM` long."""
    return (_norms(q) >= MIN_NORM)[:, :, None] & (_norms(k) >= MIN_NORM)[:, None, :]


def _row_cosines(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``q_i . k_j / (||q_i|| ||k_j||)``; 0/0 gives NaN (callers keep :func:`_defined_pairs` only)."""
    return torch.einsum("bid,bjd->bij", q, k) / (_norms(q)[:, :, None] * _norms(k)[:, None, :])


def _expected_scores(case: ScoreCase) -> dict[str, tuple[torch.Tensor, torch.Tensor, dict]]:
    """Every kind's ``(scores, sizes, params)``: the formula, the rounding scale of each entry, the parameters.

    ``sizes`` is the sum of the absolute values of the terms behind each entry: rounding
    in the dtype under test grows with it, not with the (possibly cancelled) result.
    """
    q, k, d_k = case.q, case.k, case.q.shape[-1]
    dot = torch.einsum("bid,bjd->bij", q, k)
    dot_size = torch.einsum("bid,bjd->bij", q.abs(), k.abs())
    w1, w2 = case.w_a[:, :d_k], case.w_a[:, d_k:]  # W [q || k] = W_1 q + W_2 k
    hidden = torch.einsum("ad,bid->bia", w1, q)[:, :, None, :] + torch.einsum("ad,bjd->bja", w2, k)[:, None, :, :]
    hidden_size = (torch.einsum("ad,bid->bia", w1.abs(), q.abs())[:, :, None, :]
                   + torch.einsum("ad,bjd->bja", w2.abs(), k.abs())[:, None, :, :])  # (B, t_q, t_k, d_a)
    squared_norms = q.square().sum(-1)[:, :, None] + k.square().sum(-1)[:, None, :]  # |q|^2 + |k|^2 - 2 q.k
    return {
        "dot": (dot, dot_size, {}),
        "scaled_dot": (dot / math.sqrt(d_k), dot_size / math.sqrt(d_k), {}),
        "general": (torch.einsum("bid,de,bje->bij", q, case.w, k),
                    torch.einsum("bid,de,bje->bij", q.abs(), case.w.abs(), k.abs()), {"w": case.w}),
        "additive": (torch.tanh(hidden) @ case.v_a, (1 + hidden_size) @ case.v_a.abs(), {"w": case.w_a, "v": case.v_a}),
        "cosine": (_row_cosines(q, k), torch.full_like(dot, float(d_k)), {}),
        "gaussian": (-_squared_distances(q, k) / case.sigma**2, (squared_norms + 2 * dot_size) / case.sigma**2,
                     {"sigma": case.sigma}),
    }


def _assert_within(ctx: Context, actual: torch.Tensor, expected: torch.Tensor, sizes: torch.Tensor | float,
                   what: str) -> None:
    """``|actual - expected| <= atol + rtol (sizes + |expected|)`` entrywise, NaN never.

    ``sizes``: the sum of absolute values of the terms behind each entry (see
    :func:`_expected_scores`); the dtype's tolerance applies to it as to a result.
    """
    bound = ctx.tol.atol + ctx.tol.rtol * (torch.as_tensor(sizes, dtype=torch.float64) + expected.abs())
    err = (actual - expected).abs()
    bad = ~(err <= bound)  # NaN is bad
    if bad.any():
        excess = torch.where(bad, (err - bound).nan_to_num(float("inf")), torch.tensor(float("-inf"), dtype=err.dtype))
        idx = tuple(int(i) for i in torch.unravel_index(excess.argmax(), excess.shape))
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.numel()} entries out of tolerance; worst at {idx}: "
            f"got {actual[idx].item():.9g}, expected {expected[idx].item():.9g} (allowed error {bound[idx].item():.3g})"
        )


# -- attention.score-functions ---------------------------------------------------------
@claim_property("attention.score-functions", needs=SCORE)
@given(case=score_cases())
def every_score_function_matches_its_formula_and_gives_valid_weights(ctx: Context, case) -> None:
    """Each kind gives ``(B, t_q, t_k)`` scores equal to its formula; ``softmax`` rows sum to 1.

    ``dot: q_i . k_j``; ``scaled_dot: q_i . k_j / sqrt(d_k)``; ``general: q_i W k_j^T``;
    ``additive: v^T tanh(W [q_i || k_j])`` (computed here as ``W_1 q_i + W_2 k_j``);
    ``cosine: q_i . k_j / (||q_i|| ||k_j||)`` (pairs with a vector shorter than
    :data:`MIN_NORM` are skipped); ``gaussian: -||q_i - k_j||^2 / sigma^2``. Reductions:
    ``general`` with ``W = I`` is ``dot``, and ``scaled_dot = dot / sqrt(d_k)``, compared
    between the implementation's own kinds.
    """
    got, formulas = {}, _expected_scores(case)
    for kind, (expected, sizes, params) in formulas.items():
        scores = got[kind] = ctx.score(kind, case.q, case.k, **params)  # shape checked: (B, t_q, t_k)
        keep = _defined_pairs(case.q, case.k) if kind == "cosine" else torch.ones_like(scores, dtype=torch.bool)
        _assert_within(ctx, scores[keep], expected[keep], sizes[keep], f"{kind} scores vs their formula")
        weights = torch.softmax(scores.masked_fill(~keep, 0.0), dim=-1)
        ctx.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=torch.float64),
                         f"row sums of softmax({kind} scores)")
    d_k = case.q.shape[-1]
    dot_size = formulas["dot"][1]
    identity = ctx.score("general", case.q, case.k, w=torch.eye(d_k, dtype=torch.float64))
    _assert_within(ctx, identity, got["dot"], dot_size, "general scores with W = I vs dot scores")
    _assert_within(ctx, got["scaled_dot"], got["dot"] / math.sqrt(d_k), dot_size, "scaled_dot vs dot / sqrt(d_k)")


# -- attention.gaussian-score-sign -----------------------------------------------------
def slide_gaussian_scores(q: torch.Tensor, k: torch.Tensor, sigma: float) -> torch.Tensor:
    """The table's Gaussian score as written: ``log exp((q - k)^2 / sigma^2)``, a plus sign."""
    return torch.log(torch.exp(_squared_distances(q, k) / sigma**2))


def _clear_rows(dist2: torch.Tensor, margin: float) -> torch.Tensor:
    """Boolean ``(B, t_q)``: rows whose nearest key is nearer than the next by more than ``margin``."""
    if dist2.shape[-1] == 1:
        return torch.ones(dist2.shape[:-1], dtype=torch.bool)
    nearest_two = dist2.topk(2, dim=-1, largest=False).values
    return nearest_two[..., 1] - nearest_two[..., 0] > margin


def _assert_nearest_key_gets_most_weight(dist2: torch.Tensor, scores: torch.Tensor, clear: torch.Tensor,
                                         what: str) -> None:
    """On the ``clear`` rows, ``argmax_j softmax(scores)_ij = argmin_j dist2_ij``."""
    weights = torch.softmax(scores, dim=-1)
    nearest, heaviest = dist2.argmin(-1), weights.argmax(-1)
    wrong = clear & (nearest != heaviest)
    if wrong.any():
        b, i = (int(x) for x in wrong.nonzero()[0])
        j, h = int(nearest[b, i]), int(heaviest[b, i])
        raise AssertionError(
            f"{what}: query {i} (batch {b}): the nearest key {j} (squared distance {dist2[b, i, j].item():.4g}) "
            f"gets weight {weights[b, i, j].item():.4g}, but key {h} (squared distance {dist2[b, i, h].item():.4g}) "
            f"gets the most, {weights[b, i, h].item():.4g}"
        )


@claim_property("attention.gaussian-score-sign", needs=SCORE)
@given(case=score_cases(min_t_k=2))
def the_gaussian_score_gives_the_nearest_key_the_most_weight(ctx: Context, case) -> None:
    """Corrected: with ``f = -||q - k_j||^2 / sigma^2``, ``argmax_j softmax(f)_j = argmin_j ||q - k_j||``.

    Checked on query rows whose nearest key is unique by a margin larger than the
    dtype's rounding of the scores.
    """
    dist2 = _squared_distances(case.q, case.k)
    scores = ctx.score("gaussian", case.q, case.k, sigma=case.sigma)
    margin = 2 * (case.sigma**2 * ctx.tol.atol + ctx.tol.rtol * dist2.amax().item())  # two scores' rounding
    clear = _clear_rows(dist2, margin)
    assume(clear.any())
    _assert_nearest_key_gets_most_weight(dist2, scores, clear, "implementation's gaussian score")


@claim_property("attention.gaussian-score-sign", needs=(), about="documents-code", expect="counterexample", dtypes=("float64",))
@example(case=score_case([[[0.0]]], [[[1.0], [2.0]]]))
@given(case=score_cases(min_t_k=2, bound=2.0))
def the_slides_gaussian_score_gives_the_nearest_key_the_most_weight_as_written(ctx: Context, case) -> None:
    """As written, ``f(q, k) = log exp((q - k)^2 / sigma^2)``: the nearest key gets the most weight.

    With the plus sign the score grows with the distance: for ``q = 0`` and keys at 1 and
    2 (``sigma = 1``) the scores are 1 and 4, and the farther key gets weight 0.95.
    """
    dist2 = _squared_distances(case.q, case.k)
    clear = _clear_rows(dist2, 1e-6)
    assume(clear.any())
    _assert_nearest_key_gets_most_weight(dist2, slide_gaussian_scores(case.q, case.k, case.sigma), clear,
                                         "the table's Gaussian score")


# -- attention.cosine-score ------------------------------------------------------------
@st.composite
def cosine_cases(draw):
    """A score case and factors in ``[e^-2, e^2]``: ``c_q (B,t_q)``, ``c_k (B,t_k)``, ``c (B,t_q)`` (keys ``c q``)."""
    case = draw(score_cases())
    b, t_q, t_k = case.q.shape[0], case.q.shape[1], case.k.shape[1]
    seed = draw(sf.seeds())
    factors = [(2 * _seeded(shape, seed + i)).exp() for i, shape in enumerate(((b, t_q), (b, t_k), (b, t_q)))]
    return case, *factors


@claim_property("attention.cosine-score", needs=SCORE)
@given(case=cosine_cases())
def the_cosine_score_is_bounded_and_ignores_the_lengths_of_each_query_and_key(ctx: Context, case) -> None:
    """Corrected, per row: ``f_ij = q_i . k_j / (||q_i|| ||k_j||)``.

    ``-1 <= f_ij <= 1``; ``f(D Q, E K) = f(Q, K)`` for positive diagonal ``D``, ``E``
    (each query and each key rescaled by its own factor); ``f(q_i, c q_i) = 1`` for
    ``c > 0``. Pairs with a vector shorter than :data:`MIN_NORM` are skipped.
    """
    case, c_q, c_k, c = case
    q, k = case.q, case.k
    keep = _defined_pairs(q, k)
    scores = ctx.score("cosine", q, k)
    inside = scores[keep]
    assert (inside.abs() <= 1 + ctx.tol.atol).all(), (
        f"a cosine score lies outside [-1, 1]: {inside.abs().max().item():.9g}"
    )
    rescaled = ctx.score("cosine", c_q[..., None] * q, c_k[..., None] * k)
    _assert_within(ctx, rescaled[keep], inside, q.shape[-1], "cosine scores with each q_i and k_j rescaled vs unscaled")
    parallel = ctx.score("cosine", q, c[..., None] * q).diagonal(dim1=-2, dim2=-1)  # f(q_i, c_i q_i): (B, t_q)
    long_enough = _norms(q) >= MIN_NORM
    _assert_within(ctx, parallel[long_enough], torch.ones_like(parallel[long_enough]), q.shape[-1],
                   "cosine score of q_i with the key c q_i (c > 0)")


def slide_cosine_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """The table's cosine score as written: ``Q K^T / (||Q|| ||K||)`` with whole-matrix (Frobenius) norms."""
    frobenius = lambda x: x.square().sum(dim=(-2, -1), keepdim=True).sqrt()  # noqa: E731  (B, 1, 1)
    return torch.einsum("bid,bjd->bij", q, k) / (frobenius(q) * frobenius(k))


@claim_property("attention.cosine-score", needs=(), about="documents-code", expect="counterexample", dtypes=("float64",))
@example(case=score_case([[[1.0]]], [[[1.0], [2.0]]]))
@given(case=score_cases())
def the_slides_matrix_norm_cosine_is_the_cosine_of_each_pair_as_written(ctx: Context, case) -> None:
    """As written, ``f = Q K^T / (||Q|| ||K||)`` (matrix norms) is the cosine ``q_i . k_j / (||q_i|| ||k_j||)``.

    With one query ``q = 1`` and keys 1 and 2, the cosines are 1 and 1, but the
    Frobenius-normed scores are ``1/sqrt(5)`` and ``2/sqrt(5)``: one global rescaling of
    the dot product, so a longer key still scores higher.
    """
    keep = _defined_pairs(case.q, case.k)
    assume(keep.any())
    slide, cosine = slide_cosine_scores(case.q, case.k)[keep], _row_cosines(case.q, case.k)[keep]
    worst = int((slide - cosine).abs().argmax())
    assert torch.allclose(slide, cosine, rtol=1e-9, atol=1e-12), (
        f"Q K^T / (||Q||_F ||K||_F) = {slide[worst].item():.6g} where the cosine of the pair is "
        f"{cosine[worst].item():.6g}"
    )


# -- attention.score-range -------------------------------------------------------------
@claim_property("attention.score-range", needs=SCORE)
@given(case=score_cases(bound=10.0), c=st.floats(1.0, 100.0))
def scaled_dot_scores_are_unbounded_and_only_their_softmax_lies_in_the_unit_interval(ctx: Context, case, c) -> None:
    """Corrected: ``f = q_i . k_j / sqrt(d_k)`` takes any real value; only ``softmax(f)`` is in ``[0, 1]``.

    The implementation's scores equal the formula wherever it lands (inputs in
    ``[-10, 10]`` give scores far outside ``(0, 1)``), and grow linearly without bound:
    ``f(c Q, K) = c f(Q, K)``. Their softmax lies in ``[0, 1]``.
    """
    scores = ctx.score("scaled_dot", case.q, case.k)
    expected, sizes, _ = _expected_scores(case)["scaled_dot"]
    _assert_within(ctx, scores, expected, sizes, "scaled_dot scores vs q.k / sqrt(d_k)")
    _assert_within(ctx, ctx.score("scaled_dot", c * case.q, case.k), c * expected, c * sizes,
                   f"scaled_dot scores of {c:g} Q vs {c:g} q.k / sqrt(d_k)")
    weights = torch.softmax(scores, dim=-1)
    assert ((weights >= 0) & (weights <= 1)).all(), (
        f"softmax of the scores leaves [0, 1]: min {weights.min().item():.3g}, max {weights.max().item():.9g}"
    )


@claim_property("attention.score-range", needs=SCORE, expect="counterexample")
@example(case=score_case([[[1.0]]], [[[-1.0]]]))
@given(case=score_cases())
def the_score_matrix_lies_in_the_open_unit_interval_as_written(ctx: Context, case) -> None:
    """As written: the output of ``f`` is always a matrix in ``(0, 1)^{t_q x t_k}``.

    For ``f = q . k / sqrt(d_k)`` with ``q = 1``, ``k = -1`` the score is -1.
    """
    scores = ctx.score("scaled_dot", case.q, case.k)
    assert ((scores > 0) & (scores < 1)).all(), (
        f"scaled_dot scores leave (0, 1): min {scores.min().item():.6g}, max {scores.max().item():.6g}"
    )


# -- attention.dot-fewer-parameters ----------------------------------------------------
def _counted_flops(fn, *args, **kwargs) -> int:
    """FLOPs counted in one call (:func:`specformer.flops.count_flops`: multiply-add = 2; no tanh, exp or ``mv``)."""
    with count_flops() as counted:
        fn(*args, **kwargs)
    return counted[0]


@claim_property("attention.dot-fewer-parameters", needs=(), about="documents-code", dtypes=("float64",))
@given(b=st.integers(1, 2), t_q=st.integers(1, 6), t_k=st.integers(1, 6), d_k=st.integers(1, 16),
       d_a=st.integers(1, 16))
def dot_scores_need_no_parameters_and_fewer_flops_than_additive_scores(ctx: Context, b, t_q, t_k, d_k, d_a) -> None:
    """Parameters ``P_dot = 0 < P_add = d_a (2 d_k + 1)``; counted FLOPs ``dot < additive``.

    Parameters are the tensors a score function of :mod:`specformer.reference.attention.scores`
    takes besides ``q`` and ``k``: none for ``dot_product_scores``; ``w (d_a, 2 d_k)`` and
    ``v (d_a,)`` for ``additive_scores``. FLOPs are what ``FlopCounterMode`` counts in one
    call on ``B t_q t_k`` pairs: ``2 d_k`` per pair for the dot product (one ``bmm``), and
    ``4 d_a d_k`` per pair for the additive score as written, the product of every
    concatenated ``[q_i || k_j]`` (length ``2 d_k``) with ``W^T`` (one ``mm``). Its ``d_a``
    ``tanh`` evaluations are not counted, nor (in torch 2.13) the product with ``v``, an
    ``aten.mv`` (``2 d_a`` per pair, allowed for should the counter learn it), so the count
    is a lower bound of the true ``4 d_a d_k + 3 d_a`` per pair, and already exceeds ``2 d_k``.
    """
    q, k = _seeded((b, t_q, d_k), 0), _seeded((b, t_k, d_k), 1)
    w, v = _seeded((d_a, 2 * d_k), 2), _seeded((d_a,), 3)
    dot_fn, additive_fn = reference_scores.dot_product_scores, reference_scores.additive_scores
    dot_params = [name for name in inspect.signature(dot_fn).parameters if name not in ("q", "k")]
    assert dot_params == [], f"dot_product_scores takes parameters {dot_params}"
    additive_params = {"w": w, "v": v}
    shape = tuple(additive_fn(q, k, **additive_params).shape)
    assert shape == (b, t_q, t_k), f"additive scores of shape {shape}, expected {(b, t_q, t_k)}"
    p_add = sum(p.numel() for p in additive_params.values())
    assert p_add == d_a * (2 * d_k + 1) > 0, f"additive scores have {p_add} parameters, not d_a (2 d_k + 1)"
    pairs = b * t_q * t_k
    dot_flops, additive_flops = _counted_flops(dot_fn, q, k), _counted_flops(additive_fn, q, k, **additive_params)
    assert dot_flops == 2 * d_k * pairs, f"dot scores: {dot_flops} FLOPs counted, expected 2 d_k B t_q t_k"
    assert additive_flops in (4 * d_a * d_k * pairs, (4 * d_a * d_k + 2 * d_a) * pairs), (
        f"additive scores (d_a={d_a}, d_k={d_k}, B t_q t_k={pairs}): {additive_flops} FLOPs counted, expected "
        f"4 d_a d_k B t_q t_k = {4 * d_a * d_k * pairs} (with the v product: {(4 * d_a * d_k + 2 * d_a) * pairs})"
    )
    assert additive_flops > dot_flops, f"additive {additive_flops} FLOPs <= dot {dot_flops} FLOPs"


@st.composite
def cost_sizes(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    """``(B, t_q, t_k, d_k, d_a)`` with ``d_a > max(t_q, t_k, d_k)``: ``B <= 2``, ``t <= 6``, ``d_k <= 16``.

    Only there does every correct implementation's additive score cost more than its dot
    score as ``FlopCounterMode`` counts them (see the property that draws them).
    """
    # Drawn freely, not from the shape plans: sizes are all the row draws, and a law over sizes is what it checks.
    b, t_q, t_k, d_k = draw(st.integers(1, 2)), draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 16))
    return b, t_q, t_k, d_k, max(t_q, t_k, d_k) + draw(st.integers(1, 8))


def additive_min_flops(b: int, t_q: int, t_k: int, d_k: int, d_a: int) -> int:
    """The fewest FLOPs any evaluation of ``v^T tanh(W_1 q_i + W_2 k_j)`` spends in matrix products.

    Each query and each key projected once (``2 d_a d_k`` each) and one product with ``v``
    per pair (``2 d_a``); the sum and the ``tanh`` are elementwise, which the counter does
    not see.
    """
    return 2 * d_a * d_k * b * (t_q + t_k) + 2 * d_a * b * t_q * t_k


@claim_property("attention.dot-fewer-parameters", needs=("score",), dtypes=("float32", "float64"))
@example(sizes=(1, 3, 5, 5, 6))  # B t_q t_k = 15, d_k = 5 with the least d_a drawn there (at d_a = 1 the claim fails)
@given(sizes=cost_sizes())
def the_implementations_dot_score_takes_no_parameters_and_costs_less_than_its_additive_score(
        ctx: Context, sizes: tuple[int, int, int, int, int]) -> None:
    """The implementation's ``dot`` score answers from ``q`` and ``k`` alone and equals ``q k^T``; its
    ``additive`` score needs ``W (d_a, 2 d_k)`` and ``v (d_a,)``; ``FlopCounterMode`` counts fewer FLOPs for the
    first than for the second, and than the additive formula needs at least (:func:`additive_min_flops`).

    Whether an additive score costs more depends on ``d_a`` and on how it is computed:
    projecting each query and key once costs ``2 d_a d_k (t_q + t_k)`` per batch element
    against the dot product's ``2 d_k t_q t_k``, and the counter sees no elementwise work
    (``tanh``, sums, ``v`` applied by a product and a sum), so a correct implementation may
    show it only part of its products. The sizes are drawn with ``d_a > max(t_q, t_k, d_k)``
    (:func:`cost_sizes`), where each product of the additive formula alone costs more than
    the whole dot formula: projecting the queries ``2 d_a d_k B t_q > 2 d_k B t_q t_k``
    (``d_a > t_k``), the keys likewise (``d_a > t_q``), ``v`` per pair ``2 d_a B t_q t_k``
    (``d_a > d_k``), the concatenation as written ``4 d_a d_k B t_q t_k``. At ``d_a = 1``,
    ``B t_q t_k = 3 x 5``, ``d_k = 5`` the claim is false for such an implementation (150
    FLOPs for the dot score, 80 for the projections). When the counter sees nothing of the dot
    call, only the parameter part is checked; when it sees nothing of the additive call, the
    dot count is compared with the formula's least count only.
    """
    b, t_q, t_k, d_k, d_a = sizes
    q, k = _seeded((b, t_q, d_k), 0), _seeded((b, t_k, d_k), 1)
    w, v = _seeded((d_a, 2 * d_k), 2), _seeded((d_a,), 3)
    with ctx.counting_flops() as dot_counted:
        dot = ctx.score("dot", q, k)  # no parameters passed
    ctx.assert_close(dot, q @ k.transpose(-2, -1), "dot scores with no parameters vs q k^T", scale=d_k)
    with ctx.counting_flops() as additive_counted:
        additive = ctx.score("additive", q, k, w=w, v=v)
    ctx.assert_close(additive, reference_scores.additive_scores(q, k, w, v), "additive scores", scale=d_a)
    dot_flops, additive_flops = dot_counted[0], additive_counted[0]
    least = additive_min_flops(b, t_q, t_k, d_k, d_a)
    shape = f"B={b}, t_q={t_q}, t_k={t_k}, d_k={d_k}, d_a={d_a}: the dot score counts {dot_flops} FLOPs"
    if dot_flops:
        assert dot_flops < least, f"{shape}, the additive formula needs at least {least}"
        if additive_flops:
            assert dot_flops < additive_flops, f"{shape}, the additive score {additive_flops}"


# -- attention.quadratic-cost ----------------------------------------------------------
#: Contexts whose implementation's products ``FlopCounterMode`` does not see, with why.
_INVISIBLE: "weakref.WeakKeyDictionary[object, str]" = weakref.WeakKeyDictionary()
#: Per context: FLOPs counted by shape ``(B, t, d_k, d_v)`` (counts depend on shapes only).
_COUNTS: "weakref.WeakKeyDictionary[object, dict[tuple[int, ...], int]]" = weakref.WeakKeyDictionary()


def _attention_flops(ctx: Context, b: int, t: int, d_k: int, d_v: int) -> int:
    """FLOPs counted in one self-attention-shaped call (``t_q = t_k = t``) of the implementation."""
    counts = _COUNTS.setdefault(ctx, {})
    if (b, t, d_k, d_v) not in counts:
        q, k, v = _seeded((b, t, d_k), 0), _seeded((b, t, d_k), 1), _seeded((b, t, d_v), 2)
        with ctx.counting_flops() as counted:  # FlopCounterMode, in the implementation's worker
            ctx.attention(q, k, v, need_weights=False)  # the output's cost, not that of exposing A
        counts[b, t, d_k, d_v] = counted[0]
    return counts[b, t, d_k, d_v]


@claim_property("attention.quadratic-cost", max_examples=15)
# Drawn freely, not from the shape plans: a law over sizes, and sizes are all the row draws (from the plans it
# would check 4 examples, not 15).
@given(b=st.integers(1, 2), t0=st.integers(1, 3), d_k=st.integers(1, 4), d_v=st.integers(1, 4))
def the_flops_of_attention_are_quadratic_in_the_sequence_length(ctx: Context, b, t0, d_k, d_v) -> None:
    """``FLOPs(t) = a t^2 + b' t + c`` at ``t_q = t_k = t``, with ``a = m 2 B (d_k + d_v)``, ``m >= 1``.

    Counted at ``t = t0, 2 t0, 3 t0, 4 t0``: the third finite difference is 0 (no cubic or
    higher term), the second is ``2 a t0^2 > 0``. ``Q K^T`` and ``A V`` cost
    ``2 B t^2 (d_k + d_v)``; ``m`` counts evaluations of the two products (projections add
    terms linear in ``t``). An implementation with one shared width ``E = max(d_k, d_v)``
    (``torch.nn.MultiheadAttention``'s ``embed_dim``; zero-padded features are still
    multiplied) may instead have ``a = m 2 B (2E)``. The weights are not asked for
    (``need_weights=False``): recovering them from a fused kernel by a second call with
    identity values (``d_v = t_k``) would add ``2 B t_q t_k^2``, a cubic term.
    """
    if ctx not in _INVISIBLE:
        counts = [_attention_flops(ctx, b, n * t0, d_k, d_v) for n in (1, 2, 3, 4)]
        # Q K^T and A V need 2 B t^2 (d_k + d_v) FLOPs at least; fewer counted means the counter
        # missed them (a fused kernel), whatever else it saw (projections): the guard of multihead.cost-equal
        products = [2 * b * (n * t0) ** 2 * (d_k + d_v) for n in (1, 2, 3, 4)]
        if any(count < least for count, least in zip(counts, products)):
            _INVISIBLE[ctx] = (
                f"FlopCounterMode cannot see this implementation's kernels: it counts {counts} FLOPs at "
                f"t = {t0}..{4 * t0}, fewer than the {products} of Q K^T and A V alone"
            )
    if ctx in _INVISIBLE:  # one raise for every example once decided, so Hypothesis replays it consistently
        raise NotApplicable(_INVISIBLE[ctx])
    f1, f2, f3, f4 = counts
    shape = f"B={b}, d_k={d_k}, d_v={d_v}, t={t0},{2 * t0},{3 * t0},{4 * t0}: FLOPs {counts}"
    third = f4 - 3 * f3 + 3 * f2 - f1
    assert third == 0, f"{shape}: third difference {third} != 0, a term of degree >= 3 in t"
    second = f3 - 2 * f2 + f1
    assert second > 0, f"{shape}: second difference {second} <= 0, no t^2 term"
    a = Fraction(second, 2 * t0 * t0)  # the t^2 coefficient
    units = {"2 B (d_k + d_v)": 2 * b * (d_k + d_v), "2 B (2 max(d_k, d_v))": 4 * b * max(d_k, d_v)}
    assert any((a / unit).denominator == 1 for unit in units.values()), (
        f"{shape}: the t^2 coefficient {a} is no integer multiple of "
        + " or ".join(f"{name} = {unit}" for name, unit in units.items())
    )


# -- attention.nadaraya-watson ---------------------------------------------------------
#: The slide's visible data points ``(x_i, y_i)`` and query (004, "Non-Transformer
#: Examples"); the slide elides the rest of its data set ("...").
SLIDE_POINTS = ((1.36, 1.79), (3.40, -1.77), (6.05, -2.17))
SLIDE_QUERY = 4.25


@dataclass(frozen=True)
class RegressionCase:
    """Training inputs ``x (n,)``, targets ``y (n,)``, query points ``x_query (t_q,)`` and a bandwidth."""

    x: torch.Tensor
    y: torch.Tensor
    x_query: torch.Tensor
    sigma: float


SLIDE_CASE = RegressionCase(torch.tensor([p[0] for p in SLIDE_POINTS], dtype=torch.float64),
                            torch.tensor([p[1] for p in SLIDE_POINTS], dtype=torch.float64),
                            torch.tensor([SLIDE_QUERY], dtype=torch.float64), 1.0)


@st.composite
def regression_cases(draw, max_n: int = 6, max_t_q: int = 4) -> RegressionCase:
    """Inputs and queries in ``[0, 7]`` (the slide's range), targets in ``[-3, 3]``, sigma in ``[0.5, 3]``."""
    n, t_q = draw(sf.dimension(1, max_n)), draw(sf.dimension(1, max_t_q))
    return RegressionCase(draw(sf.tensors((n,), 3.5)) + 3.5, draw(sf.tensors((n,))),
                          draw(sf.tensors((t_q,), 3.5)) + 3.5, draw(st.floats(0.5, 3.0)))


def _nadaraya_watson(x: torch.Tensor, y: torch.Tensor, x_query: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """``sum_i exp(s_i) y_i / sum_l exp(s_l)`` per query row, from scores ``(t_q, n)``."""
    weights = scores.exp() / scores.exp().sum(-1, keepdim=True)
    return weights @ y  # (t_q, n) @ (n,) -> (t_q,)


def _assert_prediction(ctx: Context, got: torch.Tensor, predicted: torch.Tensor, y: torch.Tensor, size: float,
                       what: str) -> None:
    """``got`` matches the Nadaraya-Watson ``predicted`` and lies in ``[min y, max y]``.

    ``size`` bounds the rounding (see :func:`_assert_within`): a score error ``e`` moves the
    weighted mean by at most ``2 e max|y|``.
    """
    _assert_within(ctx, got, predicted, size, f"{what} vs the Nadaraya-Watson prediction")
    slack = ctx.tol.atol + ctx.tol.rtol * size
    assert (got >= y.min() - slack).all() and (got <= y.max() + slack).all(), (
        f"{what}: a prediction {got.tolist()} lies outside [min y, max y] = "
        f"[{y.min().item():.6g}, {y.max().item():.6g}]"
    )


@claim_property("attention.nadaraya-watson")
@example(case=SLIDE_CASE)
@given(case=regression_cases())
def gaussian_kernel_regression_is_scaled_dot_product_attention(ctx: Context, case) -> None:
    """``y_hat(x) = sum_i exp(-(x - x_i)^2 / sigma^2) y_i / sum_l exp(-(x - x_l)^2 / sigma^2)`` is attention.

    ``-(x - x_i)^2 / sigma^2 = (2 x x_i - x_i^2) / sigma^2 - x^2 / sigma^2``, and the last
    term is the same for every key of a query, so softmax drops it. With
    ``q = c [x, 1]``, ``k_i = c [2 x_i, -x_i^2]``, ``c^2 = sqrt(2) / sigma^2`` (so that
    ``q . k_i / sqrt(d_k) = (2 x x_i - x_i^2) / sigma^2`` at ``d_k = 2``) and ``v_i = y_i``,
    scaled dot-product attention computes the Gaussian-kernel prediction, which lies in
    ``[min y, max y]``. The expected value uses the distances directly. The example is the
    slide's visible data, ``(1.36, 1.79), (3.40, -1.77), (6.05, -2.17)`` and ``x = 4.25``
    (the slide's data set is elided, and its prediction only drawn); the slide's own
    score, the negative distance, is the next property's.
    """
    x, y, xq, sigma = case.x, case.y, case.x_query, case.sigma
    c = math.sqrt(math.sqrt(2.0)) / sigma
    q = c * torch.stack([xq, torch.ones_like(xq)], dim=-1)[None]  # (1, t_q, 2)
    k = c * torch.stack([2 * x, -x.square()], dim=-1)[None]  # (1, n, 2)
    out = ctx.attention(q, k, y[None, :, None]).output[0, :, 0]  # (1, t_q, 1) -> (t_q,)
    predicted = _nadaraya_watson(x, y, xq, -(xq[:, None] - x[None, :]).square() / sigma**2)
    # The scores are formed from terms as large as (2|x x_i| + x_i^2) / sigma^2, which
    # cancel down to (2 x x_i - x_i^2) / sigma^2: their rounding grows with those terms.
    terms = ((2 * xq[:, None] * x[None, :]).abs() + x.square()[None, :]).amax().item() / sigma**2
    _assert_prediction(ctx, out, predicted, y, 4 * (1 + terms) * y.abs().max().item(),
                       "attention with q = c[x, 1], k_i = c[2x_i, -x_i^2], v_i = y_i")


@claim_property("attention.nadaraya-watson")
@example(case=SLIDE_CASE)
@given(case=regression_cases())
def kernel_regression_with_the_slides_negative_distance_is_attention(ctx: Context, case) -> None:
    """The slide's score ``f(x, x_i) = -|x - x_i|``: ``y_hat(x) = sum_i softmax_i(-|x - x_l|) y_i``.

    A dot product of separate features of ``x`` and ``x_i`` cannot form ``|x - x_i|``, so
    each query gets its own batch element with query ``q = [1, 1, 1, 1]`` and keys
    ``k_i = -|x - x_i| / 2 [1, 1, 1, 1]`` (``d_k = 4``: ``q . k_i / sqrt(4) = -|x - x_i|``;
    at ``d_k = 1`` the scale would be 1 and a missing or wrong scale invisible) and values
    ``v_i = y_i``. The output must equal the Nadaraya-Watson prediction with this kernel and
    lie in ``[min y, max y]``. The example is the slide's visible data,
    ``(1.36, 1.79), (3.40, -1.77), (6.05, -2.17)`` and ``x = 4.25`` (the rest of its data
    set is elided).
    """
    x, y, xq = case.x, case.y, case.x_query
    t_q, n = xq.shape[0], x.shape[0]
    distances = (xq[:, None] - x[None, :]).abs()  # (t_q, n)
    q = torch.ones(t_q, 1, 4, dtype=torch.float64)  # one batch element per query point
    k = (-distances / 2)[:, :, None].expand(t_q, n, 4)  # (t_q, n) -> (t_q, n, 4)
    out = ctx.attention(q, k, y.expand(t_q, n)[:, :, None]).output[:, 0, 0]  # (t_q, 1, 1) -> (t_q,)
    _assert_prediction(ctx, out, _nadaraya_watson(x, y, xq, -distances), y,
                       4 * (1 + distances.max().item()) * y.abs().max().item(),
                       "attention with q = [1, 1, 1, 1], k_i = -|x - x_i| / 2 [1, 1, 1, 1], v_i = y_i")
