"""The mathematics the properties compare against, in float64, written from the formulas.

These functions restate the documents' formulas directly with ``torch.softmax`` and
matrix products. They do not call the reference implementation, so a property can
check the reference too. They assume every query row has at least one allowed key.
"""

from __future__ import annotations

import math

import torch


def attention_formula(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(softmax(q k^T / sqrt(d_k) masked) v, weights)`` in float64."""
    q, k, v = q.double(), k.double(), v.double()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, t_q, t_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights  # (B, t_q, t_k) @ (B, t_k, d_v) -> (B, t_q, d_v)


def attention_formula_in(dtype: torch.dtype, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                         mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The formula computed in ``dtype`` from inputs rounded to it: the same-dtype reference
    of the low-precision rule (:meth:`specformer.context.Context.assert_close`)."""
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, t_q, t_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def multihead_formula(query: torch.Tensor, source: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor,
                      w_v: torch.Tensor, w_o: torch.Tensor, h: int,
                      mask: torch.Tensor | None = None, value: torch.Tensor | None = None) -> torch.Tensor:
    """``Concat(head_1..head_h) W^O`` computed head by head with explicit column slices.

    Keys come from ``source``; values from ``value`` when given, else from ``source`` too.
    """
    value = source if value is None else value
    d_k, d_v = w_q.shape[1] // h, w_v.shape[1] // h
    heads = []
    for i in range(h):
        cols_k, cols_v = slice(i * d_k, (i + 1) * d_k), slice(i * d_v, (i + 1) * d_v)
        head, _ = attention_formula(query @ w_q[:, cols_k], source @ w_k[:, cols_k], value @ w_v[:, cols_v], mask)
        heads.append(head)  # (B, t_q, d_v)
    return torch.cat(heads, dim=-1) @ w_o  # (B, t_q, h*d_v) @ (h*d_v, d_model)
