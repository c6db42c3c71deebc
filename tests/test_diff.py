"""``specformer diff``: two reports compared row by row, and the library versions reports record."""

from __future__ import annotations

import copy
import gzip
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from specformer.report.diff import DiffError, compare, load_report
from specformer.report.model import REPORT_SCHEMA, build_report, implementation_entry
from specformer.runner.cli import main

ROOT = Path(__file__).resolve().parent.parent
SUMS = "attention.weights-sum-to-one"


def row(claim: str, prop: str, impl: str, outcome: str, device: str = "cpu", dtype: str = "float32",
        message: str = "") -> dict[str, Any]:
    return {"claim": claim, "property": prop, "implementation": impl, "device": device, "dtype": dtype,
            "expect": "hold", "outcome": outcome, "as_expected": outcome in ("pass", "refuted", "not-applicable"),
            "message": message}


def report(rows: list[dict[str, Any]], torch_version: str = "2.13.0+cpu",
           libraries: dict[str, str] | None = None) -> dict[str, Any]:
    impls = [{"name": name, "spec": name, "operations": ["attention"], "status": "loaded"}
             for name in dict.fromkeys(r["implementation"] for r in rows)]
    if libraries is not None:
        for entry in impls:
            lib, _, version = libraries.get(entry["name"], "").partition(" ")
            entry["library"] = {"name": lib, "version": version} if lib else None
    return {"schema": "specformer-report", "schema_version": 2,
            "environment": {"specformer": "0.1.0", "python": "3.12.3", "torch": torch_version,
                            "platform": "Linux", "devices": ["cpu"], "cuda": None,
                            "created": "2026-11-27T02:25:00+00:00", "profile": "ci", "command": "specformer run"},
            "implementations": impls,
            "summary": {"rows": len(rows), "ok": True, "complete": True, "state": "complete"},
            "rows": rows}


BASE = [
    row(SUMS, "attention.rows_sum_to_one", "mine", "pass"),
    row(SUMS, "attention.rows_sum_to_one", "mine", "pass", dtype="float64"),
    row("masking.causal", "masking.later_positions_do_not_matter", "mine", "pass"),
    row(SUMS, "attention.rows_sum_to_one", "reference", "pass"),
]


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def diff(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    code = main(["diff", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_identical_reports_exit_0_and_say_no_row_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.json", report(BASE))
    code, out, _ = diff(capsys, a, write(tmp_path / "b.json", report(BASE)))
    assert code == 0, out
    assert "4 rows in both: no row differs; only in A: 0, only in B: 0" in out
    assert "rows matched on property, implementation, device and dtype" in out
    assert out.startswith(f"A  {a}\nB  ")
    assert "  torch       2.13.0+cpu\n" in out  # a field both share: one line


def test_a_changed_outcome_is_shown_grouped_by_implementation_and_claim(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    changed = copy.deepcopy(BASE)
    changed[1].update(outcome="fail", as_expected=False, message="row sums differ from 1 by 0.3\nsecond line")
    changed[2].update(outcome="error", as_expected=False, message="row sums differ from 1 by 0.3\nsecond line")
    changed.append(row("masking.causal", "masking.extra", "mine", "pass"))
    a = write(tmp_path / "a.json", report(BASE))
    b = write(tmp_path / "b.json", report(changed[1:], torch_version="2.14.0+cpu"))
    code, out, _ = diff(capsys, a, b)
    assert code == 1, out
    assert "  torch       A 2.13.0+cpu\n              B 2.14.0+cpu\n" in out
    assert "3 rows in both: 2 differ, 1 the same; only in A: 1, only in B: 1" in out
    assert "changes: pass -> fail 1, pass -> error 1" in out
    expected = ("\nmine\n"
                "  attention.weights-sum-to-one\n"
                "    attention.rows_sum_to_one [cpu/float64]  pass -> fail\n"
                "      B [1] row sums differ from 1 by 0.3 second line\n"
                "  masking.causal\n"
                "    masking.later_positions_do_not_matter [cpu/float32]  pass -> error  B [1]\n")
    assert expected in out
    assert "\nonly in A (1 row)\n  mine                   cpu/float32 1\n" in out
    assert "\nonly in B (1 row)\n  mine                   cpu/float32 1\n" in out


def test_a_gzip_compressed_report_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = write(tmp_path / "a.json", report(BASE))
    packed = tmp_path / "b.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert load_report(packed) == load_report(plain)
    code, out, _ = diff(capsys, plain, packed)
    assert code == 0 and "no row differs" in out


@pytest.mark.parametrize("content, problem", [
    (b"not json at all", "not a specformer report (not JSON"),
    (b'{"rows": []}', 'not a specformer report (no "schema": "specformer-report")'),
    (b'{"schema": "specformer-report", "schema_version": 9, "rows": []}', "schema_version 9"),
    (b'{"schema": "specformer-report", "schema_version": 2, "rows": [1]}', "a list of rows"),
    (gzip.compress(b"[1, 2]", mtime=0), "not a specformer report"),
    (b"\x1f\x8b broken gzip", "cannot be read"),
])
def test_a_file_that_is_not_a_report_is_a_usage_error_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 content: bytes, problem: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    code, out, err = diff(capsys, write(tmp_path / "a.json", report(BASE)), bad)
    assert code == 2 and not out
    assert err.startswith(f"specformer: error: {bad}: ") and problem in err, err


def test_a_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = diff(capsys, tmp_path / "absent.json", write(tmp_path / "b.json", report(BASE)))
    assert code == 2 and f"{tmp_path / 'absent.json'}: no such file" in err
    code, _, err = diff(capsys, tmp_path, tmp_path / "b.json")
    assert code == 2 and "is a folder" in err


def test_cpu_against_cuda_matches_rows_on_everything_but_the_device(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cpu = report([row(SUMS, "attention.rows_sum_to_one", "mine", "pass"),
                  row(SUMS, "attention.rows_sum_to_one", "mine", "pass", dtype="float64")])
    cuda = report([row(SUMS, "attention.rows_sum_to_one", "mine", "fail", device="cuda", message="off by 1e-3"),
                   row(SUMS, "attention.rows_sum_to_one", "mine", "pass", device="cuda", dtype="float16")])
    a, b = write(tmp_path / "cpu.json", cpu), write(tmp_path / "cuda.json", cuda)
    code, out, _ = diff(capsys, a, b)
    assert code == 1
    assert "device ignored, automatically: the reports ran on different devices" in out
    assert "  rows ran on A cpu; B cuda\n" in out
    assert "    attention.rows_sum_to_one [float32]  pass -> fail\n      B [1] off by 1e-3\n" in out
    assert "only in A (1 row)\n  mine                   cpu/float64 1" in out
    code, out, _ = diff(capsys, a, b, "--match-device")
    assert code == 0 and "0 rows in both: no row differs; only in A: 2, only in B: 2" in out
    # a report with rows of both devices cannot be matched without the device
    both = report(cpu["rows"] + cuda["rows"])
    assert compare(both, cuda)["ignore_device"] is False
    with pytest.raises(DiffError, match="leave out --ignore-device"):
        compare(both, cuda, ignore_device=True)


def test_json_output_lists_the_rows_that_differ(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    changed = copy.deepcopy(BASE)
    changed[0].update(outcome="error", as_expected=False, message="boom")
    code, out, _ = diff(capsys, write(tmp_path / "a.json", report(BASE)), write(tmp_path / "b.json", report(changed)),
                        "--json")
    data = json.loads(out)
    assert code == 1 and data["matched"] == 4 and data["ignore_device"] is False
    assert [(d["a"]["outcome"], d["b"]["outcome"], d["b"]["message"]) for d in data["differ"]] == \
        [("pass", "error", "boom")]
    assert data["only_a"] == data["only_b"] == [] and data["changes"] == {"pass -> error": 1}


def test_library_versions_that_differ_are_in_the_header(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = report(BASE, libraries={"mine": "transformers 5.23.0", "reference": "specformer 0.1.0"})
    b = report(BASE, libraries={"mine": "transformers 5.24.0", "reference": "specformer 0.1.0"})
    code, out, _ = diff(capsys, write(tmp_path / "a.json", a), write(tmp_path / "b.json", b))
    assert code == 0
    assert "libraries that differ\n  mine                   transformers 5.23.0 -> transformers 5.24.0\n" in out
    assert "reference  " not in out.split("libraries that differ")[1].split("\n\n")[0]
    code, out, _ = diff(capsys, tmp_path / "a.json", write(tmp_path / "old.json", report(BASE)))
    assert "libraries   not recorded in B" in out


def test_report_text_is_printed_without_control_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = copy.deepcopy(BASE)
    hostile[0].update(outcome="fail", as_expected=False, message="\x1b[2J\x1b[31mred\ud800")
    hostile[3]["implementation"] = "ref\x07"  # in B only: listed by name
    code, out, _ = diff(capsys, write(tmp_path / "a.json", report(BASE)), write(tmp_path / "b.json", report(hostile)))
    assert code == 1
    assert "\x1b" not in out and "\x07" not in out and "\ud800" not in out
    assert "B [1] ?[2J?[31mred?" in out and "\n  ref?   " in out


def test_the_subcommand_runs_through_python_m_specformer(tmp_path: Path) -> None:
    changed = copy.deepcopy(BASE)
    changed[3].update(outcome="fail", as_expected=False, message="sums are 1.5")
    a, b = write(tmp_path / "a.json", report(BASE)), write(tmp_path / "b.json", report(changed))
    done = subprocess.run([sys.executable, "-m", "specformer", "diff", str(a), str(b)], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "\nreference\n  attention.weights-sum-to-one\n    attention.rows_sum_to_one [cpu/float32]  pass -> fail\n" \
        in done.stdout
    done = subprocess.run([sys.executable, "-m", "specformer", "diff", str(a)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 2 and "usage: specformer diff" in done.stderr


# -- the library and version a report records for each implementation -------------------------


def test_an_implementation_entry_names_the_library_it_wraps() -> None:
    """The version is the distribution's metadata (``2.11.0``), not the module's ``__version__``, which may carry
    a local build tag (``2.11.0+cu130``)."""
    assert implementation_entry("reference", "reference")["library"] == {"name": "specformer",
                                                                         "version": metadata.version("specformer")}
    assert implementation_entry("torch-mha", "torch-mha")["library"] == {"name": "torch",
                                                                         "version": metadata.version("torch")}
    assert implementation_entry("hf-bert", "specformer.adapters.hf_bert:implementation")["library"]["name"] \
        == "transformers"
    assert implementation_entry("mine", "mine.py")["library"] is None
    assert implementation_entry("math", "math")["library"] is None


def test_reports_without_libraries_stay_valid_and_none_is_made_up_for_them() -> None:
    old = {"name": "reference", "spec": "reference", "operations": ["attention"], "status": "loaded",
           "message": "", "omitted_families": []}
    merged = build_report([], [old], "ci", 0.0)
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(merged)
    assert merged["implementations"][0]["library"] is None  # a merge of old reports keeps them unrecorded
    del merged["implementations"][0]["library"]
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(merged)


def test_a_fresh_report_records_each_implementations_library_and_version(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "specformer", "run", "--claims", SUMS, "--impl", "reference",
                           "--impl", "torch-sdpa", "--report", "R.json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=1800)
    assert (tmp_path / "R.json").exists(), done.stdout + done.stderr
    data = json.loads((tmp_path / "R.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(data)
    libraries = {i["name"]: i["library"] for i in data["implementations"]}
    assert libraries["reference"] == {"name": "specformer", "version": metadata.version("specformer")}
    assert libraries["torch-sdpa"] == {"name": "torch", "version": metadata.version("torch")}


def test_the_published_cuda_report_is_compared_with_a_cpu_report(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The site's published CUDA rows (docs/results/) against a CPU run of the same rows: matched without
    the device, each outcome from the published file."""
    published = json.loads((ROOT / "docs" / "results" / "cuda-h100.json").read_text(encoding="utf-8"))
    cpu = copy.deepcopy(published)
    for r in cpu["rows"]:
        r["device"] = "cpu"
    changed = next(r for r in cpu["rows"] if r["outcome"] == "pass")
    changed["outcome"], changed["message"] = "fail", "off on the CPU"
    code, out, _ = diff(capsys, write(tmp_path / "cpu.json", cpu), str(ROOT / "docs" / "results" / "cuda-h100.json"))
    assert code == 1 and "device ignored, automatically" in out
    assert f"{changed['property']} [{changed['dtype']}]  fail -> pass" in out, out[-2000:]


def test_a_cpu_machines_skipped_cuda_rows_carry_no_verdict_and_are_left_out() -> None:
    """``--device all`` on a CPU-only machine reports its CUDA rows as skipped: compared with a CUDA report,
    the CPU rows are matched across devices, as for a ``--device cpu`` report, and the skipped ones are counted."""
    cpu_all = report(BASE + [{**r, "device": "cuda", "outcome": "skipped", "as_expected": True} for r in BASE])
    cuda = report([{**r, "device": "cuda"} for r in BASE[:3]] + [
        {**BASE[3], "device": "cuda", "outcome": "fail", "as_expected": False}])
    diff = compare(cpu_all, cuda)
    assert diff["ignore_device"] and diff["a"]["skipped"] == 4 and diff["b"]["skipped"] == 0
    assert diff["matched"] == 4 and [d["b"]["implementation"] for d in diff["differ"]] == ["reference"]
    assert diff["a"]["ran_on"] == ["cpu"]
