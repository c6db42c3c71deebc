"""Rows that used to end in Hypothesis' words (``FlakyFailure``) or in a wrong guess ("the
implementation hangs" for a row that calls no implementation) now say what happened."""

from __future__ import annotations

import itertools
import time

from hypothesis import given
from hypothesis import strategies as st

from test_robustness import fake_property, run, run_in_worker

FORMULA = "attention.output_matches_the_formula"


def test_an_implementation_that_refuses_at_random_is_named_not_flaky() -> None:
    """The row fails on the wrong answer and says why the example did not reproduce, naming the implementation.

    Which of the runner's two reasons (``_flaky_message``) it gives depends on what Hypothesis hands back
    from the replay (the replay's own exception, or none): the refusal of the replay, quoted, or the same
    example answered differently. Either is a reason, never a bare "flaky".
    """
    row = run_in_worker("WrongAndRefusesAtRandom", FORMULA)
    assert row.outcome == "fail", row.message
    assert "Flaky" not in row.message and "out of tolerance" in row.message, row.message
    assert "wrong-and-refuses-at-random" in row.message, row.message
    refused = ("not reproducible: when the example was run again: wrong-and-refuses-at-random.attention refused an "
               "example inside its declared domain (raised NotApplicable: not today)")
    answered = ("not reproducible: wrong-and-refuses-at-random answered the same example differently when it was "
                "run again")
    assert refused in row.message or answered in row.message, row.message


def test_an_oversized_answer_says_so() -> None:
    row = run_in_worker("AnswersTooMuch")
    assert row.outcome == "error", row.message
    assert "larger than the 256 MiB an answer may have" in row.message and "killed" in row.message, row.message


@given(x=st.integers(0, 10))
def sleeps(ctx, x):
    time.sleep(0.5)


def test_a_property_that_calls_no_implementation_and_runs_too_long_says_so() -> None:
    row = run(None, prop=fake_property(sleeps), timeout_s=1.0)
    assert row.outcome == "error" and row.implementation == "math", row
    assert "the property itself ran past the time limit" in row.message, row.message
    assert "implementation hangs" not in row.message


_COUNTER = itertools.count()


@given(x=st.integers(0, 10))
def fails_only_the_first_time(ctx, x):
    assert next(_COUNTER) != 0, "the first call fails, no other"


def test_a_property_that_is_not_deterministic_says_so() -> None:
    row = run(None, prop=fake_property(fails_only_the_first_time))
    assert row.outcome == "error", row
    assert "the property is not deterministic" in row.message and "Flaky" not in row.message.split("(")[0], \
        row.message


def test_a_worker_that_closes_its_channel_and_lives_on_is_ended_at_once() -> None:
    start = time.perf_counter()
    row = run_in_worker("ClosesItsChannel", timeout_s=60)
    assert row.outcome == "error", row.message
    assert time.perf_counter() - start < 10, "the checker waited on a worker that no longer answers"
