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
    """Raised by an adapter for inputs it cannot take (a shape, dtype or device).

    The suite treats the example as outside the implementation's domain. When no
    example at all is in the domain, the row is reported as *not applicable*, with
    this exception's message as the reason.
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
