"""``x-transformers`` attention behind the protocol (``Attend`` and ``Attention``).

(The module is not called ``x_transformers``: loaded by file path, its folder goes on
``sys.path``, and a file of that name would hide the library.)

* ``attention``: ``x_transformers.attend.Attend`` (no flash kernel, dropout 0, eval
  mode) on one head, ``(..., t, d) -> (N, 1, t, d)``, with its default scale
  ``d_k^{-1/2}``. The mask is boolean with True = may attend, the protocol's convention;
  the adapter broadcasts it to ``(N, 1, t_q, t_k)`` because ``Attend`` reads a 2-D mask
  as a key-padding mask ``(B, t_k)``. ``causal=True`` is passed to ``Attend`` as its own
  ``causal`` flag, unconverted: ``Attend`` aligns it bottom-right (query ``i`` sees keys
  ``j <= i + t_k - t_q``, the key-value-cache convention; none for the first
  ``t_q - t_k`` queries when ``t_q > t_k``), and the adapter declares
  ``causal_alignment = {"bottom-right"}``. The weights are ``Attend``'s intermediates
  (``post_softmax_attn``).
* ``multihead_attention``: ``x_transformers.x_transformers.Attention`` with
  ``dim = d_model``, ``heads = h``, ``dim_head = d_k``, ``value_dim_head = d_v`` and
  ``project_out=True`` (with one head and ``dim_out = dim`` the module would otherwise
  drop ``W^O``); ``to_q``, ``to_k``, ``to_v``, ``to_out`` are bias-free ``nn.Linear``
  layers and get the parameters transposed. Keys from another sequence go in as
  ``context``. The mask goes in as ``attn_mask`` (True = may attend): ``(t_q, t_k)`` as
  it is, a 3-D mask with a head axis added, since the module reads a 3-D mask as
  ``(heads, t_q, t_k)``.

What the library does differently is left for the suite to see: ``Attend`` computes the
softmax in float32 whatever the input dtype, and masks with ``-finfo(dtype).max`` and zeroes
the output (not the weights) of a fully masked row.
Not applicable: keys different from values (``Attention`` projects both from
``context``).

The positions family:

* ``alibi_bias``: ``x_transformers.x_transformers.AlibiPositionalBias(heads=h)`` called as
  ``Attention`` calls it, ``(t_q, t_k)``, giving ``-m_k |i - j|`` with the library's slopes.
  The library places the queries at the *end* of the keys (query ``i`` at position
  ``i + t_k - t_q``, the key-value-cache convention), and the adapter leaves it so: for
  ``t_q != t_k`` the rows are shifted against the protocol's top-left alignment.
  ``causal=True`` sets ``-inf`` where ``Attend``'s own ``create_causal_mask`` masks (also
  aligned bottom-right); ``Attend`` itself fills ``-finfo(dtype).max / 2`` there when it
  adds the bias. The slopes are a float32 buffer (``Tensor(list)``) whatever the dtype.
* ``rotary``: ``RotaryEmbedding(dim=d, base=base)`` and ``apply_rotary_pos_emb``, which
  rotate interleaved pairs ``(2i, 2i + 1)`` (``rotate_half`` pairs neighbours here);
  ``pairing="half"`` is not applicable. The module computes its inverse frequencies in
  float32; for float64 inputs the adapter moves the module to float64, as
  ``model.double()`` would (the frequencies keep their float32 rounding), for other
  dtypes it stays in float32, the library's default. ``RotaryEmbedding(dim=2)`` raises
  ``ZeroDivisionError``; pair 0 turns by ``base^0 = 1`` per position at every width, so
  for ``d = 2`` the adapter rotates ``(x_0, x_1, 0, 0)`` at width 4 and keeps the pair.

Nothing is downloaded.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from types import ModuleType
from typing import Any

import torch

from specformer.adapters.hf_common import as_one_head, check_inputs, fresh, import_library, same_sequence, set_linear
from specformer.protocol import Capabilities, NotApplicable
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.multihead import MultiHeadParams

NAME = "x-transformers"
#: The release the adapter is written against (the ``thirdparty`` extra pins it).
X_TRANSFORMERS_VERSION = "2.31.10"


def _library(module: str) -> ModuleType:
    """``x_transformers.<module>``; its import-time ``torch.jit.script`` deprecation warning is not ours to raise."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`torch.jit.script` is deprecated", category=DeprecationWarning)
        return import_library(f"x_transformers.{module}", "x-transformers", NAME)


@lru_cache(maxsize=1)
def _attend() -> Any:
    """One ``Attend`` for every call: it has no weights, only settings."""
    return _library("attend").Attend(heads=1, causal=False, dropout=0.0, flash=False).eval()


@lru_cache(maxsize=64)
def _attention_module(d_model: int, h: int, d_k: int, d_v: int, dtype: torch.dtype, device: torch.device) -> Any:
    """``Attention`` in ``dtype``; its weights are set per call."""
    module = _library("x_transformers").Attention(dim=d_model, heads=h, dim_head=d_k, value_dim_head=d_v, causal=False,
                               dropout=0.0, project_out=True, flash=False)
    return fresh(module, dtype, device)


class XTransformersAttention:
    """``Attend`` for single-head attention, ``Attention`` for multi-head attention."""

    name = NAME
    #: Attention projects keys and values from one context; its rotate_half pairs (2i, 2i + 1); Attend aligns its
    #: causal mask bottom-right (create_causal_mask: triu(t_k - t_q + 1) masked).
    capabilities = Capabilities(conventions={"separate_key_value": {False}, "pairing": {"interleaved"},
                                             "causal_alignment": {"bottom-right"}})

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                  *, causal: bool = False) -> AttentionOutput:
        """One head through ``Attend``; the weights are its ``post_softmax_attn`` intermediates."""
        flat, mask, lead = as_one_head(q, k, v, mask, NAME)
        t_q, t_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
        if mask is not None:
            mask = mask[:, None]  # (N, t_q, t_k) -> (N, 1, t_q, t_k): Attend reads a 3-D mask as key padding
        with torch.no_grad():
            output, intermediates = _attend()(*flat, mask=mask, causal=causal)  # (N, 1, t_q, d_v)
        weights = intermediates.post_softmax_attn  # (N, 1, t_q, t_k)
        return AttentionOutput(output.reshape(*lead, t_q, d_v), weights.reshape(*lead, t_q, t_k))

    def multihead_attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            params: MultiHeadParams, mask: torch.Tensor | None = None,
                            *, causal: bool = False) -> torch.Tensor:
        """``Attention``'s output (``to_out`` included) with the given weights."""
        d_model, h = params.d_model, params.h
        check_inputs(query, key, value, d_model)
        if not same_sequence(key, value):
            raise NotApplicable("x-transformers' Attention projects keys and values from one context; got key != value")
        module = _attention_module(d_model, h, params.d_k, params.d_v, query.dtype, query.device)
        for linear, w in ((module.to_q, params.w_q), (module.to_k, params.w_k), (module.to_v, params.w_v),
                          (module.to_out, params.w_o)):
            set_linear(linear, w)
        if mask is not None and mask.dim() == 3:
            mask = mask[:, None]  # (B, t_q|1, t_k) -> (B, 1, t_q|1, t_k): the module reads 3-D as (h, t_q, t_k)
        context = None if same_sequence(query, key) else key
        with torch.no_grad():
            return module(query, context=context, attn_mask=mask, causal=causal)  # (B, t_q, d_model)

    # -- the positions family ----------------------------------------------------------
    def alibi_bias(self, h: int, t_q: int, t_k: int, *, causal: bool = False, dtype: torch.dtype,
                   device: str) -> torch.Tensor:
        """``AlibiPositionalBias(h)(t_q, t_k)`` (bottom-right aligned); ``-inf`` where ``Attend`` masks when ``causal``."""
        for name, value in (("h", h), ("t_q", t_q), ("t_k", t_k)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{NAME}: {name} must be a positive int, got {value!r}")
        module = _library("x_transformers").AlibiPositionalBias(heads=h, total_heads=h).to(device)
        with torch.no_grad():
            bias = module(t_q, t_k).to(dtype)  # (h, t_q, t_k)
        if causal:
            masked = _library("attend").create_causal_mask(t_q, t_k, device=bias.device)  # (t_q, t_k), True = masked
            bias = bias.masked_fill(masked, float("-inf"))
        return bias

    def rotary(self, x: torch.Tensor, positions: torch.Tensor, *, pairing: str = "interleaved",
               base: float = 10000.0) -> torch.Tensor:
        """``apply_rotary_pos_emb(x, RotaryEmbedding(d, base)(positions))`` for ``x (B, t, d)``, interleaved pairs."""
        if pairing != "interleaved":
            raise NotApplicable(f"x-transformers' rotate_half rotates interleaved pairs (2i, 2i + 1); "
                                f"pairing={pairing!r} is not implemented there")
        if x.dim() != 3 or x.shape[-1] % 2 or positions.shape != (x.shape[1],):
            raise ValueError(f"{NAME}: rotary needs x (B, t, d) with d even and positions (t,); got x "
                             f"{tuple(x.shape)}, positions {tuple(positions.shape)}")
        if x.shape[-1] == 2:  # the constructor computes base_rescale_factor ** (dim / (dim - 2)): ZeroDivisionError
            # pair 0 turns by base^0 = 1 per position at every width: rotate (x, 0, 0) at width 4, keep the pair
            padded = torch.cat([x, torch.zeros_like(x)], dim=-1)  # (B, t, 2) -> (B, t, 4)
            return self.rotary(padded, positions, pairing=pairing, base=base)[..., :2]  # (B, t, 4) -> (B, t, 2)
        library = _library("x_transformers")
        module = library.RotaryEmbedding(x.shape[-1], base=base).to(x.device)
        if x.dtype == torch.float64:
            module = module.double()  # what model.double() does; the frequencies keep their float32 rounding
        with torch.no_grad():
            freqs, scale = module(positions)  # (1, t, d) angles, interleaved: (θ_0, θ_0, θ_1, θ_1, ...)
            return library.apply_rotary_pos_emb(x, freqs, scale)  # (B, t, d), in x's dtype


implementation = XTransformersAttention()
