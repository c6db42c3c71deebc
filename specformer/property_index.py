"""The properties' metadata read from their source, without importing them.

``specformer claims`` lists, for each claim, the properties that check it and the
operations they need. Importing the property modules to learn that costs seconds
(Hypothesis, torch, every strategy); reading the ``@claim_property(...)`` decorators
with :mod:`ast` costs milliseconds. :func:`static_properties` does the reading; when a
decorator's arguments are not plain literals (a name, a call), it returns ``None`` and
the caller imports the modules as before (:func:`specformer.property.load_properties`).

This module reads source; it neither imports nor runs a property.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class IndexedProperty:
    """What ``specformer claims`` shows of a property (a subset of :class:`specformer.property.Property`)."""

    claim: str
    expect: str
    needs: tuple[str, ...]
    module: str
    name: str
    family: str
    about: str | None = None

    @property
    def qualname(self) -> str:
        """``topic.function``, as :attr:`specformer.property.Property.qualname`."""
        return f"{self.module}.{self.name}"


class _NotLiteral(Exception):
    """A decorator argument the index cannot read without running code."""


def _decorator(node: ast.expr) -> ast.Call | None:
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name == "claim_property":
            return node
    return None


def _constants(tree: ast.Module) -> dict[str, object]:
    """The module's top-level ``NAME = literal`` assignments (``NEEDS = ("score",)``)."""
    out: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return out


def _value(node: ast.expr, constants: dict[str, object]) -> object:
    if isinstance(node, ast.Name):
        if node.id not in constants:
            raise _NotLiteral(node.id)
        return constants[node.id]
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        raise _NotLiteral(ast.dump(node)) from None


def _properties_of(path: Path, family: str) -> list[IndexedProperty]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants = _constants(tree)
    found = []
    for node in tree.body:  # properties are module-level functions
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            call = _decorator(deco)
            if call is None:
                continue
            try:
                claim = _value(call.args[0], constants) if call.args else None
                # only what the catalogue shows; dtypes and max_examples stay unread
                keywords = {k.arg: _value(k.value, constants) for k in call.keywords if k.arg in ("expect", "needs", "about")}
            except _NotLiteral:
                raise _NotLiteral(f"{path}:{call.lineno}") from None
            if not isinstance(claim, str) or any(k.arg is None for k in call.keywords):
                raise _NotLiteral(f"{path}:{call.lineno}")
            found.append(IndexedProperty(claim=claim, expect=str(keywords.get("expect", "hold")),
                                         needs=tuple(keywords.get("needs", ("attention",))),
                                         module=path.stem, name=node.name, family=family,
                                         about=keywords.get("about")))
    return found


def static_properties() -> dict[str, IndexedProperty] | None:
    """Every property by qualified name, read from source; ``None`` if some decorator needs running."""
    from specformer.property import SHARED_MODULES

    import specformer

    roots = [Path(p) / "properties" for p in specformer.__path__]
    out: dict[str, IndexedProperty] = {}
    try:
        for root in roots:
            if not root.is_dir():
                continue
            for family_dir in sorted(p for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()
                                     and not p.name.startswith("_")):
                for path in sorted(family_dir.glob("*.py")):
                    if path.stem in SHARED_MODULES or path.stem.startswith("_"):
                        continue
                    for prop in _properties_of(path, family_dir.name):
                        out.setdefault(prop.qualname, prop)
    except (_NotLiteral, OSError, SyntaxError):
        return None
    return out or None
