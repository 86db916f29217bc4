"""Expectations: which of its own writes a controller has not yet seen come back through its informers.

A worker that creates a pod and reconciles again before the watch delivers it would see the pod missing and
create it twice (or, for deletes, delete twice and count a restart twice). So before acting, a controller records
what it is about to create (by name) and delete (by uid) for a key; informer handlers mark them observed; and the
key is reconciled only once nothing is outstanding. Entries expire after `ttl` seconds so a lost watch event
cannot wedge a key forever (the informer's re-list heals the cache meanwhile).

The same holds for the key's own object: after writing it (a status update), the cached copy is stale until the
watch delivers the write, and planning from it could redo what was just recorded. `expect_newer` remembers the
resourceVersion the write replaced; the key waits until the cache holds any other version.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass
class _Pending:
    creates: set[str] = field(default_factory=set)
    deletes: set[str] = field(default_factory=set)
    stale_version: str | None = None
    since: float = 0.0


class Expectations:
    def __init__(self, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def expect_creates(self, key: str, names: Iterable[str]) -> None:
        with self._lock:
            entry = self._entry(key)
            entry.creates.update(names)

    def expect_deletes(self, key: str, uids: Iterable[str]) -> None:
        with self._lock:
            entry = self._entry(key)
            entry.deletes.update(uids)

    def expect_newer(self, key: str, stale_version: str) -> None:
        """The key's object was just written over `stale_version`; wait for the cache to move past it."""
        with self._lock:
            self._entry(key).stale_version = stale_version

    def created(self, key: str, name: str) -> None:
        """The cache now holds `name` (or its create failed for good, so it never will)."""
        with self._lock:
            entry = self._pending.get(key)
            if entry is not None:
                entry.creates.discard(name)
                self._drop_if_empty(key, entry)

    def deleted(self, key: str, uid: str) -> None:
        """The cache no longer holds `uid` (or its delete failed, so we must not wait for it)."""
        with self._lock:
            entry = self._pending.get(key)
            if entry is not None:
                entry.deletes.discard(uid)
                self._drop_if_empty(key, entry)

    def satisfied(self, key: str, cached_version: str | None = None) -> bool:
        """Nothing outstanding for `key`, whose object the cache holds at `cached_version`."""
        with self._lock:
            entry = self._pending.get(key)
            if entry is None:
                return True
            if entry.stale_version is not None and cached_version != entry.stale_version:
                entry.stale_version = None
                self._drop_if_empty(key, entry)
            if key not in self._pending:
                return True
            if self._clock() - entry.since > self._ttl:
                del self._pending[key]
                return True
            return False

    def outstanding(self, key: str) -> tuple[int, int]:
        """(creates, deletes) still unobserved: for logs and tests."""
        with self._lock:
            entry = self._pending.get(key)
            return (len(entry.creates), len(entry.deletes)) if entry else (0, 0)

    def forget(self, key: str) -> None:
        with self._lock:
            self._pending.pop(key, None)

    def _entry(self, key: str) -> _Pending:
        entry = self._pending.get(key)
        if entry is None:
            entry = self._pending[key] = _Pending()
        entry.since = self._clock()  # the TTL runs from the latest expectation, as new writes were just made
        return entry

    def _drop_if_empty(self, key: str, entry: _Pending) -> None:
        if not entry.creates and not entry.deletes and entry.stale_version is None:
            del self._pending[key]
