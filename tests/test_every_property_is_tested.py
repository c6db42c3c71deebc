"""Every property is exercised by a test of the harness that shows it can fail.

A property's function name must appear in one of the ``tests/test_mutants_*.py`` files,
each of which runs its properties against wrong implementations (or mis-statements) and
asserts they are caught. The per-module coverage tests there check the details; this one
catches a property module that has no such file at all.
"""

from __future__ import annotations

from pathlib import Path

from specformer.property import load_properties

TESTS = Path(__file__).resolve().parent


def test_every_property_is_named_in_a_mutant_test() -> None:
    text = "\n".join(p.read_text() for p in TESTS.glob("test_mutants_*.py"))
    missing = sorted(q for q, prop in load_properties().items() if prop.name not in text)
    assert not missing, f"properties no mutant test names: {missing}"
