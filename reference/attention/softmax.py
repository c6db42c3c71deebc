"""Softmax over the last axis, with one documented choice for fully masked rows.

A row whose scores are all ``-inf`` (every key masked) has no probability distribution:
``exp(-inf) / sum(exp(-inf))`` is ``0 / 0``. The reference returns **all zeros** for
such a row (so the attention output of a query with nothing to attend to is zero) and
never NaN. This module does not handle NaN scores: NaN in, NaN out.
"""

from __future__ import annotations

import torch


def softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``exp(s_j - max s) / sum_k exp(s_k - max s)`` along ``dim``; fully masked rows give 0."""
    row_max = scores.amax(dim=dim, keepdim=True)
    # A row of -inf has max -inf; shifting by it would give NaN. Shift such rows by 0.
    row_max = torch.where(torch.isneginf(row_max), torch.zeros_like(row_max), row_max)
    exp = torch.exp(scores - row_max)
    total = exp.sum(dim=dim, keepdim=True)
    # total == 0 only for fully masked rows: divide by 1 there, leaving zeros.
    return exp / torch.where(total == 0, torch.ones_like(total), total)
