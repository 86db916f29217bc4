"""A generic controller runtime, the part of controller-runtime's manager and controller every controller needs:
informers for what it watches, a rate-limited queue of keys, worker threads calling `reconcile(key)`, a stall
guard, health and readiness problems, and the controller_runtime_* metrics.

It knows nothing of what it reconciles. A controller declares its watches as data: each names a resource, how
to filter and index it, and which key an event concerns (the object's own, or its owner's); the runtime
enqueues that key. A watched kind the controller does not own (e.g. Nodes) maps an object to any number of keys
instead, and its updates count only when what the cache keeps of it changed. `reconcile(key)` returns seconds
until the key needs another look (a timer), or None, or a `Result` that also says which lane of the queue the
key's next pass belongs in; an exception requeues the key with backoff without touching any other key.

Lanes: a pass the controller says will only observe (nothing of its own writes outstanding but what the cache is
about to show, nothing left to create) waits in the priority lane, ahead of passes that create, so a status a user
waits for is not held up by other keys' create bursts. The queue's guarantees hold in both lanes: one worker per
key, backoff for failures, and the normal lane never stopped (tfop/kube/lanes.py).
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError, Conflict
from tfop.kube.informer import Informer, Transform, strip_managed_fields
from tfop.kube.lanes import Lane
from tfop.kube.metrics import KubeMetrics
from tfop.kube.ratelimit import RateLimiter
from tfop.kube.resource import Resource
from tfop.kube.store import IndexFunc, Store
from tfop.kube.workqueue import RateLimitingQueue
from tfop.objects import Object

log = structlog.get_logger("tfop.kube.runtime")


@dataclass(frozen=True)
class Result:
    """What a pass says of the key's next one."""

    requeue_after: float | None = None  # seconds until the key needs another look, or None
    lane: Lane = Lane.NORMAL  # where the next pass waits: PRIORITY when it will only observe


class FailedPassError(Exception):
    """A pass that failed with `error` but knows when its key needs a look at the latest (a deadline of its own):
    it is retried with backoff, or at that moment if it comes sooner, so a deadline is kept however long the
    backoff has grown."""

    def __init__(self, error: Exception, requeue_after: float) -> None:
        super().__init__(str(error))
        self.error = error
        self.requeue_after = requeue_after


# Seconds until the key needs another look, or None (its next pass in the normal lane), or a Result.
Reconcile = Callable[[str], Result | float | None]


class Change(enum.Enum):
    ADDED = "added"
    UPDATED = "updated"
    DELETED = "deleted"


# Told of every change before its key is queued, with the key: how expectations learn what the cache has seen.
Observer = Callable[[Change, str, Object], None]


@dataclass(frozen=True)
class Watch:
    """One resource a controller watches, and the queue key each of its objects concerns."""

    resource: Resource
    key_of: Callable[[Object], str | None]  # None: the object concerns no key (not ours)
    label_selector: str | None = None
    # For a watched kind that is not owned: every key an object concerns (then `key_of` is not asked); an update
    # counts only when the object as cached (after `transform`) changed beyond its resourceVersion.
    keys_of: Callable[[Object], Iterable[str]] | None = None
    indexers: Mapping[str, IndexFunc] = field(default_factory=dict)
    transform: Transform | None = strip_managed_fields
    observe: Observer | None = None
    # Seconds: a key's passes for this watch's changes come at most once per `batch` (the queue's `add_batched`),
    # so an object's burst of changes (its children created, scheduled, started) makes one pass, not one each.
    batch: float = 0.0


class ControllerRuntime:
    """Runs `reconcile` for the keys its watches produce, one worker per key at a time: on `threads` workers,
    and one more that only a priority key gets when the others are all busy with normal ones."""

    def __init__(self, client: KubeClient, name: str, reconcile: Reconcile, watches: Sequence[Watch], *,
                 namespaces: Sequence[str] = (), threads: int = 4, stall_after: float = 900.0,
                 rate_limiter: RateLimiter | None = None, metrics: KubeMetrics | None = None,
                 key_name: str = "key") -> None:
        self.name = name
        self._key_name = key_name  # how log lines name a key, e.g. job=ns/name
        self.threads = threads
        self._reconcile = reconcile
        self._metrics = metrics or KubeMetrics.create()
        scopes: list[str | None] = list(namespaces) or [None]
        self._watches = list(watches)
        self._informers: dict[tuple[Resource, str | None], Informer] = {
            (watch.resource, scope): Informer(client, watch.resource, namespace=scope,
                                              label_selector=watch.label_selector, indexers=watch.indexers,
                                              transform=watch.transform)
            for watch in self._watches for scope in _scopes_of(watch, scopes)
        }
        self._scopes = scopes
        # A worker more than normal keys may hold: a pass that only observes never waits for a long one to end, and
        # passes that create keep all `threads`.
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(name, rate_limiter, metrics=self._metrics.workqueues,
                                                               normal_slots=threads)
        self._workers: list[threading.Thread] = []
        # A healthy informer makes progress at least once per watch (5-10 min), a reconcile takes seconds:
        # silence longer than this means a hung connection or a stuck worker, which only a restart cures.
        self.stall_after = stall_after
        self._busy: dict[str, tuple[str, float]] = {}  # worker name -> (key, monotonic start)
        self._metrics.max_concurrent.labels(name).set(threads + 1)
        for result in ("success", "error", "requeue_after"):
            self._metrics.reconcile_total.labels(name, result)
        self._metrics.reconcile_errors.labels(name)

    # --- the caches ------------------------------------------------------------------------------------------
    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    def stores(self, resource: Resource) -> list[Store]:
        """Every cache of `resource`: one per namespace the controller is limited to, or one for all."""
        return [informer.store for (watched, _), informer in self._informers.items() if watched == resource]

    def store(self, resource: Resource, namespace: str) -> Store:
        """The cache of `resource` that holds objects of `namespace`."""
        informer = self._informers.get((resource, namespace)) or self._informers.get((resource, None))
        if informer is None:
            raise LookupError(f"{resource.plural} in namespace {namespace} are not watched")
        return informer.store

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start_informers(self) -> None:
        for watch in self._watches:
            for scope in _scopes_of(watch, self._scopes):
                informer = self._informers[(watch.resource, scope)]
                informer.add_event_handler(*self._handlers(watch))
                informer.start()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        return all(i.wait_for_sync(None if deadline is None else max(0.0, deadline - time.monotonic()))
                   for i in self.informers)

    def start_workers(self) -> None:
        for number in range(self.threads + 1):
            thread = threading.Thread(target=self._work, name=f"reconcile-{number}", daemon=True)
            thread.start()
            self._workers.append(thread)

    def stop_workers(self, drain_timeout: float = 20.0) -> bool:
        """Stop taking keys and let in-flight reconciles finish (bounded); True if they all did."""
        drained = self.queue.shutdown_with_drain(drain_timeout)
        for worker in self._workers:
            worker.join(timeout=1.0)
        return drained

    def stop_informers(self) -> None:
        for informer in self.informers:
            informer.stop()

    # --- health ----------------------------------------------------------------------------------------------
    def health_problem(self) -> str | None:
        """For /healthz: a dead or stalled informer or worker is a process that must be restarted."""
        now = time.monotonic()
        problems = []
        for informer in self.informers:
            name = f"informer {informer.resource.plural} ({informer.namespace or 'all namespaces'})"
            progress = informer.last_progress
            if informer.has_started() and not informer.is_alive():  # one not started yet is the process starting
                problems.append(f"{name} is not running")
            elif progress is not None and now - progress > self.stall_after:
                problems.append(f"{name} made no progress for {now - progress:.0f}s")
        problems.extend(f"{worker.name} is not running" for worker in self._workers
                        if not worker.is_alive() and not self.queue.shutting_down())
        for thread_name, (key, since) in list(self._busy.items()):
            if now - since > self.stall_after:
                problems.append(f"{thread_name} has been reconciling {key} for {now - since:.0f}s")
        return "; ".join(problems) or None

    def readiness_problem(self) -> str | None:
        pending = [i.resource.plural for i in self.informers if not i.has_synced()]
        return f"caches not synced: {', '.join(pending)}" if pending else None

    # --- events to keys --------------------------------------------------------------------------------------
    def enqueue(self, watch: Watch, key: str) -> None:
        """Queue `key` for a change of one of `watch`'s objects: at once, or batched as the watch says."""
        if watch.batch > 0:
            self.queue.add_batched(key, watch.batch)
        else:
            self.queue.add(key)

    def _handlers(self, watch: Watch) -> tuple[Callable[[Object], None], Callable[[Object, Object], None],
                                                Callable[[Object, bool], None]]:
        keys_of = watch.keys_of

        def changed(change: Change, obj: Object) -> None:
            if keys_of is not None:
                for each in keys_of(obj):
                    self.queue.add(each)
                return
            key = watch.key_of(obj)
            if key is None:
                return
            if watch.observe is not None:
                watch.observe(change, key, obj)
            self.enqueue(watch, key)

        def updated(old: Object, new: Object) -> None:
            # The same resourceVersion is the same object (a re-list): nothing new to reconcile.
            if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
                return
            if keys_of is not None and _without_version(old) == _without_version(new):
                return  # e.g. a node's heartbeat: nothing the controller reads moved
            changed(Change.UPDATED, new)

        return (lambda obj: changed(Change.ADDED, obj), updated,
                lambda obj, stale: changed(Change.DELETED, obj))

    # --- workers ---------------------------------------------------------------------------------------------
    def _work(self) -> None:
        metrics, name = self._metrics, self.name
        while True:
            key, shutdown = self.queue.get()
            if shutdown or key is None:
                return
            started = time.monotonic()
            self._busy[threading.current_thread().name] = (key, started)
            metrics.active_workers.labels(name).inc()
            try:
                result = self._reconcile(key)
            except FailedPassError as failed:
                self.queue.set_lane(key, Lane.NORMAL)
                self._failed(key, failed.error)
                self.queue.add_after(key, failed.requeue_after)  # the sooner of the two wins
            except Exception as error:  # noqa: BLE001 - one key's failure must never stop the worker
                # What a failed pass left to do is not known: its retry waits in the normal lane.
                self.queue.set_lane(key, Lane.NORMAL)
                self._failed(key, error)
            else:
                if not isinstance(result, Result):
                    result = Result(result)
                requeue_after = result.requeue_after
                self.queue.set_lane(key, result.lane)  # before done(), which queues the key again if it was added
                self.queue.forget(key)
                if requeue_after is not None:
                    self.queue.add_after(key, requeue_after)
                metrics.reconcile_total.labels(name, "requeue_after" if requeue_after is not None else "success").inc()
            finally:
                del self._busy[threading.current_thread().name]
                metrics.active_workers.labels(name).dec()
                metrics.reconcile_time.labels(name).observe(time.monotonic() - started)
                self.queue.done(key)

    def _failed(self, key: str, error: Exception) -> None:
        self.queue.add_rate_limited(key)
        self._metrics.reconcile_total.labels(self.name, "error").inc()
        if isinstance(error, Conflict):  # someone wrote the object since we read it: retry on the newer copy
            log.debug("conflict, will retry", controller=self.name, **{self._key_name: key})
            return
        self._metrics.reconcile_errors.labels(self.name).inc()
        details = {"error": error.message} if isinstance(error, ApiError) else {"exc_info": error}
        log.warning("reconcile failed, will retry", controller=self.name, retries=self.queue.num_requeues(key),
                    **{self._key_name: key}, **details)


def _scopes_of(watch: Watch, scopes: list[str | None]) -> list[str | None]:
    """A cluster-scoped resource has one cache whatever namespaces the controller is limited to."""
    return scopes if watch.resource.namespaced else [None]


def _without_version(obj: Object) -> Object:
    return {**obj, "metadata": {k: v for k, v in obj.get("metadata", {}).items() if k != "resourceVersion"}}
