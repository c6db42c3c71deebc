"""Implementations written with other array libraries: NumPy and JAX arrays in and out.

An implementation that declares ``Capabilities(arrays=...)`` receives that library's arrays
and dtypes and may answer with them; the worker converts both ways
(:mod:`specformer.runner.arrays`). A correct NumPy or JAX attention passes the attention
properties, a wrong one is still caught, and what cannot be converted is named.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
import torch

from specformer.protocol import Capabilities, CapabilityError
from specformer.protocol.attention import AttentionOutput
from specformer.runner.arrays import ArrayConversionError, array_to_tensor, from_library, tensor_to, to_library

from conftest import run_row

ATTENTION_PROPERTIES = ("attention.output_matches_the_formula", "attention.rows_of_the_weights_sum_to_one",
                        "attention.self_attention_is_permutation_equivariant",
                        "masking.a_causal_flag_and_a_mask_combine_aligned_top_left")


def _softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - np.max(np.where(np.isneginf(x), -np.inf, x), axis=-1, keepdims=True)
    e = np.exp(np.nan_to_num(shifted, nan=-np.inf))
    return e / e.sum(axis=-1, keepdims=True)


class NumpyAttention:
    """Attention in NumPy alone: takes and returns np.ndarray."""

    name = "numpy-attention"
    capabilities = Capabilities(arrays="numpy", dtypes={"float32", "float64"})
    scale = True

    def attention(self, q, k, v, mask=None, *, causal=False):
        assert isinstance(q, np.ndarray) and (mask is None or isinstance(mask, np.ndarray))
        scores = q @ np.swapaxes(k, -1, -2)  # (B, t_q, t_k)
        if self.scale:
            scores = scores / np.asarray(math.sqrt(q.shape[-1]), dtype=q.dtype)
        allowed = np.ones(scores.shape, dtype=bool)
        if mask is not None:
            allowed = allowed & mask
        if causal:
            allowed = allowed & np.tril(np.ones(scores.shape[-2:], dtype=bool))
        weights = _softmax(np.where(allowed, scores, -np.inf)).astype(q.dtype)
        return AttentionOutput(weights @ v, weights)


class UnscaledNumpyAttention(NumpyAttention):
    name = "numpy-attention-unscaled"
    scale = False


def test_a_correct_numpy_attention_passes() -> None:
    for qualname in ATTENTION_PROPERTIES:
        for dtype in ("float64", "float32"):
            row = run_row(qualname, NumpyAttention(), dtype)
            assert row.outcome == "pass" and row.examples_checked > 0, (qualname, dtype, row.outcome, row.message)


def test_a_wrong_numpy_attention_is_caught() -> None:
    row = run_row("attention.output_matches_the_formula", UnscaledNumpyAttention())
    assert row.outcome == "fail", (row.outcome, row.message)


def test_numpy_arrays_live_on_the_cpu() -> None:
    caps = Capabilities(arrays="numpy")
    assert caps.outside(("attention",), "cuda", "float32") == ("declares arrays='numpy', whose arrays live on cpu, "
                                                              "not cuda")
    assert caps.outside(("attention",), "cpu", "float32") is None
    with pytest.raises(CapabilityError, match="capabilities.arrays names 'nump'.*did you mean 'numpy'"):
        Capabilities(arrays="nump")
    assert Capabilities.from_plain(caps.to_plain()) == caps


def test_conversion_keeps_dtype_shape_and_values() -> None:
    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool):
        t = (torch.arange(6, dtype=torch.float64).reshape(2, 3) / 3).to(dtype)  # (6,) -> (2, 3)
        back = array_to_tensor(tensor_to(t, "numpy"))
        assert back.dtype == dtype and back.shape == t.shape and torch.equal(back, t), dtype
    args = to_library(((torch.ones(2),), {"dtype": torch.bfloat16, "n": 3}), "numpy")
    assert isinstance(args[0][0], np.ndarray) and args[1]["dtype"].name == "bfloat16" and args[1]["n"] == 3
    answer = from_library(AttentionOutput(np.ones((1, 2), np.float32), None))
    assert isinstance(answer, AttentionOutput) and answer.output.dtype == torch.float32 and answer.weights is None
    assert from_library([np.int64(3), np.float32(0.5)]) == [3, 0.5]


def test_what_cannot_be_converted_is_named() -> None:
    with pytest.raises(ArrayConversionError, match="NumPy arrays live on the CPU"):
        tensor_to(torch.ones(2, device="meta"), "numpy")
    with pytest.raises(ArrayConversionError, match="object has no torch counterpart"):
        array_to_tensor(np.array([object()], dtype=object))


class _BrokenArray:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("no")


def test_an_answer_that_cannot_be_read_is_an_error_row() -> None:
    class Broken(NumpyAttention):
        name = "numpy-broken"

        def attention(self, q, k, v, mask=None, *, causal=False):
            return AttentionOutput(_BrokenArray(), None)

    row = run_row("attention.output_matches_the_formula", Broken())
    assert row.outcome == "error" and "could not be converted from numpy to torch" in row.message, row.message


jax = pytest.importorskip("jax")


JAX_ATTENTION = textwrap.dedent('''
    import math
    import jax
    import jax.numpy as jnp
    from specformer.protocol import Capabilities
    from specformer.protocol.attention import AttentionOutput

    jax.config.update("jax_enable_x64", True)


    @jax.jit
    def _attention(q, k, v, allowed):
        scores = q @ jnp.swapaxes(k, -1, -2) / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))  # (B, t_q, t_k)
        weights = jax.nn.softmax(jnp.where(allowed, scores, -jnp.inf), axis=-1)
        return weights @ v, weights


    class JaxAttention:
        name = "jax-attention"
        capabilities = Capabilities(arrays="jax")

        def attention(self, q, k, v, mask=None, *, causal=False):
            assert isinstance(q, jax.Array), type(q)
            allowed = jnp.ones((q.shape[0], q.shape[1], k.shape[1]), dtype=bool)
            if mask is not None:
                allowed = allowed & mask
            if causal:
                allowed = allowed & jnp.tril(jnp.ones((q.shape[1], k.shape[1]), dtype=bool))
            output, weights = _attention(q, k, v, allowed)
            return AttentionOutput(output, weights)


    implementation = JaxAttention()
''')


def test_a_jitted_jax_attention_passes_in_its_worker(tmp_path) -> None:
    """Through a real worker (JAX imported there, after the fork): float64 with x64 on, and float32."""
    from specformer.context import WorkerBackend
    from specformer.protocol import Capabilities as Caps
    from specformer.property import load_properties
    from specformer.runner.row import run_property
    from specformer.runner.supervisor import WorkerPool

    path = tmp_path / "jax_attention.py"
    path.write_text(JAX_ATTENTION)
    pool = WorkerPool()
    spec = str(path)
    try:
        answer = pool.load(spec, 120)
        assert answer["status"] == "loaded", answer
        assert answer["capabilities"]["arrays"] == "jax"
        for qualname in ATTENTION_PROPERTIES[:2]:
            for dtype in ("float64", "float32"):
                row = run_property(load_properties()[qualname], WorkerBackend(pool, spec), answer["name"], spec,
                                   "cpu", dtype, "ci", 300, frozenset(answer["operations"]),
                                   capabilities=Caps.from_plain(answer["capabilities"]))
                assert row.outcome == "pass" and row.examples_checked > 0, (qualname, dtype, row.outcome, row.message)
    finally:
        pool.close()


def test_jax_without_x64_names_the_setting() -> None:
    if jax.config.read("jax_enable_x64"):
        pytest.skip("x64 is on in this process")
    with pytest.raises(ArrayConversionError, match="jax_enable_x64"):
        tensor_to(torch.ones(2, dtype=torch.float64), "jax")
    ids = tensor_to(torch.tensor([1, 2]), "jax")
    assert str(ids.dtype) == "int32"
    back = array_to_tensor(tensor_to(torch.ones(3, dtype=torch.bfloat16), "jax"))
    assert back.dtype == torch.bfloat16 and torch.equal(back, torch.ones(3, dtype=torch.bfloat16))


def test_the_jax_skeleton_declares_its_arrays_and_types_its_signatures(tmp_path) -> None:
    """``specformer new attention --arrays jax``: JAX imported, x64 on, arrays declared, signatures in jax.Array
    (and NumPy's likewise); an unknown library is refused."""
    import ast

    from specformer.runner.skeleton import skeleton

    text = skeleton("attention", "jax")
    ast.parse(text)
    assert "import jax\n" in text and 'jax.config.update("jax_enable_x64", True)' in text
    assert "arrays='jax'" in text and "q: jax.Array" in text and "torch.Tensor" not in text
    assert "import torch" not in text
    numpy_text = skeleton("blocks", "numpy")
    ast.parse(numpy_text)
    assert "arrays='numpy'" in numpy_text and "x: np.ndarray" in numpy_text
    with pytest.raises(KeyError):
        skeleton("attention", "tensorflow")


def test_the_protocol_page_shows_the_jax_skeleton() -> None:
    from specformer.site.protocol import protocol_page

    page = protocol_page("positions")
    assert "## In JAX, NumPy, CuPy or MLX" in page and "specformer new positions --arrays jax" in page
    assert "arrays='jax'" in page
