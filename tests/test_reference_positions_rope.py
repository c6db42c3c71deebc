"""The reference RoPE (``reference/positions/rope.py``): bad input is refused with a clear
``ValueError``, and the documented conventions (pairings, float64 angles) hold."""

from __future__ import annotations

import math

import pytest
import torch

from specformer.reference.positions.rope import rotary_angles, rotary_embedding

F64 = torch.float64


def _x(*shape: int, dtype: torch.dtype = F64) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=dtype)


@pytest.mark.parametrize(("x", "positions", "kwargs", "match"), [
    (_x(1, 2, 3), torch.tensor([0, 1]), {}, r"width d must be even and positive, got d=3"),
    (_x(1, 2, 0), torch.tensor([0, 1]), {}, r"width d must be even and positive, got d=0"),
    (_x(1, 2, 4), torch.tensor([0, -1]), {}, r"positions must be non-negative, got minimum -1"),
    (_x(1, 0, 4), torch.tensor([], dtype=torch.int64), {}, r"positions is empty"),
    (_x(1, 2, 4), torch.tensor([0.0, 1.0]), {}, r"positions must be integers"),
    (_x(1, 2, 4), torch.tensor([[0, 1]]), {}, r"positions must be a 1-D tensor"),
    (_x(1, 2, 4), torch.tensor([0, 1, 2]), {}, r"positions has 3 entries but x has t=2 rows"),
    (_x(1, 2, 4), torch.tensor([0, 1]), {"pairing": "neox"}, r"unknown pairing 'neox'"),
    (_x(1, 2, 4), torch.tensor([0, 1]), {"base": 0.0}, r"base must be positive"),
    (_x(4), torch.tensor([0]), {}, r"x must be \(\.\.\., t, d\)"),
    (torch.ones(1, 2, 4, dtype=torch.int64), torch.tensor([0, 1]), {}, r"floating-point"),
])
def test_bad_input_is_refused_with_a_clear_message(x: torch.Tensor, positions: torch.Tensor, kwargs: dict,
                                                   match: str) -> None:
    with pytest.raises(ValueError, match=match):
        rotary_embedding(x, positions, **kwargs)


def test_angles_refuse_an_odd_width() -> None:
    with pytest.raises(ValueError, match="must be even"):
        rotary_angles(torch.tensor([0]), 5)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_position_one_turns_the_first_pair_by_one_radian(pairing: str) -> None:
    x = torch.tensor([[[1.0, 0.0, 0.0, 0.0]]], dtype=F64)
    out = rotary_embedding(x, torch.tensor([1]), pairing=pairing)
    second = 1 if pairing == "interleaved" else 2  # the partner of feature 0
    expected = torch.zeros(1, 1, 4, dtype=F64)
    expected[0, 0, 0], expected[0, 0, second] = math.cos(1.0), math.sin(1.0)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-15)


def test_the_two_pairings_coincide_for_one_pair_and_differ_beyond() -> None:
    p = torch.tensor([0, 5, 17])
    two, four = _x(2, 3, 2), _x(2, 3, 4)
    assert torch.equal(rotary_embedding(two, p), rotary_embedding(two, p, pairing="half"))
    assert not torch.allclose(rotary_embedding(four, p), rotary_embedding(four, p, pairing="half"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_shape_and_leading_axes_are_kept(dtype: torch.dtype) -> None:
    x = _x(2, 3, 5, 6, dtype=dtype)  # (B, h, t, d)
    p = torch.tensor([4, 0, 9, 9, 1])
    out = rotary_embedding(x, p, pairing="half")
    assert out.shape == x.shape and out.dtype == dtype
    torch.testing.assert_close(out[1, 2], rotary_embedding(x[1, 2][None], p, pairing="half")[0])


def test_float32_keeps_positions_apart_beyond_two_to_the_24() -> None:
    """The angles are float64: 2^24 and 2^24 + 1 (equal in float32) still rotate differently."""
    x = torch.ones(1, 2, 2, dtype=torch.float32)
    out = rotary_embedding(x, torch.tensor([2**24, 2**24 + 1]))
    exact = rotary_embedding(x.double(), torch.tensor([2**24, 2**24 + 1]))
    assert not torch.equal(out[0, 0], out[0, 1])
    torch.testing.assert_close(out.double(), exact, rtol=0, atol=1e-6)


def test_inputs_are_not_modified() -> None:
    x = _x(1, 3, 4)
    before = x.clone()
    rotary_embedding(x, torch.tensor([1, 2, 3]), pairing="interleaved")
    assert torch.equal(x, before)
