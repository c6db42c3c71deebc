"""The RoPE adapters of third-party code: Hugging Face Llama's ``rotary`` and ``rotary-embedding-torch``.

Each must implement the pairing its docstring names (and refuse the other with
``NotApplicable``), honour the base, agree with the reference to float32 accuracy, and keep
the library's own behaviour where it departs from float64 mathematics: both compute the
angles in float32, so their float64 output is only float32-accurate and positions from
``2^24`` on collide. Those behaviours are pinned here. Tests of a library that is not
installed are skipped.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from typing import Any

import pytest
import torch

from specformer.adapters.reference import implementation as reference
from specformer.protocol import NotApplicable, provided_operations

#: adapter name -> (module, package to import, the pairing it implements)
ADAPTERS = {
    "hf-llama": ("specformer.adapters.hf_llama", "transformers", "half"),
    "rotary-embedding-torch": ("specformer.adapters.rotary_embedding_torch", "rotary_embedding_torch", "interleaved"),
}
F64 = torch.float64


def _implementation(name: str) -> Any:
    module, package, _ = ADAPTERS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pytest.importorskip(package)
    return importlib.import_module(module).implementation


@pytest.fixture(params=list(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> tuple[str, Any]:
    return ADAPTERS[request.param][2], _implementation(request.param)


def _x(*shape: int, dtype: torch.dtype = F64) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(7), dtype=dtype)


POSITIONS = torch.tensor([0, 1, 5, 300, 2047])


def test_each_adapter_provides_rotary(adapter: tuple[str, Any]) -> None:
    _, impl = adapter
    assert "rotary" in provided_operations(impl)


def test_the_other_pairing_is_not_applicable(adapter: tuple[str, Any]) -> None:
    pairing, impl = adapter
    other = "interleaved" if pairing == "half" else "half"
    with pytest.raises(NotApplicable, match="pairs features"):
        impl.rotary(_x(1, 2, 4), torch.tensor([0, 1]), pairing=other)


def test_the_first_feature_turns_towards_its_partner_in_the_adapters_layout(adapter: tuple[str, Any]) -> None:
    pairing, impl = adapter
    x = torch.zeros(1, 1, 8, dtype=F64)
    x[0, 0, 0] = 1.0
    out = impl.rotary(x, torch.tensor([1]), pairing=pairing)[0, 0]
    partner = 1 if pairing == "interleaved" else 4
    assert abs(out[partner].item() - 0.8414709848) < 1e-6  # sin 1
    assert out.abs().gt(1e-6).sum().item() == 2


@pytest.mark.parametrize("base", [10000.0, 500000.0, 10.0])
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_agrees_with_the_reference_to_float32_accuracy(adapter: tuple[str, Any], base: float,
                                                       dtype: torch.dtype) -> None:
    pairing, impl = adapter
    x = _x(2, 5, 16, dtype=dtype)
    out = impl.rotary(x, POSITIONS, pairing=pairing, base=base)
    assert out.dtype == dtype and out.shape == x.shape
    expected = reference.rotary(x.double(), POSITIONS, pairing=pairing, base=base)
    angle = 8 * torch.finfo(torch.float32).eps * (POSITIONS.max().item() + 1)  # float32 angles: 8 eps per unit of m
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=angle * x.double().norm(dim=-1).max().item())


def test_float64_carries_the_float32_angles(adapter: tuple[str, Any]) -> None:
    """In float64 the error is that of float32 angles: above float64 rounding, below 1e-5 at position 2047."""
    pairing, impl = adapter
    x = _x(1, 5, 16)
    error = (impl.rotary(x, POSITIONS, pairing=pairing) - reference.rotary(x, POSITIONS, pairing=pairing)).abs().max()
    assert 1e-9 < error.item() < 1e-3, f"float64 output differs from the reference by {error.item():.3g}"


def test_positions_from_two_to_the_24_collide(adapter: tuple[str, Any]) -> None:
    """float32 cannot hold 2^24 + 1: the libraries rotate it exactly like 2^24."""
    pairing, impl = adapter
    x = torch.ones(1, 2, 8, dtype=F64)
    out = impl.rotary(x, torch.tensor([2**24, 2**24 + 1]), pairing=pairing)
    assert torch.equal(out[0, 0], out[0, 1])
    exact = reference.rotary(x, torch.tensor([2**24, 2**24 + 1]), pairing=pairing)
    assert not torch.equal(exact[0, 0], exact[0, 1])


@pytest.mark.parametrize("name", ["rotary-embedding-torch", "x-transformers"])
def test_one_pair_is_rotated_through_the_first_pair_of_width_four(name: str) -> None:
    if name == "x-transformers":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pytest.importorskip("x_transformers")
            impl = importlib.import_module("specformer.adapters.xtransformers_attention").implementation
    else:
        impl = _implementation(name)
    x, positions = _x(1, 3, 2), torch.tensor([0, 1, 5])
    torch.testing.assert_close(impl.rotary(x, positions), reference.rotary(x, positions), rtol=1e-6, atol=1e-6)


def test_adapter_module_imports_without_importing_the_library() -> None:
    code = ("import sys; import specformer.adapters.rotary_embedding_torch; "
            "print('rotary_embedding_torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False", result.stdout + result.stderr
