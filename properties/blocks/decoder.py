"""Properties of the decoder: cross-attention, causal masking, decoder-only stacks (``spec/blocks/decoder.md``).

Expected values are the decoder layer written out here in float64 from the reference's
parts (for ``decoder.decoder-only`` also the causal pre-norm encoder layer the encoder's
properties write out, so that a library offering ``decoder_layer`` alone is judged too);
the causality properties compare the implementation with itself (outputs at earlier
positions must not move when later tokens change, a prefix alone must give the same
outputs as inside the whole sequence), and the factorisation property sums the
probabilities a small model built on the implementation's causal layers assigns.
LayerNorm's ``eps`` is drawn (:func:`~.strategies.epsilons`) in every property of the decoder
layer, and the properties that compare it with a written-out or another layer add an explicit
example giving ``eps = 0.1`` to target tokens of small spread (:func:`small_spread_case`), so a
decoder layer that ignores the ``eps`` it is given fails on every run.
"""

from __future__ import annotations

import itertools
import math

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.protocol.blocks import DECODER_KEYS, ENCODER_KEYS
from specformer.reference.blocks.attention_sublayer import multi_head
from specformer.reference.blocks.ffn import feed_forward
from specformer.reference.blocks.layernorm import layer_norm
from specformer.reference.blocks.stack import output_distribution
from specformer.reference.positions.sinusoidal import sinusoidal_encoding

from . import strategies as sf
from .encoder import VISIBLE_EPS, layer_in_dtype, pre_norm_layer

EPS = sf.DEFAULT_EPS
ACTIVATIONS = ("relu", "gelu", "gelu_tanh")
activations = st.sampled_from(ACTIVATIONS)


def decoder_layer_written_out(x: torch.Tensor, memory: torch.Tensor, w: dict[str, torch.Tensor], heads: int,
                              norm_first: bool, activation: str = "relu", eps: float = EPS) -> torch.Tensor:
    """Masked self-attention, cross-attention (queries from ``x``, keys and values from ``memory``), FFN; every
    LayerNorm with ``eps``."""

    def norm(h, i):
        return layer_norm(h, w[f"gamma_{i}"], w[f"beta_{i}"], eps)

    def sublayer(h, f, i):
        return h + f(norm(h, i)) if norm_first else norm(h + f(h), i)

    y = sublayer(x, lambda h: multi_head(h, h, w, heads=heads, causal=True), 1)
    z = sublayer(y, lambda h: multi_head(h, memory, w, heads=heads, cross=True), 2)
    return sublayer(z, lambda h: feed_forward(h, w["w_1"], w["b_1"], w["w_2"], w["b_2"], activation), 3)


def small_spread_case() -> sf.LayerCase:
    """A decoder layer of ``d_model = 4``, two heads, whose target tokens spread by about 0.05 around different
    means (biased variance about ``2 10^-3``), over a source of two tokens in ``[-2, 2]``. With ``eps = 0.1`` a
    pre-norm ``LN_1`` scales the tokens by ``1/sqrt(0.102)``, with ``1e-5`` in its place by ``1/sqrt(0.002)``,
    seven times as much; in a post-norm layer the self-attention sublayer's spread meets ``eps = 0.1`` in
    ``LN_1``. The outputs for the two values of ``eps`` differ by 1.5 (pre-norm) and 0.2 (post-norm), far more
    than any dtype's tolerance."""
    g = torch.Generator().manual_seed(2026)
    x = 0.2 * torch.rand(1, 3, 4, generator=g, dtype=torch.float64) + torch.tensor([[[-1.0], [0.5], [1.5]]],
                                                                                      dtype=torch.float64)
    memory = 4 * torch.rand(1, 2, 4, generator=g, dtype=torch.float64) - 2  # (1, 2, 4)
    return sf.LayerCase(x, memory, sf.layer_weights(2027, 4, 8, DECODER_KEYS), 2)


@claim_property("decoder.sublayer-order", needs=("decoder_layer",))
@given(case=sf.layer_cases(decoder=True), norm_first=st.booleans(), activation=activations, eps=sf.epsilons())
@example(case=small_spread_case(), norm_first=False, activation="relu", eps=VISIBLE_EPS)  # an eps of its own
@example(case=small_spread_case(), norm_first=True, activation="relu", eps=VISIBLE_EPS)  # is caught either way
def the_decoder_layer_is_masked_self_attention_cross_attention_then_the_network(
        ctx: Context, case, norm_first, activation, eps) -> None:
    """``y = Add&Norm(x, SA_causal)``, ``z = Add&Norm(y, CA(., memory))``, ``out = Add&Norm(z, FFN)``, every
    norm with the ``eps`` given."""
    norm_first = sf.within(ctx, "norm_first", norm_first, (False, True))
    activation = sf.within(ctx, "activation", activation, ACTIVATIONS)
    out = ctx.decoder_layer(case.x, case.memory, case.weights, heads=case.heads, norm_first=norm_first,
                            activation=activation, eps=eps)

    def in_dtype(dtype: torch.dtype) -> torch.Tensor:
        w = {k: v.to(dtype) for k, v in case.weights.items()}
        return decoder_layer_written_out(case.x.to(dtype), case.memory.to(dtype), w, case.heads, norm_first,
                                         activation, eps)

    expected = decoder_layer_written_out(case.x, case.memory, case.weights, case.heads, norm_first, activation, eps)
    kind = "pre-norm" if norm_first else "post-norm"
    ctx.assert_close(out, expected, f"{kind} decoder layer ({activation}, eps = {eps:g})", scale=16,
                     same_dtype=in_dtype)


@claim_property("decoder.cross-attention-sources", needs=("decoder_layer",))
@given(case=sf.layer_cases(decoder=True), norm_first=st.booleans(), data=st.data(), eps=sf.epsilons())
def queries_come_from_the_target_keys_and_values_from_the_whole_source(ctx: Context, case, norm_first,
                                                                      data, eps) -> None:
    """Reordering the source tokens leaves the output unchanged (keys and values from the source, no mask on
    them, no positions added); the output has the target's length whatever the source's."""
    norm_first = sf.within(ctx, "norm_first", norm_first, (False, True))
    perm = data.draw(sf.permutations_of(case.memory.shape[1]), label="source order")
    out = ctx.decoder_layer(case.x, case.memory, case.weights, heads=case.heads, norm_first=norm_first, eps=eps)
    shuffled = ctx.decoder_layer(case.x, case.memory[:, perm], case.weights, heads=case.heads,
                                 norm_first=norm_first, eps=eps)
    ctx.assert_close(shuffled, out, f"decoder output with the source tokens reordered by {perm.tolist()}", scale=16)


def _cross_attention_only(w: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The weights with self-attention's and the network's output maps zeroed: only cross-attention acts."""
    quiet = dict(w)
    for key in ("w_o", "b_o", "w_2", "b_2"):
        quiet[key] = torch.zeros_like(w[key])
    return quiet


@claim_property("decoder.cross-attention-sources", needs=("decoder_layer",))
@given(case=sf.layer_cases(decoder=True), norm_first=st.booleans(), seed=sf.seeds(), eps=sf.epsilons())
@example(case=small_spread_case(), norm_first=True, seed=0, eps=VISIBLE_EPS)  # an eps of its own is caught
def the_output_follows_the_encoder_memory_through_cross_attention(ctx: Context, case, norm_first, seed,
                                                                  eps) -> None:
    """A second check of where keys and values come from: with self-attention and the network silenced, the
    layer's output for two different memories is the cross-attention written out with each memory (keys and
    values projected from the memory, queries from the target, every norm with the ``eps`` given); the
    outputs differ as the formula says."""
    norm_first = sf.within(ctx, "norm_first", norm_first, (False, True))
    w = _cross_attention_only(case.weights)
    g = torch.Generator().manual_seed(seed)
    other = 4 * torch.rand(case.memory.shape, generator=g, dtype=torch.float64) - 2  # (B, s, d_model)
    for label, memory in (("the memory", case.memory), ("another memory", other)):
        out = ctx.decoder_layer(case.x, memory, w, heads=case.heads, norm_first=norm_first, eps=eps)
        expected = decoder_layer_written_out(case.x, memory, w, case.heads, norm_first, eps=eps)
        ctx.assert_close(out, expected, f"decoder layer with only cross-attention acting, over {label}", scale=16)


def _later_tokens_changed(x: torch.Tensor, i: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    changed = x.clone()
    changed[:, i + 1:] = 4 * torch.rand(changed[:, i + 1:].shape, generator=g, dtype=torch.float64) - 2
    return changed


@claim_property("decoder.causal", needs=("decoder_layer",))
@given(case=sf.layer_cases(decoder=True, min_t=2), norm_first=st.booleans(), data=st.data(), eps=sf.epsilons())
def a_decoder_position_does_not_see_later_target_tokens(ctx: Context, case, norm_first, data, eps) -> None:
    """Changing the target tokens after position ``i`` leaves the outputs at positions ``<= i`` unchanged."""
    norm_first = sf.within(ctx, "norm_first", norm_first, (False, True))
    i = data.draw(st.integers(0, case.x.shape[1] - 2), label="position")
    changed = _later_tokens_changed(case.x, i, data.draw(sf.seeds(), label="new tokens"))
    out = ctx.decoder_layer(case.x, case.memory, case.weights, heads=case.heads, norm_first=norm_first, eps=eps)
    out2 = ctx.decoder_layer(changed, case.memory, case.weights, heads=case.heads, norm_first=norm_first, eps=eps)
    ctx.assert_close(out2[:, :i + 1], out[:, :i + 1], f"decoder outputs at positions <= {i} after changing later "
                     "target tokens", scale=16)


@claim_property("decoder.causal", needs=("encoder_layer",))
@given(case=sf.layer_cases(min_t=2), norm_first=st.booleans(), data=st.data())
def a_causal_layer_does_not_see_later_tokens(ctx: Context, case, norm_first, data) -> None:
    """The layer of a decoder-only stack (``causal=True``): outputs at positions ``<= i`` ignore later tokens."""
    norm_first = sf.within(ctx, "norm_first", norm_first, (False, True))
    i = data.draw(st.integers(0, case.x.shape[1] - 2), label="position")
    changed = _later_tokens_changed(case.x, i, data.draw(sf.seeds(), label="new tokens"))
    out = ctx.encoder_layer(case.x, case.weights, heads=case.heads, norm_first=norm_first, eps=EPS, causal=True)
    out2 = ctx.encoder_layer(changed, case.weights, heads=case.heads, norm_first=norm_first, eps=EPS, causal=True)
    ctx.assert_close(out2[:, :i + 1], out[:, :i + 1], f"causal layer outputs at positions <= {i} after changing "
                     "later tokens", scale=16)


def _without_cross_attention(w: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The decoder's weights with cross-attention's output map zeroed (``W_O^c = 0, b_O^c = 0``)."""
    return dict(w, wc_o=torch.zeros_like(w["wc_o"]), bc_o=torch.zeros_like(w["bc_o"]))


def _as_encoder_weights(w: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The encoder layer's weights taken from the decoder's: self-attention, the network, ``LN_1``, and the decoder's
    ``LN_3`` as the encoder's ``LN_2``."""
    return {k: w[k] for k in ENCODER_KEYS} | {"gamma_2": w["gamma_3"], "beta_2": w["beta_3"]}


@claim_property("decoder.decoder-only", needs=("decoder_layer", "encoder_layer"))
@given(case=sf.layer_cases(decoder=True), eps=sf.epsilons())
@example(case=small_spread_case(), eps=VISIBLE_EPS)  # a decoder layer with an eps of its own is caught
def a_decoder_layer_without_cross_attention_is_a_causal_encoder_layer(ctx: Context, case, eps) -> None:
    """Pre-norm, cross-attention silenced (``W_O^c = 0, b_O^c = 0``): the decoder layer equals the causal encoder
    layer whose second norm is the decoder's third, both given the same ``eps``."""
    ctx.require("norm_first", True)
    w = _without_cross_attention(case.weights)
    out = ctx.decoder_layer(case.x, case.memory, w, heads=case.heads, norm_first=True, eps=eps)
    causal = ctx.encoder_layer(case.x, _as_encoder_weights(w), heads=case.heads, norm_first=True, eps=eps, causal=True)
    ctx.assert_close(out, causal, "decoder layer without cross-attention against the causal encoder layer",
                     scale=16)


@claim_property("decoder.decoder-only", needs=("decoder_layer",))
@given(case=sf.layer_cases(decoder=True), activation=activations, eps=sf.epsilons())
@example(case=small_spread_case(), activation="relu", eps=VISIBLE_EPS)  # a decoder layer with an eps of its own
def a_decoder_layer_without_cross_attention_is_the_written_out_causal_encoder_layer(ctx: Context, case,
                                                                                   activation, eps) -> None:
    """The implementation's decoder layer alone: pre-norm, cross-attention silenced (``W_O^c = 0, b_O^c = 0``), it
    equals the causal pre-norm encoder layer written out here in float64, ``y = x + SA_causal(LN_1(x))``,
    ``y + FFN(LN_3(y))`` (the encoder's second norm is the decoder's third), every norm with the ``eps`` given."""
    ctx.require("norm_first", True)
    activation = sf.within(ctx, "activation", activation, ACTIVATIONS)
    w = _without_cross_attention(case.weights)
    out = ctx.decoder_layer(case.x, case.memory, w, heads=case.heads, norm_first=True, activation=activation, eps=eps)
    encoder_case = case._replace(weights=_as_encoder_weights(w))
    expected = pre_norm_layer(case.x, encoder_case.weights, case.heads, activation, True, eps)
    ctx.assert_close(out, expected, f"decoder layer without cross-attention ({activation}, eps = {eps:g}) against "
                     "the causal pre-norm encoder layer written out", scale=16,
                     same_dtype=layer_in_dtype(pre_norm_layer, encoder_case, activation, True, eps))


def _stack(ctx: Context, h: torch.Tensor, layers: list[dict[str, torch.Tensor]], heads: int) -> torch.Tensor:
    norm_first = sf.within(ctx, "norm_first", True, (True, False))  # either placement is a causal stack
    for w in layers:
        h = ctx.encoder_layer(h, w, heads=heads, norm_first=norm_first, eps=EPS, causal=True)
    return h


@claim_property("decoder.teacher-forcing", needs=("encoder_layer",))
@given(case=sf.layer_cases(min_t=2), data=st.data())
def one_pass_over_the_sequence_gives_every_prefix_its_own_output(ctx: Context, case, data) -> None:
    """Two causal layers: the outputs at positions ``< i`` of the whole sequence are those of the prefix
    ``x_1..x_i`` run alone, so one pass trains on every prefix at once."""
    d = case.x.shape[-1]
    layers = [case.weights, sf.layer_weights(data.draw(sf.seeds(), label="second layer"), d,
                                             case.weights["w_1"].shape[1])]
    i = data.draw(sf.dimension(1, case.x.shape[1] - 1), label="prefix length")
    whole = _stack(ctx, case.x, layers, case.heads)
    prefix = _stack(ctx, case.x[:, :i], layers, case.heads)
    ctx.assert_close(prefix, whole[:, :i], f"outputs of the prefix of length {i} against the whole sequence",
                     scale=16)


VOCABULARY, LENGTH, BOS = 3, 3, 3  # token ids 0..2, and 3 marks the beginning of a sequence


def sequence_probabilities(ctx: Context, seed: int, heads: int, d_k: int) -> torch.Tensor:
    """``prod_t p(x_t | BOS, x_1..x_{t-1})`` for all ``3^3`` sequences, each ``p`` read from the model's output
    at the position before ``x_t``: a reference embedding, two of the implementation's causal layers, and the
    reference output layer ``softmax(h W_out + b_out)``."""
    d = heads * d_k
    g = torch.Generator().manual_seed(seed)
    embedding = torch.randn(VOCABULARY + 1, d, generator=g, dtype=torch.float64)  # (V + BOS, d)
    w_out = torch.randn(d, VOCABULARY, generator=g, dtype=torch.float64)  # (d, V)
    b_out = torch.rand(VOCABULARY, generator=g, dtype=torch.float64) - 0.5
    layers = [sf.layer_weights(seed + 1 + n, d, 4 * d) for n in range(2)]
    sequences = torch.tensor(list(itertools.product(range(VOCABULARY), repeat=LENGTH)))  # (27, 3)
    inputs = torch.cat([torch.full((len(sequences), 1), BOS), sequences[:, :-1]], dim=1)  # (27, 3): BOS x1 x2
    h = embedding[inputs] * math.sqrt(d) + sinusoidal_encoding(torch.arange(LENGTH), d)  # (27, 3, d)
    p = output_distribution(_stack(ctx, h, layers, heads), w_out, b_out)  # (27, 3, V)
    chosen = p.gather(-1, sequences[:, :, None])[..., 0]  # (27, 3): p(x_t | BOS, x_<t)
    return chosen.prod(dim=-1)  # (27,)


@claim_property("decoder.autoregressive-factorization", needs=("encoder_layer",))
@given(seed=sf.seeds(), heads=sf.dimension(1, 2), d_k=sf.dimension(1, 2).map(lambda half: 2 * half))  # 2 or 4
def the_chained_conditionals_of_a_causal_model_sum_to_one(ctx: Context, seed, heads, d_k) -> None:
    """``sum over all x in V^n of prod_t p(x_t | x_<t) = 1`` (``|V| = 3``, ``n = 3``): the causal model's
    conditionals chain into one distribution over sequences."""
    total = sequence_probabilities(ctx, seed, heads, d_k).sum()
    ctx.assert_close(total.reshape(1), torch.ones(1, dtype=torch.float64),
                     "sum over all 27 sequences of the chained conditionals", scale=16)
