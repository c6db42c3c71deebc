"""A row's limit counts the work, not the clock (:mod:`specformer.runner.budget`).

The limit is CPU seconds of the checker and of the implementation's worker with its
children; a wall-clock backstop (a multiple of it) ends what uses no CPU. A spinning
implementation ends by the CPU limit, one whose child spins too, one that sleeps by the
backstop, and a correct one that needs CPU passes on a machine made busy beside it.
Nothing here asserts a wall time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specformer.context import WorkerBackend
from specformer.property import Property, load_properties
from specformer.runner.budget import BACKSTOP_FACTOR, Limit, tree_cpu_s
from specformer.runner.row import RowResult, run_property
from specformer.runner.supervisor import WorkerPool

HOSTILE = Path(__file__).resolve().parent / "hostile_impls.py"
FORMULA = "attention.output_matches_the_formula"


def in_worker(class_name: str, timeout_s: float, backstop_s: float | None = None) -> RowResult:
    pool = WorkerPool()
    spec = f"{HOSTILE}:{class_name}"
    try:
        answer = pool.load(spec, 60)
        assert answer["status"] == "loaded", answer
        return run_property(load_properties()[FORMULA], WorkerBackend(pool, spec), answer["name"], spec, "cpu",
                            "float64", "ci", timeout_s, frozenset(answer["operations"]), backstop_s=backstop_s)
    finally:
        pool.close()


def test_a_spinning_implementation_ends_by_the_cpu_limit() -> None:
    row = in_worker("Spins", timeout_s=1, backstop_s=600)
    assert row.outcome == "error", row.message
    assert "did not answer in time (the row's CPU limit of 1 s ran out:" in row.message, row.message
    assert "s of CPU (the implementation" in row.message and "backstop of 600 s ran out" not in row.message


def test_cpu_spent_in_the_implementations_child_counts() -> None:
    row = in_worker("SpinsInAChild", timeout_s=1, backstop_s=600)
    assert row.outcome == "error", row.message
    assert "the row's CPU limit of 1 s ran out" in row.message, row.message
    # the child went with its worker's process group
    for _ in range(100):
        left = subprocess.run(["pgrep", "-f", "spinning child of spins-in-a-child"], capture_output=True, text=True)
        if not left.stdout.strip():
            break
        time.sleep(0.1)
    assert not left.stdout.strip(), left.stdout


def test_a_sleeping_implementation_ends_by_the_backstop() -> None:
    row = in_worker("BlocksTheAlarm", timeout_s=60, backstop_s=2)
    assert row.outcome == "error", row.message
    assert "the row's wall-clock backstop of 2 s ran out" in row.message, row.message
    assert "within its CPU limit of 60 s (the implementation sleeps, waits, or is starved of CPU)" in row.message
    assert "The row's limit is 60 s of CPU time (a wall-clock backstop of 2 s)" in row.message, row.message


def test_the_backstop_defaults_to_a_stated_multiple_of_the_cpu_limit() -> None:
    limit = Limit(3.0)
    assert limit.backstop_s == 3.0 * BACKSTOP_FACTOR and limit.describe() == \
        f"3 s of CPU time (a wall-clock backstop of {3.0 * BACKSTOP_FACTOR:g} s)"


@pytest.fixture
def busy_machine() -> Iterator[None]:
    """Six processes that spin beside the test, as on a busy laptop or CI runner."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)  # own sessions:
                for _ in range(6)]  # each its own scheduling group, as other programs are
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_a_busy_machine_does_not_end_a_row_within_its_cpu_limit(busy_machine: None) -> None:
    """The implementation needs about 0.1 s of CPU a call; six spinners stretch the row's wall time
    several-fold on a small machine, past its CPU limit, and the row still passes."""
    row = in_worker("BusyButCorrect", timeout_s=6, backstop_s=3600)
    assert row.outcome == "pass" and row.examples_checked > 0, row.message


def test_the_cpu_of_a_process_tree_is_read_from_outside() -> None:
    child = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        "grandchild = subprocess.Popen([sys.executable, '-c', "
        "'import time\\nend = time.process_time() + 0.5\\nwhile time.process_time() < end: pass\\ntime.sleep(60)'])\n"
        "end = time.process_time() + 0.5\n"
        "while time.process_time() < end: pass\n"
        "time.sleep(60)\n")])
    try:
        spent = 0.0
        for _ in range(600):  # until both have spun (a generous backstop: the machine may be busy)
            spent = tree_cpu_s(child.pid) or 0.0
            if spent >= 0.9:
                break
            time.sleep(0.1)
        assert spent >= 0.9, spent
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(child.pid)], check=False)
        child.kill()
        child.wait()


def _property(function: Any) -> Property:
    return Property(claim="attention.scaled-dot-product", function=function, expect="hold", needs=(),
                    dtypes=None, max_examples=None, module="fake", name=function.__name__)


@given(x=st.integers(0, 10))
def spins(ctx: Any, x: int) -> None:
    while True:
        pass


def test_a_property_that_spins_ends_by_the_cpu_limit() -> None:
    row = run_property(_property(spins), None, "math", "math", "cpu", "float64", "ci", 1.0, backstop_s=600)
    assert row.outcome == "error", row.message
    assert "the property itself ran past the time limit (the row's CPU limit of 1 s ran out" in row.message, row.message


# -- a polite stop that a finaliser swallowed --------------------------------------------------


def test_a_stop_request_ends_the_wait_for_a_spinning_worker() -> None:
    """SIGTERM's ``KeyboardInterrupt`` can be raised inside a finaliser and dropped there; the request it
    recorded still ends the checker's wait for a worker within a tick, not at the row's limit."""
    import threading

    from specformer.runner import interrupt

    timer = threading.Timer(1.0, interrupt.request, ("signal SIGTERM",))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            in_worker("Spins", timeout_s=600, backstop_s=3600)
    finally:
        timer.cancel()
        interrupt.clear()


def test_a_dropped_interrupt_still_stops_the_run(tmp_path: Path) -> None:
    """End to end: the handler's exception is dropped (raised in a finaliser, as Python then prints and
    ignores it), and the run still ends as interrupted, exit 3, while its worker spins."""
    (tmp_path / "spins.py").write_text(
        "class Spins:\n    name = 'spins'\n    def attention(self, q, k, v, mask=None, *, causal=False):\n"
        "        while True:\n            pass\n\nimplementation = Spins()\n", encoding="utf-8")
    # The stop arrives as a finaliser would deliver it: the request is recorded, the exception lost.
    driver = (
        "import json, signal, sys, threading, time\n"
        "from specformer.runner import cli\n"
        "class Dropper:\n"
        "    def __del__(self):\n"
        "        cli._interrupt(signal.SIGTERM, None)\n"
        "def running():\n"
        "    try:\n"
        "        return json.load(open('R.json'))['summary']['state'] == 'running'\n"
        "    except (OSError, ValueError, KeyError):\n"
        "        return False\n"
        "def later():\n"  # once the row has started and its worker spins
        "    while not running():\n"
        "        time.sleep(0.1)\n"
        "    time.sleep(2.0)\n"
        "    Dropper()\n"  # the finaliser runs in this thread: its KeyboardInterrupt is printed and ignored
        "threading.Thread(target=later, daemon=True).start()\n"
        "sys.exit(cli.main(sys.argv[1:]))\n")
    done = subprocess.run(
        [sys.executable, "-c", driver, "run", "--impl", "spins.py", "--claims", "attention.slide-example",
         "--row-timeout", "600", "--report", "R.json"], cwd=tmp_path, capture_output=True, text=True,
        timeout=900, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    assert report["summary"]["state"] == "interrupted" and report["summary"]["ok"] is False


# -- the fork server's answers: CPU time, a stopped server, a backstop ----------------------------


@pytest.mark.parametrize("code, cpu_s, backstop_s, expected", [
    ("import os, signal; os.kill(os.getpid(), signal.SIGSTOP)", 60, 600, "is stopped"),
    ("while True: pass", 0.5, 600, "s of the server's CPU time"),
    ("import time; time.sleep(600)", 60, 1.0, "backstop of 1 s of wall time"),
])
def test_a_fork_server_that_does_not_answer_is_lost_by_cpu_stop_or_backstop(code: str, cpu_s: float,
                                                                           backstop_s: float, expected: str) -> None:
    """What counts is the server's own CPU time: a busy machine only stretches the wall time of an answer."""
    import socket

    from specformer.runner.forkserver import await_answer

    mine, theirs = socket.socketpair()
    server = subprocess.Popen([sys.executable, "-c", code], pass_fds=[theirs.fileno()])
    try:
        with pytest.raises(TimeoutError, match=expected):
            await_answer(mine, server.pid, cpu_s, backstop_s)
    finally:
        server.kill()
        server.wait()
        mine.close()
        theirs.close()


def test_a_fork_server_answer_is_returned_as_soon_as_it_comes() -> None:
    import socket

    from specformer.runner.forkserver import await_answer

    mine, theirs = socket.socketpair()
    theirs.sendall(b"x")
    try:
        await_answer(mine, os.getpid(), 0.0, 0.0)
        assert mine.recv(1) == b"x"
    finally:
        mine.close()
        theirs.close()
