"""The tolerance rules: per-dtype bounds, and the low-precision rule against a same-dtype reference."""

from __future__ import annotations

import pytest
import torch

from specformer.context import LOW_PRECISION_FACTOR, Context, LocalBackend, assert_close
from specformer.properties.tolerances import Tolerance

TIGHT = Tolerance(rtol=0.0, atol=1e-3)


def test_an_entry_within_twice_the_reference_error_passes_only_with_the_rule() -> None:
    expected = torch.tensor([1.0, 2.0])
    actual = torch.tensor([1.0, 2.05])
    reference_error = torch.tensor([0.0, 0.03])  # 2 x 0.03 = 0.06 >= 0.05
    with pytest.raises(AssertionError, match="out of tolerance"):
        assert_close(actual, expected, "x", TIGHT)
    assert_close(actual, expected, "x", TIGHT, reference_error=reference_error)
    with pytest.raises(AssertionError, match="same-dtype reference"):
        assert_close(actual, expected, "x", TIGHT, reference_error=reference_error / 2)


def test_a_reference_that_overflowed_gives_no_allowance() -> None:
    with pytest.raises(AssertionError):
        assert_close(torch.tensor([5.0]), torch.tensor([1.0]), "x", TIGHT, reference_error=torch.tensor([float("nan")]))


@pytest.mark.parametrize("dtype, rule_applies", [("float16", True), ("bfloat16", True), ("float32", False)])
def test_the_context_uses_the_same_dtype_reference_only_in_low_precision(dtype: str, rule_applies: bool) -> None:
    ctx = Context(LocalBackend(None), "x", "cpu", dtype)
    calls: list[torch.dtype] = []
    expected = torch.tensor([1.0])
    off = expected + 10 * ctx.tol.atol + 10 * ctx.tol.rtol  # outside the plain tolerance

    def same_dtype(d: torch.dtype) -> torch.Tensor:
        calls.append(d)
        return expected + (off - expected) / LOW_PRECISION_FACTOR  # exactly at the allowance

    if rule_applies:
        ctx.assert_close(off, expected, "x", same_dtype=same_dtype)
        assert calls == [ctx.dtype]
    else:
        with pytest.raises(AssertionError):
            ctx.assert_close(off, expected, "x", same_dtype=same_dtype)
        assert calls == []


def test_half_precision_attention_on_the_cpu_passes_the_formula_property() -> None:
    """The reference computed in float16 is, by construction, as close as the same-dtype reference."""
    from conftest import run_row

    from specformer.adapters.reference import implementation

    row = run_row("attention.output_matches_the_formula", implementation, dtype="float16")
    assert row.outcome == "pass", f"{row.outcome}: {row.message}"
