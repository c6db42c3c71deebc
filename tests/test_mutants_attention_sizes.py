"""Bugs that appear only beyond the small sizes are caught: the strategies draw realistic sizes.

Before the realistic draws, attention cases stopped at ``t <= 5``, ``d <= 6``, batch 2, and
multi-head cases at 4 heads: an implementation wrong only above those sizes passed.
"""

from __future__ import annotations

import pytest

from conftest import assert_caught, run_row
from mutants import DROPS_LAST_KEY_WHEN_LARGE, MHA_WRONG_BEYOND_FOUR_HEADS
from specformer.adapters.reference import implementation as reference

LARGE_ONLY = [
    ("attention.output_matches_the_formula", DROPS_LAST_KEY_WHEN_LARGE),
    ("attention.every_output_row_depends_on_every_value_row", DROPS_LAST_KEY_WHEN_LARGE),
    ("multihead.output_is_the_concatenation_of_the_heads_times_w_o", MHA_WRONG_BEYOND_FOUR_HEADS),
    ("multihead.cross_attention_output_has_t_q_rows_and_matches_the_formula", MHA_WRONG_BEYOND_FOUR_HEADS),
]


@pytest.mark.parametrize(("qualname", "mutant"), LARGE_ONLY, ids=[q for q, _ in LARGE_ONLY])
def test_a_bug_beyond_the_small_sizes_is_caught(qualname: str, mutant: object) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message


@pytest.mark.parametrize("mutant", [DROPS_LAST_KEY_WHEN_LARGE, MHA_WRONG_BEYOND_FOUR_HEADS], ids=lambda m: m.name)
def test_the_mutant_is_right_at_small_sizes(mutant: object) -> None:
    """The mutants agree with the reference on every small example: only a realistic draw finds them."""
    import torch

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.rand(2, 5, 4, generator=g, dtype=torch.float64) for _ in range(3))
    if mutant is DROPS_LAST_KEY_WHEN_LARGE:
        assert torch.equal(mutant.attention(q, k, v).output, reference.attention(q, k, v).output)
    else:
        from specformer.reference.attention.multihead import MultiHeadParams

        params = MultiHeadParams(*(torch.rand(8, 8, generator=g, dtype=torch.float64) for _ in range(4)), 4)
        x = torch.rand(2, 5, 8, generator=g, dtype=torch.float64)
        assert torch.allclose(mutant.multihead_attention(x, x, x, params), reference.multihead_attention(x, x, x, params))


@pytest.mark.parametrize("qualname", [q for q, _ in LARGE_ONLY])
def test_the_reference_passes_at_realistic_sizes(qualname: str) -> None:
    row = run_row(qualname, reference, "float32")
    assert row.outcome == "pass", f"{row.outcome}: {row.message}"
