"""``specformer protocol [FAMILY]``: a family's protocol as plain text, for the terminal.

:func:`describe` writes what the family's protocol page says, without a browser: the
family's conventions (its module docstring), every operation with its signature, the
protocol class that declares it and its docstring, the conventions an implementation may
declare with their values, and the worked examples of :mod:`specformer.protocol.examples`
(true for the reference implementation). :func:`overview` lists the families.
:func:`signature` is shared with the site's protocol pages (:mod:`specformer.site.protocol`).

Markup is made plain: reST roles and double backticks are dropped, fenced blocks
(formulas) are shown indented without their fences. This module does not import an
implementation; the command's parser lives in :mod:`specformer.runner.cli`, so that
``specformer --help`` does not import torch.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import textwrap
from typing import Any

from specformer.protocol import FAMILIES

__all__ = ["describe", "main", "overview", "plain", "signature"]

_ROLE = re.compile(r":(?:py:)?\w+:`~?\.?([^`]+)`")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[\w-]*[ \t]*$")


def signature(function: Any) -> str:
    """``(q: torch.Tensor, ..., *, pairing: str = 'interleaved') -> T``, without ``self``."""
    try:
        found = inspect.signature(function)
    except (TypeError, ValueError):
        return "(…)"
    parts, star = [], False
    for param in found.parameters.values():
        if param.name == "self":
            continue
        if param.kind is param.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        prefix = {param.VAR_POSITIONAL: "*", param.VAR_KEYWORD: "**"}.get(param.kind, "")
        star = star or param.kind is param.VAR_POSITIONAL
        shown = prefix + param.name
        if param.annotation is not param.empty:
            shown += f": {_annotation(param.annotation)}"
        if param.default is not param.empty:
            shown += f" = {param.default!r}"
        parts.append(shown)
    returns = "" if found.return_annotation is found.empty else f" -> {_annotation(found.return_annotation)}"
    return f"({', '.join(parts)}){returns}"


def _annotation(value: Any) -> str:
    return value if isinstance(value, str) else inspect.formatannotation(value)


def plain(doc: str) -> str:
    """A docstring as terminal text: roles and the backticks of code spans dropped, fence lines removed."""
    lines = [line for line in doc.splitlines() if not _FENCE.match(line)]
    return re.sub(r"(`+)(.+?)\1", r"\2", _ROLE.sub(r"\1", "\n".join(lines)), flags=re.DOTALL)


def _fill(value: str) -> str:
    return textwrap.fill(plain(value), 84, break_on_hyphens=False, break_long_words=False)


def _indent(value: str, prefix: str = "    ") -> str:
    return textwrap.indent(value, prefix, lambda line: bool(line.strip()))


def describe(family: str) -> str:
    """The protocol of ``family`` as text: conventions, operations, declarable conventions, worked examples."""
    import importlib

    from specformer.protocol.examples import EXAMPLES

    module = importlib.import_module(f"specformer.protocol.{family}")
    out = [f"The {family} protocol ({module.__name__}): what an implementation of the family may provide.",
           plain(inspect.getdoc(module) or "")]
    out.append("Operations (an implementation provides any of them, as methods of an object with a name):")
    for op in FAMILIES[family].operations:
        method = getattr(op.protocol, op.method, None)
        doc = plain(inspect.getdoc(method) or "")
        out.append(_indent(f"{op.method}{signature(method)}\n    declared by {op.protocol.__name__}"
                           + (f"\n{_indent(doc)}" if doc else ""), "  "))
    conventions = FAMILIES[family].conventions
    if conventions:
        out.append("Conventions an implementation may declare in its capabilities (not naming one means every "
                   "value):")
        for name, convention in conventions.items():
            values = ", ".join(repr(v) for v in convention.values)
            out.append(_indent(f"{name}: {values}\n{_indent(_fill(convention.doc))}", "  "))
    from specformer.protocol.versions import CHANGES, PROTOCOL_VERSION

    methods = {op.method for op in FAMILIES[family].operations}
    changes = [c for c in CHANGES if c.operation in methods]
    out.append(f"Protocol version {PROTOCOL_VERSION} (`specformer protocol` lists every change)."
               + ("" if not changes else " Changes to this family's operations since version 1 (code written before "
                  "a change keeps working: the harness does the new part where it can, else the row is not "
                  "applicable):\n" + "\n".join(f"  {c.line()}" for c in changes)))
    examples = EXAMPLES.get(family, ())
    if examples:
        out.append("Worked examples (each holds for the reference implementation; tests check them):")
        for example in examples:
            out.append(_indent(f">>> {example.call}\n{example.result}\n{_indent(_fill(example.shows))}", "  "))
    return "\n\n".join(part.rstrip() for part in out if part.strip()) + "\n"


def overview() -> str:
    """The families and their operations, one line each, and how to see one."""
    from specformer.protocol.versions import history

    lines = ["The protocol's families and their operations (specformer protocol FAMILY prints one):", ""]
    for name, family in FAMILIES.items():
        lines.append(textwrap.fill(", ".join(op.method for op in family.operations), 92, initial_indent=f"  {name:14}",
                                   subsequent_indent=" " * 16, break_on_hyphens=False))
    lines += ["", history()]
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    """``specformer protocol [FAMILY]``: print it; 2 for an unknown family."""
    if not args.family:
        sys.stdout.write(overview())
        return 0
    if args.family not in FAMILIES:
        print(f"specformer: error: unknown family {args.family!r}; the families are {', '.join(FAMILIES)}",
              file=sys.stderr)
        return 2
    sys.stdout.write(describe(args.family))
    return 0
