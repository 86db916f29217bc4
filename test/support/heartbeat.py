"""A line on stderr every 30 s while tests run (a 2,000-replica job, real training on the real node), so a run's
log never goes quiet for longer than that: CI and a person watching can tell slow from stuck. Counted from its own
last line, not from the last test's start: pytest's progress (a dot a test) ends its line only with the module, and
`make test`'s lanes, read by the line, showed nothing for a minute of 20-second tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

INTERVAL = 30.0


class Heartbeat:
    def __init__(self, interval: float = INTERVAL) -> None:
        # pytest captures fd 2 while a test runs; its terminal writer holds the real terminal.
        self.write: Callable[[str], None] = lambda text: None
        self._interval = interval
        self._lock = threading.Lock()
        self._test: str | None = None
        self._since = 0.0
        self._last_line = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-heartbeat", daemon=True)

    def stop(self) -> None:
        self._stop.set()

    def test_started(self, nodeid: str) -> None:
        if not self._thread.is_alive() and not self._stop.is_set():
            self._thread.start()  # on the first test: a conftest below the rootdir never sees sessionstart
        with self._lock:
            self._test, self._since = nodeid, time.monotonic()

    def test_finished(self) -> None:
        with self._lock:
            self._test = None

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            with self._lock:
                now = time.monotonic()
                if self._test is None or now - self._last_line < self._interval:
                    continue
                self._last_line = now
                line = f"[still running {self._test}: {now - self._since:.0f}s]"
            self.write(line)
