"""Every refutation of the attention family finds its counterexample by search, not only by its ``@example``.

Each refutation runs on the reference (or ``math`` for properties that call no
implementation) with Hypothesis' explicit phase switched off: the drawn examples alone
must break the claim as written.
"""

from __future__ import annotations

import pytest

from conftest import run_row
from specformer.adapters.reference import implementation as reference
from specformer.property import load_properties


REFUTATIONS = sorted(q for q, p in load_properties().items()
                     if p.family == "attention" and p.expect == "counterexample")


@pytest.mark.parametrize("qualname", REFUTATIONS)
def test_the_refutation_finds_a_counterexample_without_its_explicit_example(qualname: str) -> None:
    prop = load_properties()[qualname]
    impl = reference if prop.needs else None
    dtype = "float64" if "float64" in (prop.dtypes or ("float64",)) else prop.dtypes[0]
    row = run_row(qualname, impl, dtype, profile="search-only")
    assert row.outcome == "refuted", f"{qualname}: {row.outcome} by search alone, {row.message}"
