"""Properties of multi-head attention (``spec/attention/multihead.md``).

``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O`` with
``head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)``; head ``i`` owns columns
``i d_k : (i+1) d_k`` of ``W^Q`` and ``W^K``, columns ``i d_v : (i+1) d_v`` of ``W^V``
and rows ``i d_v : (i+1) d_v`` of ``W^O``. Expected values come from
:func:`.expected.multihead_formula`, written head by head from the Concat formula, or
from :func:`.expected.attention_formula`; invariances compare the implementation with
itself. Refutations state a claim as the documents write it; Hypothesis must break it.

Cost is measured with :func:`specformer.flops.count_flops` (``FlopCounterMode``, which
counts only matrix products it can see, and ``torch.einsum`` counted by its equation); where an implementation's attention kernel is invisible to
it (PyTorch's fused CPU kernels), the cost property is not applicable.
"""

from __future__ import annotations

import math
import weakref

import torch
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.errors import UnsatisfiedAssumption

from specformer.context import Context
from specformer.property import claim_property
from specformer.protocol import NotApplicable
from specformer.reference.attention.masks import causal_mask
from specformer.reference.attention.multihead import MultiHeadParams

from . import strategies as sf
from .expected import attention_formula, multihead_formula

MHA = ("multihead_attention",)

#: The model table of ``004_47c0b0031f022460.txt``, slide "Vocabulary Size":
#: ``(name, d_model, h, d_k, d_v)``.
DOCUMENT_MODELS = (("base", 512, 8, 64, 64), ("big", 1024, 16, 64, 64))


#: Published configurations: model -> (d_model, h, d_k), from each model's paper or released
#: configuration (see ``multihead.typical-head-count``).
PUBLISHED_CONFIGURATIONS = {
    "Transformer base": (512, 8, 64), "Transformer big": (1024, 16, 64),
    "BERT-base": (768, 12, 64), "BERT-large": (1024, 16, 64),
    "GPT-2 small": (768, 12, 64), "GPT-2 medium": (1024, 16, 64), "GPT-2 large": (1280, 20, 64),
    "GPT-2 XL": (1600, 25, 64),
    "T5-small": (512, 8, 64), "T5-base": (768, 12, 64), "T5-large": (1024, 16, 64), "T5-3B": (1024, 32, 128),
    "T5-11B": (1024, 128, 128),
    "GPT-3 175B": (12288, 96, 128),
    "LLaMA-2-7B": (4096, 32, 128), "LLaMA-2-13B": (5120, 40, 128), "LLaMA-2-70B": (8192, 64, 128),
    "BLOOM-176B": (14336, 112, 128),
}
#: The course notes' range of typical head counts.
TYPICAL_HEADS = range(8, 17)


def library_default_configurations() -> dict[str, tuple[int, int]]:
    """``(d_model, h)`` of the installed transformers configuration classes' defaults, by the model they describe."""
    from transformers import BertConfig, GPT2Config, LlamaConfig, T5Config

    bert, gpt2, t5, llama = BertConfig(), GPT2Config(), T5Config(), LlamaConfig()
    return {"BERT-base": (bert.hidden_size, bert.num_attention_heads), "GPT-2 small": (gpt2.n_embd, gpt2.n_head),
            "T5-small": (t5.d_model, t5.num_heads), "LLaMA-2-7B": (llama.hidden_size, llama.num_attention_heads)}


# -- helpers ---------------------------------------------------------------------------
def _formula(query: torch.Tensor, source: torch.Tensor, p: MultiHeadParams,
             mask: torch.Tensor | None = None) -> torch.Tensor:
    """``Concat(head_1..head_h) W^O`` in float64, keys and values both from ``source``."""
    return multihead_formula(query, source, p.w_q, p.w_k, p.w_v, p.w_o, p.h, mask)


def _scale(query: torch.Tensor, source: torch.Tensor, p: MultiHeadParams) -> float:
    """Tolerance widening for a multi-head output, which sums ``h d_v`` products ``Concat_j W^O_jl``.

    Rounding grows with the size of the terms summed, not of the result: the scale is
    ``d_model * max|S W^V| * max|W^O|`` (measured errors stay below 1.5 eps times this).
    """
    v = (source @ p.w_v).abs().amax().item()  # largest projected value = largest |Concat_j|
    return p.w_o.shape[0] * max(1.0, v) * max(1.0, p.w_o.abs().amax().item())


def _permute_heads(p: MultiHeadParams, perm: torch.Tensor) -> MultiHeadParams:
    """The same heads in order ``perm``: column blocks of ``W^Q, W^K, W^V``, row blocks of ``W^O``."""
    d, h = p.d_model, p.h
    cols = lambda w, width: w.view(d, h, width)[:, perm].reshape(d, h * width)  # noqa: E731
    return MultiHeadParams(cols(p.w_q, p.d_k), cols(p.w_k, p.d_k), cols(p.w_v, p.d_v),
                           p.w_o.view(h, p.d_v, d)[perm].reshape(h * p.d_v, d), h)


def _with_heads(p: MultiHeadParams, h: int) -> MultiHeadParams:
    """The same weight matrices read as ``h`` heads."""
    return MultiHeadParams(p.w_q, p.w_k, p.w_v, p.w_o, h)


def _seeded(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> torch.Tensor:
    """A float64 tensor with entries uniform in ``[-scale, scale]`` from a fixed seed."""
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * scale


# -- strategies ------------------------------------------------------------------------
@st.composite
def masked_cases(draw: st.DrawFn, max_batch: int = 2, max_t: int = 5):
    """``(query, source, params, mask)``; the mask is none, per-batch ``(B, t_q, t_k)`` or causal ``(t, t)``."""
    large = draw(sf.realistic())  # one in four: 5-8 heads, batch 3-4, lengths 7-64
    params = draw(sf.multihead_params(large=large))
    kind = draw(st.sampled_from(["none", "batch", "causal"]))
    b, t_q = draw(sf.sizes(large, 1, max_batch, "batch")), draw(sf.sizes(large, 1, max_t, "t"))
    t_k = t_q if kind == "causal" else draw(sf.sizes(large, 1, max_t, "t"))
    query = draw(sf.tensors((b, t_q, params.d_model)))
    source = draw(sf.tensors((b, t_k, params.d_model)))
    mask = None
    if kind == "batch":
        mask = draw(sf.masks(b, t_q, t_k))  # (B, t_q, t_k), every row keeps a key
    elif kind == "causal":
        mask = causal_mask(t_q)  # (t, t)
    return query, source, params, mask


@st.composite
def cross_cases(draw: st.DrawFn, max_batch: int = 2, max_t: int = 5, min_h: int = 1):
    """``(query, source, params)`` with ``t_q != t_k``."""
    large = draw(sf.realistic())  # one in four: 5-8 heads, batch 3-4, lengths 7-64
    params = draw(sf.multihead_params(h=draw(sf.sizes(large, min_h, 4, "h")), large=large))
    b, t_q = draw(sf.sizes(large, 1, max_batch, "batch")), draw(sf.sizes(large, 1, max_t, "t"))
    t_k = draw(sf.sizes(large, 1, max_t, "t").filter(lambda t: t != t_q))
    return draw(sf.tensors((b, t_q, params.d_model))), draw(sf.tensors((b, t_k, params.d_model))), params


def _example_case(b: int, t_q: int, t_k: int, d_model: int, h: int, seed: int = 0):
    """Fixed pseudo-random ``(query, source, params)`` for hand-picked ``@example`` cases."""
    params = MultiHeadParams(*(_seeded((d_model, d_model), seed + i, 1.0) for i in range(4)), h)
    return _seeded((b, t_q, d_model), seed + 4), _seeded((b, t_k, d_model), seed + 5), params


#: Two sequences, two heads, and a different mask in each sequence (lower and upper
#: triangle): a mask that is not shared correctly between batch and heads shows.
_TWO_MASKS = (*_example_case(2, 3, 3, 4, 2), torch.stack([causal_mask(3), causal_mask(3).T]))
#: Two heads, a query of 2 positions over a source of 3 (cross-attention).
_CROSS = _example_case(2, 2, 3, 4, 2, seed=10)


# -- multihead.concat-heads ------------------------------------------------------------
@claim_property("multihead.concat-heads", needs=MHA)
@given(case=masked_cases())
@example(case=_TWO_MASKS)
def output_is_the_concatenation_of_the_heads_times_w_o(ctx: Context, case) -> None:
    """``Concat(head_1..head_h) W^O`` with ``head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)``, one mask for all heads."""
    query, source, params, mask = case
    out = ctx.multihead_attention(query, source, source, params, mask)
    ctx.assert_close(out, _formula(query, source, params, mask), "MultiHead vs Concat(heads) W^O",
                     scale=_scale(query, source, params))


@st.composite
def free_key_width_cases(draw: st.DrawFn, max_batch: int = 2, max_t: int = 4):
    """``(query, source, params)`` with ``d_k != d_model / h``: ``h``, ``d_model / h`` in 1..4, ``d_k`` in 1..5.

    ``d_v = d_model / h``, so only the query/key width departs from the usual one.
    """
    h, head_width = draw(sf.dimension(1, 4)), draw(sf.dimension(1, 4))
    other = draw(sf.dimension(1, 4))
    d_model, d_k = h * head_width, other + (other >= head_width)  # d_k in 1..5, never d_model / h
    w = lambda rows, cols: draw(sf.tensors((rows, cols), sf.projection_bound(rows)))  # noqa: E731
    params = MultiHeadParams(w(d_model, h * d_k), w(d_model, h * d_k), w(d_model, h * head_width),
                             w(h * head_width, d_model), h)
    b, t_q, t_k = draw(sf.dimension(1, max_batch)), draw(sf.dimension(1, max_t)), draw(sf.dimension(1, max_t))
    return draw(sf.tensors((b, t_q, d_model))), draw(sf.tensors((b, t_k, d_model))), params


@claim_property("multihead.concat-heads", needs=MHA)
@given(case=free_key_width_cases())
def each_head_scales_by_its_own_d_k_when_d_k_is_not_d_model_over_h(ctx: Context, case) -> None:
    """``Concat(head_1..head_h) W^O`` with ``W^Q, W^K`` of shape ``(d_model, h d_k)``, ``d_k != d_model / h``:
    head ``i`` takes columns ``i d_k : (i+1) d_k`` and divides its scores by ``sqrt(d_k)``, not ``sqrt(d_model / h)``.

    Not applicable at once to an implementation that declares ``key_width`` or
    ``value_width`` ``'d_model_over_h'`` (PyTorch's module, the Hugging Face ones).
    """
    ctx.require("value_width", "free")
    ctx.require("key_width", "free")
    query, source, params = case
    out = ctx.multihead_attention(query, source, source, params)
    ctx.assert_close(out, _formula(query, source, params),
                     f"MultiHead with d_k={params.d_k}, d_model/h={params.d_model // params.h} vs Concat(heads) W^O",
                     scale=_scale(query, source, params))


# -- multihead.single-head -------------------------------------------------------------
@claim_property("multihead.single-head", needs=MHA)
@given(case=sf.multihead_cases(h=1))
@example(case=sf.MultiHeadCase(*_example_case(1, 3, 3, 3, 1)))
def one_head_is_attention_of_the_projections_times_w_o(ctx: Context, case) -> None:
    """``h = 1``: ``MultiHead(X, S, S) = Attention(X W^Q, S W^K, S W^V) W^O``."""
    p = case.params
    out = ctx.multihead_attention(case.query, case.source, case.source, p)
    head, _ = attention_formula(case.query @ p.w_q, case.source @ p.w_k, case.source @ p.w_v)
    ctx.assert_close(out, head @ p.w_o, "one-head MultiHead vs Attention(XW^Q, SW^K, SW^V) W^O",
                     scale=_scale(case.query, case.source, p))


# -- multihead.head-permutation --------------------------------------------------------
@claim_property("multihead.head-permutation", needs=MHA)
@given(case=masked_cases(), order=st.permutations(range(8)))
@example(case=_TWO_MASKS, order=[1, 0, 2, 3, 4, 5, 6, 7])
@example(case=(*_example_case(1, 3, 2, 6, 3, seed=30), None), order=[1, 0, 2, 3, 4, 5, 6, 7])  # heads must be contiguous blocks
def permuting_the_heads_leaves_the_output_unchanged(ctx: Context, case, order) -> None:
    """For a permutation ``pi`` of the heads: ``Concat(head_pi(1)..head_pi(h)) W^O_pi = Concat(head_1..head_h) W^O``."""
    query, source, params, mask = case
    perm = torch.tensor([i for i in order if i < params.h])  # a permutation of range(h)
    out = ctx.multihead_attention(query, source, source, params, mask)
    out_perm = ctx.multihead_attention(query, source, source, _permute_heads(params, perm), mask)
    ctx.assert_close(out_perm, out, f"MultiHead with heads in order {perm.tolist()} vs in order 0..{params.h - 1}",
                     scale=_scale(query, source, params))


# -- multihead.head-width --------------------------------------------------------------
@claim_property("multihead.head-width", needs=(), about="published-numbers")
@given(model=st.sampled_from(DOCUMENT_MODELS))
def the_documents_models_have_d_k_and_d_v_equal_to_d_model_over_h(ctx: Context, model) -> None:
    """In the documents' table (base 512/8/64, big 1024/16/64): ``d_k = d_v = d_model / h``, so ``h d_v = d_model``."""
    name, d_model, h, d_k, d_v = model
    assert d_model % h == 0, f"{name}: h={h} does not divide d_model={d_model}"
    assert d_k == d_model // h and d_v == d_model // h, f"{name}: d_k={d_k}, d_v={d_v} but d_model/h={d_model // h}"
    assert h * d_v == d_model, f"{name}: the concat width h d_v = {h * d_v} is not d_model = {d_model}"


_BASE = DOCUMENT_MODELS[0]  # d_model = 512, h = 8, d_k = d_v = 64, weights ~ 1/sqrt(d_model) as at initialisation
_BASE_QUERY = _seeded((1, 3, _BASE[1]), 0)
_BASE_PARAMS = MultiHeadParams(*(_seeded((_BASE[1], _BASE[1]), s, 1 / math.sqrt(_BASE[1])) for s in (1, 2, 3, 4)),
                               _BASE[2])


@claim_property("multihead.head-width", needs=MHA)
@given(case=sf.multihead_cases())
@example(case=sf.MultiHeadCase(_BASE_QUERY, _BASE_QUERY, _BASE_PARAMS))
def with_d_k_equal_to_d_model_over_h_the_concat_has_width_d_model(ctx: Context, case) -> None:
    """``d_k = d_v = d_model / h``: with ``W^O = I`` the output ``(B, t_q, d_model)`` is ``Concat(head_1..head_h)``."""
    p = case.params
    identity = MultiHeadParams(p.w_q, p.w_k, p.w_v, torch.eye(p.d_model, dtype=torch.float64), p.h)
    out = ctx.multihead_attention(case.query, case.source, case.source, identity)  # shape checked: (B, t_q, d_model)
    concat = _formula(case.query, case.source, identity)
    square = (p.d_model, p.d_model)
    assert p.w_q.shape == p.w_k.shape == p.w_v.shape == p.w_o.shape == square, "stacked weights not d_model x d_model"
    assert concat.shape[-1] == p.h * p.d_v == p.d_model, f"concat width {concat.shape[-1]} != d_model {p.d_model}"
    ctx.assert_close(out, concat, "MultiHead with W^O = I vs Concat(head_1..head_h)",
                     scale=_scale(case.query, case.source, identity))


# -- multihead.typical-head-count ------------------------------------------------------
@claim_property("multihead.typical-head-count", needs=(), about="published-numbers", dtypes=("float64",))
@given(data=st.data())
def models_up_to_width_1024_with_heads_of_64_have_8_to_16_heads_and_wider_ones_more(ctx: Context, data) -> None:
    """Corrected: ``d_model <= 1024`` and ``d_k = 64`` give ``8 <= h <= 16``; ``d_model > 1024`` gives ``h > 16``;
    the installed transformers configuration classes' defaults agree with the table."""
    model = data.draw(st.sampled_from(sorted(PUBLISHED_CONFIGURATIONS)), label="model")  # searched, not fixed
    d_model, h, d_k = PUBLISHED_CONFIGURATIONS[model]
    if d_model <= 1024 and d_k == 64:
        assert h in TYPICAL_HEADS, f"{model}: d_model={d_model}, d_k={d_k}, but h={h}, outside 8..16"
    if d_model > 1024:
        assert h > 16, f"{model}: d_model={d_model} > 1024 but only h={h} heads"
    library = library_default_configurations().get(model)
    if library is not None:
        assert library == (d_model, h), f"{model}: the library's default configuration has (d_model, h) = {library}"


@claim_property("multihead.typical-head-count", needs=(), about="published-numbers", dtypes=("float64",), expect="counterexample")
@given(data=st.data())
def published_transformers_use_8_to_16_heads_as_written(ctx: Context, data) -> None:
    """As written, of any published configuration: ``8 <= h <= 16``."""
    model = data.draw(st.sampled_from(sorted(PUBLISHED_CONFIGURATIONS)), label="model")
    d_model, h, _ = PUBLISHED_CONFIGURATIONS[model]
    assert h in TYPICAL_HEADS, f"{model} (d_model={d_model}) has {h} heads, outside 8..16"


# -- multihead.concat-width ------------------------------------------------------------
#: Per context: ``[examples rejected, examples taken]`` by the implementation's domain.
_DOMAIN: "weakref.WeakKeyDictionary[object, list[int]]" = weakref.WeakKeyDictionary()
_GIVE_UP_AFTER = 20


@claim_property("multihead.concat-width", needs=MHA)
@given(data=st.data())
def with_any_d_v_the_output_matches_the_formula_and_w_o_has_h_d_v_rows(ctx: Context, data) -> None:
    """Corrected: Concat has width ``h d_v`` (``d_model`` iff ``d_v = d_model / h``); ``W^O`` is ``h d_v x d_model``."""
    ctx.require("value_width", "free")  # not applicable at once to a declared d_model / h-only implementation
    h, head_width, other_width, b, t_q, t_k = (data.draw(sf.dimension(1, n), label=label) for n, label in (
        (4, "h"), (4, "d_model / h"), (4, "d_v, skipping d_model / h"), (2, "B"), (4, "t_q"), (4, "t_k")))
    d, d_v = h * head_width, other_width + (other_width >= head_width)  # d_v in 1..5, never d_model / h
    shapes = [(d, h * head_width), (d, h * head_width), (d, h * d_v), (h * d_v, d)]
    rejected_taken = _DOMAIN.setdefault(ctx, [0, 0])
    if rejected_taken[0] >= _GIVE_UP_AFTER and not rejected_taken[1]:  # PyTorch's module needs d_v = d_model / h
        raise NotApplicable(f"{ctx.not_applicable[-1]} (and all of the first {_GIVE_UP_AFTER} examples)")
    # A call with zeros first: an implementation that cannot take this d_v rejects the
    # example here, before the values are drawn.
    zeros = MultiHeadParams(*(torch.zeros(shape, dtype=torch.float64) for shape in shapes), h)
    try:
        zero_query, zero_source = (torch.zeros(b, t, d, dtype=torch.float64) for t in (t_q, t_k))
        ctx.multihead_attention(zero_query, zero_source, zero_source, zeros)
    except UnsatisfiedAssumption:
        rejected_taken[0] += 1
        raise
    rejected_taken[1] += 1
    params = MultiHeadParams(*(data.draw(sf.tensors(shape, 1.0), label=name)
                               for name, shape in zip(("W^Q", "W^K", "W^V", "W^O"), shapes)), h)
    query = data.draw(sf.tensors((b, t_q, d)), label="query")
    source = data.draw(sf.tensors((b, t_k, d)), label="source")
    assert tuple(params.w_o.shape) == (h * d_v, d), f"W^O is {tuple(params.w_o.shape)}, not (h d_v, d_model)"
    out = ctx.multihead_attention(query, source, source, params)
    ctx.assert_close(out, _formula(query, source, params), f"MultiHead with d_v={d_v} vs Concat(heads) W^O",
                     scale=_scale(query, source, params))


@claim_property("multihead.concat-width", needs=("attention",), expect="counterexample")
@given(h=sf.dimension(1, 4), head_width=sf.dimension(1, 4), d_v=sf.dimension(1, 5))
@example(h=2, head_width=2, d_v=3)
def the_concat_has_width_d_model_as_written(ctx: Context, h, head_width, d_v) -> None:
    """As written: ``Concat(head_1..head_h)`` has width ``d_model`` (``W^O``: ``d_model x d_model``) for any ``d_v``.

    The heads are the implementation's attention of each head's projections, each checked
    against the formula, then concatenated, as the documents' code builds them.
    """
    d_model = h * head_width
    x = _seeded((1, 2, d_model), 0)
    p = MultiHeadParams(_seeded((d_model, d_model), 1), _seeded((d_model, d_model), 2), _seeded((d_model, h * d_v), 3),
                        _seeded((h * d_v, d_model), 4), h)
    heads = []
    for i in range(h):
        q, k = x @ p.w_q[:, i * head_width:(i + 1) * head_width], x @ p.w_k[:, i * head_width:(i + 1) * head_width]
        v = x @ p.w_v[:, i * d_v:(i + 1) * d_v]
        head = ctx.attention(q, k, v).output  # (1, 2, d_v): the shape is checked against the inputs
        ctx.assert_close(head, attention_formula(q, k, v)[0], f"head {i}")
        heads.append(head)
    width = torch.cat(heads, dim=-1).shape[-1]
    assert width == d_model, f"d_model={d_model}, h={h}, d_v={d_v}: Concat has width h d_v = {width}, not d_model"


# -- multihead.cost-equal --------------------------------------------------------------
#: Contexts whose implementation's kernels ``FlopCounterMode`` was found not to see, with why.
_INVISIBLE: "weakref.WeakKeyDictionary[object, str]" = weakref.WeakKeyDictionary()


def _flops(ctx: Context, query: torch.Tensor, source: torch.Tensor, params: MultiHeadParams) -> int:
    """FLOPs ``FlopCounterMode`` counts in one call of the implementation."""
    with ctx.counting_flops() as counted:  # FlopCounterMode, in the implementation's worker
        ctx.multihead_attention(query, source, source, params)
    return counted[0]


@claim_property("multihead.cost-equal", needs=MHA)
# Drawn freely, not from the shape plans: a law over sizes, and sizes are all the row draws (from the plans it
# would check 4 examples).
@given(h=st.integers(2, 4), head_width=st.integers(1, 4), b=st.integers(1, 2), t_q=st.integers(1, 5),
       t_k=st.integers(1, 5))
@example(h=2, head_width=2, b=1, t_q=3, t_k=2)  # first: settles at once whether the counter sees the kernels
def h_heads_of_width_d_over_h_cost_the_flops_of_one_head_of_width_d(ctx: Context, h, head_width, b, t_q, t_k) -> None:
    """Fixed ``d_model, t_q, t_k``: FLOPs(``h`` heads of width ``d_model / h``) = FLOPs(one of width ``d_model``)."""
    if ctx not in _INVISIBLE:  # once decided, later examples stop at once instead of re-measuring
        _measure_flops(ctx, h, head_width, b, t_q, t_k)
    if ctx in _INVISIBLE:  # one raise for both cases, so that Hypothesis replays it consistently
        raise NotApplicable(_INVISIBLE[ctx])


def _measure_flops(ctx: Context, h: int, head_width: int, b: int, t_q: int, t_k: int) -> None:
    """Assert the FLOPs are equal, or record in ``_INVISIBLE`` that the counter cannot see the kernels."""
    d = h * head_width  # FLOPs depend on shapes only, so the values are fixed pseudo-random ones
    params = MultiHeadParams(*(_seeded((d, d), seed) for seed in range(4)), h)
    query, source = _seeded((b, t_q, d), 4), _seeded((b, t_k, d), 5)
    projections = 2 * b * d * d * (2 * t_q + 2 * t_k)  # X W^Q, S W^K, S W^V, Concat W^O
    many, one = _flops(ctx, query, source, params), _flops(ctx, query, source, _with_heads(params, 1))
    if min(many, one) <= projections:  # the 4 b t_q t_k d FLOPs of Q K^T and A V went unseen
        _INVISIBLE[ctx] = (
            f"FlopCounterMode cannot see this implementation's kernels: it counts {many} FLOPs with h={h} "
            f"and {one} with h=1, no more than the {projections} of the projections alone"
        )
        return
    assert many == one, (
        f"d_model={d}, B={b}, t_q={t_q}, t_k={t_k}: {many} FLOPs with h={h} heads of width {head_width}, "
        f"{one} FLOPs with one head of width {d}"
    )


@claim_property("multihead.cost-equal", needs=(), about="library")
@given(h=st.integers(1, 8), head_width=st.integers(1, 8))
def the_projections_have_four_d_model_squared_parameters_for_every_h(ctx: Context, h, head_width) -> None:
    """PyTorch's ``nn.MultiheadAttention(d_model, h)`` holds ``4 d_model (h d_k) = 4 d_model^2`` numbers for any ``h``.

    (Counting shapes the property would build itself could not fail; the module's own
    parameters can.)
    """
    d_model = h * head_width
    module = torch.nn.MultiheadAttention(d_model, h, bias=False)
    count = sum(w.numel() for w in module.parameters())
    assert count == 4 * d_model**2, f"nn.MultiheadAttention({d_model}, {h}) has {count} parameters, not 4 d_model^2"


# -- multihead.cross-attention ---------------------------------------------------------
@claim_property("multihead.cross-attention", needs=MHA)
@given(case=cross_cases())
@example(case=_CROSS)
def cross_attention_output_has_t_q_rows_and_matches_the_formula(ctx: Context, case) -> None:
    """``t_q != t_k``: ``MultiHead(X, S, S)`` is ``(B, t_q, d_model)`` and equals ``Concat(head_i(X, S)) W^O``."""
    query, source, params = case
    out = ctx.multihead_attention(query, source, source, params)  # shape checked: (B, t_q, d_model)
    ctx.assert_close(out, _formula(query, source, params), "cross-attention vs Concat(heads) W^O",
                     scale=_scale(query, source, params))


@st.composite
def two_sequences(draw: st.DrawFn, max_batch: int = 2, max_t: int = 5, max_d: int = 4):
    """A target ``Y (B, t_y, d)``, a source ``X (B, t_x, d)`` with ``t_y != t_x``, projections ``(3, d, d)``."""
    large = draw(sf.realistic())  # one in four: batch 3-4, lengths and width 7-64
    b, d = draw(sf.sizes(large, 1, max_batch, "batch")), draw(sf.sizes(large, 1, max_d, "d"))
    t_y = draw(sf.sizes(large, 1, max_t, "t"))
    t_x = draw(sf.sizes(large, 1, max_t, "t").filter(lambda t: t != t_y))
    return draw(sf.tensors((b, t_y, d))), draw(sf.tensors((b, t_x, d))), draw(sf.tensors((3, d, d), sf.projection_bound(d)))


@claim_property("multihead.cross-attention", needs=("attention",))
@given(case=two_sequences())
@example(case=(_CROSS[0], _CROSS[1], torch.stack([_CROSS[2].w_q, _CROSS[2].w_k, _CROSS[2].w_v])))
def one_head_cross_attention_has_a_row_per_target_position(ctx: Context, case) -> None:
    """``CA(Y, X) = Attention(Y W^Q, X W^K, X W^V)`` is ``(B, t_y, d_v)`` for any lengths ``t_y != t_x``."""
    y, x, w = case
    out = ctx.attention(y @ w[0], x @ w[1], x @ w[2]).output  # shape checked: (B, t_y, d_v)
    expected, _ = attention_formula(y @ w[0], x @ w[1], x @ w[2])
    ctx.assert_close(out, expected, "CA(Y, X) vs Attention(YW^Q, XW^K, XW^V)",
                     scale=x.shape[1] * max(1.0, (x @ w[2]).abs().amax().item()))


@claim_property("multihead.cross-attention", needs=MHA)
@given(case=cross_cases(), data=st.data())
def keys_and_values_from_different_sequences_enter_each_head_apart(ctx: Context, case, data) -> None:
    """``MultiHead(Q, K, V)`` with ``K != V``: head ``i`` scores against ``K W_i^K`` and averages ``V W_i^V``.

    Needs ``separate_key_value`` True: implementations that project keys and values from
    one sequence (BERT, GPT-2, Llama, x-transformers) declare False and are not asked.
    """
    ctx.require("separate_key_value", True)
    query, key, params = case
    value = data.draw(sf.tensors(tuple(key.shape)), label="value")  # (B, t_k, d_model), drawn apart from key
    out = ctx.multihead_attention(query, key, value, params)  # shape checked: (B, t_q, d_model)
    expected = multihead_formula(query, key, params.w_q, params.w_k, params.w_v, params.w_o, params.h, value=value)
    ctx.assert_close(out, expected, "MultiHead(Q, K, V) with K != V vs Concat(heads) W^O",
                     scale=_scale(query, value, params))


@claim_property("multihead.cross-attention", needs=MHA)
@given(case=sf.multihead_cases(self_attention=True))
@example(case=sf.MultiHeadCase(_CROSS[1], _CROSS[1], _CROSS[2]))
def self_attention_is_cross_attention_with_the_query_as_source(ctx: Context, case) -> None:
    """Self-attention is ``MultiHead(X, S, S)`` at ``S = X``: the formula with source ``X``; a copy of ``X`` agrees."""
    x, p = case.query, case.params
    out = ctx.multihead_attention(x, x, x, p)
    ctx.assert_close(out, _formula(x, x, p), "self-attention vs Concat(heads) W^O with S = X", scale=_scale(x, x, p))
    ctx.assert_close(ctx.multihead_attention(x, x.clone(), x.clone(), p), out,
                     "cross-attention with a copy of X as source vs self-attention", scale=_scale(x, x, p))


@claim_property("multihead.cross-attention", needs=MHA)
@given(case=cross_cases(), i=st.integers(0, 63), row=sf.tensors((4, 64)))
@example(case=_CROSS, i=0, row=_seeded((4, 64), 20))
def changing_query_row_i_changes_only_output_row_i(ctx: Context, case, i, row) -> None:
    """With the source fixed and no mask, output row ``i`` depends only on query row ``i``."""
    query, source, params = case
    i = i % query.shape[1]
    changed = query.clone()
    changed[:, i] = row[: query.shape[0], : params.d_model]  # (B, d_model): a new query row i
    out, out_changed = (ctx.multihead_attention(q, source, source, params) for q in (query, changed))
    others = [j for j in range(query.shape[1]) if j != i]
    ctx.assert_close(out_changed[:, others], out[:, others], f"output rows other than {i} after changing query row {i}",
                     scale=_scale(query, source, params))
