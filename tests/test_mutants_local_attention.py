"""``properties/attention/local_attention.py`` catches wrong implementations."""

from __future__ import annotations

import pytest

from conftest import assert_caught, run_row
from mutants import IGNORES_MASK, SOFTMAX_WRONG_AXIS, Mutant, attention_with

BOUND = "local_attention.local_attention_is_within_twice_the_outside_weight_of_full_attention"
AS_WRITTEN = "local_attention.local_attention_gives_the_output_of_full_attention_as_written"

INVERTED = Mutant("mask-inverted", lambda q, k, v, mask=None, *, causal=False:
                  attention_with()(q, k, v, None if mask is None else ~mask, causal=causal))


@pytest.mark.parametrize("mutant", [INVERTED, SOFTMAX_WRONG_AXIS])
def test_the_bound_catches(mutant: Mutant) -> None:
    """A leaky mask would not do: leaking outside the window brings local attention closer to full."""
    assert_caught(BOUND, mutant)


def test_the_refutation_is_found_and_an_implementation_that_ignores_masks_hides_it() -> None:
    from specformer.adapters.reference import implementation

    assert run_row(AS_WRITTEN, implementation).outcome == "refuted"
    assert_caught(AS_WRITTEN, IGNORES_MASK)  # under it a band mask changes nothing: no counterexample
