"""Properties of the encoder layer: residual sublayers, post-norm and pre-norm (``spec/blocks/encoder.md``).

Expected values are the layer written out here in float64 from the reference's parts
(multi-head attention with biases, the feed-forward network, layer normalisation); the
residual property compares the implementation with the identity and with two norms.
LayerNorm's ``eps`` is drawn (:func:`~.strategies.epsilons`) wherever the layer's output
depends on it, and the layer properties' explicit example gives ``eps = 0.1`` to tokens of
small spread (:func:`small_spread_case`), so a layer that ignores the ``eps`` it is given fails.
"""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context, assert_close
from specformer.properties.tolerances import Tolerance
from specformer.property import claim_property
from specformer.reference.blocks.attention_sublayer import multi_head
from specformer.reference.blocks.ffn import feed_forward
from specformer.reference.blocks.layernorm import layer_norm

from . import strategies as sf

EPS = sf.DEFAULT_EPS
#: ``eps`` of the explicit examples with tokens of small spread (:func:`small_spread_case`).
VISIBLE_EPS = 0.1


def _sublayers(w: dict[str, torch.Tensor], heads: int, activation: str, causal: bool, eps: float = EPS):
    def attention(h: torch.Tensor) -> torch.Tensor:
        return multi_head(h, h, w, heads=heads, causal=causal)

    def ffn(h: torch.Tensor) -> torch.Tensor:
        return feed_forward(h, w["w_1"], w["b_1"], w["w_2"], w["b_2"], activation)

    def norm(h: torch.Tensor, i: int) -> torch.Tensor:
        return layer_norm(h, w[f"gamma_{i}"], w[f"beta_{i}"], eps)

    return attention, ffn, norm


def post_norm_layer(x, w, heads, activation="relu", causal=False, eps=EPS) -> torch.Tensor:
    """``y = LN_1(x + SA(x))``, ``LN_2(y + FFN(y))``."""
    attention, ffn, norm = _sublayers(w, heads, activation, causal, eps)
    y = norm(x + attention(x), 1)
    return norm(y + ffn(y), 2)


def pre_norm_layer(x, w, heads, activation="relu", causal=False, eps=EPS) -> torch.Tensor:
    """``y = x + SA(LN_1(x))``, ``y + FFN(LN_2(y))``."""
    attention, ffn, norm = _sublayers(w, heads, activation, causal, eps)
    y = x + attention(norm(x, 1))
    return y + ffn(norm(y, 2))


def one_norm_layer(x, w, heads, activation="relu", causal=False) -> torch.Tensor:
    """001's flowchart read literally: self-attention, feed-forward, one Add & LayerNorm: ``LN(x + FFN(SA(x)))``."""
    attention, ffn, norm = _sublayers(w, heads, activation, causal)
    return norm(x + ffn(attention(x)), 2)


def layer_in_dtype(layer, case: sf.LayerCase, activation: str, causal: bool, eps: float = EPS):
    """``layer`` (written out) on ``case`` computed in a given dtype (``ctx.assert_close``'s ``same_dtype``)."""

    def compute(dtype: torch.dtype) -> torch.Tensor:
        return layer(case.x.to(dtype), {k: v.to(dtype) for k, v in case.weights.items()}, case.heads, activation,
                     causal, eps)

    return compute


ACTIVATIONS = ("relu", "gelu", "gelu_tanh")
activations = st.sampled_from(ACTIVATIONS)


def gelu_tail_case() -> sf.LayerCase:
    """A layer whose feed-forward pre-activations all sit near ``-3``, where the tanh approximation of GELU is
    off by about ``4e-4`` (10% of ``GELU(-3) = -0.004``), with ``w_2`` entries of ``+-1`` (alternating signs
    across ``d_model``, so that ``LN_2`` does not remove the difference): the 8 hidden units add up to a
    difference of about ``3e-3``, several times float32's tolerance, in both layer orders."""
    d_model, d_ff = 4, 8
    g = torch.Generator().manual_seed(2024)
    x = 4 * torch.rand(1, 3, d_model, generator=g, dtype=torch.float64) - 2
    memory = 4 * torch.rand(1, 2, d_model, generator=g, dtype=torch.float64) - 2
    w = sf.layer_weights(2025, d_model, d_ff)
    signs = torch.tensor([1.0, -1.0] * (d_model // 2), dtype=torch.float64)
    w.update(w_1=w["w_1"] / 10, b_1=torch.full((d_ff,), -3.0, dtype=torch.float64),
             w_2=torch.ones(d_ff, 1, dtype=torch.float64) * signs)
    return sf.LayerCase(x, memory, w, 2)


def small_spread_case() -> sf.LayerCase:
    """A layer of ``d_model = 4``, two heads, whose tokens spread by about 0.05 around different means (biased
    variance about ``2 10^-3``): with ``eps = 0.1`` a pre-norm ``LN_1`` scales them by ``1/sqrt(0.102)``, with
    ``1e-5`` in its place by ``1/sqrt(0.002)``, seven times as much; in a post-norm layer the attention
    sublayer's spread (about 0.5) meets ``eps = 0.1`` in ``LN_1``. Both orders then differ by far more than
    any dtype's tolerance."""
    g = torch.Generator().manual_seed(2026)
    x = 0.2 * torch.rand(1, 3, 4, generator=g, dtype=torch.float64) + torch.tensor([[[-1.0], [0.5], [1.5]]],
                                                                                      dtype=torch.float64)
    memory = 4 * torch.rand(1, 2, 4, generator=g, dtype=torch.float64) - 2
    return sf.LayerCase(x, memory, sf.layer_weights(2027, 4, 8), 2)


def _layer_label(kind: str, activation: str, causal: bool, eps: float) -> str:
    return f"{kind} layer ({activation}{', causal' if causal else ''}, eps = {eps:g})"


@claim_property("encoder.post-norm", needs=("encoder_layer",))
@given(case=sf.layer_cases(), activation=activations, causal=st.booleans(), eps=sf.epsilons())
@example(case=gelu_tail_case(), activation="gelu", causal=False, eps=EPS)  # tanh-GELU for GELU is caught
@example(case=small_spread_case(), activation="relu", causal=False, eps=VISIBLE_EPS)  # so is an eps of its own
def the_post_norm_layer_adds_then_normalises_after_each_sublayer(ctx: Context, case, activation, causal,
                                                                 eps) -> None:
    """``norm_first=False``: ``y = LN_1(x + MultiHead(x)),\\ out = LN_2(y + FFN(y))``, both norms with the ``eps``
    given."""
    ctx.require("norm_first", False)
    activation = sf.within(ctx, "activation", activation, ACTIVATIONS)
    out = ctx.encoder_layer(case.x, case.weights, heads=case.heads, norm_first=False, activation=activation,
                            eps=eps, causal=causal)
    ctx.assert_close(out, post_norm_layer(case.x, case.weights, case.heads, activation, causal, eps),
                     _layer_label("post-norm", activation, causal, eps), scale=16,
                     same_dtype=layer_in_dtype(post_norm_layer, case, activation, causal, eps))


@claim_property("encoder.pre-norm", needs=("encoder_layer",))
@given(case=sf.layer_cases(), activation=activations, causal=st.booleans(), eps=sf.epsilons())
@example(case=gelu_tail_case(), activation="gelu", causal=False, eps=EPS)  # tanh-GELU for GELU is caught
@example(case=small_spread_case(), activation="relu", causal=False, eps=VISIBLE_EPS)  # so is an eps of its own
def the_pre_norm_layer_normalises_each_sublayers_input(ctx: Context, case, activation, causal, eps) -> None:
    """``norm_first=True``: ``y = x + MultiHead(LN_1(x)),\\ out = y + FFN(LN_2(y))``, both norms with the ``eps``
    given."""
    ctx.require("norm_first", True)
    activation = sf.within(ctx, "activation", activation, ACTIVATIONS)
    out = ctx.encoder_layer(case.x, case.weights, heads=case.heads, norm_first=True, activation=activation,
                            eps=eps, causal=causal)
    ctx.assert_close(out, pre_norm_layer(case.x, case.weights, case.heads, activation, causal, eps),
                     _layer_label("pre-norm", activation, causal, eps), scale=16,
                     same_dtype=layer_in_dtype(pre_norm_layer, case, activation, causal, eps))


def _silenced(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The weights with both sublayers' output maps zeroed: ``SA = 0`` and ``FFN = 0``."""
    quiet = dict(weights)
    for key in ("w_o", "b_o", "w_2", "b_2"):
        quiet[key] = torch.zeros_like(weights[key])
    return quiet


@claim_property("encoder.residual", needs=("encoder_layer",))
@given(case=sf.layer_cases(), norm_first=st.booleans(), eps=sf.epsilons())
def with_silent_sublayers_only_the_residual_path_is_left(ctx: Context, case, norm_first, eps) -> None:
    """With ``SA = FFN = 0`` the residual path alone remains: a pre-norm layer is the identity (whatever
    ``eps``), a post-norm layer is ``LN_2(LN_1(x))`` with the ``eps`` given."""
    norm_first = sf.within(ctx, "norm_first", norm_first, (False, True))
    w = _silenced(case.weights)
    out = ctx.encoder_layer(case.x, w, heads=case.heads, norm_first=norm_first, eps=eps)
    if norm_first:
        ctx.assert_close(out, case.x, "pre-norm layer with silent sublayers (the identity)", scale=4)
    else:
        expected = layer_norm(layer_norm(case.x, w["gamma_1"], w["beta_1"], eps), w["gamma_2"], w["beta_2"], eps)
        ctx.assert_close(out, expected, "post-norm layer with silent sublayers, LN_2(LN_1(x))", scale=16)


@claim_property("encoder.sublayer-order", needs=("encoder_layer",))
@given(case=sf.layer_cases(), eps=sf.epsilons())
def attention_has_its_own_add_and_norm_before_the_feed_forward_network(ctx: Context, case, eps) -> None:
    """Corrected: with the feed-forward network silenced, a post-norm layer is ``LN_2(LN_1(x + SA(x)))``:
    the attention sublayer is added and normalised before the network sees it."""
    ctx.require("norm_first", False)
    w = dict(case.weights, w_2=torch.zeros_like(case.weights["w_2"]), b_2=torch.zeros_like(case.weights["b_2"]))
    out = ctx.encoder_layer(case.x, w, heads=case.heads, norm_first=False, eps=eps)
    attention, _, norm = _sublayers(w, case.heads, "relu", False, eps)
    ctx.assert_close(out, norm(norm(case.x + attention(case.x), 1), 2), "post-norm layer with FFN = 0", scale=16)


@claim_property("encoder.sublayer-order", needs=("encoder_layer",), expect="counterexample")
@given(case=sf.layer_cases())
def one_add_and_norm_after_the_feed_forward_network_as_drawn(ctx: Context, case) -> None:
    """As drawn in 001's flowchart: the layer is ``LN(x + FFN(SA(x)))``, one Add & LayerNorm."""
    ctx.require("norm_first", False)
    out = ctx.encoder_layer(case.x, case.weights, heads=case.heads, norm_first=False, eps=EPS)
    ctx.assert_close(out, one_norm_layer(case.x, case.weights, case.heads), "layer as LN(x + FFN(SA(x)))", scale=16)


@claim_property("encoder.stack-depth", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def the_original_stack_has_six_layers_and_bert_base_twelve(ctx: Context, _) -> None:
    """``torch.nn.Transformer()`` stacks 6 encoder and 6 decoder layers; ``BertConfig()`` 12 layers."""
    model = torch.nn.Transformer(batch_first=True, device="meta")
    counts = {"nn.Transformer encoder": len(model.encoder.layers), "nn.Transformer decoder": len(model.decoder.layers)}
    try:
        from transformers import BertConfig
    except ImportError:
        pass
    else:
        counts["BertConfig().num_hidden_layers"] = BertConfig().num_hidden_layers
    expected = {"nn.Transformer encoder": 6, "nn.Transformer decoder": 6, "BertConfig().num_hidden_layers": 12}
    wrong = {k: (v, expected[k]) for k, v in counts.items() if v != expected[k]}
    assert not wrong, f"layer counts (found, claimed): {wrong}"


@st.composite
def stack_cases(draw: st.DrawFn, min_layers: int = 1) -> tuple[sf.LayerCase, list[dict[str, torch.Tensor]],
                                                                tuple[torch.Tensor, ...]]:
    """A layer case, ``min_layers`` to 4 layers of independent weights, and a final norm's ``(gamma, beta)``."""
    case = draw(sf.layer_cases())
    d_model, d_ff = case.weights["w_1"].shape
    n = draw(sf.dimension(min_layers, 4), label="layers")
    seed = draw(sf.seeds(), label="stack seed")
    layers = [case.weights] + [sf.layer_weights(seed + i, d_model, d_ff) for i in range(1, n)]
    final = sf.layer_weights(seed + n, d_model, d_ff, ("gamma_f", "beta_f"))
    return case, layers, (final["gamma_f"], final["beta_f"])


@claim_property("encoder.stack", needs=("encoder_stack",))
@given(stack=stack_cases(), norm_first=st.booleans(), activation=activations, causal=st.booleans(),
       post_norm_final=st.booleans(), eps=sf.epsilons())
def the_stack_is_its_layers_in_order_and_a_pre_norm_stack_ends_with_a_final_norm(
        ctx: Context, stack, norm_first, activation, causal, post_norm_final, eps) -> None:
    """``N`` layers, each with its own weights, applied in order; a pre-norm stack then applies
    ``LN_f`` (``gamma_f, beta_f``). A post-norm stack needs nothing more (its last layer ends with a norm),
    but when it is given ``final_norm`` (drawn) it applies it too, as the protocol says and as
    ``nn.TransformerEncoder(norm=...)`` does whatever the placement. Every norm uses the ``eps`` given."""
    case, layers, final = stack
    norm_first = sf.within(ctx, "norm_first", norm_first, (False, True))
    activation = sf.within(ctx, "activation", activation, ACTIVATIONS)
    final_norm = final if norm_first or post_norm_final else None
    out = ctx.encoder_stack(case.x, layers, heads=case.heads, norm_first=norm_first, final_norm=final_norm,
                            activation=activation, eps=eps, causal=causal)
    layer = pre_norm_layer if norm_first else post_norm_layer

    def run(dtype: torch.dtype) -> torch.Tensor:
        h = case.x.to(dtype)
        for w in layers:
            h = layer(h, {k: v.to(dtype) for k, v in w.items()}, case.heads, activation, causal, eps)
        return h if final_norm is None else layer_norm(h, final[0].to(dtype), final[1].to(dtype), eps)

    kind = ("pre-norm stack" if norm_first else "post-norm stack") + (" with its final norm" if final_norm else "")
    ctx.assert_close(out, run(torch.float64), f"{kind} of {len(layers)} layers ({activation}, eps = {eps:g})",
                     scale=16 * len(layers), same_dtype=run)


@claim_property("encoder.stack", needs=("encoder_stack",))
@given(stack=stack_cases(min_layers=2), data=st.data(), norm_first=st.booleans(), causal=st.booleans())
def a_stack_split_in_two_is_the_second_part_applied_to_the_first(ctx: Context, stack, data, norm_first,
                                                                   causal) -> None:
    """Composition, from the implementation's own outputs only: for any split ``1 <= k < N``,
    ``stack(x; layers) = stack(stack(x; layers[:k]); layers[k:])``, the final norm (when given) applied once,
    at the end of the second part. True of layers applied in order, each with its own weights, whatever
    the layers compute."""
    case, layers, final = stack
    norm_first = sf.within(ctx, "norm_first", norm_first, (False, True))
    k = data.draw(sf.dimension(1, len(layers) - 1), label="split after layer")  # the first part's depth
    final_norm = final if norm_first else None
    whole = ctx.encoder_stack(case.x, layers, heads=case.heads, norm_first=norm_first, final_norm=final_norm,
                              eps=EPS, causal=causal)
    first = ctx.encoder_stack(case.x, layers[:k], heads=case.heads, norm_first=norm_first, eps=EPS, causal=causal)
    second = ctx.encoder_stack(first, layers[k:], heads=case.heads, norm_first=norm_first, final_norm=final_norm,
                               eps=EPS, causal=causal)
    ctx.assert_close(whole, second, f"stack of {len(layers)} layers vs its layers 1..{k}, then {k + 1}..{len(layers)}",
                     scale=16 * len(layers))


def near_constant_token_case() -> sf.LayerCase:
    """``d_model = 2``, one head, a first token whose two features are ``9 10^-4`` apart: ``LN_1`` of it turns
    on a scale of ``sqrt(eps)``, and central differences with ``h = 1e-4`` are off from the derivative by
    ``6 10^-3`` there (seed 0), where a fixed bound of ``1e-5`` on ``D - J v - v`` failed the reference."""
    x = torch.tensor([[[0.3, 0.3009], [-1.2, 0.8]]], dtype=torch.float64)  # (1, 2, 2)
    return sf.LayerCase(x, x, sf.layer_weights(16, 2, 4), 1)


@claim_property("encoder.residual-gradient", needs=("encoder_layer",), dtypes=("float64",), max_examples=40)
@given(case=sf.layer_cases(), seed=sf.seeds())
@example(case=near_constant_token_case(), seed=0)  # central differences are 6e-3 off the derivative here
def the_derivative_through_a_residual_sublayer_is_the_identity_plus_the_sublayers(ctx: Context, case, seed) -> None:
    """Pre-norm, feed-forward network silenced, so the layer is ``x + F(x)`` with ``F = SA o LN_1``. Along a
    unit direction ``v`` the implementation's central difference ``D = (f(x + hv) - f(x - hv)) / 2h``
    (``h = 1e-4``) must be ``v`` plus the same difference of ``F`` written out here, up to rounding (the
    identity path carries ``v`` unchanged), and ``v + J_F(x) v`` (autograd on ``F``) up to the dtype's
    tolerance or twice the truncation error the written-out ``F``'s own difference has at this ``x``."""
    ctx.require("norm_first", True)
    w = dict(case.weights, w_2=torch.zeros_like(case.weights["w_2"]), b_2=torch.zeros_like(case.weights["b_2"]))
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(case.x.shape, generator=g, dtype=torch.float64)  # (B, t, d_model)
    v = v / v.norm()
    h = 1e-4
    plus = ctx.encoder_layer(case.x + h * v, w, heads=case.heads, norm_first=True, eps=EPS)
    minus = ctx.encoder_layer(case.x - h * v, w, heads=case.heads, norm_first=True, eps=EPS)
    derivative = (plus - minus) / (2 * h)  # J v, to O(h^2)
    attention, _, norm = _sublayers(w, case.heads, "relu", False)

    def sublayer(x: torch.Tensor) -> torch.Tensor:
        return attention(norm(x, 1))

    difference = (sublayer(case.x + h * v) - sublayer(case.x - h * v)) / (2 * h)  # F's quotient, same points
    _, jvp = torch.autograd.functional.jvp(sublayer, case.x, v)  # J_F v, exact up to rounding
    # The identity path. For a layer x + F(x), D minus F's quotient is ((x + hv) - (x - hv)) / 2h = v exactly:
    # the truncation error of central differences is F's on both sides and cancels. Left is rounding, each
    # value of f or F to about 1e3 u |f| in float64 (u = 1.1e-16, |f| < 10, LN's 1/sqrt(sigma^2 + eps)
    # conditioning <= 600), divided by h: about 1e-9, far inside 1e-5.
    assert (derivative - difference - v).abs().max() < 1e-5, "the identity path does not carry v unchanged"
    # The derivative. Central differences are off from J v by h^2 F'''/6 + rounding. LN's derivatives grow as
    # 1/sqrt(sigma^2 + eps)^k, so for a token whose features nearly coincide (d_model = 2, two features 1e-3
    # apart) the truncation reaches 6e-3 (near_constant_token_case), past any fixed bound; about 3 examples in
    # 100 of d_model = 2 come that close. A correct layer's D has the same truncation as F's quotient, so it may
    # be off by twice that (the suite's rule for a reference computed the same way, LOW_PRECISION_FACTOR).
    tol = Tolerance(ctx.tol.rtol * 1e4, ctx.tol.atol * 1e4)
    assert_close(derivative, v + jvp, "derivative of x + SA(LN_1(x)) along v vs v + J_SA v", tol,
                 reference_error=(difference - jvp).abs())
