"""The ``specformer`` command: listing claims, argument errors, and a real run with its reproduction."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from specformer.claims import check_consistency, load_claims
from specformer.runner.cli import build_parser, main
from specformer.runner.loading import load_implementation
from specformer.property import load_properties
from specformer.report.model import REPORT_SCHEMA
from specformer.runner.plugin import implementation_of, scope_of
from specformer.runner.row import MATH, reproduce_command
from conftest import cli

SUMS = "attention.weights-sum-to-one"
#: A row's line under ``-v`` with xdist: ``[gw0] [ 16%] PASSED attention/attention.py::p[reference-cpu-float32]``
#: (the job, the progress, the outcome and the row's node id); xdist's header lines (``[gw0] linux Python ...``,
#: ``[gw0] Python 3.11.7 (...) [GCC 12.2.0]``) are not rows.
ROW_LINE = re.compile(r"\[(gw\d+)\] \[\s*\d+%\] [A-Z]+ (\S+\.py::\w+\[[^\]\s]+\])")
ROOT = Path(__file__).resolve().parent.parent



# -- specformer claims (in-process: it does not start pytest) ----------------------------


def test_claims_lists_every_claim_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["claims"]) == 0
    out = capsys.readouterr().out
    claims = load_claims()
    lines = [line for line in out.splitlines() if line.strip()]
    listed = [line.split()[0] for line in lines[:-1]]  # the last line is the count
    assert listed == list(claims)
    assert out.rstrip().endswith(f"{len(claims)} claims")


def test_claims_json_gives_every_claim_with_its_properties(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["claims", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    claims, props = load_claims(), load_properties()
    assert [entry["id"] for entry in data] == list(claims)
    for entry in data:
        assert {"id", "sources", "kind", "verdict", "statement", "properties"} <= set(entry)
        claim = claims[entry["id"]]
        assert entry["kind"] == claim.kind and entry["verdict"] == claim.verdict
        assert [s["document"] for s in entry["sources"]] == [s.document for s in claim.sources]
        expected = sorted(p.qualname for p in props.values() if p.claim == claim.id)
        assert sorted(p["property"] for p in entry["properties"]) == expected
        for p in entry["properties"]:
            assert p["expect"] in ("hold", "counterexample") and isinstance(p["needs"], list)


def test_claims_topic_filters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["claims", "--json", "--topic", "masking"]) == 0
    ids = [entry["id"] for entry in json.loads(capsys.readouterr().out)]
    expected = [c.id for c in load_claims().values() if c.topic == "masking"]
    assert expected and ids == expected
    assert main(["claims", "--topic", "masking"]) == 0
    out = capsys.readouterr().out
    assert "masking." in out and "attention." not in out and out.rstrip().endswith(f"{len(expected)} claims")


def test_claims_check_exits_one_exactly_when_there_are_problems(capsys: pytest.CaptureFixture[str]) -> None:
    problems = check_consistency(load_claims(), load_properties().values())
    assert main(["claims", "--check"]) == (1 if problems else 0)
    captured = capsys.readouterr()
    assert captured.err.splitlines() == problems
    assert ("consistent" if not problems else f"{len(problems)} problems") in captured.out


# -- specformer run: argument errors (in-process: they stop before pytest) ---------------


def test_run_rejects_a_bad_number_of_jobs_or_memory_limit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--jobs", "0"]) == 2
    assert main(["run", "--memory-limit", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--jobs" in err and "--memory-limit" in err


def test_run_with_a_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.py"
    assert main(["run", "--impl", "reference", "--impl", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err


def test_run_rejects_an_unknown_device_or_profile(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["run", "--device", "tpu"], ["run", "--profile", "forever"]):
        with pytest.raises(SystemExit) as info:
            main(args)
        assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


# -- specformer run: a real run and its reproduction (subprocesses) ----------------------


@pytest.fixture(scope="module")
def sums_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    cwd = tmp_path_factory.mktemp("run")
    done = cli("run", "--claims", SUMS, "--impl", "reference", "--report", "R.json", cwd=cwd)
    report_path = cwd / "R.json"
    assert report_path.exists(), done.stdout + done.stderr
    return done, json.loads(report_path.read_text(encoding="utf-8"))


def test_run_exits_0_and_reports_only_the_selected_claim(sums_run) -> None:
    done, report = sums_run
    assert done.returncode == 0, done.stdout + done.stderr
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(report)
    rows = report["rows"]
    assert rows and {r["claim"] for r in rows} == {SUMS}
    assert {r["implementation"] for r in rows} == {"reference"}
    assert {r["outcome"] for r in rows} == {"pass"}
    assert {(r["device"], r["dtype"]) for r in rows} == {("cpu", "float32"), ("cpu", "float64")}
    assert all(r["examples_checked"] >= r["min_checked"] > 0 for r in rows)
    assert report["summary"]["ok"] is True and report["summary"]["complete"] is True
    assert [i["name"] for i in report["implementations"]] == ["reference"]
    assert report["environment"]["profile"] == "ci"


def test_two_jobs_give_the_rows_of_one_job_with_each_implementation_run_by_one_job(tmp_path: Path) -> None:
    impls = ("reference", "torch-sdpa", "torch-mha")
    done = cli("run", "--claims", SUMS, *(a for i in impls for a in ("--impl", i)), "--jobs", "2",
               "--report", "R.json", "-v", cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    assert report["summary"]["complete"] is True and report["summary"]["ok"] is True
    assert sorted((r["implementation"], r["dtype"]) for r in report["rows"]) == [
        (i, d) for i in sorted(impls) for d in ("float32", "float64")]
    jobs: dict[str, set[str]] = {}  # -v names each row's job: "[gw0] [ 16%] PASSED ...[IMPL-cpu-DTYPE]"
    rows = [m.groups() for m in map(ROW_LINE.fullmatch, (line.rstrip() for line in output.splitlines())) if m]
    assert len(rows) == len(report["rows"]), output  # every row's line, and nothing else
    for job, nodeid in rows:
        jobs.setdefault(implementation_of(nodeid), set()).add(job)
    assert set(jobs) == set(impls) and all(len(j) == 1 for j in jobs.values()), jobs


def test_a_rows_node_id_names_its_implementation() -> None:
    assert implementation_of("attention/attention.py::p[hf-bert-tokenizer-cpu-float64]") == "hf-bert-tokenizer"
    assert implementation_of("blocks/ffn.py::p[math-cpu-float64]") == "math"


def test_a_rows_group_is_its_implementation_on_the_cpu_and_one_dtype_on_an_accelerator() -> None:
    assert scope_of("a/b.py::p[hf-bert-tokenizer-cpu-float64]") == scope_of("a/b.py::q[hf-bert-tokenizer-cpu-float32]")
    assert scope_of("a/b.py::p[hf-bert-tokenizer-cpu-float64]") == "hf-bert-tokenizer-cpu"
    assert scope_of("a/b.py::p[torch-nn-cuda-float16]") == "torch-nn-cuda-float16"
    assert scope_of("a/b.py::p[torch-nn-cuda-float16]") != scope_of("a/b.py::p[torch-nn-cuda-bfloat16]")


def test_a_rows_reproduce_command_reruns_exactly_that_row(sums_run, tmp_path: Path) -> None:
    _, report = sums_run
    original = next(r for r in report["rows"] if r["dtype"] == "float32")
    argv = shlex.split(original["reproduce"])
    assert argv[:2] == ["specformer", "run"]
    done = cli(*argv[1:], cwd=tmp_path)  # writes the default report, reports/report.json
    assert done.returncode == 0, done.stdout + done.stderr
    again = json.loads((tmp_path / "reports" / "report.json").read_text(encoding="utf-8"))
    assert len(again["rows"]) == 1, [r["property"] for r in again["rows"]]
    keys = ("claim", "property", "implementation", "device", "dtype", "expect", "outcome", "examples_generated",
            "examples_checked")
    assert {k: again["rows"][0][k] for k in keys} == {k: original[k] for k in keys}
    assert again["rows"][0]["reproduce"] == original["reproduce"]


def test_the_reproduce_command_of_a_math_row_names_loadable_implementations() -> None:
    prop = next((p for p in load_properties().values() if not p.needs), None)
    if prop is None:
        pytest.skip("no property about the mathematics is registered")
    # The plugin builds math rows with impl_spec=MATH (plugin.PropertyItem.runtest).
    args = build_parser().parse_args(shlex.split(reproduce_command(prop, MATH, "cpu", "float64", "ci"))[1:])
    for spec in args.impl or []:
        load_implementation(spec)


def test_the_cli_offers_exactly_the_hypothesis_profiles() -> None:
    from specformer.runner.cli import PROFILE_NAMES
    from specformer.runner.profiles import PROFILES

    from conftest import TEST_PROFILES

    # conftest adds test-only profiles (no shrinking; search alone) to the same table
    assert set(PROFILE_NAMES) == set(PROFILES) - TEST_PROFILES


def test_the_thorough_profile_searches_without_the_hand_picked_examples() -> None:
    from hypothesis import Phase

    from specformer.runner.profiles import PROFILES

    assert Phase.explicit not in PROFILES["thorough"].phases
    assert Phase.explicit in PROFILES["ci"].phases and PROFILES["ci"].derandomize


# -- exit codes and the report's life ------------------------------------------------------


def test_an_unimportable_implementation_is_a_load_error_in_a_complete_report(tmp_path: Path) -> None:
    done = cli("run", "--impl", "nonexistent.module:x", "--impl", "reference", "--claims", SUMS,
               "--report", "R.json", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(report)
    entry = next(i for i in report["implementations"] if i["spec"] == "nonexistent.module:x")
    assert entry["status"] == "load-error" and "nonexistent.module" in entry["message"]
    assert {r["implementation"] for r in report["rows"]} == {"reference"}
    assert report["summary"]["complete"] is True and report["summary"]["ok"] is False
    assert "could not be loaded" in done.stdout


def test_nothing_selected_exits_4(tmp_path: Path) -> None:
    # each option matches something; together they select no row
    done = cli("run", "--claims", "masking.*", "--topic", "scaling", "--report", "R.json", cwd=tmp_path)
    assert done.returncode == 4, done.stdout + done.stderr
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    assert report["summary"]["rows"] == 0 and report["summary"]["state"] == "complete"


SPINS = textwrap.dedent(
    """
    class Spins:
        name = "spins"
        def attention(self, q, k, v, mask=None, *, causal=False):
            while True:
                pass

    implementation = Spins()
    """
)


def _started(path: Path, deadline: float) -> dict[str, Any]:
    while time.monotonic() < deadline:
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = None
        if report and report["summary"]["state"] == "running":
            return report
        time.sleep(0.1)
    raise AssertionError("the report was never marked running")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_run_stopped_early_never_leaves_a_report_that_claims_success(tmp_path: Path, how: str) -> None:
    (tmp_path / "spins.py").write_text(SPINS, encoding="utf-8")
    report_path = tmp_path / "R.json"
    report_path.write_text(json.dumps({"summary": {"ok": True, "complete": True, "state": "complete"}}))
    junit_path = tmp_path / "J.xml"
    process = subprocess.Popen(
        [sys.executable, "-m", "specformer", "run", "--impl", "spins.py", "--claims", "attention.slide-example",
         "--row-timeout", "600", "--report", str(report_path), "--junit", str(junit_path)], cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        running = _started(report_path, time.monotonic() + 120)
        assert running["summary"]["ok"] is False and running["summary"]["complete"] is False
        time.sleep(1.0)
        process.send_signal(getattr(signal, how))
        output, _ = process.communicate(timeout=600)
    finally:
        process.kill()
        process.wait()  # reaped here: a process left for the garbage collector warns in a later test
        process.stdout.close()
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["summary"]["ok"] is False and report["summary"]["complete"] is False
    if how == "SIGTERM":
        assert process.returncode == 3, output
        assert report["summary"]["state"] == "interrupted"
        assert "every claim ended as expected" not in output
        junit = junit_path.read_text(encoding="utf-8")  # written at the end of an interrupted run too
        assert '<property name="state" value="interrupted"' in junit and 'name="run incomplete"' in junit
    else:
        assert report["summary"]["state"] == "running"
    # the spinning worker and the fork server die with the checker, whatever killed it
    deadline = time.monotonic() + 20
    while _processes_in(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes_in(tmp_path), "processes of the run outlived it"


def _processes_in(folder: Path) -> list[int]:
    """Live processes whose working folder is ``folder`` (Linux ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(entry / "cwd").resolve() == folder.resolve():
                    state = (entry / "stat").read_text().split(")")[-1].split()[0]
                    if state != "Z":
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


# -- specformer site: from the package alone ---------------------------------------------


def test_the_site_command_builds_pages_from_a_folder_outside_the_checkout(sums_run, tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    report = tmp_path / "R.json"
    report.write_text(json.dumps(sums_run[1]), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "specformer", "site", "--report", "R.json", "-o", "out",
                           "--no-plots", "--strict"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (tmp_path / "out" / "claims" / SUMS / "index.html").read_text(encoding="utf-8")
    assert "reference" in page and "weights_sum_to_one" in page
    assert (tmp_path / "out" / "claims" / "index.html").is_file() and (tmp_path / "out" / "index.html").is_file()


def test_the_site_command_refuses_a_file_that_is_not_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    assert main(["site", "--report", str(bad), "-o", str(tmp_path / "out")]) == 2
    assert main(["site", "--report", str(tmp_path / "missing.json"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "missing.json" in err and not (tmp_path / "out").exists()


def test_a_known_deviation_is_reported_by_its_reason_without_formatting_a_traceback() -> None:
    """pytest formats a traceback from the sources for every xfail (0.16 s each: 13 s of a suite's 79 known
    deviations); the row already holds the reason, so the item gives pytest that text alone."""
    from specformer.runner.plugin import PropertyItem

    try:
        pytest.xfail("known deviation: the fast path differs")
    except pytest.xfail.Exception as exc:
        excinfo = pytest.ExceptionInfo.from_exception(exc)
    assert PropertyItem.repr_failure(object(), excinfo) == "known deviation: the fast path differs"  # type: ignore[arg-type]
