"""Misbehaving implementations end in one clear row per claim, and the run completes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from specformer.context import LocalBackend, WorkerBackend
from specformer.property import Property, load_properties
from specformer.protocol import provided_operations
from specformer.report.model import REPORT_SCHEMA
from specformer.runner.row import RowResult, run_property
from specformer.runner.supervisor import WorkerPool

HOSTILE = Path(__file__).resolve().parent / "hostile_impls.py"

FORMULA = "attention.output_matches_the_formula"
WEIGHTS_SUM = "attention.rows_of_the_weights_sum_to_one"


def slide_property() -> Property:
    """The slide's numeric example: one explicit example first, so a broken implementation fails at once.

    The random-input properties shrink every failure (seconds per row); this one keeps the
    misbehaviour tests fast. :data:`FORMULA` is used where shrinking is part of the point.
    """
    return next(p for p in load_properties().values() if p.claim == "attention.slide-example" and p.expect == "hold")


def run(impl: Any, qualname: str | None = None, *, dtype: str = "float64", device: str = "cpu",
        timeout_s: float | None = 60.0, prop: Property | None = None) -> RowResult:
    """One row with ``impl`` in this process (the worker's copies and codec, not its process)."""
    prop = prop or (load_properties()[qualname] if qualname else slide_property())
    name = getattr(impl, "name", "math") if impl is not None else "math"
    backend = LocalBackend(impl) if impl is not None else None
    operations = provided_operations(impl) if impl is not None else None
    return run_property(prop, backend, name, f"user_impl.py:{name}", device, dtype, "ci", timeout_s, operations)


def run_in_worker(class_name: str, qualname: str | None = None, *, timeout_s: float = 60.0,
                  prop: Property | None = None) -> RowResult:
    """One row with a class of ``hostile_impls.py`` in a real worker process."""
    prop = prop or (load_properties()[qualname] if qualname else slide_property())
    pool = WorkerPool()
    spec = f"{HOSTILE}:{class_name}"
    try:
        answer = pool.load(spec, 60)
        assert answer["status"] == "loaded", answer
        return run_property(prop, WorkerBackend(pool, spec), answer["name"], spec, "cpu", "float64", "ci", timeout_s,
                            frozenset(answer["operations"]))
    finally:
        pool.close()


def output_shape(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[int, ...]:
    return (*q.shape[:-1], v.shape[-1])


class Raises:
    name = "raises-boom"

    def attention(self, q, k, v, mask=None, *, causal=False):
        raise RuntimeError("boom")


class ReturnsNaN:
    name = "returns-nan"

    def attention(self, q, k, v, mask=None, *, causal=False):
        return torch.full(output_shape(q, k, v), float("nan"), dtype=q.dtype), None


class WrongShape:
    name = "wrong-shape"

    def attention(self, q, k, v, mask=None, *, causal=False):
        return torch.zeros(3, 7, dtype=q.dtype), None


class WrongWeightsShape:
    name = "wrong-weights-shape"

    def attention(self, q, k, v, mask=None, *, causal=False):
        return torch.zeros(output_shape(q, k, v), dtype=q.dtype), torch.zeros(2, 9, dtype=q.dtype)


class WrongDtype:
    name = "wrong-dtype"

    def attention(self, q, k, v, mask=None, *, causal=False):
        return torch.zeros(output_shape(q, k, v), dtype=torch.float16), None


class WrongDevice:
    name = "wrong-device"

    def attention(self, q, k, v, mask=None, *, causal=False):
        return torch.empty(output_shape(q, k, v), dtype=q.dtype, device="meta"), None


class ReturnsLists:
    name = "returns-lists"

    def attention(self, q, k, v, mask=None, *, causal=False):
        return torch.zeros(output_shape(q, k, v), dtype=q.dtype).tolist(), None


class ReturnsAList:
    name = "returns-a-list"

    def attention(self, q, k, v, mask=None, *, causal=False):
        return [torch.zeros(output_shape(q, k, v), dtype=q.dtype), None]


class ScoresOnly:
    name = "scores-only"

    def score(self, kind, q, k, **params):
        return q @ k.transpose(-2, -1)


class NeverInDomain:
    name = "never-in-domain"

    def attention(self, q, k, v, mask=None, *, causal=False):
        from specformer.protocol import NotApplicable

        raise NotApplicable("never-in-domain only takes t_q = 1000")


class Asserts:
    name = "asserts"

    def attention(self, q, k, v, mask=None, *, causal=False):
        assert q.shape[-2] > 1000, "internal shape check"


# -- one clear row per misbehaviour -------------------------------------------------------


def test_an_implementation_that_raises_is_an_error_naming_it_and_the_exception() -> None:
    row = run(Raises(), FORMULA)  # random inputs: the error survives shrinking
    assert row.outcome == "error" and not row.as_expected
    assert "boom" in row.message and "raises-boom" in row.message and "RuntimeError" in row.message
    assert row.counterexample, "the failing example should be reported"
    assert row.examples_checked >= 1
    assert "--impl user_impl.py:raises-boom" in row.reproduce and f"--property {FORMULA}" in row.reproduce


def test_nan_outputs_fail_with_a_message_naming_nan() -> None:
    row = run(ReturnsNaN())
    assert row.outcome in ("fail", "error") and not row.as_expected
    assert "NaN" in row.message


def test_a_wrong_output_shape_is_an_error_naming_the_shape() -> None:
    row = run(WrongShape())
    assert row.outcome == "error"
    assert "shape (3, 7)" in row.message and "output" in row.message


def test_a_wrong_weights_shape_is_an_error_naming_the_weights() -> None:
    row = run(WrongWeightsShape())
    assert row.outcome == "error"
    assert "weights" in row.message and "(2, 9)" in row.message


def test_a_wrong_dtype_is_an_error_naming_both_dtypes() -> None:
    row = run(WrongDtype())
    assert row.outcome == "error"
    assert "dtype" in row.message and "torch.float16" in row.message and "torch.float64" in row.message


def test_a_result_on_the_wrong_device_is_an_error() -> None:
    row = run(WrongDevice())
    assert row.outcome == "error" and "meta" in row.message


@pytest.mark.parametrize("class_name, name", [("Spins", "spins"), ("BlocksTheAlarm", "blocks-alarm")],
                         ids=["busy-loop", "alarm-blocked"])
def test_a_hang_is_cut_by_the_row_time_limit(class_name: str, name: str) -> None:
    row = run_in_worker(class_name, FORMULA, timeout_s=1)
    assert row.outcome == "error"
    assert "did not answer in time" in row.message and name in row.message
    # what the time went on, the limit and the flag that changes it
    assert "attention: a call still running after" in row.message, row.message
    assert "The row's limit is 1 s" in row.message and "--row-timeout SECONDS" in row.message, row.message
    # The implementation never returns: any finite duration shows the limit cut it. The bound
    # is loose because a loaded machine slows the kill and the worker's restart, not the limit.
    assert row.duration_s < 30, f"the row took {row.duration_s:.1f} s despite a 1 s limit"


def test_a_crash_ends_the_row_at_once_and_the_next_row_gets_a_fresh_worker() -> None:
    pool = WorkerPool()
    spec = f"{HOSTILE}:Segfaults"
    try:
        prop = slide_property()
        answer = pool.load(spec, 60)
        rows = [run_property(prop, WorkerBackend(pool, spec), "segfaults", spec, "cpu", "float64", "ci", 30,
                             frozenset(answer["operations"])) for _ in range(2)]
    finally:
        pool.close()
    assert [r.outcome for r in rows] == ["error", "error"]
    assert all("SIGSEGV" in r.message for r in rows), [r.message for r in rows]
    assert pool.starts == 2


def test_showing_the_weights_on_a_few_examples_only_is_inconclusive() -> None:
    from hostile_impls import WeightsThreeTimes

    row = run(WeightsThreeTimes(), WEIGHTS_SUM, timeout_s=120)
    assert row.outcome == "inconclusive" and not row.as_expected, (row.outcome, row.message)
    # the property asks for the weights once per example and the implementation shows them on three calls,
    # whatever Hypothesis draws: three examples are checked, fewer than the ci profile's minimum
    assert row.examples_checked == WeightsThreeTimes.shown < row.min_checked == 10
    assert row.examples_out_of_domain > 0 and "does not expose attention weights" in row.message


def test_refusing_most_examples_without_a_declaration_is_an_error() -> None:
    """No declaration declares everything: the first refusal is a failure to answer, not an exemption."""
    from hostile_impls import InDomainThreeTimes

    row = run(InDomainThreeTimes(), FORMULA, timeout_s=120)
    assert row.outcome == "error" and not row.as_expected, (row.outcome, row.message)
    assert "refused an example inside its declared domain" in row.message and "three examples" in row.message


def test_a_row_of_refusals_ends_at_the_first_one_as_an_error() -> None:
    from specformer.protocol import NotApplicable

    class NeverInDomain:
        name = "never-in-domain"

        def attention(self, q, k, v, mask=None, *, causal=False):
            raise NotApplicable("takes nothing")

    row = run(NeverInDomain(), FORMULA, timeout_s=120)
    assert row.outcome == "error" and not row.as_expected, (row.outcome, row.message)
    assert "takes nothing" in row.message and "declare the restriction" in row.message
    assert row.examples_generated < 20  # the first refusal and its shrinking, not the ~100 refusals of before


@pytest.mark.parametrize("impl, fragment", [(ReturnsLists(), "list"), (ReturnsAList(), "list")],
                         ids=["list-output", "list-instead-of-tuple"])
def test_plain_lists_instead_of_tensors_are_an_error(impl: Any, fragment: str) -> None:
    row = run(impl)
    assert row.outcome == "error" and fragment in row.message


def test_a_missing_operation_is_not_applicable() -> None:
    row = run(ScoresOnly(), FORMULA)
    assert row.outcome == "not-applicable" and row.as_expected
    assert "attention" in row.message and "scores-only" in row.message
    assert row.examples_generated == 0


def test_a_refusal_is_an_error_with_the_reason() -> None:
    row = run(NeverInDomain())
    assert row.outcome == "error"
    assert "t_q = 1000" in row.message


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_an_absent_device_is_skipped() -> None:
    row = run(Raises(), device="cuda", dtype="float32")
    assert row.outcome == "skipped" and row.as_expected
    assert "cuda" in row.message and row.examples_generated == 0


def test_an_assertion_inside_the_implementation_is_an_error_not_a_refutation() -> None:
    refutation = next(p for p in load_properties().values()
                      if p.expect == "counterexample" and p.needs == ("attention",))
    row = run(Asserts(), prop=refutation)
    assert row.outcome == "error", f"{refutation.qualname}: {row.outcome}: {row.message}"
    assert "internal shape check" in row.message


class Exits:
    name = "exits"

    def attention(self, q, k, v, mask=None, *, causal=False):
        raise SystemExit(3)


def test_an_implementation_that_exits_is_an_error_row() -> None:
    try:
        row = run(Exits())
    except SystemExit:
        pytest.fail("SystemExit escaped run_property")
    assert row.outcome == "error" and "SystemExit" in row.message


def test_the_runner_restores_the_property_and_the_alarm() -> None:
    prop = slide_property()
    inner, settings = prop.function.hypothesis.inner_test, prop.function._hypothesis_internal_use_settings
    handler = signal.getsignal(signal.SIGALRM)
    run_in_worker("Spins", prop=prop, timeout_s=0.5)
    run(Raises(), prop=prop, timeout_s=30)
    run(None, prop=fake_property(never_breaks), timeout_s=30)
    assert prop.function.hypothesis.inner_test is inner
    assert prop.function._hypothesis_internal_use_settings is settings
    assert signal.getsignal(signal.SIGALRM) is handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


# -- properties that misbehave themselves ----------------------------------------------


def fake_property(function: Any, expect: str = "hold", needs: tuple[str, ...] = ()) -> Property:
    """A property object that is not registered (so the catalogue stays untouched)."""
    return Property(claim="attention.scaled-dot-product", function=function, expect=expect, needs=needs,
                    dtypes=None, max_examples=None, module="fake", name=function.__name__)


@given(x=st.integers(0, 10))
def never_breaks(ctx, x):
    assert x >= 0


@given(x=st.integers(0, 10))
def breaks_at_seven(ctx, x):
    assert x != 7, "seven"


@given(x=st.integers(0, 10))
def has_a_bug(ctx, x):
    return {}["missing key"]


@given(x=st.integers(0, 10))
def rejects_everything(ctx, x):
    assume(False)


def test_a_counterexample_property_that_finds_none_fails() -> None:
    row = run(None, prop=fake_property(never_breaks, "counterexample"))
    assert row.outcome == "fail" and "no counterexample" in row.message and row.examples_checked >= 1


def test_a_counterexample_property_that_finds_one_is_refuted_and_keeps_it() -> None:
    row = run(None, prop=fake_property(breaks_at_seven, "counterexample"))
    assert row.outcome == "refuted" and row.as_expected and row.message.startswith("seven")
    assert row.counterexample and "x=7" in row.counterexample


def test_a_hold_property_that_breaks_fails() -> None:
    row = run(None, prop=fake_property(breaks_at_seven))
    assert row.outcome == "fail" and "x=7" in (row.counterexample or "")


def test_a_bug_in_a_property_is_an_error_row() -> None:
    row = run(None, prop=fake_property(has_a_bug))
    assert row.outcome == "error" and "KeyError" in row.message and "missing key" in row.message


def test_a_property_with_no_valid_example_is_an_error() -> None:
    row = run(None, prop=fake_property(rejects_everything))
    assert row.outcome == "error" and "no valid example" in row.message


# -- end to end: a broken user file through pytest -------------------------------------

BROKEN_USER_FILE = textwrap.dedent(
    """
    class Broken:
        name = "broken-user"

        def attention(self, q, k, v, mask=None, *, causal=False):
            raise RuntimeError("the user's kernel exploded")

    implementation = Broken()
    """
)


def test_a_broken_user_file_yields_a_complete_report_of_errors(tmp_path: Path) -> None:
    # The slide's example fails on its explicit example, without shrinking: two rows in a
    # second instead of several seconds each (the plugin path is the same for any claim).
    impl = tmp_path / "broken_impl.py"
    impl.write_text(BROKEN_USER_FILE, encoding="utf-8")
    report_path = tmp_path / "r.json"
    command = [sys.executable, "-m", "pytest", "--pyargs", "specformer.properties", "-p", "no:cacheprovider",
               "-c", "/dev/null", "--rootdir", str(tmp_path), "--impl", str(impl),
               "--claims", "attention.slide-example", "--report", str(report_path), "-q"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert report_path.exists(), output
    report = json.loads(report_path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(report)
    rows = report["rows"]
    assert rows, output
    assert {r["claim"] for r in rows} == {"attention.slide-example"}
    assert {r["dtype"] for r in rows} == {"float32", "float64"}
    for r in rows:
        assert r["implementation"] == "broken-user"
        assert r["outcome"] == "error" and r["as_expected"] is False
        assert "the user's kernel exploded" in r["message"]
        assert r["reproduce"].startswith("specformer run") and f"--impl {impl}" in r["reproduce"]
        assert f"--property {r['property']}" in r["reproduce"] and f"--dtype {r['dtype']}" in r["reproduce"]
    summary = report["summary"]
    assert summary["complete"] is True and summary["ok"] is False
    assert summary["rows"] == len(rows) and summary["by_outcome"] == {"error": len(rows)}
    assert "the user's kernel exploded" in output and "reproduce: specformer run" in output


def test_a_message_with_a_lone_surrogate_is_reported_not_a_crash(tmp_path: Path) -> None:
    # Text properties hand implementations lone surrogates; what comes back (an exception
    # message, a token) may hold one, which UTF-8 cannot encode as it stands.
    impl = tmp_path / "surrogate_impl.py"
    impl.write_text(BROKEN_USER_FILE.replace('"the user\'s kernel exploded"', '"bad text a\\ud800b"'),
                    encoding="utf-8")
    report_path = tmp_path / "r.json"
    command = [sys.executable, "-m", "pytest", "--pyargs", "specformer.properties", "-p", "no:cacheprovider",
               "-c", "/dev/null", "--rootdir", str(tmp_path), "--impl", str(impl),
               "--claims", "attention.slide-example", "--report", str(report_path), "-q"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "INTERNALERROR" not in output, output
    report = json.loads(report_path.read_text(encoding="utf-8"))  # valid UTF-8 and JSON
    messages = [r["message"] for r in report["rows"]]
    assert messages and all("bad text a\\ud800b" in m for m in messages), messages  # escaped, not lost
    assert report["summary"]["complete"] is True


def _mutating(op: str, spoil: Any) -> Any:
    """The reference, with ``op`` answering correctly and then spoiling its first argument in place."""
    from mutants import Mutant

    from specformer.adapters.reference import implementation as reference

    correct = getattr(reference, op)

    def method(first, *args, **kwargs):
        answer = correct(first, *args, **kwargs)
        spoil(first)
        return answer

    return Mutant(f"spoils-{op}", **{op: method})


@pytest.mark.parametrize(("op", "spoil", "named"), [
    ("skipgram_pairs", lambda ids: ids.reverse(), "ids"),
    ("cbow_examples", lambda ids: ids.append(0), "ids"),
    ("glove_cooccurrence", lambda ids: ids.clear(), "ids"),
    ("unigram_em_step", lambda words: words.update({"spoiled": 1}), "words"),
    ("unigram_prune", lambda words: words.popitem(), "words"),
], ids=["skipgram-reverse", "cbow-append", "glove-clear", "em-step-add", "prune-pop"])
def test_a_list_or_dict_modified_in_place_is_an_error_naming_it(op: str, spoil: Any, named: str) -> None:
    """The non-tensor inputs (token ids, word counts) are checked after the call as tensors are."""
    props = sorted((p for p in load_properties().values() if op in p.needs), key=lambda p: len(p.needs))
    assert props, f"no property needs {op}"
    row = run(_mutating(op, spoil), props[0].qualname, timeout_s=120)
    assert row.outcome == "error" and not row.as_expected, (row.outcome, row.message)
    assert f"modified its input {named} in place" in row.message, row.message


def test_an_input_left_as_it_was_is_no_error() -> None:
    """The reference reads its lists and dicts without changing them: the same rows pass."""
    from specformer.adapters.reference import implementation as reference

    for op in ("skipgram_pairs", "unigram_em_step"):
        prop = min((p for p in load_properties().values() if op in p.needs), key=lambda p: len(p.needs))
        row = run(reference, prop.qualname, timeout_s=120)
        assert row.outcome in ("pass", "refuted") and row.as_expected, (op, row.outcome, row.message)


class SlowButCorrect:
    """Correct attention that takes 0.3 s per call: a row of many examples runs out of a 1 s limit."""

    name = "slow-but-correct"

    def attention(self, q, k, v, mask=None, *, causal=False):
        import time

        from hostile_impls import correct_attention

        time.sleep(0.3)
        return correct_attention(q, k, v, mask, causal)


def test_a_slow_implementations_timeout_names_its_calls_the_limit_and_the_flag() -> None:
    row = run(SlowButCorrect(), FORMULA, timeout_s=1)
    assert row.outcome == "error", row
    assert "attention: " in row.message and "calls, 0.3" in row.message, row.message
    assert "The row's limit is 1 s" in row.message and "--row-timeout SECONDS" in row.message, row.message


DETERMINISM = "bpe.training_the_same_counts_again_gives_the_same_merges"


def test_a_tie_broken_by_hash_order_fails_determinism_across_processes() -> None:
    """Two calls in one worker agree; a worker forked from the fork server of another PYTHONHASHSEED
    iterates the tied pairs in another order, and the property compares the two."""
    row = run_in_worker("TiesByHashOrder", DETERMINISM)
    assert row.outcome == "fail", (row.outcome, row.message)
    assert "another process" in row.message, row.message


def test_the_reference_is_deterministic_across_processes() -> None:
    pool = WorkerPool()
    try:
        answer = pool.load("reference", 60)
        row = run_property(load_properties()[DETERMINISM], WorkerBackend(pool, "reference"), "reference", "reference",
                           "cpu", "float64", "ci", 120.0, frozenset(answer["operations"]))
    finally:
        pool.close()
    assert row.outcome == "pass", row.message
