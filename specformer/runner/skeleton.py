"""``specformer new FAMILY``: a commented skeleton adapter, and the marker of its unwritten operations.

:func:`skeleton` writes the source of an adapter for one family: every operation of
``specformer/protocol/<family>.py`` with its signature and documentation (copied from the
protocol's source), the family's conventions, and a capability declaration to edit. Each
operation starts decorated with :func:`not_implemented`.

:func:`not_implemented` replaces the method by one that raises ``NotImplementedError``
and marks it ``__specformer_skeleton__``; :func:`specformer.protocol.provided_operations`
treats a marked method as absent. So an operation left as the skeleton wrote it is *not
provided* (its rows are not applicable, and the summary names it once), never an error
per row. The marker cannot hide a failure: a marked method's own body is never run (the
decorator discards it), so a written operation is checked only once its marker is
removed, and an operation that raises ``NotImplementedError`` itself, unmarked, is an
error like any other exception.

This module writes text and marks methods; it neither loads nor runs an adapter.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import textwrap
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: The attribute that marks a skeleton's unwritten operation.
MARKER = "__specformer_skeleton__"


def not_implemented(method: F) -> F:
    """Mark an operation of a skeleton as not written yet: it is then *not provided* (module doc).

    The decorated method's body is discarded; calling it raises ``NotImplementedError``.
    Remove the decorator when you write the operation.
    """

    @functools.wraps(method)
    def unwritten(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{method.__name__} is still a skeleton (remove @not_implemented when it is written)")

    setattr(unwritten, MARKER, True)
    return unwritten  # type: ignore[return-value]


def is_skeleton(method: Any) -> bool:
    """Whether ``method`` is an operation still marked by :func:`not_implemented`."""
    try:
        return bool(getattr(method, MARKER, False))
    except Exception:  # noqa: BLE001 - a hostile __getattr__: not a skeleton, checked as written
        return False


def _class_name(family: str) -> str:
    return "My" + "".join(part.capitalize() for part in family.split("_"))


def _operation_source(protocol: type, method: str) -> str:
    """The protocol's ``def`` of ``method``, its ``...`` body replaced by a ``raise``."""
    source = textwrap.dedent(inspect.getsource(getattr(protocol, method)))
    lines = source.rstrip().splitlines()
    if lines and lines[-1].strip() == "...":
        indent = lines[-1][: len(lines[-1]) - len(lines[-1].lstrip())]
        lines[-1] = f"{indent}raise NotImplementedError"
    else:
        lines.append("        raise NotImplementedError")
    return "\n".join(lines)


def _fields_comment(module: Any, name: str) -> list[str]:
    """``# Name: doc`` and one ``#     field: type  # shape`` line per field of a protocol data type."""
    cls = getattr(module, name)
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return []
    fields = []
    for line in source.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith(("def ", "@")):
            break
        if re.match(r"^[a-z_]\w*\s*:", stripped):
            fields.append(f"#     {stripped}")
    doc = " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split()).replace("``", "`")
    return [f"# {name}: {doc}", *fields] if fields else []


def _conventions_block(family: Any, module: Any) -> list[str]:
    """The family's registered conventions as lines of a ``capabilities`` declaration: those with a default
    (the documents' value, what an undeclared implementation is held to) written out with it, to change
    if yours follows another; the others commented out with every value (uncomment to restrict)."""
    conventions = dict(getattr(family, "conventions", None) or getattr(module, "CONVENTIONS", None) or {})
    lines = []
    for name, convention in conventions.items():
        default = getattr(convention, "default", None)
        values = default if default is not None else getattr(convention, "values", ())
        doc = " ".join(str(getattr(convention, "doc", "")).split())
        prefix = "    " if default is not None else "    #     "
        lines.append(f"{prefix}{name!r}: frozenset({{{', '.join(repr(v) for v in values)}}}),  # {doc}")
    return lines


#: For ``specformer new --arrays LIB``: the imports, the array type that replaces ``torch.Tensor`` in the
#: signatures, and what the worker hands the operations.
ARRAY_SKELETONS: dict[str, tuple[list[str], str, str]] = {
    "jax": (["import jax", "import jax.numpy as jnp"], "jax.Array",
            "Tensors arrive as jax.Array (on the row's device, in its dtype, bfloat16 included), dtype arguments as\n"
            "jnp dtypes; answer with jax arrays (or anything with __dlpack__ or __array__): the worker converts both\n"
            "ways (capabilities.arrays). jax.jit away: the suite draws few shapes per row at --profile ci."),
    "numpy": (["import numpy as np"], "np.ndarray",
              "Tensors arrive as np.ndarray (on the CPU, in the row's dtype; bfloat16 through ml_dtypes), dtype\n"
              "arguments as np.dtype; answer with NumPy arrays: the worker converts both ways (capabilities.arrays)."),
}


def _capabilities(family: str, module: Any, arrays: str = "torch") -> list[str]:
    protocol = importlib.import_module("specformer.protocol")
    conventions = _conventions_block(protocol.FAMILIES[family], module)
    body = [
        "    # What this implementation supports; rows outside it are not applicable at once, and",
        "    # inside it every example must be answered (raising NotApplicable there is an error).",
        "    # None means everything: every operation written, every dtype, every device.",
    ]
    if hasattr(protocol, "Capabilities"):
        body += [
            "    capabilities = Capabilities(",
            *([f"        arrays={arrays!r},  # the worker converts arguments and answers"] if arrays != "torch" else []),
            "        operations=None,",
            "        dtypes=frozenset({\"float32\", \"float64\"}),",
            "        devices=frozenset({\"cpu\"}),",
            *([
                "        conventions={",
                "            # the family's conventions. Written out: the documents' value, which an undeclared",
                "            # implementation is held to (change it if yours follows another); commented out: every",
                "            # value (uncomment to restrict)",
                *[line.replace("    #     ", "            # ", 1) if line.startswith("    #     ")
                  else "        " + line for line in conventions],
                "        },",
            ] if conventions else ["        conventions={},  # the family registers no named convention"]),
            "    )",
        ]
    else:  # a protocol without declared capabilities: the declaration stays a comment
        body += [
            "    # capabilities = Capabilities(operations=None, dtypes=frozenset({\"float32\", \"float64\"}),",
            "    #                             devices=frozenset({\"cpu\"}), conventions={})",
            *conventions,
        ]
    return body


def skeleton(family: str, arrays: str = "torch") -> str:
    """The source of a skeleton adapter for ``family`` (module doc); ``arrays`` ``"jax"`` or ``"numpy"`` writes
    one whose operations take and answer with that library's arrays (:data:`ARRAY_SKELETONS`)."""
    from specformer.protocol.versions import PROTOCOL_VERSION

    if arrays != "torch" and arrays not in ARRAY_SKELETONS:
        raise KeyError(arrays)
    protocol = importlib.import_module("specformer.protocol")
    families = protocol.FAMILIES
    if family not in families:
        raise KeyError(family)
    module = importlib.import_module(f"specformer.protocol.{family}")
    operations = families[family].operations
    defs = [_operation_source(op.protocol, op.method) for op in operations]
    array_imports, array_type, array_note = ARRAY_SKELETONS.get(arrays, ([], "", ""))
    if arrays != "torch":  # the signatures in the library's types
        defs = [d.replace("torch.Tensor", array_type).replace("torch.dtype", "Any") for d in defs]
    used = set(re.findall(r"\b([A-Z]\w+)\b", "\n".join(d.split('"""')[0] + d.rsplit('"""', 1)[-1] for d in defs)))
    imports = sorted(n for n in used if hasattr(module, n) and n not in ("Any", "NotApplicable")
                     and not n.endswith("Implementation"))
    conventions = (inspect.getdoc(module) or "").split("\n\n")
    kept = [p for p in conventions if p.lstrip().startswith(("Conventions", "*"))]
    class_name = _class_name(family)
    fields = [line for n in imports for line in _fields_comment(module, n) + ["#"]][:-1]
    head = [
        f'"""A specformer adapter for the {family} family: fill in the operations you provide.',
        "",
        f"Written by `specformer new {family}` for protocol version {PROTOCOL_VERSION}. Every operation of the",
        "family's protocol is below, with its signature and documentation. An operation still marked",
        "@not_implemented is not provided: its rows are not applicable and the summary names it once.",
        "Remove the marker when you write the body; delete the operations you will not provide.",
        "A later protocol version keeps this file working (`specformer protocol` lists the changes).",
        "",
        "Check it:  specformer run --impl THIS_FILE.py",
        "",
        *([*array_note.splitlines(), ""] if array_note else []),
        *[line for p in kept for line in (p.replace("``", "`").splitlines() + [""])],
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        *(array_imports if arrays != "torch" else ["import torch"]),
        "",
        "from specformer.protocol import " + ", ".join(
            (["Capabilities"] if hasattr(protocol, "Capabilities") else []) + ["NotApplicable"]),
        *([f"from specformer.protocol.{family} import {', '.join(imports)}"] if imports else []),
        "from specformer.runner.skeleton import not_implemented",
        "",
        *([line.replace("torch.Tensor", array_type) for line in fields] if arrays != "torch" else fields),
        *(["", "# float64 rows need JAX's 64-bit mode (without it they end as errors that name it)",
           'jax.config.update("jax_enable_x64", True)'] if arrays == "jax" else []),
        "",
        "",
        f"class {class_name}:",
        f'    """My {family} implementation."""',
        "",
        f'    name = "my-{family}"',
        "",
        *_capabilities(family, module, arrays),
    ]
    body = []
    for source in defs:
        body += ["", "    @not_implemented", *textwrap.indent(source, "    ").splitlines()]
    tail = ["", "", f"#: What `specformer run --impl THIS_FILE.py` loads (a class is instantiated with no arguments).",
            f"implementation = {class_name}", ""]
    return "\n".join(head + body + tail)
