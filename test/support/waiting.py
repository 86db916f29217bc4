"""Waiting for what a test can observe, with a deadline, instead of sleeping for a guess."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Check(Protocol[T_co]):
    """What wait_for polls: called with no arguments, it answers a value, or None or False while there is none yet.
    A protocol rather than Callable[[], ...]: mypy cannot infer a lambda with default arguments against a Callable
    (python/mypy#15459), and a wait in a loop binds the loop's variables so (`lambda n=name: ...`)."""

    def __call__(self) -> T_co | Literal[False] | None: ...


# How often wait_for polls unless told.
DEFAULT_INTERVAL = 0.1
# How long a wait gives one ordinary step of the control plane (a pod created, scheduled and run by kwok, a status
# written, an informer caught up) before the test fails. A deadline bounds a failing test, never a passing one's
# speed, so it is generous: under a CI machine's load a step that takes two seconds on an idle one took over a
# minute (a kwok pod seen Running 60 s after its job was created). Waits on TensorFlow or real nodes choose longer.
DEADLINE = 180.0
# A check through kubectl costs about 45 ms of CPU, so the e2e modules, whose checks mostly are and whose TensorFlow
# jobs need the machine's two cores, pass this: once a second. A module's own choice, never a global one sets for all.
KUBECTL_INTERVAL = 1.0


def wait_for(check: Check[T], timeout: float = DEADLINE, message: str = "condition",
             interval: float = DEFAULT_INTERVAL, explain: Callable[[], str] | None = None) -> T:
    """Poll `check` every `interval` seconds until it returns something truthy, and return that; fail with
    `message` and the last value seen after `timeout` seconds, then what `explain` says of the state then: a
    check that answers False says nothing of why, and CI shows little more than the failure's first line."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value:
        if time.monotonic() > deadline:
            why = f"; {explain()}" if explain is not None else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {message}; last value: {value!r}{why}")
        time.sleep(interval)
        value = check()
    return value


def wait_for_count(fetch: Callable[[], Any], count: int, timeout: float = DEADLINE, message: str = "") -> Any:
    """Poll `fetch` until what it returns has exactly `count` entries; returns that value."""
    seen: list[Any] = []

    def check() -> bool:
        seen[:] = [fetch()]
        return len(seen[0]) == count

    wait_for(lambda: check() or None, timeout, f"{count} {message}".strip())
    return seen[0]


def consistently(check: Callable[[], T], duration: float, message: str = "condition",
                 interval: float = 0.2) -> T:
    """Poll `check` for `duration` seconds and fail at the first falsy answer, with `message` and that value: the
    negative check (something must NOT happen) that a fixed sleep followed by one look only pretends to make."""
    deadline = time.monotonic() + duration
    value = check()
    while True:
        if not value:
            raise AssertionError(f"{message} stopped holding; value: {value!r}")
        if time.monotonic() >= deadline:
            return value
        time.sleep(interval)
        value = check()
