"""No implementation can crash, fool or slip past the runner.

One ``specformer run`` checks the reference beside every implementation of
``tests/hostile_impls.py`` and two files that misbehave while they are imported. Each
misbehaviour must end as the right outcome on its own rows, with a message that says
what happened; the reference's and the mathematics' rows must not notice; the report
must be complete and valid; and the command must exit non-zero.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from specformer.report.model import REPORT_SCHEMA

HOSTILE = Path(__file__).resolve().parent / "hostile_impls.py"
PROPERTY = "attention.output_matches_the_formula"
ROW_TIMEOUT = 8.0  # CPU seconds: the spinner reaches it on a busy machine; touching 2 GiB takes less
ROW_BACKSTOP = 60.0  # wall seconds: what ends the sleepers
CLASSES = ["Segfaults", "ExitsZero", "ModifiesInputs", "PatchesTorch", "ReturnsALyingTensor", "BlocksTheAlarm",
           "Spins", "RaisesABaseException", "Noisy", "EatsMemory", "ReservesAddressSpace", "TouchesTooMuch",
           "LosesItsDevice"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("isolation")
    (tmp / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    (tmp / "hangs_on_import.py").write_text("import time\ntime.sleep(3600)\n", encoding="utf-8")
    report = tmp / "report.json"
    report.write_text('{"summary": {"ok": true, "complete": true}}', encoding="utf-8")  # a stale "ok" report
    impls = ["reference", *(f"{HOSTILE}:{name}" for name in CLASSES),
             str(tmp / "exits_on_import.py"), str(tmp / "hangs_on_import.py")]
    command = [sys.executable, "-m", "specformer", "run", "--property", PROPERTY,
               "--claims", "attention.scaled-dot-product,scaling.dot-product-variance", "--dtype", "float64",
               "--row-timeout", str(ROW_TIMEOUT), "--row-backstop", str(ROW_BACKSTOP), "--memory-limit", "2048",
               "--report", str(report)]
    for impl in impls:
        command += ["--impl", impl]
    command += ["--property", "scaling.dot_products_of_unit_variance_vectors_have_variance_d_k_as_written",
                "--with-math"]  # a math row beside them
    start = time.perf_counter()
    done = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=1800)
    return {"done": done, "seconds": time.perf_counter() - start,
            "report": json.loads(report.read_text(encoding="utf-8")), "output": done.stdout + done.stderr}


def rows_of(run: dict[str, Any], name: str) -> list[dict[str, Any]]:
    rows = [r for r in run["report"]["rows"] if r["implementation"] == name]
    assert rows, f"no row for {name}: {run['output'][-3000:]}"
    return rows


def only_row(run: dict[str, Any], name: str) -> dict[str, Any]:
    rows = rows_of(run, name)
    assert len(rows) == 1, rows
    return rows[0]


def test_the_run_completes_with_a_valid_report_and_a_non_zero_exit(run: dict[str, Any]) -> None:
    report = run["report"]
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(report)
    assert report["summary"]["state"] == "complete" and report["summary"]["complete"] is True, run["output"][-2000:]
    assert report["summary"]["ok"] is False
    assert run["done"].returncode == 1, run["output"][-2000:]
    assert "SOME CLAIMS DID NOT END AS EXPECTED" in run["output"]


def test_nothing_blames_the_reference_or_the_mathematics(run: dict[str, Any]) -> None:
    reference = only_row(run, "reference")
    assert reference["outcome"] == "pass", reference["message"]
    math_rows = rows_of(run, "math")
    assert [r["outcome"] for r in math_rows] == ["refuted"], math_rows


def test_a_segfault_is_an_error_naming_the_signal(run: dict[str, Any]) -> None:
    row = only_row(run, "segfaults")
    assert row["outcome"] == "error" and "SIGSEGV" in row["message"], row["message"]


def test_an_exit_with_status_zero_is_an_error(run: dict[str, Any]) -> None:
    row = only_row(run, "exits-zero")
    assert row["outcome"] == "error" and "exited with status 0" in row["message"], row["message"]


def test_an_input_modified_in_place_is_an_error_naming_it(run: dict[str, Any]) -> None:
    row = only_row(run, "modifies-inputs")
    assert row["outcome"] == "error", row["message"]
    assert "modified its input q, k in place" in row["message"], row["message"]


def test_patching_torch_changes_only_the_patchers_own_rows(run: dict[str, Any]) -> None:
    row = only_row(run, "patches-torch")
    assert row["outcome"] in ("fail", "error") and not row["as_expected"], row["message"]


def test_a_lying_tensor_subclass_is_read_by_its_values(run: dict[str, Any]) -> None:
    row = only_row(run, "lying-tensor")
    assert row["outcome"] == "fail" and "out of tolerance" in row["message"], row["message"]


@pytest.mark.parametrize("name, limit", [("blocks-alarm", "the row's wall-clock backstop of 60 s ran out"),
                                         ("spins", "the row's CPU limit of 8 s ran out")])
def test_a_hang_is_cut_from_outside_the_worker(run: dict[str, Any], name: str, limit: str) -> None:
    """A sleeper uses no CPU: the backstop ends it; a spinner ends by the CPU limit. The message says which."""
    row = only_row(run, name)
    assert row["outcome"] == "error" and "did not answer in time" in row["message"], row["message"]
    assert limit in row["message"], row["message"]


def test_a_base_exception_subclass_is_an_error_row(run: dict[str, Any]) -> None:
    row = only_row(run, "raises-base-exception")
    assert row["outcome"] == "error" and "Escape" in row["message"], row["message"]


def test_output_of_a_noisy_implementation_is_not_replayed(run: dict[str, Any]) -> None:
    row = only_row(run, "noisy")
    assert row["outcome"] == "pass", row["message"]
    assert len(run["output"]) < 200_000, f"{len(run['output'])} characters of output"


def test_memory_exhaustion_is_an_error(run: dict[str, Any]) -> None:
    row = only_row(run, "eats-memory")
    assert row["outcome"] == "error", row
    assert any(word in row["message"] for word in ("memory", "MemoryError", "SIGKILL")), row["message"]


def test_reserved_address_space_is_not_memory_used(run: dict[str, Any]) -> None:
    """16 GiB reserved and never touched, against a limit of 2,048 MiB: the limit is on what a worker
    uses, so a library that maps large ranges (the CUDA build of torch, OpenBLAS) is not failed."""
    row = only_row(run, "reserves-address-space")
    assert row["outcome"] == "pass", row["message"]


def test_memory_touched_past_the_limit_is_the_implementations_error(run: dict[str, Any]) -> None:
    row = only_row(run, "touches-too-much")
    assert row["outcome"] == "error", row
    assert "more than the limit of 2048 MiB" in row["message"] and "--memory-limit" in row["message"], row["message"]


def test_a_lost_device_is_an_error_and_the_worker_is_not_asked_again(run: dict[str, Any]) -> None:
    row = only_row(run, "loses-its-device")
    assert row["outcome"] == "error", row
    assert "device-side assert" in row["message"] and "restarted" in row["message"], row["message"]
    assert "in place" not in row["message"], row["message"]


def test_an_exit_while_importing_is_a_load_error_without_rows(run: dict[str, Any]) -> None:
    entries = {Path(i["spec"]).name: i for i in run["report"]["implementations"]}
    entry = entries["exits_on_import.py"]
    assert entry["status"] == "load-error" and "exit" in entry["message"], entry
    hang = entries["hangs_on_import.py"]
    assert hang["status"] == "load-error" and "did not answer in time" in hang["message"], hang
    assert not [r for r in run["report"]["rows"] if r["implementation"].endswith("_on_import.py")]
    assert "could not be loaded" in run["output"]


def test_the_progress_line_letters_error_rows_as_the_legend_says(run: dict[str, Any]) -> None:
    """``E`` for an error row, ``F`` for a failure, as the legend under the summary says."""
    import re

    lines = [re.fullmatch(r"([.rsxX?FE]+)\s*(\[ *\d+%\])?", line.strip()) for line in run["output"].splitlines()]
    progress = "".join(match.group(1) for match in lines if match)
    assert "E" in progress and "F" in progress, run["output"][:2000]
    assert "E error" in run["output"] and "F fail" in run["output"]
