"""Time one implementation's run of whole families, with the distinct shapes its operations were called with.

Usage: ``python benchmarks/family_run.py --impl flax [--family attention]... [--profile ci] [--jobs 1] [--out FILE]``

Runs ``specformer run --impl IMPL`` on every topic of the given families (default: attention,
positions and blocks, the families of the shipped JAX implementation) and records the wall
time, the rows' outcomes, the sum of their durations, the slowest rows, and per row the
distinct tensor shapes each operation was called with (what jitted code compiles once each).
Results go to ``benchmarks/results/family_run_IMPL.json``. A measurement, never an assertion.
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
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def topics(families: list[str]) -> list[str]:
    """The spec topics of ``families`` (``spec/<family>/<topic>.md``)."""
    return sorted(p.stem for family in families for p in (ROOT / "spec" / family).glob("*.md"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", required=True)
    parser.add_argument("--family", action="append", help="default: attention, positions, blocks")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    families = args.family or ["attention", "positions", "blocks"]
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "specformer", "run", "--impl", args.impl, "--profile", args.profile,
                   "--jobs", str(args.jobs), "--report", str(report_path)]
        for topic in topics(families):
            command += ["--topic", topic]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - start
        report = json.loads(report_path.read_text(encoding="utf-8"))
    rows = report["rows"]
    shapes = [v["count"] for r in rows if r.get("shapes") for v in r["shapes"].values()]
    result = {
        "implementation": args.impl, "families": families, "profile": args.profile, "jobs": args.jobs,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "wall_s": round(wall, 1), "exit": done.returncode, "rows": len(rows),
        "outcomes": dict(Counter(r["outcome"] for r in rows)),
        "as_expected": all(r["as_expected"] for r in rows),
        "rows_duration_s": round(sum(r["duration_s"] for r in rows), 1),
        "distinct_shapes_per_operation_per_row": {
            "mean": round(statistics.mean(shapes), 2) if shapes else None,
            "median": statistics.median(shapes) if shapes else None, "max": max(shapes, default=None)},
        "slowest_rows": [{"property": r["property"], "dtype": r["dtype"], "duration_s": r["duration_s"],
                          "shapes": {op: v["count"] for op, v in (r.get("shapes") or {}).items()}}
                         for r in sorted(rows, key=lambda r: -r["duration_s"])[:10]],
    }
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"family_run_{Path(args.impl).stem}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "slowest_rows"}, indent=2))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
