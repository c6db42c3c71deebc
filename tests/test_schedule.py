"""The best schedule of a run's rows, longest first, and the efficiency line of the summary."""

from __future__ import annotations

import pytest

from specformer.report.schedule import efficiency_line, longest_first


def test_longest_first_on_known_cases() -> None:
    assert longest_first([3, 3, 2, 2, 2], 2) == 7  # LPT: {3, 2, 2} and {3, 2}; the optimum is 6
    assert longest_first([5, 1, 1, 1], 2) == 5  # one long row bounds it
    assert longest_first([1.5] * 4, 1) == 6.0
    assert longest_first([], 3) == 0.0


@pytest.mark.parametrize("jobs", [1, 2, 3, 7])
def test_never_below_the_lower_bound_nor_above_four_thirds_of_it(jobs: int) -> None:
    durations = [0.1 * ((i * 37) % 23 + 1) for i in range(50)]
    best = longest_first(durations, jobs)
    bound = max(sum(durations) / jobs, max(durations))
    assert bound - 1e-9 <= best <= 4 / 3 * bound + 1e-9


def test_the_efficiency_line() -> None:
    rows = [{"duration_s": d} for d in (3, 3, 2, 2, 2)]
    line = efficiency_line(rows, 2, 10.0)
    assert "sum to 12.0 s" in line and "2 jobs they take 7.0 s" in line and "70 %" in line
    assert efficiency_line([], 2, 10.0) is None
