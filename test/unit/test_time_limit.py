"""The per-test time limit (test/support/time_limit.py) fails a stuck test by its name, with every thread's stack,
and lets the run go on. Each stuck block here waits for an event nobody sets, so only the limit can end it: the
tests assert what happened, never how soon."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from support.time_limit import AGAIN_AFTER, LIMITS, TimeLimitExceeded, time_limit

TEST_DIR = Path(__file__).resolve().parents[1]


def blocked_for_ever_in_a_recognisable_frame() -> None:
    threading.Event().wait()


def test_a_block_past_its_limit_fails_naming_it_with_every_threads_stack() -> None:
    announced: list[str] = []
    bystander_stop = threading.Event()
    bystander = threading.Thread(target=bystander_stop.wait, name="bystander", daemon=True)
    bystander.start()
    try:
        with pytest.raises(TimeLimitExceeded) as failed, time_limit(0.05, "test_stuck", announced.append):
            blocked_for_ever_in_a_recognisable_frame()
    finally:
        bystander_stop.set()
    message = str(failed.value)
    assert message.startswith("test_stuck ran past its time limit of 0.05 s"), message
    assert "blocked_for_ever_in_a_recognisable_frame" in message  # the main thread's stack...
    assert message.count("Thread 0x") >= 2  # ...and the other threads' (faulthandler's headers), the bystander's too
    assert announced == ["[time limit: test_stuck ran past 0.05 s; failing it, with every thread's stack]"]


def test_a_block_within_its_limit_runs_untouched_and_the_timer_and_handler_are_restored() -> None:
    """Restored as they were: none, or the limit of the test this runs in (re-armed, its interval kept)."""
    before, outer = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)
    with time_limit(3600, "quick"):
        assert signal.getitimer(signal.ITIMER_REAL)[1] == AGAIN_AFTER
        result = sum(range(10))
    assert result == 45
    after = signal.getitimer(signal.ITIMER_REAL)
    assert (after[0] > 0, after[1]) == (outer[0] > 0, outer[1])
    assert signal.getsignal(signal.SIGALRM) is before


def test_a_test_that_swallows_the_failure_gets_it_again() -> None:
    swallowed: list[TimeLimitExceeded] = []

    def stubborn() -> None:
        with time_limit(0.05, "stubborn", again_after=0.05):
            try:
                blocked_for_ever_in_a_recognisable_frame()
            except TimeLimitExceeded as first:  # as a retry loop's `except Exception` would
                swallowed.append(first)
            blocked_for_ever_in_a_recognisable_frame()

    with pytest.raises(TimeLimitExceeded, match="stubborn ran past its time limit"):
        stubborn()
    assert len(swallowed) == 1


def test_outside_the_main_thread_it_limits_nothing() -> None:
    """No signal handler can be set there (signal.signal raises ValueError), and this test's own limit is left be."""
    outer = signal.getitimer(signal.ITIMER_REAL)
    ran: list[tuple[float, float]] = []
    errors: list[BaseException] = []

    def elsewhere() -> None:
        try:
            with time_limit(0.01, "elsewhere"):
                ran.append(signal.getitimer(signal.ITIMER_REAL))
        except BaseException as error:  # noqa: BLE001 - shown by the assertion below
            errors.append(error)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert errors == [] and len(ran) == 1
    assert ran[0][1] == outer[1]  # the interval of the timer this test runs under (none, or its own limit's)


def test_every_suite_has_a_limit() -> None:
    assert set(LIMITS) == {"unit", "integration", "e2e"}
    assert LIMITS["unit"] < LIMITS["integration"] <= LIMITS["e2e"]


INNER = '''
import threading

import pytest


@pytest.mark.time_limit(0.5)
def test_stuck() -> None:
    threading.Event().wait()


def test_after_it() -> None:
    pass
'''


def test_pytest_fails_the_stuck_test_by_name_and_runs_the_rest(tmp_path: Path) -> None:
    """A pytest of its own, with only the plugin (no cluster): the stuck test fails, the next one passes."""
    (tmp_path / "test_inner.py").write_text(INNER)
    inner = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "support.time_limit", "-p", "no:cacheprovider", "--strict-markers",
         "-q", "test_inner.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
        env={"PYTHONPATH": str(TEST_DIR), "PATH": "/usr/bin:/bin"})
    output = inner.stdout + inner.stderr
    assert inner.returncode == 1, output
    assert "1 failed, 1 passed" in output, output
    assert "FAILED test_inner.py::test_stuck" in output, output
    assert "TimeLimitExceeded: test_inner.py::test_stuck ran past its time limit of 0.5 s" in output, output
    assert 'File "' in output and "in test_stuck" in output, output  # the stack dump, in the failure's report
