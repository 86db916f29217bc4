"""A list+watch reflector thread that keeps a Store in step with the apiserver and tells handlers what changed.

The loop is our own rather than the kubernetes package's Watch helper: we need to see every bookmark, tell a 410
in the stream from other errors, close the connection from another thread, and re-list without losing deletes.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from tfop.kube.client import Page
from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.errors import Gone, error_from_watch_status
from tfop.kube.resource import Resource
from tfop.kube.store import Change, IndexFunc, Store, object_key
from tfop.kube.throttle import ExponentialBackoff
from tfop.objects import Object

log = structlog.get_logger("tfop.kube.informer")

Transform = Callable[[Object], Object]
OnAdd = Callable[[Object], None]
OnUpdate = Callable[[Object, Object], None]  # (old, new)
OnDelete = Callable[[Object, bool], None]  # (last known object, stale): stale = learnt from a re-list


def strip_managed_fields(obj: Object) -> Object:
    """The default transform: managedFields is often the largest part of an object and no controller reads it."""
    meta = obj.get("metadata")
    if meta:
        meta.pop("managedFields", None)
    return obj


class EventStream(Protocol):
    """One open watch: its raw events as they arrive; `close()` from any thread ends the iteration."""

    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    def close(self) -> None: ...


class ListWatcher(Protocol):
    """Where an informer lists and watches from (a KubeClient)."""

    def list_pages(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int = 500) -> Iterator[Page]: ...

    def watch(self, resource: Resource, namespace: str | None = None, *, resource_version: str,
              timeout_seconds: int, label_selector: str | None = None, field_selector: str | None = None,
              allow_bookmarks: bool = True) -> EventStream: ...


@dataclass(frozen=True)
class _Handler:
    on_add: OnAdd | None
    on_update: OnUpdate | None
    on_delete: OnDelete | None


# Objects per list page. A page is decoded whole before the transform slims its objects, and the peak of the start-up
# list stays the process's RSS for good (freed memory is not returned): 100 rather than client-go's 500 measured
# 107.5 MB instead of 133.9 MB idle over 1,100 finished jobs, for ~5x the list requests at start (150 vs 30).
LIST_PAGE_SIZE = 100

# A failure more than this long after the previous delay ended starts the backoff from its first delay again
# (client-go's reflector: 800 ms doubling to 30 s, reset after 2 minutes without a backoff). Without it a watch that
# served events and then broke (every apiserver restart breaks one) kept the delay the last outage had grown to, so
# each restart waited longer than the one before, up to the 30 s cap.
BACKOFF_RESET_AFTER = 120.0


class Informer:
    """Caches one resource (in one namespace or all, optionally filtered by selectors) and calls handlers.

    Handlers run on the informer's thread, in event order, and must be cheap (enqueue a key); an exception in a
    handler is logged and does not stop the informer. Cached objects are shared: treat them as read-only.
    """

    def __init__(self, client: ListWatcher, resource: Resource, *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 indexers: Mapping[str, IndexFunc] | None = None,
                 transform: Transform | None = strip_managed_fields, page_size: int = LIST_PAGE_SIZE,
                 watch_timeout_range: tuple[int, int] = (300, 600), backoff_initial: float = 0.8,
                 backoff_cap: float = 30.0, backoff_reset_after: float = BACKOFF_RESET_AFTER,
                 clock: Clock = SYSTEM_CLOCK, jitter_rng: Callable[[], float] = random.random) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.store = Store(indexers)
        self._transform = transform
        self._page_size = page_size
        self._watch_timeout_range = watch_timeout_range
        self._clock = clock
        self._backoff = ExponentialBackoff(backoff_initial, backoff_cap, rng=jitter_rng,
                                           reset_after=backoff_reset_after, clock=clock)
        self._handlers: list[_Handler] = []
        self._dispatch_lock = threading.RLock()  # store change + handler calls happen as one step
        self._stream_lock = threading.Lock()
        self._stream: EventStream | None = None
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._thread: threading.Thread | None = None
        self._resource_version = ""  # "" means: list before watching
        self._last_progress: float | None = None
        self.list_count = 0  # how many full lists were done: 1 + the re-lists
        self._log = log.bind(resource=resource.plural, namespace=namespace or "*")

    # -- public ------------------------------------------------------------------------------------------------

    def add_event_handler(self, on_add: OnAdd | None = None, on_update: OnUpdate | None = None,
                          on_delete: OnDelete | None = None) -> None:
        """Register handlers; one added after objects are cached first gets an add for each of them."""
        handler = _Handler(on_add, on_update, on_delete)
        with self._dispatch_lock:
            for obj in self.store.list():
                self._call(handler.on_add, obj)
            self._handlers.append(handler)

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("informer already started")
        thread = threading.Thread(target=self._run, name=f"informer-{self.resource.plural}", daemon=True)
        thread.start()
        # Published once running: /healthz (another thread) reads a started informer that is not alive as dead,
        # and under load thread.start() takes long enough for a probe to land in between.
        self._thread = thread

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread, closing the open watch so it does not linger until the server times it out."""
        self._stop.set()
        with self._stream_lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def has_synced(self) -> bool:
        """True once the first list is in the store."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def has_started(self) -> bool:
        return self._thread is not None

    @property
    def last_progress(self) -> float | None:
        """time.monotonic() of the last successful list, watch event or bookmark, or normal watch end."""
        return self._last_progress

    @property
    def resource_version(self) -> str:
        """The resourceVersion the cache is at (where the next watch starts)."""
        return self._resource_version

    # -- the reflector loop ------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            delay = self.list_and_watch_once()
            if delay and not self._stop.is_set():
                self._stop.wait(delay)

    def list_and_watch_once(self) -> float:
        """One turn of the reflector: list if the cache has no version to watch from, then follow one watch until
        it ends. Returns how long to wait before the next turn (0: go on at once). Only the informer's thread
        calls it, except in tests that drive the loop turn by turn."""
        listed_now = False
        try:
            if not self._resource_version:
                self._list()
                listed_now = True
            if self._watch():
                self._backoff.reset()
                return 0.0
            if self._stop.is_set():
                return 0.0
            delay = self._backoff.next()
            self._log.debug("watch ended at once, backing off", retry_in=round(delay, 2))
        except Gone as exc:
            self._resource_version = ""
            if not listed_now:
                self._log.info("resource version expired, re-listing", error=exc.message)
                return 0.0
            delay = self._backoff.next()  # expired right after a list: do not spin on list
            self._log.warning("resource version expired right after a list", error=exc.message,
                              retry_in=round(delay, 2))
        except Exception as exc:  # noqa: BLE001 - any failure is retried; the thread must survive
            delay = self._backoff.next()
            self._log.warning("list/watch failed", error=str(exc), error_type=type(exc).__name__,
                              retry_in=round(delay, 2))
        return delay

    def _list(self) -> None:
        items: list[Object] = []
        resource_version = ""
        for page, resource_version in self.client.list_pages(  # noqa: B007 - the last page's version is the list's
                self.resource, self.namespace, label_selector=self.label_selector,
                field_selector=self.field_selector, limit=self._page_size):
            # Transform page by page: what it strips is freed before the next page arrives.
            items.extend(page if self._transform is None else map(self._transform, page))
        with self._dispatch_lock:
            changes = self.store.replace(items)
            for change in changes:
                self._notify(change, stale=True)
        del items
        self._resource_version = resource_version
        self.list_count += 1
        self._synced.set()
        self._progress()
        self._log.debug("listed", count=len(self.store), changes=len(changes), resource_version=resource_version)

    def _watch(self) -> bool:
        """Follow one watch until it ends; True if it was healthy (it got events or lasted a while)."""
        started = self._clock.now()
        events = 0
        stream = self.client.watch(
            self.resource, self.namespace, resource_version=self._resource_version,
            timeout_seconds=random.randint(*self._watch_timeout_range), label_selector=self.label_selector,
            field_selector=self.field_selector, allow_bookmarks=True)
        with self._stream_lock:
            self._stream = stream
        try:
            if self._stop.is_set():  # stop() came before the stream was published
                return True
            for event in stream:
                self._handle_event(event)
                events += 1
        finally:
            with self._stream_lock:
                self._stream = None
            stream.close()
        healthy = events > 0 or self._clock.now() - started >= 1.0
        if healthy:
            self._progress()
        return healthy

    def _handle_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            raise error_from_watch_status(obj)
        resource_version = (obj.get("metadata") or {}).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED"):
            if self._transform is not None:
                obj = self._transform(obj)
            with self._dispatch_lock:
                old = self.store.upsert(obj)
                self._notify(Change("add", obj) if old is None else Change("update", obj, old), stale=False)
        elif kind == "DELETED":
            if self._transform is not None:
                obj = self._transform(obj)
            with self._dispatch_lock:
                self.store.delete(object_key(obj))
                self._notify(Change("delete", obj), stale=False)
        elif kind != "BOOKMARK":
            self._log.warning("unknown watch event type", type=kind)
        if resource_version:
            self._resource_version = str(resource_version)
        self._progress()

    # -- handlers ----------------------------------------------------------------------------------------------

    def _notify(self, change: Change, *, stale: bool) -> None:
        for handler in self._handlers:
            if change.type == "add":
                self._call(handler.on_add, change.obj)
            elif change.type == "update":
                self._call(handler.on_update, change.old, change.obj)
            else:
                self._call(handler.on_delete, change.obj, stale)

    def _call(self, func: Callable[..., None] | None, *args: Any) -> None:
        if func is None:
            return
        try:
            func(*args)
        except Exception:  # noqa: BLE001 - a handler bug must not stop the cache
            self._log.exception("event handler failed", handler=getattr(func, "__qualname__", repr(func)))

    def _progress(self) -> None:
        self._last_progress = time.monotonic()
