"""``specformer run --shard K/N`` and ``specformer merge``: the shards of a run, merged, are the run."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from specformer.runner import sharding
from specformer.runner.cli import main
from specformer.report.model import REPORT_SCHEMA, build_report
from specformer.runner.row import RowResult

SELECTION = ["--claims", "attention.weights-sum-to-one,attention.slide-example,scaling.dot-product-variance",
             "--impl", "reference", "--impl", "torch-sdpa", "--dtype", "float64", "--with-math"]


def test_shards_are_disjoint_cover_the_rows_and_differ_in_size_by_at_most_one() -> None:
    keys = [sharding.row_key(f"topic.p{i}", impl, "cpu", dtype)
            for i in range(23) for impl in ("a", "b") for dtype in ("float32", "float64")]
    for n in (1, 2, 3, 7, 100):
        parts = [sharding.deal(keys, k, n) for k in range(1, n + 1)]
        flat = sorted(i for part in parts for i in part)
        assert flat == list(range(len(keys)))
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
        assert parts == [sharding.deal(list(keys), k, n) for k in range(1, n + 1)]  # deterministic


def test_a_rows_shard_does_not_depend_on_the_other_rows_order() -> None:
    keys = [sharding.row_key(f"topic.p{i}", "a", "cpu", "float64") for i in range(10)]
    mine = {keys[i] for i in sharding.deal(keys, 2, 3)}
    reordered = list(reversed(keys))
    assert {reordered[i] for i in sharding.deal(reordered, 2, 3)} == mine


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", ""])
def test_a_bad_shard_is_a_usage_error(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--shard", text, "--impl", "reference"]) == 2
    assert "--shard" in capsys.readouterr().err


def _report(rows: list[RowResult], shard: tuple[int, int, int] | None = None, **env: Any) -> dict[str, Any]:
    extra: dict[str, Any] = {"seed": None, **env}
    if shard:
        extra["shard"] = {"index": shard[0], "count": shard[1], "rows_in_run": shard[2]}
    return build_report(rows, [{"name": "mine", "spec": "mine.py", "operations": ["attention"]}], "ci", 1.0,
                        environment_extra=extra)


def _row(prop: str, outcome: str = "pass") -> RowResult:
    return RowResult("attention.x", prop, "mine", "cpu", "float64", "hold", outcome)


@pytest.mark.parametrize("change, fragment", [
    (lambda a, b: b["summary"].update(state="interrupted"), "not complete"),
    (lambda a, b: b["environment"].update(profile="thorough"), "profile 'thorough' differs"),
    (lambda a, b: b["environment"].update(seed=7), "seed 7 differs"),
    (lambda a, b: b["environment"].update(torch="0.0"), "torch '0.0' differs"),
    (lambda a, b: b["rows"].append(copy.deepcopy(a["rows"][0])), "is in both"),
    (lambda a, b: b["environment"]["shard"].update(index=1), "are both shard 1/2"),
    (lambda a, b: b["environment"]["shard"].update(index=3, count=3), "different splits"),
    (lambda a, b: b["environment"].pop("shard"), "some reports are shards"),
    (lambda a, b: b["implementations"][0].update(status="load-error"), "implementation 'mine' differs"),
])
def test_merge_refuses_reports_of_different_runs_overlaps_and_gaps(tmp_path: Path, change: Any, fragment: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _report([_row("attention.p1")], (1, 2, 2)), _report([_row("attention.p2")], (2, 2, 2))
    change(a, b)
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert main(["merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "m.json")]) == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_merge_refuses_a_missing_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.json").write_text(json.dumps(_report([_row("attention.p1")], (1, 3, 3))))
    (tmp_path / "b.json").write_text(json.dumps(_report([_row("attention.p2")], (2, 3, 3))))
    assert main(["merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "m.json")]) == 2
    assert "shard(s) 3/3 missing" in capsys.readouterr().err


def _run(cwd: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "specformer", "run", *SELECTION, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((cwd / args[args.index("--report") + 1]).read_text(encoding="utf-8"))


def _without_durations(report: dict[str, Any]) -> list[str]:
    return sorted(json.dumps({k: v for k, v in r.items() if k != "duration_s"}, sort_keys=True)
                  for r in report["rows"])


def test_two_shards_merged_have_the_rows_of_the_whole_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = _run(tmp_path, "--report", "whole.json")
    one = _run(tmp_path, "--report", "s1.json", "--shard", "1/2")
    two = _run(tmp_path, "--report", "s2.json", "--shard", "2/2")
    assert len(whole["rows"]) >= 5 and {len(one["rows"]), len(two["rows"])} <= {len(whole["rows"]) // 2,
                                                                                (len(whole["rows"]) + 1) // 2}
    assert one["environment"]["shard"] == {"index": 1, "count": 2, "rows_in_run": len(whole["rows"])}
    code = main(["merge", str(tmp_path / "s2.json"), str(tmp_path / "s1.json"), "-o", str(tmp_path / "m.json")])
    assert code == 0, capsys.readouterr()
    merged = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(merged)
    assert _without_durations(merged) == _without_durations(whole)
    assert merged["summary"]["state"] == "complete" and merged["summary"]["ok"] is True
    assert {i["name"] for i in merged["implementations"]} == {i["name"] for i in whole["implementations"]}
    assert [m["report"] for m in merged["environment"]["merged_from"]] == [str(tmp_path / "s2.json"),
                                                                         str(tmp_path / "s1.json")]
