"""Every property of ``properties/blocks/encoder.py`` catches at least one wrong encoder layer."""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.adapters.reference import implementation as REFERENCE
from specformer.properties.blocks import encoder
from specformer.reference.blocks.encoder_layer import encoder_layer


def _forced(norm_first: bool):
    """An encoder layer that ignores the ``norm_first`` it is given."""

    def layer(x, w, *, heads, norm_first_asked=None, activation="relu", eps=1e-5, causal=False, **_):
        return encoder_layer(x, w, heads=heads, norm_first=norm_first, activation=activation, eps=eps, causal=causal)

    return layer


def _written(layer_fn):
    def layer(x, w, *, heads, norm_first, activation="relu", eps=1e-5, causal=False):
        return layer_fn(x, w, heads, activation, causal)

    return layer


def _no_residual(x, w, heads, activation, causal):
    attention, ffn, norm = encoder._sublayers(w, heads, activation, causal)
    y = norm(attention(x), 1)
    return norm(ffn(y), 2)


def _no_residual_pre(x, w, heads, activation, causal):
    attention, ffn, norm = encoder._sublayers(w, heads, activation, causal)
    y = attention(norm(x, 1))
    return ffn(norm(y, 2))


PRE_ALWAYS = Mutant("pre-norm-where-post-norm-is-asked", encoder_layer=_forced(True))
POST_ALWAYS = Mutant("post-norm-where-pre-norm-is-asked", encoder_layer=_forced(False))
ONE_NORM = Mutant("one-add-and-norm-as-drawn", encoder_layer=_written(encoder.one_norm_layer))


def _by_norm(post, pre):
    def layer(x, w, *, heads, norm_first, activation="relu", eps=1e-5, causal=False):
        return (pre if norm_first else post)(x, w, heads, activation, causal)

    return layer


NO_RESIDUAL = Mutant("no-residual-connections", encoder_layer=_by_norm(_no_residual, _no_residual_pre))

from specformer.reference.blocks.stack import encoder_stack  # noqa: E402


def _stack(order=lambda layers: layers, final=True, same_weights=False):
    """A stack built from the reference's layers with one thing wrong."""

    def stack(x, layers, *, heads, norm_first, final_norm=None, activation="relu", eps=1e-5, causal=False):
        chosen = [layers[0]] * len(layers) if same_weights else order(list(layers))
        return encoder_stack(x, chosen, heads=heads, norm_first=norm_first, final_norm=final_norm if final else None,
                             activation=activation, eps=eps, causal=causal)

    return stack


def _fixed_eps_layer(x, w, *, heads, norm_first, activation="relu", eps=1e-5, causal=False):
    """PyTorch's default eps written into the layer: right whenever eps = 1e-5 is asked for."""
    return encoder_layer(x, w, heads=heads, norm_first=norm_first, activation=activation, eps=1e-5, causal=causal)


EPS_FIXED = Mutant("layer-with-eps-fixed-at-1e-5", encoder_layer=_fixed_eps_layer)


def _final_norm_for_pre_norm_only(x, layers, *, heads, norm_first, final_norm=None, activation="relu", eps=1e-5,
                                  causal=False):
    """Reads final_norm as "the pre-norm stack's final norm" and drops it from a post-norm stack."""
    return encoder_stack(x, layers, heads=heads, norm_first=norm_first, final_norm=final_norm if norm_first else None,
                         activation=activation, eps=eps, causal=causal)


def _final_norm_after_every_layer(x, layers, *, heads, norm_first, final_norm=None, activation="relu", eps=1e-5,
                                  causal=False):
    """Applies the final norm after each layer (right for a stack of one layer)."""
    for layer in layers:
        x = encoder_stack(x, [layer], heads=heads, norm_first=norm_first, final_norm=final_norm,
                          activation=activation, eps=eps, causal=causal)
    return x


REVERSED = Mutant("stack-in-reverse-order", encoder_stack=_stack(order=lambda layers: layers[::-1]))
NO_FINAL_NORM = Mutant("stack-without-final-norm", encoder_stack=_stack(final=False))
SHARED_WEIGHTS = Mutant("stack-reuses-the-first-layer", encoder_stack=_stack(same_weights=True))
ONE_LAYER = Mutant("stack-of-the-first-layer-only", encoder_stack=_stack(order=lambda layers: layers[:1]))
POST_NORM_FINAL_DROPPED = Mutant("stack-drops-a-post-norm-stacks-final-norm",
                                 encoder_stack=_final_norm_for_pre_norm_only)
FINAL_EVERY_LAYER = Mutant("stack-with-the-final-norm-after-every-layer", encoder_stack=_final_norm_after_every_layer)

POST = "encoder.the_post_norm_layer_adds_then_normalises_after_each_sublayer"
PRE = "encoder.the_pre_norm_layer_normalises_each_sublayers_input"
RESIDUAL = "encoder.with_silent_sublayers_only_the_residual_path_is_left"
ORDER = "encoder.attention_has_its_own_add_and_norm_before_the_feed_forward_network"
AS_DRAWN = "encoder.one_add_and_norm_after_the_feed_forward_network_as_drawn"
DEPTH = "encoder.the_original_stack_has_six_layers_and_bert_base_twelve"
STACK = "encoder.the_stack_is_its_layers_in_order_and_a_pre_norm_stack_ends_with_a_final_norm"
SPLIT = "encoder.a_stack_split_in_two_is_the_second_part_applied_to_the_first"

CASES = [
    (POST, PRE_ALWAYS), (POST, ONE_NORM), (POST, NO_RESIDUAL),
    (PRE, POST_ALWAYS), (PRE, NO_RESIDUAL),
    (RESIDUAL, NO_RESIDUAL), (RESIDUAL, PRE_ALWAYS),
    (ORDER, ONE_NORM), (ORDER, PRE_ALWAYS),
    (STACK, REVERSED), (STACK, NO_FINAL_NORM), (STACK, SHARED_WEIGHTS), (STACK, ONE_LAYER),
    (STACK, POST_NORM_FINAL_DROPPED), (STACK, FINAL_EVERY_LAYER),
    (POST, EPS_FIXED), (PRE, EPS_FIXED),
    (SPLIT, REVERSED), (SPLIT, SHARED_WEIGHTS), (SPLIT, ONE_LAYER), (SPLIT, FINAL_EVERY_LAYER),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


def test_a_layer_as_drawn_leaves_nothing_to_refute() -> None:
    assert run_row(AS_DRAWN, REFERENCE).outcome == "refuted"
    row = run_row(AS_DRAWN, ONE_NORM, profile="mutants")
    assert row.outcome == "fail", row


def test_a_misstated_depth_is_caught(monkeypatch) -> None:
    assert run_row(DEPTH, None).outcome == "pass"
    transformer = torch.nn.Transformer
    monkeypatch.setattr(encoder.torch.nn, "Transformer", lambda batch_first=True, device=None: transformer(
        num_encoder_layers=4, batch_first=batch_first, device=device))
    row = run_row(DEPTH, None)
    assert row.outcome == "fail" and "nn.Transformer encoder" in row.message, row


def test_every_encoder_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {AS_DRAWN, DEPTH, GRADIENT}
    mine = {q for q, p in properties.items() if p.module == "encoder"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_weights() -> None:
    from specformer.properties.blocks.strategies import layer_weights

    w = layer_weights(0, 4, 8)
    x = torch.ones(1, 3, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="weights lack gamma_2"):
        encoder_layer(x, {k: v for k, v in w.items() if k != "gamma_2"}, heads=2, norm_first=False)
    with pytest.raises(ValueError, match=r"weights\['w_q'\] must have shape \(4, 4\)"):
        encoder_layer(x, dict(w, w_q=torch.ones(4, 3)), heads=2, norm_first=False)
    with pytest.raises(ValueError, match="heads=3 must be >= 1 and divide d_model=4"):
        encoder_layer(x, w, heads=3, norm_first=False)
    with pytest.raises(ValueError, match=r"x must be \(B, t, d_model\)"):
        encoder_layer(torch.ones(3, 4), w, heads=2, norm_first=False)


def test_a_layer_wrong_only_at_realistic_sizes_is_caught() -> None:
    """Wrong only when t > 6 or d_model > 8 (beyond the small sizes): the last key is dropped."""

    def layer(x, w, *, heads, norm_first, activation="relu", eps=1e-5, causal=False):
        out = encoder_layer(x, w, heads=heads, norm_first=norm_first, activation=activation, eps=eps, causal=causal)
        if x.shape[1] > 6 or x.shape[2] > 8:
            short = encoder_layer(x[:, :-1], w, heads=heads, norm_first=norm_first, activation=activation, eps=eps,
                                  causal=causal)
            out = torch.cat([short, out[:, -1:]], dim=1)
        return out

    mutant = Mutant("drops-the-last-key-at-realistic-sizes", encoder_layer=layer)
    assert_caught(POST, mutant)
    assert_caught(PRE, mutant)


GRADIENT = "encoder.the_derivative_through_a_residual_sublayer_is_the_identity_plus_the_sublayers"


def _scaled_residual(x, w, heads, activation, causal):
    attention, ffn, norm = encoder._sublayers(w, heads, activation, causal)
    y = 0.5 * x + attention(norm(x, 1))
    return y + ffn(norm(y, 2))


def test_the_residual_gradient_catches_a_missing_or_scaled_residual() -> None:
    assert run_row(GRADIENT, REFERENCE).outcome == "pass"
    assert_caught(GRADIENT, NO_RESIDUAL)
    assert_caught(GRADIENT, Mutant("half-residual", encoder_layer=_by_norm(_no_residual, _scaled_residual)))


def _tanh_gelu(x, w, *, heads, norm_first, activation="relu", eps=1e-5, causal=False):
    """``activation="gelu"`` computed with the tanh approximation, as torch.nn's encoder fast path does on CUDA
    (``_addmm_activation(use_gelu=True)``; listed as a known deviation of torch-nn there)."""
    activation = "gelu_tanh" if activation == "gelu" else activation
    return encoder_layer(x, w, heads=heads, norm_first=norm_first, activation=activation, eps=eps, causal=causal)


@pytest.mark.parametrize("qualname", ["encoder.the_pre_norm_layer_normalises_each_sublayers_input",
                                      "encoder.the_post_norm_layer_adds_then_normalises_after_each_sublayer"])
def test_a_tanh_gelu_for_gelu_is_caught_in_float32(qualname: str) -> None:
    """The difference torch-nn shows on CUDA is another function, not rounding: float32's tolerance sees it."""
    assert_caught(qualname, Mutant("tanh-gelu-for-gelu", encoder_layer=_tanh_gelu), dtype="float32")


@pytest.mark.parametrize("qualname", [POST, PRE])
def test_a_fixed_eps_is_caught_by_the_explicit_example_alone(qualname: str) -> None:
    """Deterministically: the explicit example gives eps = 0.1 to tokens of spread 0.05."""
    from specformer.context import Context, LocalBackend

    prop = getattr(encoder, qualname.split(".", 1)[1])
    ctx = Context(LocalBackend(EPS_FIXED), EPS_FIXED.name, "cpu", "float64")
    with pytest.raises(AssertionError, match=r"eps = 0\.1"):
        prop.hypothesis.inner_test(ctx, case=encoder.small_spread_case(), activation="relu", causal=False,
                                   eps=encoder.VISIBLE_EPS)
    reference = Context(LocalBackend(REFERENCE), "reference", "cpu", "float64")
    prop.hypothesis.inner_test(reference, case=encoder.small_spread_case(), activation="relu", causal=False,
                               eps=encoder.VISIBLE_EPS)


@pytest.mark.parametrize("qualname", [STACK, SPLIT, POST, PRE, RESIDUAL, ORDER])
def test_the_reference_passes_with_drawn_eps_and_final_norms(qualname: str) -> None:
    for dtype in ("float64", "float32"):
        row = run_row(qualname, REFERENCE, dtype)
        assert row.outcome == "pass", (dtype, row.message)


def test_the_post_norm_final_norm_is_what_the_mutant_misses() -> None:
    """The stack mutant that drops a post-norm stack's final norm is right on every pre-norm stack and on every
    post-norm stack given none: only a post-norm stack given final_norm catches it."""
    from specformer.properties.blocks.strategies import layer_weights

    layers = [layer_weights(s, 4, 8) for s in (1, 2)]
    final = layer_weights(3, 4, 8, ("gamma_f", "beta_f"))
    norm = (final["gamma_f"], final["beta_f"])
    x = torch.rand(1, 3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for norm_first, final_norm in ((True, norm), (False, None)):
        assert torch.equal(_final_norm_for_pre_norm_only(x, layers, heads=2, norm_first=norm_first,
                                                         final_norm=final_norm),
                           encoder_stack(x, layers, heads=2, norm_first=norm_first, final_norm=final_norm))
    assert not torch.allclose(_final_norm_for_pre_norm_only(x, layers, heads=2, norm_first=False, final_norm=norm),
                              encoder_stack(x, layers, heads=2, norm_first=False, final_norm=norm))


# -- the residual gradient where central differences are coarse -----------------------------------

def test_the_residual_gradient_holds_where_central_differences_are_coarse() -> None:
    """The example a thorough run drew (d_model = 2, one head, a token whose two features nearly coincide): the
    difference quotient is 6e-3 off the derivative there, so a fixed bound on it failed the reference; the
    identity path, checked against the written-out sublayer's quotient at the same points, is exact there."""
    from specformer.context import Context, LocalBackend

    case = encoder.near_constant_token_case()
    w = dict(case.weights, w_2=torch.zeros_like(case.weights["w_2"]), b_2=torch.zeros_like(case.weights["b_2"]))
    v = torch.randn(case.x.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    v = v / v.norm()
    h = 1e-4
    quotient = (encoder_layer(case.x + h * v, w, heads=1, norm_first=True)
                - encoder_layer(case.x - h * v, w, heads=1, norm_first=True)) / (2 * h)
    attention, _, norm = encoder._sublayers(w, 1, "relu", False)
    _, jvp = torch.autograd.functional.jvp(lambda x: attention(norm(x, 1)), case.x, v)
    assert (quotient - jvp - v).abs().max() > 1e-3, "the pinned example no longer sits where the quotient is coarse"
    prop = getattr(encoder, GRADIENT.split(".", 1)[1])
    prop.hypothesis.inner_test(Context(LocalBackend(REFERENCE), "reference", "cpu", "float64"), case=case, seed=0)
    half = Mutant("half-residual", encoder_layer=_by_norm(_no_residual, _scaled_residual))
    with pytest.raises(AssertionError, match="identity path"):
        prop.hypothesis.inner_test(Context(LocalBackend(half), half.name, "cpu", "float64"), case=case, seed=0)
