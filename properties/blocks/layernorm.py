"""Properties of layer normalisation (``spec/blocks/layernorm.md``).

Expected values are the formula written out here in float64 (mean, biased variance,
``eps`` inside the square root); invariances compare the implementation with itself.
Inputs are drawn per token with a spread of at least 0.1, except where the claim is about a
constant token. ``eps`` is drawn (:func:`~.strategies.epsilons`: 1e-5, PyTorch's default,
what examples shrink to, up to 1/2), so that an implementation that ignores the ``eps`` it is
given fails; the formula's and the variance's explicit examples pair ``eps = 10^-2`` with a
token of variance ``1.25 10^-2``, where ``1e-5`` in its place moves the output by a third.
"""

from __future__ import annotations

import math

import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property

from . import strategies as sf

EPS = sf.DEFAULT_EPS
#: Roundings of a token's mean allowed on CUDA, where the reduction kernels multiply the sum by
#: a rounded ``1/d`` (see :func:`cuda_mean_rounding`); the CPU divides and gets the mean exactly.
CUDA_MEAN_ROUNDINGS = 2


def layer_norm_formula(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """``gamma (x - mu) / sqrt(var + eps) + beta`` per token, ``var`` divided by ``d`` (float64)."""
    mu = x.mean(-1, keepdim=True)  # (..., 1)
    var = ((x - mu) ** 2).sum(-1, keepdim=True) / x.shape[-1]  # (..., 1)
    return gamma * (x - mu) / (var + eps).sqrt() + beta


@st.composite
def token_batches(draw: st.DrawFn, min_d: int = 2, max_d: int = 8) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``x (B, t, d)`` whose tokens each have a spread >= 0.1, and ``gamma``, ``beta`` ``(d,)``; one example
    in :data:`~.strategies.REALISTIC_ONE_IN` with batch 3 or 4, up to 64 tokens of width up to 64."""
    if sf.realistic(draw):
        b, t, d = draw(sf.dimension(3, 4)), draw(sf.dimension(5, 64)), draw(sf.dimension(max(min_d, 9), 64))
    else:
        b, t, d = draw(sf.dimension(1, 2)), draw(sf.dimension(1, 4)), draw(sf.dimension(min_d, max_d))
    x = draw(sf.tensors((b, t, d)))
    assume(bool((x.std(-1, unbiased=False) >= 0.1).all()))
    return x, draw(sf.tensors((d,), 2.0)), draw(sf.tensors((d,), 2.0))


def small_spread_case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One token ``(0, 0.1, 0.2, 0.3)`` (biased variance ``1.25 10^-2``), ``gamma = 1``, ``beta = 0``: with
    ``eps = 10^-2`` it normalises with ``1/sqrt(0.0225) = 6.7``, with ``eps = 10^-5`` in its place ``8.9``."""
    x = torch.tensor([[[0.0, 0.1, 0.2, 0.3]]], dtype=torch.float64)  # (1, 1, 4)
    return x, torch.ones(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)


#: ``eps`` of the explicit examples: as large as the variance of :func:`small_spread_case`.
VISIBLE_EPS = 1e-2


def worst(err: torch.Tensor, bound: torch.Tensor, bad: torch.Tensor) -> tuple[int, ...]:
    """The index of the entry of ``bad`` whose error ``err`` exceeds its ``bound`` the most."""
    return tuple(int(i) for i in torch.unravel_index(torch.where(bad, err - bound, -1.0).argmax(), err.shape))

@claim_property("layernorm.formula", needs=("layer_norm",))
@given(case=token_batches(), eps=sf.epsilons())
@example(case=(torch.tensor([[[1.0, 3.0]]], dtype=torch.float64), torch.ones(2, dtype=torch.float64),
               torch.zeros(2, dtype=torch.float64)), eps=EPS)
@example(case=small_spread_case(), eps=VISIBLE_EPS)  # an eps fixed in the implementation is caught by construction
def layer_norm_is_the_formula_with_the_biased_variance_and_eps_inside_the_root(ctx: Context, case, eps) -> None:
    """``gamma (x - mu) / sqrt(sigma^2 + eps) + beta`` with ``sigma^2 = mean((x - mu)^2)`` over each token's features,
    for the ``eps`` given."""
    x, gamma, beta = case
    ctx.assert_close(ctx.layer_norm(x, gamma, beta, eps=eps), layer_norm_formula(x, gamma, beta, eps),
                     f"LayerNorm(x) with eps = {eps:g}", scale=4)


#: How many roundings of a token's mean (in the accumulating dtype) a LayerNorm may carry into ``x - mu``: a
#: two-pass float32 LayerNorm (``torch.nn.functional.layer_norm`` on the CPU) carries under 2, measured over
#: thousands of tokens of width 2 to 64; a one-pass variance ``E[x^2] - E[x]^2`` carries thousands.
MEAN_ROUNDINGS = 4


@st.composite
def offset_tokens(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``x (B, t, d)`` whose tokens share a large mean (``|mu|`` from 100 to 1000, either sign) and a small spread
    (a standard deviation from 0.01 to 0.1), so that ``|mu| / sigma`` reaches ``10^5``; ``gamma``, ``beta`` ``(d,)``."""
    z, gamma, beta = draw(token_batches())
    z = (z - z.mean(-1, keepdim=True)) / z.std(-1, unbiased=False, keepdim=True)  # (B, t, d): mean 0, spread 1
    mu = draw(st.floats(100.0, 1000.0), label="mean") * draw(st.sampled_from([1.0, -1.0]), label="sign")
    sigma = draw(st.floats(0.01, 0.1), label="spread")
    return mu + sigma * z, gamma, beta


@claim_property("layernorm.formula", needs=("layer_norm",), dtypes=("float32", "float64"))
@given(case=offset_tokens())
@example(case=(1000.0 + 0.01 * torch.tensor([[[-1.0, 1.0, -1.0, 1.0]]], dtype=torch.float64),
               torch.ones(4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)))
def layer_norm_is_the_formula_for_tokens_far_from_zero(ctx: Context, case) -> None:
    """The formula for tokens with a large mean and a small spread, from the inputs as the dtype holds them: each
    feature within the dtype's tolerance plus :data:`MEAN_ROUNDINGS` roundings of ``|mu|`` in the accumulating
    dtype, magnified by ``|gamma| / sqrt(sigma^2 + eps)`` (the error a correct two-pass LayerNorm's mean leaves).
    A variance taken in one pass, ``E[x^2] - E[x]^2``, loses ``sigma^2`` to the rounding of ``mu^2``: off by 2 on a
    float32 token of mean 1000 and spread 0.01."""
    x, gamma, beta = (t.to(ctx.dtype).to(torch.float64) for t in case)  # as the dtype holds them
    expected = layer_norm_formula(x, gamma, beta, EPS)  # (B, t, d)
    out = ctx.layer_norm(x, gamma, beta, eps=EPS)
    mu = x.mean(-1, keepdim=True)  # (B, t, 1)
    var = (x - mu).square().mean(-1, keepdim=True)  # (B, t, 1)
    accumulating = torch.finfo(torch.promote_types(ctx.dtype, torch.float32)).eps
    atol, rtol = 4 * ctx.tol.atol, 4 * ctx.tol.rtol
    rounding = MEAN_ROUNDINGS * accumulating * gamma.abs() * mu.abs() / (var + EPS).sqrt()  # (B, t, d)
    bound = atol + rtol * expected.abs() + rounding
    err = (out - expected).abs()
    bad = ~(err <= bound)  # NaN is bad
    if bad.any():
        idx = worst(err, bound, bad)
        raise AssertionError(
            f"LayerNorm of a token of mean {float(mu[idx[:-1]]):.6g} and spread {float(var[idx[:-1]].sqrt()):.3g}: "
            f"{int(bad.sum())} of {bad.numel()} entries out of tolerance; worst at {idx}: got {float(out[idx]):.9g}, "
            f"expected {float(expected[idx]):.9g} (allowed error {float(bound[idx]):.3g}: atol {atol:g} + rtol "
            f"{rtol:g} x |expected| + {MEAN_ROUNDINGS} roundings of the mean {float(rounding[idx]):.3g})")


@claim_property("layernorm.per-token", needs=("layer_norm",))
@given(case=token_batches(), data=st.data(), eps=sf.epsilons())
def each_token_is_normalised_on_its_own(ctx: Context, case, data, eps) -> None:
    """Replacing every other token (other positions, other sequences) leaves a token's output unchanged."""
    x, gamma, beta = case
    b, t, d = x.shape
    keep = (data.draw(st.integers(0, b - 1), label="sequence"), data.draw(st.integers(0, t - 1), label="position"))
    other = data.draw(sf.tensors((b, t, d), 10.0), label="other tokens")
    x2 = other.clone()
    x2[keep] = x[keep]
    out, out2 = ctx.layer_norm(x, gamma, beta, eps=eps), ctx.layer_norm(x2, gamma, beta, eps=eps)
    ctx.assert_close(out2[keep], out[keep], f"output of token {keep} after changing every other token", scale=4)


@claim_property("layernorm.standardises", needs=("layer_norm",))
@given(case=token_batches(), eps=sf.epsilons())
@example(case=small_spread_case(), eps=VISIBLE_EPS)  # variance 0.56 here; 1.0 with eps = 1e-5 in its place
def before_gamma_and_beta_each_token_has_mean_zero_and_variance_below_one(ctx: Context, case, eps) -> None:
    """Corrected: with ``gamma = 1, beta = 0`` each token has mean 0 and biased variance ``sigma^2 / (sigma^2 + eps)``,
    for the ``eps`` given."""
    x, _, _ = case
    d = x.shape[-1]
    out = ctx.layer_norm(x, torch.ones(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64), eps=eps)
    var = x.var(-1, unbiased=False)  # (B, t)
    ctx.assert_close(out.mean(-1), torch.zeros_like(var), "mean of each normalised token", scale=4)
    ctx.assert_close(out.var(-1, unbiased=False), var / (var + eps), f"variance of each normalised token (eps = {eps:g})",
                     scale=8)


def cuda_mean_rounding(ctx: Context, value: float, gamma: torch.Tensor) -> torch.Tensor | None:
    """Per feature, the error a rounded mean leaves in the LayerNorm of a constant token; None where no
    rounded mean is allowed.

    On CUDA, PyTorch's reductions and its LayerNorm kernel compute a mean as the sum times a
    rounded ``1/d``, in float32 for float32 and half-precision inputs (measured on an H100: the
    mean of seven 1.375 is 1.37500006 in float32); XLA does the same on every device (63 features
    of 1.125 have mean 1.12500012 in float32). ``x - mu`` is then a rounding of the mean instead
    of 0, and ``1/sqrt(eps)`` magnifies it to ``gamma |x - mu| / sqrt(eps)``: 5e-5 at 1.375,
    beyond float32's tolerance. A legitimate kernel difference, so on CUDA, and on any device for
    an implementation that declares ``layer_norm_mean = {"rounded-reciprocal"}``, each feature may
    be off by :data:`CUDA_MEAN_ROUNDINGS` roundings of ``|value|`` in the accumulating dtype times
    that magnification. Otherwise the dtype's tolerance alone.
    """
    if ctx.device.type != "cuda" and not ctx.supports("layer_norm_mean", "rounded-reciprocal"):
        return None
    accumulating = torch.finfo(torch.promote_types(ctx.dtype, torch.float32)).eps
    return CUDA_MEAN_ROUNDINGS * accumulating * abs(value) * gamma / math.sqrt(EPS)


@claim_property("layernorm.standardises", needs=("layer_norm",))
# d is drawn freely, not from the shape plans: a mean rounded as on CUDA shows only at some widths (7, 28, ...),
# none of which the plans' widths need be.
@given(d=st.integers(2, 64), eighths=st.integers(-800, 800), b=sf.dimension(1, 3), seed=sf.seeds())
@example(d=4, eighths=8, b=1, seed=0)
@example(d=7, eighths=11, b=1, seed=0)  # seven features of 1.375: a mean rounded as on CUDA is 5.4e-5 off
def a_constant_token_normalises_to_beta_the_edge_case(ctx: Context, d, eighths, b, seed) -> None:
    """The edge case, stated: a token whose features are all equal has ``sigma = 0``; it normalises to
    ``0 / sqrt(eps) = 0`` before ``gamma`` and ``beta``, so the output is ``beta`` (variance 0, not 1).
    Values are multiples of 1/8 up to 100, so that every dtype holds the token's mean exactly (a
    mean rounded in float32 leaves ``x - mu`` of 1e-7, which ``1/sqrt(eps)`` magnifies to 3e-5); on
    CUDA, whose kernels round the mean itself, and for an implementation that declares such a mean
    (``layer_norm_mean``), each feature may be off by that rounding (:func:`cuda_mean_rounding`)."""
    value = eighths / 8
    g = torch.Generator().manual_seed(seed)
    gamma = 0.5 + torch.rand(d, generator=g, dtype=torch.float64)  # (d,) in [0.5, 1.5]
    beta = torch.rand(d, generator=g, dtype=torch.float64) - 0.5  # (d,)
    x = torch.full((b, 1, d), value, dtype=torch.float64)  # constant tokens
    out = ctx.layer_norm(x, gamma, beta, eps=EPS)
    what = f"LayerNorm of a constant token (every feature {value:g})"
    rounding = cuda_mean_rounding(ctx, value, gamma)
    if rounding is None:  # no rounded mean allowed: the dtype's tolerance alone
        ctx.assert_close(out, beta.expand_as(out), what, scale=4)
        return
    atol, rtol = 4 * ctx.tol.atol, 4 * ctx.tol.rtol
    bound = atol + rtol * beta.abs() + rounding  # (d,)
    err = (out - beta).abs()  # (b, 1, d)
    bad = ~(err <= bound)  # NaN is bad
    if bad.any():
        idx = worst(err, bound, bad)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.numel()} entries out of tolerance; worst at {idx}: "
            f"got {float(out[idx]):.9g}, expected {float(beta[idx[-1]]):.9g} (allowed error "
            f"{float(bound[idx[-1]]):.3g}: atol {atol:g} + rtol {rtol:g} x |expected| + a rounded mean "
            f"{float(rounding[idx[-1]]):.3g})")


@claim_property("layernorm.formula", needs=("layer_norm",))
@given(case=token_batches(), data=st.data(), eps=sf.epsilons())
def gamma_scales_and_beta_shifts_each_feature_of_the_standardised_token(ctx: Context, case, data, eps) -> None:
    """A second check of ``gamma`` and ``beta``, without the formula: ``LN(x; gamma, beta) = gamma * LN(x; 1, 0)
    + beta`` feature by feature, and ``LN(x; gamma, beta_1) - LN(x; gamma, beta_2) = beta_1 - beta_2`` for
    every token, all from the implementation's own outputs."""
    x, gamma, beta = case
    d = x.shape[-1]
    other_beta = data.draw(sf.tensors((d,), 2.0), label="another beta")
    ones, zeros = torch.ones(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
    plain = ctx.layer_norm(x, ones, zeros, eps=eps)
    out = ctx.layer_norm(x, gamma, beta, eps=eps)
    ctx.assert_close(out, gamma * plain + beta, "LN(x; gamma, beta) vs gamma * LN(x; 1, 0) + beta", scale=8)
    shifted = ctx.layer_norm(x, gamma, other_beta, eps=eps)
    ctx.assert_close(out - shifted, (beta - other_beta).expand_as(out), "LN(x; gamma, beta) - LN(x; gamma, beta')",
                     scale=8)
