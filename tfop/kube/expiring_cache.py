"""A small map whose entries expire, for answers worth reusing briefly (an access review's verdict).

Callers may rely on: `get` never returns an entry older than `ttl` seconds (by the given clock); at most
`max_entries` are kept, the least recently used going first when a new one arrives; every method is thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

from tfop.kube.clock import SYSTEM_CLOCK, Clock

K = TypeVar("K")
V = TypeVar("V")


class ExpiringCache(Generic[K, V]):
    def __init__(self, ttl: float, max_entries: int, clock: Clock = SYSTEM_CLOCK) -> None:
        if ttl <= 0 or max_entries < 1:
            raise ValueError("an expiring cache needs ttl > 0 and max_entries >= 1")
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()  # key -> (expiry, value), oldest use first
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expiry, value = entry
            if self._clock.now() >= expiry:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = (self._clock.now() + self.ttl, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
