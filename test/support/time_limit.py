"""A time limit on each test's call, so a stuck test fails by its name instead of stalling the run.

A test past its limit gets every thread's stack dumped (faulthandler) into its failure, and a TimeLimitExceeded
raised where its main thread waits: pytest reports it failed and goes on with the next test and, at the end, with
the session's teardown (the local cluster's processes and host changes). The limit is its suite's (LIMITS), or its
`@pytest.mark.time_limit(seconds)`. Only the call is limited, not the fixtures' setup: the session's builds and
cluster start have timeouts of their own.

SIGALRM, as pytest-timeout's signal method does, rather than a new dependency: Python runs the handler in the main
thread, which pytest runs the test in, and interrupts the blocking calls tests make there (a sleep, a lock, a
thread's join, a socket read, a subprocess' wait).
"""

from __future__ import annotations

import contextlib
import faulthandler
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterator
from types import FrameType

import pytest

# Generous on a loaded 2-core machine, far above what each suite's tests take there. A unit test takes seconds at
# most (the docs site's build is the longest); the integration suite's longest is the 2,000-replica job; an e2e test
# runs real TensorFlow jobs through a node's loss. Tests that need more say so with the marker.
LIMITS = {"unit": 120.0, "integration": 900.0, "e2e": 1500.0}
UNMARKED = 900.0  # a test without a suite's marker (pytest run on a file outside test/)
# How long after a TimeLimitExceeded that the test swallowed (an `except Exception` in a loop) it is raised again.
AGAIN_AFTER = 30.0
MARKER = "time_limit(seconds): this test's call may take `seconds` instead of its suite's limit"


class TimeLimitExceeded(Exception):  # noqa: N818 - says what happened, as TimeoutError does
    """A test ran past its time limit."""


def limit_for(item: pytest.Item) -> float:
    marker = item.get_closest_marker("time_limit")
    if marker is not None:
        return float(marker.args[0])
    return next((limit for suite, limit in LIMITS.items() if item.get_closest_marker(suite)), UNMARKED)


def thread_stacks() -> str:
    """Every thread's Python stack, as faulthandler writes it (it writes to a file descriptor only)."""
    with tempfile.TemporaryFile("w+") as dump:
        faulthandler.dump_traceback(file=dump, all_threads=True)
        dump.seek(0)
        return dump.read()


@contextlib.contextmanager
def time_limit(seconds: float, name: str, announce: Callable[[str], None] = lambda line: None,
               again_after: float = AGAIN_AFTER) -> Iterator[None]:
    """Raises TimeLimitExceeded (with every thread's stack) in the main thread if the block runs `seconds` or more,
    and again every `again_after` seconds while it goes on; `announce` gets a line at once. Outside the main thread
    (where no signal handler runs) it limits nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(_signum: int, _frame: FrameType | None) -> None:
        announce(f"[time limit: {name} ran past {seconds:g} s; failing it, with every thread's stack]")
        raise TimeLimitExceeded(f"{name} ran past its time limit of {seconds:g} s (its suite's, or its "
                                f"time_limit marker's); every thread's stack then:\n{thread_stacks()}")

    outer, began = signal.getitimer(signal.ITIMER_REAL), time.monotonic()  # a limit this one is nested in
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds, again_after)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer[0]:  # re-armed with what is left of it (at once if nothing is)
            signal.setitimer(signal.ITIMER_REAL, max(outer[0] - (time.monotonic() - began), 0.001), outer[1])


class TimeLimitPlugin:
    """The pytest side: registered by test/conftest.py (and by the unit test, in a pytest of its own)."""

    def __init__(self, announce: Callable[[str], None] = lambda line: None) -> None:
        self.announce = announce

    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", MARKER)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        with time_limit(limit_for(item), item.nodeid, self.announce):
            return (yield)


def pytest_configure(config: pytest.Config) -> None:
    """`-p support.time_limit`: the plugin, for a pytest run without test/conftest.py."""
    config.pluginmanager.register(TimeLimitPlugin(), "tfop-time-limit")
