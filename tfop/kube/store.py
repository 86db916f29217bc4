"""A thread-safe cache of API objects keyed `namespace/name`, with named secondary indexes.

Objects handed out are the cached dicts themselves, not copies: copying every read would cost more than the
cache saves. Readers must treat them as read-only and deep-copy before changing anything.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from tfop.objects import Object

IndexFunc = Callable[[Object], Iterable[str]]
"""Maps an object to the index values it is filed under (none, one or several)."""


def object_key(obj: Object) -> str:
    """`namespace/name`, or just `name` for a cluster-scoped object."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


def by_namespace(obj: Object) -> list[str]:
    namespace = obj["metadata"].get("namespace")
    return [namespace] if namespace else []


def by_controller_uid(obj: Object) -> list[str]:
    """The uid of the object's controlling owner, so a controller finds its children in one lookup."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return [str(ref["uid"])]
    return []


def by_label(label: str) -> IndexFunc:
    """An index function filing objects under the value of one label."""
    def index(obj: Object) -> list[str]:
        value = (obj["metadata"].get("labels") or {}).get(label)
        return [] if value is None else [value]
    return index


@dataclass(frozen=True)
class Change:
    """One difference found by `Store.replace`: what a handler would have seen as a watch event."""

    type: Literal["add", "update", "delete"]
    obj: Object  # the new state; for a delete, the last state the store knew
    old: Object | None = None  # the previous state of an update


class Store:
    """Objects by key plus, for each named index, value -> set of keys, kept right through every change."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, Object] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        # value -> keys, each set of keys a dict of None: a third of a set's size at the few keys most values have
        self._indices: dict[str, dict[str, dict[str, None]]] = {name: {} for name in self._indexers}

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add more indexes; existing objects are filed into them at once."""
        with self._lock:
            for name, func in indexers.items():
                if name in self._indexers:
                    raise ValueError(f"index {name!r} already exists")
                self._indexers[name] = func
                index: dict[str, dict[str, None]] = {}
                self._indices[name] = index
                for key, obj in self._items.items():
                    for value in func(obj):
                        index.setdefault(value, {})[key] = None

    # -- reads -------------------------------------------------------------------------------------------------

    def get(self, key: str) -> Object | None:
        with self._lock:
            return self._items.get(key)

    def get_by_name(self, namespace: str | None, name: str) -> Object | None:
        return self.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> list[Object]:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def by_index(self, index_name: str, value: str) -> builtins.list[Object]:
        """Objects filed under `value` in the named index."""
        with self._lock:
            keys = self._index(index_name).get(value, ())
            return [self._items[key] for key in keys]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        with self._lock:
            return list(self._index(index_name).get(value, ()))

    def index_values(self, index_name: str) -> builtins.list[str]:
        """Every value that has at least one object in the named index."""
        with self._lock:
            return list(self._index(index_name))

    def _index(self, index_name: str) -> dict[str, dict[str, None]]:
        try:
            return self._indices[index_name]
        except KeyError:
            raise KeyError(f"no index named {index_name!r}") from None

    # -- writes ------------------------------------------------------------------------------------------------

    def upsert(self, obj: Object) -> Object | None:
        """Store `obj` under its key; return the object it replaced, if any."""
        key = object_key(obj)
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self._reindex(key, old, obj)
            return old

    def delete(self, key: str) -> Object | None:
        """Forget the object under `key`; return it, or None if it was not there."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._reindex(key, old, None)
            return old

    def replace(self, objects: Iterable[Object]) -> builtins.list[Change]:
        """Make the store hold exactly `objects`; return what changed, as adds, updates and deletes.

        An object counts as updated when its resourceVersion differs from the cached one. Deletes come last and
        carry the last known state: they are how a handler learns of deletions it missed while disconnected. A
        key now held by another object (a new uid: deleted and made again under the same name while disconnected)
        is the old one's delete and the new one's add, in that order, not an update: a handler that follows
        objects by uid (expectations of deletes) learns that the old one is gone.
        """
        changes: builtins.list[Change] = []
        with self._lock:
            seen: set[str] = set()
            for obj in objects:
                key = object_key(obj)
                seen.add(key)
                old = self._items.get(key)
                if old is not None and _uid(old) != _uid(obj):
                    changes.extend((Change("delete", old), Change("add", obj)))
                elif old is None:
                    changes.append(Change("add", obj))
                elif _resource_version(old) != _resource_version(obj):
                    changes.append(Change("update", obj, old))
                else:
                    continue  # unchanged: keep the cached dict, nothing to tell
                self._items[key] = obj
                self._reindex(key, old, obj)
            for key in [key for key in self._items if key not in seen]:
                gone = self._items.pop(key)
                self._reindex(key, gone, None)
                changes.append(Change("delete", gone))
        return changes

    def _reindex(self, key: str, old: Object | None, new: Object | None) -> None:
        for name, func in self._indexers.items():
            old_values = set(func(old)) if old is not None else set()
            new_values = set(func(new)) if new is not None else set()
            if old_values == new_values:
                continue
            index = self._indices[name]
            for value in old_values - new_values:
                keys = index.get(value)
                if keys is not None:
                    keys.pop(key, None)
                    if not keys:
                        del index[value]  # no empty sets left behind by churn
            for value in new_values - old_values:
                index.setdefault(value, {})[key] = None


def _uid(obj: Object) -> str | None:
    uid = obj["metadata"].get("uid")
    return None if uid is None else str(uid)


def _resource_version(obj: Object) -> str | None:
    rv = obj["metadata"].get("resourceVersion")
    return None if rv is None else str(rv)
