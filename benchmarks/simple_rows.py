"""Time every row of a plain implementation: the tokenization and embeddings families' user path.

Usage: ``python benchmarks/simple_rows.py [--family tokenization] [--profile ci] [--jobs 1] [--out FILE]``

Runs ``specformer run --impl benchmarks/simple/<family>.py`` (the documents' textbook
algorithms, written from the protocol: naive BPE, Python-loop Viterbi, loop-based skip-gram
pairs...; see ``benchmarks/simple/README.md``) once per family, as a user would, and prints
every row's duration, slowest first, with a line at a quarter of the row limit (the issue's
target: every row of a correct simple implementation under a quarter of ``--row-timeout``,
120 s by default) and one at the limit itself; then the wall and CPU time of each run and
its outcomes. Results go to ``benchmarks/results/simple_rows.json``. Target (the issue): a
one-family ``--impl`` run under 30 s at profile ci on a quiet two-core machine.

CPU time is sampled from ``/proc`` (each process of the run's tree, its own user + system
time, every 0.1 s): ``getrusage(RUSAGE_CHILDREN)`` misses the implementation's worker, which
is not reaped up the chain of waiting parents, so it is printed beside for comparison only.
This is a measurement, never an assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ("tokenization", "embeddings")
SAMPLE_S = 0.1


def default_row_limit() -> float:
    """``specformer run``'s default ``--row-timeout``, in seconds."""
    from specformer.runner.cli import build_parser

    return float(build_parser().parse_args(["run"]).row_timeout)


class TreeCPU:
    """The CPU seconds (user + system, each process's own) of a process and its descendants, sampled from /proc.

    Each process counts with the last value seen, so a process loses at most its last
    :data:`SAMPLE_S` seconds, and one that lives less than that may be missed.
    """

    def __init__(self, root: int) -> None:
        self.root, self.seen, self._stop = root, {}, threading.Event()
        self._hz = os.sysconf("SC_CLK_TCK")
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _processes(self) -> dict[int, tuple[int, float]]:
        """pid -> (parent pid, own user + system seconds), for every process readable now."""
        found = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                    fields = f.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
            except OSError:
                continue
            found[int(name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / self._hz)
        return found

    def sample(self) -> None:
        processes = self._processes()
        tree, grew = {self.root}, True
        while grew:
            grew = False
            for pid, (parent, _) in processes.items():
                if parent in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        for pid in tree & processes.keys():
            self.seen[pid] = max(self.seen.get(pid, 0.0), processes[pid][1])

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.sample()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return sum(self.seen.values())


def run_family(family: str, profile: str, jobs: int) -> dict:
    """One timed ``specformer run --impl benchmarks/simple/<family>.py``: wall and CPU seconds, rows."""
    impl = ROOT / "benchmarks" / "simple" / f"{family}.py"
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "specformer", "run", "--impl", str(impl), "--profile", profile,
               "--jobs", str(jobs), "--report", str(report)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        process = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        cpu = TreeCPU(process.pid)
        cpu.start()
        output, _ = process.communicate()
        wall = time.perf_counter() - start
        cpu_s = cpu.stop()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if not report.is_file():
            sys.exit(f"{family}: no report; the run printed:\n{output[-3000:]}")
        data = json.loads(report.read_text(encoding="utf-8"))
    rows = sorted(({"property": r["property"], "claim": r["claim"], "dtype": r["dtype"], "outcome": r["outcome"],
                    "as_expected": r["as_expected"], "duration_s": r["duration_s"],
                    "examples": r["examples_generated"]} for r in data["rows"]),
                  key=lambda r: (-r["duration_s"], r["property"], r["dtype"]))
    return {"command": " ".join(["specformer", *cmd[3:-2]]).replace(str(ROOT) + "/", ""),
            "wall_s": round(wall, 2), "cpu_s": round(cpu_s, 2),
            "cpu_rusage_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
            "exit": process.returncode, "rows_s": round(sum(r["duration_s"] for r in rows), 2),
            "outcomes": dict(Counter(r["outcome"] for r in rows)),
            "not_as_expected": [r for r in rows if not r["as_expected"]], "rows": rows}


def print_rows(family: str, result: dict, limit: float) -> None:
    """Every row slowest first, with the quarter line and the limit line where they fall."""
    print(f"== {family}: {len(result['rows'])} rows, slowest first")
    lines = [(limit, f"---- row limit {limit:g} s ----"),
             (limit / 4, f"---- a quarter of the limit, {limit / 4:g} s ----")]
    for row in result["rows"]:
        while lines and row["duration_s"] < lines[0][0]:
            print(lines.pop(0)[1])
        mark = "" if row["as_expected"] else "  NOT AS EXPECTED"
        print(f"{row['duration_s']:8.2f} s  {row['property']} [{row['dtype']}] {row['outcome']}{mark}")
    for _, text in lines:
        print(text)
    print(f"{family}: wall {result['wall_s']:.1f} s, CPU {result['cpu_s']:.1f} s "
          f"(getrusage: {result['cpu_rusage_s']:.1f} s), in rows {result['rows_s']:.1f} s, exit {result['exit']}, "
          f"{result['outcomes']}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", action="append", choices=FAMILIES, help="default: both")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "simple_rows.json"))
    args = parser.parse_args()
    limit = default_row_limit()
    results, load = {}, {}
    for family in args.family or FAMILIES:
        load[family] = round(os.getloadavg()[0], 2)  # the machine's load just before the run
        results[family] = run_family(family, args.profile, args.jobs)
        print_rows(family, results[family], limit)
    for family, result in results.items():
        slow = [r for r in result["rows"] if r["duration_s"] >= limit / 4]
        slowest = result["rows"][0]["duration_s"] if result["rows"] else 0.0
        print(f"{family}: {len(slow)} rows at or above {limit / 4:g} s, {len(result['not_as_expected'])} not as "
              f"expected; slowest {slowest:.2f} s; wall {result['wall_s']:.1f} s, CPU {result['cpu_s']:.1f} s "
              f"(load average before: {load[family]})")
    out = {"profile": args.profile, "jobs": args.jobs, "row_limit_s": limit, "quarter_s": limit / 4,
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
           "families": {family: {"load_average_before": load[family], **r, "slowest": r["rows"][:10]}
                        for family, r in results.items()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
