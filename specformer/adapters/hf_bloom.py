"""BLOOM's ALiBi from Hugging Face ``transformers`` behind the protocol.

* ``alibi_bias``: ``transformers.models.bloom.modeling_bloom.build_alibi_tensor`` for one
  sequence with no padding (an all-ones attention mask ``(1, t_k)``), which returns
  ``(h, 1, t_k)``: the slopes of ``_get_alibi_slopes`` times the key index,
  ``+m_k j``, the same for every query. The adapter broadcasts it over the ``t_q``
  queries and, when ``causal=True``, sets ``-inf`` where ``j > i`` (counted from the
  first query and key, the protocol's convention), the causal mask ``BloomModel`` adds
  to the scores before the softmax. BloomModel fills masked scores with
  ``finfo(dtype).min``, not ``-inf``; that fill is the masking family's concern
  (``masking.fully-masked-row``), so the adapter uses the protocol's ``-inf``.

What the library does differently is left for the suite to see: the bias is ``+m_k j``,
not ``-m_k |i - j|``; it equals the paper's ``-m_k (i - j)`` plus ``m_k i``, a constant per
row, so under the causal mask the attention weights are ALiBi's (the function's
docstring says it relies on the softmax's invariance), but the bias itself, and any use
without the causal mask, is not. The slopes are computed in float32 whatever the dtype.
Nothing is downloaded and no model is built.
"""

from __future__ import annotations

from typing import Any

import torch

from specformer.adapters.hf_common import transformers_module

NAME = "hf-bloom"


def _bloom() -> Any:
    return transformers_module("models.bloom.modeling_bloom", NAME)


class HuggingFaceBloom:
    """BLOOM's ``build_alibi_tensor`` as ``(h, t_q, t_k)`` biases."""

    name = NAME

    def alibi_bias(self, h: int, t_q: int, t_k: int, *, causal: bool = False, dtype: torch.dtype,
                   device: str) -> torch.Tensor:
        """``build_alibi_tensor`` broadcast over the queries; ``-inf`` above the diagonal when ``causal``."""
        for name, value in (("h", h), ("t_q", t_q), ("t_k", t_k)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{NAME}: {name} must be a positive int, got {value!r}")
        attention_mask = torch.ones(1, t_k, dtype=torch.long, device=device)  # (batch 1, t_k): no padding
        alibi = _bloom().build_alibi_tensor(attention_mask, h, dtype)  # (1 * h, 1, t_k)
        bias = alibi.expand(h, t_q, t_k).clone()  # (h, 1, t_k) -> (h, t_q, t_k)
        if causal:
            i = torch.arange(t_q, device=bias.device)[:, None]  # (t_q, 1)
            j = torch.arange(t_k, device=bias.device)[None, :]  # (1, t_k)
            bias = bias.masked_fill(j > i, float("-inf"))  # (t_q, t_k) broadcast over heads
        return bias


implementation = HuggingFaceBloom()
