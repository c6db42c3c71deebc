"""What isolation costs: the suite at ``--jobs 1`` and ``--jobs 2``, and one call through a worker.

Usage::

    python benchmarks/isolation_time.py [--repeat N] [--jobs 1 2] [--source DIR] [--out FILE]

* **Suite**: ``specformer run --profile ci`` with the three shipped implementations (the
  attention family), run as a user runs it, ``N`` times per ``--jobs`` value; wall time
  and the CPU time of the command and everything it started (fork server and workers
  are not its children, so their CPU time is read from the report's row durations
  instead: the wall time is the number that matters).
* **Per call**: the median round trip of ``attention`` on ``(1, 4, 8)`` float32 inputs
  through the reference's worker, against the same call made directly in this process;
  the difference is the worker's overhead per call (copies, codec, in-place check, IPC).
* ``--baseline DIR`` also runs the suite of another checkout at one job (the version
  before isolation, say), interleaved with the runs above so that both see the same
  machine: on a shared virtual machine the speed drifts by tens of percent in minutes.

Results go to ``benchmarks/results/isolation_time.json``. A measurement, never an assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_suite(jobs: int, source: Path) -> dict[str, float]:
    """One timed ``specformer run``; wall seconds, rows and the report's summed row time."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "specformer", "run", "--profile", "ci", "--report", str(report)]
        if jobs > 1:
            cmd += ["--jobs", str(jobs)]
        env = {**os.environ, "PYTHONPATH": str(source)}
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        data = json.loads(report.read_text(encoding="utf-8"))
    rows = data["rows"]
    return {"wall_s": round(wall, 2), "exit": done.returncode, "rows": len(rows),
            "row_time_s": round(sum(r["duration_s"] for r in rows), 2)}


def per_call(n: int = 400) -> dict[str, float]:
    """Median microseconds of one attention call, in a worker and in this process."""
    sys.path.insert(0, str(ROOT))
    import torch

    from specformer.adapters.reference import implementation
    from specformer.runner.supervisor import WorkerPool, shutdown

    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.rand(1, 4, 8, generator=generator) for _ in range(3))
    request = {"op": "call", "method": "attention", "args": (q, k, v, None), "kwargs": {"causal": False},
               "names": ("q", "k", "v", "mask"), "device": "cpu"}
    pool = WorkerPool()
    start = time.perf_counter()
    pool.load("reference", 120)
    first_start = time.perf_counter() - start
    worker = pool.worker("reference", time.monotonic() + 60)
    start = time.perf_counter()
    pool.discard("reference")
    pool.load("reference", 120)
    restart = time.perf_counter() - start
    worker = pool.worker("reference", time.monotonic() + 60)
    through, direct = [], []
    for _ in range(n):
        t = time.perf_counter()
        worker.request(request, "attention", time.monotonic() + 60)
        through.append(time.perf_counter() - t)
        t = time.perf_counter()
        implementation.attention(q, k, v)
        direct.append(time.perf_counter() - t)
    pool.close()
    shutdown()
    worker_us, direct_us = statistics.median(through) * 1e6, statistics.median(direct) * 1e6
    return {"worker_call_us": round(worker_us, 1), "direct_call_us": round(direct_us, 1),
            "overhead_us": round(worker_us - direct_us, 1), "first_worker_start_s": round(first_start, 2),
            "worker_restart_ms": round(restart * 1e3, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--source", type=Path, default=ROOT)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout, run at one job")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "isolation_time.json")
    parser.add_argument("--no-calls", action="store_true", help="skip the per-call measurement")
    args = parser.parse_args()
    suite: dict[str, list[dict[str, float]]] = {}
    plan = [(f"jobs={jobs}", jobs, args.source) for jobs in args.jobs]
    if args.baseline:
        plan.insert(0, ("baseline", 1, args.baseline))
    for _ in range(args.repeat):  # interleaved: each round runs every configuration once
        for label, jobs, source in plan:
            suite.setdefault(label, []).append(run_suite(jobs, source))
            print(f"{label}: {suite[label][-1]}", flush=True)
    result = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "source": str(args.source), "baseline": str(args.baseline) if args.baseline else None,
        "profile": "ci", "suite": suite,
        "median_wall_s": {k: statistics.median(r["wall_s"] for r in v) for k, v in suite.items()},
    }
    if not args.no_calls:
        result["per_call"] = per_call()
        print(f"per call: {result['per_call']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
