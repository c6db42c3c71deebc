"""Shared helpers for the harness's own tests.

:func:`run_row` runs an implementation object in this process (``LocalBackend``: the
same copies and codec as a worker, without the process): fast enough for hundreds of
mutant rows. Tests of crashes, hangs and hostile code go through real workers.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import Phase, settings

from specformer.context import LocalBackend
from specformer.runner.profiles import PROFILES
from specformer.protocol import declared_capabilities, provided_operations
from specformer.property import Property, load_properties
from specformer.runner.row import RowResult, run_property

# The harness's tests use tiny tensors: torch's thread pool only adds overhead.
torch.set_num_threads(1)

#: Mutant hunting needs a counterexample, not the smallest one: skip shrinking.
PROFILES.setdefault("mutants", settings(PROFILES["ci"], phases=[Phase.explicit, Phase.reuse, Phase.generate]))
#: Refutations must find their counterexample by search alone: no hand-picked examples.
PROFILES.setdefault("search-only", settings(PROFILES["ci"], phases=[Phase.reuse, Phase.generate, Phase.shrink]))
#: Profiles only the harness's own tests use.
TEST_PROFILES = frozenset({"mutants", "search-only"})


@pytest.fixture(scope="session")
def properties() -> dict[str, Property]:
    """Every registered property, by qualified name."""
    return load_properties()


def run_row(qualname: str, impl: object, dtype: str = "float64", profile: str = "ci",
            timeout_s: float | None = 60.0) -> RowResult:
    """Run one property against ``impl`` on the CPU and return its report row."""
    prop = load_properties()[qualname]
    name = getattr(impl, "name", "math") if impl is not None else "math"
    backend = LocalBackend(impl) if impl is not None else None
    operations = provided_operations(impl) if impl is not None else None
    capabilities = declared_capabilities(impl) if impl is not None else None
    return run_property(prop, backend, name, name, "cpu", dtype, profile, timeout_s, operations,
                        capabilities=capabilities)


def assert_caught(qualname: str, mutant: object, dtype: str = "float64") -> RowResult:
    """Assert the property does not accept ``mutant``: the row must fail or error."""
    row = run_row(qualname, mutant, dtype, profile="mutants")
    assert row.outcome in ("fail", "error"), (
        f"{qualname} did not catch mutant {getattr(mutant, 'name', mutant)!r}: outcome {row.outcome}, {row.message}"
    )
    return row


def assert_judged_alone(right: object, wrong: object, alone: tuple[str, ...], together: tuple[str, ...]) -> None:
    """An implementation of one operation: the properties in ``together`` (which need another operation too) leave
    ``right`` not applicable; those in ``alone`` (which need only its operation) pass ``right``, with examples
    checked, and fail ``wrong``."""
    for qualname in together:
        row = run_row(qualname, right)
        assert row.outcome == "not-applicable", (qualname, row.outcome, row.message)
    for qualname in alone:
        row = run_row(qualname, right)
        assert row.outcome == "pass" and row.examples_checked > 0, (qualname, row.outcome, row.message)
        row = run_row(qualname, wrong)
        assert row.outcome == "fail", (qualname, row.outcome, row.message)


def cli(*args: str, cwd: Path, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """``specformer ARGS`` in a fresh interpreter (``timeout``: the test's backstop, never the run's own end)."""
    return subprocess.run([sys.executable, "-m", "specformer", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
