"""The JSON report: schema, summary, environment, and atomic writing."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch

import specformer
from specformer.report.model import (
    REPORT_SCHEMA,
    SCHEMA_NAME,
    SCHEMA_VERSION,
    ReportWriter,
    build_report,
    git_commit,
    implementation_entry,
    write_report,
)
from specformer.runner.row import EXPECTED_OUTCOMES, OUTCOMES, RowResult

ROOT = Path(__file__).resolve().parent.parent
IMPLS = [implementation_entry("reference", "reference", ["attention", "multihead_attention", "score"])]


def row(outcome: str, expect: str = "hold", **kwargs: Any) -> RowResult:
    fields: dict[str, Any] = dict(
        claim="attention.weights-sum-to-one", property="attention.rows_of_the_weights_sum_to_one",
        implementation="reference", device="cpu", dtype="float64", expect=expect, outcome=outcome,
        family="attention", examples_generated=25, examples_checked=25, min_checked=10, duration_s=0.5,
        reproduce="specformer run --impl reference --claims attention.weights-sum-to-one",
    )
    fields.update(kwargs)
    return RowResult(**fields)


def mixed_rows() -> list[RowResult]:
    return [
        row("pass"),
        row("pass", dtype="float32"),
        row("refuted", expect="counterexample", message="row sums differ", counterexample="Falsifying example"),
        row("fail", message="attention output: 3 of 4 entries out of tolerance", counterexample="case=..."),
        row("error", message="boom.attention raised RuntimeError: boom"),
        row("not-applicable", message="torch-mha does not provide: score", examples_generated=0, examples_checked=0),
        row("skipped", device="cuda", dtype="float16", message="device 'cuda' is not available",
            examples_generated=0, examples_checked=0),
    ]


def validate(report: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(REPORT_SCHEMA)
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(report)


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(REPORT_SCHEMA)


def test_a_report_validates_against_the_schema_and_is_json() -> None:
    report = build_report(mixed_rows(), IMPLS, "ci", 1.23456, command="specformer run")
    validate(report)
    assert json.loads(json.dumps(report)) == report
    assert report["schema"] == SCHEMA_NAME and report["schema_version"] == SCHEMA_VERSION
    assert report["implementations"] == IMPLS


def test_an_empty_report_validates() -> None:
    report = build_report([], IMPLS, "quick", 0.0)
    validate(report)
    assert report["summary"]["rows"] == 0 and report["summary"]["by_outcome"] == {}
    assert report["summary"]["ok"] is True


def test_the_schema_rejects_a_bad_row() -> None:
    report = build_report([row("pass")], IMPLS, "ci", 1.0)
    bad = json.loads(json.dumps(report))
    bad["rows"][0]["outcome"] = "sort of"
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)
    extra = json.loads(json.dumps(report))
    extra["rows"][0]["colour"] = "red"
    with pytest.raises(jsonschema.ValidationError):
        validate(extra)
    missing = json.loads(json.dumps(report))
    del missing["summary"]["complete"]
    with pytest.raises(jsonschema.ValidationError):
        validate(missing)


def test_the_summary_counts_rows_by_outcome() -> None:
    summary = build_report(mixed_rows(), IMPLS, "ci", 2.0)["summary"]
    assert summary["rows"] == 7
    assert summary["by_outcome"] == {"pass": 2, "refuted": 1, "fail": 1, "error": 1, "not-applicable": 1,
                                     "skipped": 1}
    assert list(summary["by_outcome"]) == [o for o in OUTCOMES if o in summary["by_outcome"]]
    assert summary["duration_s"] == 2.0 and summary["complete"] is True


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_ok_is_false_exactly_when_a_row_is_not_as_expected(outcome: str) -> None:
    rows = [row("pass"), row(outcome)]
    report = build_report(rows, IMPLS, "ci", 1.0)
    assert report["summary"]["ok"] is (outcome in EXPECTED_OUTCOMES)
    assert report["rows"][1]["as_expected"] is (outcome in EXPECTED_OUTCOMES)
    assert report["summary"]["by_outcome"].get(outcome) == (2 if outcome == "pass" else 1)


def test_as_expected_is_true_for_conforming_unrun_and_listed_rows() -> None:
    assert EXPECTED_OUTCOMES == {"pass", "refuted", "not-applicable", "skipped", "known-deviation", "fixed"}
    assert {o for o in OUTCOMES if row(o).as_expected} == EXPECTED_OUTCOMES


def test_known_deviations_and_fixed_rows_validate_and_a_strict_fixed_row_is_not_ok() -> None:
    listed = row("known-deviation", message="704 != 512", deviation_reason="padded kernels", original_outcome="fail")
    fixed = row("fixed", deviation_reason="was wrong", original_outcome="pass", seed=3)
    report = build_report([listed, fixed], IMPLS, "thorough", 1.0)
    validate(report)
    assert report["summary"]["ok"] is True
    assert report["summary"]["by_outcome"] == {"known-deviation": 1, "fixed": 1}
    assert report["rows"][0]["deviation_reason"] == "padded kernels" and report["rows"][0]["original_outcome"] == "fail"
    assert report["rows"][1]["seed"] == 3
    strict = row("fixed", deviation_reason="was wrong", original_outcome="pass", strict_deviations=True)
    strict_report = build_report([strict], IMPLS, "ci", 1.0)
    validate(strict_report)
    assert strict_report["summary"]["ok"] is False and strict_report["rows"][0]["as_expected"] is False
    bad = json.loads(json.dumps(report))
    bad["rows"][0]["original_outcome"] = "sort of"
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)


def test_a_version_2_report_written_before_seeds_and_deviations_still_validates() -> None:
    report = build_report(mixed_rows(), IMPLS, "ci", 1.0)
    for stored in report["rows"]:
        for later in ("seed", "deviation_reason", "original_outcome"):
            del stored[later]
    validate(report)
    assert report["schema_version"] == 2


def test_an_incomplete_run_is_never_ok() -> None:
    summary = build_report([row("pass")], IMPLS, "ci", 1.0, complete=False)["summary"]
    assert summary["complete"] is False and summary["ok"] is False and summary["state"] == "interrupted"
    running = build_report([row("pass")], IMPLS, "ci", 1.0, complete=True, state="running")["summary"]
    assert running["complete"] is False and running["ok"] is False


def test_an_implementation_that_failed_to_load_makes_the_run_not_ok() -> None:
    broken = implementation_entry("x.py", "x.py", status="load-error", message="importing it called exit")
    report = build_report([row("pass")], [*IMPLS, broken], "ci", 1.0)
    validate(report)
    assert report["summary"]["complete"] is True and report["summary"]["ok"] is False


def test_the_writer_marks_the_file_running_first_and_complete_only_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(build_report([row("pass")], IMPLS, "ci", 1.0)), encoding="utf-8")  # an old "ok"
    writer = ReportWriter(path, IMPLS, "ci", every_s=0.0)
    writer.start()
    first = json.loads(path.read_text(encoding="utf-8"))
    validate(first)
    assert first["summary"]["state"] == "running" and first["summary"]["ok"] is False and first["rows"] == []
    writer.add(row("pass"))
    middle = json.loads(path.read_text(encoding="utf-8"))
    assert middle["summary"]["state"] == "running" and len(middle["rows"]) == 1 and not middle["summary"]["ok"]
    final = writer.finish(complete=True)
    assert final["summary"]["state"] == "complete" and final["summary"]["ok"] is True
    assert ReportWriter(path, IMPLS, "ci").finish(complete=False)["summary"]["ok"] is False


def test_rows_keep_every_field() -> None:
    original = row("fail", message="NaN at (0, 0)", counterexample="case=...")
    stored = build_report([original], IMPLS, "ci", 1.0)["rows"][0]
    assert stored == {**original.to_json(), "as_expected": False}
    assert stored["message"] == "NaN at (0, 0)" and stored["counterexample"] == "case=..."
    assert stored["reproduce"].startswith("specformer run")


def test_the_environment_names_versions_commit_and_command() -> None:
    env = build_report([], IMPLS, "thorough", 0.0, command="specformer run --impl x")["environment"]
    assert env["torch"] == torch.__version__
    assert env["specformer"] == specformer.__version__
    assert "commit" in env and (env["commit"] is None or re.fullmatch(r"[0-9a-f]{40}", env["commit"]))
    assert env["profile"] == "thorough" and env["command"] == "specformer run --impl x"
    assert env["devices"][0] == "cpu"
    assert (env["cuda"] is None) is (not torch.cuda.is_available())
    assert datetime.fromisoformat(env["created"]).utcoffset().total_seconds() == 0


def test_git_commit_inside_and_outside_a_repository(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None
    if (ROOT / ".git").exists():
        commit = git_commit(ROOT)
        assert commit is not None and re.fullmatch(r"[0-9a-f]{40}", commit)


def test_write_report_round_trips_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    report = build_report(mixed_rows(), IMPLS, "ci", 1.0)
    path = tmp_path / "nested" / "dir" / "report.json"
    write_report(report, path)
    assert json.loads(path.read_text(encoding="utf-8")) == report
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.json"]


def test_write_report_replaces_an_existing_report(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("{\"old\": true}", encoding="utf-8")
    report = build_report([row("pass")], IMPLS, "ci", 1.0)
    write_report(report, path)
    assert json.loads(path.read_text(encoding="utf-8")) == report
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_failed_write_keeps_the_previous_report_whole(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    previous = build_report([row("pass")], IMPLS, "ci", 1.0)
    write_report(previous, path)
    broken = build_report([row("pass")], IMPLS, "ci", 1.0)
    broken["implementations"] = [{"name": object()}]  # not JSON-serialisable
    with pytest.raises(TypeError):
        write_report(broken, path)
    assert json.loads(path.read_text(encoding="utf-8")) == previous
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_non_ascii_messages_survive_the_round_trip(tmp_path: Path) -> None:
    report = build_report([row("fail", message="σ ≠ √d_k — ±∞")], IMPLS, "ci", 1.0)
    path = tmp_path / "r.json"
    write_report(report, path)
    assert json.loads(path.read_text(encoding="utf-8"))["rows"][0]["message"] == "σ ≠ √d_k — ±∞"


def test_the_writer_waits_longer_after_a_costly_rewrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rewrite that took 10 ms delays the next by 50 times that, not by every_s alone."""
    writer = ReportWriter(tmp_path / "report.json", IMPLS, "ci", every_s=0.001)
    writer.start()
    writer._cost = 0.01
    writes = []
    monkeypatch.setattr(writer, "_write", lambda state: writes.append(state))
    writer._last = __import__("time").perf_counter()
    writer.add(row("pass"))
    assert writes == []  # 0.5 s not yet passed
    writer._last -= 0.6
    writer.add(row("pass"))
    assert writes == ["running"]
