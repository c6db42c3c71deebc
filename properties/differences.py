"""Where two sequences first differ, for the messages of properties that compare lists.

A failure that prints two long lists cut to their first entries can show two identical
prefixes and hide the difference; :func:`first_difference` names the first index where
they differ, with the entries there (or the length at which one of them ends). It
compares with ``==`` and decides nothing: the property's own assertion does.
"""

from __future__ import annotations

from typing import Any, Sequence


def first_difference(got: Sequence[Any], expected: Sequence[Any]) -> str:
    """``first differ at index 7: got X, expected Y`` (or where one ends); ``""`` when they are equal."""
    for i, (a, b) in enumerate(zip(got, expected)):
        if a != b:
            return f"first differ at index {i} (of {len(got)} and {len(expected)}): got {a!r}, expected {b!r}"
    if len(got) != len(expected):
        shorter, longer = (got, expected) if len(got) < len(expected) else (expected, got)
        which = "got" if shorter is got else "expected"
        return (f"agree on the first {len(shorter)} entries, then {which} ends where the other goes on with "
                f"{longer[len(shorter)]!r} ({len(got)} against {len(expected)} entries)")
    return ""
