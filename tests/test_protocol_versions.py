"""The protocol's versions: code written against an earlier version keeps working.

tests/old_protocol/word2vec_glove.py holds word2vec and GloVe written against versions 1 and 2;
their rows pass under the current protocol, the harness doing the later versions' parts
(:mod:`specformer.protocol.versions`). A change whose part the harness cannot do leaves the row
not applicable, with a message naming the change, never an error.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from specformer.checked.base import ContextBase
from specformer.protocol import OPERATIONS, NotApplicable, versions
from specformer.runner import worker
from specformer.runner.loading import load_implementation
from conftest import run_row

OLD = Path(__file__).resolve().parent / "old_protocol" / "word2vec_glove.py"
SYMMETRIC = "glove.co_occurrence_counts_of_a_symmetric_window_are_symmetric"


def test_every_change_names_an_operation_and_a_keyword_the_protocol_has() -> None:
    assert [c.version for c in versions.CHANGES] == sorted(c.version for c in versions.CHANGES)
    assert max(c.version for c in versions.CHANGES) == versions.PROTOCOL_VERSION
    for change in versions.CHANGES:
        assert change.operation in OPERATIONS, change
        if change.keyword is not None:
            op = OPERATIONS[change.operation]
            assert change.keyword in inspect.signature(getattr(op.protocol, op.method)).parameters, change


@pytest.mark.parametrize("attribute, notes", [("v1", 1), ("v2", 0)])
def test_word2vec_and_glove_written_against_an_earlier_version_pass(tmp_path: Path, attribute: str,
                                                                    notes: int) -> None:
    report = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "specformer", "run", "--impl", f"{OLD}:{attribute}",
                           "--topic", "glove", "--topic", "word2vec", "--report", str(report)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["environment"]["protocol"] == versions.PROTOCOL_VERSION
    rows = [r for r in data["rows"] if r["implementation"] != "math"]
    assert not [r for r in rows if r["outcome"] == "error"], [r["message"] for r in rows if r["outcome"] == "error"]
    counted = [r for r in rows if r["property"].startswith("glove.") and r["outcome"] == "pass"
               and r["property"] in (SYMMETRIC, "glove.an_epoch_over_x_touches_at_most_the_windows_pairs")]
    assert len(counted) == 4, [(r["property"], r["outcome"]) for r in rows if r["property"].startswith("glove.")]
    (entry,) = data["implementations"]
    assert len(entry.get("protocol_notes", [])) == notes, entry
    if notes:
        assert "glove_cooccurrence is written before protocol version 2" in entry["protocol_notes"][0]
        assert "glove_cooccurrence is written before protocol version 2" in done.stdout


class NoDtype:
    """Co-occurrence counts without the dtype keyword (always float64)."""

    name = "no-dtype"

    def glove_cooccurrence(self, ids: list[int], vocab_size: int, window: int) -> torch.Tensor:
        return load_implementation(f"{OLD}:v1").obj.glove_cooccurrence(ids, vocab_size, window)  # float64


def test_a_change_the_harness_cannot_do_leaves_the_row_not_applicable_naming_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A (hypothetical) version 99 that added ``dtype`` with no part the harness can do."""
    monkeypatch.setattr(versions, "CHANGES", versions.CHANGES + (
        versions.Change(99, "glove_cooccurrence", "the dtype asked for", keyword="dtype"),))
    row = run_row(SYMMETRIC, NoDtype(), dtype="float32")
    assert row.outcome == "not-applicable", (row.outcome, row.message)
    assert "takes no keyword dtype, which protocol version 99 added" in row.message, row.message
    # without the change, the same code is an error: the suite passes a keyword it does not take
    monkeypatch.setattr(versions, "CHANGES", versions.CHANGES[:-1])
    row = run_row(SYMMETRIC, NoDtype(), dtype="float32")
    assert row.outcome == "error" and "does not accept the arguments" in row.message, (row.outcome, row.message)


def test_a_change_the_harness_can_do_is_done_and_a_wrong_answer_still_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "CHANGES", versions.CHANGES + (
        versions.Change(99, "glove_cooccurrence", "the dtype asked for", keyword="dtype", harness="convert"),))
    row = run_row(SYMMETRIC, NoDtype(), dtype="float32")
    assert row.outcome == "pass", (row.outcome, row.message)

    class OneSided(NoDtype):
        name = "one-sided"

        def glove_cooccurrence(self, ids: list[int], vocab_size: int, window: int) -> torch.Tensor:
            return torch.triu(super().glove_cooccurrence(ids, vocab_size, window))

    row = run_row(SYMMETRIC, OneSided(), dtype="float32")
    assert row.outcome == "fail", (row.outcome, row.message)


def test_the_harness_moves_an_earlier_versions_answer_to_the_device_under_test() -> None:
    v1, v2 = (load_implementation(f"{OLD}:{name}").obj for name in ("v1", "v2"))
    request = {"op": "call", "method": "glove_cooccurrence", "args": ([0, 1, 0], 2, 1),
               "kwargs": {"dtype": torch.float32, "device": "meta"}, "optional": {}, "names": (), "device": "meta"}
    answer = worker.call(v1, dict(request))
    assert answer["status"] == "ok", answer
    assert answer["value"].device.type == "meta" and answer["value"].dtype == torch.float32
    assert worker.call(v2, dict(request))["value"].device.type == "meta"  # it moves its answer itself


def test_the_context_makes_an_older_protocol_answer_a_not_applicable_row() -> None:
    class Answers:
        def call(self, request: dict, what: str, deadline: object) -> dict:
            return {"status": "older-protocol", "message": "f takes no keyword k, which protocol version 9 added"}

    ctx = ContextBase(Answers(), "old", "cpu", "float64")
    with pytest.raises(NotApplicable, match="protocol version 9"):
        ctx.call("glove_cooccurrence", [0], 1, 1)
