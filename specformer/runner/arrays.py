"""Arrays of other libraries in and out of an implementation's calls: NumPy, JAX, CuPy, MLX.

An implementation declares its array library once, ``Capabilities(arrays="jax")`` (or
``"numpy"``, ``"cupy"``, ``"mlx"``; ``"torch"``, the default, converts nothing). Its worker
then, for every call:

* gives it each tensor argument as that library's array, on the row's device and in the
  tensor's dtype (bfloat16 included), and each ``torch.dtype`` argument as that library's
  dtype (:func:`to_library`);
* takes back, anywhere in the answer (tuples, lists, dicts, NamedTuples such as
  ``AttentionOutput``), any array that supports ``__dlpack__`` or ``__array__``, as a torch
  tensor with the same dtype, shape and device (:func:`from_library`).

What cannot be converted is said, never guessed: NumPy holds no bfloat16 without the
``ml_dtypes`` package; JAX holds no float64 unless ``jax_enable_x64`` is on (int64 inputs,
token ids and positions, become JAX's own int32 then, as ``jnp.asarray`` would make them);
NumPy and MLX arrays live on the CPU, CuPy arrays on CUDA (a row on another device is
outside the declaration: :meth:`specformer.protocol.Capabilities.outside`). Each raises
:class:`ArrayConversionError` with the problem named, which the worker answers as the
call's failure.

The library is imported in the worker on the first call that needs it, never in the
checker. This module decides no outcome.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from specformer.runner.wire import rebuild

#: The array libraries an implementation may declare; ``torch`` converts nothing.
LIBRARIES = ("torch", "numpy", "jax", "cupy", "mlx")
#: Where each library's arrays live: a row on another device type is outside the declaration.
DEVICES: dict[str, frozenset[str]] = {
    "numpy": frozenset({"cpu"}),
    "mlx": frozenset({"cpu"}),
    "cupy": frozenset({"cuda"}),
}
#: Dtypes the suite passes, by their names in every library.
_DTYPE_NAMES = {torch.float64: "float64", torch.float32: "float32", torch.float16: "float16",
                torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32", torch.int16: "int16",
                torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool", torch.complex64: "complex64",
                torch.complex128: "complex128"}
_TORCH_DTYPES = {name: dtype for dtype, name in _DTYPE_NAMES.items()}


class ArrayConversionError(TypeError):
    """A value that cannot cross between torch and the declared array library; the message says why."""


def _module(library: str) -> Any:
    name = {"jax": "jax.numpy", "mlx": "mlx.core"}.get(library, library)
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ArrayConversionError(f"the implementation declares arrays={library!r}, but {name} cannot be "
                                   f"imported here ({exc})") from None


def _jax_x64() -> bool:
    import jax

    return bool(jax.config.read("jax_enable_x64"))


def _numpy_dtype(name: str) -> Any:
    import numpy as np

    if name != "bfloat16":
        return np.dtype(name)
    try:
        import ml_dtypes
    except ImportError:
        raise ArrayConversionError("NumPy has no bfloat16 without the ml_dtypes package: install ml_dtypes, or "
                                   "declare dtypes without bfloat16") from None
    return np.dtype(ml_dtypes.bfloat16)


def library_dtype(dtype: torch.dtype, library: str) -> Any:
    """``dtype`` as ``library``'s dtype (``torch.float32`` -> ``jnp.float32``, ``np.dtype('float32')``)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        raise ArrayConversionError(f"{dtype} has no counterpart in {library}")
    if library in ("numpy", "cupy"):
        return _numpy_dtype(name)
    if library == "jax":
        if name == "float64" and not _jax_x64():
            raise _no_x64()
        jnp = _module("jax")
        return getattr(jnp, "int32" if name == "int64" and not _jax_x64() else name)
    if library == "mlx":
        mx = _module("mlx")
        if not hasattr(mx, name):
            raise ArrayConversionError(f"MLX has no {name}")
        return getattr(mx, name)
    raise ArrayConversionError(f"no array library {library!r}; known: {', '.join(LIBRARIES)}")


def _no_x64() -> ArrayConversionError:
    return ArrayConversionError("JAX holds no float64 while jax_enable_x64 is off: call "
                                "jax.config.update('jax_enable_x64', True) where the implementation is imported, or "
                                "declare dtypes without float64")


def _numpy_of(t: torch.Tensor) -> Any:
    """A CPU tensor as a NumPy array sharing its memory (bfloat16 through ml_dtypes)."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.uint16).numpy().view(_numpy_dtype("bfloat16"))
    return t.numpy()


def tensor_to(t: torch.Tensor, library: str) -> Any:
    """One tensor as an array of ``library``, on the tensor's device, in its dtype."""
    t = t.detach()
    if library == "numpy":
        if t.device.type != "cpu":
            raise ArrayConversionError(f"NumPy arrays live on the CPU; this tensor is on {t.device}")
        return _numpy_of(t)
    if library == "jax":
        jnp = _module("jax")
        if t.dtype == torch.float64 and not _jax_x64():
            raise _no_x64()
        if t.dtype == torch.int64 and not _jax_x64():
            t = t.to(torch.int32)  # JAX's own integer without x64; token ids and positions fit
        try:
            return jnp.from_dlpack(t.contiguous())
        except Exception:  # noqa: BLE001 - a JAX without this device: through the host
            if t.device.type != "cpu":
                raise ArrayConversionError(f"JAX could not take a tensor on {t.device} (is a JAX build for that "
                                           "device installed?)") from None
            return jnp.asarray(_numpy_of(t.contiguous()))
    if library == "cupy":
        cupy = _module("cupy")
        if t.dtype == torch.bfloat16:
            raise ArrayConversionError("CuPy has no bfloat16: declare dtypes without bfloat16")
        return cupy.from_dlpack(t.contiguous())
    if library == "mlx":
        mx = _module("mlx")
        if t.dtype == torch.bfloat16:
            return mx.array(t.to(torch.float32).numpy()).astype(mx.bfloat16)
        return mx.array(t.numpy())
    raise ArrayConversionError(f"no array library {library!r}; known: {', '.join(LIBRARIES)}")


def to_library(value: Any, library: str) -> Any:
    """``value`` (a call's arguments) with its tensors as ``library``'s arrays and its torch dtypes as
    ``library``'s dtypes; unchanged for ``torch``."""
    if library == "torch":
        return value

    def convert(x: Any) -> Any:
        return tensor_to(x, library) if isinstance(x, torch.Tensor) else library_dtype(x, library)

    return rebuild(value, convert, {}, lambda x: isinstance(x, (torch.Tensor, torch.dtype)))


def _is_array(x: Any) -> bool:
    return not isinstance(x, (torch.Tensor, type)) and (hasattr(x, "__dlpack__") or hasattr(x, "__array__"))


def array_to_tensor(x: Any) -> torch.Tensor:
    """An array of any library as a torch tensor of the same dtype, shape and device (a copy)."""
    import numpy as np

    if hasattr(x, "__dlpack__"):
        try:
            return torch.from_dlpack(x).clone()
        except Exception:  # noqa: BLE001 - a dtype or a read-only buffer DLPack does not carry: through __array__
            pass
    try:
        host = np.asarray(x)
    except Exception as exc:  # noqa: BLE001
        raise ArrayConversionError(f"a {type(x).__qualname__} could not be read through __dlpack__ or __array__ "
                                   f"({type(exc).__name__}: {str(exc)[:200]})") from None
    if host.dtype.name == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(host).view(np.uint16).copy()).view(torch.bfloat16)
    if host.dtype == object or host.dtype.name not in _TORCH_DTYPES:
        raise ArrayConversionError(f"a {type(x).__qualname__} of dtype {host.dtype} has no torch counterpart")
    return torch.from_numpy(np.array(host, copy=True))


def from_library(value: Any) -> Any:
    """``value`` (an answer) with every array of another library as a torch tensor, and every NumPy scalar
    (``np.int64(3)``) as the Python number it holds; the rest unchanged."""
    import numpy as np

    def convert(x: Any) -> Any:
        if isinstance(x, np.generic):
            return x.item() if x.dtype.name != "bfloat16" else float(x)
        return array_to_tensor(x)

    return rebuild(value, convert, {}, lambda x: isinstance(x, np.generic) or _is_array(x))
