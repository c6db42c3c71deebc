"""The RNN cost property (``properties/attention/recurrent.py``) passes on PyTorch's RNN and fails
on a recurrence that costs more than linear time."""

from __future__ import annotations

import torch

from conftest import run_row
from specformer.properties.attention import recurrent

P = "recurrent.an_rnn_costs_2_t_d_h_times_d_x_plus_d_h"


def test_pytorch_rnn_has_the_slides_cost() -> None:
    row = run_row(P, None)
    assert row.outcome == "pass", f"{row.outcome}: {row.message}"


def test_a_recurrence_that_rereads_the_prefix_is_caught(monkeypatch) -> None:
    """A mis-statement: each step attends over all earlier inputs, quadratic in t."""
    original = recurrent.rnn_flops

    def quadratic(b: int, t: int, d_x: int, d_h: int) -> int:
        from specformer.flops import count_flops

        x = torch.ones(b, t, d_x, dtype=torch.float64)
        with count_flops() as counted:
            for step in range(1, t + 1):
                prefix = x[:, :step]  # (B, step, d_x)
                prefix @ prefix.transpose(1, 2)
        return original(b, t, d_x, d_h) + counted[0]

    monkeypatch.setattr(recurrent, "rnn_flops", quadratic)
    row = run_row(P, None)
    assert row.outcome == "fail", f"{row.outcome}: {row.message}"
