"""Time as a dependency: machinery reads and waits on a Clock so tests can drive time instead of sleeping."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Monotonic time for deadlines and rates, wall time for timestamps users read, and a timed wait."""

    def now(self) -> float:
        """Monotonic seconds; only differences mean anything."""
        ...

    def wall(self) -> float:
        """Seconds since the Unix epoch."""
        ...

    def wait_until(self, condition: threading.Condition, deadline: float | None) -> None:
        """Wait on `condition` (held by the caller) until notified or this clock reaches `deadline` (a `now()`
        value; None waits for a notification only).

        May return early (spurious wakeup), so callers re-check their predicate and deadline in a loop. An
        absolute deadline, not a timeout, so time passing between the caller's check and the wait is not lost.
        """
        ...


class SystemClock:
    """The real clocks of the process."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def wait_until(self, condition: threading.Condition, deadline: float | None) -> None:
        condition.wait(None if deadline is None else max(deadline - time.monotonic(), 0.0))


SYSTEM_CLOCK = SystemClock()


class FakeClock:
    """A clock that moves only when a test calls `step`.

    `step` wakes every thread waiting on this clock (a spurious wakeup for those not yet due, which they must
    tolerate anyway) and returns only once each of them has woken up, re-taken its condition's lock and let go
    of it again, i.e. has done whatever the new time made due. No test needs to sleep.
    """

    def __init__(self, start: float = 1000.0, wall_start: float = 1_700_000_000.0) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a waiter registered or left
        self._now = start
        self._wall_offset = wall_start - start
        self._waiters: dict[int, threading.Condition] = {}
        self._tokens = itertools.count()

    def now(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> float:
        with self._lock:
            return self._now + self._wall_offset

    def wait_until(self, condition: threading.Condition, deadline: float | None) -> None:
        # The caller holds `condition` and `step` must take it to notify, so a step cannot slip in between
        # registering here and the real wait below: no wakeup is lost.
        with self._lock:
            if deadline is not None and deadline <= self._now:
                return
            token = next(self._tokens)
            self._waiters[token] = condition
            self._changed.notify_all()
        try:
            condition.wait()
        finally:
            with self._lock:
                del self._waiters[token]
                self._changed.notify_all()

    def step(self, seconds: float, settle_timeout: float = 10.0) -> None:
        """Advance time by `seconds`, wake every waiter and wait (real time, bounded) until all have woken."""
        if seconds < 0:
            raise ValueError("a monotonic clock cannot go back")
        with self._lock:
            self._now += seconds
            woken = dict(self._waiters)
        for condition in set(woken.values()):
            with condition:
                condition.notify_all()
        # A woken waiter leaves while holding its condition's lock and keeps it until it waits again, so once
        # it has left, anyone taking that lock sees the work the new time made due.
        with self._lock:
            if not self._changed.wait_for(lambda: woken.keys().isdisjoint(self._waiters), settle_timeout):
                raise RuntimeError(f"a waiter did not wake within {settle_timeout}s of real time")

    def waiters(self) -> int:
        """How many threads are blocked on this clock now."""
        with self._lock:
            return len(self._waiters)

    def wait_for_waiters(self, count: int, timeout: float = 10.0) -> bool:
        """Block (real time, bounded) until at least `count` threads wait on this clock, so a test knows the
        threads it started have reached their blocking point."""
        with self._lock:
            return self._changed.wait_for(lambda: len(self._waiters) >= count, timeout)
