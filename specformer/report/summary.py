"""Readable failures: counterexamples without Hypothesis's internals, and one block per bad row.

:func:`readable_counterexample` rewrites the falsifying example Hypothesis reports for
a row: the advice meant for test authors (``@reproduce_failure(...)``, ``@seed(...)``)
is dropped, the implementation's context (shown beside the row anyway) is left out,
tensors built from drawn arrays read ``tensor([...])`` on one line, and tensors the
strategies build from a drawn seed (``_seeded(shape, bound, 7)``) read
``<random tensor from seed 7>``. The drawn values themselves are kept as Hypothesis
wrote them.

:func:`failure_block` is the block the summary of ``specformer run`` (and of pytest)
prints for each row that did not end as expected: claim, property, implementation,
device, dtype, outcome, message, counterexample, seed and the command that reproduces
it; :func:`printed_call` writes its call into the implementation so that it runs as pasted, every
value written once (a value too large to write is read from the file ``specformer replay``
saves). :func:`summary_lines` is the whole summary: a line per claim, the implementations
that could not be loaded or lack a family, the blocks, the ``fixed`` rows (entries to
prune) and the verdict. This module formats text; it runs nothing and judges nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

#: Lines of Hypothesis's report that address the author of the test, not its reader.
_ADVICE = re.compile(r"^\s*(You can reproduce this (?:example|test case) by temporarily adding"
                     r"|You can add @seed|@reproduce_failure\(|@seed\(|Unreliable test timings)")
_HEADER = re.compile(r"^(Falsifying example|Failing test case|Falsifying explicit example|Failing explicit example):\s*",
                     re.MULTILINE)
_CONTEXT_LINE = re.compile(r"^\s*ctx=Context\([^\n]*\),\s*\n", re.MULTILINE)
_SEEDED = re.compile(r"\b_seeded\(([^()]*)\)")


def _matching_paren(text: str, open_at: int) -> int:
    """The index of the ``)`` closing the ``(`` at ``open_at`` (or -1)."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _tensors_on_one_line(text: str) -> str:
    """``from_numpy(\\n array([[0.], [1.]]),\\n )`` -> ``tensor([[0.], [1.]])``."""
    out, pos = [], 0
    while True:
        start = text.find("from_numpy(", pos)
        if start < 0:
            out.append(text[pos:])
            return "".join(out)
        end = _matching_paren(text, start + len("from_numpy"))
        if end < 0:
            out.append(text[pos:])
            return "".join(out)
        inner = " ".join(text[start + len("from_numpy("):end].split()).rstrip(",").strip()
        if inner.startswith("array(") and inner.endswith(")"):
            inner = inner[len("array("):-1].strip().rstrip(",")
        out += [text[pos:start], f"tensor({inner})"]
        pos = end + 1


def _seeded(match: re.Match[str]) -> str:
    numbers = re.findall(r"(?<![\w.])-?\d+(?![\w.])", match.group(1))
    return f"<random tensor from seed {numbers[-1]}>" if numbers else "<random tensor>"


def readable_counterexample(text: str | None) -> str | None:
    """``text`` (a falsifying example as Hypothesis reports it) without its internals (module doc)."""
    if not text:
        return text
    lines = [line for line in text.splitlines() if not _ADVICE.match(line)]
    cleaned = _HEADER.sub("", "\n".join(lines))
    cleaned = _CONTEXT_LINE.sub("", cleaned)
    cleaned = _SEEDED.sub(_seeded, _tensors_on_one_line(cleaned))
    cleaned = re.sub(r"\n{3,}", "\n\n", cleaned).strip()
    return cleaned or None


#: Tensors with at most this many entries are written out in full (pasteable); larger ones
#: as their shape, dtype and first values.
FULL_TENSOR = 32
#: Entries shown of a tensor too large to write out.
SHOWN_ENTRIES = 6


def _number(x: float | int | bool, single: bool = False) -> str:
    """A number as Python source that reads back exactly (in float32 when ``single``), as short as that allows."""
    if isinstance(x, bool):
        return repr(x)
    if isinstance(x, float):
        if x != x or x in (float("inf"), float("-inf")):
            return f"float({str(x)!r})"
        text = repr(x)
        if single:  # the shortest text that rounds to the same float32
            import struct

            want = struct.pack("f", x)
            for digits in range(1, 10):
                short = f"{x:.{digits}g}"
                if struct.pack("f", float(short)) == want:
                    text = short
                    break
        return text if any(c in text for c in ".en") else text + "."
    return str(x)


def _nested(values: Any, single: bool = False) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v, single) for v in values) + "]"
    return _number(values, single)


def _constant(t: Any) -> str | None:
    """The one value of a real tensor that holds nothing else (sign of zero and NaN included), as Python;
    ``None`` for any other tensor."""
    try:
        flat = t.detach().cpu().flatten()
        if flat.numel() == 0 or flat.is_complex():
            return None
        first = flat[0]
        if flat.is_floating_point():
            same = bool(flat.isnan().all()) if bool(first.isnan()) else \
                bool(((flat == first) & (flat.signbit() == first.signbit())).all())
        else:
            same = bool((flat == first).all())
        if not same:
            return None
        return _number(first.item(), single=str(flat.dtype) in ("torch.float32", "torch.float16", "torch.bfloat16"))
    except Exception:  # noqa: BLE001 - a storage that cannot be read
        return None


def render_tensor(t: Any) -> str:
    """A tensor as Python: ``torch.tensor([...], dtype=torch.float64)`` when small (pasteable), else
    the seeded recipe it was drawn from, else ``torch.full(shape, value, dtype=...)`` when it holds one value,
    else the glimpse ``<tensor shape (2, 8, 16) float64: -0.31, 0.72, ... >`` (not Python: a printed call
    reads such a tensor from a saved file instead, :func:`printed_call`)."""
    recipe = getattr(t, "_specformer_recipe", None)
    dtype = str(t.dtype).replace("torch.", "")
    shape = tuple(int(n) for n in t.shape)
    if t.numel() <= FULL_TENSOR:
        default = dtype in ("float32", "int64", "bool")
        try:
            body = _nested(t.detach().cpu().tolist(), single=dtype in ("float32", "float16", "bfloat16"))
        except Exception:  # noqa: BLE001 - a storage that cannot be read
            return f"<tensor shape {shape} {dtype}>"
        if t.numel() == 0:
            return f"torch.zeros({shape}, dtype=torch.{dtype})"
        return f"torch.tensor({body}" + ("" if default else f", dtype=torch.{dtype}") + ")"
    constant = _constant(t) if recipe is None else None
    if constant is not None:  # one value throughout: written once
        return f"torch.full({shape}, {constant}, dtype=torch.{dtype})"
    if recipe is not None:
        r_shape, bound, seed = recipe
        cast = "" if dtype == "float64" else f".to(torch.{dtype})"
        return (f"((torch.rand({tuple(r_shape)}, generator=torch.Generator().manual_seed({seed}), "
                f"dtype=torch.float64) * 2 - 1) * {bound!r}){cast}")
    try:
        flat = t.detach().cpu().flatten()[:SHOWN_ENTRIES].tolist()
        shown = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in flat)  # a glimpse, not a copy
    except Exception:  # noqa: BLE001
        shown = "?"
    return f"<tensor shape {shape} {dtype}: {shown}, ...>"


def render_value(value: Any, depth: int = 0, where: str | None = None) -> str | None:
    """``value`` as Python source where possible (module doc); ``None`` for what cannot be shown so.

    ``where``: the Python expression that reads ``value`` from a saved file (``saved['counterexample']['case']``);
    given, a tensor too large to write is written as that expression (the path into the file), never as a glimpse.
    """
    import dataclasses

    def inner(item: Any, step: str) -> str | None:
        return render_value(item, depth + 1, None if where is None else where + step)

    if depth > 8:
        return None
    if isinstance(value, (bool, int, float, type(None))):
        return _number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else repr(value)
    if isinstance(value, (str, bytes)):
        return repr(value)
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return str(value)  # torch.float32
    if type(value).__module__ == "torch" and type(value).__name__ == "device":
        return f"torch.device({str(value)!r})"
    if type(value).__module__.startswith("torch") and hasattr(value, "shape") and hasattr(value, "dtype"):
        text = render_tensor(value)
        return where if where is not None and text.startswith("<") else text
    if type(value).__module__.startswith("numpy") and hasattr(value, "tolist"):
        return repr(value.tolist())
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # NamedTuple
        parts = [inner(getattr(value, f), f".{f}") for f in value._fields]
        if any(p is None for p in parts):
            return None
        return f"{type(value).__name__}(" + ", ".join(f"{f}={p}" for f, p in zip(value._fields, parts)) + ")"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f.name for f in dataclasses.fields(value)]
        parts = [inner(getattr(value, f), f".{f}") for f in fields]
        if any(p is None for p in parts):
            return None
        return f"{type(value).__name__}(" + ", ".join(f"{f}={p}" for f, p in zip(fields, parts)) + ")"
    if isinstance(value, (tuple, list, set, frozenset)):
        ordered = isinstance(value, (tuple, list))  # a set's members have no path
        parts = [inner(v, f"[{i}]") if ordered else render_value(v, depth + 1) for i, v in enumerate(value)]
        if any(p is None for p in parts):
            return None
        if isinstance(value, tuple):
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if isinstance(value, list):
            return "[" + ", ".join(parts) + "]"
        return "{" + ", ".join(parts) + "}" if parts else "set()"
    if isinstance(value, dict):
        items = [(render_value(k, depth + 1), inner(v, f"[{k!r}]") if isinstance(k, (str, int)) else
                  render_value(v, depth + 1)) for k, v in value.items()]
        if any(k is None or v is None for k, v in items):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    return None


def _fields_on_lines(value: Any, where: str | None = None) -> str | None:
    import dataclasses

    def part(item: Any, step: str) -> str | None:
        return render_value(item, 0, None if where is None else where + step)

    if isinstance(value, tuple) and hasattr(value, "_fields"):
        fields = list(value._fields)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f.name for f in dataclasses.fields(value)]
    elif isinstance(value, tuple):
        parts = [part(v, f"[{i}]") for i, v in enumerate(value)]
        return "(\n" + "".join(f"        {p},\n" for p in parts) + "    )" if None not in parts else None
    else:
        return None
    parts = [part(getattr(value, f), f".{f}") for f in fields]
    if None in parts:
        return None
    return f"{type(value).__name__}(\n" + "".join(f"        {f}={p},\n" for f, p in zip(fields, parts)) + "    )"


#: How a counterexample's tensor too large to write is read from the file ``specformer replay`` saves.
SAVED_COUNTEREXAMPLE = "saved['counterexample']"


def render_call(name: str, kwargs: Mapping[str, Any]) -> str | None:
    """``name(a=..., b=...)`` with every argument as Python, or ``None`` when one cannot be written so; a tensor
    too large to write reads ``saved['counterexample']['a']...`` (the file ``specformer replay`` saves)."""
    parts = []
    for key, value in kwargs.items():
        if type(value).__name__ == "Context":  # the implementation under test, shown beside the row
            continue
        where = f"{SAVED_COUNTEREXAMPLE}[{key!r}]"
        text = render_value(value, where=where)
        if text is None:
            return None
        if len(text) > 100:  # a case object: one field per line
            text = _fields_on_lines(value, where) or text
        parts.append(f"    {key}={text},")
    return "\n".join([f"{name}(", *parts, ")"])


def render_implementation_call(op: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """``impl.op(arg, ..., keyword=value)``: a call into the implementation as Python; an argument that
    cannot be written so shows as ``<...>`` (a glimpse, not pasteable)."""
    def shown(value: Any) -> str:
        text = render_value(value)
        return text if text is not None else f"<{type(value).__name__}>"

    parts = [shown(a) for a in args] + [f"{key}={shown(value)}" for key, value in kwargs.items()]
    call = f"impl.{op}({', '.join(parts)})"
    return "\n".join([*call_imports(call, [*args, *kwargs.values()]), call])


def call_imports(call: str, values: Sequence[Any]) -> list[str]:
    """The imports a printed call needs to run: ``import torch`` where it names torch, and the module of each
    dataclass or named tuple it builds (``from specformer.protocol.blocks import ModelConfig``)."""
    import dataclasses

    found: dict[str, set[str]] = {}

    def visit(value: Any, depth: int = 0) -> None:
        if depth > 8 or isinstance(value, (str, bytes, int, float, bool, type(None))):
            return
        named = isinstance(value, tuple) and hasattr(value, "_fields")
        if named or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
            kind = type(value)
            if re.search(rf"\b{kind.__name__}\(", call) and kind.__module__ not in ("builtins", "__main__"):
                found.setdefault(kind.__module__, set()).add(kind.__name__)
            inner = (getattr(value, f) for f in value._fields) if named else (
                getattr(value, f.name) for f in dataclasses.fields(value))
            for item in inner:
                visit(item, depth + 1)
        elif isinstance(value, (tuple, list, set, frozenset)):
            for item in value:
                visit(item, depth + 1)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item, depth + 1)

    for value in values:
        visit(value)
    lines = ["import torch"] if re.search(r"\btorch\.", call) else []
    return lines + [f"from {module} import {', '.join(sorted(names))}" for module, names in sorted(found.items())]


def _tensor_summary(inner: str) -> str | None:
    """``[[1., 2.], [3., 4.]], dtype=torch.float64`` -> ``shape (2, 2) float64: 1., 2., 3., ...``."""
    body, _, rest = inner.partition("]")
    depth = len(body) - len(body.lstrip("["))
    numbers = re.findall(r"-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)", inner.split("dtype=")[0].split("device=")[0])
    if not depth:
        return None
    dims, text = [], inner.split("dtype=")[0].split("device=")[0].strip().rstrip(",")
    level = text
    for _ in range(depth):  # the length of each level, counted at its first element
        level = level.strip()[1:]
        count, nest, i = 1, 0, 0
        while i < len(level):
            ch = level[i]
            if ch == "[":
                nest += 1
            elif ch == "]":
                if nest == 0:
                    break
                nest -= 1
            elif ch == "," and nest == 0:
                count += 1
            i += 1
        dims.append(count)
        level = level[:i]
    dtype = re.search(r"dtype=torch\.(\w+)", inner)
    shown = ", ".join(numbers[:SHOWN_ENTRIES]) + (", ..." if len(numbers) > SHOWN_ENTRIES else "")
    return f"<tensor shape {tuple(dims)} {dtype.group(1) if dtype else 'float32'}: {shown}>"


def shorten_tensors(text: str, longer_than: int = 120) -> str:
    """Every ``tensor(...)`` printout in ``text`` longer than ``longer_than`` characters as its shape,
    dtype and first values (a message quoting a whole tensor reads as a wall of numbers)."""
    out, pos = [], 0
    while True:
        start = text.find("tensor(", pos)
        if start < 0 or (start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.")):
            if start < 0:
                out.append(text[pos:])
                return "".join(out)
            out.append(text[pos:start + 7])
            pos = start + 7
            continue
        end = _matching_paren(text, start + len("tensor"))
        if end < 0:
            out.append(text[pos:])
            return "".join(out)
        whole = text[start:end + 1]
        short = _tensor_summary(text[start + 7:end]) if len(whole) > longer_than else None
        out += [text[pos:start], short or whole]
        pos = end + 1


def row_label(row: Mapping[str, Any]) -> str:
    """``implementation/device/dtype`` of a report row."""
    return f"{row.get('implementation')}/{row.get('device')}/{row.get('dtype')}"


def _reproduced_impl(command: str) -> str | None:
    """The ``--impl`` of a row's reproduction command when it is not a shipped name (a user's file or module)."""
    import shlex

    from specformer.adapters import BUILTIN

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    specs = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--impl"]
    return specs[0] if len(specs) == 1 and specs[0] not in BUILTIN else None


#: A tensor drawn from a seed, as :func:`render_tensor` writes it.
_SEEDED_EXPRESSION = re.compile(r"\(\(torch\.rand\(\([\d, ]*\), generator=torch\.Generator\(\)\.manual_seed\(\d+\), "
                                r"dtype=torch\.float64\) \* 2 - 1\) \* [-+\w.]+\)")
#: Where ``specformer replay`` saves a row's inputs unless told otherwise (its ``-o``).
REPLAY_DIR = "replay"


def replay_file(row: Mapping[str, Any], out_dir: str = REPLAY_DIR) -> str:
    """The file ``specformer replay`` writes a failing row's calls to (in ``out_dir``)."""
    name = re.sub(r"[^\w.-]+", "-", f"{row.get('property')}-{row.get('implementation')}-{row.get('device')}-"
                                   f"{row.get('dtype')}").strip("-")
    return f"{out_dir}/{name}.pt"


def _top_level_arguments(call: str) -> list[tuple[int, int, bool]] | None:
    """The ``(start, end, glimpse)`` spans of the arguments of the one-line call ``impl.op(...)``; ``glimpse``:
    the argument holds a ``<...>`` glimpse of a value too large to write (``None``: not a call read so)."""
    import io
    import tokenize

    open_at = call.find("(")
    spans: list[tuple[int, int, bool]] = []
    depth, start, glimpse = 0, open_at + 1, False
    try:
        for token in tokenize.generate_tokens(io.StringIO(call).readline):
            if token.type != tokenize.OP or token.start[1] < open_at or token.start[0] != 1:
                continue
            col = token.start[1]
            if token.string in ("(", "[", "{", "<"):  # a glimpse's <...> nests as a bracket does
                depth += 1
                glimpse = glimpse or token.string == "<"
            elif token.string in (")", "]", "}", ">"):
                depth -= 1
                if depth == 0:
                    if call[start:col].strip():
                        spans.append((start, col, glimpse))
                    return spans
            elif token.string == "," and depth == 1:
                spans.append((start, col, glimpse))
                start, glimpse = col + 1, False
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return None


def _saved_arguments(call: str, row: Mapping[str, Any]) -> list[str]:
    """The lines of a printed call whose arguments too large to write are read from the file ``specformer replay``
    saves (``saved['call']``, the same call), never shown as a ``<...>`` glimpse."""
    lines = call.splitlines()
    if not lines or "<" not in lines[-1]:
        return lines
    last = lines[-1]
    spans = _top_level_arguments(last)
    if not spans or not any(glimpse for _, _, glimpse in spans):
        return lines
    out, index = [], 0
    for start, end, glimpse in spans:
        text = last[start:end].strip()
        keyword = re.match(r"^(\w+)=(?!=)", text)
        if glimpse:
            text = (f"{keyword.group(1)}=saved['call']['kwargs'][{keyword.group(1)!r}]" if keyword else
                    f"saved['call']['args'][{index}]")
        index += 0 if keyword else 1
        out.append(text)
    rewritten = last[:last.find("(") + 1] + ", ".join(out) + ")"
    imports = [line for line in lines[:-1] if line != "import torch"]
    return ["import torch", *imports,
            f"saved = torch.load({replay_file(row)!r}, weights_only=False)  # `specformer replay REPORT ROW` writes it",
            rewritten]


def printed_call(row: Mapping[str, Any]) -> tuple[list[str], str | None]:
    """A failing row's call into its implementation as lines of Python, and its readable counterexample.

    Every value is written once: an argument too large to write is read from the file ``specformer
    replay`` saves (:func:`replay_file`: ``saved['call']``, ``saved['counterexample']``), and a tensor
    drawn from a seed that the counterexample holds too is written once, as a name the counterexample
    uses (``t1``).
    """
    example = readable_counterexample(row.get("counterexample"))
    lines = _saved_arguments(str(row["call"]), row) if row.get("call") else []
    named: dict[str, str] = {}
    for found in _SEEDED_EXPRESSION.finditer(lines[-1] if lines else ""):
        if example and found.group(0) in example and found.group(0) not in named:
            named[found.group(0)] = f"t{len(named) + 1}"
    for expression, name in named.items():
        lines[-1] = lines[-1].replace(expression, name)
        example = example.replace(expression, name) if example else example
    load = f"saved = torch.load({replay_file(row)!r}, weights_only=False)"
    if example and SAVED_COUNTEREXAMPLE in example and not any(line.startswith(load) for line in lines):
        example = f"{load}  # `specformer replay REPORT ROW` writes it\n{example}"
    if not lines:
        return [], example
    head = [line for line in lines[:-1] if line.startswith(("import ", "from "))]
    rest = [line for line in lines[:-1] if not line.startswith(("import ", "from "))]
    return [*head, *(f"{name} = {expression}" for expression, name in named.items()), *rest, lines[-1]], example


def failure_block(row: Mapping[str, Any], also: Sequence[Mapping[str, Any]] = (),
                  report: str | None = None) -> list[str]:
    """The lines that show one row that did not end as expected (see the module doc).

    ``also``: rows with the same failure on other devices or dtypes, shown in the same block.
    """
    labels = ", ".join(dict.fromkeys(f"{r.get('device')}/{r.get('dtype')}" for r in (row, *also)))
    lines = [f"{str(row.get('outcome', '?')).upper()}  {row.get('claim')}",
             f"  property: {row.get('property')}",
             f"  implementation: {row.get('implementation')} on {labels}" if also else
             f"  implementation: {row_label(row)}", *_same_error_lines((row, *also))]
    if row.get("original_outcome"):
        lines.append(f"  listed as a known deviation ({row.get('deviation_reason')}); it now ends "
                     f"{row.get('original_outcome')}")
    message = shorten_tensors(str(row.get("message") or "").strip())
    if message:
        lines += ["  message:", *(f"    {line}" for line in message.splitlines())]
    call, example = printed_call(row)
    if call:
        lines += [f"  the failing call into {row.get('implementation')} (the first whose answer differs from the "
                  "reference's; else the last one made), as Python:", *(f"    {line}" for line in call)]
    if example:
        lines += ["  counterexample:", *(f"    {line}" for line in shorten_tensors(example, 400).splitlines())]
    output = str(row.get("output") or "").rstrip()
    if output:
        lines += ["  its output (stdout and stderr):", *(f"    | {line}" for line in output.splitlines()[-20:])]
    if row.get("seed") is not None:
        lines.append(f"  seed: {row['seed']}")
    if row.get("reproduce"):
        lines.append(f"  reproduce: {row['reproduce']}")
    command = replay_command(row, report) if report else None
    if command:
        lines.append(f"  its inputs, for your REPL: {command}")
    return lines


def replay_command(row: Mapping[str, Any], report: str) -> str | None:
    """``specformer replay REPORT 'property[impl/device/dtype]' [--impl FILE]``, which saves a failing row's inputs
    (:func:`replay_file`), or ``None`` for a row without a call into an implementation."""
    import shlex

    if not row.get("call") or row.get("outcome") not in ("fail", "error") or row.get("implementation") == "math":
        return None
    label = f"{row.get('property')}[{row.get('implementation')}/{row.get('device')}/{row.get('dtype')}]"
    impl = _reproduced_impl(str(row.get("reproduce") or ""))  # replay imports only what the command line names
    return (f"specformer replay {shlex.quote(report)} {shlex.quote(label)}"
            + (f" --impl {shlex.quote(impl)}" if impl else ""))


def _failure_key(row: Mapping[str, Any]) -> tuple[str, ...]:
    """Rows with equal keys show one failure: same property, implementation, outcome and message
    up to its numbers (the tolerances and the values differ between dtypes). An error with the
    same message is one failure whatever property met it (one signature mistake, one missing
    attribute, errs in every row that calls the operation)."""
    message = re.sub(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?", "#", str(row.get("message") or ""))
    if row.get("outcome") == "error":
        return ("", "", str(row.get("implementation")), "error", message)
    return (str(row.get("claim")), str(row.get("property")), str(row.get("implementation")),
            str(row.get("outcome")), message)


def _same_error_lines(group: Sequence[Mapping[str, Any]], shown: int = 6) -> list[str]:
    """For one error met by several properties: ``  the same error in 9 rows: ...`` (a few named)."""
    if len({r.get("property") for r in group}) < 2:
        return []
    names = [f"{r.get('claim')} {r.get('property')} [{r.get('device')}/{r.get('dtype')}]" for r in group]
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return [f"  the same error in {len(group)} rows: {'; '.join(names[:shown])}{more}"]


def grouped_failures(rows: Iterable[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The rows not as expected, the same failure on several devices or dtypes in one group."""
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        if not row["as_expected"]:
            groups.setdefault(_failure_key(row), []).append(row)
    return list(groups.values())


_CALLED = re.compile(r"^\s*impl\.(\w+)\(", re.MULTILINE)


def failed_operation(row: Mapping[str, Any]) -> str | None:
    """The operation a failing row's printed call went into (``layer_norm``), or else the most composite
    operation the row called (from its recorded shapes); ``None`` when neither says."""
    from specformer.protocol.dependencies import rank

    called = _CALLED.search(str(row.get("call") or ""))
    if called:
        return called.group(1)
    shapes = row.get("shapes")
    if isinstance(shapes, Mapping) and shapes:
        return max(map(str, shapes), key=lambda op: (rank(op), op))
    return None


def _block_size(group: Sequence[Mapping[str, Any]]) -> int:
    row = group[0]
    return sum(len(str(row.get(key) or "")) for key in ("message", "call", "counterexample"))


def ordered_failures(groups: Sequence[Sequence[Mapping[str, Any]]]
                     ) -> list[tuple[Sequence[Mapping[str, Any]], list[Sequence[Mapping[str, Any]]]]]:
    """Failure groups in the order of their causes, each with the groups folded under it.

    An operation's parts come first (:func:`specformer.protocol.dependencies.rank`: ``layer_norm`` before
    ``encoder_layer`` before ``encoder_stack``), then shorter blocks. A group whose operation is usually built
    from an operation that fails on its own in the same implementation is folded under that part's block
    (the part of lowest rank), not shown in full: its failure most likely follows from the part's.
    """
    from specformer.protocol.dependencies import parts_of, rank

    operation = {id(group): failed_operation(group[0]) for group in groups}  # once per group

    def key(group: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
        op = operation[id(group)]
        return (rank(op) if op else 99, _block_size(group))

    ordered = sorted(groups, key=key)
    first_of: dict[tuple[str, str], Sequence[Mapping[str, Any]]] = {}
    for group in ordered:
        op = operation[id(group)]
        if op is not None:
            first_of.setdefault((str(group[0].get("implementation")), op), group)
    out: list[tuple[Sequence[Mapping[str, Any]], list[Sequence[Mapping[str, Any]]]]] = []
    folded: dict[int, list[Sequence[Mapping[str, Any]]]] = {}
    for group in ordered:
        op, impl = operation[id(group)], str(group[0].get("implementation"))
        failing_parts = sorted((part for part in parts_of(op) if (impl, part) in first_of) if op else (),
                               key=lambda part: (rank(part), part))
        if failing_parts:
            folded.setdefault(id(first_of[impl, failing_parts[0]]), []).append(group)
        else:
            out.append((group, []))
    return [(group, folded.get(id(group), [])) for group, _ in out]


def folded_lines(part: str, folded: Sequence[Sequence[Mapping[str, Any]]], shown: int = 6) -> list[str]:
    """The line that names the failures folded under a failing part's block."""
    rows = [row for group in folded for row in group]
    ops = ", ".join(dict.fromkeys(str(failed_operation(group[0])) for group in folded))
    names = [f"{r.get('claim')} {r.get('property')} [{r.get('device')}/{r.get('dtype')}]" for r in rows]
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return [f"  and {len(rows)} row{'s' if len(rows) > 1 else ''} of {ops}, which may call the failing {part} "
            f"(fix it first; the report has each): {'; '.join(names[:shown])}{more}"]


def fixed_lines(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per ``fixed`` row: a deviation entry that no longer deviates (prune it)."""
    return [f"  fixed: {r.get('claim')} {r.get('property')} [{row_label(r)}] (listed: {r.get('deviation_reason')})"
            for r in rows if r.get("outcome") == "fixed"]


#: What each letter of the progress line means (pytest prints a letter per row as it ends).
LEGEND = ("progress letters: . pass, r refuted (a counterexample to a claim that is false as written: expected), "
          "s not applicable or skipped, x known deviation, X fixed, ? inconclusive, F fail, E error")
#: What a count names, where the word alone may mislead.
_MEANING = {"refuted": "refuted (as expected)", "not-applicable": "not applicable"}


def _counts(rows: Iterable[Mapping[str, Any]], explained: bool = False) -> str:
    counts = sorted(Counter(str(r["outcome"]) for r in rows).items())
    return ", ".join(f"{n} {_MEANING.get(o, o) if explained else o}" for o, n in counts)


def _provides_line(impl: Mapping[str, Any], families: Iterable[str] | None,
                   family_operations: Mapping[str, Sequence[str]] | None = None,
                   whole_families: bool = True) -> str | None:
    """One line naming what an implementation does not provide, of the families the run selected.

    ``whole_families=False`` (a run of several implementations) leaves out the families it
    provides nothing of: the other implementations are there for them.
    """
    omitted = [f for f in impl.get("omitted_families", []) if families is None or f in families]
    provided = set(impl.get("operations", []))
    partly = []
    for family, ops in sorted((family_operations or {}).items()):
        if (families is None or family in families) and family not in omitted:
            partly += [op for op in ops if op not in provided]
    parts = partly + [f"the {family} family" for family in omitted if whole_families]
    if not parts:
        return None
    return f"  –   {impl['name']} does not provide: {', '.join(parts)} (its rows are not applicable or absent)"


_MISSING = re.compile(r" does not provide: ([\w, ]+)$")


def cross_family_lines(claims: Mapping[str, Sequence[Mapping[str, Any]]],
                       family_operations: Mapping[str, Sequence[str]] | None) -> list[str]:
    """For claims that no row could check, the ones held back by an operation of *another* family than the
    claim's (``alibi.no-position-embeddings`` needs ``count_parameters`` of the blocks family): a run of one
    family's implementation never runs them, and the line says which operation would."""
    family_of = {op: family for family, ops in (family_operations or {}).items() for op in ops}
    out = []
    for claim, rows in sorted(claims.items()):
        missing: dict[str, str] = {}
        for row in rows:
            found = _MISSING.search(str(row.get("message") or ""))
            for op in (found.group(1).split(", ") if found else []):
                family = family_of.get(op.strip())
                if family is not None and family != row.get("family"):
                    missing[op.strip()] = family
        if missing:
            needed = ", ".join(f"{op} (the {family} family)" for op, family in sorted(missing.items()))
            out.append(f"  –   {claim} also needs {needed}: provide it too, in the same implementation, "
                       "to run this claim")
    return out


def shapes_line(name: str, rows: Sequence[Mapping[str, Any]]) -> str | None:
    """How many distinct tensor shapes an implementation's operations were called with per row (what jitted
    code compiles once each), or ``None`` when its rows made no call."""
    counts = []
    for row in rows:
        if row.get("implementation") != name or not isinstance(row.get("shapes"), Mapping):
            continue
        for op, seen in row["shapes"].items():
            count = seen.get("count") if isinstance(seen, Mapping) else None
            if type(count) is int:
                counts.append((count, str(op), str(row.get("property", "")), f"{row.get('device')}/{row.get('dtype')}"))
    if not counts:
        return None
    most = max(counts)
    mean = sum(c[0] for c in counts) / len(counts)
    return (f"  –   {name}: {mean:.1f} distinct tensor shapes per operation per row on average, at most {most[0]} "
            f"({most[1]} in {most[2]} [{most[3]}]); jitted code compiles once per shape")


def _failure_lines(bad_rows: Sequence[Mapping[str, Any]], report: str | None) -> list[tuple[str, dict[str, bool]]]:
    """The count of rows not as expected and one block per distinct failure."""
    groups = grouped_failures(bad_rows)
    same = (f" ({len(groups)} distinct failure{'s' if len(groups) > 1 else ''})"
            if len(groups) < len(bad_rows) else "")
    out = [(f"{len(bad_rows)} rows did not end as expected{same}:", {"red": True, "bold": True})]
    for group, folded in ordered_failures(groups):
        lines = failure_block(group[0], group[1:], report)
        if folded:
            lines += folded_lines(str(failed_operation(group[0])), folded)
        out += [("", {}), *((line, {}) for line in lines)]
    return out


def unchecked_lines(unchecked: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, bool]]]:
    """One line per implementation named with ``--impl`` that had no row checked, with the most common
    reason its rows give (a declaration that excludes this machine's devices or dtypes, most often)."""
    out: list[tuple[str, dict[str, bool]]] = []
    for name in unchecked:
        own = [r for r in rows if r.get("implementation") == name]
        if not own:
            out.append((f"FAIL  {name}: no row was checked: the selection has no row for its operations", {"red": True}))
            continue
        reasons = Counter(str(r.get("message") or r.get("outcome")).split("\n")[0][:200] for r in own)
        reason, count = reasons.most_common(1)[0]
        out.append((f"FAIL  {name}: no row was checked: all {len(own)} of its rows were not applicable or skipped "
                    f"({count} say: {reason})", {"red": True}))
    return out


def summary_lines(rows: Sequence[Mapping[str, Any]], impls: Sequence[Mapping[str, Any]], done: bool,
                  expected_rows: int | None, families: Iterable[str] | None = None,
                  math_left_out: int = 0, family_operations: Mapping[str, Sequence[str]] | None = None,
                  report: str | None = None, failures_first: bool = False,
                  sharded: bool = False) -> list[tuple[str, dict[str, bool]]]:
    """The summary of a run as ``(line, markup)`` pairs (markup: pytest's ``red``, ``green``, ``bold``...).

    ``families``: the families the selection touched (lines about the others are left out);
    ``math_left_out``: selected properties that call no implementation and were not run;
    ``failures_first``: the failure blocks before the claim lines (a user's ``--impl`` run, where
    the first screen should show what broke). Claims whose every row is not applicable are
    counted on one line, not listed. An implementation named with ``--impl`` that had no row
    checked fails the run, on a line that says why (``sharded``: a shard holds part of the rows, and
    its merge decides).
    """
    families = None if families is None else sorted(families)
    out: list[tuple[str, dict[str, bool]]] = []
    bad_rows = [r for r in rows if not r["as_expected"]]
    if failures_first and bad_rows:
        out += [*_failure_lines(bad_rows, report), ("", {})]
    by_claim: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_claim.setdefault(str(row["claim"]), []).append(row)
    inapplicable = [c for c, claim_rows in by_claim.items() if all(r["outcome"] == "not-applicable" for r in claim_rows)]
    for claim, claim_rows in sorted(by_claim.items()):
        if claim in inapplicable:
            continue
        bad = any(not r["as_expected"] for r in claim_rows)
        out.append((f"{'FAIL' if bad else ' ok '}  {claim:48s} {_counts(claim_rows)}", {"red": bad}))
    if inapplicable:
        out.append((f"  –   {len(inapplicable)} claim{'s' if len(inapplicable) != 1 else ''} entirely not applicable "
                    "(the implementations lack their operations, dtypes or conventions; the report has each row)", {}))
        out += [(line, {}) for line in cross_family_lines({c: by_claim[c] for c in inapplicable}, family_operations)]
    for impl in impls:
        if impl["status"] != "loaded":
            out.append((f"FAIL  implementation {impl['spec']!r} could not be loaded: {impl['message']}", {"red": True}))
        line = (_provides_line(impl, families, family_operations, whole_families=len(impls) == 1)
                if impl["status"] == "loaded" else None)
        if line:
            out.append((line, {}))
        shapes = shapes_line(impl["name"], rows) if impl["status"] == "loaded" else None
        if shapes:
            out.append((shapes, {}))
        for note in impl.get("protocol_notes") or ():  # operations written before a protocol change
            out.append((f"  –   {impl['name']}: {note}", {}))
    if math_left_out:
        out.append((f"  –   {math_left_out} selected properties call no implementation and were not run "
                    "(they run in the suite's own run; add --with-math to run them here)", {}))
    if bad_rows and not failures_first:
        out += [("", {}), *_failure_lines(bad_rows, report)]
    fixed = fixed_lines(rows)
    if fixed:
        out += [("", {}), (f"{len(fixed)} listed deviations no longer deviate; remove their entries from the "
                           "deviations file:", {"yellow": True}), *((line, {}) for line in fixed)]
    from specformer.runner.row import unchecked_implementations

    unchecked = unchecked_implementations(rows, impls) if done and not sharded else []
    out += unchecked_lines(unchecked, rows)
    ok = done and not bad_rows and not unchecked and all(i["status"] == "loaded" for i in impls)
    unloaded = [i["spec"] for i in impls if i["status"] != "loaded"]
    verdict = ("every claim ended as expected" if ok else
               f"{', '.join(unloaded)} could not be loaded (see above)" if done and unloaded and not rows else
               f"NOTHING OF {', '.join(unchecked)} WAS CHECKED" if done and unchecked and not bad_rows else
               "SOME CLAIMS DID NOT END AS EXPECTED" if done else
               f"THE RUN DID NOT COMPLETE ({len(rows)} of {expected_rows or '?'} rows ran)")
    out += [("", {}), (LEGEND, {}),
            (f"{len(by_claim)} claims, {len(rows)} rows: {_counts(rows, explained=True) or 'none'} — {verdict}",
             {"green": ok, "red": not ok, "bold": True})]
    return out
