"""The slides' multi-head attention code, run as written (``spec/attention/multihead.md``,
claim ``multihead.slide-code``).

004 ("slide: Multi-head Attention") shows this module body::

    self.attention_heads = [AttentionHead(d=self.d // self.h) for i in range(self.h)]
    self.mha_proj = nn.Linear(self.d, self.d)
    mha = torch.concat([attention_heads[i](x) for i in range(self.h)])
    out = self.mha_proj(mha)

The slide does not define ``AttentionHead``; :class:`AttentionHead` here is the plainest
reading (its own ``d_model -> d_head`` projections, scaled dot-product attention). The
properties run the code as written and as corrected (``torch.concat(..., dim=-1)`` and
``nn.ModuleList``) and compare with ``Concat(head_1..head_h) W^O`` computed in float64.
Nothing here calls an implementation under test: the code is the documents'.
"""

from __future__ import annotations

import math

import torch
from hypothesis import example, given
from hypothesis import strategies as st
from torch import nn

from specformer.context import Context
from specformer.property import claim_property

from . import strategies as sf
from .expected import attention_formula


class AttentionHead(nn.Module):
    """One head: ``softmax(x W_Q (x W_K)^T / sqrt(d_head)) x W_V``, projections without bias."""

    def __init__(self, d_model: int, d: int) -> None:
        super().__init__()
        self.w_q, self.w_k, self.w_v = (nn.Linear(d_model, d, bias=False, dtype=torch.float64) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v


class SlideMultiHead(nn.Module):
    """The slide's code; ``corrected=True`` concatenates along features and registers the heads."""

    def __init__(self, d: int, h: int, corrected: bool = False) -> None:
        super().__init__()
        self.d, self.h, self.corrected = d, h, corrected
        heads = [AttentionHead(self.d, d=self.d // self.h) for i in range(self.h)]
        self.attention_heads = nn.ModuleList(heads) if corrected else heads  # as written: a plain list
        self.mha_proj = nn.Linear(self.d, self.d, dtype=torch.float64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs = [self.attention_heads[i](x) for i in range(self.h)]
        mha = torch.concat(outputs, dim=-1) if self.corrected else torch.concat(outputs)  # as written: no dim
        return self.mha_proj(mha)


def concat_formula(module: SlideMultiHead, x: torch.Tensor) -> torch.Tensor:
    """``Concat(head_1..head_h) W^O + b`` from the module's weights (``nn.Linear`` stores ``W^T``)."""
    heads = [attention_formula(x @ head.w_q.weight.T, x @ head.w_k.weight.T, x @ head.w_v.weight.T)[0]
             for head in module.attention_heads]
    return torch.cat(heads, dim=-1) @ module.mha_proj.weight.T + module.mha_proj.bias  # (B, t, d)


def run_and_check(ctx: Context, module: SlideMultiHead, x: torch.Tensor) -> None:
    """The module's output equals the formula and every weight is one of its parameters."""
    held = {id(p) for p in module.parameters()}
    heads = [p for head in module.attention_heads for p in head.parameters()]
    missing = sum(p.numel() for p in heads if id(p) not in held)
    assert not missing, (
        f"{missing} weights of the {module.h} heads are not parameters of the module (a plain list does not "
        f"register them: optimizers, .to(device) and state_dict() never see them)"
    )
    try:
        out = module(x)
    except RuntimeError as exc:
        raise AssertionError(f"the code raises RuntimeError: {str(exc).splitlines()[0]}") from None
    ctx.assert_close(out, concat_formula(module, x), f"the code's output vs Concat(heads) W^O (h={module.h})")


@st.composite
def slide_cases(draw: st.DrawFn) -> tuple[int, int, torch.Tensor, int]:
    """``h``, ``d = h * width``, an input ``(B, t, d)`` and a seed for the module's weights."""
    h, width = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    b, t = draw(st.integers(1, 2)), draw(st.integers(1, 5))
    return h, h * width, draw(sf.tensors((b, t, h * width))), draw(sf.seeds())


@claim_property("multihead.slide-code", needs=(), about="documents-code", dtypes=("float64",))
@given(case=slide_cases())
def the_slides_code_with_dim_minus_one_and_a_module_list_is_multihead_attention(ctx: Context, case) -> None:
    """Corrected: ``torch.concat(..., dim=-1)`` and ``nn.ModuleList`` give ``Concat(heads) W^O`` and register every weight."""
    h, d, x, seed = case
    torch.manual_seed(seed)
    run_and_check(ctx, SlideMultiHead(d, h, corrected=True), x)


@claim_property("multihead.slide-code", needs=(), about="documents-code", expect="counterexample", dtypes=("float64",))
@given(case=slide_cases())
@example(case=(2, 4, torch.ones(1, 3, 4, dtype=torch.float64), 0))
def the_slides_code_computes_multihead_attention_as_written(ctx: Context, case) -> None:
    """As written: the slide's code computes ``Concat(heads) W^O`` and its heads' weights are the module's."""
    h, d, x, seed = case
    torch.manual_seed(seed)
    run_and_check(ctx, SlideMultiHead(d, h), x)
