"""How well a run used its jobs: its wall time against the best schedule of its rows.

Given the rows' durations and the number of jobs N, :func:`longest_first` schedules the
rows on N jobs, longest first, each to the job that frees up first (Graham's LPT rule,
within 4/3 of the optimum and never below ``max(sum / N, longest)``). The summary prints
the run's efficiency: that schedule's length over the run's wall time. A run whose jobs
slow each other down (oversubscribed thread pools, a shared lock) spends longer per row
and falls far below 100 %; start-up (torch's import, loading implementations) is part
of the wall time and not of any row, so a short run stays below it too.

This module computes; it does not time anything and decides no outcome.
"""

from __future__ import annotations

import heapq
from typing import Any, Iterable


def longest_first(durations: Iterable[float], jobs: int) -> float:
    """The length of the longest-first schedule of ``durations`` on ``jobs`` jobs, in seconds."""
    loads = [0.0] * max(1, int(jobs))
    for duration in sorted((max(0.0, float(d)) for d in durations), reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + duration)
    return max(loads)


def efficiency_line(rows: list[dict[str, Any]], jobs: int, wall_s: float) -> str | None:
    """``rows' summed time ..., best schedule on N jobs ..., this run ...: E %``; ``None`` without rows."""
    durations = [float(r.get("duration_s") or 0.0) for r in rows]
    if not durations or wall_s <= 0:
        return None
    best = longest_first(durations, jobs)
    return (f"schedule: the rows' durations sum to {sum(durations):.1f} s; longest first on {jobs} "
            f"job{'s' if jobs != 1 else ''} they take {best:.1f} s; this run took {wall_s:.1f} s: "
            f"{100 * best / wall_s:.0f} % of the best")
