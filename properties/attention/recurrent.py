"""The cost of a recurrent network, for the slides' comparison with attention
(``spec/attention/attention.md``, claim ``attention.rnn-linear-cost``).

The slides put attention's ``O(t_x t_y (d_k + d_v))`` beside an RNN's
``O(t_x d_x d_h + t_x d_h^2)``. The property counts the operations of PyTorch's Elman
RNN (``torch.nn.RNN``, ``h_t = tanh(x_t W_ih^T + h_{t-1} W_hh^T)``, no bias) with
:func:`specformer.flops.count_flops` and compares them with the formula's terms. It checks
PyTorch's module, not an implementation under test; the tanh is elementwise and not
counted.
"""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.flops import count_flops
from specformer.property import claim_property


def rnn_flops(b: int, t: int, d_x: int, d_h: int) -> int:
    """Operations counted in one forward pass of ``torch.nn.RNN(d_x, d_h)`` over ``(b, t, d_x)``."""
    rnn = torch.nn.RNN(d_x, d_h, bias=False, batch_first=True, dtype=torch.float64)
    x = torch.zeros(b, t, d_x, dtype=torch.float64)
    with count_flops() as counted, torch.no_grad():
        rnn(x)
    return counted[0]


@claim_property("attention.rnn-linear-cost", needs=(), about="library", dtypes=("float64",), max_examples=20)
@given(b=st.integers(1, 2), t=st.integers(1, 12), d_x=st.integers(1, 8), d_h=st.integers(1, 8))
def an_rnn_costs_2_t_d_h_times_d_x_plus_d_h(ctx: Context, b, t, d_x, d_h) -> None:
    """``torch.nn.RNN``: ``2 B t (d_x d_h + d_h^2)`` operations, linear in ``t`` (a multiply-add is 2)."""
    counted = rnn_flops(b, t, d_x, d_h)
    expected = 2 * b * t * (d_x * d_h + d_h * d_h)
    assert counted == expected, (
        f"B={b}, t={t}, d_x={d_x}, d_h={d_h}: {counted} operations counted, expected 2 B t (d_x d_h + d_h^2) = {expected}"
    )
