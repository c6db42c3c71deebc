"""The protocol's version, what each version changed, and how code written before a change keeps working.

:data:`PROTOCOL_VERSION` numbers the protocol as a whole. It grows by one whenever an operation
is added or an existing operation takes a new argument; :data:`CHANGES` lists every such change
with the version that made it. Clarified wording, new conventions (whose default is the
documents' value) and new optional capabilities do not change the version: code written
before them is judged as it was.

An operation written against an earlier version keeps working. When the suite passes a
keyword that a change added and the implementation's operation does not take it (no parameter
of that name, no ``**kwargs``), the worker leaves the keyword out and, where the harness can do
the new part itself, does it (:func:`adapt`):

* ``"move"``: the keyword is the device under test (``device``); the harness moves every tensor
  of the answer to that device after the call.
* ``"convert"``: the keyword is the dtype asked for (``dtype``); the harness converts every
  floating tensor of the answer to it after the call.
* ``None``: the harness cannot do it; the row is *not applicable*, with a message that names
  the change and the version that made it, never an error.

Only the keywords listed here are adapted: an operation that lacks any other argument the
protocol passes is an error of the implementation, as before. This module does not call
implementations; :mod:`specformer.runner.worker` applies :func:`adapt` to each call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

#: The protocol's current version (see :data:`CHANGES`).
PROTOCOL_VERSION = 5


@dataclass(frozen=True)
class Change:
    """One change of the protocol: an operation added, or a keyword argument added to an operation."""

    version: int  #: the first version with the change
    operation: str  #: the operation's method name
    what: str  #: one line: what changed and why
    keyword: str | None = None  #: the keyword argument added (None: the operation itself was added)
    harness: Literal["move", "convert"] | None = None  #: what the harness does for code written before it

    def line(self) -> str:
        """``version 2: glove_cooccurrence takes the keyword device: the device under test; ...``."""
        added = f"takes the keyword {self.keyword}: {self.what}" if self.keyword else self.what
        return f"version {self.version}: {self.operation} {added}"


#: Every change since version 1 (the five families' first operations), oldest first.
CHANGES: tuple[Change, ...] = (
    Change(2, "glove_cooccurrence", "the device under test; its inputs are plain integers, so nothing else tells "
                                    "it where its counts belong", keyword="device", harness="move"),
    Change(2, "train_skipgram", "added: skip-gram with negative sampling trained by the implementation"),
    Change(2, "train_fasttext", "added: FastText trained by the implementation"),
    Change(3, "train_glove", "added: GloVe trained by the implementation"),
    Change(4, "train_skipgram", "the input vectors to start from, by word (optional: a trainer that cannot start "
                                "from given vectors leaves it out)", keyword="initial"),
    Change(5, "train_skipgram", "the output vectors to start from, by word, beside initial (optional, as initial is)",
           keyword="initial_output"),
)


@dataclass(frozen=True)
class Adaptation:
    """What the worker does for one call of an operation written before some of :data:`CHANGES`."""

    kwargs: dict[str, Any]  #: the keywords to pass (the changes' keywords the operation does not take left out)
    move_to: str | None = None  #: move the answer's tensors to this device after the call
    convert_to: Any = None  #: convert the answer's floating tensors to this dtype after the call
    refusal: str | None = None  #: the row's not-applicable message, when the harness cannot do the change's part
    notes: tuple[str, ...] = ()  #: one line per change the harness does itself


def changes_of(operation: str) -> tuple[Change, ...]:
    """The keyword changes of ``operation`` (the keywords added after it first appeared)."""
    return tuple(c for c in CHANGES if c.operation == operation and c.keyword is not None)


def note(change: Change) -> str:
    """``glove_cooccurrence is written before protocol 2 (no keyword device): the harness moves its answer ...``."""
    done = {"move": "the harness moves its answer to the device under test",
            "convert": "the harness converts its answer to the dtype asked for",
            None: "the harness cannot do that part itself, so its rows that pass it are not applicable"}[change.harness]
    return (f"{change.operation} is written before protocol version {change.version}, which added its keyword "
            f"{change.keyword} ({change.what}): {done}")


def adapt(operation: str, kwargs: dict[str, Any], accepts: Callable[[str], bool]) -> Adaptation:
    """How to call ``operation`` with ``kwargs`` when ``accepts(keyword)`` says which keywords it takes.

    Unchanged ``kwargs`` (and nothing to do) when the operation takes every keyword a change added.
    """
    missing = [c for c in changes_of(operation) if c.keyword in kwargs and not accepts(c.keyword)]
    if not missing:
        return Adaptation(kwargs)
    kept = {k: v for k, v in kwargs.items() if k not in {c.keyword for c in missing}}
    cannot = [c for c in missing if c.harness is None]
    if cannot:
        change = cannot[0]
        return Adaptation(kept, refusal=f"{operation} takes no keyword {change.keyword}, which protocol version "
                                        f"{change.version} added ({change.what}); the harness cannot do that "
                                        f"part itself, so this row does not apply to code written before version "
                                        f"{change.version} (the protocol is now version {PROTOCOL_VERSION}: add the "
                                        f"keyword to check it)")
    move = next((kwargs[c.keyword] for c in missing if c.harness == "move"), None)
    convert = next((kwargs[c.keyword] for c in missing if c.harness == "convert"), None)
    return Adaptation(kept, move_to=None if move is None else str(move), convert_to=convert,
                      notes=tuple(note(c) for c in missing))


def earlier_signatures(operations: Sequence[str], accepts: Callable[[str, str], bool]) -> list[str]:
    """One note per change the harness does itself (or cannot do) for the ``operations`` an implementation
    provides, where ``accepts(operation, keyword)`` says it does not take a changed keyword: for the report."""
    return [note(c) for op in operations for c in changes_of(op) if c.keyword is not None
            and not accepts(op, c.keyword)]


def history() -> str:
    """The version and every change, as text (``specformer protocol`` and the protocol pages print it)."""
    import textwrap

    intro = (f"Protocol version {PROTOCOL_VERSION}. Code written against an earlier version keeps working: where an "
             "operation lacks a keyword a later version added, the harness does that part itself (moves the answer "
             "to the device under test) or, where it cannot, the row is not applicable with a message naming the "
             "change. Changes since version 1:")
    lines = textwrap.wrap(intro, 100)
    for change in CHANGES:
        lines += textwrap.wrap(change.line(), 100, initial_indent="  ", subsequent_indent="      ")
    return "\n".join(lines)
