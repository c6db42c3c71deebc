"""The run owns its process: a user's environment changes no verdict and no output.

* Thread pools: with every pool's variable at 16 in the caller's environment, a worker
  that starts torch's OpenMP pool, numpy's OpenBLAS and tokenizers' rayon has at most
  ``--threads`` threads per pool (the same work outside the runner starts dozens).
* pytest: with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` the command runs and prints its
  summary, with one job and with two (xdist loaded by name); a pytest plugin installed in
  the environment that would deselect every row and abort the run is not loaded; a
  user's ``PYTEST_ADDOPTS`` does not reach the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specformer.runner import environment

HOSTILE = Path(__file__).resolve().parent / "hostile_impls.py"
PROPERTY = "attention.output_matches_the_formula"
SIXTEEN = {name: "16" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "RAYON_NUM_THREADS", "MKL_NUM_THREADS")}
# starting the pools the worker starts, outside the runner, with the caller's variables
POOLS = textwrap.dedent("""
    import os, numpy as np, torch
    big = torch.ones(512, 512, dtype=torch.float64)
    (big @ big).sum(); (big.exp() + big.sin()).sum()
    np.ones((512, 512)) @ np.ones((512, 512))
    from tokenizers import Tokenizer, models, pre_tokenizers
    t = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    t.encode_batch(["a b a"] * 2000)
    print(len(os.listdir("/proc/self/task")))
""")


def specformer(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "specformer", "run", *args, "--report", str(tmp_path / "r.json")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, **(env or {})})


def test_the_thread_variables_pin_every_pool() -> None:
    variables = environment.thread_variables(3)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS"):
        assert variables[name] == "3"
    assert environment.thread_variables(1)["TOKENIZERS_PARALLELISM"] == "false"


def test_owned_gives_the_callers_environment_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "16")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    with environment.owned(threads=1, jobs=2):
        assert os.environ["OMP_NUM_THREADS"] == "1" and "PYTEST_ADDOPTS" not in os.environ
        assert "xdist.plugin" in os.environ["PYTEST_PLUGINS"] and os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert os.environ["OMP_NUM_THREADS"] == "16" and os.environ["PYTEST_ADDOPTS"] == "-x"
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in os.environ


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
@pytest.mark.parametrize("threads", [1, 2])
def test_a_workers_pools_have_at_most_threads_each(tmp_path: Path, threads: int) -> None:
    pytest.importorskip("tokenizers")
    unpinned = subprocess.run([sys.executable, "-c", POOLS], capture_output=True, text=True, timeout=1800,
                              env={**os.environ, **SIXTEEN, "TOKENIZERS_PARALLELISM": "true"})
    assert int(unpinned.stdout) > 16, "outside the runner the same work should start large pools"
    counts = tmp_path / "threads.txt"
    done = specformer(tmp_path, "--impl", f"{HOSTILE}:CountsItsThreads", "--property", PROPERTY, "--dtype", "float64",
                      "--threads", str(threads),
                      env={**SIXTEEN, "TOKENIZERS_PARALLELISM": "true", "SPECFORMER_TEST_THREADS_FILE": str(counts)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = [int(line) for line in counts.read_text().split()]
    assert seen, "the implementation was never called"
    # the main thread, and at most `threads` per pool: OpenMP (its master is the main thread),
    # OpenBLAS (likewise), rayon (threads of its own)
    assert max(seen) <= 1 + 3 * threads, seen


def test_no_plugin_autoloading_still_runs_and_summarises(tmp_path: Path) -> None:
    for jobs in ("1", "2"):
        done = specformer(tmp_path, "--impl", "reference", "--topic", "masking", "--jobs", jobs,
                          env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "specformer summary" in done.stdout and "every claim ended as expected" in done.stdout, done.stdout


PLUGIN = textwrap.dedent("""
    import pytest

    def pytest_collection_modifyitems(session, config, items):
        items.clear()  # would deselect every row

    def pytest_sessionstart(session):
        print("A PLUGIN FROM THE ENVIRONMENT RAN")
""")


def test_plugins_installed_in_the_environment_are_not_loaded(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "spoiler_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "spoiler.py").write_text(PLUGIN, encoding="utf-8")
    (site / "spoiler_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: spoiler-plugin\nVersion: 1.0\n", encoding="utf-8")
    (site / "spoiler_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[pytest11]\nspoiler = spoiler\n", encoding="utf-8")
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    work = tmp_path / "work"
    work.mkdir()
    (work / "test_one.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    plain = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_one.py"], cwd=work,
                           capture_output=True, text=True, timeout=1800, env={**os.environ, "PYTHONPATH": path})
    assert "A PLUGIN FROM THE ENVIRONMENT RAN" in plain.stdout, "the plugin should load in a plain pytest run"
    done = specformer(tmp_path, "--impl", "reference", "--topic", "masking",
                      env={"PYTHONPATH": path, "PYTEST_ADDOPTS": "--no-such-option -x"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "A PLUGIN FROM THE ENVIRONMENT RAN" not in done.stdout
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["summary"]["complete"] and len(report["rows"]) > 10
