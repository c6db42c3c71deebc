"""The adapters of third-party attention: Hugging Face BERT, GPT-2, Llama, and x-transformers.

Each adapter must agree with the reference (float64, random inputs, with and without
masks), provide the operations its docstring lists, refuse with ``NotApplicable`` the
inputs it documents as out of its domain, and leave the library's own behaviour where
it departs from the documents (those behaviours are pinned here, so a conversion that
hid them would be caught). Tests of a library that is not installed are skipped.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from specformer.adapters.reference import implementation as reference
from specformer.protocol import NotApplicable, provided_operations
from specformer.reference.attention.multihead import MultiHeadParams, multi_head_attention


@dataclass(frozen=True)
class Adapter:
    """An adapter module, the package it needs, and how close it is to float64 (see ``TOLERANCE``)."""

    name: str
    module: str
    package: str
    float32_softmax: bool  # the library computes the softmax in float32 whatever the input dtype


ADAPTERS = (
    Adapter("hf-bert", "specformer.adapters.hf_bert", "transformers", False),
    Adapter("hf-gpt2", "specformer.adapters.hf_gpt2", "transformers", False),
    Adapter("hf-llama", "specformer.adapters.hf_llama", "transformers", True),
    Adapter("x-transformers", "specformer.adapters.xtransformers_attention", "x_transformers", True),
)
#: float64 agreement: rounding only, or the float32 softmax of Llama and x-transformers' Attend.
TOLERANCE = {False: {"rtol": 1e-10, "atol": 1e-12}, True: {"rtol": 1e-5, "atol": 1e-5}}
F64 = torch.float64


def _require(package: str) -> None:
    with warnings.catch_warnings():  # x-transformers' import warns about torch.jit.script
        warnings.simplefilter("ignore", DeprecationWarning)
        pytest.importorskip(package)


@pytest.fixture(params=ADAPTERS, ids=[a.name for a in ADAPTERS])
def adapter(request: pytest.FixtureRequest) -> tuple[Adapter, Any]:
    """An adapter description and its implementation object (skipped without its package)."""
    spec: Adapter = request.param
    _require(spec.package)
    return spec, importlib.import_module(spec.module).implementation


def _implementation(name: str) -> Any:
    spec = next(a for a in ADAPTERS if a.name == name)
    _require(spec.package)
    return importlib.import_module(spec.module).implementation


def _randn(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _mask(*shape: int, seed: int) -> torch.Tensor:
    """A random boolean mask whose every row keeps key 0."""
    mask = torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) > 0.4
    mask[..., 0] = True
    return mask


def _params(d_model: int, h: int, d_k: int, d_v: int, seed: int) -> MultiHeadParams:
    return MultiHeadParams(_randn(d_model, h * d_k, seed=seed), _randn(d_model, h * d_k, seed=seed + 1),
                           _randn(d_model, h * d_v, seed=seed + 2), _randn(h * d_v, d_model, seed=seed + 3), h)


# -- operations and agreement with the reference ---------------------------------------------
#: The operations each adapter documents (the attention pair, plus positions and blocks where the library has them).
BLOCKS = {"feed_forward", "encoder_layer", "decoder_layer"}  # tests/test_adapters_blocks.py
OPERATIONS = {
    "hf-bert": {"attention", "multihead_attention", "count_parameters"} | BLOCKS,
    "hf-gpt2": {"attention", "multihead_attention", "count_parameters", "input_embedding"} | BLOCKS,
    "hf-llama": {"attention", "multihead_attention", "rotary"},
    "x-transformers": {"attention", "multihead_attention", "alibi_bias", "rotary"},
}


def test_each_adapter_has_its_name_and_its_documented_operations(adapter: tuple[Adapter, Any]) -> None:
    spec, impl = adapter
    assert impl.name == spec.name
    assert provided_operations(impl) == OPERATIONS[spec.name]


MASKS = {"none": None, "full": (2, 3, 5), "padding": (2, 1, 5), "shared": (3, 5)}


@pytest.mark.parametrize("causal", [False, True], ids=["plain", "causal"])
@pytest.mark.parametrize("mask_shape", list(MASKS), ids=list(MASKS))
def test_attention_agrees_with_the_reference(adapter: tuple[Adapter, Any], mask_shape: str, causal: bool) -> None:
    spec, impl = adapter
    # t_q = t_k keeps the causal mask's alignment out of it (x-transformers aligns bottom-right).
    t_k = 3 if causal else 5
    q, k, v = _randn(2, 3, 4, seed=1), _randn(2, t_k, 4, seed=2), _randn(2, t_k, 3, seed=3)
    shape = MASKS[mask_shape]
    mask = None if shape is None else _mask(*shape[:-1], t_k, seed=4)
    output, weights = impl.attention(q, k, v, mask, causal=causal)
    expected = reference.attention(q, k, v, mask, causal=causal)
    torch.testing.assert_close(output, expected.output, **TOLERANCE[spec.float32_softmax])
    torch.testing.assert_close(weights, expected.weights, **TOLERANCE[spec.float32_softmax])


def test_attention_takes_leading_head_axes(adapter: tuple[Adapter, Any]) -> None:
    spec, impl = adapter
    q, k, v = _randn(2, 3, 4, 2, seed=5), _randn(2, 3, 6, 2, seed=6), _randn(2, 3, 6, 5, seed=7)
    mask = _mask(2, 1, 4, 6, seed=8)  # (B, 1, t_q, t_k): shared by the heads
    output, weights = impl.attention(q, k, v, mask)
    expected = reference.attention(q, k, v, mask)
    torch.testing.assert_close(output, expected.output, **TOLERANCE[spec.float32_softmax])
    torch.testing.assert_close(weights, expected.weights, **TOLERANCE[spec.float32_softmax])


@pytest.mark.parametrize("mask_shape", list(MASKS), ids=list(MASKS))
@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_multihead_attention_agrees_with_the_reference(adapter: tuple[Adapter, Any], cross: bool,
                                                       mask_shape: str) -> None:
    spec, impl = adapter
    params = _params(6, 3, 2, 2, seed=10)  # d_k = d_v = d_model / h: every adapter's domain
    query = _randn(2, 3, 6, seed=11)
    source = _randn(2, 5, 6, seed=12) if cross else query
    shape = MASKS[mask_shape]
    mask = None if shape is None else _mask(*shape[:-1], source.shape[1], seed=13)
    got = impl.multihead_attention(query, source, source, params, mask)
    torch.testing.assert_close(got, reference.multihead_attention(query, source, source, params, mask),
                               **TOLERANCE[spec.float32_softmax])


@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_multihead_attention_with_the_models_causal_mask(adapter: tuple[Adapter, Any], cross: bool) -> None:
    spec, impl = adapter
    params, query = _params(4, 2, 2, 2, seed=14), _randn(1, 4, 4, seed=15)
    source = _randn(1, 4, 4, seed=16) if cross else query  # t_q = t_k: one causal alignment
    got = impl.multihead_attention(query, source, source, params, causal=True)
    torch.testing.assert_close(got, multi_head_attention(query, source, source, params, causal=True),
                               **TOLERANCE[spec.float32_softmax])


@pytest.mark.parametrize("name, d_model, h, d_k, d_v", [
    ("hf-llama", 4, 2, 4, 4),  # h d_k != d_model: Llama's head_dim is free
    ("hf-llama", 3, 1, 3, 3),  # an odd head_dim of at most 4 is accepted by LlamaConfig
    ("x-transformers", 4, 2, 3, 5),  # d_k != d_v
    ("x-transformers", 5, 1, 2, 2),  # one head: project_out keeps W^O
])
def test_multihead_attention_beyond_square_heads(name: str, d_model: int, h: int, d_k: int, d_v: int) -> None:
    impl = _implementation(name)
    params, query = _params(d_model, h, d_k, d_v, seed=20), _randn(2, 3, d_model, seed=21)
    for source in (query, _randn(2, 4, d_model, seed=22)):
        got = impl.multihead_attention(query, source, source, params)
        torch.testing.assert_close(got, reference.multihead_attention(query, source, source, params),
                                   **TOLERANCE[True])


# -- inputs out of the adapters' domains ------------------------------------------------------
@pytest.mark.parametrize("name", ["hf-bert", "hf-gpt2", "hf-llama"])
def test_hugging_face_heads_need_d_v_equal_to_d_k(name: str) -> None:
    impl, x = _implementation(name), _randn(1, 3, 4, seed=30)
    with pytest.raises(NotApplicable, match="d_v=1"):
        impl.multihead_attention(x, x, x, _params(4, 2, 2, 1, seed=31))


@pytest.mark.parametrize("name", ["hf-bert", "hf-gpt2"])
def test_bert_and_gpt2_need_d_k_equal_to_d_model_over_h(name: str) -> None:
    impl, x = _implementation(name), _randn(1, 3, 4, seed=32)
    with pytest.raises(NotApplicable, match="d_model / h"):
        impl.multihead_attention(x, x, x, _params(4, 2, 3, 3, seed=33))


@pytest.mark.parametrize("name", [a.name for a in ADAPTERS])
def test_keys_and_values_from_different_sequences_are_not_applicable(name: str) -> None:
    impl = _implementation(name)
    query, key, value = _randn(1, 3, 4, seed=34), _randn(1, 5, 4, seed=35), _randn(1, 5, 4, seed=36)
    with pytest.raises(NotApplicable, match="key"):
        impl.multihead_attention(query, key, value, _params(4, 2, 2, 2, seed=37))


def test_llama_takes_an_odd_head_width_its_config_would_refuse_for_rope() -> None:
    """LlamaConfig refuses an odd head_dim for RoPE; multihead_attention applies no rotation, so it answers."""
    impl, x = _implementation("hf-llama"), _randn(1, 3, 5, seed=38)
    params = _params(5, 1, 5, 5, seed=39)  # head_dim 5: odd
    torch.testing.assert_close(impl.multihead_attention(x, x, x, params), multi_head_attention(x, x, x, params),
                               rtol=1e-5, atol=1e-5)  # Llama's softmax runs in float32


def test_llama_refuses_what_its_config_refuses() -> None:
    impl, x = _implementation("hf-llama"), _randn(1, 3, 5, seed=38)
    with pytest.raises(NotApplicable, match="LlamaConfig refuses.*multiple of the number of attention heads"):
        impl.multihead_attention(x, x, x, _params(5, 2, 2, 2, seed=40))


def test_llama_cross_attention_spreads_a_fully_masked_query_row_over_the_keys() -> None:
    """The library's eager mask adds finfo.min: a row with every key masked averages the values of the keys
    (as over one sequence of keys), never the query positions the adapter puts beside them. In float32:
    in float64 the library's own softmax (float32) turns finfo(float64).min into -inf and the row into NaN."""
    impl, query, source = _implementation("hf-llama"), _randn(1, 2, 4, seed=41).float(), _randn(1, 3, 4, seed=42).float()
    p = _params(4, 2, 2, 2, seed=43)
    params = MultiHeadParams(p.w_q.float(), p.w_k.float(), p.w_v.float(), p.w_o.float(), 2)
    mask = torch.tensor([[[True, False, True], [False, False, False]]])
    out = impl.multihead_attention(query, source, source, params, mask)  # (1, 2, 4)
    expected = multi_head_attention(query, source, source, params, mask[:, :1])[:, 0]  # row 0: the formula
    torch.testing.assert_close(out[:, 0], expected)
    uniform = (source @ params.w_v).mean(dim=1) @ params.w_o  # row 1: every head averages its values
    torch.testing.assert_close(out[:, 1], uniform)


# -- the libraries' own behaviour, left for the suite to see ---------------------------------
FULLY_MASKED = torch.tensor([[[False, False], [True, False]]])  # query 0 may attend no key


@pytest.mark.parametrize("dtype", [torch.float32, F64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", ["hf-bert", "hf-gpt2", "hf-llama"])
def test_hugging_face_fully_masked_row_spreads_its_weight_evenly(name: str, dtype: torch.dtype) -> None:
    """The eager mask adds ``finfo(dtype).min``: a row with no allowed key gets uniform weights, not zeros.

    Llama's float32 softmax turns ``finfo(float64).min`` into ``-inf``: in float64 that row is NaN.
    """
    impl = _implementation(name)
    q, k, v = torch.zeros(1, 2, 1, dtype=dtype), torch.zeros(1, 2, 1, dtype=dtype), _randn(1, 2, 3, seed=44).to(dtype)
    output, weights = impl.attention(q, k, v, FULLY_MASKED)
    if name == "hf-llama" and dtype == F64:
        assert weights[0, 0].isnan().all() and output[0, 0].isnan().all()
    else:
        torch.testing.assert_close(weights[0, 0], torch.full((2,), 0.5, dtype=dtype))
        torch.testing.assert_close(output[0, 0], v[0].mean(0))
    torch.testing.assert_close(weights[0, 1], torch.tensor([1.0, 0.0], dtype=dtype))  # the other row is unaffected


@pytest.mark.parametrize("dtype", [torch.float32, F64], ids=["float32", "float64"])
def test_x_transformers_zeroes_a_fully_masked_rows_output_but_not_its_weights(dtype: torch.dtype) -> None:
    """``Attend`` fills with ``-finfo(dtype).max``: uniform weights in float32, NaN in float64 (its float32 softmax)."""
    impl = _implementation("x-transformers")
    q, k, v = torch.zeros(1, 2, 1, dtype=dtype), torch.zeros(1, 2, 1, dtype=dtype), _randn(1, 2, 3, seed=45).to(dtype)
    output, weights = impl.attention(q, k, v, FULLY_MASKED)
    assert (output[0, 0] == 0).all()
    if dtype == F64:
        assert weights[0, 0].isnan().all()
    else:
        torch.testing.assert_close(weights[0, 0], torch.full((2,), 0.5, dtype=dtype))


def test_x_transformers_aligns_its_causal_mask_bottom_right() -> None:
    """With ``t_q < t_k``, query ``i`` sees keys ``j <= i + t_k - t_q`` (the protocol: ``j <= i``)."""
    impl = _implementation("x-transformers")
    q, k, v = _randn(1, 2, 3, seed=46), _randn(1, 4, 3, seed=47), _randn(1, 4, 2, seed=48)
    weights = impl.attention(q, k, v, causal=True).weights[0]
    assert torch.equal(weights > 0, torch.ones(2, 4, dtype=torch.bool).tril(2))


@pytest.mark.parametrize("name", ["hf-llama", "x-transformers"])
def test_float64_weights_carry_the_float32_softmax(name: str) -> None:
    impl = _implementation(name)
    q, k, v = _randn(1, 4, 3, seed=49), _randn(1, 4, 3, seed=50), _randn(1, 4, 2, seed=51)
    weights = impl.attention(q, k, v).weights
    exact = reference.attention(q, k, v).weights
    assert weights.dtype == F64
    error = (weights - exact).abs().max().item()
    assert 1e-12 < error < 1e-6, f"float64 weights differ from the reference by {error:.3g}"


# -- imports ------------------------------------------------------------------------------------
def test_adapter_modules_import_without_importing_the_libraries() -> None:
    code = ("import sys; import specformer.adapters.hf_bert, specformer.adapters.hf_gpt2, "
            "specformer.adapters.hf_llama, specformer.adapters.xtransformers_attention; "
            "print(sorted(m for m in ('transformers', 'x_transformers') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_a_missing_library_is_named_with_the_install_command() -> None:
    from specformer.adapters.hf_common import import_library

    expected = r"hf-bert adapter needs the 'transformers' package.*pip install 'specformer\[thirdparty\]'"
    with pytest.raises(ImportError, match=expected):
        import_library("specformer_no_such_module", "transformers", "hf-bert")
