"""Run a command on a machine made busy: N processes that spin beside it, as on a loaded laptop or CI runner.

Usage: ``python benchmarks/busy_machine.py [--spinners 6] [--name NAME] [--out FILE] -- COMMAND...``

Each spinner (``python -c 'while True: pass'``) starts a session of its own, as another
program would, so the scheduler shares the cores between them and the command's processes
rather than giving the command's session half of the machine. Records the command's exit
status, its wall time and the load average at the end into ``benchmarks/results/busy_machine.json``
(one entry per ``--name``, kept between runs). A measurement, never an assertion: the
verdicts a command prints must not depend on the spinners, its wall time will.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "busy_machine.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spinners", type=int, default=6)
    parser.add_argument("--name", default=None, help="the entry's name (default: the command)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
                for _ in range(args.spinners)]
    try:
        start = time.perf_counter()
        done = subprocess.run(command)
        wall = time.perf_counter() - start
        load = os.getloadavg()
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    entry = {"command": " ".join(command), "spinners": args.spinners, "exit": done.returncode,
             "wall_s": round(wall, 1), "load_average_1_5_15": [round(x, 1) for x in load],
             "cpus": os.cpu_count(), "python": platform.python_version(),
             "date": time.strftime("%Y-%m-%d", time.gmtime())}
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results[args.name or entry["command"]] = entry
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(entry, indent=2))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
