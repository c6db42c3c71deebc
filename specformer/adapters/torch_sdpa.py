"""``torch.nn.functional.scaled_dot_product_attention`` behind the protocol.

Mask convention: PyTorch's boolean ``attn_mask`` means True = take part in attention,
the protocol's convention, so masks pass through unchanged. ``causal=True`` maps to
``is_causal`` (top-left aligned); combined with a mask, the adapter intersects the mask
with a lower-triangular one, since PyTorch refuses both at once.

The function returns no weights. The adapter recovers them from the same kernel: with
the identity as values, ``A I = A``, so a second call with ``v = I_{t_k}`` returns the
weights exactly as the kernel computes them (at a cost cubic in ``t_k``, so it is skipped
when the caller passes ``need_weights=False``). Nothing else is converted or papered over:
a fully masked row comes back as PyTorch computes it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from specformer.protocol import Capabilities
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.masks import causal_mask


class TorchSDPA:
    """Attention through PyTorch's fused scaled-dot-product kernel."""

    name = "torch-sdpa"
    #: Every attention convention, dtype and device: the kernel answers every example. The function
    #: returns no weights, but the adapter recovers them from the kernel (identity values), so it
    #: declares that it returns them: a missing weight matrix is then an error, not a skipped example.
    capabilities = Capabilities(conventions={"returns_weights": {True}})

    def _sdpa(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
              causal: bool) -> torch.Tensor:
        if causal and mask is not None:
            t_q, t_k = q.shape[-2], k.shape[-2]
            mask = mask & causal_mask(t_q, t_k, device=q.device)
            causal = False
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                  *, causal: bool = False, need_weights: bool = True) -> AttentionOutput:
        """Output from PyTorch's kernel; weights from the same kernel applied to identity values."""
        output = self._sdpa(q, k, v, mask, causal)
        if not need_weights:
            return AttentionOutput(output, None)
        t_k = k.shape[-2]
        eye = torch.eye(t_k, dtype=v.dtype, device=v.device).expand(*v.shape[:-2], t_k, t_k)  # (B, t_k, t_k)
        weights = self._sdpa(q, k, eye, mask, causal)  # (B, t_q, t_k) = A @ I
        return AttentionOutput(output, weights)


implementation = TorchSDPA()
