"""The context a property runs in: one implementation, one device, one dtype.

Properties draw float64 inputs on the CPU and call the implementation through the
context, which moves inputs to the device and dtype under test, checks what comes back
(type, shape, dtype, device) and returns it as float64 on the CPU for comparison with
the mathematics. A misbehaving implementation raises :class:`ImplementationError` with
a message naming the operation and the problem; an adapter's
:class:`~specformer.protocol.NotApplicable` marks the example as outside its domain.

This module does not decide outcomes; :mod:`specformer.runner` does.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import torch
from hypothesis import reject

from specformer.properties.tolerances import DTYPES, Tolerance, tolerance
from specformer.protocol import AttentionOutput, MultiHeadParams, NotApplicable


class ImplementationError(Exception):
    """The implementation under test raised, or returned something malformed."""


class Context:
    """What a property needs to know: the implementation, device, dtype and tolerance."""

    def __init__(self, impl: Any, impl_name: str, device: str, dtype: str) -> None:
        self.impl = impl
        self.impl_name = impl_name
        self.device = torch.device(device)
        self.dtype_name = dtype
        self.dtype: torch.dtype = DTYPES[dtype]
        self.tol: Tolerance = tolerance(dtype)
        self.examples = 0
        self.not_applicable: list[str] = []

    def __repr__(self) -> str:
        return f"Context({self.impl_name}, {self.device.type}, {self.dtype_name})"

    # -- moving data -------------------------------------------------------------------
    def cast(self, x: torch.Tensor | None) -> torch.Tensor | None:
        """A float64 CPU tensor moved to the device and dtype under test (bool stays bool)."""
        if x is None:
            return None
        if x.dtype == torch.bool:
            return x.to(self.device)
        return x.to(device=self.device, dtype=self.dtype)

    def _returned(self, op: str, value: Any, shape: tuple[int, ...], what: str) -> torch.Tensor:
        """Check a returned tensor and bring it back as float64 on the CPU."""
        if not isinstance(value, torch.Tensor):
            raise ImplementationError(f"{op} returned {type(value).__name__} for {what}, expected a torch.Tensor")
        if tuple(value.shape) != shape:
            raise ImplementationError(f"{op} returned {what} of shape {tuple(value.shape)}, expected {shape}")
        if value.dtype != self.dtype:
            raise ImplementationError(f"{op} returned {what} of dtype {value.dtype}, expected {self.dtype}")
        if value.device.type != self.device.type:
            raise ImplementationError(f"{op} returned {what} on {value.device}, expected {self.device.type}")
        return value.detach().to(device="cpu", dtype=torch.float64)

    def call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """Call operation ``op`` of the implementation; wrap its failures."""
        method: Callable[..., Any] | None = getattr(self.impl, op, None)
        if method is None:
            raise NotApplicable(f"{self.impl_name} does not provide {op}")
        try:
            return method(*args, **kwargs)
        except NotApplicable as exc:
            self.not_applicable.append(str(exc))
            reject()
        except ImplementationError:
            raise
        except (Exception, SystemExit) as exc:  # the implementation's own failure (its asserts too)
            raise ImplementationError(f"{self.impl_name}.{op} raised {type(exc).__name__}: {exc}") from exc

    # -- the protocol's operations -----------------------------------------------------
    def attention(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        causal: bool = False,
        need_weights: bool = True,
    ) -> AttentionOutput:
        """The implementation's attention, as float64 CPU tensors (weights may be None).

        ``need_weights=False`` is passed on only to implementations that accept it.
        """
        options: dict[str, Any] = {"causal": causal}
        if not need_weights and accepts(getattr(self.impl, "attention", None), "need_weights"):
            options["need_weights"] = False
        result = self.call("attention", self.cast(q), self.cast(k), self.cast(v), self.cast(mask), **options)
        if not isinstance(result, tuple) or len(result) != 2:
            raise ImplementationError(
                f"attention returned {type(result).__name__}, expected (output, weights) or AttentionOutput"
            )
        lead, t_q, t_k, d_v = tuple(q.shape[:-2]), q.shape[-2], k.shape[-2], v.shape[-1]
        output = self._returned("attention", result[0], (*lead, t_q, d_v), "output")
        weights = None if result[1] is None else self._returned("attention", result[1], (*lead, t_q, t_k), "weights")
        return AttentionOutput(output, weights)

    def weights(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                *, causal: bool = False) -> torch.Tensor:
        """The attention weights; not applicable when the implementation hides them."""
        weights = self.attention(q, k, v, mask, causal=causal).weights
        if weights is None:
            self.not_applicable.append(f"{self.impl_name} does not expose attention weights")
            reject()
        return weights

    def multihead_attention(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            params: MultiHeadParams, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The implementation's multi-head attention, as a float64 CPU tensor."""
        moved: dict[int, torch.Tensor | None] = {}  # cast each object once: self-attention keeps key is query
        for x in (query, key, value):
            moved.setdefault(id(x), self.cast(x))
        result = self.call(
            "multihead_attention", moved[id(query)], moved[id(key)], moved[id(value)],
            params.to(self.device, self.dtype), self.cast(mask),
        )
        shape = (query.shape[0], query.shape[1], params.d_model)
        return self._returned("multihead_attention", result, shape, "output")

    def score(self, kind: str, q: torch.Tensor, k: torch.Tensor, **params: Any) -> torch.Tensor:
        """The implementation's score function ``kind``, as a float64 CPU tensor."""
        moved = {n: self.cast(p) if isinstance(p, torch.Tensor) else p for n, p in params.items()}
        result = self.call("score", kind, self.cast(q), self.cast(k), **moved)
        return self._returned("score", result, (*q.shape[:-2], q.shape[-2], k.shape[-2]), f"{kind} scores")

    # -- comparing ---------------------------------------------------------------------
    def assert_close(self, actual: torch.Tensor, expected: torch.Tensor, what: str,
                     scale: float = 1.0) -> None:
        """Assert ``actual`` matches the float64 ``expected`` within the dtype's tolerance.

        ``scale`` widens the tolerance for quantities that accumulate more rounding.
        The message names the largest error, where it is, and any NaN.
        """
        assert_close(actual, expected, what, Tolerance(self.tol.rtol * scale, self.tol.atol * scale))


def accepts(fn: Callable[..., Any] | None, parameter: str) -> bool:
    """Whether ``fn`` takes a keyword argument ``parameter`` (by name or through ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return any(p.name == parameter or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def assert_close(actual: torch.Tensor, expected: torch.Tensor, what: str, tol: Tolerance) -> None:
    """Elementwise ``|a - e| <= atol + rtol |e|`` with a readable failure message."""
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    nan = torch.isnan(actual) & ~torch.isnan(expected)
    if nan.any():
        idx = tuple(int(i) for i in nan.nonzero()[0])
        raise AssertionError(f"{what}: NaN at index {idx} where {float(expected[idx]):.6g} was expected")
    both_nan = torch.isnan(actual) & torch.isnan(expected)
    err = (actual - expected).abs().masked_fill(both_nan, 0.0)
    bound = tol.atol + tol.rtol * expected.abs().masked_fill(both_nan, 0.0)
    bad = err > bound
    if bad.any():
        excess = (err - bound).masked_fill(~bad, float("-inf"))
        idx = tuple(int(i) for i in torch.unravel_index(excess.argmax(), excess.shape))
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.numel()} entries out of tolerance "
            f"(rtol={tol.rtol:g}, atol={tol.atol:g}); worst at {idx}: got {float(actual[idx]):.9g}, "
            f"expected {float(expected[idx]):.9g}"
        )
