"""Run ``specformer run --profile ci`` once per numerical back-end setting and compare the rows.

Usage: ``python benchmarks/backends.py [--out DIR] [--setting NAME]... [--mkl-intel auto|on|off] [--no-repeat]
-- [RUN OPTIONS]``

A verdict belongs to the implementation, never to the machine (DESIGN.md, "Machines and
environments"). This script checks that on one machine: it runs the suite once per
setting of the CPU's numerical code paths (MKL's instruction set and its conditional
numerical reproducibility mode, ATen's vectorized kernels, the thread count) and prints,
for each, the exit status, the rows, the rows not as expected and the rows whose outcome
differs from the baseline's (rows matched by claim, property, implementation, device and
dtype). The baseline runs again last (``baseline-again``; ``--no-repeat`` skips it): a row that
differs there moved for another reason than the back-end (the checkout changed during the
run, or the run does not repeat). Options after ``--`` go to ``specformer run`` unchanged
(``--claims``, ``--topic``, ``--impl``, ...); ``--profile ci --jobs 2`` are the defaults. Reports
are kept in ``DIR`` (default ``reports/backends``) as ``<setting>.json``, with a
``summary-*.json`` of the comparison. This is a measurement, never an assertion.

MKL chooses its code path from the CPU's vendor: on a CPU that is not Intel's (AMD's EPYC,
the development machine) it takes its own non-Intel path whatever ``MKL_ENABLE_INSTRUCTIONS``
says, and ``MKL_VERBOSE`` names no instruction set. With ``--mkl-intel on`` (``auto``: on such
a CPU, when a C compiler is found) the two ``MKL_ENABLE_INSTRUCTIONS`` settings run with a
small preloaded library that answers MKL's "is this an Intel CPU?" with yes, so that they
take the AVX2 and AVX-512 paths an Intel machine takes, and one more setting runs MKL's
automatic Intel dispatch. Each setting's line names the path MKL reported (``MKL_VERBOSE=1``
on a small float64 matmul) and a digest of the bits of a float64 and a float32 product, so the output records
whether two settings really computed differently.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

#: A row's identity in a report (specformer/report/model.py: one row per claim's property ×
#: implementation × device × dtype).
ROW_KEY = ("claim", "property", "implementation", "device", "dtype")


class Setting(NamedTuple):
    """One back-end setting: extra environment variables, extra ``specformer run`` options."""

    name: str
    env: dict[str, str]
    args: tuple[str, ...] = ()
    intel_dispatch: bool = False  # preload the "this CPU is Intel's" shim (module doc)


SETTINGS: list[Setting] = [
    Setting("baseline", {}),
    Setting("mkl-avx2", {"MKL_ENABLE_INSTRUCTIONS": "AVX2"}),
    Setting("mkl-avx512", {"MKL_ENABLE_INSTRUCTIONS": "AVX512"}),
    Setting("mkl-cbwr-compatible", {"MKL_CBWR": "COMPATIBLE"}),
    Setting("aten-default", {"ATEN_CPU_CAPABILITY": "default"}),
    Setting("aten-avx2", {"ATEN_CPU_CAPABILITY": "avx2"}),
    Setting("threads-2", {"OMP_NUM_THREADS": "2"}, ("--threads", "2")),
]
#: Added where MKL does not dispatch by instruction set (a non-Intel CPU) and the shim is used.
INTEL_AUTO = Setting("mkl-intel-auto", {}, intel_dispatch=True)
#: The baseline once more, last: rows that differ between the two baselines moved for another
#: reason than the back-end (the checkout changed during the run, or the run is not repeatable).
AGAIN = Setting("baseline-again", {})

_SHIM_C = "int mkl_serv_intel_cpu_true(void) { return 1; }\nint mkl_serv_intel_cpu(void) { return 1; }\n"

_PROBE = """
import hashlib, torch
g = torch.Generator().manual_seed(0)
a = torch.rand(33, 1000, dtype=torch.float64, generator=g)  # a long inner dimension: the kernels' summation
b = torch.rand(1000, 17, dtype=torch.float64, generator=g)  # orders differ (64 x 64 does not tell AVX2 from AVX-512)
digest = hashlib.sha1((a @ b).numpy().tobytes() + (a.float() @ b.float()).numpy().tobytes()).hexdigest()[:12]
print("DIGEST", digest, torch.backends.cpu.get_cpu_capability())
"""


def build_shim(folder: Path) -> Path | None:
    """Compile the preload library that makes MKL treat the CPU as Intel's; None without a C compiler."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        return None
    source, library = folder / "mkl_intel_cpu.c", folder / "mkl_intel_cpu.so"
    source.write_text(_SHIM_C)
    done = subprocess.run([cc, "-shared", "-fPIC", "-o", str(library), str(source)], capture_output=True, text=True)
    return library if done.returncode == 0 else None


def environment_of(setting: Setting, shim: Path | None) -> dict[str, str]:
    """The process environment of one setting: ours, without the variables any setting sets, plus its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS",
                        "MKL_NUM_THREADS", "MKL_VERBOSE")}
    env.update(setting.env)
    if setting.intel_dispatch and shim is not None:
        env["LD_PRELOAD"] = " ".join(filter(None, [str(shim), env.get("LD_PRELOAD")]))
    return env


def mkl_path(env: dict[str, str]) -> str:
    """Which code paths MKL and ATen take under ``env``: MKL_VERBOSE's ISA phrase and CNR mode, a digest of
    a float64 and a float32 product, ATen's CPU capability."""
    done = subprocess.run([sys.executable, "-c", _PROBE], env={**env, "MKL_VERBOSE": "1"},
                          capture_output=True, text=True, timeout=120)
    isa, cnr, digest = "?", "?", "?"
    for line in done.stdout.splitlines():
        if line.startswith("MKL_VERBOSE oneMKL") or line.startswith("MKL_VERBOSE Intel(R) MKL"):
            # "... for Intel(R) 64 architecture <ISA phrase>, Lnx 2.60GHz lp64 gnu_thread"
            isa = line.split("architecture", 1)[-1].split(", Lnx")[0].strip()
        elif "GEMM(" in line and "CNR:" in line:
            cnr = line.split("CNR:", 1)[1].split()[0]
        elif line.startswith("DIGEST"):
            _, digest, aten = line.split()
            digest = f"{digest} aten={aten}"
    if done.returncode != 0:
        return f"probe failed: {done.stderr.strip().splitlines()[-1:]}"
    return f"MKL: {isa}; CNR:{cnr}; matmul digest {digest}"


def run_setting(setting: Setting, passthrough: list[str], out: Path, shim: Path | None) -> tuple[int, float, dict]:
    """One run of the suite under ``setting``; returns (exit status, wall seconds, report or {})."""
    report = out / f"{setting.name}.json"
    report.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "specformer", "run", "--profile", "ci", "--jobs", "2", *passthrough,
           *setting.args, "--report", str(report)]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:  # as suite_time.py: nothing of the checkout's folder is picked up
        done = subprocess.run(cmd, cwd=tmp, env=environment_of(setting, shim), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - start
    try:
        data = json.loads(report.read_text())
    except (OSError, json.JSONDecodeError):
        print(f"  no report; stderr: {done.stderr.strip()[-500:]}")
        data = {}
    return done.returncode, wall, data


def key(row: dict) -> tuple:
    return tuple(row.get(k) for k in ROW_KEY)


def differences(baseline: dict, other: dict) -> list[str]:
    """Rows whose outcome differs from the baseline's, and rows only one of the two reports has."""
    base = {key(r): r for r in baseline.get("rows", [])}
    rows = {key(r): r for r in other.get("rows", [])}
    lines = []
    for k in sorted(base.keys() | rows.keys(), key=lambda k: tuple(map(str, k))):
        a, b = base.get(k), rows.get(k)
        name = f"{k[1]} [{k[2]}, {k[3]}, {k[4]}]"
        if a is None or b is None:
            lines.append(f"{name}: only in {'this run' if a is None else 'the baseline'}")
        elif a["outcome"] != b["outcome"]:
            # both as expected: e.g. a deviation listed as intermittent, found in one run and not in the other
            both = " [both as expected]" if a.get("as_expected") and b.get("as_expected") else ""
            message = (b.get("message") or a.get("message") or "").strip().splitlines()
            lines.append(f"{name}: {a['outcome']} -> {b['outcome']}{both}"
                         + (f" ({message[0][:160]})" if message else ""))
    return lines


def not_as_expected(report: dict) -> list[str]:
    return [f"{r['property']} [{r['implementation']}, {r['device']}, {r['dtype']}]: {r['outcome']}"
            for r in report.get("rows", []) if not r.get("as_expected", True)]


def main() -> None:
    argv = sys.argv[1:]
    passthrough = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="reports/backends",
                        help="folder for the reports: <setting>.json each, summary-*.json (default: reports/backends)")
    parser.add_argument("--setting", action="append", help="only these settings (the baseline always runs)")
    parser.add_argument("--no-repeat", action="store_true", help="do not run the baseline again at the end")
    parser.add_argument("--mkl-intel", choices=("auto", "on", "off"), default="auto",
                        help="MKL dispatches as on an Intel CPU in the MKL_ENABLE_INSTRUCTIONS settings (module doc)")
    args = parser.parse_args(own)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)

    settings = list(SETTINGS)
    shim = None
    native = mkl_path(environment_of(SETTINGS[0], None))
    print(f"machine: {os.cpu_count()} CPUs; MKL_VERBOSE baseline: {native}")
    non_intel = "MKL: Intel(R) Architecture processors" in native  # MKL names no ISA: it does not dispatch by it
    if args.mkl_intel == "on" or (args.mkl_intel == "auto" and non_intel):
        shim = build_shim(out)
        if shim is None:
            print("no C compiler: MKL_ENABLE_INSTRUCTIONS settings run without the Intel-dispatch shim")
        else:
            settings = [s._replace(intel_dispatch=True) if "MKL_ENABLE_INSTRUCTIONS" in s.env else s for s in settings]
            settings.insert(1, INTEL_AUTO)
    if args.setting:
        settings = [s for s in settings if s.name == "baseline" or s.name in args.setting]
    if shim is not None and any(s.intel_dispatch for s in settings):
        print(f"MKL does not dispatch by ISA on this CPU: {', '.join(s.name for s in settings if s.intel_dispatch)} "
              f"preload {shim.name} (MKL treats the CPU as Intel's)")
    if not args.no_repeat:
        settings.append(AGAIN)
    print(f"run options: --profile ci --jobs 2 {' '.join(passthrough)}")

    baseline: dict = {}
    summary = []
    for setting in settings:
        env = environment_of(setting, shim)
        described = " ".join([*(f"{k}={v}" for k, v in setting.env.items()), *setting.args,
                              *(["+intel-dispatch"] if setting.intel_dispatch and shim else [])]) or "(as is)"
        path = mkl_path(env)
        print(f"\n== {setting.name}: {described}\n  {path}", flush=True)
        status, wall, report = run_setting(setting, passthrough, out, shim)
        rows = report.get("rows", [])
        bad = not_as_expected(report)
        print(f"  exit {status}, {wall:.0f} s, {len(rows)} rows, {len(bad)} not as expected, "
              f"state {report.get('summary', {}).get('state')}")
        for line in bad:
            print(f"    not as expected: {line}")
        if setting.name == "baseline":
            baseline = report
            diff: list[str] = []
        else:
            diff = differences(baseline, report)
            print(f"  {len(diff)} rows differ from the baseline")
            for line in diff:
                print(f"    differs: {line}")
        summary.append({"setting": setting.name, "environment": setting.env, "args": list(setting.args),
                        "intel_dispatch": bool(setting.intel_dispatch and shim), "exit": status,
                        "wall_s": round(wall, 1), "rows": len(rows), "not_as_expected": bad, "differs": diff,
                        "mkl": path})
    digest = hashlib.sha1(json.dumps(passthrough).encode()).hexdigest()[:8]
    # the reports' own commit is None: they run from a temporary folder
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                            text=True, check=False).stdout.strip() or None
    result = {"run_options": passthrough, "commit": commit, "settings": summary}
    (out / f"summary-{digest}.json").write_text(json.dumps(result, indent=2) + "\n")
    print("\nsetting                 exit   rows  not-as-expected  differ")
    for s in summary:
        print(f"{s['setting']:<22} {s['exit']:>5} {s['rows']:>6} {len(s['not_as_expected']):>16} "
              f"{len(s['differs']):>7}")


if __name__ == "__main__":
    main()
