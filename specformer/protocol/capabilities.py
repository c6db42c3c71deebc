"""Declared capabilities: what an implementation says it supports, before any example is drawn.

An implementation may carry a ``capabilities`` attribute, a :class:`Capabilities`:

* ``operations``: the protocol operations it provides (default: every protocol method the
  object has);
* ``dtypes`` and ``devices``: where it runs (default: every dtype of every device);
* ``arrays``: the array library its operations take and answer with (default ``"torch"``;
  ``"numpy"``, ``"jax"``, ``"cupy"``, ``"mlx"``: its worker converts every tensor argument
  and dtype to that library and every array of its answers back, :mod:`specformer.runner.arrays`);
* ``conventions``: for each named convention of a family (registered in that family's
  protocol module as a :class:`Convention`, e.g. ``pairing`` for rotary embeddings or
  ``norm_first`` for encoder layers), the values it supports (default: the convention's
  ``default``, the documents' value where the convention says what the implementation
  does; every value where it has none).

The suite uses the declaration three ways. A row whose operations, dtype or device fall
outside it is *not applicable* at once, with the reason, and draws no example. A property
that depends on a convention draws only the declared values
(:meth:`specformer.context.ContextBase.choices`); none declared makes its row not
applicable at once. And inside the declared domain an implementation must answer: raising
:class:`~specformer.protocol.base.NotApplicable` there is a failure to answer (an
``error`` row), never a free exemption.

The declaration crosses from the implementation's worker to the checker as plain data
(:meth:`Capabilities.to_plain`, :meth:`Capabilities.from_plain`), and the checker
validates it again: it is the implementation's word, and only ever narrows what is run.
This module does not run anything.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping

__all__ = ["CapabilityError", "Capabilities", "Convention", "DTYPE_NAMES", "DEVICE_NAMES", "OutsideDeclaration", "admits"]

#: The dtypes a declaration may name.
DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64")
#: The device types a declaration may name.
DEVICE_NAMES = ("cpu", "cuda")
#: The array libraries a declaration may name (``torch``: no conversion).
ARRAY_LIBRARIES = ("torch", "numpy", "jax", "cupy", "mlx")
#: The device types each array library's arrays live on, where not every one.
ARRAY_DEVICES = {"numpy": frozenset({"cpu"}), "mlx": frozenset({"cpu"}), "cupy": frozenset({"cuda"})}

#: The plain types a convention's values may have (they cross the worker's channel).
_PLAIN = (str, bool, int, float)


class CapabilityError(ValueError):
    """A malformed capability declaration (unknown name, value, or type)."""


class OutsideDeclaration(BaseException):
    """A property needs a convention the implementation declares it does not follow.

    Raised by the context before any call; the row ends *not applicable* at once. A
    BaseException, so that Hypothesis neither shrinks nor replays it as a failure.
    """


@dataclass(frozen=True)
class Convention:
    """A named convention of a family and the values an implementation may follow.

    ``values`` are every value the protocol allows (the properties draw from them);
    ``doc`` says what the convention means, for the protocol pages and error messages.
    ``default``: the values an implementation that does not declare the convention is held
    to. A convention about what the implementation *does* (which words a CBOW context
    holds, whether a skip-gram window is fixed) defaults to the documents' value: a user
    who follows another declares it, and an undeclared departure is a failure, not a pass.
    A convention about what the *caller* passes, or one the documents leave open, has no
    default (``None``): every value.
    """

    values: tuple[Any, ...]
    doc: str = ""
    default: tuple[Any, ...] | None = None


def admits(declared: Iterable[Any] | None, value: Any) -> bool:
    """Whether ``value`` is among the ``declared`` values of a convention, by value and type (``True`` is
    not ``1``); ``None`` declares every value."""
    return declared is None or any(value == d and type(value) is type(d) for d in declared)


def _frozen(values: Iterable[Any] | None, what: str) -> frozenset[Any] | None:
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise CapabilityError(f"{what} must be a set of values or None, got {type(values).__name__}")
    items = list(values)
    for item in items:
        if not isinstance(item, _PLAIN):
            raise CapabilityError(f"{what} holds {type(item).__name__} {item!r:.60}; only str, bool, int and float")
    return frozenset(items)


def _suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass(frozen=True)
class Capabilities:
    """What an implementation declares it supports; ``None`` (or an absent convention) means all."""

    operations: frozenset[str] | None = None
    dtypes: frozenset[str] | None = None
    devices: frozenset[str] | None = None
    conventions: Mapping[str, frozenset[Any]] = field(default_factory=lambda: MappingProxyType({}))
    arrays: str = "torch"

    def __post_init__(self) -> None:
        if not isinstance(self.arrays, str) or self.arrays not in ARRAY_LIBRARIES:
            raise CapabilityError(f"capabilities.arrays names {self.arrays!r:.60}"
                                  f"{_suggest(str(self.arrays), ARRAY_LIBRARIES)}; known: {', '.join(ARRAY_LIBRARIES)}")
        object.__setattr__(self, "operations", _frozen(self.operations, "capabilities.operations"))
        object.__setattr__(self, "dtypes", _frozen(self.dtypes, "capabilities.dtypes"))
        object.__setattr__(self, "devices", _frozen(self.devices, "capabilities.devices"))
        if not isinstance(self.conventions, Mapping):
            raise CapabilityError(f"capabilities.conventions must be a mapping, got {type(self.conventions).__name__}")
        conventions = {}
        for name, values in self.conventions.items():
            if not isinstance(name, str):
                raise CapabilityError(f"capabilities.conventions has a key {name!r:.60} that is not a str")
            conventions[name] = _frozen(values, f"capabilities.conventions[{name!r}]")
            if conventions[name] is None:
                del conventions[name]  # None: every value, as if absent
        object.__setattr__(self, "conventions", MappingProxyType(conventions))
        for what, given, known in (("dtypes", self.dtypes, DTYPE_NAMES), ("devices", self.devices, DEVICE_NAMES)):
            for item in sorted(map(str, given or ())):
                if item not in known:
                    raise CapabilityError(f"capabilities.{what} names {item!r}{_suggest(item, known)}; "
                                          f"known: {', '.join(known)}")

    # -- checking against the protocol ------------------------------------------------
    def validate(self, operations: Mapping[str, Any], conventions: Mapping[str, Convention]) -> None:
        """Raise :class:`CapabilityError` for an unknown operation, convention or value."""
        for op in sorted(map(str, self.operations or ())):
            if op not in operations:
                raise CapabilityError(f"capabilities.operations names {op!r}, which is no protocol operation"
                                      f"{_suggest(op, operations)}")
        for name, values in self.conventions.items():
            if name not in conventions:
                raise CapabilityError(f"capabilities.conventions names {name!r}, which is no convention"
                                      f"{_suggest(name, conventions)}; known: {', '.join(sorted(conventions))}")
            allowed = conventions[name].values
            for value in values:
                if not any(value == a and type(value) is type(a) for a in allowed):
                    raise CapabilityError(f"capabilities.conventions[{name!r}] holds {value!r:.60}; "
                                          f"the protocol's values are {', '.join(map(repr, allowed))}")

    # -- reading -------------------------------------------------------------------------
    def supports(self, name: str, value: Any) -> bool:
        """Whether the declaration admits ``value`` for convention ``name`` (absent: every value)."""
        return admits(self.conventions.get(name), value)

    def outside(self, operations: Iterable[str], device: str, dtype: str) -> str | None:
        """Why a row needing ``operations`` on ``device`` in ``dtype`` is outside the declaration, or None."""
        if self.operations is not None:
            missing = [op for op in operations if op not in self.operations]
            if missing:
                return f"declares no {', '.join(missing)} (capabilities.operations)"
        if self.devices is not None and device not in self.devices:
            return f"declares devices {', '.join(sorted(self.devices))}, not {device}"
        if self.arrays in ARRAY_DEVICES and device not in ARRAY_DEVICES[self.arrays]:
            return (f"declares arrays={self.arrays!r}, whose arrays live on "
                    f"{', '.join(sorted(ARRAY_DEVICES[self.arrays]))}, not {device}")
        if self.dtypes is not None and dtype not in self.dtypes:
            return f"declares dtypes {', '.join(sorted(self.dtypes))}, not {dtype}"
        return None

    # -- crossing the worker's channel --------------------------------------------------
    def to_plain(self) -> dict[str, Any]:
        """The declaration as plain data (lists sorted by their text, for a stable report)."""
        def listed(values: frozenset[Any] | None) -> list[Any] | None:
            return None if values is None else sorted(values, key=repr)

        return {"operations": listed(self.operations), "dtypes": listed(self.dtypes),
                "devices": listed(self.devices), "arrays": self.arrays,
                "conventions": {name: listed(values) for name, values in sorted(self.conventions.items())}}

    @classmethod
    def from_plain(cls, data: Any) -> "Capabilities":
        """Rebuild a declaration from :meth:`to_plain`'s data; :class:`CapabilityError` if malformed."""
        if data is None:
            return cls()
        if not isinstance(data, dict) or not set(data) <= {"operations", "dtypes", "devices", "conventions", "arrays"}:
            raise CapabilityError(f"a capability declaration must be a dict of operations, dtypes, devices, "
                                  f"conventions and arrays, got {str(data)[:100]}")
        conventions = data.get("conventions") or {}
        if not isinstance(conventions, dict):
            raise CapabilityError("capabilities.conventions must be a mapping")
        return cls(operations=data.get("operations"), dtypes=data.get("dtypes"), devices=data.get("devices"),
                   conventions=conventions, arrays=data.get("arrays", "torch"))


def declared(impl: object) -> Capabilities | None:
    """The implementation's ``capabilities`` attribute as a :class:`Capabilities`, or None if it has none.

    A plain dict with the same keys is accepted too. Raises :class:`CapabilityError` for a
    declaration of another type or a malformed one.
    """
    value = getattr(impl, "capabilities", None)
    if value is None:
        return None
    if callable(value) and not isinstance(value, Capabilities):
        value = value()
    if isinstance(value, Capabilities):
        return value
    if isinstance(value, dict):
        return Capabilities.from_plain(value)
    raise CapabilityError(f"capabilities must be a specformer.protocol.Capabilities, got {type(value).__name__}")
