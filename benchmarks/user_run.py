"""Time a user's run: one family of a user's own implementation, correct and with one bug.

Usage: ``python benchmarks/user_run.py [--family attention] [--simple] [--profile ci] [--jobs 1] [--repeat 1] [--out FILE]``

Runs ``specformer run --impl examples/<family>.py`` on every topic of the family (so only
the implementation's own rows: the properties that call no implementation are not run),
then the same with one bug planted in a copy of the example (attention: scores divided
by ``d_k`` instead of ``sqrt(d_k)``; the other families: a bug named in :data:`BUGS`). It
prints wall and CPU time, the rows and their outcomes, and the ratio failing / passing,
and writes them, with the load average before each run, to ``benchmarks/results/user_run.json``.
Targets: under 30 s for the correct implementation and under 60 s with the bug,
on a quiet two-core machine.
CPU time (the command's and its children's) is the steadier figure on a shared machine;
it leaves out the implementation's worker, which is not the command's child (it is forked
from a fork server): ``benchmarks/simple_rows.py`` samples ``/proc`` for the whole tree.
``--simple`` runs the plain implementation of ``benchmarks/simple/`` instead of the example.
This is a measurement, never an assertion.
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
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Family -> (text in its example, the bug that replaces it).
BUGS = {
    "attention": ("/ math.sqrt(q.shape[-1])", "/ q.shape[-1]"),
    "positions": ("pe[:, 0::2] = torch.sin(angles)", "pe[:, 0::2] = torch.cos(angles)"),
    "blocks": ("var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)",
               "var = ((x - mu) ** 2).sum(dim=-1, keepdim=True) / max(x.shape[-1] - 1, 1)"),
    "tokenization": ("best = min(pairs, key=lambda p: (-pairs[p], p))", "best = min(pairs)"),
    "embeddings": ("return table[ids]", "return table[ids.clamp(max=table.shape[0] - 2)]"),
}
#: With ``--simple``: the plain implementations of ``benchmarks/simple/`` (naive BPE, loop-based skip-gram)
#: and their bugs (the least frequent pair merged; the window's far edge left out).
SIMPLE_BUGS = {
    "tokenization": ("best = max(pairs, key=pairs.get)", "best = min(pairs, key=pairs.get)"),
    "embeddings": ("for j in range(-window, window + 1):", "for j in range(-window + 1, window):"),
}


def topics(family: str) -> list[str]:
    """The topics of ``family``: its spec files."""
    return sorted(p.stem for p in (ROOT / "spec" / family).glob("*.md"))


def run_once(impl: Path, family: str, profile: str, jobs: int) -> dict:
    """One timed ``specformer run``; wall and CPU seconds, exit code, rows and outcomes."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "specformer", "run", "--impl", str(impl), "--profile", profile,
               "--jobs", str(jobs), "--report", str(report)]
        for topic in topics(family):
            cmd += ["--topic", f"{family}/{topic}"]
        load = os.getloadavg()[0]  # other work on the machine: wall time is comparable only at a similar load
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = json.loads(report.read_text(encoding="utf-8"))["rows"] if report.is_file() else []
        return {"load_average_before": round(load, 2), "wall_s": round(wall, 2),
                "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
                "exit": done.returncode, "rows": len(rows),
                "outcomes": dict(Counter(r["outcome"] for r in rows)),
                "rows_s": round(sum(r["duration_s"] for r in rows), 2),
                "shrinking_cut": sum("shrinking stopped" in str(r.get("message")) for r in rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", default="attention", choices=sorted(BUGS))
    parser.add_argument("--simple", action="store_true",
                        help="the plain implementation of benchmarks/simple/ (tokenization, embeddings)")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.out is None:
        name = f"user_run_simple_{args.family}.json" if args.simple else "user_run.json"
        args.out = str(Path(__file__).parent / "results" / name)
    if args.simple and args.family not in SIMPLE_BUGS:
        sys.exit(f"--simple: benchmarks/simple/ has {', '.join(sorted(SIMPLE_BUGS))}, not {args.family}")
    correct = ROOT / ("benchmarks/simple" if args.simple else "examples") / f"{args.family}.py"
    good, bad = (SIMPLE_BUGS if args.simple else BUGS)[args.family]
    source = correct.read_text(encoding="utf-8")
    if good not in source:
        sys.exit(f"{correct}: the text the bug replaces is not there any more: {good!r}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        buggy = Path(tmp) / f"buggy_{args.family}.py"
        buggy.write_text(source.replace(good, bad, 1), encoding="utf-8")
        for label, impl in (("correct", correct), ("one bug", buggy)):
            runs = [run_once(impl, args.family, args.profile, args.jobs) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r["wall_s"])
            best["wall_s_median"] = statistics.median(r["wall_s"] for r in runs)
            results[label] = best
            print(f"{label:8s} wall {best['wall_s']:6.1f} s  cpu {best['cpu_s']:6.1f} s  rows {best['rows']:4d}  "
                  f"in rows {best['rows_s']:6.1f} s  exit {best['exit']}  {best['outcomes']}"
                  + (f"  shrinking cut in {best['shrinking_cut']} rows" if best["shrinking_cut"] else ""))
    ratio = results["one bug"]["wall_s"] / max(results["correct"]["wall_s"], 1e-9)
    print(f"failing / passing: {ratio:.2f}x wall, "
          f"{results['one bug']['cpu_s'] / max(results['correct']['cpu_s'], 1e-9):.2f}x CPU")
    out = {"family": args.family, "implementation": str(correct.relative_to(ROOT)), "profile": args.profile, "jobs": args.jobs, "repeat": args.repeat,
           "machine": platform.machine(), "python": platform.python_version(), "results": results,
           "ratio_wall": round(ratio, 2)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
