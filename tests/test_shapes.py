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


# -- the shape budget: a row of a budgeted profile draws its sizes from a few plans ----------------------------


from specformer.properties import strategies as shared  # noqa: E402
from specformer.properties.attention import strategies as attention  # noqa: E402
from specformer.properties.blocks import strategies as blocks  # noqa: E402
from specformer.properties.positions import strategies as positions  # noqa: E402
from specformer.runner.profiles import shape_budgeted  # noqa: E402
from test_strategies import _draws  # noqa: E402


def draws(strategy) -> list:
    """100 derandomized draws of ``strategy`` (``test_strategies._draws``)."""
    return _draws(strategy, 100)


def test_budgeted_profiles() -> None:
    assert shape_budgeted("ci") and shape_budgeted("quick") and shape_budgeted("mutants")
    assert not shape_budgeted("thorough")


def test_under_the_budget_attention_cases_take_at_most_four_shapes_one_at_model_sizes() -> None:
    with shared.shape_budget(True):
        shapes = {case.shape for case in draws(attention.attention_cases())}
    assert len(shapes) <= shared.SHAPE_PLANS, shapes
    assert any(b >= 3 and t_q >= 7 for b, t_q, *_ in shapes), shapes  # the plan of sizes models use
    assert any(t_q != t_k for _, t_q, t_k, *_ in shapes), shapes  # queries and keys of different lengths
    assert (1, 1, 1, 1, 1) in shapes, shapes  # the smallest
    free = {case.shape for case in draws(attention.attention_cases())}
    assert len(free) > 2 * shared.SHAPE_PLANS, free  # thorough: sizes drawn freely


def test_under_the_budget_layers_and_positions_take_at_most_four_shapes() -> None:
    with shared.shape_budget(True):
        layers = {(c.x.shape, c.memory.shape, c.heads, c.weights["w_1"].shape) for c in draws(blocks.layer_cases())}
        lengths = {tuple(p.shape) for p in draws(positions.positions())}
        widths = set(draws(positions.even_widths()))
    assert len(layers) <= shared.SHAPE_PLANS and len(lengths) <= shared.SHAPE_PLANS, (layers, lengths)
    assert len(widths) <= shared.SHAPE_PLANS and max(w for w in widths) == 16, widths


def test_a_row_at_ci_calls_attention_with_a_few_shapes() -> None:
    """The row's own record: four plans, each with and without a mask, and the hand-picked examples."""
    row = run_row("attention.rows_of_the_weights_sum_to_one", reference, "float64")
    assert row.outcome == "pass", row.message
    assert row.shapes["attention"]["count"] <= 2 * shared.SHAPE_PLANS + 2, row.shapes
