"""What crosses from an implementation's worker back to the checker: plain data only.

The worker runs untrusted code, so its answers are decoded by a strict codec that can
only build plain values: ``None``, booleans, integers, floats, strings, bytes, lists,
tuples, dicts and :class:`WireTensor` (a plain CPU ``torch.Tensor`` with the dtype, shape
and device the implementation's tensor had). Nothing is unpickled, no class of the
implementation's is instantiated, and a tensor subclass comes back as the plain tensor
of its bytes. Anything else arrives as :class:`Opaque`, naming its type.

A message is ``8-byte header length | JSON header | tensor and bytes data``. The header
is a tree of JSON values in which containers and tensors are tagged objects
(``{"$t": "tensor", "dtype": ..., "shape": ..., "at": offset, "n": nbytes}``).
:func:`decode` checks every tag, dtype, shape and byte range and raises
:class:`WireError` on anything malformed.

Requests in the other direction (checker to worker) are pickled, since the checker is
trusted, with every tensor first replaced by a :class:`PackedTensor` (its raw bytes):
pickling torch tensors directly costs half a millisecond each. This module does not
talk to processes; :mod:`specformer.runner.worker` does.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
import re
import struct
from dataclasses import dataclass
from typing import Any

import torch

#: dtypes a returned tensor may have (their names as ``str(dtype)`` without ``torch.``).
DTYPES: dict[str, torch.dtype] = {
    name: getattr(torch, name)
    for name in ("float64", "float32", "float16", "bfloat16", "complex64", "complex128", "int64", "int32",
                 "int16", "int8", "uint8", "bool")
}
#: Deepest nesting of containers accepted in an answer.
MAX_DEPTH = 32
#: Longest string kept from an answer (longer ones are cut, with a note).
MAX_STRING = 100_000
_HEADER = struct.Struct("<Q")


class WireError(ValueError):
    """An answer that is not a well-formed message of this codec."""


@dataclass(frozen=True)
class WireTensor:
    """A tensor as the implementation returned it: its data as a plain CPU tensor.

    ``device`` is where the implementation's tensor lived (``"cpu"``, ``"cuda:0"``,
    ``"meta"``); ``data`` is ``None`` when its values could not be read (a meta tensor),
    with ``problem`` saying why. ``type_name`` is the class the implementation used.
    """

    data: torch.Tensor | None
    dtype: str
    shape: tuple[int, ...]
    device: str
    type_name: str = "Tensor"
    problem: str = ""


@dataclass(frozen=True)
class Opaque:
    """A value of a type the codec does not carry; only its type's name crossed."""

    type_name: str


# -- encoding (in the worker) ----------------------------------------------------------


#: torch dtype -> its name here.
DTYPE_NAMES: dict[torch.dtype, str] = {d: name for name, d in DTYPES.items()}
#: Bytes per element of each carried dtype.
ITEMSIZE: dict[str, int] = {name: torch.empty((), dtype=d).element_size() for name, d in DTYPES.items()}
_NUMPY_DTYPES = frozenset({torch.float64, torch.float32, torch.float16, torch.int64, torch.int32, torch.int16,
                           torch.int8, torch.uint8, torch.complex64, torch.complex128})
_ATOMS = (str, int, float, bool, type(None), bytes)
_ATOM_TYPES = frozenset(_ATOMS)
_SEQUENCES = frozenset({list, tuple})


def plain(value: Any, depth: int = 3) -> bool:
    """Whether ``value`` holds nothing but atoms (str, bytes, int, float, bool, None) in exact lists, tuples
    and dicts, ``depth`` levels deep at most: nothing a tensor walk needs to enter.

    The check looks at element types with ``map(type, ...)`` and sets, in C, not element by element in
    Python: a corpus of thousands of words or a list of thousands of BPE merges is checked in
    microseconds, where :func:`rebuild` and a tensor walk would visit every element. ``False`` says only
    that the value may hold something else.
    """
    kind = type(value)
    if kind in _ATOM_TYPES:
        return True
    if kind is dict:
        if not set(map(type, value)) <= _ATOM_TYPES:
            return False
        value = value.values()
    elif kind not in _SEQUENCES:
        return False
    types = set(map(type, value))
    if types <= _ATOM_TYPES:
        return True
    if depth <= 0 or not types <= _ATOM_TYPES | _SEQUENCES:
        return False
    nested = [item for item in value if type(item) in _SEQUENCES]
    return plain(list(itertools.chain.from_iterable(nested)), depth - 1)
#: A UTF-16 surrogate code point: such strings cross as UTF-32 code units, each surrogate kept alone.
_SURROGATE = re.compile("[\ud800-\udfff]")


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The tensor's values as raw bytes (C order), ignoring any subclass behaviour."""
    if type(t) is torch.Tensor and t.dtype in _NUMPY_DTYPES and t.device.type == "cpu" and not t.requires_grad:
        return t.numpy().tobytes()
    with torch._C.DisableTorchFunctionSubclass():
        plain = t.detach().to("cpu").contiguous().reshape(-1)  # (*shape) -> (numel,)
        if plain.dtype == torch.bool:
            plain = plain.to(torch.uint8)
        return plain.view(torch.uint8).numpy().tobytes() if plain.numel() else b""


def encode(value: Any) -> bytes:
    """``value`` as a message; unsupported objects become :class:`Opaque` nodes."""
    blobs: list[bytes] = []
    size = [0]

    def blob(data: bytes) -> dict[str, int]:
        at = size[0]
        blobs.append(data)
        size[0] += len(data)
        return {"at": at, "n": len(data)}

    def node(x: Any, depth: int) -> Any:
        if type(x) is str and _SURROGATE.search(x):
            # JSON would join a high and a low surrogate that stand next to each other into one character
            cut = x if len(x) <= MAX_STRING else x[:MAX_STRING] + " [cut]"
            return {"$t": "str", **blob(cut.encode("utf-32-le", "surrogatepass"))}
        if x is None or type(x) in (bool, str, int):
            return x
        if depth > MAX_DEPTH:
            return {"$t": "object", "type": f"nesting deeper than {MAX_DEPTH}"}
        if type(x) is float:
            return x if math.isfinite(x) else {"$t": "float", "v": repr(x)}
        if isinstance(x, torch.Tensor):
            dtype = DTYPE_NAMES.get(x.dtype) or str(x.dtype).removeprefix("torch.")
            device = x.device
            info = {"$t": "tensor", "dtype": dtype, "shape": list(x.shape),
                    "device": device.type if device.index is None else f"{device.type}:{device.index}",
                    "class": type(x).__qualname__}
            try:
                return {**info, **blob(tensor_bytes(x))}
            except Exception as exc:  # a meta tensor, a sparse layout, a subclass that refuses
                return {**info, "problem": f"its values cannot be read ({type(exc).__name__}: {exc})"[:500]}
        if isinstance(x, (bytes, bytearray)):
            return {"$t": "bytes", **blob(bytes(x))}
        if isinstance(x, (int, float)):  # numpy scalars and other int/float subclasses
            return node(int(x) if isinstance(x, int) else float(x), depth)
        if isinstance(x, list):
            return {"$t": "list", "v": [node(i, depth + 1) for i in x]}
        if isinstance(x, tuple):  # NamedTuples (AttentionOutput) become plain tuples
            return {"$t": "tuple", "v": [node(i, depth + 1) for i in x]}
        if isinstance(x, dict):
            return {"$t": "dict", "v": [[node(k, depth + 1), node(v, depth + 1)] for k, v in x.items()]}
        return {"$t": "object", "type": type(x).__qualname__}

    header = json.dumps(node(value, 0)).encode("utf-8")
    return _HEADER.pack(len(header)) + header + b"".join(blobs)


# -- decoding (in the checker) ---------------------------------------------------------


def _from_bytes(raw: bytes | memoryview, dtype: str, shape: tuple[int, ...]) -> torch.Tensor:
    """A tensor that owns a copy of ``raw``, read as ``dtype`` values in C order."""
    torch_dtype = DTYPES[dtype]
    if not len(raw):
        return torch.empty(shape, dtype=torch_dtype)
    flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8 if torch_dtype == torch.bool else torch_dtype)
    if torch_dtype == torch.bool:
        flat = flat != 0  # any non-zero byte is True, as torch reads a bool
    return flat.reshape(shape)  # (numel,) -> shape


def _int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(type(i) is int and i >= 0 for i in value) or len(value) > 64:
        raise WireError(f"{what} must be a list of at most 64 non-negative integers")
    return value


def decode(message: bytes) -> Any:
    """The value a message carries, built from plain types only; :class:`WireError` if malformed."""
    if len(message) < _HEADER.size:
        raise WireError("message shorter than its header")
    (length,) = _HEADER.unpack_from(message)
    if length > len(message) - _HEADER.size:
        raise WireError("header length exceeds the message")
    data = memoryview(message)[_HEADER.size + length:]
    try:
        tree = json.loads(bytes(message[_HEADER.size:_HEADER.size + length]).decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise WireError(f"header is not JSON: {exc}") from None

    def chunk(n: dict[str, Any]) -> memoryview:
        at, size = n.get("at"), n.get("n")
        if type(at) is not int or type(size) is not int or at < 0 or size < 0 or at + size > len(data):
            raise WireError("data range outside the message")
        return data[at:at + size]

    def tensor(n: dict[str, Any]) -> WireTensor:
        dtype, device, cls = n.get("dtype"), n.get("device"), n.get("class", "Tensor")
        if not all(isinstance(s, str) and len(s) < 200 for s in (dtype, device, cls)):
            raise WireError("tensor dtype, device and class must be short strings")
        shape = tuple(_int_list(n.get("shape"), "tensor shape"))
        problem = n.get("problem")
        if problem is not None:
            return WireTensor(None, dtype, shape, device, cls, str(problem)[:500])
        if dtype not in DTYPES:
            return WireTensor(None, dtype, shape, device, cls, f"dtype {dtype} is not carried")
        raw = chunk(n)
        numel = math.prod(shape)
        if len(raw) != numel * ITEMSIZE[dtype]:
            raise WireError(f"tensor of shape {shape} and dtype {dtype} needs {numel * ITEMSIZE[dtype]} bytes, "
                            f"got {len(raw)}")
        return WireTensor(_from_bytes(raw, dtype, shape), dtype, shape, device, cls)

    def build(n: Any, depth: int) -> Any:
        if n is None or type(n) in (bool, int, float):
            return n
        if depth > MAX_DEPTH + 1:
            raise WireError(f"nesting deeper than {MAX_DEPTH}")
        if isinstance(n, str):
            return n if len(n) <= MAX_STRING else n[:MAX_STRING] + " [cut]"
        if not isinstance(n, dict) or not isinstance(n.get("$t"), str):
            raise WireError(f"untagged {type(n).__name__} in the header")
        tag = n["$t"]
        if tag == "tensor":
            return tensor(n)
        if tag == "float":
            if n.get("v") not in ("nan", "inf", "-inf"):
                raise WireError("a tagged float must be nan, inf or -inf")
            return float(n["v"])
        if tag == "bytes":
            return bytes(chunk(n))
        if tag == "str":
            raw = bytes(chunk(n))
            if len(raw) % 4:
                raise WireError("a tagged str must hold whole UTF-32 code units")
            try:
                return raw.decode("utf-32-le", "surrogatepass")
            except UnicodeDecodeError as exc:
                raise WireError(f"a tagged str is not UTF-32: {exc}") from None
        if tag == "object":
            return Opaque(str(n.get("type"))[:200])
        items = n.get("v")
        if not isinstance(items, list):
            raise WireError(f"{tag} without a list of items")
        if tag == "list":
            return [build(i, depth + 1) for i in items]
        if tag == "tuple":
            return tuple(build(i, depth + 1) for i in items)
        if tag == "dict":
            if not all(isinstance(p, list) and len(p) == 2 for p in items):
                raise WireError("dict items must be pairs")
            out = {}
            for k, v in items:
                key = build(k, depth + 1)
                if not isinstance(key, (str, bytes, int, float, bool, type(None), tuple)):
                    raise WireError(f"unhashable dict key of type {type(key).__name__}")
                out[key] = build(v, depth + 1)
            return out
        raise WireError(f"unknown tag {tag!r}")

    return build(tree, 0)


def describe(value: Any) -> str:
    """A short type description of a decoded value, for messages (``list``, ``Tensor``...)."""
    if isinstance(value, WireTensor):
        return value.type_name
    if isinstance(value, Opaque):
        return value.type_name
    return type(value).__name__


# -- requests (checker to worker) --------------------------------------------------------


@dataclass(frozen=True)
class PackedTensor:
    """A tensor's dtype, shape and raw bytes, for pickling into a request."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes


def _tensor(value: Any) -> bool:
    return isinstance(value, (torch.Tensor, PackedTensor))


def rebuild(value: Any, convert: Any, memo: dict[int, Any] | None = None, leaf: Any = _tensor) -> Any:
    """``value`` with ``convert`` applied to its tensors (and packed tensors; or to what ``leaf`` picks);
    tuples, lists, dicts and dataclasses rebuilt around them, shared objects kept shared."""
    memo = {} if memo is None else memo
    if isinstance(value, _ATOMS):
        return value
    if id(value) in memo:
        return memo[id(value)]
    if type(value) in _SEQUENCES and plain(value):  # nothing to convert inside: a shallow copy
        out: Any = type(value)(value)
    elif leaf(value):
        out = convert(value)
    elif isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
        out = type(value)(*(rebuild(v, convert, memo, leaf) for v in value))
    elif isinstance(value, (tuple, list)):
        out = type(value)(rebuild(v, convert, memo, leaf) for v in value)
    elif isinstance(value, dict):
        out = {k: rebuild(v, convert, memo, leaf) for k, v in value.items()}
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = copy.copy(value)  # no __post_init__: a packed field is not a tensor
        for f in dataclasses.fields(value):
            object.__setattr__(out, f.name, rebuild(getattr(value, f.name), convert, memo, leaf))
    else:
        out = value
    memo[id(value)] = out
    return out


def pack(value: Any) -> Any:
    """``value`` with every tensor replaced by a :class:`PackedTensor` (a copy of its values)."""
    def convert(t: Any) -> Any:
        if isinstance(t, PackedTensor):
            return t
        return PackedTensor(DTYPE_NAMES.get(t.dtype) or str(t.dtype).removeprefix("torch."), tuple(t.shape),
                            tensor_bytes(t))
    return rebuild(value, convert, {})


def unpack(value: Any) -> Any:
    """The inverse of :func:`pack`: fresh CPU tensors that own their memory."""
    if isinstance(value, PackedTensor):
        return _from_bytes(value.data, value.dtype, value.shape)
    return rebuild(value, lambda p: p if isinstance(p, torch.Tensor) else _from_bytes(p.data, p.dtype, p.shape))
