"""Every property of ``properties/blocks/ffn.py`` catches at least one wrong feed-forward network."""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.adapters.reference import implementation as REFERENCE
from specformer.properties.blocks import ffn
from specformer.reference.blocks.encoder_layer import encoder_layer
from specformer.reference.blocks.ffn import activation_function, feed_forward


def _ffn(change):
    def feed_forward_(x, w_1, b_1, w_2, b_2, *, activation="relu"):
        return change(x, w_1, b_1, w_2, b_2, activation_function(activation))

    return feed_forward_


LINEAR = Mutant("no-activation", feed_forward=_ffn(lambda x, w1, b1, w2, b2, act: (x @ w1 + b1) @ w2 + b2))
ACT_LAST = Mutant("activation-after-the-second-map",
                  feed_forward=_ffn(lambda x, w1, b1, w2, b2, act: act((x @ w1 + b1) @ w2 + b2)))
NO_B2 = Mutant("no-second-bias", feed_forward=_ffn(lambda x, w1, b1, w2, b2, act: act(x @ w1 + b1) @ w2))
MEAN_MIX = Mutant("adds-the-mean-over-positions", feed_forward=_ffn(
    lambda x, w1, b1, w2, b2, act: act(x @ w1 + b1) @ w2 + b2 + 0.1 * x.mean(-2, keepdim=True)))


def _neighbours(x, w1, b1, w2, b2, act):
    previous = torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)  # (B, t, d): token i-1, zero before 0
    return act((x + 0.5 * previous) @ w1 + b1) @ w2 + b2


KERNEL_3 = Mutant("kernel-width-two", feed_forward=_ffn(_neighbours))


def _stretch(x, w1, b1, w2, b2, act):
    spread = x - x.mean(-2, keepdim=True)  # (B, t, d): each token minus the mean token
    out = act(x @ w1 + b1) @ w2 + b2
    return out + spread * (out.norm() / spread.norm().clamp_min(1e-300))


# stretches the differences between the tokens back to unit size, whatever attention did to them
STRETCH = Mutant("restores-the-differences", feed_forward=_ffn(_stretch))
POST_NORM_ALWAYS = Mutant("post-norm-when-pre-norm-is-asked", encoder_layer=lambda x, w, *, heads, norm_first,
                          activation="relu", eps=1e-5, causal=False: encoder_layer(
                              x, w, heads=heads, norm_first=False, activation=activation, eps=eps, causal=causal))

FORMULA = "ffn.the_feed_forward_network_is_two_affine_maps_around_the_activation"
POSITION_WISE = "ffn.each_position_goes_through_the_same_network_on_its_own"
CONV = "ffn.the_feed_forward_network_is_a_convolution_of_width_one"
COLLAPSE = "ffn.attention_with_feed_forward_networks_still_collapses"
AS_WRITTEN = "ffn.feed_forward_networks_keep_the_tokens_apart_as_written"
PRE_NORM = "ffn.pre_norm_encoder_layers_keep_the_tokens_apart"

CASES = [
    (FORMULA, LINEAR), (FORMULA, ACT_LAST), (FORMULA, NO_B2), (FORMULA, MEAN_MIX),
    (POSITION_WISE, MEAN_MIX), (POSITION_WISE, KERNEL_3),
    (CONV, KERNEL_3), (CONV, LINEAR),
    (COLLAPSE, STRETCH),
    (PRE_NORM, POST_NORM_ALWAYS),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


def _position_code(x, w1, b1, w2, b2, act):
    out = act(x @ w1 + b1) @ w2 + b2
    code = torch.linspace(-1, 1, x.shape[-2], dtype=x.dtype)[:, None].expand(x.shape[-2:])  # (t, d): row i = c_i
    return out + code * out.norm()


def test_a_network_that_keeps_the_tokens_apart_leaves_nothing_to_refute() -> None:
    """No position-wise network can separate tokens that attention made identical; one that adds a
    code per position can, and then the claim as written has no counterexample."""
    assert run_row(AS_WRITTEN, REFERENCE).outcome == "refuted"
    row = run_row(AS_WRITTEN, Mutant("adds-a-code-per-position", feed_forward=_ffn(_position_code)),
                  profile="mutants")
    assert row.outcome == "fail", row


TABLE = "ffn.the_tables_hidden_layer_is_four_times_the_model_and_much_wider_than_a_head"
LIBRARIES = "ffn.the_hidden_layer_is_four_times_as_wide"


@pytest.mark.parametrize(("table", "wrong", "model"), [
    ({"base": (512, 8, 1024), "big": (1024, 16, 4096)}, "4 d_model", "base"),  # a base d_ff of 1024
    ({"base": (512, 1, 2048), "big": (1024, 16, 4096)}, "d_v", "base"),  # one head of width 512: d_ff / d_v = 4
    ({"base": (512, 8, 2048), "big": (1024, 3, 4096)}, "d_v", "big"),  # h does not divide d_model
])
def test_a_misstated_table_is_caught(monkeypatch, table, wrong: str, model: str) -> None:
    assert run_row(TABLE, None).outcome == "pass"
    monkeypatch.setattr(ffn, "TABLE_MODELS", table)
    row = run_row(TABLE, None)
    assert row.outcome == "fail" and wrong in row.message and model in row.message, row


@pytest.mark.parametrize(("change", "wrong"), [
    (lambda d, h, ff: (d, h, 2 * d), "4 d_model"),
    (lambda d, h, ff: (d, 1, ff), "d_v"),  # one head as wide as the model
])
def test_a_library_whose_default_width_is_not_four_times_is_caught(monkeypatch, change, wrong: str) -> None:
    assert run_row(LIBRARIES, None).outcome == "pass"
    widths = ffn.library_widths()
    assert widths, "no library width was read"
    first = next(iter(widths))
    monkeypatch.setattr(ffn, "library_widths", lambda: {**widths, first: change(*widths[first])})
    row = run_row(LIBRARIES, None)
    assert row.outcome == "fail" and first in row.message and wrong in row.message, row


def test_the_head_width_is_computed_from_each_configuration() -> None:
    """d_v comes from each configuration's own d_model and h, not from a constant: 64 everywhere here."""
    widths = {**ffn.TABLE_MODELS, **ffn.library_widths()}
    assert {name: d // h for name, (d, h, _) in widths.items()} == dict.fromkeys(widths, 64)
    assert {name: ff // (d // h) for name, (d, h, ff) in ffn.TABLE_MODELS.items()} == {"base": 32, "big": 64}


def test_every_ffn_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {AS_WRITTEN, TABLE, LIBRARIES, IDENTITY}
    mine = {q for q, p in properties.items() if p.module == "ffn"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_input() -> None:
    x = torch.ones(1, 2, 3)
    w_1, b_1, w_2, b_2 = torch.ones(3, 4), torch.ones(4), torch.ones(4, 3), torch.ones(3)
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        feed_forward(x, w_1, b_1, w_2, b_2, "swish")
    with pytest.raises(ValueError, match="d_model=3 features"):
        feed_forward(torch.ones(1, 2, 5), w_1, b_1, w_2, b_2)
    with pytest.raises(ValueError, match="expected b_1"):
        feed_forward(x, w_1, torch.ones(3), w_2, b_2)


# -- the second check of the activation and the first bias ------------------------------------------
IDENTITY = "ffn.with_identity_weights_the_network_is_the_activation_of_x_plus_the_first_bias"


def _with_activation(names: dict[str, str]):
    def feed_forward_(x, w_1, b_1, w_2, b_2, *, activation="relu"):
        return feed_forward(x, w_1, b_1, w_2, b_2, names.get(activation, activation))

    return feed_forward_


@pytest.mark.parametrize("mutant", [
    Mutant("gelu-where-relu-is-asked", feed_forward=_with_activation({"relu": "gelu"})),
    Mutant("tanh-gelu-where-exact-gelu-is-asked", feed_forward=_with_activation({"gelu": "gelu_tanh"})),
    Mutant("no-first-bias", feed_forward=_ffn(lambda x, w1, b1, w2, b2, act: act(x @ w1) @ w2 + b2)),
    Mutant("first-bias-after-the-activation", feed_forward=_ffn(lambda x, w1, b1, w2, b2, act: (act(x @ w1) + b1) @ w2
                                                                + b2)),
], ids=lambda m: m.name)
def test_the_second_check_catches_a_wrong_activation_or_first_bias(mutant) -> None:
    assert_caught(IDENTITY, mutant)


def test_the_reference_passes_the_second_check() -> None:
    assert run_row(IDENTITY, REFERENCE).outcome == "pass"


def test_a_network_wrong_only_at_realistic_widths_is_caught() -> None:
    def wide_wrong(x, w1, b1, w2, b2, act):
        hidden = act(x @ w1 + b1)
        if w1.shape[1] > 16:
            hidden = hidden[..., :-1]  # drops the last hidden unit
            w2 = w2[:-1]
        return hidden @ w2 + b2

    assert_caught("ffn.the_feed_forward_network_is_two_affine_maps_around_the_activation",
                  Mutant("drops-a-hidden-unit-above-d_ff-16", feed_forward=_ffn(wide_wrong)))
