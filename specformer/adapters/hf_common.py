"""What the Hugging Face ``transformers`` adapters share: imports, masks, weights, head axes.

The adapters (:mod:`.hf_bert`, :mod:`.hf_gpt2`, :mod:`.hf_llama`) call the models' own
*eager* attention code. This module holds the conversions they have in common:

* masks: the protocol's boolean mask (True = may attend) becomes the additive float
  mask the eager functions add to the scores, built by the library itself
  (``transformers.masking_utils.eager_mask``: 0 where allowed, ``finfo(dtype).min``
  where not) from a mask function that reads the protocol's mask; ``causal=True`` adds
  the library's ``causal_mask_function`` (key ``j <= i``), as the models'
  ``create_causal_mask`` does. A fully masked row is left as the library computes it;
* head axes: ``attention`` inputs ``(..., t, d)`` become one head ``(N, 1, t, d)``;
* weights: ``nn.Linear`` stores ``W^T`` (``(out, in)``), so a protocol matrix ``W``
  (``(in, out)``, multiplied on the right) is copied transposed; biases are zeroed.

``transformers`` is imported on first use only (it takes seconds), so the adapter
modules import without it; a missing package raises an ``ImportError`` that says how to
install it. This module does not build models, load weights or download anything.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Callable

import torch
from torch import nn

from specformer.protocol import NotApplicable
from specformer.reference.attention.attention import AttentionOutput

#: The release the adapters are written against (the ``thirdparty`` extra pins it).
TRANSFORMERS_VERSION = "5.23.0"


def import_library(module: str, package: str, adapter: str) -> ModuleType:
    """Import ``module`` or raise an ``ImportError`` naming the adapter and the install command."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"the {adapter} adapter needs the {package!r} package, which is not importable here ({exc}); "
            "install the extra with: pip install 'specformer[thirdparty]'"
        ) from exc


def transformers_module(module: str, adapter: str) -> ModuleType:
    """``transformers.<module>``, imported lazily with a clear error when missing."""
    return import_library(f"transformers.{module}", "transformers", adapter)


def eager_config(config_class: type, **fields: Any) -> Any:
    """A config with eager attention (``fields`` set sizes and dropouts); NotApplicable if the library refuses it.

    The configs validate their sizes when built (``huggingface_hub`` strict dataclasses):
    a size the model cannot take is outside the adapter's domain, with the library's reason.
    """
    try:
        config = config_class(attn_implementation="eager", **fields)
    except Exception as exc:  # huggingface_hub's StrictDataclassClassValidationError is a bare Exception
        if not isinstance(exc, ValueError) and type(exc).__name__ != "StrictDataclassClassValidationError":
            raise
        raise NotApplicable(f"{config_class.__name__} refuses {fields}: {exc.__cause__ or exc}") from exc
    if config._attn_implementation != "eager":  # noqa: SLF001 - the one place the library records it
        raise RuntimeError(f"{config_class.__name__} did not keep attn_implementation='eager'")
    return config


def additive_mask(mask: torch.Tensor | None, causal: bool, n: int, t_q: int, t_k: int,
                  dtype: torch.dtype, device: torch.device, adapter: str) -> torch.Tensor | None:
    """The protocol's mask as the models' eager mask ``(n, 1, t_q, t_k)``, or None when nothing is masked.

    ``mask`` must broadcast to ``(n, t_q, t_k)``. The conversion is the library's own
    (``eager_mask``), fed with a mask function that reads the boolean mask.
    """
    if mask is None and not causal:
        return None  # what the models pass for full attention without padding
    masking = transformers_module("masking_utils", adapter)
    functions: list[Callable[..., torch.Tensor]] = []
    if mask is not None:
        try:
            allowed = mask.to(device).expand(n, t_q, t_k)  # (n|1, t_q|1, t_k) -> (n, t_q, t_k)
        except RuntimeError:
            raise ValueError(f"{adapter}: mask of shape {tuple(mask.shape)} does not broadcast to "
                             f"{(n, t_q, t_k)}") from None
        functions.append(lambda b, h, i, j: allowed[b, i, j])  # index tensors broadcast to (n, 1, t_q, t_k)
    if causal:
        functions.append(masking.causal_mask_function)
    function = functions[0] if len(functions) == 1 else masking.and_masks(*functions)
    return masking.eager_mask(batch_size=n, q_length=t_q, kv_length=t_k, mask_function=function,
                              dtype=dtype, device=device)


def as_one_head(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                adapter: str) -> tuple[list[torch.Tensor], torch.Tensor | None, tuple[int, ...]]:
    """``q, k, v (..., t, d)`` as one head ``(N, 1, t, d)``, the mask as ``(N, t_q, t_k)``, and the leading axes."""
    if q.dim() < 2 or not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise ValueError(f"{adapter}: q, k, v must be (..., t, d) with one set of leading axes, got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    lead, t_q, t_k = tuple(q.shape[:-2]), q.shape[-2], k.shape[-2]
    n = 1
    for size in lead:
        n *= size
    flat = [x.reshape(n, 1, x.shape[-2], x.shape[-1]) for x in (q, k, v)]  # (..., t, d) -> (N, 1, t, d)
    if mask is not None:
        try:
            mask = mask.expand(*lead, t_q, t_k).reshape(n, t_q, t_k)  # (..., t_q, t_k) -> (N, t_q, t_k)
        except RuntimeError:
            raise ValueError(f"{adapter}: mask of shape {tuple(mask.shape)} does not broadcast to "
                             f"{(*lead, t_q, t_k)}") from None
    return flat, mask, lead


def one_head_attention(eager: Callable[..., tuple[torch.Tensor, torch.Tensor]], module: nn.Module,
                       q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                       causal: bool, scaling: float, adapter: str) -> AttentionOutput:
    """Run a model's ``eager_attention_forward`` on ``(..., t, d)`` inputs as one head.

    Leading axes are flattened into the batch: ``(..., t, d) -> (N, 1, t, d)``. The eager
    functions return the output as ``(N, t_q, 1, d_v)`` and the weights as ``(N, 1, t_q, t_k)``.
    """
    flat, mask, lead = as_one_head(q, k, v, mask, adapter)
    n, t_q, t_k, d_v = flat[0].shape[0], q.shape[-2], k.shape[-2], v.shape[-1]
    bias = additive_mask(mask, causal, n, t_q, t_k, q.dtype, q.device, adapter)  # (N, 1, t_q, t_k) or None
    with torch.no_grad():
        output, weights = eager(module, *flat, bias, scaling=scaling, dropout=0.0)
    output = output.reshape(*lead, t_q, d_v)  # (N, t_q, 1, d_v) -> (..., t_q, d_v)
    return AttentionOutput(output, weights.reshape(*lead, t_q, t_k))  # (N, 1, t_q, t_k) -> (..., t_q, t_k)


def square_heads(params: Any, library: str) -> tuple[int, int, int]:
    """``(d_model, h, d_k)`` when ``d_k = d_v = d_model / h``; NotApplicable otherwise."""
    d_model, h = params.d_model, params.h
    if params.d_k * h != d_model or params.d_v != params.d_k:
        raise NotApplicable(f"{library} sizes every head d_model / h for queries, keys and values; got "
                            f"d_model={d_model}, h={h}, d_k={params.d_k}, d_v={params.d_v}")
    return d_model, h, params.d_k


def check_inputs(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, d_model: int) -> None:
    """Raise a clear ``ValueError`` unless the inputs are ``(B, t, d_model)`` with one ``B``."""
    for name, x in (("query", query), ("key", key), ("value", value)):
        if x.dim() != 3 or x.shape[-1] != d_model:
            raise ValueError(f"{name} must be (B, t, d_model={d_model}), got {tuple(x.shape)}")
    if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
        raise ValueError(f"key and value must be (B, t_k, d_model) with the query's B; got query "
                         f"{tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}")


def same_sequence(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two inputs are one sequence (the same object, or equal shapes and values)."""
    return a is b or (a.shape == b.shape and torch.equal(a, b))


def set_linear(linear: nn.Linear, w: torch.Tensor) -> None:
    """Make ``linear(x) == x @ w`` (``w`` is ``(in, out)``): weight ``w^T``, bias zero."""
    with torch.no_grad():
        linear.weight.copy_(w.T)  # (in, out) -> (out, in)
        if linear.bias is not None:
            linear.bias.zero_()


def fresh(module: nn.Module, dtype: torch.dtype, device: torch.device) -> nn.Module:
    """``module`` in ``dtype`` on ``device``, in eval mode (no dropout), without gradients."""
    module = module.to(device=device, dtype=dtype).eval()
    module.requires_grad_(False)
    return module
