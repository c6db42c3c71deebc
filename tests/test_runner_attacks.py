"""The runner against implementations that attack the harness beyond their own worker.

Each case is one ``specformer run`` of the reference beside one implementation of
``tests/hostile_impls.py`` (or a file written here) and states its outcome: the right
implementation blamed, every other row as expected, the run finished on its own, its
report its own, nothing left running.

* killing the root fork server, or stopping (SIGSTOP) the checker: refused to a confined
  worker (:mod:`specformer.runner.confine`), so the implementation's own call fails;
* a chain of short-lived forks that rewrites the report after the run: it cannot leave the
  worker's process group, which the end of the run kills in one call;
* a declaration that excludes this machine (CUDA only, bfloat16 only): no row of it is
  checked, and the run says so and fails; a declaration that changes between reads is read once;
* a deviations file rewritten by an implementation while it loads: read once, before;
* the second process of a determinism check, asked to replay what the first wrote to its
  working or temporary directory: it finds nothing there;
* a usage error (exit 2) with an earlier report at ``--report``: that report is marked stale.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from specformer.runner import confine
from conftest import alive, cli

HOSTILE = Path(__file__).resolve().parent / "hostile_impls.py"
SLIDE = "attention.the_slides_weights_give_the_slides_output"
FORMULA = "attention.output_matches_the_formula"
DETERMINISM = "bpe.training_the_same_counts_again_gives_the_same_merges"

needs_confinement = pytest.mark.skipif(not confine.supported(), reason="workers are confined on Linux x86-64/AArch64")


def rows_of(report: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [r for r in report["rows"] if r["implementation"] == name]


def run_against(tmp_path: Path, hostile: str, *extra: str, prop: str = SLIDE) -> tuple[subprocess.CompletedProcess[str],
                                                                                      dict[str, Any]]:
    done = cli("run", "--property", prop, "--dtype", "float64", "--row-timeout", "60", "--report", "R.json",
               "--impl", "reference", "--impl", f"{HOSTILE}:{hostile}", *extra, cwd=tmp_path)
    return done, json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))


# -- the harness's processes ---------------------------------------------------------------


@needs_confinement
def test_killing_the_root_fork_server_is_refused_and_blames_only_the_killer(tmp_path: Path) -> None:
    done, report = run_against(tmp_path, "KillsTheRootForkServer")
    output = done.stdout + done.stderr
    assert done.returncode == 1 and report["summary"]["state"] == "complete", output[-2000:]
    (killer,) = rows_of(report, "kills-the-root-fork-server")
    assert killer["outcome"] == "error", killer
    assert "PermissionError" in killer["message"] and "the worker is confined" in killer["message"], killer["message"]
    (reference,) = rows_of(report, "reference")
    assert reference["outcome"] == "pass", reference["message"]


@needs_confinement
def test_stopping_the_checker_is_refused_and_the_run_ends_on_its_own(tmp_path: Path) -> None:
    start = time.monotonic()
    done, report = run_against(tmp_path, "StopsItsChecker")
    assert time.monotonic() - start < 300, "the run did not end on its own"  # a backstop, not a timing
    assert done.returncode == 1 and report["summary"]["state"] == "complete", (done.stdout + done.stderr)[-2000:]
    (stopper,) = rows_of(report, "stops-its-checker")
    assert stopper["outcome"] == "error" and "the worker is confined" in stopper["message"], stopper["message"]
    (reference,) = rows_of(report, "reference")
    assert reference["outcome"] == "pass", reference["message"]


@needs_confinement
def test_a_chain_of_forks_is_ended_with_the_run_and_cannot_rewrite_its_report(tmp_path: Path) -> None:
    done, report = run_against(tmp_path, "LeavesAForkChain")
    written = (tmp_path / "R.json").read_text(encoding="utf-8")
    assert (tmp_path / "chain.pid").exists(), "the chain never started: the test proves nothing"
    time.sleep(3.0)  # a link that survived would rewrite the report within 2 s of the chain's start
    assert (tmp_path / "R.json").read_text(encoding="utf-8") == written
    assert "forged" not in report and report["summary"]["state"] == "complete", (done.stdout + done.stderr)[-2000:]
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert rows_of(report, "leaves-a-fork-chain")[0]["outcome"] == "pass"
    assert not alive(int((tmp_path / "chain.pid").read_text())), "a link of the chain outlived the run"


# -- declarations --------------------------------------------------------------------------


@pytest.mark.parametrize("hostile, name, reason", [
    ("WrongOnCudaOnly", "wrong-on-cuda-only", "cuda"),
    ("WrongInBfloat16Only", "wrong-in-bfloat16-only", "bfloat16"),
])
def test_an_implementation_with_no_row_checked_fails_the_run_and_says_why(tmp_path: Path, hostile: str, name: str,
                                                                          reason: str) -> None:
    done = cli("run", "--property", FORMULA, "--report", "R.json", "--impl", f"{HOSTILE}:{hostile}", cwd=tmp_path)
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    rows = rows_of(report, name)
    assert rows and all(r["outcome"] in ("not-applicable", "skipped") for r in rows), rows
    assert done.returncode == 1, done.stdout + done.stderr
    assert report["summary"]["ok"] is False and report["summary"]["unchecked"] == [name]
    assert f"FAIL  {name}: no row was checked" in done.stdout and reason in done.stdout, done.stdout[-3000:]
    assert "every claim ended as expected" not in done.stdout


def test_a_declaration_is_read_once_and_its_first_answer_holds(tmp_path: Path) -> None:
    done = cli("run", "--property", FORMULA, "--dtype", "float64", "--report", "R.json",
               "--impl", f"{HOSTILE}:ChangesItsDeclaration", cwd=tmp_path)
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    (entry,) = [i for i in report["implementations"] if i["name"] == "changes-its-declaration"]
    assert entry["capabilities"]["devices"] == ["cpu"], entry
    (row,) = rows_of(report, "changes-its-declaration")
    assert row["outcome"] == "fail", row
    assert done.returncode == 1, done.stdout + done.stderr


def test_a_default_run_of_shipped_implementations_is_not_held_to_having_rows(tmp_path: Path) -> None:
    """Only the implementations named with --impl must have a row checked: the default set, run on one
    topic, holds implementations of other families that have no row there."""
    done = cli("run", "--property", SLIDE, "--dtype", "float64", "--report", "R.json", cwd=tmp_path)
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["summary"]["unchecked"] == []


# -- input files ---------------------------------------------------------------------------


APPENDER = textwrap.dedent("""
    import os

    from specformer.adapters.reference import implementation as _r


    def _deviations_path():
        pid = os.getpid()
        while pid > 1:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
            if b"--deviations" in argv:
                return os.path.join(os.readlink(f"/proc/{pid}/cwd"), argv[argv.index(b"--deviations") + 1].decode())
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        return None


    path = _deviations_path()
    if path:  # at import: a catch-all entry that would hide this implementation's failures
        with open(path, "a") as f:
            f.write('\\n[[deviation]]\\nclaim = "attention.*"\\nimplementation = "appender"\\nreason = "hidden"\\n'
                    '\\n[[deviation]]\\nclaim = "*"\\nreason = "everything"\\n')
        open(path + ".touched", "w").close()


    class Appender:
        name = "appender"

        def attention(self, q, k, v, mask=None, *, causal=False):
            out, weights = _r.attention(q, k, v, mask, causal=causal)
            return out + 1.0, weights


    implementation = Appender()
    """)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_deviations_file_is_read_once_before_any_implementation_loads(tmp_path: Path, jobs: str) -> None:
    (tmp_path / "appender.py").write_text(APPENDER, encoding="utf-8")
    (tmp_path / "d.toml").write_text('[[deviation]]\nclaim = "softmax.*"\nimplementation = "appender"\n'
                                     'reason = "unrelated"\n', encoding="utf-8")
    done = cli("run", "--property", SLIDE, "--property", FORMULA, "--dtype", "float64", "--impl", "appender.py",
               "--deviations", "d.toml", "--report", "R.json", "--jobs", jobs, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert (tmp_path / "d.toml.touched").exists(), "the file was never rewritten: the test proves nothing"
    assert "INTERNALERROR" not in output, output[-3000:]
    assert done.returncode == 1, output[-3000:]
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    assert {r["outcome"] for r in rows_of(report, "appender")} == {"fail"}, rows_of(report, "appender")


def test_the_second_process_of_a_determinism_check_cannot_replay_the_firsts_files(tmp_path: Path) -> None:
    """The trainer breaks ties by hash order and stores its answers in its working and temporary directories;
    the second process has its own of each, finds nothing to replay, and the tie shows."""
    done = cli("run", "--property", DETERMINISM, "--dtype", "float64", "--report", "R.json",
               "--impl", f"{HOSTILE}:ReplaysFromAFile", cwd=tmp_path)
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    (row,) = rows_of(report, "replays-from-a-file")
    assert (tmp_path / "replayed-merges.json").exists(), "the first process stored nothing: the test proves nothing"
    assert row["outcome"] == "fail" and "another process" in row["message"], row
    assert done.returncode == 1


def test_a_worker_s_own_directories_are_removed_with_it() -> None:
    from specformer.runner.supervisor import WorkerPool

    pool = WorkerPool()
    try:
        assert pool.load("reference", 120)["status"] == "loaded"
        worker = pool.worker("reference", time.monotonic() + 60, process=0)
        scratch = Path(worker._scratch)
        assert scratch.is_dir()
    finally:
        pool.close()
    assert not scratch.exists()


# -- usage errors --------------------------------------------------------------------------


def test_a_refused_run_marks_an_earlier_report_stale(tmp_path: Path) -> None:
    done = cli("run", "--property", SLIDE, "--dtype", "float64", "--impl", "reference", "--report", "R.json",
               cwd=tmp_path)
    assert done.returncode == 0
    refused = cli("run", "--claims", "no-such-claim.x", "--impl", "reference", "--report", "R.json", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    assert report["summary"]["state"] == "stale" and report["summary"]["ok"] is False, report["summary"]
    assert "no-such-claim.x" in report["summary"]["stale"], report["summary"]
    assert "R.json is marked stale" in refused.stderr, refused.stderr
