"""Turns an ``--impl`` argument into an implementation object.

Accepted forms:

* a shipped name: ``reference``, ``torch-sdpa``, ``torch-mha``;
* ``package.module:attribute`` (an importable module);
* ``path/to/file.py`` or ``path/to/file.py:attribute`` (a file, imported by path).

The attribute defaults to ``implementation``. A class is instantiated with no
arguments. The object needs a ``name`` (else the argument is used) and at least one
operation of :data:`specformer.protocol.OPERATIONS`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specformer.adapters import BUILTIN

DEFAULT_ATTRIBUTE = "implementation"


class ImplementationLoadError(ValueError):
    """An ``--impl`` argument does not name a usable implementation."""


@dataclass(frozen=True)
class LoadedImplementation:
    """An implementation with the argument that named it."""

    name: str
    spec: str
    obj: Any
    #: its capability declaration, read once when it was loaded (``None``: it declares none)
    capabilities: Any = None

    @property
    def operations(self) -> list[str]:
        """The protocol operations it provides."""
        from specformer.protocol import provided_operations

        return sorted(provided_operations(self.obj, self.capabilities))


def _split(spec: str) -> tuple[str, str]:
    target, sep, attribute = spec.rpartition(":")
    if not sep or (len(target) == 1 and target.isalpha()):  # no attribute, or a Windows drive letter
        return spec, DEFAULT_ATTRIBUTE
    return target, attribute or DEFAULT_ATTRIBUTE


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise ImplementationLoadError(f"implementation file {str(path)!r} does not exist")
    module_name = f"specformer_user_{path.stem}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImplementationLoadError(f"cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    folder = str(path.resolve().parent)
    if folder not in sys.path:  # as when running the file: its neighbours are importable
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise ImplementationLoadError(f"importing {str(path)!r} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _existing(obj: Any, wanted: str | None, what: str, known: Any = ()) -> str:
    """``; it defines A, B (did you mean ...?)``: the public names that exist, for a load error."""
    import difflib

    try:
        names = sorted(n for n in dir(obj) if not n.startswith("_") and
                       (wanted is not None or callable(getattr(obj, n, None))))
        if wanted is not None:  # a module: its own classes and objects, not what it imported
            names = [n for n in names if getattr(getattr(obj, n, None), "__module__", None) in (obj.__name__, None)
                     and not isinstance(getattr(obj, n, None), type(obj))]
    except Exception:  # noqa: BLE001 - a hostile __dir__ or __getattr__
        return ""
    if not names:
        return f"; {what} nothing public"
    targets = [wanted] if wanted is not None else list(known)
    close = sorted({c for t in targets for c in difflib.get_close_matches(t, names, n=1, cutoff=0.6)})
    pairs = [f"{t!r} (not {n!r})" for t in targets for n in difflib.get_close_matches(t, names, n=1, cutoff=0.6)]
    hint = f"; did you mean {', '.join(pairs)}?" if close else ""
    shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
    return f"; {what} {shown}{hint}"


def file_target(spec: str) -> Path | None:
    """The file an ``--impl`` argument names, or ``None`` when it names a module."""
    target, _ = _split(spec)
    if target.endswith(".py") or "/" in target or "\\" in target:
        return Path(target)
    return None


def load_implementation(spec: str) -> LoadedImplementation:
    """Resolve ``spec`` to an implementation; raise :class:`ImplementationLoadError` with the reason."""
    from specformer.protocol import (OPERATIONS, CapabilityError, declared_capabilities,  # torch: only where code is loaded
                                     provided_operations)

    target, attribute = _split(BUILTIN.get(spec, spec))
    if target.endswith(".py") or "/" in target or "\\" in target:
        module = _import_file(Path(target))
    else:
        try:
            module = importlib.import_module(target)
        except Exception as exc:
            raise ImplementationLoadError(
                f"cannot import module {target!r} for --impl {spec!r}: {type(exc).__name__}: {exc}"
            ) from exc
    try:
        obj = getattr(module, attribute)
    except AttributeError:
        raise ImplementationLoadError(
            f"--impl {spec!r}: module {target!r} has no attribute {attribute!r} "
            f"(name it as {target}:ATTRIBUTE){_existing(module, attribute, 'it defines')}"
        ) from None
    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception as exc:
            raise ImplementationLoadError(
                f"--impl {spec!r}: instantiating {obj.__name__} failed: {type(exc).__name__}: {exc}"
            ) from exc
    try:
        capabilities = declared_capabilities(obj)  # read once: what it declares now is what it is held to
    except Exception as exc:  # noqa: BLE001 - a declaration that is malformed or whose property raises
        raise ImplementationLoadError(f"--impl {spec!r}: its capability declaration is malformed: "
                                      f"{exc if isinstance(exc, CapabilityError) else f'{type(exc).__name__}: {exc}'}"
                                      ) from exc
    if not provided_operations(obj, capabilities):
        from specformer.runner.skeleton import is_skeleton

        unwritten = sorted(op for op in OPERATIONS if is_skeleton(getattr(obj, op, None)))
        if unwritten:
            raise ImplementationLoadError(
                f"--impl {spec!r}: every operation of {type(obj).__name__} is still marked @not_implemented "
                f"({', '.join(unwritten)}); write at least one and remove its marker")
        raise ImplementationLoadError(
            f"--impl {spec!r}: {type(obj).__name__} provides none of the operations {sorted(OPERATIONS)}"
            + _existing(obj, None, "its methods are", OPERATIONS)
        )
    name = getattr(obj, "name", None) or spec
    return LoadedImplementation(str(name), spec, obj, capabilities)
