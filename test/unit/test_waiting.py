"""The test suites' waiting helpers fail when they should: a check that cannot fail proves nothing."""

from __future__ import annotations

import time

import pytest

from support.waiting import consistently, wait_for


def test_consistently_holds_for_its_duration_and_returns_the_last_value() -> None:
    calls: list[float] = []

    def check() -> int:
        calls.append(time.monotonic())
        return len(calls)

    began = time.monotonic()
    assert consistently(check, 0.3, interval=0.05) == len(calls)
    assert time.monotonic() - began >= 0.3  # returned no sooner than its duration (a lower bound: sleeps overrun)


def test_consistently_fails_at_the_first_violation() -> None:
    answers = iter([True, True, False, True])
    with pytest.raises(AssertionError, match=r"the pod kept its uid stopped holding; value: False"):
        consistently(lambda: next(answers), 5.0, "the pod kept its uid", interval=0.01)


def test_wait_for_fails_with_the_last_value_after_its_timeout() -> None:
    with pytest.raises(AssertionError, match=r"timed out after 0.1s waiting for never; last value: 0"):
        wait_for(lambda: 0, 0.1, "never", interval=0.02)


def test_wait_for_says_what_explain_tells_of_the_state_when_it_times_out() -> None:
    looks: list[str] = []

    def explain() -> str:
        looks.append("looked")
        return "worker-3 Pending: 0/2 nodes are available: 2 Insufficient cpu"

    with pytest.raises(AssertionError, match=r"last value: False; worker-3 Pending: 0/2 nodes are available"):
        wait_for(lambda: False, 0.1, "never", interval=0.02, explain=explain)
    assert looks == ["looked"]  # asked once, at the timeout, never while polling


def test_wait_for_does_not_ask_explain_when_the_check_holds() -> None:
    assert wait_for(lambda: "done", 0.1, "now", explain=lambda: pytest.fail("explained a wait that held")) == "done"
