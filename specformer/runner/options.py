"""Checks of the run's numeric options, shared by ``specformer run`` and the pytest plugin.

A value that cannot mean anything sensible is a usage error with a message naming the
option, the value and what is accepted: a time limit that is not a finite positive
number of seconds (``nan``, ``inf``, ``0``, ``-1``), a memory limit below
:data:`MIN_MEMORY_MIB` (``0`` keeps meaning *no limit*), fewer than one job or thread,
more threads than :data:`MAX_THREADS`, a negative seed. Nothing here runs anything.
"""

from __future__ import annotations

import math

#: The smallest memory limit of a worker, in MiB (``0``: none): a worker imports torch
#: before the implementation, and below this it cannot even start.
MIN_MEMORY_MIB = 256
#: The most torch threads a worker may be given.
MAX_THREADS = 1024
#: The largest seed (Hypothesis seeds are taken modulo 2^32 in reports and commands).
MAX_SEED = 2**32 - 1


def number_problem(row_timeout: float | None = None, memory_mib: int | None = None, threads: int | None = None,
                   jobs: int | None = None, seed: int | None = None, backstop: float | None = None) -> str | None:
    """What is wrong with the given numeric options (``None`` is not given), or ``None``."""
    if row_timeout is not None and not (math.isfinite(row_timeout) and row_timeout > 0):
        return f"--row-timeout must be a finite positive number of seconds, got {row_timeout!r}"
    if backstop is not None and not (math.isfinite(backstop) and backstop > 0):
        return f"--row-backstop must be a finite positive number of seconds, got {backstop!r}"
    if memory_mib is not None and memory_mib != 0 and memory_mib < MIN_MEMORY_MIB:
        what = "a negative size" if memory_mib < 0 else f"below {MIN_MEMORY_MIB} MiB, where a worker cannot start"
        return f"--memory-limit must be 0 (no limit) or at least {MIN_MEMORY_MIB} MiB, got {memory_mib} ({what})"
    if threads is not None and not 1 <= threads <= MAX_THREADS:
        return f"--threads must be between 1 and {MAX_THREADS}, got {threads}"
    if jobs is not None and jobs < 1:
        return f"--jobs must be at least 1, got {jobs}"
    if seed is not None and not 0 <= seed <= MAX_SEED:
        return f"--seed must be between 0 and {MAX_SEED}, got {seed}"
    return None
