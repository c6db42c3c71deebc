"""The Flax adapter (``flax``): Flax's nnx layers on JAX arrays against the reference.

The adapter is called as its worker calls it: tensors converted to ``jax.Array`` and back
(:mod:`specformer.runner.arrays`). In float64 every operation must agree with the reference
to rounding, except where Flax's ``MultiHeadAttention`` runs its softmax in float32
(``jax.nn.dot_product_attention``): there, to float32's precision, and that departure is
pinned, as is ``nnx.Embed``'s answer for a position past its table (listed in
``deviations.toml``). A few rows run through :func:`conftest.run_row`. Skipped without flax.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest
import torch

pytest.importorskip("flax")
jax = pytest.importorskip("jax")

from conftest import run_row  # noqa: E402
from specformer.adapters.reference import implementation as reference  # noqa: E402
from specformer.protocol import NotApplicable, declared_capabilities, provided_operations  # noqa: E402
from specformer.protocol.blocks import ACTIVATIONS, DECODER_KEYS, ENCODER_KEYS, ModelConfig  # noqa: E402
from specformer.reference.attention.multihead import MultiHeadParams, multi_head_attention  # noqa: E402
from specformer.runner.arrays import from_library, to_library  # noqa: E402

F64 = torch.float64
EXACT = {"rtol": 1e-10, "atol": 1e-12}
#: jax.nn.dot_product_attention's softmax runs in float32 whatever the inputs' dtype.
FLOAT32_SOFTMAX = {"rtol": 1e-5, "atol": 1e-5}
D_MODEL, HEADS, D_FF = 6, 2, 12


@pytest.fixture(scope="module", autouse=True)
def x64() -> Iterator[None]:
    """The adapter turns ``jax_enable_x64`` on at import; give the flag back as it was after this module,
    so that the rest of the session sees JAX as it found it (tests/test_arrays.py checks the flag off)."""
    before = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


@pytest.fixture(scope="module")
def flax_impl(x64: None) -> Any:
    from specformer.adapters.flax_layers import implementation

    return implementation


def call(impl: Any, op: str, *args: Any, **kwargs: Any) -> Any:
    """``impl.op`` as its worker calls it: torch in, JAX to the adapter, torch back."""
    args, kwargs = to_library((args, kwargs), "jax")
    return from_library(getattr(impl, op)(*args, **kwargs))


from test_adapters_thirdparty import _mask, _randn  # noqa: E402  (the same seeded inputs)


def _weights(keys: tuple[str, ...], seed: int) -> dict[str, torch.Tensor]:
    shapes = {"w_1": (D_MODEL, D_FF), "b_1": (D_FF,), "w_2": (D_FF, D_MODEL)}
    weights = {}
    for i, key in enumerate(keys):
        shape = shapes.get(key, (D_MODEL, D_MODEL) if key.startswith("w") else (D_MODEL,))
        weights[key] = 0.5 * _randn(*shape, seed=seed + i) + (1.0 if key.startswith("gamma") else 0.0)
    return weights


X, MEMORY = _randn(2, 5, D_MODEL, seed=1), _randn(2, 3, D_MODEL, seed=2)
ENCODER, DECODER = _weights(ENCODER_KEYS, 100), _weights(DECODER_KEYS, 200)


# -- what it declares -------------------------------------------------------------------------------
def test_it_provides_the_operations_flax_has_layers_for(flax_impl: Any) -> None:
    assert flax_impl.name == "flax"
    assert provided_operations(flax_impl) == {
        "attention", "multihead_attention", "layer_norm", "feed_forward", "encoder_layer", "decoder_layer",
        "encoder_stack", "count_parameters", "learned_positions", "input_embedding", "embedding_lookup",
        "tied_logits", "lookup_gradient"}


def test_it_declares_jax_arrays_and_flaxs_conventions(flax_impl: Any) -> None:
    caps = declared_capabilities(flax_impl)  # validated against the protocol's conventions
    assert caps.arrays == "jax" and "cpu" in caps.devices
    assert caps.conventions["value_width"] == {"d_model_over_h"} and caps.conventions["returns_weights"] == {True}
    assert caps.conventions["activation"] == set(ACTIVATIONS)


# -- attention ----------------------------------------------------------------------------------------
MASKS = {"none": None, "full": (2, 3, 5), "padding": (2, 1, 5), "shared": (3, 5)}


@pytest.mark.parametrize("causal", [False, True], ids=["plain", "causal"])
@pytest.mark.parametrize("mask_shape", list(MASKS), ids=list(MASKS))
def test_attention_agrees_with_the_reference(flax_impl: Any, mask_shape: str, causal: bool) -> None:
    q, k, v = _randn(2, 3, 4, seed=3), _randn(2, 5, 4, seed=4), _randn(2, 5, 3, seed=5)  # d_v != d_k, t_q < t_k
    shape = MASKS[mask_shape]
    mask = None if shape is None else _mask(*shape, seed=6)
    output, weights = call(flax_impl, "attention", q, k, v, mask, causal=causal)
    expected = reference.attention(q, k, v, mask, causal=causal)  # causal: top-left, also for t_q != t_k
    torch.testing.assert_close(output, expected.output, **EXACT)
    torch.testing.assert_close(weights, expected.weights, **EXACT)


def test_attention_takes_leading_head_axes_and_keeps_float32(flax_impl: Any) -> None:
    q, k, v = _randn(2, 3, 4, 2, seed=7), _randn(2, 3, 6, 2, seed=8), _randn(2, 3, 6, 5, seed=9)
    mask = _mask(2, 1, 4, 6, seed=10)
    output, weights = call(flax_impl, "attention", q, k, v, mask)
    expected = reference.attention(q, k, v, mask)
    torch.testing.assert_close(output, expected.output, **EXACT)
    torch.testing.assert_close(weights, expected.weights, **EXACT)
    output, weights = call(flax_impl, "attention", q.float(), k.float(), v.float(), mask)
    assert output.dtype == weights.dtype == torch.float32
    torch.testing.assert_close(output.double(), expected.output, rtol=1e-5, atol=1e-6)


def test_a_fully_masked_row_gets_uniform_weights(flax_impl: Any) -> None:
    """Flax fills masked scores with ``finfo(dtype).min``, not -inf (``masking.fully-masked-row`` lists it)."""
    q = k = torch.zeros(1, 2, 1, dtype=F64)
    v = torch.tensor([[[1.0], [2.0]]], dtype=F64)
    mask = torch.tensor([[[False, False], [True, True]]])
    output, weights = call(flax_impl, "attention", q, k, v, mask)
    torch.testing.assert_close(weights[0, 0], torch.tensor([0.5, 0.5], dtype=F64))
    torch.testing.assert_close(output[0, 0], torch.tensor([1.5], dtype=F64))


def _params(d_model: int, h: int, d_k: int, d_v: int, seed: int) -> MultiHeadParams:
    return MultiHeadParams(_randn(d_model, h * d_k, seed=seed), _randn(d_model, h * d_k, seed=seed + 1),
                           _randn(d_model, h * d_v, seed=seed + 2), _randn(h * d_v, d_model, seed=seed + 3), h)


@pytest.mark.parametrize("causal", [False, True], ids=["plain", "causal"])
@pytest.mark.parametrize("mask_shape", list(MASKS), ids=list(MASKS))
def test_multihead_attention_agrees_with_the_reference(flax_impl: Any, mask_shape: str, causal: bool) -> None:
    params = _params(6, 3, 2, 2, seed=11)
    query, key, value = _randn(2, 3, 6, seed=12), _randn(2, 5, 6, seed=13), _randn(2, 5, 6, seed=14)  # K != V
    shape = MASKS[mask_shape]
    mask = None if shape is None else _mask(*shape, seed=15)
    got = call(flax_impl, "multihead_attention", query, key, value, params, mask, causal=causal)
    expected = multi_head_attention(query, key, value, params, mask, causal=causal)
    torch.testing.assert_close(got, expected, **FLOAT32_SOFTMAX)


def test_multihead_attention_softmax_is_float32_in_float64(flax_impl: Any) -> None:
    """Pinned: ``nnx.MultiHeadAttention``'s default ``attention_fn`` reaches ``jax.nn.dot_product_attention``,
    whose softmax runs in float32, so float64 inputs come back float64 but only float32-accurate."""
    params, x = _params(8, 2, 4, 4, seed=16), _randn(2, 6, 8, seed=17)
    got = call(flax_impl, "multihead_attention", x, x, x, params)
    assert got.dtype == F64
    error = (got - reference.multihead_attention(x, x, x, params)).abs().max().item()
    assert 1e-12 < error < 1e-4, error


def test_multihead_attention_needs_one_width_for_queries_keys_and_values(flax_impl: Any) -> None:
    params, x = _params(4, 2, 2, 3, seed=18), _randn(1, 2, 4, seed=19)
    with pytest.raises(NotApplicable, match="qkv_features"):
        call(flax_impl, "multihead_attention", x, x, x, params)
    # d_k = d_v != d_model / h is Flax's qkv_features != in_features: it answers
    params = _params(4, 2, 3, 3, seed=20)
    torch.testing.assert_close(call(flax_impl, "multihead_attention", x, x, x, params),
                               reference.multihead_attention(x, x, x, params), **FLOAT32_SOFTMAX)


# -- blocks ---------------------------------------------------------------------------------------------
def test_layer_norm_and_feed_forward_agree_with_the_reference(flax_impl: Any) -> None:
    gamma, beta = ENCODER["gamma_1"], ENCODER["beta_1"]
    for eps in (1e-5, 1e-12):
        torch.testing.assert_close(call(flax_impl, "layer_norm", X, gamma, beta, eps=eps),
                                   reference.layer_norm(X, gamma, beta, eps=eps), **EXACT)
    ffn = tuple(ENCODER[k] for k in ("w_1", "b_1", "w_2", "b_2"))
    for activation in ACTIVATIONS:
        torch.testing.assert_close(call(flax_impl, "feed_forward", X, *ffn, activation=activation),
                                   reference.feed_forward(X, *ffn, activation=activation), **EXACT)
        got = call(flax_impl, "feed_forward", X.float(), *(w.float() for w in ffn), activation=activation)
        assert got.dtype == torch.float32


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_layer_agrees_with_the_reference(flax_impl: Any, norm_first: bool, activation: str,
                                                 causal: bool) -> None:
    kwargs = {"heads": HEADS, "norm_first": norm_first, "activation": activation, "causal": causal}
    torch.testing.assert_close(call(flax_impl, "encoder_layer", X, ENCODER, **kwargs),
                               reference.encoder_layer(X, ENCODER, **kwargs), **FLOAT32_SOFTMAX)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_and_stack_agree_with_the_reference(flax_impl: Any, norm_first: bool) -> None:
    kwargs = {"heads": HEADS, "norm_first": norm_first, "activation": "gelu"}
    torch.testing.assert_close(call(flax_impl, "decoder_layer", X, MEMORY, DECODER, **kwargs),
                               reference.decoder_layer(X, MEMORY, DECODER, **kwargs), **FLOAT32_SOFTMAX)
    layers = [ENCODER, _weights(ENCODER_KEYS, 300)]
    for final_norm in (None, (DECODER["gamma_3"], DECODER["beta_3"])):
        for causal in (False, True):
            torch.testing.assert_close(
                call(flax_impl, "encoder_stack", X, layers, final_norm=final_norm, causal=causal, **kwargs),
                reference.encoder_stack(X, layers, final_norm=final_norm, causal=causal, **kwargs), **FLOAT32_SOFTMAX)


def test_a_repeated_shape_is_not_compiled_again(flax_impl: Any) -> None:
    from specformer.adapters import flax_layers

    kwargs = {"heads": HEADS, "norm_first": True, "activation": "relu"}
    call(flax_impl, "encoder_layer", X, ENCODER, **kwargs)
    compiled = flax_layers._encoder_layer.jitted._cache_size()
    call(flax_impl, "encoder_layer", X + 1, _weights(ENCODER_KEYS, 400), **kwargs)  # new values, same shapes
    assert flax_layers._encoder_layer.jitted._cache_size() == compiled


def test_compiled_programs_are_dropped_past_the_limit(flax_impl: Any) -> None:
    from specformer.adapters import flax_layers

    call(flax_impl, "layer_norm", X, ENCODER["gamma_1"], ENCODER["beta_1"])
    assert not flax_layers.release_compiled(limit=10**9)
    assert flax_layers.release_compiled(limit=1)
    assert sum(f._cache_size() for f in flax_layers._JITTED) == 0


@pytest.mark.parametrize("config", [
    ModelConfig(1000, 64, 4, 256, 2, 2),
    ModelConfig(100, 8, 2, 16, 1, 3, shared_embeddings=False, tied_output=False, final_norm=True),
    ModelConfig(30522, 768, 12, 3072, 12, 0, positions="learned", token_types=2, embedding_norm=True,
                output_layer=False),
], ids=["encoder-decoder", "untied", "bert-base"])
def test_count_parameters_agrees_with_the_reference(flax_impl: Any, config: ModelConfig) -> None:
    assert flax_impl.count_parameters(config) == reference.count_parameters(config)


# -- positions and embeddings ---------------------------------------------------------------------------
def test_embed_lookups_sums_tying_and_gradient_agree_with_the_reference(flax_impl: Any) -> None:
    table, positions = _randn(7, 3, seed=21), torch.tensor([0, 6, 2, 2])
    assert torch.equal(call(flax_impl, "learned_positions", positions, table), table[positions])
    ids = torch.tensor([[1, 1, 3], [6, 0, 1]])
    assert torch.equal(call(flax_impl, "embedding_lookup", ids, table), table[ids])
    position_table = _randn(5, 3, seed=22)
    for scale in (False, True):
        torch.testing.assert_close(call(flax_impl, "input_embedding", ids, table, position_table, scale=scale),
                                   reference.input_embedding(ids, table, position_table, scale=scale), **EXACT)
    hidden, upstream = _randn(2, 3, seed=23), _randn(2, 3, 3, seed=24)
    torch.testing.assert_close(call(flax_impl, "tied_logits", hidden, table), hidden @ table.T, **EXACT)
    torch.testing.assert_close(call(flax_impl, "lookup_gradient", ids, table, upstream),
                               reference.lookup_gradient(ids, table, upstream), **EXACT)


def test_a_position_past_the_table_is_not_refused(flax_impl: Any) -> None:
    """Pinned (``deviations.toml``): ``nnx.Embed`` gathers with JAX's default out-of-bounds mode, a NaN row past
    the table, and Python's wrap-around for a negative position: it raises for neither."""
    table = _randn(4, 2, seed=25)
    rows = call(flax_impl, "learned_positions", torch.tensor([4, -1, 1]), table)
    assert rows[0].isnan().all() and torch.equal(rows[1], table[-1]) and torch.equal(rows[2], table[1])


def test_a_single_row_table_refuses_a_0d_id(flax_impl: Any) -> None:
    """Pinned (``deviations.toml``): ``nnx.Embed(1, d)`` broadcasts its table instead of taking a row, which
    fails for a 0-d id; two rows or more answer it."""
    with pytest.raises(ValueError, match="Cannot broadcast"):
        call(flax_impl, "embedding_lookup", torch.tensor(0), torch.ones(1, 3, dtype=F64))
    table = _randn(2, 3, seed=26)
    assert torch.equal(call(flax_impl, "embedding_lookup", torch.tensor(1), table), table[1])
    assert torch.equal(call(flax_impl, "embedding_lookup", torch.tensor([0, 0]), table[:1]), table[[0, 0]])


# -- rows of the suite ----------------------------------------------------------------------------------
@pytest.mark.parametrize("qualname, dtype", [
    ("attention.output_matches_the_formula", "float64"),
    ("attention.output_matches_the_formula", "float32"),
    ("masking.a_causal_flag_and_a_mask_combine_aligned_top_left", "float64"),
    ("multihead.output_is_the_concatenation_of_the_heads_times_w_o", "float32"),
    ("layernorm.layer_norm_is_the_formula_with_the_biased_variance_and_eps_inside_the_root", "float64"),
    ("ffn.the_feed_forward_network_is_two_affine_maps_around_the_activation", "float64"),
    ("encoder.the_pre_norm_layer_normalises_each_sublayers_input", "float32"),
    ("absolute.the_implementations_input_is_the_token_row_plus_the_position_row", "float64"),
])
def test_rows_pass(flax_impl: Any, qualname: str, dtype: str) -> None:
    row = run_row(qualname, flax_impl, dtype, timeout_s=240.0)
    assert row.outcome == "pass" and row.examples_checked > 0, (row.outcome, row.message)


def test_flops_the_counter_cannot_see_make_the_cost_rows_not_applicable(flax_impl: Any) -> None:
    """FlopCounterMode sees no XLA kernel: the cost properties count 0 FLOPs and end not applicable, not failed."""
    for qualname in ("attention_scores.the_flops_of_attention_are_quadratic_in_the_sequence_length",
                     "multihead.h_heads_of_width_d_over_h_cost_the_flops_of_one_head_of_width_d",
                     "cost.a_layer_costs_linear_terms_plus_attentions_quadratic_products"):
        row = run_row(qualname, flax_impl, "float64", timeout_s=240.0)
        assert row.outcome == "not-applicable" and "FlopCounterMode" in row.message, (qualname, row.outcome,
                                                                                       row.message)


def test_a_position_past_the_table_fails_its_row(flax_impl: Any) -> None:
    row = run_row("absolute.the_implementations_table_has_rows_up_to_its_length_only", flax_impl, "float64")
    assert row.outcome == "fail" and "gave a row instead of raising" in row.message, (row.outcome, row.message)


def _cache_dir_in_a_fresh_process(tmp_path: Any, **env: str) -> str:
    import os
    import subprocess
    import sys

    program = ("import jax, specformer.adapters.flax_layers as f\n"
               "jax.jit(lambda x: x * 2)(jax.numpy.ones(3)).block_until_ready()\n"
               "print(jax.config.jax_compilation_cache_dir)\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("JAX_COMPILATION_CACHE_DIR", "SPECFORMER_JAX_CACHE")}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300,
                          env={**clean, "XDG_CACHE_HOME": str(tmp_path / "xdg"), **env})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_compiled_programs_are_kept_on_disk_unless_the_user_chose_otherwise(tmp_path: Any) -> None:
    """JAX's persistent compilation cache: on by default (under XDG_CACHE_HOME, per JAX version and CPU), in
    the folder SPECFORMER_JAX_CACHE names, off with ``off``; a folder the user gave JAX is kept."""
    default = _cache_dir_in_a_fresh_process(tmp_path)
    assert default.startswith(str(tmp_path / "xdg" / "specformer" / f"jax-{jax.__version__}-")), default
    assert any((tmp_path / "xdg" / "specformer").rglob("*")), "nothing was written to the cache"
    chosen = tmp_path / "chosen"
    assert _cache_dir_in_a_fresh_process(tmp_path, SPECFORMER_JAX_CACHE=str(chosen)) == str(chosen)
    assert any(chosen.iterdir())
    assert _cache_dir_in_a_fresh_process(tmp_path, SPECFORMER_JAX_CACHE="off") == "None"
    own = tmp_path / "own"
    assert _cache_dir_in_a_fresh_process(tmp_path, JAX_COMPILATION_CACHE_DIR=str(own)) == str(own)
