"""Every property of ``properties/blocks/decoder.py`` catches at least one wrong decoder."""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import Mutant, OneOperation
from specformer.reference.attention.attention import scaled_dot_product_attention
from specformer.reference.attention.multihead import merge_heads, split_heads
from specformer.reference.blocks.attention_sublayer import multi_head
from specformer.reference.blocks.encoder_layer import encoder_layer
from specformer.reference.blocks.ffn import feed_forward
from specformer.reference.blocks.layernorm import layer_norm


def _masked_cross(query, source, w, heads):
    """Cross-attention with a (top-left) causal mask over the source: wrong, the source is not masked."""
    q = split_heads(query @ w["wc_q"] + w["bc_q"], heads)  # (B, t, d) -> (B, h, t, d_k)
    k = split_heads(source @ w["wc_k"] + w["bc_k"], heads)  # (B, s, d) -> (B, h, s, d_k)
    v = split_heads(source @ w["wc_v"] + w["bc_v"], heads)  # (B, s, d) -> (B, h, s, d_k)
    mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()  # (t, s)
    mask[:, 0] = True  # every target position keeps the first source token
    out = scaled_dot_product_attention(q, k, v, mask).output  # (B, h, t, d_k)
    return merge_heads(out) @ w["wc_o"] + w["bc_o"]  # (B, h, t, d_k) -> (B, t, d)


def _decoder(cross_first=False, self_causal=True, masked_cross=False, ffn_norm=3):
    def decoder_layer(x, memory, w, *, heads, norm_first, activation="relu", eps=1e-5):
        def norm(h, i):
            return layer_norm(h, w[f"gamma_{i}"], w[f"beta_{i}"], eps)

        def sublayer(h, f, i):
            return h + f(norm(h, i)) if norm_first else norm(h + f(h), i)

        def self_attention(h):
            return multi_head(h, h, w, heads=heads, causal=self_causal)

        def cross(h):
            return _masked_cross(h, memory, w, heads) if masked_cross else multi_head(h, memory, w, heads=heads,
                                                                                       cross=True)

        first, second = (cross, self_attention) if cross_first else (self_attention, cross)
        z = sublayer(sublayer(x, first, 1), second, 2)
        return sublayer(z, lambda h: feed_forward(h, w["w_1"], w["b_1"], w["w_2"], w["b_2"], activation), ffn_norm)

    return decoder_layer


def _unmasked_encoder(x, w, *, heads, norm_first, activation="relu", eps=1e-5, causal=False):
    return encoder_layer(x, w, heads=heads, norm_first=norm_first, activation=activation, eps=eps, causal=False)


CROSS_FIRST = Mutant("cross-attention-first", decoder_layer=_decoder(cross_first=True))
UNMASKED = Mutant("unmasked-decoder-self-attention", decoder_layer=_decoder(self_causal=False))
MASKED_CROSS = Mutant("causal-mask-over-the-source", decoder_layer=_decoder(masked_cross=True))
IGNORES_CAUSAL = Mutant("causal-layer-without-mask", encoder_layer=_unmasked_encoder)

CASES = [
    ("decoder.the_decoder_layer_is_masked_self_attention_cross_attention_then_the_network", CROSS_FIRST),
    ("decoder.the_decoder_layer_is_masked_self_attention_cross_attention_then_the_network", UNMASKED),
    ("decoder.queries_come_from_the_target_keys_and_values_from_the_whole_source", MASKED_CROSS),
    ("decoder.a_decoder_position_does_not_see_later_target_tokens", UNMASKED),
    ("decoder.a_causal_layer_does_not_see_later_tokens", IGNORES_CAUSAL),
    ("decoder.a_decoder_layer_without_cross_attention_is_a_causal_encoder_layer", UNMASKED),
    ("decoder.a_decoder_layer_without_cross_attention_is_a_causal_encoder_layer", IGNORES_CAUSAL),
    ("decoder.one_pass_over_the_sequence_gives_every_prefix_its_own_output", IGNORES_CAUSAL),
    ("decoder.the_chained_conditionals_of_a_causal_model_sum_to_one", IGNORES_CAUSAL),
]


def _fixed_eps_decoder(x, memory, w, *, heads, norm_first, activation="relu", eps=1e-5):
    """PyTorch's default eps written into the decoder layer: right whenever eps = 1e-5 is asked for."""
    from specformer.reference.blocks.decoder_layer import decoder_layer

    return decoder_layer(x, memory, w, heads=heads, norm_first=norm_first, activation=activation, eps=1e-5)


EPS_FIXED = Mutant("decoder-layer-with-eps-fixed-at-1e-5", decoder_layer=_fixed_eps_decoder)
ORDER = "decoder.the_decoder_layer_is_masked_self_attention_cross_attention_then_the_network"
DECODER_ONLY = "decoder.a_decoder_layer_without_cross_attention_is_a_causal_encoder_layer"
CASES += [(ORDER, EPS_FIXED), (DECODER_ONLY, EPS_FIXED),
          ("decoder.the_output_follows_the_encoder_memory_through_cross_attention", EPS_FIXED)]


# -- a library with a decoder layer alone gets a judged decoder-only row ----------------------------------
DECODER_ONLY_ALONE = "decoder.a_decoder_layer_without_cross_attention_is_the_written_out_causal_encoder_layer"


def _reference_decoder(x, memory, w, *, heads, norm_first, activation="relu", eps=1e-5):
    from specformer.reference.blocks.decoder_layer import decoder_layer

    return decoder_layer(x, memory, w, heads=heads, norm_first=norm_first, activation=activation, eps=eps)


DECODER_LAYER_ONLY = OneOperation("reference-decoder-layer-only", decoder_layer=_reference_decoder)
UNMASKED_ONLY = OneOperation("unmasked-decoder-layer-only", decoder_layer=_decoder(self_causal=False))
EPS_FIXED_ONLY = OneOperation("decoder-layer-with-eps-fixed-at-1e-5-only", decoder_layer=_fixed_eps_decoder)
#: Wrong: the network's sublayer normalised with LN_2 (cross-attention's) instead of LN_3.
FFN_NORM_2_ONLY = OneOperation("network-normalised-by-ln2-only", decoder_layer=_decoder(ffn_norm=2))
CASES += [(DECODER_ONLY_ALONE, UNMASKED_ONLY), (DECODER_ONLY_ALONE, EPS_FIXED_ONLY),
          (DECODER_ONLY_ALONE, FFN_NORM_2_ONLY), (DECODER_ONLY_ALONE, UNMASKED)]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


def test_every_decoder_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {FOLLOWS}
    mine = {q for q, p in properties.items() if p.module == "decoder"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_decoder_rejects_a_mismatched_memory() -> None:
    from specformer.properties.blocks.strategies import layer_weights
    from specformer.protocol.blocks import DECODER_KEYS
    from specformer.reference.blocks.decoder_layer import decoder_layer

    w = layer_weights(0, 4, 8, DECODER_KEYS)
    x = torch.ones(2, 3, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"memory must be \(B=2, s, d_model=4\)"):
        decoder_layer(x, torch.ones(2, 3, 5, dtype=torch.float64), w, heads=2, norm_first=False)
    with pytest.raises(ValueError, match="weights lack wc_q"):
        decoder_layer(x, x, {k: v for k, v in w.items() if k != "wc_q"}, heads=2, norm_first=False)


# -- the second check of cross-attention's sources -----------------------------------------------------
FOLLOWS = "decoder.the_output_follows_the_encoder_memory_through_cross_attention"
SOURCES = "decoder.queries_come_from_the_target_keys_and_values_from_the_whole_source"


def _keys_from_the_target(x, memory, w, *, heads, norm_first, activation="relu", eps=1e-5):
    """Cross-attention over the decoder's own states: the memory is never read."""
    from specformer.reference.blocks.decoder_layer import decoder_layer

    return decoder_layer(x, x, w, heads=heads, norm_first=norm_first, activation=activation, eps=eps)


KV_FROM_TARGET = Mutant("cross-attention-keys-and-values-from-the-target", decoder_layer=_keys_from_the_target)


def test_keys_and_values_from_the_target_pass_the_permutation_check_and_fail_the_second() -> None:
    from conftest import run_row

    assert run_row(SOURCES, KV_FROM_TARGET).outcome == "pass"  # what the issue found: reordering the memory is moot
    assert_caught(FOLLOWS, KV_FROM_TARGET)


def test_the_reference_passes_the_second_check() -> None:
    from conftest import run_row
    from specformer.adapters.reference import ReferenceImplementation

    assert run_row(FOLLOWS, ReferenceImplementation()).outcome == "pass"


def test_a_decoder_layer_alone_gets_a_judged_decoder_only_row() -> None:
    """A library with ``decoder_layer`` but no ``encoder_layer``: the property comparing the two layers leaves it not
    applicable, the one against the written-out causal encoder layer passes it when it is right and fails it when
    its self-attention is unmasked."""
    row = run_row(DECODER_ONLY, DECODER_LAYER_ONLY)
    assert row.outcome == "not-applicable", (row.outcome, row.message)
    for dtype in ("float64", "float32"):
        row = run_row(DECODER_ONLY_ALONE, DECODER_LAYER_ONLY, dtype)
        assert row.outcome == "pass" and row.examples_checked > 0, (dtype, row.outcome, row.message)
    row = run_row(DECODER_ONLY_ALONE, UNMASKED_ONLY)
    assert row.outcome == "fail", (row.outcome, row.message)


# -- LayerNorm's eps, drawn ------------------------------------------------------------------------
EPS_PROPERTIES = [ORDER, FOLLOWS, DECODER_ONLY, DECODER_ONLY_ALONE]


@pytest.mark.parametrize("qualname", EPS_PROPERTIES)
def test_a_fixed_eps_is_caught_by_the_explicit_example_alone(qualname: str) -> None:
    """Deterministically, for both placements: the explicit example gives eps = 0.1 to target tokens of spread
    0.05, and the reference passes the same example."""
    from specformer.adapters.reference import implementation as reference
    from specformer.context import Context, LocalBackend
    from specformer.properties.blocks import decoder

    prop = getattr(decoder, qualname.split(".", 1)[1])
    case = decoder.small_spread_case()
    kwargs: list[dict[str, object]] = {
        ORDER: [dict(norm_first=nf, activation="relu") for nf in (False, True)],
        FOLLOWS: [dict(norm_first=nf, seed=0) for nf in (False, True)],
        DECODER_ONLY: [{}],
        DECODER_ONLY_ALONE: [dict(activation="relu")],
    }[qualname]
    for extra in kwargs:
        ctx = Context(LocalBackend(EPS_FIXED), EPS_FIXED.name, "cpu", "float64")
        with pytest.raises(AssertionError):
            prop.hypothesis.inner_test(ctx, case=case, eps=decoder.VISIBLE_EPS, **extra)
        ok = Context(LocalBackend(reference), "reference", "cpu", "float64")
        prop.hypothesis.inner_test(ok, case=case, eps=decoder.VISIBLE_EPS, **extra)


def test_the_explicit_example_tells_the_two_eps_apart() -> None:
    """The example is sharp: the reference's outputs for eps = 0.1 and 1e-5 differ by far more than a tolerance."""
    from specformer.properties.blocks import decoder
    from specformer.reference.blocks.decoder_layer import decoder_layer

    case = decoder.small_spread_case()
    for norm_first in (False, True):
        a, b = (decoder_layer(case.x, case.memory, case.weights, heads=case.heads, norm_first=norm_first, eps=e)
                for e in (decoder.VISIBLE_EPS, decoder.EPS))
        assert (a - b).abs().max() > 0.1, norm_first


@pytest.mark.parametrize("qualname", [ORDER, SOURCES, FOLLOWS, DECODER_ONLY, DECODER_ONLY_ALONE,
                                      "decoder.a_decoder_position_does_not_see_later_target_tokens"])
def test_the_reference_passes_with_drawn_eps(qualname: str) -> None:
    from specformer.adapters.reference import implementation as reference

    for dtype in ("float64", "float32"):
        row = run_row(qualname, reference, dtype)
        assert row.outcome == "pass", (dtype, row.message)


def test_a_comparison_of_the_layer_with_itself_cannot_see_a_fixed_eps() -> None:
    """Why the eps is checked against a written-out layer: the permutation check compares the layer with itself,
    so a layer with an eps of its own passes it whatever eps is drawn."""
    assert run_row(SOURCES, EPS_FIXED).outcome == "pass"
