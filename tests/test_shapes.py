"""The report records the distinct tensor shapes each operation was called with in a row, and the
summary says how many there were per implementation: what jitted or compiled code compiles once each."""

from __future__ import annotations

import jsonschema

from specformer.adapters.reference import implementation as reference
from specformer.report.model import REPORT_SCHEMA
from specformer.report.summary import shapes_line

from conftest import run_row


def test_a_row_records_its_calls_distinct_shapes() -> None:
    row = run_row("attention.output_matches_the_formula", reference, "float32")
    assert row.outcome == "pass", row.message
    seen = row.shapes["attention"]
    assert 1 <= len(seen["shapes"]) <= seen["count"] <= row.examples_generated * 4, seen
    first = seen["shapes"][0].split(", ")
    assert len(first) in (3, 4) and all(all(part.isdigit() for part in s.split("x")) for s in first), first
    data = row.to_json()
    jsonschema.Draft202012Validator(REPORT_SCHEMA["properties"]["rows"]["items"]).validate(data)


def test_a_row_that_calls_nothing_records_no_shapes() -> None:
    row = run_row("scaling.dot_products_of_unit_variance_vectors_have_variance_d_k_as_written", None)
    assert row.shapes is None


def test_the_summary_says_how_many_shapes_per_implementation() -> None:
    rows = [{"implementation": "mine", "property": "attention.p", "device": "cpu", "dtype": "float32",
             "shapes": {"attention": {"count": 3, "shapes": ["1x2x3"]}, "score": {"count": 1, "shapes": ["1"]}}},
            {"implementation": "mine", "property": "attention.q", "device": "cpu", "dtype": "float64",
             "shapes": {"attention": {"count": 8, "shapes": []}}},
            {"implementation": "other", "property": "attention.q", "device": "cpu", "dtype": "float64",
             "shapes": {"attention": {"count": 99, "shapes": []}}}]
    assert shapes_line("mine", rows) == ("  –   mine: 4.0 distinct tensor shapes per operation per row on average, at "
                                         "most 8 (attention in attention.q [cpu/float64]); jitted code compiles once "
                                         "per shape")
    assert shapes_line("nobody", rows) is None
