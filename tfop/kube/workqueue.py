"""A rate-limited work queue with client-go's semantics: dedup, one worker per item, delayed and rate-limited adds.

- An item added several times before a worker takes it is processed once.
- No two workers hold the same item: an item added while it is being processed is queued again only after
  `done(item)`, so the second run sees everything that happened during the first.
- `add_after` parks items in a heap watched by one thread; an earlier deadline for a parked item wins, a later
  one does not postpone it. `add_rate_limited` asks the rate limiter for the delay.
- Waiting items are handed out from two FIFO lanes (tfop/kube/lanes.py): an item the caller said is short
  (`set_lane(item, Lane.PRIORITY)`) goes ahead of the others, without ever stopping them; with `normal_slots`,
  no more normal items than that are out at once, so the others' workers stay free for short items.

Workers loop on `item, shutdown = queue.get()` and always call `queue.done(item)` (typically in `finally`).

Metrics use the `workqueue_*` names dashboards know. They are plain numbers updated under the queue's own lock
and turned into samples only when Prometheus scrapes (a custom collector), because prometheus_client's own
metric objects take a lock per update and would cost more than the queue operation itself. Computing the
in-flight gauges (unfinished work, longest running processor) at scrape time also makes them exact without a
ticking thread. Queues with the same name share one series, summed. A queue given no collector keeps its
numbers unexposed.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import weakref
from bisect import bisect_left
from collections.abc import Hashable, Iterable
from typing import Any, Generic, TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.lanes import DEFAULT_MAX_STREAK, Lane, Lanes
from tfop.kube.ratelimit import RateLimiter, default_controller_rate_limiter

T = TypeVar("T", bound=Hashable)

# client-go's workqueue buckets: 10 ns to 10 s, by factors of ten.
DURATION_BUCKETS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
_BUCKET_LABELS = [repr(bound) for bound in DURATION_BUCKETS] + ["+Inf"]  # as prometheus_client writes `le`


class RateLimitingQueue(Generic[T]):
    """FIFO of distinct items for worker threads; thread-safe, one lock."""

    def __init__(self, name: str, rate_limiter: RateLimiter | None = None, *, clock: Clock = SYSTEM_CLOCK,
                 metrics: WorkqueueCollector | None = None, max_streak: int = DEFAULT_MAX_STREAK,
                 normal_slots: int | None = None) -> None:
        self.name = name
        self._clock = clock
        self._now = clock.now
        self._limiter = rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock)
        # One lock; two condition variables on it so that notify() for a new item can only wake a getter, and a
        # new earliest deadline can only wake the delay thread.
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._delay_changed = threading.Condition(self._lock)
        self._queue: Lanes[T] = Lanes(max_streak, normal_slots)
        self._dirty: dict[T, float] = {}  # items waiting to be processed -> when they were added
        self._processing: dict[T, float] = {}  # items held by workers -> when the worker took them
        self._idle_getters = 0
        self._shutting_down = False
        self._draining = False
        self._delays: list[tuple[float, int, T]] = []  # heap of (deadline, tie-breaker, item), may hold stale entries
        self._deadlines: dict[T, float] = {}  # the deadline that counts for each parked item
        self._sequence = itertools.count()
        self._delay_thread: threading.Thread | None = None
        self._stats = _QueueStats()
        if metrics is not None:
            metrics.track(self)

    def add(self, item: T) -> None:
        """Queue `item` unless it is already waiting; ignored after shutdown."""
        with self._lock:
            self._add_locked(item)

    def _add_locked(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty[item] = self._now()
        self._stats.adds += 1
        if item in self._processing:
            return  # queued by done()
        self._queue.append(item)
        if self._idle_getters:
            self._ready.notify()

    def set_lane(self, item: T, lane: Lane) -> None:
        """The lane `item` waits in from its next enqueue; a worker calls it before `done(item)` to place the item's
        next pass. An item already waiting keeps its place."""
        with self._lock:
            self._queue.set_lane(item, lane)

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Take the next item, blocking up to `timeout` seconds (forever if None).

        Returns (item, False); (None, False) on timeout; (None, True) once the queue is shut down and empty.
        Items already queued when shutdown was called are still handed out.
        """
        with self._lock:
            if not self._queue.ready() and not self._shutting_down and not self._wait_for_item(timeout):
                return None, False
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            now = self._now()
            self._stats.queue_latency.observe(now - self._dirty.pop(item))
            self._processing[item] = now
            return item, False

    def _wait_for_item(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else self._now() + timeout
        self._idle_getters += 1
        try:
            while not self._queue.ready() and not self._shutting_down:
                if deadline is not None and self._now() >= deadline:
                    return False
                self._clock.wait_until(self._ready, deadline)
            return True
        finally:
            self._idle_getters -= 1

    def done(self, item: T) -> None:
        """The worker has finished with `item`; if it was added meanwhile, it is queued again now."""
        with self._lock:
            started = self._processing.pop(item, None)
            if started is None:
                return
            self._stats.work_duration.observe(self._now() - started)
            freed = self._queue.release(item)
            if item in self._dirty:
                self._queue.append(item)
            if (freed or item in self._dirty) and self._idle_getters:
                self._ready.notify()
            if self._draining and not self._processing:
                self._ready.notify_all()

    def add_after(self, item: T, delay: float) -> None:
        """Add `item` once `delay` seconds have passed (at once if delay <= 0)."""
        with self._lock:
            self._add_after_locked(item, delay)

    def _add_after_locked(self, item: T, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self._add_locked(item)
            return
        deadline = self._now() + delay
        parked = self._deadlines.get(item)
        if parked is not None and parked <= deadline:
            return
        self._deadlines[item] = deadline
        heapq.heappush(self._delays, (deadline, next(self._sequence), item))
        if len(self._delays) > 2 * len(self._deadlines) + 64:
            self._compact_delays()
        if self._delay_thread is None:
            # Started on first use: queues that never delay (and most tests) need no extra thread.
            self._delay_thread = threading.Thread(
                target=self._release_due_items, name=f"workqueue-{self.name}-delays", daemon=True
            )
            self._delay_thread.start()
        elif self._delays[0][0] == deadline:
            self._delay_changed.notify()

    def _compact_delays(self) -> None:
        """Drop heap entries superseded by an earlier deadline, so repeated re-parking cannot grow the heap."""
        self._delays = [entry for entry in self._delays if self._deadlines.get(entry[2]) == entry[0]]
        heapq.heapify(self._delays)

    def _release_due_items(self) -> None:
        with self._lock:
            while not self._shutting_down:
                now = self._now()
                while self._delays and self._delays[0][0] <= now:
                    deadline, _, item = heapq.heappop(self._delays)
                    if self._deadlines.get(item) == deadline:
                        del self._deadlines[item]
                        self._add_locked(item)
                self._clock.wait_until(self._delay_changed, self._delays[0][0] if self._delays else None)

    def add_rate_limited(self, item: T) -> None:
        """Retry `item` after the delay the rate limiter decides; counts as a retry."""
        delay = self._limiter.when(item)
        with self._lock:
            if self._shutting_down:
                return
            self._stats.retries += 1
            self._add_after_locked(item, delay)

    def forget(self, item: T) -> None:
        """`item` succeeded: its backoff starts from the beginning next time."""
        self._limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._limiter.num_requeues(item)

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)

    def shutting_down(self) -> bool:
        with self._lock:
            return self._shutting_down

    def shutdown(self) -> None:
        """Accept no more items, drop parked ones and wake every waiting getter."""
        with self._lock:
            self._begin_shutdown(drain=False)

    def shutdown_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down, then wait up to `timeout` seconds until no item is being processed.

        Returns whether the queue drained. A concurrent `shutdown()` ends the wait early.
        """
        with self._lock:
            self._begin_shutdown(drain=True)
            deadline = None if timeout is None else self._now() + timeout
            while self._processing and self._draining:
                if deadline is not None and self._now() >= deadline:
                    break
                self._clock.wait_until(self._ready, deadline)
            self._draining = False
            return not self._processing

    def _begin_shutdown(self, drain: bool) -> None:
        self._shutting_down = True
        self._queue.normal_slots = None  # what is still queued is handed out, whatever is out
        self._draining = drain
        self._delays.clear()
        self._deadlines.clear()
        self._ready.notify_all()
        self._delay_changed.notify_all()

    def _metrics_snapshot(self) -> tuple[int, list[float], _QueueStats]:
        """(depth, seconds each in-flight item has been processed, a copy of the counters) for a scrape."""
        with self._lock:
            now = self._now()
            return len(self._dirty), [now - started for started in self._processing.values()], self._stats.copy()


class _Histogram:
    """Counts per DURATION_BUCKETS bucket (the last one is +Inf) and the sum; cumulated only on scrape."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(DURATION_BUCKETS, seconds)] += 1
        self.total += seconds

    def merge(self, other: _Histogram) -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.total += other.total

    def cumulative_buckets(self) -> list[tuple[str, float]]:
        return list(zip(_BUCKET_LABELS, itertools.accumulate(self.counts), strict=True))


class _QueueStats:
    """The counters of one queue. Holds no reference to the queue, so it can outlive it (see the collector)."""

    __slots__ = ("adds", "queue_latency", "retries", "work_duration")

    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.queue_latency = _Histogram()
        self.work_duration = _Histogram()

    def merge(self, other: _QueueStats) -> None:
        self.adds += other.adds
        self.retries += other.retries
        self.queue_latency.merge(other.queue_latency)
        self.work_duration.merge(other.work_duration)

    def copy(self) -> _QueueStats:
        clone = _QueueStats()
        clone.merge(self)
        return clone


class WorkqueueCollector(Collector):
    """Exposes every queue's numbers per queue name on scrape.

    Counters must never go down, so when a queue is garbage-collected its counters are folded into per-name
    totals (a finalizer appends them to a list, which needs no lock and so cannot deadlock with a scrape).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: weakref.WeakSet[RateLimitingQueue[Any]] = weakref.WeakSet()
        self._retired: list[tuple[str, _QueueStats]] = []
        self._totals: dict[str, _QueueStats] = {}

    def track(self, queue: RateLimitingQueue[Any]) -> None:
        with self._lock:
            self._live.add(queue)
            self._totals.setdefault(queue.name, _QueueStats())
        weakref.finalize(queue, self._retired.append, (queue.name, queue._stats))

    def describe(self) -> Iterable[Metric]:
        return _empty_families()

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            # Take the live queues before folding retired ones: a queue alive in this list cannot retire during
            # the scrape, and one gone from it has already queued its counters for folding.
            live = list(self._live)
            while self._retired:
                name, stats = self._retired.pop()
                self._totals[name].merge(stats)
            per_name = {name: stats.copy() for name, stats in self._totals.items()}
        depth = dict.fromkeys(per_name, 0)
        unfinished = dict.fromkeys(per_name, 0.0)
        longest = dict.fromkeys(per_name, 0.0)
        for queue in live:
            queue_depth, in_flight, stats = queue._metrics_snapshot()
            per_name[queue.name].merge(stats)
            depth[queue.name] += queue_depth
            unfinished[queue.name] += sum(in_flight)
            longest[queue.name] = max([longest[queue.name], *in_flight])
        families = _empty_families()
        depth_f, adds_f, queue_f, work_f, unfinished_f, longest_f, retries_f = families
        for name, stats in sorted(per_name.items()):
            depth_f.add_metric([name], depth[name])
            adds_f.add_metric([name], stats.adds)
            queue_f.add_metric([name], stats.queue_latency.cumulative_buckets(), stats.queue_latency.total)
            work_f.add_metric([name], stats.work_duration.cumulative_buckets(), stats.work_duration.total)
            unfinished_f.add_metric([name], unfinished[name])
            longest_f.add_metric([name], longest[name])
            retries_f.add_metric([name], stats.retries)
        return families


_Families = tuple[
    GaugeMetricFamily, CounterMetricFamily, HistogramMetricFamily, HistogramMetricFamily,
    GaugeMetricFamily, GaugeMetricFamily, CounterMetricFamily,
]


def _empty_families() -> _Families:
    labels = ["name"]
    return (
        GaugeMetricFamily("workqueue_depth", "Items waiting in the work queue.", labels=labels),
        CounterMetricFamily("workqueue_adds_total", "Items added to the work queue.", labels=labels),
        HistogramMetricFamily(
            "workqueue_queue_duration_seconds", "Seconds an item waited in the queue before a worker took it.",
            labels=labels,
        ),
        HistogramMetricFamily(
            "workqueue_work_duration_seconds", "Seconds a worker spent on an item, from get to done.", labels=labels
        ),
        GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "Seconds spent so far on items still being processed; steady growth means stuck workers.",
            labels=labels,
        ),
        GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "Seconds the longest-running item in processing has been held by its worker.",
            labels=labels,
        ),
        CounterMetricFamily("workqueue_retries_total", "Rate-limited re-adds of items.", labels=labels),
    )
