"""Properties: Hypothesis tests tagged with the claim they check.

A property is a function decorated with Hypothesis's ``@given`` and, outermost,
:func:`claim_property`. Its first parameter is a :class:`specformer.context.Context`
(the implementation, device, dtype and tolerances under test); Hypothesis supplies the
rest. ``expect`` says what the property is for:

* ``"hold"``: it states the (corrected) claim; every example must pass;
* ``"counterexample"``: it states the claim *as written*; Hypothesis must find an
  example that breaks it (a refutation). Finding none is a failure of the suite.

``needs`` names the protocol operations the property calls (see
:data:`specformer.protocol.OPERATIONS`); an empty ``needs`` marks a property run once
against the pseudo-implementation ``math``. Such a property says with ``about`` which of
the three kinds of claim it checks (:data:`ABOUT`): arithmetic on published numbers, a
statement about the documents' own code, or a fact about a named library or shipped
model. Every other claim about what an implementation computes calls the implementation.

This module only records properties; :mod:`specformer.runner.row` runs them.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

Expect = Literal["hold", "counterexample"]

#: What a property that calls no implementation is about, and how the site says it.
ABOUT: dict[str, str] = {
    "published-numbers": "arithmetic on published numbers",
    "documents-code": "a statement about the documents' own code",
    "library": "a fact about a named library or shipped model",
    # The two below stand beside the three kinds: the statement as mathematics, where another
    # property of the same claim checks what an implementation computes; and a measurement the
    # claim makes of the reference itself (a numeric example on the suite's own text).
    "mathematics": "the statement as mathematics; another property checks the implementation",
    "reference": "a measurement of the reference implementation on the suite's own text",
}

#: Every registered property, by qualified name (``topic.function``).
REGISTRY: dict[str, "Property"] = {}

#: Modules of ``specformer.properties`` and of its family packages that hold shared
#: code (strategies, tolerances, the float64 formulas), not properties.
SHARED_MODULES = frozenset({"strategies", "tolerances", "expected"})


@dataclass(frozen=True)
class Property:
    """A registered property and what it checks."""

    claim: str
    function: Callable[..., Any]
    expect: Expect
    needs: tuple[str, ...]
    dtypes: tuple[str, ...] | None
    max_examples: int | None
    module: str
    name: str
    doc: str = field(default="", compare=False)
    family: str = ""
    #: For ``needs=()``: a key of :data:`ABOUT`; None for a property that calls an implementation.
    about: str | None = None

    @property
    def qualname(self) -> str:
        """``topic.function``, unique across the suite."""
        return f"{self.module}.{self.name}"

    @property
    def source(self) -> str:
        """The property's source code, decorators included."""
        return inspect.getsource(self.function)


def claim_property(
    claim: str,
    *,
    needs: tuple[str, ...] | list[str] = ("attention",),
    expect: Expect = "hold",
    dtypes: tuple[str, ...] | None = None,
    max_examples: int | None = None,
    about: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a Hypothesis test as a property of ``claim``.

    ``dtypes`` restricts the dtypes the property runs in (default: all the device's);
    ``max_examples`` caps the profile's example count for costly properties
    (statistical ones draw thousands of samples per example); ``about`` (a key of
    :data:`ABOUT`) says what a property with ``needs=()`` checks, and is refused on a
    property that calls an implementation.
    """
    if expect not in ("hold", "counterexample"):
        raise ValueError(f"expect must be 'hold' or 'counterexample', got {expect!r}")
    if about is not None and about not in ABOUT:
        raise ValueError(f"about must be one of {', '.join(ABOUT)}, got {about!r}")
    if about is not None and tuple(needs):
        raise ValueError(f"about={about!r} is for properties that call no implementation; this one needs {needs}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not hasattr(fn, "hypothesis"):
            raise TypeError(f"{fn.__qualname__}: apply @given before @claim_property")
        parts = fn.__module__.split(".")
        module = parts[-1]
        family = parts[-2] if len(parts) >= 2 and parts[-2] != "properties" else ""
        prop = Property(
            claim=claim,
            function=fn,
            expect=expect,
            needs=tuple(needs),
            dtypes=tuple(dtypes) if dtypes else None,
            max_examples=max_examples,
            module=module,
            name=fn.__name__,
            doc=inspect.getdoc(fn) or "",
            family=family,
            about=about,
        )
        if prop.qualname in REGISTRY and REGISTRY[prop.qualname].function is not fn:
            raise ValueError(f"property {prop.qualname} is defined twice")
        REGISTRY[prop.qualname] = prop
        fn.specformer_property = prop  # type: ignore[attr-defined]
        return fn

    return register


def families() -> list[str]:
    """The family packages of ``specformer.properties`` (``attention``, ...)."""
    import specformer.properties as package

    return sorted(info.name for info in pkgutil.iter_modules(package.__path__)
                  if info.ispkg and not info.name.startswith("_"))


def property_modules() -> list[str]:
    """The topic modules, as ``family.topic`` relative to ``specformer.properties``."""
    import specformer.properties as package

    names = []
    for family in families():
        path = [str(p) for p in (Path(d) / family for d in package.__path__) if p.is_dir()]
        names += [f"{family}.{info.name}" for info in pkgutil.iter_modules(path)
                  if not info.ispkg and info.name not in SHARED_MODULES and not info.name.startswith("_")]
    return sorted(names)


def load_properties() -> dict[str, Property]:
    """Import every topic module and return the registry."""
    for name in property_modules():
        importlib.import_module(f"specformer.properties.{name}")
    return dict(REGISTRY)
