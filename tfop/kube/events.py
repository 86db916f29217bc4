"""Records core/v1 Events about any object, off the caller's thread, aggregated and rate-limited per object.

`record()` only files the event in a bounded pending table and returns; one sender thread writes to the API.

Identical events (same object, type, reason and message) become one Event whose `count` and `lastTimestamp`
are patched. They are merged as early as possible: in the pending table while waiting for the sender (so a burst
of 100 identical records costs one create and at most a few patches, and never fills the table), then by the
sent-events cache that maps them to the Event already written.

The per-object spam filter (a token bucket: `burst` new Events, then one per `refill_seconds`) applies after
aggregation and only to creating NEW Events. That is the flood that hurts: each distinct Event is a new etcd key
kept for an hour and another line in `kubectl describe`. Count updates of an Event that already exists pass
freely, because a crash-looping object repeating the same warning should show its true count (client-go filters
those too, which freezes the count at the burst); their cost stays bounded because every update queued while one
is in flight merges into the next, and the client's own QPS limit applies.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

import structlog

from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.errors import ApiError, NotFound
from tfop.kube.metrics import KubeMetrics
from tfop.kube.ratelimit import TokenBucket
from tfop.kube.resource import EVENTS, Resource

NORMAL = "Normal"
WARNING = "Warning"
MAX_MESSAGE_BYTES = 1024  # the apiserver's limit for event notes
MAX_NAME_LENGTH = 253

_log = structlog.get_logger(__name__)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class EventSink(Protocol):
    """The part of KubeClient the recorder uses (tests substitute a recording fake)."""

    def create(self, resource: Resource, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]: ...

    def patch(
        self, resource: Resource, name: str, patch: Any, namespace: str | None = None, *, patch_type: str = "merge"
    ) -> dict[str, Any]: ...


def truncate_message(message: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """`message` cut to at most `limit` UTF-8 bytes, ending in "..." when cut, never splitting a character."""
    encoded = message.encode("utf-8")
    if len(encoded) <= limit:
        return message
    return encoded[: limit - 3].decode("utf-8", "ignore") + "..."


def object_reference(obj: Mapping[str, Any]) -> dict[str, str]:
    """The `involvedObject` for an API object given as a dict."""
    meta = obj.get("metadata") or {}
    if not obj.get("kind") or not meta.get("name"):
        raise ValueError("an event needs an object with kind and metadata.name")
    reference = {"apiVersion": str(obj.get("apiVersion", "")), "kind": str(obj["kind"]), "name": str(meta["name"])}
    for field in ("namespace", "uid", "resourceVersion"):
        if meta.get(field):
            reference[field] = str(meta[field])
    return reference


def _object_identity(reference: Mapping[str, str]) -> str:
    """The uid when known; otherwise what names the object (a uid-less dict still aggregates sensibly)."""
    return reference.get("uid") or "/".join(
        (reference["apiVersion"], reference["kind"], reference.get("namespace", ""), reference["name"])
    )


def _timestamp(wall: float) -> str:
    return datetime.fromtimestamp(wall, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Lru(Generic[K, V]):
    """A dict that forgets its least recently used entries beyond `capacity`."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._capacity:
            self._data.popitem(last=False)


@dataclass
class _Pending:
    """Records of one aggregation key waiting for the sender."""

    reference: dict[str, str]
    count: int
    first_seen: float
    last_seen: float


@dataclass
class _Written:
    """An Event that exists in the API (as far as we know), to be patched by later identical records."""

    name: str
    namespace: str
    count: int
    first_timestamp: str


_Key = tuple[str, str, str, str]  # object identity, type, reason, message


class EventRecorder:
    """Asynchronous, aggregating, spam-filtered Event writer for one component (e.g. "tfop")."""

    def __init__(
        self,
        client: EventSink,
        component: str,
        *,
        queue_size: int = 1000,
        burst: int = 25,
        refill_seconds: float = 300.0,
        clock: Clock = SYSTEM_CLOCK,
        host: str | None = None,
        cache_size: int = 4096,
        metrics: KubeMetrics | None = None,
    ) -> None:
        if not component:
            raise ValueError("an event recorder needs a component name")
        self._client = client
        self.component = component
        self.host = (host if host is not None else socket.gethostname())[:128]
        self._queue_size = queue_size
        self._burst = burst
        self._refill_rate = 1.0 / refill_seconds
        self._clock = clock
        self._dropped = (metrics or KubeMetrics.create()).events_dropped
        self._lock = threading.Lock()
        self._has_work = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        self._pending: OrderedDict[_Key, _Pending] = OrderedDict()
        self._in_flight = 0
        self._closed = False  # no more records; the sender exits once drained
        self._abandoned = False  # stop() gave up waiting; the sender drops the rest
        self._thread: threading.Thread | None = None
        # Touched only by whoever holds _send_lock (the sender thread, or flush() when there is no thread).
        self._send_lock = threading.Lock()
        self._written: _Lru[_Key, _Written] = _Lru(cache_size)
        self._spam_buckets: _Lru[str, TokenBucket] = _Lru(cache_size)
        self._last_stamp = 0

    def record(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        """File an event about `obj` (type Normal or Warning). Never blocks on the API; may drop (see metrics)."""
        if type not in (NORMAL, WARNING):
            raise ValueError(f"event type must be {NORMAL} or {WARNING}, got {type!r}")
        reference = object_reference(obj)
        message = truncate_message(message)
        key = (_object_identity(reference), type, reason, message)
        now = self._clock.wall()
        with self._lock:
            pending = self._pending.get(key)
            if pending is not None:
                pending.count += 1
                pending.last_seen = now
                return
            if self._closed or len(self._pending) >= self._queue_size:
                self._dropped.labels("stopped" if self._closed else "queue_full").inc()
                return
            self._pending[key] = _Pending(reference, 1, now, now)
            self._has_work.notify()

    def start(self) -> None:
        """Start the sender thread (once)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the event recorder was stopped")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"events-{self.component}", daemon=True)
                self._thread.start()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait up to `timeout` seconds until everything recorded so far is written (or dropped).

        Without a sender thread the writes happen here, in the caller's thread.
        """
        if self._thread is not None and self._thread.is_alive():
            with self._lock:
                return self._idle.wait_for(lambda: not self._pending and not self._in_flight, timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._send_next():
            pass
        with self._lock:
            return not self._pending and not self._in_flight

    def stop(self, timeout: float = 5.0) -> bool:
        """Refuse new records, write what can be written within `timeout`, drop the rest. Returns whether all
        pending events were written."""
        with self._lock:
            self._closed = True
            self._has_work.notify_all()
        flushed = self.flush(timeout)
        with self._lock:
            if not flushed:
                self._abandoned = True
                dropped = sum(pending.count for pending in self._pending.values())
                self._pending.clear()
                self._dropped.labels("stopped").inc(dropped)
            self._has_work.notify_all()
        if flushed and self._thread is not None:
            self._thread.join(timeout)
        return flushed

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._pending and not self._closed:
                    self._has_work.wait()
                if self._abandoned or not self._pending:
                    return
            self._send_next()

    def _send_next(self) -> bool:
        """Write the oldest pending event; False when nothing was pending."""
        with self._send_lock:
            with self._lock:
                if not self._pending:
                    return False
                key, pending = self._pending.popitem(last=False)
                self._in_flight += 1
            try:
                self._write(key, pending)
            except ApiError as error:
                self._dropped.labels("api_error").inc(pending.count)
                _log.warning("event not written", reason=key[2], object=pending.reference["name"], error=str(error))
            except Exception:  # noqa: BLE001 - a bug must not kill the sender thread (logged with its traceback)
                self._dropped.labels("api_error").inc(pending.count)
                _log.exception("event not written", reason=key[2], object=pending.reference["name"])
            finally:
                with self._lock:
                    self._in_flight -= 1
                    if not self._pending and not self._in_flight:
                        self._idle.notify_all()
            return True

    def _write(self, key: _Key, pending: _Pending) -> None:
        written = self._written.get(key)
        last_timestamp = _timestamp(pending.last_seen)
        if written is None:
            if not self._spam_filter_allows(key[0]):
                self._dropped.labels("spam_filter").inc(pending.count)
                return
            reference = pending.reference
            written = _Written(
                name=self._new_name(reference["name"]),
                # Events about cluster-scoped objects live in "default", as the apiserver expects.
                namespace=reference.get("namespace") or "default",
                count=pending.count,
                first_timestamp=_timestamp(pending.first_seen),
            )
            self._client.create(EVENTS, self._event_body(key, reference, written, last_timestamp), written.namespace)
        else:
            count = written.count + pending.count
            patch = {"count": count, "lastTimestamp": last_timestamp}
            try:
                self._client.patch(EVENTS, written.name, patch, written.namespace, patch_type="merge")
            except NotFound:  # expired (events have a TTL) or deleted: write it again with the full count
                written.count = count
                body = self._event_body(key, pending.reference, written, last_timestamp)
                self._client.create(EVENTS, body, written.namespace)
            written.count = count
        self._written.put(key, written)

    def _spam_filter_allows(self, identity: str) -> bool:
        bucket = self._spam_buckets.get(identity)
        if bucket is None:
            bucket = TokenBucket(self._refill_rate, self._burst, self._clock)
            self._spam_buckets.put(identity, bucket)
        return bucket.try_take()

    def _new_name(self, object_name: str) -> str:
        """`{object name}.{hex nanoseconds}`, strictly increasing so two events never share a name."""
        self._last_stamp = max(int(self._clock.wall() * 1e9), self._last_stamp + 1)
        suffix = f"{self._last_stamp:x}"
        return f"{object_name[: MAX_NAME_LENGTH - 1 - len(suffix)]}.{suffix}"

    def _event_body(
        self, key: _Key, reference: dict[str, str], written: _Written, last_timestamp: str
    ) -> dict[str, Any]:
        _, event_type, reason, message = key
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": written.name, "namespace": written.namespace},
            "involvedObject": reference,
            "type": event_type,
            "reason": reason,
            "message": message,
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
            "firstTimestamp": written.first_timestamp,
            "lastTimestamp": last_timestamp,
            "count": written.count,
        }
