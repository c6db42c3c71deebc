"""Time ``specformer run --profile ci`` on the CPU, per family and in total.

Usage: ``python benchmarks/suite_time.py [--repeat N] [--jobs J] [--impl SPEC]... [--out FILE]``

Runs the whole suite in a subprocess (as ``make suite`` does: every shipped implementation
unless ``--impl`` is given, ``--jobs 2`` unless ``--jobs`` is) ``N`` times and records the wall
time, plus the per-row durations from the report: the slowest rows and the time per
topic and per implementation, and the run's efficiency: the rows' durations scheduled
longest first on the jobs (:func:`specformer.report.schedule.longest_first`) over the wall
time. Results go to ``benchmarks/results/suite_time.json`` (``suite_time_jobsJ.json`` for
other job counts). This is a measurement, never an assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def run_once(impls: list[str], profile: str, jobs: int = 2) -> tuple[float, float, dict]:
    """One timed run of the suite; returns (wall seconds, CPU seconds, report).

    CPU time (user + system of the child) is the steadier number on a shared machine:
    wall time also counts the time other processes hold the cores.
    """
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "specformer", "run", "--profile", profile, "--jobs", str(jobs),
               "--report", str(report)]
        for impl in impls:
            cmd += ["--impl", impl]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, cwd=tmp, stdout=subprocess.DEVNULL, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu, json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--impl", action="append")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.out is None:
        name = "suite_time.json" if args.jobs == 2 else f"suite_time_jobs{args.jobs}.json"
        args.out = str(Path(__file__).parent / "results" / name)
    from specformer.report.schedule import longest_first

    from specformer.adapters import DEFAULT_IMPLEMENTATIONS

    impls = args.impl or []  # none given: the command's own defaults, every shipped implementation
    walls, cpus, report, bests, sums = [], [], {}, [], []
    for _ in range(args.repeat):
        wall, cpu, report = run_once(impls, args.profile, args.jobs)
        walls.append(wall)
        cpus.append(cpu)
        durations = [r["duration_s"] for r in report["rows"]]
        bests.append(longest_first(durations, args.jobs))
        sums.append(sum(durations))
        print(f"run: {wall:.1f} s wall, {cpu:.1f} s CPU (the command's own; workers are not its children), "
              f"{report['summary']['rows']} rows, ok={report['summary']['ok']}, rows' durations {sums[-1]:.1f} s, "
              f"longest first on {args.jobs} jobs {bests[-1]:.1f} s: efficiency {100 * bests[-1] / wall:.0f} %, "
              f"load average {os.getloadavg()[0]:.2f}")
    by_topic: dict[str, float] = defaultdict(float)
    by_impl: dict[str, float] = defaultdict(float)
    for row in report["rows"]:
        by_topic[row["claim"].split(".")[0]] += row["duration_s"]
        by_impl[row["implementation"]] += row["duration_s"]
    slowest = sorted(report["rows"], key=lambda r: -r["duration_s"])[:10]
    result = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "torch": report["environment"]["torch"]},
        "profile": args.profile,
        "implementations": impls or list(DEFAULT_IMPLEMENTATIONS),
        "jobs": args.jobs,
        "rows": report["summary"]["rows"],
        "wall_s": {"runs": [round(w, 2) for w in walls], "median": round(statistics.median(walls), 2),
                   "min": round(min(walls), 2)},
        "cpu_s": {"runs": [round(c, 2) for c in cpus], "median": round(statistics.median(cpus), 2)},
        "rows_duration_s": {"runs": [round(x, 2) for x in sums], "median": round(statistics.median(sums), 2)},
        "longest_first_s": {"runs": [round(x, 2) for x in bests], "median": round(statistics.median(bests), 2)},
        "efficiency": {"runs": [round(b / w, 3) for b, w in zip(bests, walls)],
                       "median": round(statistics.median(b / w for b, w in zip(bests, walls)), 3)},
        "row_seconds_by_topic": {k: round(v, 2) for k, v in sorted(by_topic.items())},
        "row_seconds_by_implementation": {k: round(v, 2) for k, v in sorted(by_impl.items())},
        "slowest_rows": [{k: r[k] for k in ("property", "implementation", "dtype", "duration_s", "examples_generated", "examples_checked")}
                         for r in slowest],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["wall_s"]), "->", args.out)


if __name__ == "__main__":
    main()
