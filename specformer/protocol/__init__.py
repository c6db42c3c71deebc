"""The implementation protocol: the operations a user's code may provide, by family.

An implementation is any object with a ``name`` and some of the operations below. The
suite checks each property against every implementation that provides the operations
the property needs; a property whose operations are missing is *not applicable*, not a
failure, and an implementation that provides none of a family's operations gets no
rows for that family at all.

Each family declares its operations in its own module (:mod:`.attention`, :mod:`.positions`, ...) and
registers here, in :data:`FAMILIES`; nothing else in this package is family-specific.
"""

from __future__ import annotations

from specformer.protocol import attention, blocks, embeddings, positions, tokenization
from specformer.protocol.attention import (
    AttentionImplementation,
    AttentionOutput,
    MultiHeadImplementation,
    MultiHeadParams,
    ScoreImplementation,
)
from specformer.protocol.base import Family, NotApplicable, Operation
from specformer.protocol.capabilities import Capabilities, CapabilityError, Convention

__all__ = [
    "AttentionImplementation",
    "AttentionOutput",
    "Capabilities",
    "CapabilityError",
    "CONVENTIONS",
    "Convention",
    "FAMILIES",
    "Family",
    "MultiHeadImplementation",
    "MultiHeadParams",
    "NotApplicable",
    "OPERATIONS",
    "Operation",
    "ScoreImplementation",
    "declared_capabilities",
    "family_of_operation",
    "provided_operations",
]

#: Every family, by name. A new family adds its module and one entry here.
FAMILIES: dict[str, Family] = {family.name: family for family in (attention.FAMILY, positions.FAMILY, blocks.FAMILY,
                                                                     tokenization.FAMILY, embeddings.FAMILY)}

#: Every operation a property may need, by name.
OPERATIONS: dict[str, Operation] = {op.method: op for family in FAMILIES.values() for op in family.operations}


def _conventions() -> dict[str, Convention]:
    merged: dict[str, Convention] = {}
    for family in FAMILIES.values():
        for name, convention in family.conventions.items():
            if name in merged:
                raise ValueError(f"convention {name!r} is declared by two families")
            merged[name] = convention
    return merged


#: Every named convention an implementation may declare, by name (unique across families).
CONVENTIONS: dict[str, Convention] = _conventions()


def declared_capabilities(impl: object) -> Capabilities | None:
    """``impl``'s declared :class:`Capabilities`, checked against the protocol; None if it declares none.

    Raises :class:`CapabilityError` naming the problem (an unknown operation, convention
    or value, with the closest known name).
    """
    from specformer.protocol.capabilities import declared

    capabilities = declared(impl)
    if capabilities is not None:
        capabilities.validate(OPERATIONS, CONVENTIONS)
    return capabilities


def family_of_operation(name: str) -> str:
    """The family that declares operation ``name``."""
    for family in FAMILIES.values():
        if any(op.method == name for op in family.operations):
            return family.name
    raise KeyError(f"unknown operation {name!r}; known: {sorted(OPERATIONS)}")


def provided_operations(impl: object, capabilities: Capabilities | None | object = ...) -> frozenset[str]:
    """The operations an implementation provides: callable attributes of that name, narrowed
    to ``capabilities.operations`` when it declares them. A method still marked as a
    skeleton's (:func:`specformer.runner.skeleton.not_implemented`) is not provided.

    ``capabilities``: the declaration as already read (the runner reads it once, at load: one that
    answers differently on each read cannot show one face to one check and another to the next);
    left out, the ``capabilities`` attribute is read here."""
    from specformer.runner.skeleton import is_skeleton

    found = frozenset(name for name, op in OPERATIONS.items()
                      if callable(method := getattr(impl, op.method, None)) and not is_skeleton(method))
    if capabilities is ...:
        capabilities = getattr(impl, "capabilities", None)
    declared_ops = getattr(capabilities, "operations", None) if isinstance(capabilities, Capabilities) else None
    return found & declared_ops if declared_ops is not None else found
