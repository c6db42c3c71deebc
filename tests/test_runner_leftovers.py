"""The runner against implementations that attack the runner itself, and its usage errors.

One ``specformer run`` checks the reference beside implementations of
``tests/hostile_impls.py`` that kill or stop their fork server, write an answer nobody
asked for on the worker's channel, or leave behind a detached process that rewrites the
report. Each ends as a clear row of its own; the reference's row passes; the report is
the run's own, written last; no process of the run outlives it. Then the usage errors:
clashing implementation names, deviation entries that would hide others' failures,
numbers that mean nothing, and ``--jobs`` above the number of rows.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from specformer.runner import confine
from specformer.runner.cli import main
from specformer.report.model import REPORT_SCHEMA
from conftest import alive, cli

HOSTILE = Path(__file__).resolve().parent / "hostile_impls.py"
SLIDE = "attention.the_slides_weights_give_the_slides_output"
#: Whether workers run confined here (runner.confine): signals to the harness's processes are refused.
CONFINED = confine.supported()
CLASSES = ["KillsItsForkServer", "StopsItsForkServer", "AnswersOutOfTurn", "LeavesAForger"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("leftovers")
    args = ["run", "--property", SLIDE, "--dtype", "float64", "--row-timeout", "30", "--report", "R.json",
            "--impl", "reference"]
    for name in CLASSES:
        args += ["--impl", f"{HOSTILE}:{name}"]
    start = time.perf_counter()
    done = cli(*args, cwd=tmp, timeout=1800)
    seconds = time.perf_counter() - start
    written = (tmp / "R.json").read_text(encoding="utf-8")
    time.sleep(3.0)  # the forger starts rewriting 2 s after its fork: it must be gone by now
    return {"done": done, "tmp": tmp, "seconds": seconds, "written": written,
            "report": json.loads((tmp / "R.json").read_text(encoding="utf-8")), "output": done.stdout + done.stderr}


def row(run: dict[str, Any], name: str) -> dict[str, Any]:
    rows = [r for r in run["report"]["rows"] if r["implementation"] == name]
    assert len(rows) == 1, (rows, run["output"][-3000:])
    return rows[0]


def test_the_run_completes_with_its_own_valid_report(run: dict[str, Any]) -> None:
    report = run["report"]
    assert "forged" not in report, run["output"][-2000:]
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(report)
    assert report["summary"]["state"] == "complete" and report["summary"]["ok"] is False
    assert run["done"].returncode == 1, run["output"][-2000:]
    assert (run["tmp"] / "R.json").read_text(encoding="utf-8") == run["written"]
    assert {r["implementation"] for r in report["rows"]} == {
        "reference", "kills-its-fork-server", "stops-its-fork-server", "answers-out-of-turn", "leaves-a-forger"}


def test_killing_its_fork_server_loses_only_its_own_row(run: dict[str, Any]) -> None:
    assert row(run, "reference")["outcome"] == "pass", row(run, "reference")["message"]
    killer = row(run, "kills-its-fork-server")
    assert killer["outcome"] == "error", killer["message"]
    if CONFINED:  # the signal is refused: the implementation's own call fails, and says why
        assert "raised PermissionError" in killer["message"] and "the worker is confined" in killer["message"], \
            killer["message"]
        return
    # Which of the two it notices first depends on timing: its fork server gone, or its worker (killed with it)
    # silent on the next request. Either way the row is its own error, and the reference's row above passed.
    assert killer["message"].startswith("kills-its-fork-server: "), killer["message"]
    assert ("fork server, is gone" in killer["message"] or "the worker stopped answering" in killer["message"]
            or "and so was the process that forked it" in killer["message"]), killer["message"]


def test_stopping_its_fork_server_does_not_stop_the_run(run: dict[str, Any]) -> None:
    stopper = row(run, "stops-its-fork-server")
    if CONFINED:  # refused: its own call fails
        assert stopper["outcome"] == "error" and "the worker is confined" in stopper["message"], stopper["message"]
    else:  # it answered right; stopping its server cost it nothing
        assert stopper["outcome"] == "pass", stopper["message"]
    # and the run ended on its own: the fixture's subprocess backstop (1,800 s) did not have to end it


def test_an_answer_out_of_turn_kills_the_worker_and_says_so(run: dict[str, Any]) -> None:
    extra = row(run, "answers-out-of-turn")
    assert extra["outcome"] == "error", extra
    assert "out of turn" in extra["message"] and "was killed" in extra["message"], extra["message"]


def test_a_process_left_behind_is_ended_before_the_report_is_written_last(run: dict[str, Any]) -> None:
    assert row(run, "leaves-a-forger")["outcome"] == "pass"
    pid_file = run["tmp"] / "forger.pid"
    assert pid_file.exists(), "the forger never started: the test proves nothing"
    assert not alive(int(pid_file.read_text())), "the forger outlived the run"


# -- names ---------------------------------------------------------------------------------


NAMED = 'from specformer.adapters.reference import implementation as _r\n\nclass Mine:\n    name = {name!r}\n' \
        '    def attention(self, *a, **k):\n        return _r.attention(*a, **k)\n\nimplementation = Mine()\n'


@pytest.mark.parametrize("files, fragment", [
    ({"mine.py": "reference"}, "'reference', a name reserved for the shipped implementation"),
    ({"mine.py": "math"}, "'math', a name reserved"),
    ({"a.py": "twin", "b.py": "twin"}, "are both named 'twin'"),
])
def test_a_name_clash_is_a_usage_error_naming_it(tmp_path: Path, files: dict[str, str], fragment: str) -> None:
    args = ["run", "--property", SLIDE, "--dtype", "float64", "--report", "R.json", "--impl", "reference"]
    for file, name in files.items():
        (tmp_path / file).write_text(NAMED.format(name=name), encoding="utf-8")
        args += ["--impl", file]
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert fragment in done.stderr, done.stderr
    assert not (tmp_path / "R.json").exists()  # nothing ran, nothing was written


# -- deviations ----------------------------------------------------------------------------


def test_a_deviation_for_every_implementation_is_refused_before_anything_runs(tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    for text in ('claim = "*"\nimplementation = "mine"', 'claim = "attention.*"\nimplementation = "*"',
                 'claim = "attention.*"'):
        (tmp_path / "d.toml").write_text(f'[[deviation]]\n{text}\nreason = "r"\n', encoding="utf-8")
        assert main(["run", "--impl", "reference", "--deviations", str(tmp_path / "d.toml")]) == 2
    err = capsys.readouterr().err
    assert "claim '*' must name its topic" in err
    assert "implementation '*' matches 'math'" in err
    assert "needs 'implementation'" in err


def test_a_wildcard_over_two_implementations_of_the_run_is_a_usage_error(tmp_path: Path) -> None:
    for file, name in (("a.py", "mine-a"), ("b.py", "mine-b")):
        (tmp_path / file).write_text(NAMED.format(name=name), encoding="utf-8")
    (tmp_path / "d.toml").write_text('[[deviation]]\nclaim = "attention.*"\nimplementation = "mine-*"\n'
                                     'reason = "r"\n', encoding="utf-8")
    done = cli("run", "--property", SLIDE, "--dtype", "float64", "--impl", "a.py", "--impl", "b.py",
               "--deviations", "d.toml", "--report", "R.json", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "d.toml#1: implementation 'mine-*' matches 2 implementations of this run (mine-a, mine-b)" in done.stderr


WRONG = textwrap.dedent("""
    import torch
    from specformer.adapters.reference import implementation as _r

    class Wrong:
        name = "wrong"
        def attention(self, q, k, v, mask=None, *, causal=False):
            out, weights = _r.attention(q, k, v, mask, causal=causal)
            return out + 1.0, weights

    implementation = Wrong()
    """)


def test_strict_deviations_shows_the_failures_an_entry_hid(tmp_path: Path) -> None:
    (tmp_path / "wrong.py").write_text(WRONG, encoding="utf-8")
    (tmp_path / "d.toml").write_text('[[deviation]]\nclaim = "attention.*"\nimplementation = "wrong"\n'
                                     'reason = "adds one"\n', encoding="utf-8")
    args = ["run", "--property", SLIDE, "--dtype", "float64", "--impl", "wrong.py", "--deviations", "d.toml",
            "--report", "R.json"]
    plain = cli(*args, cwd=tmp_path)
    assert plain.returncode == 0 and "hidden by known deviations" not in plain.stdout, plain.stdout + plain.stderr
    strict = cli(*args, "--strict-deviations", cwd=tmp_path)
    assert "1 failure(s) hidden by known deviations" in strict.stdout, strict.stdout + strict.stderr
    assert f"FAIL  attention.slide-example  [wrong-cpu-float64]  {SLIDE}" in strict.stdout
    assert "listed because: adds one" in strict.stdout


# -- numbers -------------------------------------------------------------------------------


@pytest.mark.parametrize("args, fragment", [
    (["--row-timeout", "nan"], "--row-timeout must be a finite positive number of seconds, got nan"),
    (["--row-timeout", "inf"], "got inf"),
    (["--row-timeout", "0"], "got 0.0"),
    (["--row-timeout", "-1"], "got -1.0"),
    (["--memory-limit", "1"], "--memory-limit must be 0 (no limit) or at least 256 MiB, got 1"),
    (["--memory-limit", "-5"], "got -5"),
    (["--jobs", "0"], "--jobs must be at least 1, got 0"),
    (["--threads", "0"], "--threads must be between 1 and 1024, got 0"),
    (["--threads", "100000"], "got 100000"),
    (["--seed", "-1"], "--seed must be between 0"),
    (["--impl", ":"], "--impl ':' names no module or file before ':'"),
    (["--impl", "a.b:"], None),
])
def test_numbers_that_mean_nothing_are_usage_errors(args: list[str], fragment: str | None,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", *args, "--claims", "no-such-claim.x"])  # a valid option still fails on the selection
    err = capsys.readouterr().err
    assert code == 2
    if fragment is None:
        assert "matches no claim" in err, err
    else:
        assert fragment in err, err


def test_memory_limit_zero_still_means_none() -> None:
    from specformer.runner.options import number_problem

    assert number_problem(memory_mib=0) is None and number_problem(memory_mib=256) is None


def test_jobs_above_the_number_of_rows_are_capped_in_one_line(tmp_path: Path) -> None:
    done = cli("run", "--property", SLIDE, "--dtype", "float64", "--impl", "reference", "--jobs", "100000",
               "--report", "R.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--jobs 100000 capped at 1, the number of rows selected" in done.stdout
    assert len(json.loads((tmp_path / "R.json").read_text())["rows"]) == 1


def test_a_worker_found_gone_with_its_fork_server_says_both() -> None:
    """Its implementation's fork server killed between two calls (by the implementation, or by the
    checker after the server stopped answering): the next request names both, not a silent worker."""
    import signal

    from specformer.runner.supervisor import WorkerLost, WorkerPool, fork_server, shutdown

    pool = WorkerPool()
    try:
        answer = pool.load("reference", 120)
        assert answer["status"] == "loaded", answer
        worker = pool.worker("reference", time.monotonic() + 60)
        request = {"op": "call", "method": "score", "args": ("dot", _tensor(), _tensor()), "kwargs": {},
                   "names": ("kind", "q", "k")}
        assert worker.request(request, "calling score", time.monotonic() + 60)["status"] == "ok"
        os.kill(fork_server("reference").pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and alive(worker.pid):
            time.sleep(0.05)  # the worker dies with its server (PR_SET_PDEATHSIG)
        with pytest.raises(WorkerLost, match="gone before the request, and so was .* fork server"):
            worker.request(request, "calling score", time.monotonic() + 60)
        fresh = pool.worker("reference", time.monotonic() + 60)  # the next row gets a fresh worker and server
        assert fresh.request(request, "calling score", time.monotonic() + 60)["status"] == "ok"
    finally:
        for spec in ("reference",):
            pool.discard(spec)
        shutdown()


def _tensor() -> Any:
    import torch

    return torch.ones(1, 2, 3, dtype=torch.float64)
