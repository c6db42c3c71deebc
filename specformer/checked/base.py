"""What every checked call stands on: the context's shared machinery, backends and comparison.

:class:`ContextBase` holds one row's implementation, device, dtype, tolerance and
declared capabilities, and :meth:`ContextBase.call` sends one call to the implementation's
worker and reads its answer; :class:`ImplementationError` is what a misbehaving
implementation raises here; :func:`assert_close` compares with a readable message. Each
family's checked calls (:mod:`specformer.checked.attention`, ...) build on this module and
register themselves; :mod:`specformer.context` assembles them into the ``Context`` class.
This module knows no family.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Callable, Iterator, Protocol, Sequence, TypeVar

import torch
from hypothesis import reject

from specformer.properties.tolerances import DTYPES, Tolerance, tolerance
from specformer.protocol import CONVENTIONS, Capabilities, NotApplicable
from specformer.protocol.capabilities import OutsideDeclaration, admits
from specformer.runner.budget import Limit, as_limit
from specformer.runner.supervisor import WorkerLost, WorkerPool
from specformer.runner.wire import WireTensor, describe
from specformer.runner.worker import run_locally


T = TypeVar("T")


class ImplementationError(Exception):
    """The implementation under test raised, or returned something malformed."""


class Backend(Protocol):
    """Where an implementation's calls go: a worker process, or (tests only) this process."""

    def call(self, request: dict[str, Any], what: str, deadline: Limit) -> dict[str, Any]:
        """Run one call request within the row's limit; the worker's decoded answer."""
        ...


class WorkerBackend:
    """Calls go to the pool's worker for ``spec`` (started or restarted as needed)."""

    def __init__(self, pool: WorkerPool, spec: str) -> None:
        self.pool, self.spec = pool, spec

    def call(self, request: dict[str, Any], what: str, deadline: Limit) -> dict[str, Any]:
        process, device = int(request.pop("process", 0)), str(request.get("device", "cpu"))
        worker = self.pool.worker(self.spec, deadline, process, device)
        if worker.load_answer.get("status") != "loaded":
            raise WorkerLost(f"the implementation could not be loaded: {worker.load_answer.get('message', '')}")
        return worker.request(request, what, deadline)


class LocalBackend:
    """Calls run in this process, through the same copies and codec as a worker.

    For the harness's own tests (mutants): fast, but without the worker's protection
    against crashes, hangs or patched globals. The suite never uses it.
    """

    def __init__(self, impl: Any) -> None:
        self.impl = impl

    def call(self, request: dict[str, Any], what: str, deadline: Limit) -> dict[str, Any]:
        return run_locally(self.impl, request)  # its CPU is this process's: the row's limit counts it


def _text(value: Any, limit: int = 2000) -> str:
    return (value if isinstance(value, str) else repr(value))[:limit]


class ContextBase:
    """What a property needs to know: the implementation, device, dtype and tolerance."""

    def __init__(self, backend: Backend, impl_name: str, device: str, dtype: str,
                 deadline: Limit | float | None = None, capabilities: Capabilities | None = None) -> None:
        self.backend = backend
        self.impl_name = impl_name
        self.device = torch.device(device)
        self.dtype_name = dtype
        self.dtype: torch.dtype = DTYPES[dtype]
        self.tol: Tolerance = tolerance(dtype)
        #: The row's limit (CPU seconds with a wall-clock backstop); a number is a wall-clock deadline.
        self.deadline: Limit = as_limit(deadline) if deadline is not None else Limit.until(time.monotonic() + 3600.0)
        self.out_of_domain = 0
        self.not_applicable: list[str] = []
        self._flops: list[int] | None = None
        self._created: list[int] | None = None
        #: The optional keywords (``call(optional=...)``) the last call's operation accepted.
        self.last_applied: frozenset[str] = frozenset()
        #: What the implementation declared it supports; None when it declared nothing.
        self.capabilities = capabilities
        #: Seconds each call of each operation took (the answered ones, and the one in progress
        #: when the row's time ran out), for a timeout's message (:meth:`call_times`).
        self.timings: dict[str, list[float]] = {}
        self._calling: tuple[str, float] | None = None
        self._process = 0
        self.last_call: tuple[str, tuple[Any, ...], dict[str, Any]] | None = None
        #: The distinct shapes each operation was called with in this row (:func:`shape_signature`): what a
        #: jitted or compiled implementation compiles once each.
        self.shapes: dict[str, set[str]] = {}

    @contextmanager
    def in_another_process(self) -> Iterator[None]:
        """Calls inside go to a second worker of the implementation, forked from a fork server started
        with another ``PYTHONHASHSEED``: for properties that ask whether the same input gives the same
        result, which two calls in one process cannot see (a tie broken by a set's iteration order).
        The harness's in-process backend (tests) has one process only."""
        self._process = 1
        try:
            yield
        finally:
            self._process = 0

    def call_times(self) -> str:
        """``bpe_train: 2 calls, 49.6 s each on average, the longest 50.1 s; bpe_encode: ...`` (slowest first),
        with the call that was still running when the time ran out."""
        parts = []
        for op, times in sorted(self.timings.items(), key=lambda item: -sum(item[1])):
            each = f"{sum(times) / len(times):.3g} s each on average, the longest {max(times):.3g} s" \
                if len(times) > 1 else f"{times[0]:.3g} s"
            parts.append(f"{op}: {len(times)} call{'s' if len(times) != 1 else ''}, {each}")
        if self._calling is not None:
            op, start = self._calling
            parts.append(f"{op}: a call still running after {time.monotonic() - start:.3g} s")
        return "; ".join(parts)

    # -- declared capabilities -----------------------------------------------------------
    def choices(self, convention: str, candidates: Sequence[T]) -> tuple[T, ...]:
        """The ``candidates`` of ``convention`` the implementation declares, in the given order.

        Raises :class:`OutsideDeclaration` (the row ends not applicable at once, before any call)
        when it declares none of them. A property draws its convention from the result, so
        it never asks for what the implementation said it does not do.
        """
        if convention not in CONVENTIONS:
            raise KeyError(f"no convention {convention!r} is registered; known: {sorted(CONVENTIONS)}")
        allowed = CONVENTIONS[convention].values
        unknown = [c for c in candidates if not any(c == a and type(c) is type(a) for a in allowed)]
        if unknown:
            raise ValueError(f"{unknown!r} are not values of convention {convention!r} ({allowed!r})")
        chosen = tuple(c for c in candidates if self.supports(convention, c))
        if not chosen:
            declared = sorted(self._declared(convention) or (), key=repr)
            how = "declares" if self.capabilities is not None and convention in self.capabilities.conventions else \
                "declares nothing, so it is held to the documents' value:"
            raise OutsideDeclaration(f"{self.impl_name} {how} {convention} in {{{', '.join(map(repr, declared))}}}; "
                                     f"this property needs {' or '.join(map(repr, candidates))}")
        return chosen

    def _declared(self, convention: str) -> tuple[Any, ...] | frozenset[Any] | None:
        """The values of ``convention`` the implementation is held to: its declaration, else the
        convention's default (the documents' value), else ``None`` (every value)."""
        if self.capabilities is not None and convention in self.capabilities.conventions:
            return self.capabilities.conventions[convention]
        return CONVENTIONS[convention].default

    def require(self, convention: str, value: Any) -> Any:
        """``value``, or :class:`OutsideDeclaration` at once if the implementation declares it does not follow it."""
        return self.choices(convention, (value,))[0]

    def supports(self, convention: str, value: Any) -> bool:
        """Whether the implementation follows ``value`` of ``convention``: by its declaration, or, undeclared,
        by the convention's default (every value where it has none)."""
        return admits(self._declared(convention), value)

    def __repr__(self) -> str:
        return f"Context({self.impl_name}, {self.device.type}, {self.dtype_name})"

    # -- moving data -------------------------------------------------------------------
    def cast(self, x: torch.Tensor | None) -> torch.Tensor | None:
        """A float64 CPU tensor in the dtype under test (bool stays bool); still on the CPU.

        The worker moves it to the device; what crosses is always a copy.
        """
        if x is None or x.dtype == torch.bool:
            return x
        cast = x.to(dtype=self.dtype)
        recipe = getattr(x, "_specformer_recipe", None)
        if recipe is not None and cast is not x:  # how it was drawn, for a failing call shown as Python
            cast._specformer_recipe = recipe
        return cast

    def _returned(self, op: str, value: Any, shape: tuple[int, ...], what: str,
                  dtype: torch.dtype | None = None) -> torch.Tensor:
        """Check a returned tensor (in ``dtype``, by default the row's) and bring it back as float64 on the CPU."""
        expected = self.dtype if dtype is None else dtype
        if not isinstance(value, WireTensor):
            raise ImplementationError(f"{op} returned {describe(value)} for {what}, expected a torch.Tensor")
        if tuple(value.shape) != shape:
            raise ImplementationError(f"{op} returned {what} of shape {tuple(value.shape)}, expected {shape}")
        if f"torch.{value.dtype}" != str(expected):
            raise ImplementationError(f"{op} returned {what} of dtype torch.{value.dtype}, expected {expected}")
        if value.device.split(":")[0] != self.device.type:
            raise ImplementationError(f"{op} returned {what} on {value.device}, expected {self.device.type}")
        if value.data is None:
            raise ImplementationError(f"{op} returned {what} whose values cannot be read: {value.problem}")
        return value.data.to(dtype=torch.float64)

    def answer_or_refusal(self, op: str, call: Callable[[], T]) -> T | str:
        """``call()``, a checked call of ``op``; or, where the implementation's ``op`` raised a ValueError in it
        (the refusal the protocol allows for an input outside its domain), that error's message.

        Any other exception, and any answer of the wrong type or shape, stays the
        :class:`ImplementationError` the checked call raises.
        """
        try:
            return call()
        except ImplementationError as exc:
            if f"{self.impl_name}.{op} raised ValueError" in str(exc):
                return str(exc)
            raise

    # -- calling -----------------------------------------------------------------------
    def counting_flops(self) -> AbstractContextManager[list[int]]:
        """Count, in the worker, the FLOPs ``FlopCounterMode`` sees in the calls made inside.

        Yields a one-element list holding the running total.
        """
        return self._counting("_flops")

    def counting_created(self) -> AbstractContextManager[list[int]]:
        """Count, in the worker, the elements of the tensors the calls made inside create
        (:func:`specformer.created.count_created`: views and in-place results add nothing).

        Yields a one-element list holding the running total.
        """
        return self._counting("_created")

    @contextmanager
    def _counting(self, attribute: str) -> Iterator[list[int]]:
        total = [0]
        setattr(self, attribute, total)
        try:
            yield total
        finally:
            setattr(self, attribute, None)

    def call(self, op: str, *args: Any, names: tuple[str, ...] = (), optional: dict[str, Any] | None = None,
             **kwargs: Any) -> Any:
        """Call operation ``op`` of the implementation in its worker; its decoded result.

        ``optional`` keywords are passed only if the operation accepts them.
        """
        request = {"op": "call", "method": op, "args": args, "kwargs": kwargs, "optional": optional or {},
                   "names": names, "device": str(self.device), "count_flops": self._flops is not None}
        if self._process:
            request["process"] = self._process
        if self._created is not None:
            request["count_created"] = True
        #: the last call into the implementation: what a failure's summary shows as Python
        self.last_call = (op, args, {**kwargs, **(optional or {})})
        self.shapes.setdefault(op, set()).add(shape_signature(args, kwargs))
        start = time.monotonic()
        self._calling = (op, start)
        answer = self.backend.call(request, f"calling {op}", self.deadline)
        self._calling = None
        self.timings.setdefault(op, []).append(time.monotonic() - start)
        status = answer.get("status")
        if status == "missing":
            raise NotApplicable(f"{self.impl_name} does not provide {op}")
        if status == "older-protocol":  # written before a protocol change whose part the harness cannot do
            raise NotApplicable(f"{self.impl_name}.{_text(answer.get('message', ''), 600)}")
        if status == "not-applicable":
            if self.capabilities is not None:  # inside the declared domain, an answer is owed
                raise ImplementationError(
                    f"{self.impl_name}.{op} refused an example inside its declared domain (raised NotApplicable: "
                    f"{_text(answer.get('message', ''), 500)}); declare the restriction in its capabilities instead")
            self.out_of_domain += 1
            self.not_applicable.append(_text(answer.get("message", "")))
            reject()
        if status == "raised":
            where = f" (at {_text(answer['where'], 200)})" if answer.get("where") else ""
            raise ImplementationError(f"{self.impl_name}.{op} raised {_text(answer.get('type'), 200)}: "
                                      f"{_text(answer.get('message', ''))}{where}")
        if status == "unencodable":
            raise ImplementationError(f"{self.impl_name}.{op} returned a value that cannot be read: "
                                      f"{_text(answer.get('message', ''))}")
        if status != "ok":
            raise ImplementationError(f"{self.impl_name}.{op}: unexpected answer {_text(status, 100)}")
        mutated = answer.get("mutated") or []
        if mutated:
            raise ImplementationError(f"{self.impl_name}.{op} modified its input "
                                      f"{', '.join(_text(m, 100) for m in mutated)} in place")
        if self._flops is not None:
            flops = answer.get("flops")
            if type(flops) is not int or flops < 0:
                raise ImplementationError(f"{self.impl_name}.{op}: no FLOP count came back")
            self._flops[0] += flops
        if self._created is not None:
            created = answer.get("created")
            if type(created) is not int or created < 0:
                raise ImplementationError(f"{self.impl_name}.{op}: no count of the created elements came back")
            self._created[0] += created
        applied = answer.get("applied")
        self.last_applied = frozenset(a for a in applied if isinstance(a, str)) if isinstance(applied, list) else frozenset()
        return answer.get("value")

    # -- comparing ---------------------------------------------------------------------
    def assert_close(self, actual: torch.Tensor, expected: torch.Tensor, what: str,
                     scale: float = 1.0, same_dtype: Callable[[torch.dtype], torch.Tensor] | None = None) -> None:
        """Assert ``actual`` matches the float64 ``expected`` within the dtype's tolerance.

        ``scale`` widens the tolerance for quantities that accumulate more rounding.
        ``same_dtype(dtype)`` computes the expected value from the same inputs in a given
        dtype (the reference formula in low precision): in float16 and bfloat16 an entry
        outside the tolerance still passes when it is no farther from ``expected`` than
        :data:`LOW_PRECISION_FACTOR` times the same-dtype reference is (PyTorch's op-test
        rule). It is evaluated only when the plain check fails. The message names the
        largest error, where it is, and any NaN.
        """
        tol = Tolerance(self.tol.rtol * scale, self.tol.atol * scale)
        if same_dtype is None or self.dtype not in LOW_PRECISION:
            assert_close(actual, expected, what, tol)
            return
        try:
            assert_close(actual, expected, what, tol)
        except AssertionError:
            reference = same_dtype(self.dtype).to(torch.float64)
            assert_close(actual, expected, what, tol, reference_error=(reference - expected).abs())


def shape_signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The shapes of a call's tensors in argument order, ``2x3x4, 2x5x4, 2x5x1`` (``scalar`` for a 0-d tensor,
    ``-`` for a call without tensors): two calls with one signature are one compilation of jitted code."""
    from specformer.runner.worker import tensors_in

    shapes = ["x".join(map(str, t.shape)) or "scalar" for _, t in tensors_in((args, kwargs), "")]
    return ", ".join(shapes) or "-"


#: Dtypes in which a result may also be judged against the reference computed in that dtype.
LOW_PRECISION = frozenset({torch.float16, torch.bfloat16})
#: How much farther from float64 than the same-dtype reference a low-precision entry may be:
#: the reference's own error, doubled to absorb a different order of rounding.
LOW_PRECISION_FACTOR = 2.0


def assert_close(actual: torch.Tensor, expected: torch.Tensor, what: str, tol: Tolerance,
                 reference_error: torch.Tensor | None = None) -> None:
    """Elementwise ``|a - e| <= atol + rtol |e|`` with a readable failure message.

    With ``reference_error`` (``|r - e|`` for the reference ``r`` computed in the dtype under
    test), an entry also passes when ``|a - e| <= LOW_PRECISION_FACTOR |r - e|``.
    """
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    nan = torch.isnan(actual) & ~torch.isnan(expected)
    if nan.any():
        idx = tuple(int(i) for i in nan.nonzero()[0])
        raise AssertionError(f"{what}: NaN at index {idx} where {float(expected[idx]):.6g} was expected")
    both_nan = torch.isnan(actual) & torch.isnan(expected)
    err = (actual - expected).abs().masked_fill(both_nan, 0.0)
    bound = tol.atol + tol.rtol * expected.abs().masked_fill(both_nan, 0.0)
    if reference_error is not None:  # NaN where the reference overflowed: no extra allowance there
        bound = torch.maximum(bound, (LOW_PRECISION_FACTOR * reference_error).nan_to_num(0.0, 0.0, 0.0))
    bad = err > bound
    if bad.any():
        excess = (err - bound).masked_fill(~bad, float("-inf"))
        idx = tuple(int(i) for i in torch.unravel_index(excess.argmax(), excess.shape))
        # the suite's one wording of a tolerance failure (properties that bound errors themselves use it too)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.numel()} entries out of tolerance; worst at {idx}: "
            f"got {float(actual[idx]):.9g}, expected {float(expected[idx]):.9g} "
            f"(allowed error {float(bound[idx]):.3g}: atol {tol.atol:g} + rtol {tol.rtol:g} x |expected|"
            + (f", or {LOW_PRECISION_FACTOR:g}x the same-dtype reference's error" if reference_error is not None else "")
            + ")"
        )
