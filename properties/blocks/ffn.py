"""Properties of the position-wise feed-forward network (``spec/blocks/ffn.md``).

Expected values are the formula written out here in float64 (``act(x W_1 + b_1) W_2 + b_2``,
or the same map as a width-1 convolution); invariances compare the implementation with
itself. The collapse properties stack the implementation's feed-forward network with
self-attention computed here, in float64, by the reference.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from hypothesis import assume, example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.properties.attention.attention_depth import (
    DEPTH,
    collapse_case,
    relative_residual,
    rounding_floor,
)
from specformer.reference.attention.attention import scaled_dot_product_attention

from . import strategies as sf

#: The non-linearities by the protocol's names, written out here.
ACTIVATIONS = {
    "relu": lambda z: z.clamp(min=0.0),
    "gelu": lambda z: 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0))),
    "gelu_tanh": lambda z: 0.5 * z * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3))),
}


@st.composite
def ffn_cases(draw: st.DrawFn, activations: tuple[str, ...] = tuple(ACTIVATIONS)):
    """``x (B, t, d_model)``, ``w_1, b_1, w_2, b_2`` and an activation name."""
    if sf.realistic(draw):  # one example in three at the sizes models use
        b, t = draw(sf.dimension(3, 4)), draw(sf.dimension(6, 64))
        d_model, d_ff = draw(sf.dimension(9, 64)), draw(sf.dimension(17, 256))
    else:
        b, t = draw(sf.dimension(1, 2)), draw(sf.dimension(1, 5))
        d_model, d_ff = draw(sf.dimension(1, 8)), draw(sf.dimension(1, 16))
    x = draw(sf.tensors((b, t, d_model), 2.0), label="x")
    w = sf.layer_weights(draw(sf.seeds(), label="seed"), d_model, d_ff, ("w_1", "b_1", "w_2", "b_2"))
    return x, w["w_1"], w["b_1"], w["w_2"], w["b_2"], draw(st.sampled_from(activations), label="activation")


def ffn_formula(x, w_1, b_1, w_2, b_2, activation: str = "relu") -> torch.Tensor:
    """``act(x W_1 + b_1) W_2 + b_2`` in the dtype of its inputs."""
    return ACTIVATIONS[activation](x @ w_1 + b_1) @ w_2 + b_2


@claim_property("ffn.formula", needs=("feed_forward",))
@given(case=ffn_cases())
@example(case=(torch.tensor([[[1.0, -1.0]]], dtype=torch.float64), torch.eye(2, dtype=torch.float64),
               torch.zeros(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64),
               torch.zeros(2, dtype=torch.float64), "relu"))
def the_feed_forward_network_is_two_affine_maps_around_the_activation(ctx: Context, case) -> None:
    """``FFN(x) = max(0, x W_1 + b_1) W_2 + b_2`` (and with GELU or its tanh form where asked)."""
    x, w_1, b_1, w_2, b_2, activation = case
    activation = sf.within(ctx, "activation", activation, tuple(ACTIVATIONS))
    out = ctx.feed_forward(x, w_1, b_1, w_2, b_2, activation=activation)
    ctx.assert_close(out, ffn_formula(x, w_1, b_1, w_2, b_2, activation), f"FFN(x) with {activation}", scale=4,
                     same_dtype=lambda dt: ffn_formula(*(a.to(dt) for a in case[:5]), activation))


@claim_property("ffn.position-wise", needs=("feed_forward",))
@given(case=ffn_cases(), data=st.data())
def each_position_goes_through_the_same_network_on_its_own(ctx: Context, case, data) -> None:
    """Replacing every other token leaves a token's output unchanged, and permuting positions permutes outputs."""
    x, w_1, b_1, w_2, b_2, activation = case
    activation = sf.within(ctx, "activation", activation, tuple(ACTIVATIONS))
    b, t, d = x.shape
    keep = (data.draw(st.integers(0, b - 1), label="sequence"), data.draw(st.integers(0, t - 1), label="position"))
    x2 = data.draw(sf.tensors((b, t, d), 2.0), label="other tokens").clone()
    x2[keep] = x[keep]
    perm = data.draw(sf.permutations_of(t), label="permutation")
    out = ctx.feed_forward(x, w_1, b_1, w_2, b_2, activation=activation)
    out2 = ctx.feed_forward(x2, w_1, b_1, w_2, b_2, activation=activation)
    ctx.assert_close(out2[keep], out[keep], f"FFN output at {keep} after changing every other token", scale=4)
    permuted = ctx.feed_forward(x[:, perm], w_1, b_1, w_2, b_2, activation=activation)
    ctx.assert_close(permuted, out[:, perm], f"FFN of the positions permuted by {perm.tolist()}", scale=4)


def as_convolution(x, w_1, b_1, w_2, b_2, activation: str) -> torch.Tensor:
    """The network as two ``conv1d`` with kernel width 1 over the sequence (channels = features)."""
    seq = x.transpose(1, 2)  # (B, t, d_model) -> (B, d_model, t): features as channels
    hidden = F.conv1d(seq, w_1.T[:, :, None], b_1)  # kernel (d_ff, d_model, 1): (B, d_ff, t)
    out = F.conv1d(ACTIVATIONS[activation](hidden), w_2.T[:, :, None], b_2)  # kernel (d_model, d_ff, 1)
    return out.transpose(1, 2)  # (B, d_model, t) -> (B, t, d_model)


@claim_property("ffn.conv1x1", needs=("feed_forward",))
@given(case=ffn_cases())
def the_feed_forward_network_is_a_convolution_of_width_one(ctx: Context, case) -> None:
    """``FFN`` over the sequence equals ``conv1d(act(conv1d(x; W_1^T, b_1)); W_2^T, b_2)`` with kernel width 1."""
    case = (*case[:5], sf.within(ctx, "activation", case[5], tuple(ACTIVATIONS)))
    out = ctx.feed_forward(*case[:5], activation=case[5])
    ctx.assert_close(out, as_convolution(*case), f"FFN against two width-1 convolutions ({case[5]})", scale=4,
                     same_dtype=lambda dt: as_convolution(*(a.to(dt) for a in case[:5]), case[5]))


#: The base and big models of the slides' table: (d_model, h, d_ff), each head of width d_v = d_model / h.
TABLE_MODELS: dict[str, tuple[int, int, int]] = {"base": (512, 8, 2048), "big": (1024, 16, 4096)}
#: "Much wider" read as at least an order of magnitude.
MUCH_WIDER = 10


def _widths_wrong(widths: dict[str, tuple[int, int, int]]) -> tuple[dict, dict]:
    """The configurations ``(d_model, h, d_ff)`` where ``d_ff != 4 d_model``, and those where ``d_ff / d_v``,
    with ``d_v = d_model / h``, is below :data:`MUCH_WIDER` (or ``h`` does not divide ``d_model``)."""
    not_four = {name: (d, ff) for name, (d, _, ff) in widths.items() if ff != 4 * d}
    narrow = {name: (ff, d, h) for name, (d, h, ff) in widths.items() if d % h or ff < MUCH_WIDER * (d // h)}
    return not_four, narrow


@claim_property("ffn.expansion", needs=(), about="published-numbers", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def the_tables_hidden_layer_is_four_times_the_model_and_much_wider_than_a_head(ctx: Context, _) -> None:
    """Arithmetic on the slides' table: ``d_ff = 4 d_model`` and ``d_ff / d_v >= 10`` with ``d_v = d_model / h``
    computed from the table's own ``d_model`` and ``h`` (32 for base, 64 for big)."""
    not_four, narrow = _widths_wrong(TABLE_MODELS)
    assert not not_four, f"the table's d_ff != 4 d_model (d_model, d_ff): {not_four}"
    assert not narrow, f"the table's d_ff is not {MUCH_WIDER} times d_v = d_model / h (d_ff, d_model, h): {narrow}"


def library_widths() -> dict[str, tuple[int, int, int]]:
    """``(d_model, h, d_ff)`` of the libraries' default configurations (those installed), ``d_ff`` read from
    the module each builds."""
    widths = {}
    layer = torch.nn.TransformerEncoderLayer(512, 8, device="meta")
    widths["torch.nn.TransformerEncoderLayer(512, 8)"] = (512, layer.self_attn.num_heads, layer.linear1.out_features)
    try:
        from transformers import BertConfig, GPT2Config
        from transformers.models.gpt2.modeling_gpt2 import GPT2MLP
    except ImportError:
        return widths
    bert = BertConfig()
    widths["BertConfig()"] = (bert.hidden_size, bert.num_attention_heads, bert.intermediate_size)
    gpt2 = GPT2Config()
    inner = gpt2.n_inner if gpt2.n_inner is not None else 4 * gpt2.n_embd  # GPT2Block's rule
    mlp = GPT2MLP(inner, gpt2).to("meta")
    widths["GPT2Config() / GPT2MLP"] = (gpt2.n_embd, gpt2.n_head, mlp.c_fc.nf)
    return widths


@claim_property("ffn.expansion", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def the_hidden_layer_is_four_times_as_wide(ctx: Context, _) -> None:
    """The libraries' defaults agree with the table: PyTorch's default layer, BERT's and GPT-2's configurations
    build ``d_ff = 4 d_model``, and ``d_ff / d_v >= 10`` with their own ``d_v = d_model / h`` (32, 48, 48)."""
    not_four, narrow = _widths_wrong(library_widths())
    assert not not_four, f"d_ff != 4 d_model (d_model, d_ff): {not_four}"
    assert not narrow, f"d_ff is not {MUCH_WIDER} times d_v = d_model / h (d_ff, d_model, h): {narrow}"


# --- the collapse -----------------------------------------------------------------------------------


def ffn_layers(seed: int, d: int, depth: int = DEPTH) -> list[tuple[torch.Tensor, ...]]:
    """Per layer ``W_1 (d, 4d), b_1, W_2 (4d, d), b_2`` with ``||W_1||_2 = ||W_2||_2 = 1``: a 1-Lipschitz FFN."""
    g = torch.Generator().manual_seed(seed)
    layers = []
    for _ in range(depth):
        w_1, w_2 = torch.randn(d, 4 * d, generator=g, dtype=torch.float64), torch.randn(4 * d, d, generator=g,
                                                                                           dtype=torch.float64)
        b_1, b_2 = torch.rand(4 * d, generator=g, dtype=torch.float64) - 0.5, torch.rand(d, generator=g,
                                                                                          dtype=torch.float64) - 0.5
        layers.append((w_1 / torch.linalg.matrix_norm(w_1, 2), b_1, w_2 / torch.linalg.matrix_norm(w_2, 2), b_2))
    return layers


def attention_ffn_stack(ctx: Context, seed: int, t: int, d: int, gain: float) -> tuple[float, float]:
    """``r(X_0)`` and ``r(X_L)`` of ``X_l = FFN_l(SA_l(X_{l-1}))``: the reference's attention, the implementation's FFN."""
    x, attention = collapse_case(seed, t, d, gain)
    r0 = relative_residual(x)
    for (w_q, w_k, w_v), ffn in zip(attention, ffn_layers(seed + 1, d)):
        x = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v).output  # (1, t, d)
        x = ctx.feed_forward(x, *ffn)
    return r0, relative_residual(x)


@claim_property("ffn.against-collapse", needs=("feed_forward",))
@given(seed=sf.seeds(), t=sf.dimension(3, 8), d=sf.dimension(2, 6), gain=st.floats(0.0, 1.0))
def attention_with_feed_forward_networks_still_collapses(ctx: Context, seed, t, d, gain) -> None:
    """Corrected: with a 1-Lipschitz FFN after every attention layer and no residual connections the tokens
    still collapse, ``r(X_12) <= 1e-6 r(X_0)`` (up to rounding), on the inputs of ``attention.rank-collapse``."""
    r0, r_l = attention_ffn_stack(ctx, seed, t, d, gain)
    bound = 1e-6 * r0 + rounding_floor(ctx)
    assert r_l <= bound, f"attention + FFN x {DEPTH}: r(X_L) = {r_l:.3g} > {bound:.3g} (r(X_0) = {r0:.3g})"


@claim_property("ffn.against-collapse", needs=("feed_forward",), expect="counterexample")
@given(seed=sf.seeds(), t=sf.dimension(3, 8), d=sf.dimension(2, 6), gain=st.floats(0.0, 1.0))
@example(seed=0, t=4, d=3, gain=0.5)
def feed_forward_networks_keep_the_tokens_apart_as_written(ctx: Context, seed, t, d, gain) -> None:
    """As written (collapse happens *without* FFNs): with an FFN after every attention layer the tokens stay
    apart, ``r(X_12) >= r(X_0) / 10``."""
    r0, r_l = attention_ffn_stack(ctx, seed, t, d, gain)
    assert r_l >= r0 / 10, f"attention + FFN x {DEPTH}: r(X_L) = {r_l:.3g}, {r_l / r0:.3g} of r(X_0) = {r0:.3g}"


@claim_property("ffn.against-collapse", needs=("encoder_layer",), dtypes=("float32", "float64"))
@given(seed=sf.seeds(), t=sf.dimension(3, 8), heads=sf.dimension(1, 2), d_k=sf.dimension(2, 4))
def pre_norm_encoder_layers_keep_the_tokens_apart(ctx: Context, seed, t, heads, d_k) -> None:
    """Twelve pre-norm encoder layers (attention and FFN, each a residual sublayer) keep ``r(X_12) >= r(X_0) / 100``.

    Inputs as in ``attention.rank-collapse``; weights of variance ``1 / fan_in``, ``gamma`` in
    ``[1/2, 3/2]``, biases and ``beta`` in ``[-1/2, 1/2]``, ``d_ff = 4 d_model``, ``d_model >= 4``.
    Measured over 263 random cases: minimum ``r(X_12) / r(X_0)`` 0.043, median 0.15. (Post-norm layers
    with the same weights lose the differences geometrically: median 1.8e-3, minimum 2.9e-7.)
    """
    ctx.require("norm_first", True)
    d = heads * d_k
    assume(d >= 4)
    x, _ = collapse_case(seed, t, d, 1.0)
    r0 = relative_residual(x)
    for layer in range(DEPTH):
        x = ctx.encoder_layer(x, sf.layer_weights(seed + layer, d, 4 * d), heads=heads, norm_first=True)
    r_l = relative_residual(x)
    assert r_l >= r0 / 100, f"{DEPTH} pre-norm layers: r(X_L) = {r_l:.3g}, {r_l / r0:.3g} of r(X_0) = {r0:.3g}"


#: The activations as PyTorch's own functions, a second source independent of :data:`ACTIVATIONS`.
TORCH_ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"),
}


@st.composite
def identity_ffn_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, str]:
    """``x (B, t, d)`` with entries in ``[-4, 4]`` (``d`` up to 64), a first bias ``b_1 (d,)`` and an activation."""
    b, t, d = draw(sf.dimension(1, 3)), draw(sf.dimension(1, 8)), draw(sf.dimension(1, 64))
    g = torch.Generator().manual_seed(draw(sf.seeds()))
    x = 8 * torch.rand(b, t, d, generator=g, dtype=torch.float64) - 4  # (B, t, d)
    b_1 = 4 * torch.rand(d, generator=g, dtype=torch.float64) - 2  # (d,)
    return x, b_1, draw(st.sampled_from(tuple(TORCH_ACTIVATIONS)), label="activation")


@claim_property("ffn.formula", needs=("feed_forward",))
@given(case=identity_ffn_cases())
@example(case=(torch.tensor([[[-1.0, 0.5, 1.0]]], dtype=torch.float64),
               torch.tensor([0.0, -1.0, 0.0], dtype=torch.float64), "gelu"))
def with_identity_weights_the_network_is_the_activation_of_x_plus_the_first_bias(ctx: Context, case) -> None:
    """A second check of the activation and of ``b_1``: with ``W_1 = W_2 = I`` and ``b_2 = 0``,
    ``FFN(x) = act(x + b_1)`` entry by entry (PyTorch's ``relu``/``gelu`` as the expected activation), and
    the same ``x + b_1`` reached as ``x`` with no bias gives the same output."""
    x, b_1, activation = case
    activation = sf.within(ctx, "activation", activation, tuple(TORCH_ACTIVATIONS))
    d = x.shape[-1]
    eye, zeros = torch.eye(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
    out = ctx.feed_forward(x, eye, b_1, eye, zeros, activation=activation)
    ctx.assert_close(out, TORCH_ACTIVATIONS[activation](x + b_1), f"FFN with identity weights ({activation})",
                     scale=4)
    moved = ctx.feed_forward(x + b_1, eye, zeros, eye, zeros, activation=activation)
    ctx.assert_close(out, moved, f"FFN(x; b_1) vs FFN(x + b_1; 0) ({activation})", scale=4)
