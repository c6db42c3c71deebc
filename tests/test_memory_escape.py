"""Memory an implementation holds outside its worker still counts against ``--memory-limit``.

The limit once read the worker's own resident anonymous memory only: a correct implementation
whose call forked a child holding 1.5 GiB, or that held 768 MiB of shared anonymous memory, or
that wrote 320 MiB to a file in ``/dev/shm`` beside 320 MiB of shared memory, passed every row
under ``--memory-limit 512``. Each now ends its rows as errors naming the limit and what was
counted, in a run that finishes with the reference's rows as expected, and leaves nothing: no
process, and no file in ``/dev/shm`` (the harness removes the files it charged to a worker it
killed). :mod:`specformer.runner.memory` is tested directly for what it must not charge: pages
only mapped from libraries, and a file another process wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from specformer.runner import memory
from conftest import alive

LIMIT_MIB = 512
PROPERTIES = ["attention.output_matches_the_formula", "attention.the_slides_weights_give_the_slides_output"]

#: The implementations, written into each test's folder: ``{pids}`` is where each records the processes
#: it started, ``{shm}`` the file it writes in /dev/shm.
IMPLEMENTATIONS = '''
import ctypes
import math
import mmap
import os
import time

import torch

PIDS = {pids!r}
SHM = {shm!r}


def correct_attention(q, k, v, mask=None, causal=False):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        mask = keep if mask is None else mask & keep
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.exp(scores - scores.amax(-1, keepdim=True))
    weights = weights / weights.sum(-1, keepdim=True)
    return weights @ v, weights


def shared(mib):
    """MIB of shared anonymous memory, every page touched (in no process's RssAnon)."""
    block = mmap.mmap(-1, mib << 20, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    ctypes.memset(ctypes.addressof(ctypes.c_char.from_buffer(block)), 1, mib << 20)
    return block


class ForksAHog:
    """Its first call forks a child that fills 1536 MiB and keeps it; the call answers, correctly,
    once the child holds it."""

    name = "forks-a-hog"
    child = None

    def attention(self, q, k, v, mask=None, *, causal=False):
        if type(self).child is None:
            ready, done = os.pipe()
            pid = os.fork()
            if pid == 0:
                hog = b"\\x01" * (1536 << 20)
                os.write(done, b"!")
                time.sleep(600 if hog else 0)
                os._exit(0)
            type(self).child = pid
            with open(PIDS, "a") as pids:
                pids.write(f"{{pid}}\\n")
            os.read(ready, 1)
        return correct_attention(q, k, v, mask, causal)


class SharesMemory:
    """Holds 768 MiB of shared anonymous memory (``MAP_SHARED | MAP_ANONYMOUS``), touched."""

    name = "shares-memory"
    held = None

    def attention(self, q, k, v, mask=None, *, causal=False):
        if type(self).held is None:
            type(self).held = shared(768)
        return correct_attention(q, k, v, mask, causal)


class FillsDevShm:
    """Writes 320 MiB to a file in /dev/shm and closes it (the file is in no process's memory), then
    holds 320 MiB of shared anonymous memory: either alone is within the limit, both are not."""

    name = "fills-dev-shm"
    held = None

    def attention(self, q, k, v, mask=None, *, causal=False):
        if type(self).held is None:
            chunk = b"\\x01" * (1 << 20)
            with open(SHM, "wb") as file:
                for _ in range(320):
                    file.write(chunk)
            type(self).held = shared(320)
        return correct_attention(q, k, v, mask, causal)
'''



def run_against(tmp_path: Path, name: str) -> dict[str, Any]:
    """``specformer run`` of the reference and ``name`` on :data:`PROPERTIES` under ``--memory-limit 512``."""
    shm = f"/dev/shm/specformer-test-memory-{os.getpid()}-{tmp_path.name}"
    pids = tmp_path / "pids"
    (tmp_path / "impls.py").write_text(IMPLEMENTATIONS.format(pids=str(pids), shm=shm), encoding="utf-8")
    command = [sys.executable, "-m", "specformer", "run", "--dtype", "float64", "--memory-limit", str(LIMIT_MIB),
               "--row-timeout", "60", "--impl", "reference", "--impl", f"{tmp_path / 'impls.py'}:{name}",
               "--report", "R.json"]
    for prop in PROPERTIES:
        command += ["--property", prop]
    try:
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        left = os.path.exists(shm)
    finally:
        if os.path.exists(shm):
            os.unlink(shm)  # never leave 320 MiB of a shared machine's memory behind
    output = done.stdout + done.stderr
    report = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    started = [int(pid) for pid in pids.read_text().split()] if pids.exists() else []
    return {"done": done, "output": output, "report": report, "shm_left": left, "started": started}


def check(run: dict[str, Any], name: str, counted: str) -> list[dict[str, Any]]:
    """The run finished; the reference's rows passed; each of ``name``'s rows is an error naming the memory
    limit and ``counted``; nothing it started is running."""
    report, output = run["report"], run["output"]
    assert report["summary"]["state"] == "complete", output[-3000:]
    assert run["done"].returncode == 1, output[-3000:]
    reference = [row for row in report["rows"] if row["implementation"] == "reference"]
    assert len(reference) == len(PROPERTIES), output[-3000:]
    assert all(row["outcome"] == "pass" and row["as_expected"] for row in reference), reference
    rows = [row for row in report["rows"] if row["implementation"] == name]
    assert len(rows) == len(PROPERTIES), output[-3000:]
    for row in rows:
        message = row["message"]
        assert row["outcome"] == "error" and not row["as_expected"], message
        assert f"more than the limit of {LIMIT_MIB} MiB (--memory-limit" in message, message
        assert counted in message, message
    for pid in run["started"]:
        assert not alive(pid), f"process {pid} that {name} started is still running"
    return rows


def test_a_child_holding_memory_counts(tmp_path: Path) -> None:
    """A child holding 1.5 GiB, three times the limit: every row ends as an error that names the child, and
    the child is gone with its worker."""
    run = run_against(tmp_path, "ForksAHog")
    rows = check(run, "forks-a-hog", "the worker and the 1 process it started used ")
    assert run["started"], run["output"][-3000:]  # each row's worker forked its child before it was killed
    assert all("resident anonymous and shared memory" in row["message"] for row in rows)


def test_shared_anonymous_memory_counts(tmp_path: Path) -> None:
    """768 MiB of ``MAP_SHARED | MAP_ANONYMOUS`` memory is in no process's RssAnon: it counts now, and
    the worker is killed once it holds more than the limit (it touches the pages one after another)."""
    run = run_against(tmp_path, "SharesMemory")
    rows = check(run, "shares-memory", "the worker used ")
    used = [float(row["message"].split("the worker used ")[1].split(" MiB")[0]) for row in rows]
    assert all(LIMIT_MIB < value <= 768 + 256 for value in used), used  # killed while it touched them, or after


def test_a_file_left_in_dev_shm_counts_and_is_removed(tmp_path: Path) -> None:
    """320 MiB in a closed file of /dev/shm and 320 MiB of shared memory: within the limit each, above it
    together. The file is charged to the worker that wrote it, and removed when that worker is killed."""
    run = run_against(tmp_path, "FillsDevShm")
    rows = check(run, "fills-dev-shm", "MiB of it in 1 shared-memory file its processes wrote")
    assert any("shared-memory file it left in /dev/shm (320 MiB) was removed" in row["message"] for row in rows), rows
    assert not run["shm_left"], "the file the killed worker wrote is still in /dev/shm"


# -- what the watch does not charge -----------------------------------------------------------------------


def sleeper() -> subprocess.Popen[bytes]:
    """A process that imports torch (as a worker has) and waits: it writes nothing."""
    process = subprocess.Popen([sys.executable, "-c", "import sys, torch; sys.stdout.write('ready\\n'); "
                                "sys.stdout.flush(); sys.stdin.read()"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process``, reap it, close its pipes."""
    process.kill()
    process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


def test_libraries_mapped_from_files_do_not_count() -> None:
    """A process with torch loaded maps hundreds of MiB of libraries: they are file pages, not counted; what
    counts is its heap, well within the default limit of 4096 MiB."""
    process = sleeper()
    try:
        usage = memory.Watch(process.pid).read()
        assert usage is not None and usage.proportional and not usage.upper_bound
        assert usage.others == 0 and usage.files == 0
        assert usage.mib < 1024, usage
    finally:
        stop(process)


def test_a_file_another_process_writes_is_not_charged() -> None:
    """With ``--jobs``, another checker's worker may fill /dev/shm while this one waits: a file a process
    outside the worker wrote is not the worker's (it wrote nothing), and is not removed with it."""
    process = sleeper()
    path = f"/dev/shm/specformer-test-foreign-{os.getpid()}"
    try:
        watch = memory.Watch(process.pid)
        with open(path, "wb") as file:
            file.write(b"\x01" * (64 << 20))
        usage = watch.read()
        assert usage is not None and usage.files == 0, usage
        assert watch.remove_files() == (0, 0.0) and os.path.exists(path)
    finally:
        stop(process)
        if os.path.exists(path):
            os.unlink(path)


def test_a_file_the_worker_wrote_is_charged_and_removed() -> None:
    """The same file written by the watched process: charged, and removed by :meth:`memory.Watch.remove_files`."""
    path = f"/dev/shm/specformer-test-own-{os.getpid()}"
    code = textwrap.dedent(f"""
        import sys
        sys.stdin.readline()
        with open({path!r}, "wb") as file:
            file.write(b"\\x01" * (64 << 20))
        sys.stdout.write("written\\n"); sys.stdout.flush()
        sys.stdin.read()
    """)
    process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        time.sleep(0.2)
        watch = memory.Watch(process.pid)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b"go\n")
        process.stdin.flush()
        assert process.stdout.readline() == b"written\n"
        usage = watch.read()
        assert usage is not None and usage.files == 1 and 63 < usage.files_mib < 65, usage
        assert usage.mib >= 64, usage
        stop(process)
        removed, mib = watch.remove_files()
        assert removed == 1 and 63 < mib < 65 and not os.path.exists(path)
    finally:
        stop(process)
        if os.path.exists(path):
            os.unlink(path)
