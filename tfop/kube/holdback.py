"""Holding back a key's minor writes for a short window, so that several become one.

A controller that writes an object's status on every change of its children writes it once per child event, and
most of those writes only move counts the next write moves again. A write that only says such things may wait:
the first one held opens a window for its key, later ones inside it wait too, and once the window has passed the
newest state is written, once. A write that matters (a state change) goes out at once and closes the window, so
holding back never delays one.

The controller keeps nothing of the held state itself: it plans again when the window ends (or earlier, on the
next event) from what its cache holds then, level-triggered as always.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, TypeVar

from tfop.kube.clock import SYSTEM_CLOCK, Clock

K = TypeVar("K", bound=Hashable)


class HoldBack(Generic[K]):
    """Per key, when the window opened by its first held write ends."""

    def __init__(self, window: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self.window = window
        self._clock = clock
        self._ends: dict[K, float] = {}
        self._lock = threading.Lock()

    def remaining(self, key: K) -> float:
        """Seconds `key`'s held write may still wait, opening its window if none is open; 0.0 once it ended."""
        now = self._clock.now()
        with self._lock:
            ends = self._ends.setdefault(key, now + self.window)
        return max(0.0, ends - now)

    def close(self, key: K) -> None:
        """`key` was written (or forgotten): the next held write opens a new window."""
        with self._lock:
            self._ends.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._ends)
