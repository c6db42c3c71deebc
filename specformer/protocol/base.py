"""What every family's protocol is made of: operations, families, and ``NotApplicable``.

An implementation is any object with a ``name`` and some of the families' methods.
Implementations are duck-typed: subclassing is not required.
"""

from __future__ import annotations

from typing import NamedTuple


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
    """A family of claims (``attention``, ...) and the operations its properties call."""

    name: str
    operations: tuple[Operation, ...]
