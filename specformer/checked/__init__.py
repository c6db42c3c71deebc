"""Checked calls: each family's protocol operations as a property calls them.

A family's module here defines one mixin of :class:`specformer.checked.base.ContextBase`
whose methods cast the inputs, call the operation in the implementation's worker and check
what comes back, and registers it with :func:`register`; :mod:`specformer.context` mixes
every registered mixin into its ``Context``. A new family adds a module; nothing else
changes.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["CALLS", "register"]

#: The registered mixins, in registration order.
CALLS: list[type] = []

C = TypeVar("C", bound=type)


def register(calls: C) -> C:
    """Register a family's mixin of checked calls (a class decorator)."""
    if calls not in CALLS:
        CALLS.append(calls)
    return calls
