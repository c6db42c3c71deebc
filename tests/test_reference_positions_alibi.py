"""The reference ALiBi (``reference/positions/alibi.py``): values, shapes, dtypes and bad input."""

from __future__ import annotations

import pytest
import torch

from specformer.reference.positions.alibi import alibi_bias, alibi_slopes


def test_the_slopes_of_eight_heads_are_one_half_to_one_over_256() -> None:
    assert alibi_slopes(8).tolist() == [2.0 ** -k for k in range(1, 9)]


@pytest.mark.parametrize(("h", "expected"), [
    (1, [2.0 ** -8]),
    (2, [2.0 ** -4, 2.0 ** -8]),
    (3, [2.0 ** -4, 2.0 ** -8, 2.0 ** -2]),
    (6, [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3]),
])
def test_the_slopes_follow_the_papers_rule(h: int, expected: list[float]) -> None:
    assert alibi_slopes(h).tolist() == expected


def test_other_numbers_of_heads_take_every_other_slope_of_the_next_power_of_two() -> None:
    for h in range(2, 65):
        n = 1 << (h.bit_length() - 1)
        slopes = alibi_slopes(h)
        assert slopes.dtype == torch.float64 and slopes.shape == (h,)
        torch.testing.assert_close(slopes[:n], alibi_slopes(n), rtol=0, atol=0)
        torch.testing.assert_close(slopes[n:], alibi_slopes(2 * n)[0::2][: h - n], rtol=1e-15, atol=0)


def test_the_bias_is_minus_slope_times_distance_and_symmetric() -> None:
    bias = alibi_bias(2, 3, 3)
    expected = torch.tensor([[0.0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=torch.float64)
    torch.testing.assert_close(bias, -alibi_slopes(2)[:, None, None] * expected)
    assert torch.equal(bias, bias.transpose(1, 2))
    assert not torch.signbit(bias.diagonal(dim1=1, dim2=2)).any(), "the diagonal must be +0.0"


def test_the_causal_bias_masks_the_future_top_left() -> None:
    bias = alibi_bias(1, 2, 3, causal=True)  # rows and columns counted from the first
    m = 2.0 ** -8
    assert bias.tolist() == [[[0.0, float("-inf"), float("-inf")], [-m, 0.0, float("-inf")]]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_dtype_and_shape(dtype: torch.dtype) -> None:
    bias = alibi_bias(4, 5, 7, causal=True, dtype=dtype, device="cpu")
    assert bias.shape == (4, 5, 7) and bias.dtype == dtype and bias.device.type == "cpu"


@pytest.mark.parametrize(("args", "word"), [
    ((0, 2, 2), "h"),
    ((-1, 2, 2), "h"),
    ((2, 0, 2), "t_q"),
    ((2, 2, 0), "t_k"),
    ((2, -3, 2), "t_q"),
    ((2.0, 2, 2), "h"),
    ((True, 2, 2), "h"),
])
def test_bad_sizes_raise_a_value_error_naming_them(args: tuple, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        alibi_bias(*args)


def test_a_non_positive_number_of_heads_has_no_slopes() -> None:
    with pytest.raises(ValueError, match="h"):
        alibi_slopes(0)


def test_an_integer_dtype_is_refused() -> None:
    with pytest.raises(ValueError, match="floating"):
        alibi_bias(2, 2, 2, dtype=torch.int64)
