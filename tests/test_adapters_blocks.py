"""The blocks family's adapters: torch.nn, Hugging Face BERT and GPT-2 against the reference.

For random float64 weights every supported ``(norm_first, activation, causal)`` setting of
``feed_forward``, ``encoder_layer`` and ``decoder_layer`` must agree with the reference to
1e-10, and every unsupported one must raise ``NotApplicable``; the same layers in float32
must stay within ~1e-5 of the float64 reference. The Hugging Face adapters are skipped
without ``transformers``; torch-nn always runs.
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from specformer.protocol import NotApplicable, provided_operations
from specformer.protocol.blocks import ACTIVATIONS, DECODER_KEYS, ENCODER_KEYS
from specformer.reference.blocks.decoder_layer import decoder_layer
from specformer.reference.blocks.encoder_layer import encoder_layer
from specformer.reference.blocks.ffn import feed_forward

F64 = torch.float64
D_MODEL, HEADS, D_FF, B, T, S = 8, 2, 16, 2, 5, 3
#: float64: rounding only; float32 against the float64 reference.
EXACT = {"rtol": 1e-10, "atol": 1e-10}
FLOAT32 = {"rtol": 1e-5, "atol": 1e-5}


@dataclass(frozen=True)
class Adapter:
    """An adapter module, the package it needs (None: torch only) and the settings it supports."""

    name: str
    module: str
    package: str | None
    activations: tuple[str, ...]
    norm_first: tuple[bool, ...]  # for both encoder_layer and decoder_layer; causal is always supported


ADAPTERS = (
    Adapter("torch-nn", "specformer.adapters.torch_nn", None, ("relu", "gelu"), (False, True)),
    Adapter("hf-bert", "specformer.adapters.hf_bert", "transformers", ACTIVATIONS, (False,)),
    Adapter("hf-gpt2", "specformer.adapters.hf_gpt2", "transformers", ACTIVATIONS, (True,)),
)
IDS = [a.name for a in ADAPTERS]


def _load(spec: Adapter) -> Any:
    if spec.package is not None:
        pytest.importorskip(spec.package)
    return importlib.import_module(spec.module).implementation


@pytest.fixture(params=ADAPTERS, ids=IDS)
def adapter(request: pytest.FixtureRequest) -> tuple[Adapter, Any]:
    """An adapter description and its implementation (the Hugging Face ones skipped without transformers)."""
    spec: Adapter = request.param
    return spec, _load(spec)


def _randn(*shape: int, g: torch.Generator) -> torch.Tensor:
    return 0.5 * torch.randn(*shape, generator=g, dtype=F64)


def _weights(keys: tuple[str, ...], seed: int) -> dict[str, torch.Tensor]:
    """Weights ~ 0.5 N(0, 1) (``gamma`` ~ 1 + 0.5 N(0, 1)) for ``keys``, in the protocol's layout."""
    g = torch.Generator().manual_seed(seed)
    shapes = {"w_1": (D_MODEL, D_FF), "b_1": (D_FF,), "w_2": (D_FF, D_MODEL)}
    weights = {}
    for key in keys:
        shape = shapes.get(key, (D_MODEL, D_MODEL) if key.startswith("w") else (D_MODEL,))
        weights[key] = _randn(*shape, g=g) + (1.0 if key.startswith("gamma") else 0.0)
    return weights


def _inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``x (B, t, d_model)`` and ``memory (B, s, d_model)``."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, T, D_MODEL, generator=g, dtype=F64), torch.randn(B, S, D_MODEL, generator=g, dtype=F64)


def _cast(weights: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    return {key: value.to(dtype) for key, value in weights.items()}


X, MEMORY = _inputs(1)
ENCODER, DECODER = _weights(ENCODER_KEYS, 2), _weights(DECODER_KEYS, 3)
FFN = tuple(ENCODER[k] for k in ("w_1", "b_1", "w_2", "b_2"))


# -- operations ------------------------------------------------------------------------------------
BLOCKS = {"feed_forward", "encoder_layer", "decoder_layer"}


def test_each_adapter_provides_the_blocks_operations(adapter: tuple[Adapter, Any]) -> None:
    spec, impl = adapter
    assert impl.name == spec.name
    assert BLOCKS <= provided_operations(impl)


# -- float64 agreement, or NotApplicable, over every setting ------------------------------------------
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_feed_forward_agrees_with_the_reference_or_is_not_applicable(adapter: tuple[Adapter, Any],
                                                                     activation: str) -> None:
    spec, impl = adapter
    if activation not in spec.activations:
        with pytest.raises(NotApplicable, match=activation):
            impl.feed_forward(X, *FFN, activation=activation)
        return
    got = impl.feed_forward(X, *FFN, activation=activation)
    torch.testing.assert_close(got, feed_forward(X, *FFN, activation), **EXACT)


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_layer_agrees_with_the_reference_or_is_not_applicable(adapter: tuple[Adapter, Any], norm_first: bool,
                                                                      activation: str, causal: bool) -> None:
    spec, impl = adapter
    kwargs = {"heads": HEADS, "norm_first": norm_first, "activation": activation, "causal": causal}
    if norm_first not in spec.norm_first or activation not in spec.activations:
        reason = "norm" if norm_first not in spec.norm_first else activation
        with pytest.raises(NotApplicable, match=reason):
            impl.encoder_layer(X, ENCODER, **kwargs)
        return
    torch.testing.assert_close(impl.encoder_layer(X, ENCODER, **kwargs), encoder_layer(X, ENCODER, **kwargs), **EXACT)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_agrees_with_the_reference_or_is_not_applicable(adapter: tuple[Adapter, Any], norm_first: bool,
                                                                      activation: str) -> None:
    spec, impl = adapter
    kwargs = {"heads": HEADS, "norm_first": norm_first, "activation": activation}
    if norm_first not in spec.norm_first or activation not in spec.activations:
        reason = "norm" if norm_first not in spec.norm_first else activation
        with pytest.raises(NotApplicable, match=reason):
            impl.decoder_layer(X, MEMORY, DECODER, **kwargs)
        return
    got = impl.decoder_layer(X, MEMORY, DECODER, **kwargs)
    torch.testing.assert_close(got, decoder_layer(X, MEMORY, DECODER, **kwargs), **EXACT)


@pytest.mark.parametrize("operation", sorted(BLOCKS))
def test_an_activation_outside_the_protocol_is_not_applicable(adapter: tuple[Adapter, Any], operation: str) -> None:
    spec, impl = adapter
    with pytest.raises(NotApplicable, match="silu"):
        if operation == "feed_forward":
            impl.feed_forward(X, *FFN, activation="silu")
        elif operation == "encoder_layer":
            impl.encoder_layer(X, ENCODER, heads=HEADS, norm_first=spec.norm_first[0], activation="silu")
        else:
            impl.decoder_layer(X, MEMORY, DECODER, heads=HEADS, norm_first=spec.norm_first[0], activation="silu")


# -- float32 against the float64 reference ----------------------------------------------------------
def _supported(spec: Adapter) -> list[tuple[bool, str]]:
    return list(itertools.product(spec.norm_first, spec.activations))


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_float32_layers_stay_close_to_the_float64_reference(adapter: tuple[Adapter, Any], causal: bool) -> None:
    spec, impl = adapter
    x, memory = X.float(), MEMORY.float()
    encoder, decoder = _cast(ENCODER, torch.float32), _cast(DECODER, torch.float32)
    for norm_first, activation in _supported(spec):
        kwargs = {"heads": HEADS, "norm_first": norm_first, "activation": activation}
        got = impl.encoder_layer(x, encoder, causal=causal, **kwargs)
        assert got.dtype == torch.float32
        torch.testing.assert_close(got.double(), encoder_layer(X, ENCODER, causal=causal, **kwargs), **FLOAT32)
        if not causal:  # the decoder layer is always causal: once is enough
            got = impl.decoder_layer(x, memory, decoder, **kwargs)
            assert got.dtype == torch.float32
            torch.testing.assert_close(got.double(), decoder_layer(X, MEMORY, DECODER, **kwargs), **FLOAT32)
    if not causal:
        for activation in spec.activations:
            got = impl.feed_forward(x, *(w.float() for w in FFN), activation=activation)
            assert got.dtype == torch.float32
            torch.testing.assert_close(got.double(), feed_forward(X, *FFN, activation), **FLOAT32)


# -- masks, caching, and inputs out of the domain ---------------------------------------------------
@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_the_encoder_layer_sees_later_tokens_exactly_when_not_causal(adapter: tuple[Adapter, Any],
                                                                     causal: bool) -> None:
    """GPT2Block builds no causal mask itself (GPT2Model does): without one it must be bidirectional."""
    spec, impl = adapter
    kwargs = {"heads": HEADS, "norm_first": spec.norm_first[0], "causal": causal}
    changed = X.clone()
    changed[:, -1] = torch.linspace(-2.0, 2.0, D_MODEL, dtype=F64)  # only the last token differs (not by a
    # constant shift: a pre-norm layer's LayerNorm would remove it before attention sees it)
    out, out_changed = impl.encoder_layer(X, ENCODER, **kwargs), impl.encoder_layer(changed, ENCODER, **kwargs)
    earlier_moved = (out[:, :-1] - out_changed[:, :-1]).abs().max().item()
    if causal:
        assert earlier_moved < 1e-12, f"a causal layer's earlier outputs moved by {earlier_moved:.3g}"
    else:
        assert earlier_moved > 1e-3, "a bidirectional layer's earlier outputs ignored the last token"


def test_weights_are_set_on_every_call(adapter: tuple[Adapter, Any]) -> None:
    """Modules may be cached per shape and dtype; a second weight set must not see the first."""
    spec, impl = adapter
    kwargs = {"heads": HEADS, "norm_first": spec.norm_first[0]}
    for seed in (10, 11):
        encoder, decoder = _weights(ENCODER_KEYS, seed), _weights(DECODER_KEYS, seed + 100)
        torch.testing.assert_close(impl.encoder_layer(X, encoder, **kwargs), encoder_layer(X, encoder, **kwargs),
                                   **EXACT)
        torch.testing.assert_close(impl.decoder_layer(X, MEMORY, decoder, **kwargs),
                                   decoder_layer(X, MEMORY, decoder, **kwargs), **EXACT)
        ffn = tuple(encoder[k] for k in ("w_1", "b_1", "w_2", "b_2"))
        torch.testing.assert_close(impl.feed_forward(X, *ffn), feed_forward(X, *ffn), **EXACT)


def test_the_epsilon_reaches_the_norms(adapter: tuple[Adapter, Any]) -> None:
    spec, impl = adapter
    kwargs = {"heads": HEADS, "norm_first": spec.norm_first[0], "eps": 0.5}
    torch.testing.assert_close(impl.encoder_layer(X, ENCODER, **kwargs), encoder_layer(X, ENCODER, **kwargs), **EXACT)
    torch.testing.assert_close(impl.decoder_layer(X, MEMORY, DECODER, **kwargs),
                               decoder_layer(X, MEMORY, DECODER, **kwargs), **EXACT)


@pytest.mark.parametrize("name", ["hf-bert", "hf-gpt2"])
def test_heads_that_do_not_divide_d_model_are_an_error(name: str) -> None:
    spec = next(a for a in ADAPTERS if a.name == name)
    impl = _load(spec)
    with pytest.raises(ValueError, match="heads=3"):
        impl.encoder_layer(X, ENCODER, heads=3, norm_first=spec.norm_first[0])
    with pytest.raises(ValueError, match="heads=3"):
        impl.decoder_layer(X, MEMORY, DECODER, heads=3, norm_first=spec.norm_first[0])


@pytest.mark.parametrize("name", ["hf-bert", "hf-gpt2"])
def test_weights_of_the_wrong_shape_are_an_error(name: str) -> None:
    """``copy_`` would broadcast a ``(1,)`` bias silently: the adapters check the shapes first."""
    impl = _load(next(a for a in ADAPTERS if a.name == name))
    w_1, b_1, w_2, b_2 = FFN
    with pytest.raises(ValueError, match="b_1"):
        impl.feed_forward(X, w_1, b_1[:1], w_2, b_2)


# -- stacks, parameter counts, the input sum --------------------------------------------------------


def test_torch_nn_stack_agrees_with_the_reference_with_and_without_the_final_norm() -> None:
    from specformer.adapters.torch_nn import implementation as torch_nn
    from specformer.properties.blocks.strategies import layer_weights
    from specformer.reference.blocks.stack import encoder_stack

    layers = [layer_weights(seed, D_MODEL, D_FF) for seed in range(3)]
    final = (torch.linspace(0.5, 1.5, D_MODEL, dtype=F64), torch.linspace(-0.5, 0.5, D_MODEL, dtype=F64))
    for norm_first, causal in itertools.product((False, True), (False, True)):
        kwargs = {"heads": HEADS, "norm_first": norm_first, "final_norm": final if norm_first else None,
                  "causal": causal}
        torch.testing.assert_close(torch_nn.encoder_stack(X, layers, **kwargs), encoder_stack(X, layers, **kwargs),
                                   **EXACT)


COUNTED = {
    # name: (a configuration in the library's layout, one outside it)
    "torch-nn": ({"encoder_layers": 2, "decoder_layers": 1, "final_norm": True, "shared_embeddings": False,
                  "tied_output": False, "positions": "learned"}, {"encoder_layers": 0, "decoder_layers": 2}),
    "hf-gpt2": ({"encoder_layers": 2, "positions": "learned", "final_norm": True, "tied_output": False},
                {"encoder_layers": 2, "positions": "sinusoidal", "final_norm": True}),
    "hf-bert": ({"encoder_layers": 2, "positions": "learned", "embedding_norm": True, "token_types": 2,
                 "output_layer": False}, {"encoder_layers": 2, "positions": "learned", "output_layer": False}),
}


@pytest.mark.parametrize("name", list(COUNTED))
def test_parameter_counts_agree_with_the_reference_inside_the_layout(name: str) -> None:
    from specformer.protocol.blocks import ModelConfig
    from specformer.reference.blocks.size import count_parameters

    impl = _load(next(a for a in ADAPTERS if a.name == name))
    inside, outside = COUNTED[name]
    config = ModelConfig(100, 16, 2, 40, max_len=32, **inside)
    assert impl.count_parameters(config) == count_parameters(config)
    with pytest.raises((NotApplicable, ValueError)):
        impl.count_parameters(ModelConfig(100, 16, 2, 40, max_len=32, **outside))
    if name == "torch-nn":  # without final norms: custom stacks whose norm is None
        plain = ModelConfig(100, 16, 2, 40, 2, 1, final_norm=False)
        assert impl.count_parameters(plain) == count_parameters(plain)


def test_gpt2_input_is_its_token_and_position_rows_unscaled() -> None:
    impl = _load(ADAPTERS[2])
    from specformer.reference.positions.learned import input_embedding

    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 7, (3, 5), generator=g)
    e, p = torch.randn(7, 4, generator=g, dtype=F64), torch.randn(9, 4, generator=g, dtype=F64)
    torch.testing.assert_close(impl.input_embedding(tokens, e, p), input_embedding(tokens, e, p), **EXACT)
    with pytest.raises(NotApplicable, match="unscaled"):
        impl.input_embedding(tokens, e, p, scale=True)
