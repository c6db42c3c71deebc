"""A row's limit: CPU seconds of work, with a wall-clock backstop.

A row's verdict must not depend on what else the machine is doing. Its limit therefore
counts the CPU time the row used: the checker's own (the property, its expected values,
Hypothesis; this process's user and system time) and the implementation's (its worker
process, the children the worker waited for, and the children still running, read from
``/proc`` while the checker waits for an answer). A busy machine stretches the wall time
of a row, not its CPU time.

An implementation that sleeps, waits on a lock or is starved uses no CPU: the
**backstop**, a wall-clock limit of :data:`BACKSTOP_FACTOR` times the CPU limit unless
set apart (``--row-backstop``), still ends it. :meth:`Limit.ended` says which of the two
ran out, and :meth:`Limit.message` says so with the CPU and wall seconds.

Where ``/proc`` cannot be read (not Linux), the implementation's worker's CPU is not
seen and the checker's own CPU and the backstop are what count. This module starts and
kills nothing: :mod:`specformer.runner.supervisor` and :mod:`specformer.runner.row` do.
"""

from __future__ import annotations

import math
import os
import resource
import time

#: The default wall-clock backstop, as a multiple of the CPU limit. A row is ended by it only
#: when the wall time exceeds this many times the CPU limit: on a 2-core machine running six
#: other busy processes a row gets about a quarter of a core, so a row within its CPU limit
#: stays within this backstop.
BACKSTOP_FACTOR = 5.0

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


def own_cpu_s() -> float:
    """This process's CPU seconds (user and system, every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds of process ``pid`` and of its children it has waited for (``None``: not readable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        # after the name: state(0) ppid ... utime(11) stime(12) cutime(13) cstime(14)
        return sum(int(f) for f in fields[11:15]) * _TICK_S
    except (OSError, ValueError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as children:
                found.extend(int(c) for c in children.read().split())
        except (OSError, ValueError):
            continue
    return found


def tree_cpu_s(pid: int) -> float | None:
    """CPU seconds of ``pid``, the children it waited for, and every descendant still running."""
    own = process_cpu_s(pid)
    if own is None:
        return None
    total, seen, todo = own, {pid}, _children(pid)
    while todo:
        child = todo.pop()
        if child in seen or len(seen) > 4096:
            continue
        seen.add(child)
        spent = process_cpu_s(child)
        if spent is not None:
            total += spent
            todo.extend(_children(child))
    return total


class Limit:
    """One row's budget: ``cpu_s`` CPU seconds (``None``: unlimited), ended at the latest by ``backstop_s``
    seconds of wall time (default :data:`BACKSTOP_FACTOR` times ``cpu_s``; ``None`` with no CPU limit: none)."""

    def __init__(self, cpu_s: float | None, backstop_s: float | None = None) -> None:
        self.cpu_s = cpu_s if cpu_s and math.isfinite(cpu_s) else None
        if backstop_s is None and self.cpu_s is not None:
            backstop_s = self.cpu_s * BACKSTOP_FACTOR
        self.backstop_s = backstop_s
        self.started = time.monotonic()
        self._own_start = own_cpu_s()
        #: CPU seconds the implementation's workers spent on this row's answered calls.
        self.implementation_s = 0.0

    @classmethod
    def until(cls, deadline: float) -> "Limit":
        """A wall-clock deadline alone (``time.monotonic()`` seconds), no CPU limit."""
        limit = cls(None, max(0.0, deadline - time.monotonic()))
        return limit

    @property
    def deadline(self) -> float:
        """The ``time.monotonic()`` at which the backstop ends the row (``inf``: never)."""
        return self.started + self.backstop_s if self.backstop_s is not None else math.inf

    def wall_s(self) -> float:
        """Wall seconds since the row started."""
        return time.monotonic() - self.started

    def checker_s(self) -> float:
        """The checker's CPU seconds since the row started."""
        return max(0.0, own_cpu_s() - self._own_start)

    def cpu_used(self, running: float = 0.0) -> float:
        """The row's CPU seconds: the checker's, the implementation's answered calls, and ``running`` (the
        call it is working on)."""
        return self.checker_s() + self.implementation_s + running

    def ended(self, running: float = 0.0) -> str | None:
        """``"cpu"`` or ``"wall"`` when that limit has run out (the CPU limit first), else ``None``."""
        if self.cpu_s is not None and self.cpu_used(running) > self.cpu_s:
            return "cpu"
        if time.monotonic() > self.deadline:
            return "wall"
        return None

    def message(self, which: str, running: float = 0.0) -> str:
        """Which limit ended the row, with the CPU and wall seconds it had used."""
        checker, implementation = self.checker_s(), self.implementation_s + running
        used = (f"{checker + implementation:.3g} s of CPU (the implementation {implementation:.3g} s, the checker "
                f"{checker:.3g} s) in {self.wall_s():.3g} s of wall time")
        if which == "cpu":
            return f"the row's CPU limit of {self.cpu_s:g} s ran out: {used}"
        if self.cpu_s is None:
            return f"the time limit of {self.backstop_s:g} s ran out: {used}"
        return (f"the row's wall-clock backstop of {self.backstop_s:g} s ran out: {used}, within its CPU limit of "
                f"{self.cpu_s:g} s (the implementation sleeps, waits, or is starved of CPU)")

    def describe(self) -> str:
        """The limit in words, for a row's message: ``120 s of CPU time (a wall-clock backstop of 600 s)``."""
        if self.cpu_s is None:
            return f"{self.backstop_s:g} s of wall time" if self.backstop_s is not None else "unlimited"
        return f"{self.cpu_s:g} s of CPU time (a wall-clock backstop of {self.backstop_s:g} s)"


def as_limit(value: "Limit | float") -> Limit:
    """``value`` as a :class:`Limit`: a plain number is a ``time.monotonic()`` deadline."""
    return value if isinstance(value, Limit) else Limit.until(float(value))
