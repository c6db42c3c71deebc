"""Properties of cosine similarity and Euclidean distance (``spec/embeddings/similarity.md``).

Expected values are 000's formulas written out here in float64: ``a . b / (|a| |b|)`` and
``|a - b|``. Implementations are called through ``ctx.cosine_similarity`` on rows whose
norm is at least 0.1 (a zero vector is outside the formula's domain; what libraries do
there is the subject of ``similarity.zero-vector``, checked on the libraries themselves
with ``needs=()``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
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


@claim_property("similarity.unit-vectors", needs=NEEDS)
@given(case=unit_pairs())
@example(case=(rows([0.6, 0.8], [1.0, 0.0]), rows([0.0, 1.0], [-1.0, 0.0])))
def for_unit_vectors_cosine_is_the_dot_product_and_fixes_the_distance(ctx: Context, case) -> None:
    """For ``|a| = |b| = 1``: ``cos(a, b) = a . b`` and ``|a - b|^2 = 2 - 2 cos(a, b)``."""
    a, b = case
    cos = ctx.cosine_similarity(a, b)
    ctx.assert_close(cos, (a * b).sum(-1), "cos(a, b) against a . b for unit vectors", scale=4)
    ctx.assert_close(2 - 2 * cos, distance_formula(a, b).square(), "2 - 2 cos(a, b) against |a - b|^2", scale=8)


@claim_property("similarity.magnitude", needs=NEEDS)
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
    ctx.assert_close(distance_formula(s * a, s * b), s * distance_formula(a, b), f"|{s:.3g} a - {s:.3g} b|", scale=8)


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


@claim_property("similarity.zero-vector", needs=(), dtypes=("float64",))
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
