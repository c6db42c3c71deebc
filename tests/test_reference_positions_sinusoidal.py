"""The reference's sinusoidal and binary encodings: hand-computed values and error messages."""

from __future__ import annotations

import math

import pytest
import torch

from specformer.adapters.reference import implementation
from specformer.reference.positions.bits import binary_encoding, max_positions
from specformer.reference.positions.sinusoidal import frequencies, sinusoidal_encoding

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                reason="CUDA is not available"))]


def p(*values: int, device: str = "cpu") -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int64, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_hand_computed_sinusoidal_values(device: str) -> None:
    pe = sinusoidal_encoding(p(0, 1, 2, device=device), 4)
    w = 10000 ** -0.5
    expected = torch.tensor([[0, 1, 0, 1],
                             [math.sin(1), math.cos(1), math.sin(w), math.cos(w)],
                             [math.sin(2), math.cos(2), math.sin(2 * w), math.cos(2 * w)]], dtype=torch.float64)
    assert pe.device.type == device
    torch.testing.assert_close(pe.cpu(), expected, rtol=0, atol=1e-15)


def test_course_notes_third_entry_at_d_model_100() -> None:
    pe = sinusoidal_encoding(p(1, 2), 100)
    assert round(float(pe[0, 2]), 2) == 0.74 and round(float(pe[1, 2]), 2) == 1.00


def test_dtype_base_and_frequencies() -> None:
    pe = sinusoidal_encoding(p(5), 6, base=100.0, dtype=torch.float32)
    assert pe.dtype == torch.float32 and pe.shape == (1, 6)
    torch.testing.assert_close(frequencies(6, 100.0), torch.tensor([1.0, 100 ** (-1 / 3), 100 ** (-2 / 3)],
                                                                  dtype=torch.float64))


def test_float32_result_is_the_float64_one_rounded_once() -> None:
    positions = p(2**24, 2**24 + 1)
    pe = sinusoidal_encoding(positions, 8, dtype=torch.float32)
    assert not torch.equal(pe[0], pe[1])
    assert torch.equal(pe, sinusoidal_encoding(positions, 8).float())


@pytest.mark.parametrize("device", DEVICES)
def test_binary_values(device: str) -> None:
    b = binary_encoding(p(0, 1, 6, 7, device=device), 3)
    assert b.device.type == device
    assert b.cpu().tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 1], [1, 1, 1]]
    assert binary_encoding(p(2**62), 70)[0, 62] == 1 and binary_encoding(p(2**62), 70)[0, 63:].eq(0).all()
    assert max_positions(3) == 8


def test_the_adapter_dispatches_by_kind() -> None:
    assert torch.equal(implementation.positional_encoding("binary", p(3), 2, dtype=torch.float64), torch.ones(1, 2,
                                                                                                     dtype=torch.float64))
    with pytest.raises(ValueError, match="unknown positional encoding"):
        implementation.positional_encoding("learned", p(3), 2, dtype=torch.float64)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: sinusoidal_encoding(p(0, 1), 5), "d_model must be even"),
    (lambda: sinusoidal_encoding(p(0, 1), 0), "even integer >= 2"),
    (lambda: sinusoidal_encoding(p(0, -1), 4), "positions must be >= 0"),
    (lambda: sinusoidal_encoding(p(), 4), "t = 0"),
    (lambda: sinusoidal_encoding(torch.tensor([0.0, 1.0]), 4), "integer tensor"),
    (lambda: sinusoidal_encoding(torch.zeros(2, 2, dtype=torch.int64), 4), "1-D"),
    (lambda: sinusoidal_encoding(p(0), 4, base=0.0), "base must be"),
    (lambda: binary_encoding(p(0, -3), 4), "positions must be >= 0"),
    (lambda: binary_encoding(p(), 4), "t = 0"),
    (lambda: binary_encoding(p(8), 3), "needs more than d_model=3 bits"),
    (lambda: binary_encoding(p(1), 0), "d_model must be an integer >= 1"),
])
def test_bad_input_raises_a_value_error_that_names_the_problem(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_positions_must_be_a_tensor() -> None:
    with pytest.raises(TypeError, match="torch.Tensor"):
        sinusoidal_encoding([0, 1], 4)  # type: ignore[arg-type]
