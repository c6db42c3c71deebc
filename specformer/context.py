"""The context a property runs in: one implementation, one device, one dtype.

Properties draw float64 inputs on the CPU and call the implementation through the
context. The context casts the inputs to the dtype under test and sends *copies* to the
implementation's worker (:mod:`specformer.runner.supervisor`), which moves them to the device;
what comes back is plain data (:mod:`specformer.runner.wire`), checked (type, shape, dtype,
device) and returned as float64 on the CPU for comparison with the mathematics. Nothing
the implementation does can reach the property's own tensors or the expected values,
which are computed in this process.

A misbehaving implementation raises :class:`ImplementationError` (it raised, returned
something malformed, or modified an input in place) or
:class:`~specformer.runner.supervisor.WorkerLost` (its worker crashed, exited or hung); an
adapter's :class:`~specformer.protocol.NotApplicable` marks the example as outside its
domain (an error inside a declared domain).

The shared machinery is :mod:`specformer.checked.base`; each family's checked calls live
in a module of :mod:`specformer.checked` and register themselves with
:func:`specformer.checked.register`. This module imports the package's modules (whatever
families there are) and mixes the registered calls into :class:`Context`; it names no
family. It does not decide outcomes; :mod:`specformer.runner.row` does.
"""

from __future__ import annotations

import importlib
import pkgutil

import specformer.checked as checked
from specformer.checked.base import (LOW_PRECISION, LOW_PRECISION_FACTOR, Backend, ContextBase,
                                     ImplementationError, LocalBackend, WorkerBackend, assert_close)

__all__ = ["Backend", "Context", "ContextBase", "ImplementationError", "LOW_PRECISION", "LOW_PRECISION_FACTOR",
           "LocalBackend", "WorkerBackend", "assert_close"]

for _module in pkgutil.iter_modules(checked.__path__):
    importlib.import_module(f"{checked.__name__}.{_module.name}")


class Context(*checked.CALLS, ContextBase):  # type: ignore[misc]
    """The context of a property: the shared machinery plus each family's registered checked calls."""
