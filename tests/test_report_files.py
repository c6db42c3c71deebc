"""Reports are data: ``merge`` refuses what is not one run, and no command imports a file, reads
without bound or answers with a traceback because of what a report file holds.

Each test holds a way a report could lie: shards of different implementation files or ``--claims``
merged into one complete report, ``merge -o`` overwriting its input, ``replay`` and ``run --failed``
importing the file a report names, a 100,000-deep JSON file ending in a RecursionError traceback, a gzip
bomb or a huge file read whole.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specformer.report.model import build_report, implementation_entry
from specformer.runner.cli import main
from specformer.runner.row import RowResult

PROPERTY = "size.an_implementations_model_has_the_closed_form_count"
ROOT = Path(__file__).resolve().parents[1]


def _row(prop: str, implementation: str = "mine", outcome: str = "pass") -> RowResult:
    return RowResult("size.base-big-parameters", prop, implementation, "cpu", "float64", "hold", outcome)


def _shard(rows: list[RowResult], k: int, implementations: list[dict[str, Any]],
           command: str = "specformer run --impl mine.py --claims size.* --report r.json") -> dict[str, Any]:
    """A shard's report as ``specformer run ... --shard K/2`` writes it (its command: the argv joined)."""
    return build_report(rows, implementations, "ci", 1.0, command=f"{command} --shard {k}/2",
                        environment_extra={"seed": None, "shard": {"index": k, "count": 2, "rows_in_run": 2}})


def _merge(tmp_path: Path, a: dict[str, Any], b: dict[str, Any],
           capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    (tmp_path / "a.json").write_text(json.dumps(a), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(b), encoding="utf-8")
    code = main(["merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "m.json")])
    return code, capsys.readouterr().err


def _one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specformer: error: "), err
    assert "Traceback" not in err, err
    return lines[0]


# --- merge: one run only --------------------------------------------------------------------------------


def test_merge_refuses_shards_of_one_name_but_different_implementation_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    entries = []
    for machine, answer in (("one", "count"), ("two", "count + 1")):  # a correct and a wrong mine.py
        (tmp_path / machine).mkdir()
        (tmp_path / machine / "mine.py").write_text(f"def count(config, count):\n    return {answer}\n",
                                                    encoding="utf-8")
        monkeypatch.chdir(tmp_path / machine)
        entries.append(implementation_entry("mine", "mine.py", ["count_parameters"]))
    monkeypatch.chdir(tmp_path)
    a = _shard([_row(PROPERTY)], 1, [entries[0]])
    b = _shard([_row("size.other")], 2, [entries[1]])
    code, err = _merge(tmp_path, a, b, capsys)
    assert code == 2 and "implementation 'mine' differs" in _one_line_error(err) and "sha256" in err, err
    assert not (tmp_path / "m.json").exists()
    assert entries[0]["sha256"] != entries[1]["sha256"]
    # the same file, named by another path on another machine, merges
    code, err = _merge(tmp_path, a, _shard([_row("size.other")], 2, [{**entries[0], "spec": "/ci/mine.py"}]), capsys)
    assert code == 0, err


def test_merge_refuses_shards_run_with_different_claims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    impls = [implementation_entry("reference", "reference")]
    a = _shard([_row(PROPERTY, "reference")], 1, impls, "specformer run --impl reference --claims size.*")
    b = _shard([_row("cost.p", "reference")], 2, impls, "specformer run --impl reference --claims cost.*")
    code, err = _merge(tmp_path, a, b, capsys)
    assert code == 2 and "--claims ['cost.*'] differs from" in _one_line_error(err), err
    assert not (tmp_path / "m.json").exists()
    # device legs of one run (no shards, another --device) still merge, and the merge keeps their options
    legs = [build_report([RowResult("size.base-big-parameters", PROPERTY, "reference", device, "float64", "hold",
                                    "pass")], impls, "ci", 1.0,
                         command=f"specformer run --impl reference --claims size.* --device {device} "
                                 f"--report {device}.json", environment_extra={"seed": None})
            for device in ("cpu", "cuda")]
    code, err = _merge(tmp_path, *legs, capsys)
    assert code == 0, err
    merged = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert merged["environment"]["run_options"]["--claims"] == ["size.*"]


def test_merge_refuses_an_output_that_is_one_of_its_inputs(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    impls = [implementation_entry("reference", "reference")]
    (tmp_path / "a.json").write_text(json.dumps(_shard([_row(PROPERTY, "reference")], 1, impls)), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(_shard([_row("size.x", "reference")], 2, impls)), encoding="utf-8")
    (tmp_path / "link.json").symlink_to(tmp_path / "b.json")
    before = {name: (tmp_path / name).read_bytes() for name in ("a.json", "b.json")}
    for output in (tmp_path / "a.json", tmp_path / "sub" / ".." / "b.json", tmp_path / "link.json"):
        code = main(["merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(output)])
        assert code == 2 and "being merged" in _one_line_error(capsys.readouterr().err)
    assert {name: (tmp_path / name).read_bytes() for name in before} == before


# --- a report names a file: it is never imported because of that ------------------------------------------------


def _hostile(tmp_path: Path, variant: str) -> tuple[Path, Path, Path]:
    """A report whose failing row runs on a file that, imported, writes a marker file."""
    marker = tmp_path / "imported"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    name = "reference" if variant == "a built-in name mapped to the file" else str(evil)
    row = {**_row(PROPERTY, name, "fail").to_json(), "as_expected": False}
    report = build_report([row], [implementation_entry(name, str(evil), find_library=False)]
                          if name == "reference" else [], "ci", 1.0)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    return path, evil, marker


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "specformer", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("variant", ["a built-in name mapped to the file", "the row names the file"])
@pytest.mark.parametrize("command", ["replay", "run --failed"])
def test_a_file_a_report_names_is_not_imported_without_impl(tmp_path: Path, variant: str, command: str) -> None:
    report, evil, marker = _hostile(tmp_path, variant)
    args = ["replay", str(report), "1", "-o", str(tmp_path / "out")] if command == "replay" else \
        ["run", "--failed", str(report), "--report", str(tmp_path / "rerun.json")]
    done = _cli(tmp_path, *args)
    assert not marker.exists(), done.stdout + done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    line = _one_line_error(done.stderr)
    assert f"--impl {evil}" in line and "never imported" in line, line
    if variant == "the row names the file":
        return
    # the user passes it: now it is imported (and, not being an implementation, fails to load)
    done = _cli(tmp_path, *args, "--impl", str(evil))
    assert marker.exists(), done.stdout + done.stderr


def test_failed_rows_run_on_the_implementation_the_user_names() -> None:
    from specformer.runner.selection import SelectionError, confirmed_rows

    rows = [{"property": "p", "implementation": "mine", "spec": "/ci/mine.py", "device": "cpu", "dtype": "float64",
             "seed": None},
            {"property": "p", "implementation": "reference", "spec": "reference", "device": "cpu",
             "dtype": "float64", "seed": None}]
    with pytest.raises(SelectionError, match="--impl /ci/mine.py"):
        confirmed_rows(rows, None)
    assert [r["spec"] for r in confirmed_rows(rows, ["here/mine.py"])] == ["here/mine.py", "reference"]
    assert [r["spec"] for r in confirmed_rows(rows, ["reference"])] == ["reference"]


# --- reading bounded: deep, huge, compressed ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["diff", "replay", "merge", "site", "run --failed"])
def test_a_deeply_nested_file_is_a_one_line_error(tmp_path: Path, command: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    argv = {"diff": ["diff", str(deep), str(deep)], "replay": ["replay", str(deep), "1"],
            "merge": ["merge", str(deep), str(deep), "-o", str(tmp_path / "m.json")],
            "site": ["site", "--report", str(deep), "-o", str(tmp_path / "site")],
            "run --failed": ["run", "--failed", str(deep), "--report", str(tmp_path / "r.json")]}[command]
    assert main(argv) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert str(deep) in line and "nested more than" in line, line


def _gzip_bomb(path: Path) -> None:
    """600 MiB of JSON text in 600 KB: gzip members of 1 MiB of spaces, one after the other (the file's
    trailer records the last member's size, 1 MiB)."""
    member = gzip.compress(b" " * 2**20, mtime=0)
    path.write_bytes(gzip.compress(b'{"schema": "specformer-report", "rows": [', mtime=0) + member * 600)


def _huge_plain(path: Path) -> None:
    """A 600 MiB file of zeros that takes no disk (sparse)."""
    with open(path, "wb") as f:
        f.truncate(600 * 2**20)


@pytest.mark.parametrize("make", [_gzip_bomb, _huge_plain])
def test_diff_refuses_a_gzip_bomb_or_a_huge_file_without_reading_it_all(tmp_path: Path, make: Any) -> None:
    bomb = tmp_path / "bomb.json.gz"
    make(bomb)
    other = tmp_path / "other.json"
    other.write_text(json.dumps(build_report([], [], "ci", 1.0)), encoding="utf-8")
    # the peak of this process's own memory (VmHWM): ru_maxrss would carry the peak of the process it was
    # forked from across exec (a pytest worker that ran many tests), not this one's
    program = ("import sys\nfrom specformer.runner.cli import main\n"
               f"code = main(['diff', {str(bomb)!r}, {str(other)!r}])\n"
               "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
               "print(code, int(hwm) // 1024)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600, env=env)
    code, mib = map(int, done.stdout.split())
    assert code == 2 and mib < 300, (mib, done.stderr)
    line = _one_line_error(done.stderr)
    assert str(bomb) in line and "too large" in line, line
