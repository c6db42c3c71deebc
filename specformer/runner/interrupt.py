"""A polite stop (SIGTERM) that cannot be lost.

``specformer run`` turns SIGTERM into ``KeyboardInterrupt`` so that the run ends as
*interrupted* with its report written. Python runs a signal handler at the next
bytecode of the main thread, wherever that is: inside an object's finaliser, a
``weakref`` callback or a garbage collection, an exception raised there is printed and
dropped ("Exception ignored in ..."), and the run would go on as if no signal had come
(on a busy machine a run was seen to carry on for minutes that way). So the handler also
records the request here, and the places the checker waits in (a worker's answer, the
start of each row) call :func:`check`, which raises it again.

This module records and raises; it does not install the handler (:mod:`specformer.runner.cli` does).
"""

from __future__ import annotations

_REQUESTED: list[str] = []


def request(reason: str) -> None:
    """Record that the run was asked to stop (``reason``: the signal's name)."""
    if not _REQUESTED:
        _REQUESTED.append(reason)


def requested() -> str | None:
    """The reason the run was asked to stop, or ``None``."""
    return _REQUESTED[0] if _REQUESTED else None


def check() -> None:
    """Raise ``KeyboardInterrupt`` if the run was asked to stop."""
    if _REQUESTED:
        raise KeyboardInterrupt(_REQUESTED[0])


def clear() -> None:
    """Forget a request (at the start of a run in the same process)."""
    _REQUESTED.clear()
