"""The protocol pages of the site: what to write to check one's own implementation, by family.

:func:`protocol_page` renders ``specformer/protocol/<family>.py`` as a page: a table of the
family's operations with their signatures, the fields of the parameter classes they take
(with the shape each field's source comment gives, e.g. ``MultiHeadParams.w_q: (d_model,
h * d_k)``), the conventions the family registers (``CONVENTIONS``, when the protocol
declares them), the worked examples of :mod:`specformer.protocol.examples` (each true
for the reference implementation), then the full reference of the module by mkdocstrings
(every docstring: shapes, dtypes, what to raise). :func:`protocol_index` is the overview.

Everything written comes from the package's own code (no report), introspected at build
time; docstring text goes through :func:`specformer.site.spectext.spec_markdown` (``"</w>"``
is shown, not taken as a tag). This module imports the protocol, never an implementation.
"""

from __future__ import annotations

import dataclasses
import html
import importlib
import inspect
import re
from types import ModuleType
from typing import Any, Mapping, Sequence

from specformer.site.families import FAMILY_ORDER, family_title
from specformer.site.spectext import spec_markdown
from specformer.site.tables import fence

_COMMENT = re.compile(r"^\s+(\w+)\s*:\s*[^#=]+(?:=[^#]*)?#\s*(.+)$")


def protocol_families() -> list[str]:
    """The families whose protocol module is importable, in the site's order."""
    try:
        from specformer.protocol import FAMILIES
    except ImportError:  # pragma: no cover - the protocol ships with the package
        return []
    return [f for f in FAMILY_ORDER if f in FAMILIES] + sorted(set(FAMILIES) - FAMILY_ORDER.keys())


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def _cell(value: str) -> str:
    """``value`` for a Markdown table cell: one line, its pipes escaped. A code span that holds a pipe
    becomes HTML code with the pipe as an entity: inside a code span the table's ``\\|`` escape
    would show its backslash."""
    def code(match: re.Match[str]) -> str:
        text = match.group(2).strip() if match.group(1) != "`" else match.group(2)
        return f"<code>{html.escape(text).replace('|', '&#124;')}</code>" if "|" in text else match.group(0)

    return _CODE_SPAN.sub(code, value.replace("\n", " ")).replace("|", "\\|")


def _text_cell(value: str) -> str:
    """Docstring text for a table cell: :func:`spec_markdown`, then :func:`_cell`."""
    return _cell(spec_markdown(value))


def _first_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def _field_notes(cls: type) -> dict[str, str]:
    """The trailing comment of each field in the class's source (its shape, usually)."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    notes = {}
    for line in source.splitlines():
        match = _COMMENT.match(line)
        if match:
            notes[match.group(1)] = match.group(2).strip()
    return notes


def parameter_classes(module: ModuleType) -> list[type]:
    """The dataclasses a family's protocol module names (defined there or imported for its operations)."""
    found = [v for v in vars(module).values() if isinstance(v, type) and dataclasses.is_dataclass(v)]
    return sorted(set(found), key=lambda c: c.__name__)


def _operations_table(module: ModuleType) -> str:
    family = getattr(module, "FAMILY", None)
    operations = getattr(family, "operations", ()) if family is not None else ()
    if not operations:
        return "This family declares no operation."
    from specformer.protocol.describe import signature

    lines = ["| Operation | Declared by | Signature | What it computes |", "|---|---|---|---|"]
    for op in operations:
        method = getattr(op.protocol, op.method, None)
        anchor = f"{module.__name__}.{op.protocol.__name__}.{op.method}"
        lines.append(f"| [`{op.method}`](#{anchor}) | `{op.protocol.__name__}` | "
                     f"`{(op.method + signature(method)).replace(chr(10), ' ')}` | "
                     f"{_text_cell(_first_line(method))} |")
    return "\n".join(lines)


def _parameters_section(module: ModuleType) -> str:
    out = []
    for cls in parameter_classes(module):
        notes = _field_notes(cls)
        hints = {f.name: f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
                 for f in dataclasses.fields(cls)}
        lines = [f"### `{cls.__name__}`", spec_markdown(_first_line(cls)),
                 "| Field | Type | Shape, meaning |\n|---|---|---|\n" + "\n".join(
                     f"| `{name}` | {_cell(f'`{kind}`')} | {_text_cell(notes.get(name, ''))} |"
                     for name, kind in hints.items())]
        properties = [n for n, v in vars(cls).items() if isinstance(v, property)]
        if properties:
            derived = [f"`{n}` ({spec_markdown(_first_line(getattr(cls, n)).rstrip('.'))})" for n in properties]
            lines.append("Derived: " + ", ".join(derived) + ".")
        out.append("\n\n".join(lines))
    return "\n\n".join(["## Parameter classes", *out]) if out else ""


def _conventions_section(module: ModuleType) -> str:
    conventions = getattr(module, "CONVENTIONS", None) or getattr(getattr(module, "FAMILY", None), "conventions", None)
    if not isinstance(conventions, Mapping) or not conventions:
        return ""
    lines = ["| Convention | Values | Meaning |", "|---|---|---|"]
    for name, convention in conventions.items():
        values = ", ".join(f"`{v!r}`" for v in getattr(convention, "values", ()))
        lines.append(f"| `{name}` | {_cell(values)} | {_text_cell(str(getattr(convention, 'doc', '')))} |")
    return ("## Conventions\n\nAn implementation may declare which values of each convention it follows "
            "(`capabilities`); a convention it does not name means every value.\n\n" + "\n".join(lines))


def _examples_section(family: str) -> str:
    """The family's worked examples: each call and its result as a console session, and what it shows."""
    from specformer.protocol.examples import EXAMPLES

    examples = EXAMPLES.get(family, ())
    if not examples:
        return ""
    out = ["## Worked examples",
           "What the conventions mean, as values. Each example holds for the reference implementation "
           "(`tests/test_protocol_examples.py` runs every one); where the protocol leaves a choice open, the "
           f"example says so. `specformer protocol {family}` prints this page in a terminal."]
    for example in examples:
        out += [spec_markdown(example.shows), fence(f">>> {example.call}\n{example.result}", "pycon")]
    return "\n\n".join(out)


def _jax_section(family: str) -> str:
    """How to write the family in JAX (or NumPy): the worker converts, and the skeleton ``specformer new`` writes."""
    from specformer.runner.skeleton import skeleton

    return "\n\n".join([
        "## In JAX, NumPy, CuPy or MLX",
        "An implementation may take and answer with another library's arrays: it declares the library once, "
        "`Capabilities(arrays=\"jax\")` (or `\"numpy\"`, `\"cupy\"`, `\"mlx\"`), and its worker hands it every "
        "tensor as that library's array, on the row's device and in its dtype (bfloat16 included), every dtype "
        "argument as that library's dtype, and converts every array of its answer back (anything with "
        "`__dlpack__` or `__array__`). What cannot cross is named in the row's message (float64 needs "
        "`jax_enable_x64`; NumPy arrays live on the CPU). At `--profile ci` a row draws its sizes from a few plans, "
        "so jitted code compiles a few times per row. "
        f"`specformer new {family} --arrays jax` writes this skeleton:",
        fence(skeleton(family, "jax"), "python"),
    ])


def protocol_page(family: str) -> str:
    """A family's protocol page: operations, parameter classes, conventions, then the module's reference."""
    title = family_title(family)
    out = [f"# Protocol: {title}",
           f"What an implementation of the `{family}` family ({title.lower()}) may provide. An implementation is any object "
           "with a `name` and some of these methods; the suite runs every property whose operations it "
           "provides and reports the others as not applicable ([overview](index.md)). For inputs outside its "
           "domain an operation raises `NotApplicable` (see the overview)."]
    try:
        module = importlib.import_module(f"specformer.protocol.{family}")
    except ImportError as exc:  # pragma: no cover - the protocol ships with the package
        return "\n\n".join(out + [f"The protocol module could not be imported: `{exc}`."]) + "\n"
    out += ["## Operations", _operations_table(module), _parameters_section(module), _conventions_section(module),
            _examples_section(family), _jax_section(family), "## Reference",
            f"::: specformer.protocol.{family}\n    options:\n      show_root_heading: false\n"
            "      show_root_toc_entry: false\n      show_if_no_docstring: true\n      members_order: source\n"
            "      heading_level: 3\n"]
    return "\n\n".join(part for part in out if part)


def versions_section() -> str:
    """The protocol's version and its changes, as a Markdown section (:mod:`specformer.protocol.versions`)."""
    from specformer.protocol.versions import CHANGES, PROTOCOL_VERSION

    def code(text: str) -> str:
        return f"`{text}`"

    done = {"move": "the harness moves the answer to the device under test",
            "convert": "the harness converts the answer to the dtype asked for", None: "the row is not applicable"}
    rows = "\n".join(f"| {c.version} | {code(c.operation)} | "
                     + (f"takes the keyword {code(c.keyword)}: {c.what} | {done[c.harness]} |" if c.keyword
                        else f"{c.what} | — |") for c in CHANGES)
    return (f"## Versions\n\nThis is version {PROTOCOL_VERSION} of the protocol. Code written against an earlier "
            "version keeps working: where an operation lacks a keyword that a later version added, the harness does "
            "that part itself, or, where it cannot, the row is not applicable with a message that names the change "
            "(never an error). The report records the version (`environment.protocol`) and, per implementation, "
            "what the harness did for it (`protocol_notes`).\n\n"
            "| version | operation | change | for code written before it |\n|---|---|---|---|\n" + rows)


def protocol_index(families: Sequence[str]) -> str:
    """The protocol's overview: what an implementation is, and a link per family."""
    links = "\n".join(f"- [{family_title(f)}]({f}.md)" for f in families)
    return ("# The implementation protocol\n\n"
            "An implementation is any Python object with a `name` and some of the operations of the families "
            "below, given to `specformer run --impl FILE.py` or `--impl module:attribute`. The suite runs every "
            "property whose operations it provides, on each device and dtype; a property whose operations are "
            "missing is *not applicable*, not a failure. Each family's page gives every operation with its "
            "signature and docstring, the fields of its parameter classes and its conventions.\n\n"
            f"{links}\n\n" + versions_section() + "\n\n"
            "::: specformer.protocol.base\n    options:\n      show_root_heading: false\n"
            "      show_root_toc_entry: false\n      heading_level: 2\n")
