"""Properties of rotary position embeddings (``spec/positions/rope.md``).

Expected values come from the rotation matrices themselves, built here in float64 (one
``d x d`` block matrix ``R_{Theta,m}`` per position, multiplied on the left, as 003
writes ``q_m = R_{Theta,m} q``), never from the reference module. Implementations are
called through ``ctx.rotary(x, positions, pairing=...)``, with a pairing the implementation
declares (the ``pairing`` convention); the properties that compare both pairings are not
applicable to an implementation that declares one.

Tolerances: besides the dtype's ``rtol``/``atol``, a rotated entry may carry the error of
its angle, ``ANGLE_ULPS * eps * (m + 1) * |x|``, where ``eps`` is the dtype's machine
epsilon but never coarser than float32's (libraries compute the angles ``m theta_i`` in
float32 whatever the dtype; an angle computed in half precision would be off by radians).
In float64 this allowance is below ``1e-9`` for every position drawn here.

Properties with ``needs=()`` compute RoPE themselves the way the libraries do in float32
(:func:`float32_angles`), to show where the relative property degrades.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property

from . import strategies as sf

PAIRINGS = ("interleaved", "half")
#: Multiples of eps by which an angle ``m theta_i`` may be off, per unit of position
#: (measured: at most 0.9 for float32 angles in transformers and rotary-embedding-torch).
ANGLE_ULPS = 8.0
#: The largest position the ordinary properties draw; the extrapolation ones go further.
MAX_POSITION = 2048
#: Offsets of the extrapolation property: up to 2^20 (about a million positions).
MAX_SHIFT = 2**20
#: The as-written reading of "the relative property holds at any position": score error
#: at most this fraction of ``|q| |k|`` (a hundred times the float32 tolerance).
RELATIVE_SLACK = 1e-3
#: The dtype of :func:`float32_angles` (the libraries'; the tests set others to show the cause).
ANGLE_DTYPE = torch.float32


# -- the mathematics, in float64 ----------------------------------------------------------


def pair_indices(d: int, pairing: str) -> list[tuple[int, int]]:
    """The features ``(a, b)`` of pair ``i = 0..d/2-1``: ``(2i, 2i+1)`` or ``(i, i + d/2)``."""
    half = d // 2
    return [(2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + half) for i in range(half)]


def rotation_matrix(m: float, d: int, pairing: str, base: float = 10000.0) -> torch.Tensor:
    """``R_{Theta,m}`` ``(d, d)``: pair ``i`` rotated by ``m base^(-2i/d)``, counter-clockwise."""
    r = torch.zeros(d, d, dtype=torch.float64)
    for i, (a, b) in enumerate(pair_indices(d, pairing)):
        angle = m * base ** (-2.0 * i / d)
        c, s = math.cos(angle), math.sin(angle)
        r[a, a], r[a, b], r[b, a], r[b, b] = c, -s, s, c
    return r


def _pairs_and_angles(d: int, pairing: str, base: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The features ``a (d/2,)`` and ``b (d/2,)`` of each pair and its frequency ``theta_i = base^(-2i/d)``."""
    idx = torch.tensor(pair_indices(d, pairing), dtype=torch.int64).reshape(-1, 2)  # (d/2, 2)
    theta = torch.tensor([base ** (-2.0 * i / d) for i in range(d // 2)], dtype=torch.float64)  # (d/2,)
    return idx[:, 0], idx[:, 1], theta


def rotate_formula(x: torch.Tensor, positions: torch.Tensor, pairing: str, base: float = 10000.0) -> torch.Tensor:
    """``R_{Theta,p_j} x_j`` for every row ``j`` of ``x (B, t, d)``, the entries of :func:`rotation_matrix` written
    out pair by pair: ``(x_a, x_b) -> (c x_a - s x_b, s x_a + c x_b)`` with ``c, s = cos, sin(p_j theta_i)``."""
    a, b, theta = _pairs_and_angles(x.shape[-1], pairing, base)
    angle = positions.to(torch.float64)[:, None] * theta  # (t, d/2)
    c, s = angle.cos(), angle.sin()
    out = x.clone()
    out[..., a] = c * x[..., a] - s * x[..., b]  # (B, t, d/2)
    out[..., b] = s * x[..., a] + c * x[..., b]
    return out


def score_formula(q: torch.Tensor, k: torch.Tensor, pq: torch.Tensor, pk: torch.Tensor, pairing: str) -> torch.Tensor:
    """``S_ij = q_i^T R_{pk_j - pq_i} k_j`` ``(B, t_q, t_k)``: the score through the offset alone. Per pair,
    ``q^T R_r k = cos(r theta) (q_a k_a + q_b k_b) + sin(r theta) (q_b k_a - q_a k_b)``."""
    a, b, theta = _pairs_and_angles(q.shape[-1], pairing, 10000.0)
    offset = (pk[None, :] - pq[:, None]).to(torch.float64)  # (t_q, t_k)
    angle = offset[..., None] * theta  # (t_q, t_k, d/2)
    qa, qb, ka, kb = q[..., a], q[..., b], k[..., a], k[..., b]  # (B, t, d/2)
    same = torch.einsum("bip,bjp,ijp->bij", qa, ka, angle.cos()) + torch.einsum("bip,bjp,ijp->bij", qb, kb, angle.cos())
    cross = torch.einsum("bip,bjp,ijp->bij", qb, ka, angle.sin()) - torch.einsum("bip,bjp,ijp->bij", qa, kb, angle.sin())
    return same + cross


def half_from_interleaved_permutation(d: int) -> torch.Tensor:
    """``P`` with ``x[..., P]`` putting features ``(i, i + d/2)`` at ``(2i, 2i + 1)``."""
    return torch.tensor([f for i in range(d // 2) for f in (i, i + d // 2)], dtype=torch.long)


def float32_angles(positions: torch.Tensor, d: int, base: float = 10000.0) -> torch.Tensor:
    """The angles as transformers and rotary-embedding-torch compute them, ``(t, d/2)``: frequencies, positions
    and products all in float32 (in ``ANGLE_DTYPE``, which the tests change to show the cause)."""
    theta = 1.0 / (base ** (torch.arange(0, d, 2, dtype=ANGLE_DTYPE) / d))  # (d/2,)
    return positions.to(ANGLE_DTYPE)[:, None] * theta[None, :]  # (t, 1) * (1, d/2) -> (t, d/2)


def float32_rope(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Interleaved RoPE of ``x (t, d)`` with float32 angles, returned as float64."""
    angles = float32_angles(positions, x.shape[-1])  # (t, d/2)
    c, s = angles.cos().double(), angles.sin().double()
    a, b = x[..., 0::2], x[..., 1::2]  # (t, d/2) each
    return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)  # (t, d/2, 2) -> (t, d)




# -- tolerances ---------------------------------------------------------------------------


def angle_eps(ctx: Context) -> float:
    """The machine epsilon angles are held to: the dtype's, never coarser than float32's."""
    return min(torch.finfo(ctx.dtype).eps, torch.finfo(torch.float32).eps)


def assert_within(actual: torch.Tensor, expected: torch.Tensor, bound: torch.Tensor, what: str) -> None:
    """``|actual - expected| <= bound`` elementwise, with the worst entry in the message."""
    err = (actual - expected).abs()
    bad = ~(err <= bound)  # NaN counts as bad
    if bad.any():
        idx = tuple(int(i) for i in torch.unravel_index(torch.where(bad, err - bound, -1.0).nan_to_num(1e300)
                                                        .argmax(), err.shape))
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.numel()} entries out of tolerance; worst at {idx}: "
                             f"got {float(actual[idx]):.9g}, expected {float(expected[idx]):.9g} "
                             f"(allowed error {float(bound[idx]):.3g})")


def rotation_bound(ctx: Context, expected: torch.Tensor, x: torch.Tensor, positions: torch.Tensor,
                   calls: int = 1) -> torch.Tensor:
    """Allowed error of a rotated ``x (B, t, d)``: the dtype's tolerance plus angle error ``(m + 1) eps |x_j|``."""
    norm = x.norm(dim=-1, keepdim=True)  # (B, t, 1)
    angle = ANGLE_ULPS * angle_eps(ctx) * (positions.to(torch.float64) + 1)[None, :, None]  # (1, t, 1)
    return calls * (ctx.tol.atol + ctx.tol.rtol * (expected.abs() + norm)) + angle * norm


def score_bound(ctx: Context, q: torch.Tensor, k: torch.Tensor, pq: torch.Tensor, pk: torch.Tensor) -> torch.Tensor:
    """Allowed error ``(B, t_q, t_k)`` of ``rot(q)_i . rot(k)_j``: each factor's error times the other's norm."""
    nq, nk = q.norm(dim=-1)[:, :, None], k.norm(dim=-1)[:, None, :]  # (B, t_q, 1), (B, 1, t_k)
    eps = ANGLE_ULPS * angle_eps(ctx)
    pq, pk = pq.to(torch.float64), pk.to(torch.float64)
    err_q = ctx.tol.atol * math.sqrt(q.shape[-1]) + (2 * ctx.tol.rtol + eps * (pq + 1)[None, :, None]) * nq
    err_k = ctx.tol.atol * math.sqrt(k.shape[-1]) + (2 * ctx.tol.rtol + eps * (pk + 1)[None, None, :]) * nk
    return err_q * nk + nq * err_k + err_q * err_k


# -- strategies ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RopeCase:
    """Queries ``q (B, t_q, d)`` at ``pq (t_q,)``, keys ``k (B, t_k, d)`` at ``pk (t_k,)``, a pairing and a shift."""

    q: torch.Tensor
    k: torch.Tensor
    pq: torch.Tensor
    pk: torch.Tensor
    pairing: str
    shift: int = 0


@st.composite
def rope_cases(draw: st.DrawFn, *, max_d: int = 16, max_position: int = MAX_POSITION, max_shift: int = MAX_POSITION,
               min_d: int = 2) -> RopeCase:
    """A :class:`RopeCase` with up to 5 queries and keys, positions up to ``max_position``; one example in three
    with batch 3 or 4, width up to 64 and up to 64 queries and keys."""
    if draw(sf.large_sizes(3)):  # the sizes models use: batch 3-4, d and t up to 64
        b, d, min_t, max_t = draw(sf.dimension(3, 4)), 2 * draw(sf.dimension(max(min_d, 18) // 2, 32)), 6, 64
    else:
        b, d, min_t, max_t = draw(sf.dimension(1, 2)), 2 * draw(sf.dimension((max(min_d, 2) + 1) // 2, max_d // 2)), 1, 5
    pq = draw(sf.positions(min_t=min_t, max_t=max_t, max_position=max_position))
    pk = draw(sf.positions(min_t=min_t, max_t=max_t, max_position=max_position))
    q, k = draw(sf.tensors((b, pq.shape[0], d))), draw(sf.tensors((b, pk.shape[0], d)))
    return RopeCase(q, k, pq, pk, draw(st.sampled_from(PAIRINGS)), draw(st.integers(0, max_shift)))


def with_declared_pairing(ctx: Context, case: RopeCase) -> RopeCase:
    """``case`` with its pairing replaced by one the implementation declares, if it declares the drawn one not."""
    pairing = sf.within(ctx, "pairing", case.pairing, PAIRINGS)
    return case if pairing == case.pairing else dataclasses.replace(case, pairing=pairing)


def _t(*rows: list[float]) -> torch.Tensor:
    return torch.tensor([list(rows)], dtype=torch.float64)  # (1, t, d)


def _p(*ps: int) -> torch.Tensor:
    return torch.tensor(ps, dtype=torch.int64)


#: d = 2, q = (1, 0) at position 1, k = (0, 1) at position 0: q_1 . k_0 = sin 1, q_0 . k_1 = -sin 1.
ONE_PAIR = RopeCase(_t([1.0, 0.0]), _t([0.0, 1.0]), _p(1), _p(0), "interleaved", 0)


def _scores(ctx: Context, case: RopeCase, shift: int = 0) -> torch.Tensor:
    """``rot(q)_i . rot(k)_j`` ``(B, t_q, t_k)`` from the implementation, every position shifted by ``shift``."""
    rq = ctx.rotary(case.q, case.pq + shift, pairing=case.pairing)
    rk = ctx.rotary(case.k, case.pk + shift, pairing=case.pairing)
    return rq @ rk.transpose(-2, -1)


# -- rope.rotation ------------------------------------------------------------------------


@claim_property("rope.rotation", needs=("rotary",))
@given(case=rope_cases(), base=st.sampled_from([10000.0, 500000.0, 10.0]))
@example(case=ONE_PAIR, base=10000.0)  # (1, 0) at position 1 -> (cos 1, sin 1) = (0.5403, 0.8415)
def rotary_applies_the_rotation_matrix_of_each_rows_position(ctx: Context, case, base) -> None:
    """``rotary(x, p)_j = R_{Theta,p_j} x_j`` with pair ``i`` rotated by ``p_j base^(-2i/d)``, for both pairings and any base."""
    case = with_declared_pairing(ctx, case)
    base = sf.rope_base(ctx, base)
    actual = ctx.rotary(case.q, case.pq, pairing=case.pairing, base=base)
    expected = rotate_formula(case.q, case.pq, case.pairing, base)
    assert_within(actual, expected, rotation_bound(ctx, expected, case.q, case.pq),
                  f"rotated x vs R_(Theta,m) x ({case.pairing} pairs, base {base:g})")


def unit_pairs(d: int, pairing: str) -> torch.Tensor:
    """``(1, 1, d)``: every pair ``(x_a, x_b)`` of ``pairing`` set to ``(1, 0)``."""
    x = torch.zeros(1, 1, d, dtype=torch.float64)
    for a, _ in pair_indices(d, pairing):
        x[0, 0, a] = 1.0
    return x


@claim_property("rope.rotation", needs=("rotary",))
@given(d=sf.even_widths(64), pairing=st.sampled_from(PAIRINGS),
       base=st.one_of(st.sampled_from([10000.0, 500000.0, 10.0]), st.floats(2.0, 1e6)))
@example(d=8, pairing="interleaved", base=500000.0)
def at_position_one_pair_i_turns_by_base_to_the_minus_2i_over_d(ctx: Context, d, pairing, base) -> None:
    """A second check of the base, read off the rotation itself: the pairs of a vector of unit pairs
    ``(1, 0)`` turned at position 1 have angles ``theta_i = atan2(x_b, x_a) = base^(-2i/d)`` (all in
    ``(0, 1]``, so the angle is read without wrapping)."""
    pairing, base = sf.within(ctx, "pairing", pairing, PAIRINGS), sf.rope_base(ctx, base)
    out = ctx.rotary(unit_pairs(d, pairing), torch.tensor([1]), pairing=pairing, base=base)[0, 0]
    pairs = pair_indices(d, pairing)
    angles = torch.stack([torch.atan2(out[b], out[a]) for a, b in pairs])  # (d/2,)
    expected = torch.tensor([base ** (-2.0 * i / d) for i in range(d // 2)], dtype=torch.float64)
    bound = torch.full_like(expected, 2 * ANGLE_ULPS * angle_eps(ctx) + 4 * (ctx.tol.rtol + ctx.tol.atol))
    assert_within(angles, expected, bound, f"angles of the {d // 2} pairs at position 1 with base {base:g}")


@claim_property("rope.rotation", needs=("rotary",))
@given(case=rope_cases(max_position=MAX_POSITION // 2))
def rotating_by_m_then_by_n_is_rotating_by_m_plus_n(ctx: Context, case) -> None:
    """Angles proportional to the position: ``R_n R_m = R_{m+n}``, and position 0 leaves ``x`` unchanged."""
    case = with_declared_pairing(ctx, case)
    m, n = case.pq, case.pq.flip(0)  # two position vectors of the same length
    twice = ctx.rotary(ctx.rotary(case.q, m, pairing=case.pairing), n, pairing=case.pairing)
    once = ctx.rotary(case.q, m + n, pairing=case.pairing)
    assert_within(twice, once, 3 * rotation_bound(ctx, once, case.q, m + n), "rotary(rotary(x, m), n) vs rotary(x, m + n)")
    zero = ctx.rotary(case.q, torch.zeros_like(m), pairing=case.pairing)
    assert_within(zero, case.q, rotation_bound(ctx, case.q, case.q, torch.zeros_like(m)), "rotary(x, 0) vs x")


# -- rope.norm-preserving -----------------------------------------------------------------


@claim_property("rope.norm-preserving", needs=("rotary",))
@given(case=rope_cases())
def rotary_keeps_every_pairs_norm_and_dot_products_at_one_position(ctx: Context, case) -> None:
    """``|rot(x)_pair| = |x_pair|`` for every feature pair, and ``rot(q, m) . rot(k, m) = q . k`` (orthogonality)."""
    case = with_declared_pairing(ctx, case)
    rq = ctx.rotary(case.q, case.pq, pairing=case.pairing)
    d = case.q.shape[-1]
    idx = torch.tensor(pair_indices(d, case.pairing))  # (d/2, 2)
    pair_norm = lambda x: x[..., idx].norm(dim=-1)  # noqa: E731 - (B, t, d/2)
    bound = rotation_bound(ctx, pair_norm(case.q), case.q, case.pq)
    assert_within(pair_norm(rq), pair_norm(case.q), bound, f"norms of the {case.pairing} feature pairs")
    k = case.k[:, torch.arange(case.q.shape[1]) % case.k.shape[1]]  # (B, t_q, d): a key for every query row
    rk = ctx.rotary(k, case.pq, pairing=case.pairing)
    same = (rq * rk).sum(-1)  # (B, t_q): q_m . k_m for each row's own position
    assert_within(same, (case.q * k).sum(-1), score_bound(ctx, case.q, k, case.pq, case.pq).diagonal(dim1=1, dim2=2),
                  "rot(q, m) . rot(k, m) vs q . k")


# -- rope.relative-offset -----------------------------------------------------------------


@claim_property("rope.relative-offset", needs=("rotary",))
@given(case=rope_cases())
@example(case=RopeCase(_t([1.0, 0.0, 0.0, 1.0]), _t([0.0, 1.0, 1.0, 0.0]), _p(5), _p(3), "half", 1000))
def rotated_scores_depend_on_the_positions_only_through_their_offset(ctx: Context, case) -> None:
    """``rot(q, m) . rot(k, n) = q^T R_{n-m} k``, so shifting every position by ``s`` changes no score."""
    case = with_declared_pairing(ctx, case)
    scores = _scores(ctx, case)
    shifted = _scores(ctx, case, case.shift)
    expected = score_formula(case.q, case.k, case.pq, case.pk, case.pairing)
    assert_within(scores, expected, score_bound(ctx, case.q, case.k, case.pq, case.pk),
                  f"q_m . k_n vs q^T R_(n-m) k ({case.pairing} pairs)")
    assert_within(shifted, expected, score_bound(ctx, case.q, case.k, case.pq + case.shift, case.pk + case.shift),
                  f"q_(m+s) . k_(n+s) vs q^T R_(n-m) k, s={case.shift} ({case.pairing} pairs)")


# -- rope.signed-offset -------------------------------------------------------------------


def even_and_odd_parts(q: torch.Tensor, k: torch.Tensor, r: float, pairing: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``sum_i cos(r theta_i) q_i.k_i`` and ``sum_i sin(r theta_i) (q_b k_a - q_a k_b)_i`` for ``q, k (B, d)``."""
    d = q.shape[-1]
    even, odd = torch.zeros(q.shape[0], dtype=torch.float64), torch.zeros(q.shape[0], dtype=torch.float64)
    for i, (a, b) in enumerate(pair_indices(d, pairing)):
        angle = r * 10000.0 ** (-2.0 * i / d)
        even += math.cos(angle) * (q[:, a] * k[:, a] + q[:, b] * k[:, b])
        odd += math.sin(angle) * (q[:, b] * k[:, a] - q[:, a] * k[:, b])
    return even, odd


@claim_property("rope.signed-offset", needs=("rotary",))
@given(case=rope_cases())
@example(case=ONE_PAIR)
def swapping_the_positions_keeps_the_even_part_of_the_score_and_flips_the_odd_part(ctx: Context, case) -> None:
    """With ``r = n - m``: ``(s(m,n) + s(n,m))/2 = sum_i cos(r theta_i) q_i.k_i`` (a function of ``|r|``) and
    ``(s(m,n) - s(n,m))/2 = sum_i sin(r theta_i) (q_b k_a - q_a k_b)_i`` (odd in ``r``)."""
    case = with_declared_pairing(ctx, case)
    q, k = case.q[:, :1], case.k[:, :1]  # one query and one key
    m, n = case.pq[:1], case.pk[:1]
    one = RopeCase(q, k, m, n, case.pairing)
    forward = _scores(ctx, one)[:, 0, 0]  # (B,): q at m, k at n
    swapped = _scores(ctx, RopeCase(q, k, n, m, case.pairing))[:, 0, 0]  # (B,): q at n, k at m
    even, odd = even_and_odd_parts(q[:, 0], k[:, 0], float(n[0] - m[0]), case.pairing)
    bound = score_bound(ctx, q, k, torch.maximum(m, n), torch.maximum(m, n))[:, 0, 0]
    assert_within((forward + swapped) / 2, even, bound, f"even part of the score, r = {int(n[0] - m[0])}")
    assert_within((forward - swapped) / 2, odd, bound, f"odd part of the score, r = {int(n[0] - m[0])}")


@claim_property("rope.signed-offset", needs=("rotary",), expect="counterexample")
@given(case=rope_cases())
@example(case=ONE_PAIR)  # s(1, 0) = sin 1 = 0.841, s(0, 1) = -0.841
def rotated_scores_depend_only_on_the_distance_as_written(ctx: Context, case) -> None:
    """As written: the score depends on the distance ``|m - n|``, so swapping the two positions keeps it."""
    case = with_declared_pairing(ctx, case)
    q, k, m, n = case.q[:, :1], case.k[:, :1], case.pq[:1], case.pk[:1]  # one query at m, one key at n
    forward = _scores(ctx, RopeCase(q, k, m, n, case.pairing))  # (B, 1, 1)
    swapped = _scores(ctx, RopeCase(q, k, n, m, case.pairing))  # (B, 1, 1): q at n, k at m
    top = torch.maximum(m, n)
    assert_within(swapped, forward, 2 * score_bound(ctx, q, k, top, top),
                  f"q at {int(n[0])}, k at {int(m[0])} vs q at {int(m[0])}, k at {int(n[0])}")


# -- rope.pairing -------------------------------------------------------------------------


@claim_property("rope.pairing", needs=("rotary",))
@given(case=rope_cases())
def half_pairing_is_interleaved_pairing_under_a_fixed_feature_permutation(ctx: Context, case) -> None:
    """``half(x) = interleaved(x[..., P])[..., P^-1]`` with ``P = (0, d/2, 1, d/2 + 1, ...)``: the same rotation, re-laid."""
    ctx.require("pairing", "interleaved"), ctx.require("pairing", "half")  # both pairings are compared
    d = case.q.shape[-1]
    perm = half_from_interleaved_permutation(d)
    half = ctx.rotary(case.q, case.pq, pairing="half")
    interleaved = ctx.rotary(case.q[..., perm], case.pq, pairing="interleaved")
    assert_within(half, interleaved[..., perm.argsort()], 2 * rotation_bound(ctx, half, case.q, case.pq),
                  f"half(x) vs interleaved(x[P])[P^-1], d={d}")


@claim_property("rope.pairing", needs=("rotary",), expect="counterexample")
@given(case=rope_cases())
@example(case=RopeCase(_t([1.0, 0.0, 0.0, 0.0]), _t([1.0, 0.0, 0.0, 0.0]), _p(1), _p(1), "interleaved"))
def both_pairings_give_the_same_rotation_as_written(ctx: Context, case) -> None:
    """As written (003): ``R_{Theta,m}`` is one rotation, so the interleaved and half layouts agree on every input."""
    ctx.require("pairing", "interleaved"), ctx.require("pairing", "half")  # both pairings are compared
    half = ctx.rotary(case.q, case.pq, pairing="half")
    interleaved = ctx.rotary(case.q, case.pq, pairing="interleaved")
    assert_within(half, interleaved, 2 * rotation_bound(ctx, half, case.q, case.pq),
                  f"half vs interleaved pairs, d={case.q.shape[-1]}")


# -- rope.relative-attention --------------------------------------------------------------


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)  # (B, t_q, t_k)
    return weights @ v


@claim_property("rope.relative-attention", needs=("rotary",))
@given(case=rope_cases(), seed=sf.seeds())
@example(case=RopeCase(_t([1.0, 0.0], [0.0, 1.0]), _t([1.0, 0.0], [0.0, 1.0]), _p(0, 1), _p(0, 1), "interleaved",
                       4096), seed=0)
def attention_over_rotated_queries_and_keys_ignores_a_common_shift_of_positions(ctx: Context, case, seed) -> None:
    """``softmax(rot(Q) rot(K)^T / sqrt(d)) V`` equals the attention with scores ``q_i^T R_{n_j - m_i} k_j / sqrt(d)``,
    and shifting every position by ``s`` leaves it unchanged: positions enter only through offsets in the scores."""
    case = with_declared_pairing(ctx, case)
    generator = torch.Generator().manual_seed(seed)
    v = torch.rand(case.k.shape[0], case.k.shape[1], 3, generator=generator, dtype=torch.float64) * 6 - 3  # (B, t_k, 3)
    d = case.q.shape[-1]
    outputs = []
    for shift in (0, case.shift):
        rq = ctx.rotary(case.q, case.pq + shift, pairing=case.pairing)
        rk = ctx.rotary(case.k, case.pk + shift, pairing=case.pairing)
        outputs.append(_attention(rq, rk, v))
    weights = torch.softmax(score_formula(case.q, case.k, case.pq, case.pk, case.pairing) / math.sqrt(d), dim=-1)
    expected = weights @ v  # (B, t_q, 3)
    # a score error e moves the softmax weights by at most 2e (relative), the output by 2e max|v|
    err = score_bound(ctx, case.q, case.k, case.pq + case.shift, case.pk + case.shift).amax(-1, keepdim=True)
    bound = (2 * err / math.sqrt(d) * v.abs().amax()).expand_as(expected) + 1e-12
    assert_within(outputs[0], expected, bound, "attention with rotated q, k vs scores through R_(n-m)")
    assert_within(outputs[1], expected, bound, f"attention with every position shifted by {case.shift}")


# -- rope.float32-positions (the project's own claim) -------------------------------------------------------------------


@claim_property("rope.float32-positions", needs=("rotary",))
@given(case=rope_cases(max_position=64, max_shift=MAX_SHIFT))
@example(case=RopeCase(_t([1.0, 0.0, 0.0, 1.0]), _t([0.0, 1.0, 1.0, 0.0]), _p(1), _p(0), "interleaved", 2**20))
def the_relative_property_holds_at_large_offsets_to_the_dtypes_precision(ctx: Context, case) -> None:
    """At positions up to about a million, ``q_(m+s) . k_(n+s) = q^T R_{n-m} k`` within ``8 eps (m + n + 2) |q| |k|``
    (``eps`` of the dtype, at most float32's): the error may grow with the position, no faster than linearly."""
    case = with_declared_pairing(ctx, case)
    shifted = _scores(ctx, case, case.shift)
    expected = score_formula(case.q, case.k, case.pq, case.pk, case.pairing)
    assert_within(shifted, expected, score_bound(ctx, case.q, case.k, case.pq + case.shift, case.pk + case.shift),
                  f"q_(m+s) . k_(n+s) vs q^T R_(n-m) k at s={case.shift}")


@st.composite
def float32_cases(draw: st.DrawFn, *, min_exponent: int, max_exponent: int) -> tuple[torch.Tensor, torch.Tensor, int, int]:
    """Unit ``q, k (d,)``, a key position ``n`` in ``[2^e, 2^(e+1))`` and a query offset ``r`` in ``1..64``."""
    d = draw(sf.even_widths(128))
    q, k = draw(sf.tensors((d,))), draw(sf.tensors((d,)))
    if not (q.norm() > 0.1 and k.norm() > 0.1):
        q, k = torch.ones(d, dtype=torch.float64), torch.ones(d, dtype=torch.float64).flip(0).cumsum(0)
    e = draw(st.integers(min_exponent, max_exponent))
    return q / q.norm(), k / k.norm(), draw(st.integers(2**e, 2 ** (e + 1) - 1)), draw(st.integers(1, 64))


def float32_score_error(q: torch.Tensor, k: torch.Tensor, n: int, r: int) -> float:
    """``|s_f32(n + r, n) - q^T R_{-r} k|``: the float32-angle score of ``q`` at ``n + r``, ``k`` at ``n``."""
    rq = float32_rope(q[None], torch.tensor([n + r]))[0]
    rk = float32_rope(k[None], torch.tensor([n]))[0]
    expected = q @ rotation_matrix(-float(r), q.shape[0], "interleaved") @ k
    return abs(float(rq @ rk - expected))


@claim_property("rope.float32-positions", needs=(), about="library", dtypes=("float64",))
@given(case=float32_cases(min_exponent=0, max_exponent=14))
@example(case=(torch.tensor([0.0, 0.0, 1.0, 0.0], dtype=torch.float64), torch.tensor([0.0, 0.0, 1.0, 0.0],
               dtype=torch.float64), 2**14, 1))
def float32_angles_keep_the_relative_property_to_within_eps_times_the_position(ctx: Context, case) -> None:
    """With float32 angles (as the libraries compute them), the score of unit vectors at key position ``n < 2^15``
    and query position ``n + r`` is off by at most ``8 eps_32 (2n + r + 2)`` (``5e-4`` at ``n = 2^8``, ``0.06`` at
    ``2^15``; measured: ``4e-6`` at ``2^11``, ``3e-4`` to ``6e-4`` at ``2^18``). Positions stop at ``2^15``, where the
    bound is still small against a score in ``[-1, 1]``; beyond, the refutation below shows the drift."""
    q, k, n, r = case
    error = float32_score_error(q, k, n, r)
    bound = ANGLE_ULPS * torch.finfo(torch.float32).eps * (2 * n + r + 2) + 1e-12
    assert error <= bound, f"float32 angles at n={n}, r={r}, d={q.shape[0]}: score error {error:.3g} > {bound:.3g}"


@claim_property("rope.float32-positions", needs=(), about="library", expect="counterexample", dtypes=("float64",))
@given(case=float32_cases(min_exponent=20, max_exponent=27))
@example(case=(torch.tensor([1.0, 0.0], dtype=torch.float64), torch.tensor([1.0, 0.0], dtype=torch.float64),
               2**24, 1))  # float32(2^24 + 1) = 2^24: both positions get the same rotation, score 1 for cos 1
def float32_rope_keeps_the_relative_property_at_any_position_as_written(ctx: Context, case) -> None:
    """As written (003): RoPE extrapolates to any length, read as: the relative property holds at every position, in
    float32 as the libraries compute it, to within ``1e-3 |q| |k|``. Drawn: key positions ``2^20`` to ``2^28``."""
    q, k, n, r = case
    error = float32_score_error(q, k, n, r)
    assert error <= RELATIVE_SLACK, (f"float32 angles at n={n}, r={r}, d={q.shape[0]}: q_(n+r) . k_n is off by "
                                     f"{error:.3g} from q^T R_(-r) k (allowed {RELATIVE_SLACK:g})")
