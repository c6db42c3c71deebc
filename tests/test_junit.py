"""JUnit XML: one test case per row, failures with their evidence, skips with their reasons."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from specformer.report.junit import junit_tree, write_junit
from specformer.report.model import build_report, implementation_entry
from specformer.runner.row import RowResult

IMPLS = [implementation_entry("mine", "mine.py", ["attention"])]


def row(outcome: str, prop: str = "masking.p", **kwargs: object) -> RowResult:
    fields: dict[str, object] = dict(claim="masking.c", property=prop, implementation="mine", device="cpu",
                                     dtype="float32", expect="hold", outcome=outcome, duration_s=0.25)
    fields.update(kwargs)
    return RowResult(**fields)  # type: ignore[arg-type]


def rows() -> list[RowResult]:
    return [
        row("pass"),
        row("fail", "masking.q", message="got 1, expected 0\x07", seed=11, reproduce="specformer run --seed 11",
            counterexample="Falsifying example: f(\n    ctx=Context(mine, cpu, float32),\n    x=1,\n)\n"
                           "You can reproduce this example by temporarily adding @reproduce_failure('6', b'AA')"),
        row("error", "masking.r", message="mine.attention raised RuntimeError: boom"),
        row("not-applicable", "masking.s", message="mine does not provide: score"),
        row("known-deviation", "masking.t", message="got 2", deviation_reason="padded kernels",
            original_outcome="fail"),
        row("fixed", "masking.u", deviation_reason="was wrong", original_outcome="pass"),
    ]


def cases(tree: ET.ElementTree) -> dict[str, ET.Element]:
    return {c.get("name", ""): c for c in tree.getroot().iter("testcase")}


def test_one_testcase_per_row_named_by_claim_property_and_row(tmp_path: Path) -> None:
    path = tmp_path / "out" / "j.xml"
    write_junit(build_report(rows(), IMPLS, "thorough", 1.5), path)
    tree = ET.parse(path)
    suite = tree.getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("6", "1", "1", "2")
    found = cases(tree)
    assert set(found) == {f"masking.{p} [mine/cpu/float32]" for p in "pqrstu"}
    assert all(c.get("classname") == "masking.c" for c in found.values())
    assert list(found["masking.p [mine/cpu/float32]"]) == []


def test_failures_carry_message_counterexample_seed_and_reproduction() -> None:
    found = cases(junit_tree(build_report(rows(), IMPLS, "thorough", 1.5)))
    failure = found["masking.q [mine/cpu/float32]"].find("failure")
    assert failure is not None and failure.get("type") == "fail"
    assert failure.get("message") == "got 1, expected 0"  # the control character is dropped
    text = failure.text or ""
    assert "x=1" in text and "seed: 11" in text and "reproduce: specformer run --seed 11" in text
    assert "reproduce_failure" not in text and "Context(" not in text
    error = found["masking.r [mine/cpu/float32]"].find("error")
    assert error is not None and "boom" in (error.get("message") or "")


def test_skips_and_known_deviations_are_skipped_with_their_reason() -> None:
    found = cases(junit_tree(build_report(rows(), IMPLS, "ci", 1.0)))
    skipped = found["masking.s [mine/cpu/float32]"].find("skipped")
    assert skipped is not None and "not-applicable: mine does not provide: score" == skipped.get("message")
    deviation = found["masking.t [mine/cpu/float32]"].find("skipped")
    assert deviation is not None and deviation.get("message") == "known deviation: padded kernels"
    assert "original outcome: fail" in (deviation.text or "") and "got 2" in (deviation.text or "")
    fixed = found["masking.u [mine/cpu/float32]"]
    assert fixed.find("failure") is None and "remove the entry" in (fixed.findtext("system-out") or "")


def test_a_strict_fixed_row_is_a_failure() -> None:
    strict = row("fixed", deviation_reason="was wrong", original_outcome="pass", strict_deviations=True)
    found = cases(junit_tree(build_report([strict], IMPLS, "ci", 1.0)))
    assert found["masking.p [mine/cpu/float32]"].find("failure") is not None


def test_an_interrupted_run_is_marked() -> None:
    tree = junit_tree(build_report(rows()[:2], IMPLS, "ci", 1.0, complete=False))
    root = tree.getroot()
    state = root.find("testsuite/properties/property[@name='state']")
    assert state is not None and state.get("value") == "interrupted"
    marker = cases(tree)["run incomplete"]
    error = marker.find("error")
    assert error is not None and "did not complete" in (error.get("message") or "")
    assert root.get("tests") == "3" and root.get("errors") == "1"


def test_no_report_at_all_is_an_incomplete_run() -> None:
    tree = junit_tree(None)
    assert set(cases(tree)) == {"run incomplete"}
