"""Deliberately wrong implementations: each property must catch at least one.

A mutant wraps the reference and breaks one thing, the way real implementations go
wrong. Mutants are plain classes with the protocol's methods; tests import them.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from specformer.adapters.reference import ReferenceImplementation
from specformer.reference.attention.attention import AttentionOutput
from specformer.reference.attention.masks import apply_mask, causal_mask
from specformer.reference.attention.scores import scaled_dot_product_scores


def attention_with(scores_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
                   softmax_dim: int = -1, fill: float = float("-inf"), causal_offset: int = 0) -> Callable[..., AttentionOutput]:
    """An attention function built from swappable (possibly wrong) parts."""

    def attention(q, k, v, mask=None, *, causal=False):
        scores = (scores_fn or scaled_dot_product_scores)(q, k)
        if causal:
            tri = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril(causal_offset)
            mask = tri if mask is None else mask & tri
        weights = torch.softmax(apply_mask(scores, mask, fill), dim=softmax_dim)
        return AttentionOutput(weights @ v, weights)

    return attention


class Mutant(ReferenceImplementation):
    """The reference with its ``attention`` replaced."""

    def __init__(self, name: str, attention: Callable[..., AttentionOutput] | None = None, **methods: Any) -> None:
        self.name = name
        if attention is not None:
            self.attention = attention  # type: ignore[method-assign]
        for method, fn in methods.items():
            setattr(self, method, fn)


def declaring(implementation: Any, **conventions: Any) -> Any:
    """``implementation``, declaring one value of each of ``conventions`` (``cosine_norm_clamp=1e-8``)."""
    from specformer.protocol import Capabilities

    implementation.capabilities = Capabilities(conventions={k: frozenset({v}) for k, v in conventions.items()})
    return implementation


class OneOperation:
    """An implementation that provides the given operations and nothing else (no reference behind it), so
    that every property that needs another operation is not applicable to it."""

    def __init__(self, name: str, capabilities: Any = None, **methods: Any) -> None:
        self.name = name
        if capabilities is not None:
            self.capabilities = capabilities
        for method, fn in methods.items():
            setattr(self, method, fn)


SOFTMAX_WRONG_AXIS = Mutant("softmax-over-queries", attention_with(softmax_dim=-2))
NO_SCALE = Mutant("no-scale", attention_with(lambda q, k: q @ k.transpose(-2, -1)))
SCALE_BY_D = Mutant("scale-by-d_k", attention_with(lambda q, k: q @ k.transpose(-2, -1) / q.shape[-1]))
CAUSAL_OFF_BY_ONE = Mutant("causal-includes-next", attention_with(causal_offset=1))
CAUSAL_EXCLUDES_SELF = Mutant("causal-excludes-self", attention_with(causal_offset=-1))
LARGE_NEGATIVE_FILL = Mutant("fill-minus-1e9", attention_with(fill=-1e9))
IGNORES_MASK = Mutant("ignores-mask", lambda q, k, v, mask=None, *, causal=False:
                      attention_with()(q, k, v, None, causal=causal))


# -- multi-head attention (properties/attention/multihead.py) -----------------------------------
# Each multi-head mutant is the reference's multi-head attention with one part swapped;
# the default parts below are the correct ones.

from specformer.reference.attention.multihead import MultiHeadParams, merge_heads, split_heads  # noqa: E402


def _split_strided(x: torch.Tensor, h: int) -> torch.Tensor:
    """Wrong: ``(B, t, h*d) -> (B, h, t, d)`` with head ``i`` taking features ``i, i+h, i+2h, ...``."""
    b, t, hd = x.shape
    return x.view(b, t, hd // h, h).permute(0, 3, 1, 2)  # (B, t, d, h) -> (B, h, t, d)


def _merge_strided(x: torch.Tensor) -> torch.Tensor:
    """The inverse of :func:`_split_strided`: feature ``j*h + i`` comes from head ``i``."""
    b, h, t, d = x.shape
    return x.permute(0, 2, 3, 1).reshape(b, t, d * h)  # (B, h, t, d) -> (B, t, d, h) -> (B, t, d*h)


def _merge_without_transpose(x: torch.Tensor) -> torch.Tensor:
    """Wrong: ``(B, h, t, d) -> (B, t, h*d)`` by a bare reshape, mixing positions and heads."""
    b, h, t, d = x.shape
    return x.reshape(b, t, h * d)


def _head_masks(mask: torch.Tensor | None, b: int, h: int) -> torch.Tensor | None:
    """Correct: one ``(B, t_q|1, t_k)`` mask shared by all heads, ``(B, 1, t_q|1, t_k)``."""
    if mask is None or mask.dim() == 2:
        return mask
    return mask[:, None]


def _head_masks_tiled(mask: torch.Tensor | None, b: int, h: int) -> torch.Tensor | None:
    """Wrong: the ``(B h)`` layout filled with ``mask.repeat(h, 1, 1)``, so head rows get other batches' masks."""
    if mask is None or mask.dim() == 2:
        return mask
    mask = mask.expand(b, -1, -1)
    return mask.repeat(h, 1, 1).view(b, h, mask.shape[1], mask.shape[2])


def _head_masks_first_head_only(mask: torch.Tensor | None, b: int, h: int) -> torch.Tensor | None:
    """Wrong: only head 1 is masked; the other heads attend everywhere."""
    if mask is None:
        return None
    mask = mask.expand(b, *mask.shape[-2:]) if mask.dim() == 3 else mask.expand(b, *mask.shape)
    heads = torch.ones(b, h, *mask.shape[1:], dtype=torch.bool, device=mask.device)
    heads[:, 0] = mask
    return heads


def multihead_with(
    *,
    split: Callable[[torch.Tensor, int], torch.Tensor] = split_heads,
    merge: Callable[[torch.Tensor], torch.Tensor] = merge_heads,
    scale: Callable[[MultiHeadParams], float] = lambda p: math.sqrt(p.d_k),
    head_masks: Callable[..., torch.Tensor | None] = _head_masks,
    softmax_dim: int = -1,
    output: Callable[[torch.Tensor, MultiHeadParams], torch.Tensor] = lambda concat, p: concat @ p.w_o,
    self_only: bool = False,
) -> Callable[..., torch.Tensor]:
    """A multi-head attention built from swappable (possibly wrong) parts."""

    def multihead_attention(query, key, value, params, mask=None):
        if self_only:  # wrong: self-attention only, the source is ignored
            key = value = query
        b, h = query.shape[0], params.h
        q = split(query @ params.w_q, h)  # (B, h, t_q, d_k)
        k = split(key @ params.w_k, h)  # (B, h, t_k, d_k)
        v = split(value @ params.w_v, h)  # (B, h, t_k, d_v)
        scores = q @ k.transpose(-2, -1) / scale(params)  # (B, h, t_q, t_k)
        weights = torch.softmax(apply_mask(scores, head_masks(mask, b, h)), dim=softmax_dim)
        return output(merge(weights @ v), params)  # (B, t_q, h*d_v) -> (B, t_q, d_model)

    return multihead_attention


def _full_width_heads(query, key, value, params, mask=None):
    """Right output, wrong cost: every head projects to the full width and keeps its slice."""
    heads = []
    for i in range(params.h):
        cols_k, cols_v = slice(i * params.d_k, (i + 1) * params.d_k), slice(i * params.d_v, (i + 1) * params.d_v)
        q = (query @ params.w_q)[..., cols_k]  # (B, t_q, h*d_k) computed h times
        k = (key @ params.w_k)[..., cols_k]
        v = (value @ params.w_v)[..., cols_v]
        heads.append(attention_with()(q, k, v, mask).output)  # (B, t_q, d_v)
    return torch.cat(heads, dim=-1) @ params.w_o


def _values_split_at_d_model_over_h(query, key, value, params, mask=None):
    """Wrong: assumes ``d_v = d_model / h`` when splitting the values into heads."""
    b, t_k, h = key.shape[0], key.shape[1], params.h
    v = (value @ params.w_v).view(b, t_k, h, params.d_model // h).transpose(1, 2)
    q, k = split_heads(query @ params.w_q, h), split_heads(key @ params.w_k, h)
    heads = attention_with()(q, k, v, _head_masks(mask, b, h)).output
    return merge_heads(heads) @ params.w_o


MHA_STRIDED_HEADS = Mutant("mha-strided-heads", multihead_attention=multihead_with(split=_split_strided,
                                                                                   merge=_merge_strided))
MHA_STRIDED_SPLIT = Mutant("mha-strided-split", multihead_attention=multihead_with(split=_split_strided))
MHA_MERGE_WITHOUT_TRANSPOSE = Mutant("mha-merge-without-transpose",
                                     multihead_attention=multihead_with(merge=_merge_without_transpose))
MHA_NO_W_O = Mutant("mha-no-w_o", multihead_attention=multihead_with(output=lambda concat, p: concat))
MHA_W_O_TRANSPOSED = Mutant("mha-w_o-transposed", multihead_attention=multihead_with(
    output=lambda concat, p: concat @ p.w_o.T if p.w_o.shape[0] == p.w_o.shape[1] else concat @ p.w_o))
MHA_W_O_PER_HEAD = Mutant("mha-w_o-per-head-diagonal", multihead_attention=multihead_with(
    output=lambda concat, p: torch.cat([concat[..., i * p.d_v:(i + 1) * p.d_v]
                                        @ p.w_o[i * p.d_v:(i + 1) * p.d_v, i * p.d_v:(i + 1) * p.d_v]
                                        for i in range(p.h)], dim=-1)
    if p.h * p.d_v == p.d_model else concat @ p.w_o))
MHA_SCALE_BY_D_MODEL = Mutant("mha-scale-by-sqrt-d_model",
                              multihead_attention=multihead_with(scale=lambda p: math.sqrt(p.d_model)))
MHA_SCALE_BY_D_V = Mutant("mha-scale-by-sqrt-d_v", multihead_attention=multihead_with(scale=lambda p: math.sqrt(p.d_v)))
MHA_MASK_TILED = Mutant("mha-mask-tiled-across-batch", multihead_attention=multihead_with(head_masks=_head_masks_tiled))
MHA_MASK_FIRST_HEAD = Mutant("mha-mask-first-head-only",
                             multihead_attention=multihead_with(head_masks=_head_masks_first_head_only))
MHA_SOFTMAX_OVER_QUERIES = Mutant("mha-softmax-over-queries", multihead_attention=multihead_with(softmax_dim=-2))
MHA_SELF_ONLY = Mutant("mha-ignores-source", multihead_attention=multihead_with(self_only=True))
MHA_FULL_WIDTH_HEADS = Mutant("mha-full-width-heads", multihead_attention=_full_width_heads)
#: Wrong: the values are projected from the key sequence (as a module that takes one source would).
MHA_VALUES_FROM_KEYS = Mutant("mha-values-from-keys",
                              multihead_attention=lambda query, key, value, params, mask=None:
                              multihead_with()(query, key, key, params, mask))
MHA_VALUES_AT_D_MODEL_OVER_H = Mutant("mha-values-split-at-d_model-over-h",
                                      multihead_attention=_values_split_at_d_model_over_h)


def _causal_when_self(query, key, value, params, mask=None):
    """Wrong: a call with ``key is query`` is taken for decoder self-attention and the future is masked."""
    if key is query:  # PyTorch's module also branches on ``query is key`` (its packed in-projection)
        causal = causal_mask(query.shape[1], device=query.device)
        mask = causal if mask is None else mask & causal
    return multihead_with()(query, key, value, params, mask)


MHA_CAUSAL_WHEN_SELF = Mutant("mha-causal-when-key-is-query", multihead_attention=_causal_when_self)


def _padding_masks_queries(q, k, v, mask=None, *, causal=False):
    """A ``(B, 1, t_k)`` key-padding mask read as a query mask: query ``i`` is dropped iff ``i >= length``."""
    if mask is not None and mask.dim() == 3 and mask.shape[-2] == 1:
        lengths = mask.sum(-1)  # (B, 1): the number of real keys
        queries = torch.arange(q.shape[-2], device=q.device)[None, :] < lengths  # (B, t_q)
        mask = queries[..., None].expand(*queries.shape, k.shape[-2])  # (B, t_q, t_k), all keys allowed
    return ReferenceImplementation().attention(q, k, v, mask, causal=causal)


PADDING_MASKS_QUERIES = Mutant("padding-masks-queries", _padding_masks_queries)


# -- score functions and cost (properties/attention/attention_scores.py) ------------------------
# Score mutants are the reference's score functions with one kind swapped; attention
# mutants give the right output at the wrong cost.

from specformer.reference.attention.scores import SCORE_FUNCTIONS, additive_scores  # noqa: E402


def score_with(**kinds: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """The reference's ``score(kind, q, k, **params)`` with the named kinds replaced."""

    def score(kind, q, k, **params):
        return (kinds.get(kind) or SCORE_FUNCTIONS[kind])(q, k, **params)

    return score


def _frobenius_cosine(q, k):
    """The slides' cosine as written: ``Q K^T / (||Q||_F ||K||_F)``, one norm per matrix."""
    return q @ k.transpose(-2, -1) / (q.norm(dim=(-2, -1), keepdim=True) * k.norm(dim=(-2, -1), keepdim=True))


def _attention_through_identity(q, k, v, mask=None, *, causal=False):
    """Right output, cubic cost: the weights go through an extra ``(t_k x t_k)`` identity product."""
    weights = attention_with()(q, k, v, mask, causal=causal).weights
    weights = weights @ torch.eye(k.shape[-2], dtype=weights.dtype, device=weights.device)  # 2 B t_q t_k^2 FLOPs
    return AttentionOutput(weights @ v, weights)


SCORE_GENERAL_W_TRANSPOSED = Mutant("score-general-w-transposed", score=score_with(
    general=lambda q, k, w: q @ w.transpose(0, 1) @ k.transpose(-2, -1)))
SCORE_ADDITIVE_HALVES_SWAPPED = Mutant("score-additive-halves-swapped", score=score_with(
    additive=lambda q, k, w, v: additive_scores(k, q, w, v).transpose(-2, -1)))  # W [k_j || q_i]
SCORE_GAUSSIAN_AS_WRITTEN = Mutant("score-gaussian-plus-sign", score=score_with(
    gaussian=lambda q, k, sigma=1.0: torch.cdist(q, k).square() / sigma**2))
SCORE_COSINE_FROBENIUS = Mutant("score-cosine-frobenius-norms", score=score_with(cosine=_frobenius_cosine))
SCORE_SCALED_DOT_SIGMOID = Mutant("score-scaled-dot-squashed-into-(0,1)", score=score_with(
    scaled_dot=lambda q, k: torch.sigmoid(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))))
ATTENTION_CUBIC = Mutant("attention-weights-times-identity", _attention_through_identity)
ATTENTION_DUPLICATED_FEATURES = Mutant("attention-scores-on-duplicated-features", attention_with(
    lambda q, k: torch.cat([q, q], -1) @ torch.cat([k, k], -1).transpose(-2, -1) / (2 * math.sqrt(q.shape[-1]))))


# -- bugs beyond the small sizes (realistic sizes, properties/strategies.py) -----------------


def _drops_last_key_when_large(q, k, v, mask=None, *, causal=False):
    """Wrong only beyond the small sizes: when ``t_k`` or a width exceeds 6, the last key is never attended."""
    if max(k.shape[-2], q.shape[-1], v.shape[-1]) > 6 and k.shape[-2] > 1:
        drop = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device)
        drop[:, -1] = False  # (t_q, t_k): the last key is masked
        mask = drop if mask is None else mask & drop
        if not mask.any(-1).all():  # keep the answer defined where the last key was the only one
            mask = mask | ~mask.any(-1, keepdim=True) & ~drop
    return ReferenceImplementation().attention(q, k, v, mask, causal=causal)


DROPS_LAST_KEY_WHEN_LARGE = Mutant("drops-last-key-when-t-or-d-above-6", _drops_last_key_when_large)
#: Heads beyond the fourth are scaled by ``sqrt(d_model)`` instead of ``sqrt(d_k)``: wrong only for ``h > 4``.
MHA_WRONG_BEYOND_FOUR_HEADS = Mutant("mha-heads-above-4-scaled-by-sqrt-d_model", multihead_attention=multihead_with(
    scale=lambda p: torch.tensor([math.sqrt(p.d_k) if i < 4 else math.sqrt(p.d_model) for i in range(p.h)],
                                 dtype=p.w_q.dtype, device=p.w_q.device)[:, None, None]))
