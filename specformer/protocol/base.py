"""What every family's protocol is made of: operations, families, and ``NotApplicable``.

An implementation is any object with a ``name`` and some of the families' methods.
Implementations are duck-typed: subclassing is not required.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping, NamedTuple

if TYPE_CHECKING:
    from specformer.protocol.capabilities import Convention


class NotApplicable(Exception):
    """Raised by an implementation that refuses an input.

    Inside the implementation's declared capabilities (and an implementation that declares
    nothing declares everything) every example is owed an answer: a refusal there ends
    the row as an ``error`` that quotes this exception's message. A restriction is
    declared up front instead (:class:`~specformer.protocol.capabilities.Capabilities`:
    operations, dtypes, devices, conventions), and the suite then never asks for what is
    outside it. Properties raise it themselves for what cannot be checked here (a library
    that is not installed, FLOPs the counter cannot see).
    """


class Operation(NamedTuple):
    """An operation of the protocol: the method name and the protocol declaring it."""

    method: str
    protocol: type


class Family(NamedTuple):
    """A family of claims (``attention``, ...), the operations its properties call, and its conventions.

    ``conventions`` are the named choices an implementation of the family may make and
    declare (:class:`~specformer.protocol.capabilities.Convention`): the properties draw
    only the values an implementation declares.
    """

    name: str
    operations: tuple[Operation, ...]
    conventions: Mapping[str, "Convention"] = MappingProxyType({})
