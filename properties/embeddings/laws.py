"""Properties of the scaling laws (``spec/embeddings/laws.md``).

Every property here is arithmetic on published constants and calls no implementation
(``needs=()``, the ``math`` row). The formulas under check are the reference's
(:mod:`specformer.reference.embeddings.scaling`, read through the module at call time
so that the harness's tests can swap a constant or a function); what they are checked
against is written out here: the document's ``alpha_N = 0.076``, ``C = 6 N D``, power-law
identities, parameter counts of real PyTorch modules, and a numerical minimisation
written in this file. This module does not fit scaling laws to anything.
"""

from __future__ import annotations

import math

from hypothesis import example, given
from hypothesis import strategies as st
from torch import nn

from specformer.context import Context
from specformer.property import claim_property
from specformer.reference.embeddings import scaling as law

F64 = ("float64",)

#: 001 ("Scaling Laws"): alpha_N ≈ 0.076.
DOCUMENT_ALPHA_N = 0.076
#: 001's table: (parameters, training tokens, label), in the document's order.
TABLE: dict[str, tuple[float, float, str]] = {
    "GPT-3": (175e9, 300e9, "under-trained"),
    "Chinchilla": (70e9, 1.4e12, "compute-optimal"),
    "LLaMA 2": (70e9, 2e12, "over-trained"),
    "LLaMA 3": (70e9, 15e12, "heavily over-trained"),
}
#: FLOPs per parameter and training token, written here: 2 forward, 4 backward.
SIX = 6.0
#: Gopher's training budget, for which Hoffmann et al. chose Chinchilla's size (their section 4).
GOPHER_BUDGET = 5.76e23
#: GPT-2's configurations (n_layer, d_model); vocabulary 50,257 and 1,024 positions.
GPT2 = {"small": (12, 768), "medium": (24, 1024), "large": (36, 1280), "xl": (48, 1600)}
GPT2_VOCAB, GPT2_CONTEXT = 50_257, 1_024

log_uniform = st.floats(3.0, 13.0).map(lambda e: 10.0**e)
factors = st.floats(1.01, 1000.0)


def close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * abs(b)


# --- Kaplan's L(N) ------------------------------------------------------------------------------


@claim_property("laws.kaplan-law", needs=(), about="published-numbers", dtypes=F64, max_examples=50)
@given(n=log_uniform, k=factors)
@example(n=85e6, k=10.0)
def loss_falls_as_a_power_law_of_the_non_embedding_parameters(ctx: Context, n: float, k: float) -> None:
    """``L(kN) / L(N) = k^-0.076``; ``log L`` has slope ``-0.076`` in ``log N``; the inverse recovers ``N``;
    ``2^(1/0.076) = 9,139.5`` times the parameters halves the loss."""
    assert law.KAPLAN_ALPHA_N == DOCUMENT_ALPHA_N, f"alpha_N is {law.KAPLAN_ALPHA_N}, the document says 0.076"
    small, large = law.kaplan_loss(n), law.kaplan_loss(k * n)
    assert large < small, f"L({k * n:.4g}) = {large:.6g} is not below L({n:.4g}) = {small:.6g}"
    assert close(large / small, k**-DOCUMENT_ALPHA_N, 1e-12), f"L(kN)/L(N) = {large / small!r}, k^-0.076 = {k**-0.076!r}"
    slope = (math.log(large) - math.log(small)) / math.log(k)
    assert close(slope, -DOCUMENT_ALPHA_N, 1e-9), f"the slope of log L against log N is {slope!r}"
    assert close(law.parameters_for_loss(small), n, 1e-9), f"N(L(N)) = {law.parameters_for_loss(small)!r}, N = {n!r}"
    halving = 2 ** (1 / DOCUMENT_ALPHA_N)
    assert close(law.kaplan_loss(halving * n) / small, 0.5, 1e-12), "2^(1/alpha) times the parameters does not halve L"
    assert round(halving, 1) == 9139.5, f"2^(1/0.076) = {halving}"


def stack_parameters(n_layer: int, d_model: int, vocab: int, context: int) -> tuple[int, int]:
    """``(embedding, other)`` parameters of a PyTorch stack with learned positions and ``d_ff = 4 d``."""
    embedding = nn.Embedding(vocab, d_model, device="meta"), nn.Embedding(context, d_model, device="meta")
    heads = max(h for h in (1, 2, 4, 8, 16) if d_model % h == 0)
    layers = [nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, device="meta") for _ in range(n_layer)]
    count = lambda modules: sum(p.numel() for m in modules for p in m.parameters())  # noqa: E731
    return count(embedding), count(layers)


@claim_property("laws.kaplan-law", needs=(), about="published-numbers", dtypes=F64, max_examples=15)
@given(n_layer=st.integers(1, 48), d_model=st.integers(16, 2048).map(lambda d: d - d % 16))
@example(n_layer=12, d_model=768)
def kaplans_n_is_the_12_n_layer_d_model_squared_outside_the_embeddings(ctx: Context, n_layer: int,
                                                                        d_model: int) -> None:
    """The parameters of a real stack outside its token and position tables are ``12 n_layer d_model^2``
    plus ``13 d_model`` biases and LayerNorm gains per layer (so within 0.2% from ``d_model = 544``); the
    tables are ``(V + n_ctx) d_model``."""
    embedding, other = stack_parameters(n_layer, d_model, GPT2_VOCAB, GPT2_CONTEXT)
    kaplan = law.non_embedding_parameters(n_layer, d_model)
    assert kaplan + 13 * n_layer * d_model == other, (
        f"{n_layer} layers of width {d_model}: {other} parameters, 12 L d^2 = {kaplan} and 13 L d = {13 * n_layer * d_model}"
    )
    if d_model >= 544:
        assert close(kaplan, other, 0.002), f"12 L d^2 = {kaplan} is not within 0.2% of {other}"
    assert law.embedding_parameters(GPT2_VOCAB, GPT2_CONTEXT, d_model) == embedding, f"embedding tables: {embedding}"


@claim_property("laws.kaplan-law", needs=(), about="published-numbers", expect="counterexample", dtypes=F64, max_examples=10)
@given(size=st.sampled_from(sorted(GPT2)))
def loss_of_the_total_parameter_count_as_written(ctx: Context, size: str) -> None:
    """As written, ``N`` is the parameter count: for GPT-2's configurations the law at the total count
    stays within 1% of the law at the non-embedding count (1% of the loss is a 14% larger model)."""
    n_layer, d_model = GPT2[size]
    embedding, other = stack_parameters(n_layer, d_model, GPT2_VOCAB, GPT2_CONTEXT)
    with_embeddings, without = law.kaplan_loss(embedding + other), law.kaplan_loss(law.non_embedding_parameters(n_layer, d_model))
    gap = 1 - with_embeddings / without
    assert gap <= 0.01, (
        f"GPT-2 {size}: L(total {embedding + other:,}) = {with_embeddings:.4f} is {gap:.1%} below "
        f"L(non-embedding {law.non_embedding_parameters(n_layer, d_model):,}) = {without:.4f}"
    )


# --- Chinchilla's allocation --------------------------------------------------------------------


@claim_property("laws.compute-optimal-allocation", needs=(), about="published-numbers", dtypes=F64, max_examples=30)
@given(c=st.floats(18.0, 26.0).map(lambda e: 10.0**e), k=factors)
@example(c=5.88e23, k=2.0)
def a_doubled_budget_grows_parameters_and_tokens_by_about_sqrt_2_each(ctx: Context, c: float, k: float) -> None:
    """For each of Hoffmann et al.'s approaches, ``N`` and ``D`` grow by ``k^a`` and ``k^b`` with ``a + b = 1``,
    ``6 N D = C`` along the allocation, and at ``k = 2`` both growths are within 3% of ``sqrt 2``; Kaplan's
    ``(0.73, 0.27)`` is not."""
    root2 = math.sqrt(2)
    assert set(law.CHINCHILLA_EXPONENTS) == {"approach 1", "approach 2", "approach 3"}, law.CHINCHILLA_EXPONENTS
    for approach, (a, b) in law.CHINCHILLA_EXPONENTS.items():
        assert close(a + b, 1.0, 1e-12), f"{approach}: a + b = {a + b}"
        n, d = law.allocate(c, a, b)
        n_k, d_k = law.allocate(k * c, a, b)
        assert close(n_k / n, k**a, 1e-9) and close(d_k / d, k**b, 1e-9), f"{approach}: growth {n_k / n}, {d_k / d}"
        assert close(SIX * n * d, c, 1e-9), f"{approach}: 6 N D = {SIX * n * d:.6g} at C = {c:.6g}"
        assert close(2**a, root2, 0.03) and close(2**b, root2, 0.03), f"{approach}: doubling gives {2**a:.3f}, {2**b:.3f}"
    a, b = law.KAPLAN_ALLOCATION
    assert not close(2**a, root2, 0.03) and not close(2**b, root2, 0.03), f"Kaplan: doubling gives {2**a:.3f}, {2**b:.3f}"


# --- the table ----------------------------------------------------------------------------------


def label(n: float, d: float, tolerance: float, heavy: float) -> str:
    """The table's label from the size against the 20-token rule's model for the row's own budget."""
    c = SIX * n * d
    optimal, _ = law.compute_optimal(c)
    if n > optimal * (1 + tolerance):
        return "under-trained"
    if n >= optimal / (1 + tolerance):
        return "compute-optimal"
    return "heavily over-trained" if n <= optimal / heavy else "over-trained"


@claim_property("laws.table", needs=(), about="published-numbers", dtypes=F64, max_examples=30)
@given(tolerance=st.floats(0.05, 0.15), heavy=st.floats(1.5, 3.0))
@example(tolerance=0.1, heavy=2.0)
def the_tables_labels_follow_the_20_tokens_per_parameter_rule(ctx: Context, tolerance: float, heavy: float) -> None:
    """Each row's label is its size against ``sqrt(C / 120)`` for its own budget ``C = 6 N D``, for every
    tolerance 5-15% and "heavily" factor 1.5-3; Chinchilla's budget is Gopher's within 2.1%."""
    for model, (n, d, written) in TABLE.items():
        ratio = law.tokens_per_parameter(n, d)
        assert close(ratio, d / n, 1e-12), f"{model}: tokens per parameter {ratio}, D / N = {d / n}"
        n_opt, d_opt = law.compute_optimal(SIX * n * d)
        assert close(d_opt / n_opt, 20.0, 1e-12), f"the rule's model holds {d_opt / n_opt} tokens per parameter"
        found = label(n, d, tolerance, heavy)
        assert found == written, f"{model}: {n:.3g} parameters, {d:.3g} tokens ({ratio:.3g} per parameter) is {found}"
    n, d, _ = TABLE["Chinchilla"]
    assert close(law.training_compute(n, d), SIX * n * d, 1e-12), f"C = {law.training_compute(n, d):.4g}"
    assert close(SIX * n * d, GOPHER_BUDGET, 0.021), f"Chinchilla's budget {SIX * n * d:.4g} against Gopher's"
    n_opt, d_opt = law.compute_optimal(GOPHER_BUDGET)
    assert close(n_opt, n, 0.011) and close(d_opt, d, 0.011), f"the rule at Gopher's budget: {n_opt:.4g}, {d_opt:.4g}"


def fit_optimum(c: float) -> float:
    """The ``N`` minimising the parametric ``L(N, C / 6N)``, by golden-section search on ``log N``."""
    f = lambda log_n: law.chinchilla_loss(math.exp(log_n), c / (SIX * math.exp(log_n)))  # noqa: E731
    lo, hi = math.log(1e3), math.log(c / SIX / 1e3)  # at least a thousand parameters and tokens
    g = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        lo, hi = (lo, x2) if f(x1) < f(x2) else (x1, hi)
    return math.exp((lo + hi) / 2)


@claim_property("laws.table", needs=(), about="published-numbers", dtypes=F64, max_examples=20)
@given(model=st.sampled_from(sorted(TABLE)))
@example(model="Chinchilla")
def by_the_parametric_fit_the_optimum_holds_over_80_tokens_per_parameter(ctx: Context, model: str) -> None:
    """At the row's budget the fit's optimum is ``G (C/6)^(beta/(alpha+beta))`` (checked against a numerical
    minimisation) and holds more than 4 x 20 tokens per parameter: Chinchilla is under-trained by it."""
    e, a, b, alpha, beta = law.CHINCHILLA_FIT
    n, d, _ = TABLE[model]
    c = SIX * n * d
    closed = (alpha * a / (beta * b)) ** (1 / (alpha + beta)) * (c / SIX) ** (beta / (alpha + beta))
    searched = fit_optimum(c)
    assert close(searched, closed, 1e-6), f"{model}: the search finds N = {searched:.6g}, the closed form {closed:.6g}"
    ratio = (c / (SIX * searched)) / searched
    assert ratio > 4 * law.TOKENS_PER_PARAMETER, f"{model}: the fit's optimum holds {ratio:.3g} tokens per parameter"
    if model == "Chinchilla":
        assert law.tokens_per_parameter(n, d) < ratio, f"Chinchilla holds {d / n:.3g}, the fit's optimum {ratio:.3g}"


# --- inference ----------------------------------------------------------------------------------


@claim_property("laws.inference-efficiency", needs=(), about="published-numbers", dtypes=F64, max_examples=30)
@given(c=st.floats(18.0, 26.0).map(lambda e: 10.0**e), r=st.floats(1.0, 1000.0))
@example(c=8.4e23, r=2e12 / 70e9)
def more_tokens_per_parameter_buys_a_smaller_model_cheaper_per_token(ctx: Context, c: float, r: float) -> None:
    """``N(r) = sqrt(C / 6r)``, ``N(r) / N(20) = sqrt(20 / r)`` and so are the FLOPs per generated token
    ``2 N``; over-training (``r > 20``) always gives the smaller model."""
    n, d = law.compute_optimal(c, r)
    n20, _ = law.compute_optimal(c)
    assert close(SIX * n * d, c, 1e-9) and close(d, r * n, 1e-12), f"6 N D = {SIX * n * d:.6g}, D / N = {d / n:.6g}"
    expected = math.sqrt(20 / r)
    assert close(n / n20, expected, 1e-12), f"N({r:.4g}) / N(20) = {n / n20!r}, sqrt(20 / r) = {expected!r}"
    cost = law.inference_flops_per_token(n) / law.inference_flops_per_token(n20)
    assert close(cost, expected, 1e-12), f"inference FLOPs ratio {cost!r}, expected {expected!r}"
    assert close(law.inference_flops_per_token(n), 2 * n, 1e-12), f"{law.inference_flops_per_token(n)} FLOPs per token"
    # Strictly smaller only where r is visibly above 20: for r = 20 + an ulp, sqrt(C / 6r) rounds to
    # sqrt(C / 120) and the two sizes tie. Above 20 (1 + 1e-9), N(r) / N(20) = sqrt(20 / r) is below
    # 1 - 5e-10, over a million times the rounding of the two square roots (1e-16), and the ratio
    # itself was checked to 1e-12 above.
    if r > 20 * (1 + 1e-9):
        assert n < n20, f"r = {r}: {n:.4g} parameters is not below the 20-token model's {n20:.4g}"
