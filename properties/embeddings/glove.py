"""Properties of GloVe: its objective, 002's code, the weighting function and the
co-occurrence counts (``spec/embeddings/glove.md``).

Expected values are written out here in float64: ``min(1, (x / x_max)^alpha)``, the
weighted least squares over the positive counts, and co-occurrence counts by a double
loop, and GloVe's AdaGrad epochs. Implementations are called through ``ctx.glove_weight``,
``ctx.glove_loss`` and ``ctx.glove_cooccurrence``. Properties with ``needs=()`` check the
documents' code (002's ``glove_loss``, transcribed below as printed and as corrected)
against the reference's loss.
"""

from __future__ import annotations

import math

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.reference.embeddings.glove import glove_loss

from . import strategies as sf
from ..conventions import under_one_of

NEEDS = ("glove_weight",)
F64 = torch.float64

#: 002's co-occurrence matrix ("GloVe, Co-occurrence Matrix"): king, queen, man, woman, royal.
MATRIX_002 = torch.tensor([
    [0, 30, 10, 5, 25],
    [30, 0, 5, 12, 28],
    [10, 5, 0, 15, 2],
    [5, 12, 15, 0, 3],
    [25, 28, 2, 3, 0],
], dtype=F64)


def weight_formula(x: torch.Tensor, x_max: float = sf.X_MAX, alpha: float = 0.75) -> torch.Tensor:
    """``f(x) = min(1, (x / x_max)^alpha)`` elementwise, float64."""
    return torch.minimum((x.to(F64) / x_max).pow(alpha), torch.ones((), dtype=F64))


# --- the weighting function -------------------------------------------------------------------


@claim_property("glove.weighting", needs=NEEDS)
@given(x=sf.cooccurrences(), x_max=st.sampled_from([100.0, 100.0, 10.0, 1.0, 1e4]),
       alpha=st.sampled_from([0.75, 0.75, 0.5, 1.0]))
@example(x=torch.tensor([0.0, 50.0, 100.0, 200.0], dtype=F64), x_max=100.0, alpha=0.75)
def the_glove_weight_is_min_of_one_and_x_over_x_max_to_the_alpha(ctx: Context, x, x_max, alpha) -> None:
    """``f(x) = min(1, (x / x_max)^alpha)``: 002's ``min(1.0, (x_ij / x_max) ** 0.75)``, with the paper's
    ``x_max = 100`` (002 never defines it); ``f(0) = 0``."""
    x = sf.fit_counts(x, ctx.dtype) if ctx.dtype == torch.float16 else x  # 1e6 is inf in float16; f is 1 there anyway
    scaled = {"x_max": x_max, "alpha": alpha}
    ctx.assert_close(ctx.glove_weight(x, **scaled), weight_formula(x, x_max, alpha), f"f(x) with {scaled}", scale=4)


@st.composite
def weightings(draw: st.DrawFn) -> tuple[float, float]:
    """``(x_max, alpha)``: the paper's ``(100, 3/4)`` and others, so that constants written into a loss show."""
    return (draw(st.sampled_from([100.0, 10.0, 1.0, 30.0, 1e4]), label="x_max"),
            draw(st.sampled_from([0.75, 0.5, 1.0, 0.25]), label="alpha"))


@st.composite
def count_ladders(draw: st.DrawFn, x_max: float = sf.X_MAX) -> torch.Tensor:
    """Distinct whole counts from 0 to ``10 x_max`` in increasing order (at least two), ``x_max`` and its
    neighbours among them often."""
    top = int(10 * x_max)
    near = sorted({0, 1, int(x_max) - 1, int(x_max), int(x_max) + 1, top})
    values = draw(st.sets(st.one_of(st.integers(0, top), st.sampled_from(near)), min_size=2, max_size=8))
    return torch.tensor(sorted(values), dtype=F64)


@st.composite
def weighted_ladders(draw: st.DrawFn) -> tuple[torch.Tensor, float, float]:
    """A :func:`count_ladders` ladder around a drawn ``x_max``, and ``(x_max, alpha)`` from :func:`weightings`."""
    x_max, alpha = draw(weightings())
    return draw(count_ladders(x_max), label="counts"), x_max, alpha


@claim_property("glove.frequent-pairs", needs=NEEDS)
@given(case=weighted_ladders())
@example(case=(torch.tensor([0.0, 1.0, 99.0, 100.0, 101.0, 1000.0], dtype=F64), 100.0, 0.75))
@example(case=(torch.tensor([0.0, 5.0, 9.0, 10.0, 11.0, 100.0], dtype=F64), 10.0, 0.5))
def the_weight_grows_with_the_count_up_to_x_max_and_then_stays_one(ctx: Context, case) -> None:
    """Corrected: ``f`` increases strictly from ``f(0) = 0`` up to ``f(x_max) = 1`` and stays 1 above, for the
    ``x_max`` and ``alpha`` passed: with the paper's 100, a pair seen 1000 times weighs no more than one seen
    100 times."""
    x, x_max, alpha = case
    weights = ctx.glove_weight(x, x_max=x_max, alpha=alpha)
    below = x <= x_max
    w, expected = weights[below], weight_formula(x[below], x_max, alpha)
    apart = expected[1:] - expected[:-1] > 10 * ctx.tol.atol  # steps the dtype under test can resolve
    assert bool((w[1:] > w[:-1])[apart].all()) and bool((w[1:] >= w[:-1] - ctx.tol.atol).all()), (
        f"f with x_max = {x_max:g}, alpha = {alpha:g} is not increasing on [0, x_max]: "
        f"{dict(zip(x[below].tolist(), w.tolist()))}"
    )
    ctx.assert_close(weights[x >= x_max], torch.ones(int((x >= x_max).sum()), dtype=F64),
                     f"f(x) for x >= x_max = {x_max:g} (alpha = {alpha:g})")
    if x[0] == 0:
        ctx.assert_close(weights[:1], torch.zeros(1, dtype=F64), "f(0)")


@claim_property("glove.frequent-pairs", needs=NEEDS, expect="counterexample")
@given(x=count_ladders())
@example(x=torch.tensor([100.0, 1000.0], dtype=F64))
def a_more_frequent_pair_always_weighs_more_as_written(ctx: Context, x) -> None:
    """As written (002's comment "weight frequent pairs more"): the more often a pair co-occurs, the more it weighs."""
    weights = ctx.glove_weight(x)
    for i in range(len(x) - 1):
        assert weights[i + 1] > weights[i], (
            f"a pair seen {x[i + 1]:g} times weighs {float(weights[i + 1]):.6g}, one seen {x[i]:g} times "
            f"{float(weights[i]):.6g}"
        )


# --- the objective ----------------------------------------------------------------------------


@st.composite
def glove_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Counts ``X (V, V)`` (zeros common), word and context tables ``(V, d)`` and biases ``(V,)``, ``V <= 6``."""
    vocab, dim = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    count = st.one_of(st.just(0.0), st.integers(1, 300).map(float), st.floats(0.01, 1e4))
    x = torch.tensor(draw(st.lists(count, min_size=vocab * vocab, max_size=vocab * vocab)), dtype=F64)
    return (x.reshape(vocab, vocab), draw(sf.tables(vocab, dim, 1.0)), draw(sf.tables(vocab, dim, 1.0)),
            draw(sf.tensors((vocab,), 1.0)), draw(sf.tensors((vocab,), 1.0)))


def objective_written_out(x, w, w_tilde, b, b_tilde, x_max: float = sf.X_MAX, alpha: float = 0.75) -> torch.Tensor:
    """``sum_{X_ij > 0} f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2`` by a double loop, ``f`` with ``x_max``
    and ``alpha``."""
    total = torch.zeros((), dtype=F64)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if x[i, j] > 0:
                error = w[i] @ w_tilde[j] + b[i] + b_tilde[j] - math.log(float(x[i, j]))
                total = total + weight_formula(x[i, j], x_max, alpha) * error**2
    return total


def objective_as_written(x, w, w_tilde, b, b_tilde) -> torch.Tensor:
    """000's ``J = sum_{i,j=1}^{V} f(X_ij) (w_i^T w~_j + b_i + b~_j - log X_ij)^2``, every pair included."""
    error = w @ w_tilde.T + b[:, None] + b_tilde[None, :] - torch.log(x)  # (V, V); -log 0 = +inf
    return (weight_formula(x) * error.square()).sum()


def _example_002() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return (MATRIX_002, *(0.1 * torch.randn(5, 2, generator=g, dtype=F64) for _ in range(2)),
            *(0.1 * torch.randn(5, generator=g, dtype=F64) for _ in range(2)))


#: The constant each ``glove_loss_factor`` puts in front of ``J`` (protocol: :data:`CONVENTIONS`).
FACTORS = {1.0: "J", 0.5: "J / 2"}


def assert_loss_up_to_the_declared_factor(ctx: Context, actual: torch.Tensor, objective: torch.Tensor,
                                          what: str, scale: float) -> None:
    """``actual`` is ``c J`` for a factor ``c`` the implementation declares (``glove_loss_factor``; undeclared:
    1): a positive constant moves neither the minimum of ``J`` nor the direction of its gradient."""
    def check(factor: float) -> None:
        ctx.assert_close(actual, factor * objective, f"{what}, as {FACTORS[factor]}", scale=scale)

    under_one_of(ctx.choices("glove_loss_factor", tuple(FACTORS)), check)


@claim_property("glove.objective", needs=("glove_loss",))
@given(case=glove_cases(), weighting=weightings())
@example(case=_example_002(), weighting=(sf.X_MAX, 0.75))
@example(case=_example_002(), weighting=(10.0, 0.5))
@example(case=(torch.zeros(1, 1, dtype=F64), torch.ones(1, 1, dtype=F64), torch.ones(1, 1, dtype=F64),
               torch.zeros(1, dtype=F64), torch.zeros(1, dtype=F64)), weighting=(sf.X_MAX, 0.75))
def the_glove_objective_sums_over_the_pairs_that_co_occur(ctx: Context, case, weighting) -> None:
    """000's ``J = sum_{i,j} f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2`` with ``f(x) = min(1, (x / x_max)^alpha)``
    for the ``x_max`` and ``alpha`` passed (the paper's 100 and 3/4, and others), each term of a zero count taken
    as its limit 0 (``f(x) (s - log x)^2 -> 0`` as ``x -> 0``): the sum over the pairs with ``X_ij > 0``.
    The implementation's loss is that number (times the constant it declares, ``glove_loss_factor``: 1, or
    1/2 as glove.c's cost), finite, also for counts with zeros (``X = [[0]]`` gives 0)."""
    x, w, w_tilde, b, b_tilde = case
    x_max, alpha = weighting
    expected = objective_written_out(*(t.to(ctx.dtype).to(F64) for t in case), x_max, alpha)  # as the dtype holds them
    assert_loss_up_to_the_declared_factor(ctx, ctx.glove_loss(x, w, w_tilde, b, b_tilde, x_max, alpha), expected,
                                          f"J over the positive counts, x_max = {x_max:g}, alpha = {alpha:g} "
                                          "(zero counts add their limit, 0)", scale=64)
    for s in (-5.0, 0.0, 5.0):  # the term of a vanishing count, at x = 1e-4 ... 1e-300
        terms = [float(weight_formula(torch.tensor(10.0**-k)) * (s - math.log(10.0**-k)) ** 2) for k in (4, 30, 300)]
        assert terms[0] > terms[1] > terms[2] and terms[2] < 1e-200, f"f(x) (s - log x)^2 at small x: {terms}"


# --- 002's code -------------------------------------------------------------------------------


def code_002_as_printed(embeddings, biases, cooccurrence_matrix):
    """002's ``glove_loss``, as printed."""
    loss = 0
    for i, j in cooccurrence_matrix:
        x_ij = cooccurrence_matrix[i, j]
        if x_ij == 0:
            continue
        pred = torch.dot(embeddings[i], embeddings[j]) + biases[i] + biases[j]
        target = math.log(x_ij)
        weight = min(1.0, (x_ij / x_max) ** 0.75)  # noqa: F821 - 002 never defines x_max
        loss += weight * (pred - target) ** 2
    return loss


def code_002_corrected(embeddings, biases, cooccurrence_matrix, x_max=sf.X_MAX):
    """002's ``glove_loss`` with the index pairs enumerated and ``x_max`` given (the paper's 100)."""
    loss = 0
    for i, j in torch.nonzero(cooccurrence_matrix).tolist():
        x_ij = float(cooccurrence_matrix[i, j])
        if x_ij == 0:
            continue
        pred = torch.dot(embeddings[i], embeddings[j]) + biases[i] + biases[j]
        target = math.log(x_ij)
        weight = min(1.0, (x_ij / x_max) ** 0.75)
        loss += weight * (pred - target) ** 2
    return loss


@claim_property("glove.code", needs=(), about="documents-code", dtypes=("float64",))
@given(case=glove_cases())
@example(case=_example_002())
def the_corrected_code_is_the_objective_with_one_table_and_one_bias(ctx: Context, case) -> None:
    """Corrected (pairs from ``torch.nonzero``, ``x_max = 100``): 002's code is the GloVe objective with
    ``w~ = w`` and ``b~ = b``, one table and one bias vector for both roles."""
    x, w, _, b, _ = case
    value = torch.as_tensor(code_002_corrected(w, b, x), dtype=F64)
    ctx.assert_close(value, glove_loss(x, w, w, b, b), "002's corrected code against J with w~ = w, b~ = b", scale=16)


@claim_property("glove.code", needs=(), about="documents-code", expect="counterexample", dtypes=("float64",))
@given(case=glove_cases())
@example(case=_example_002())
def the_codes_glove_loss_runs_as_printed(ctx: Context, case) -> None:
    """As written: 002's ``glove_loss`` computes the loss of its embeddings, biases and co-occurrence matrix."""
    x, w, _, b, _ = case
    try:
        value = code_002_as_printed(w, b, x)
    except Exception as exc:  # noqa: BLE001 - whatever the printed code raises is the finding
        raise AssertionError(f"002's glove_loss raises {type(exc).__name__}: {exc}") from None
    ctx.assert_close(torch.as_tensor(value, dtype=F64), glove_loss(x, w, w, b, b), "002's code as printed")


# --- co-occurrence counts ---------------------------------------------------------------------


@st.composite
def corpus_cases(draw: st.DrawFn) -> tuple[list[list[int]], int, int, str]:
    """Up to three sentences of word ids over ``V <= 6``, a window of 1 to 4, and the weighting."""
    vocab = draw(st.integers(1, 6))
    sentences = draw(st.lists(st.lists(st.integers(0, vocab - 1), max_size=10), min_size=1, max_size=3)
                     .filter(lambda s: any(s)), label="sentences")
    return sentences, vocab, draw(st.integers(1, 4), label="window"), draw(st.sampled_from(["harmonic", "uniform"]))


def counts_written_out(sentences: list[list[int]], vocab: int, window: int, weighting: str) -> torch.Tensor:
    """``X[i, j]`` += ``1/d`` (or 1) for each word ``j`` at distance ``1 <= d <= window`` of an ``i``, either side."""
    x = torch.zeros(vocab, vocab, dtype=F64)
    for sentence in sentences:
        for t, i in enumerate(sentence):
            for u, j in enumerate(sentence):
                d = abs(u - t)
                if 1 <= d <= window:
                    x[i, j] += 1.0 / d if weighting == "harmonic" else 1.0
    return x


@claim_property("glove.symmetric", needs=("glove_cooccurrence",))
@given(case=corpus_cases())
@example(case=([[0, 1, 2, 3, 4]], 5, 1, "harmonic"))
@example(case=([[0, 1, 0]], 2, 2, "harmonic"))
def co_occurrence_counts_of_a_symmetric_window_are_symmetric(ctx: Context, case) -> None:
    """With a window on both sides, ``j`` is in the context of ``i`` exactly when ``i`` is in that of ``j``:
    the implementation's counts (a pair ``d`` apart adds ``1/d``) are the double loop written out, and
    ``X = X^T``; 002's example matrix is symmetric too."""
    sentences, vocab, window, _ = case
    ids = [i for sentence in sentences for i in sentence]  # one text
    x = ctx.glove_cooccurrence(ids, vocab, window)
    ctx.assert_close(x, counts_written_out([ids], vocab, window, "harmonic"), "co-occurrence counts", scale=4)
    ctx.assert_close(x.T, x, "X^T against X")
    assert torch.equal(MATRIX_002, MATRIX_002.T), "002's matrix is not symmetric"


# --- "one pass over the co-occurrence matrix" -------------------------------------------------


def window_pair_count(length: int, window: int) -> int:
    """The ordered pairs of positions at most ``window`` apart in a text of ``length`` words."""
    return sum(min(window, t) + min(window, length - 1 - t) for t in range(length))


@claim_property("glove.one-pass", needs=("glove_cooccurrence",))
@given(case=corpus_cases())
def an_epoch_over_x_touches_at_most_the_windows_pairs(ctx: Context, case) -> None:
    """Corrected: an epoch of GloVe visits the non-zero entries of the implementation's ``X``, at most
    ``min(V^2, 2cT - c(c+1))`` of them (the window pairs of the text): fewer than word2vec's examples."""
    sentences, vocab, window, _ = case
    ids = [i for sentence in sentences for i in sentence]
    x = ctx.glove_cooccurrence(ids, vocab, window)
    nonzero = int((x != 0).sum())
    bound = min(vocab * vocab, window_pair_count(len(ids), window))
    assert nonzero <= bound, f"X has {nonzero} non-zero entries, more than min(V^2, window pairs) = {bound}"


def adagrad_epochs(x: torch.Tensor, dim: int, epochs: int, seed: int) -> tuple[torch.Tensor, ...]:
    """GloVe's training written out: AdaGrad (rate 0.05) on ``J``, one step per non-zero ``X_ij`` per epoch."""
    g = torch.Generator().manual_seed(seed)
    vocab = x.shape[0]
    params = [(torch.rand(vocab, dim, generator=g, dtype=F64) - 0.5) / dim for _ in range(2)]
    params += [torch.zeros(vocab, dtype=F64), torch.zeros(vocab, dtype=F64)]
    squares = [torch.ones_like(p) for p in params]
    pairs = torch.nonzero(x).tolist()
    for _ in range(epochs):
        for i, j in pairs:
            w, w_tilde, b, b_tilde = params
            weight = float(weight_formula(x[i, j]))
            error = float(w[i] @ w_tilde[j] + b[i] + b_tilde[j]) - math.log(float(x[i, j]))
            grads = [weight * error * w_tilde[j], weight * error * w[i], weight * error, weight * error]
            for p, sq, index, grad in zip(params, squares, (i, j, i, j), grads):
                sq[index] += torch.as_tensor(grad).square()
                p[index] -= 0.05 * torch.as_tensor(grad) / sq[index].sqrt()
    return tuple(params)


@claim_property("glove.one-pass", needs=("glove_loss",), expect="counterexample", dtypes=("float64",),
                max_examples=10)
@given(counts=st.lists(st.integers(1, 60), min_size=9, max_size=16), seed=sf.seeds())
def one_pass_over_x_trains_glove_as_written(ctx: Context, counts, seed) -> None:
    """As written: GloVe trains in one pass over the co-occurrence matrix: after one epoch over the non-zero
    counts its loss is within 10% of where 50 epochs of the same AdaGrad take it (the implementation's loss)."""
    vocab = math.isqrt(len(counts))
    x = torch.tensor(counts[: vocab * vocab], dtype=F64).reshape(vocab, vocab)  # (V * V,) -> (V, V)
    x = x + x.T  # symmetric, as a two-sided window counts
    after = {epochs: ctx.glove_loss(x, *adagrad_epochs(x, 2, epochs, seed), sf.X_MAX, 0.75) for epochs in (1, 50)}
    assert float(after[1]) <= 1.1 * float(after[50]), (
        f"J after one pass is {float(after[1]):.4g}, after 50 passes {float(after[50]):.4g}: one pass is not training"
    )
