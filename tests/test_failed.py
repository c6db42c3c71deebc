"""Rerunning what failed (``--failed REPORT``) and reproducing a random (thorough) failure from its command."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specformer.runner.cli import main
from specformer.report.model import build_report, implementation_entry, write_report
from specformer.runner.row import RowResult
from specformer.runner.selection import SelectionError, failed_rows, read_report, row_selected

from test_deviations import MUTANT, PROP
from conftest import cli

KEYS = ("claim", "property", "implementation", "device", "dtype", "outcome", "message", "counterexample", "seed",
        "examples_generated", "examples_checked")



def row(outcome: str, **kwargs: Any) -> RowResult:
    fields: dict[str, Any] = dict(claim="masking.c", property="masking.p", implementation="mine", device="cpu",
                                  dtype="float32", expect="hold", outcome=outcome)
    fields.update(kwargs)
    return RowResult(**fields)


def test_the_failed_rows_are_those_not_as_expected_named_by_their_spec() -> None:
    report = build_report([row("pass"), row("fail", seed=5), row("error", dtype="float64"),
                           row("known-deviation", device="cuda"), row("inconclusive", implementation="math")],
                          [implementation_entry("mine", "path/mine.py"), implementation_entry("math", "math")], "ci", 1)
    selectors = failed_rows(report)
    assert [(s["spec"], s["dtype"], s["seed"]) for s in selectors] == [
        ("path/mine.py", "float32", 5), ("path/mine.py", "float64", None), ("math", "float32", None)]
    assert row_selected(selectors, "masking.p", "path/mine.py", "cpu", "float64") == selectors[1]
    assert row_selected(selectors, "masking.p", "path/mine.py", "cuda", "float32") is None
    assert row_selected(None, "anything", "x", "cpu", "float32") == {}


@pytest.mark.parametrize("content", ["not json", json.dumps({"rows": []}), json.dumps([1, 2]),
                                     json.dumps({"schema": "specformer-report", "schema_version": 9, "rows": []})])
def test_a_file_that_is_not_a_report_is_a_usage_error(tmp_path: Path, content: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SelectionError, match="not a specformer report"):
        read_report(path)
    assert main(["run", "--failed", str(path)]) == 2
    assert "not a specformer report" in capsys.readouterr().err


def test_a_report_without_failures_reruns_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.json"
    write_report(build_report([row("pass"), row("skipped")], [], "ci", 1), path)
    assert main(["run", "--failed", str(path), "--report", str(tmp_path / "new.json")]) == 0
    assert "nothing to rerun" in capsys.readouterr().out
    assert not (tmp_path / "new.json").exists()


@pytest.fixture(scope="module")
def thorough_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A thorough (random) run of a mutant that fails and of the reference that passes."""
    cwd = tmp_path_factory.mktemp("failed")
    (cwd / "mutant.py").write_text(MUTANT, encoding="utf-8")
    done = cli("run", "--impl", "mutant.py", "--impl", "reference", "--property", PROP, "--dtype", "float64",
               "--profile", "thorough", "--report", "first.json", cwd=cwd)
    assert done.returncode == 1, done.stdout + done.stderr
    return cwd, json.loads((cwd / "first.json").read_text(encoding="utf-8"))


def test_the_summary_shows_a_readable_block_per_failing_row(thorough_run) -> None:
    cwd, report = thorough_run
    (failing,) = [r for r in report["rows"] if not r["as_expected"]]
    assert failing["seed"] is not None and f"--seed {failing['seed']}" in failing["reproduce"]
    assert "_seeded(" not in failing["counterexample"] and "reproduce_failure" not in failing["counterexample"]


def test_the_reproduce_command_of_a_thorough_failure_reproduces_it(thorough_run) -> None:
    cwd, report = thorough_run
    (failing,) = [r for r in report["rows"] if not r["as_expected"]]
    argv = shlex.split(failing["reproduce"])
    assert argv[:2] == ["specformer", "run"] and "thorough" in argv
    done = cli(*argv[1:], "--report", "again.json", cwd=cwd)
    assert done.returncode == 1, done.stdout + done.stderr
    (again,) = json.loads((cwd / "again.json").read_text(encoding="utf-8"))["rows"]
    assert {k: again[k] for k in KEYS} == {k: failing[k] for k in KEYS}
    assert failing["reproduce"] in done.stdout and "seed:" in done.stdout


def test_failed_reruns_exactly_the_failing_rows_with_the_reports_profile(thorough_run) -> None:
    cwd, report = thorough_run
    (failing,) = [r for r in report["rows"] if not r["as_expected"]]
    refused = cli("run", "--failed", "first.json", "--report", "rerun.json", cwd=cwd)  # a report names no file to run
    assert refused.returncode == 2 and "--impl mutant.py" in refused.stderr, refused.stdout + refused.stderr
    done = cli("run", "--failed", "first.json", "--impl", "mutant.py", "--report", "rerun.json", cwd=cwd)
    assert done.returncode == 1, done.stdout + done.stderr
    rerun = json.loads((cwd / "rerun.json").read_text(encoding="utf-8"))
    assert rerun["environment"]["profile"] == "thorough"
    (only,) = rerun["rows"]
    assert {k: only[k] for k in KEYS} == {k: failing[k] for k in KEYS}
    assert [i["spec"] for i in rerun["implementations"]] == ["mutant.py"]


def test_the_profiles_do_not_follow_the_ci_variable() -> None:
    """Hypothesis switches its default profile under CI=true; the suite's profiles must not change."""
    import os

    code = ("from specformer.runner.profiles import PROFILES; "
            "print([(n, PROFILES[n].derandomize, PROFILES[n].print_blob) for n in sorted(PROFILES)])")
    outputs = {ci: subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                  env={**{k: v for k, v in os.environ.items() if k != "CI"},
                                       **({"CI": "true"} if ci else {})}).stdout
               for ci in (False, True)}
    assert outputs[False] == outputs[True], outputs
    assert "('thorough', False" in outputs[True]
