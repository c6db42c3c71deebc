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

__all__ = [
    "AttentionImplementation",
    "AttentionOutput",
    "FAMILIES",
    "Family",
    "MultiHeadImplementation",
    "MultiHeadParams",
    "NotApplicable",
    "OPERATIONS",
    "Operation",
    "ScoreImplementation",
    "family_of_operation",
    "provided_operations",
]

#: Every family, by name. A new family adds its module and one entry here.
FAMILIES: dict[str, Family] = {family.name: family for family in (attention.FAMILY, positions.FAMILY, blocks.FAMILY,
                                                                     tokenization.FAMILY, embeddings.FAMILY)}

#: Every operation a property may need, by name.
OPERATIONS: dict[str, Operation] = {op.method: op for family in FAMILIES.values() for op in family.operations}


def family_of_operation(name: str) -> str:
    """The family that declares operation ``name``."""
    for family in FAMILIES.values():
        if any(op.method == name for op in family.operations):
            return family.name
    raise KeyError(f"unknown operation {name!r}; known: {sorted(OPERATIONS)}")


def provided_operations(impl: object) -> frozenset[str]:
    """The operations an implementation provides (callable attributes of that name).

    A method still marked as a skeleton's (:func:`specformer.skeleton.not_implemented`) is not provided.
    """
    from specformer.skeleton import is_skeleton

    return frozenset(name for name, op in OPERATIONS.items()
                     if callable(method := getattr(impl, op.method, None)) and not is_skeleton(method))
