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

* ``alibi_attention``: ``BloomAttention`` (built from a ``BloomConfig`` with
  ``hidden_size = h d_k``, ``n_head = h``, dropouts 0, eval mode) run on the given
  queries, keys and values: its fused projection ``query_key_value`` is replaced by a
  module that returns ``q, k, v`` laid out as the library's ``_reshape`` reads them, its
  output projection ``dense`` by the identity, and the residual is zero, so what is left
  is the library's own score computation, ``alibi.baddbmm(q, k^T, alpha = d_k^{-1/2})``
  plus the causal mask ``BloomModel`` builds (the library's additive mask,
  ``finfo(dtype).min`` where masked), its softmax (computed in float32 and cast back),
  and the product with the values. Causal only (BLOOM is a decoder; without the mask its
  ``+m j`` bias is not ALiBi's), ``t_q = t_k`` (no cache) and ``d_v = d_k``.
* ``count_parameters``: ``BloomModel`` (``output_layer=False``) or ``BloomForCausalLM``
  (tied output layer) built on the ``meta`` device from ``vocab_size``, ``hidden_size``,
  ``n_layer``, ``n_head``; its parameters counted, the tied matrix once. BLOOM's layout
  is fixed: ALiBi positions, a LayerNorm after the word embeddings, a final LayerNorm,
  a decoder-only stack with ``d_ff = 4 d_model``; other configurations are not applicable.

What the library does differently is left for the suite to see: the bias is ``+m_k j``,
not ``-m_k |i - j|``; it equals the paper's ``-m_k (i - j)`` plus ``m_k i``, a constant per
row, so under the causal mask the attention weights are ALiBi's (the function's
docstring says it relies on the softmax's invariance), but the bias itself, and any use
without the causal mask, is not. The slopes are computed in float32 whatever the dtype.
Nothing is downloaded; no model is built other than on the meta device.
"""

from __future__ import annotations

from typing import Any

import torch

from specformer.adapters.hf_common import additive_mask, transformers_module
from specformer.protocol import Capabilities
from specformer.protocol.base import NotApplicable
from specformer.protocol.blocks import ModelConfig

NAME = "hf-bloom"


def _bloom() -> Any:
    return transformers_module("models.bloom.modeling_bloom", NAME)


class HuggingFaceBloom:
    """BLOOM's ``build_alibi_tensor`` as ``(h, t_q, t_k)`` biases, its attention with them, and its parameter count."""

    name = NAME
    #: BLOOM is a decoder: its +m j bias is ALiBi's under the causal mask only; BloomAttention takes
    #: t_q = t_k only (a cache puts the queries at the end of the keys); its layout is fixed.
    capabilities = Capabilities(conventions={"alibi_causal": frozenset({True}), "alibi_lengths": frozenset({"equal"}),
                                             "model_layout": frozenset({"bloom"})})

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


    def alibi_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                        causal: bool = False) -> torch.Tensor:
        """``BloomAttention``'s scores, causal mask, softmax and weighted values on ``q, k, v (B, h, t, d_k)``."""
        if not causal:
            raise NotApplicable(f"{NAME}: BLOOM's attention is causal only (its +m j bias is ALiBi's under the mask)")
        if q.dim() != 4 or not (q.shape == k.shape == v.shape):
            raise NotApplicable(f"{NAME}: BloomAttention takes self-attention with t_q = t_k and d_v = d_k, got "
                                f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
        b, h, t, d_k = q.shape
        bloom = _bloom()
        config = bloom.BloomConfig(hidden_size=h * d_k, n_head=h, n_layer=1, vocab_size=1, hidden_dropout=0.0,
                                   attention_dropout=0.0, bos_token_id=None, eos_token_id=None)
        module = bloom.BloomAttention(config, layer_idx=0).to(device=q.device, dtype=q.dtype).eval()
        fused = torch.stack([q, k, v], dim=3)  # 3 x (B, h, t, d_k) -> (B, h, t, 3, d_k)
        fused = fused.permute(0, 2, 1, 3, 4).reshape(b, t, h * 3 * d_k)  # -> (B, t, h, 3, d_k) -> (B, t, 3 h d_k)
        module.query_key_value = _Given(fused)
        module.dense = torch.nn.Identity()
        attention_mask = torch.ones(b, t, dtype=torch.long, device=q.device)  # (B, t): no padding
        alibi = bloom.build_alibi_tensor(attention_mask, h, q.dtype)  # (B * h, 1, t)
        mask = additive_mask(None, True, b, t, t, q.dtype, q.device, NAME)  # (B, 1, t, t)
        hidden = torch.zeros(b, t, h * d_k, dtype=q.dtype, device=q.device)  # (B, t, h d_k): read for its shape
        with torch.no_grad():
            out = module(hidden, torch.zeros_like(hidden), alibi, mask)[0]  # (B, t, h d_k)
        return out.reshape(b, t, h, d_k).transpose(1, 2)  # (B, t, h, d_k) -> (B, h, t, d_k)

    def count_parameters(self, config: ModelConfig) -> int:
        """Parameters of ``BloomModel`` or, with a tied output layer, ``BloomForCausalLM`` (meta device)."""
        c = config
        fixed = {"decoder_layers": 0, "positions": "alibi", "final_norm": True, "embedding_norm": True,
                 "token_types": 0, "d_ff": 4 * c.d_model}
        wrong = {name: getattr(c, name) for name, value in fixed.items() if getattr(c, name) != value}
        if c.encoder_layers < 1 or (c.output_layer and not c.tied_output) or wrong:
            raise NotApplicable(f"{NAME}: BLOOM's layout is fixed ({fixed}, a tied or no output layer), got {wrong}")
        bloom = _bloom()
        built = bloom.BloomConfig(vocab_size=c.vocab_size, hidden_size=c.d_model, n_layer=c.encoder_layers,
                                  n_head=c.heads, bos_token_id=None, eos_token_id=None)
        with torch.device("meta"):
            model = (bloom.BloomForCausalLM if c.output_layer else bloom.BloomModel)(built)
        return sum(p.numel() for p in model.parameters())  # parameters() yields the tied matrix once


class _Given(torch.nn.Module):
    """Stands in for a projection: returns a fixed tensor whatever its input."""

    def __init__(self, value: torch.Tensor) -> None:
        super().__init__()
        self.value = value

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.value


implementation = HuggingFaceBloom()
