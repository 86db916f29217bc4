"""A rate-limited work queue with client-go's semantics: dedup, one worker per item, delayed and rate-limited adds.

- An item added several times before a worker takes it is processed once.
- No two workers hold the same item: an item added while it is being processed is queued again only after
  `done(item)`, so the second run sees everything that happened during the first.
- `add_after` parks items in a heap watched by one thread; an earlier deadline for a parked item wins, a later
  one does not postpone it. `add_rate_limited` asks the rate limiter for the delay.
- `add_batched(item, period)` gives an item at most one run per `period` for such adds: one added within
  `period` of its last run's end (or during a run) waits until `period` after that end, so a burst of changes
  makes one run, not one each; an item idle longer than that is queued at once, so a lone change waits for
  nothing. (The Job controller batches its pods' events the same way, from the first event rather than from the
  last sync.)
- Waiting items are handed out from two FIFO lanes (tfop/kube/lanes.py): an item the caller said is short
  (`set_lane(item, Lane.PRIORITY)`) goes ahead of the others, without ever stopping them; with `normal_slots`,
  no more normal items than that are out at once, so the others' workers stay free for short items.

Workers loop on `item, shutdown = queue.get()` and always call `queue.done(item)` (typically in `finally`).

Its numbers (`QueueStats`, tfop/kube/queue_stats.py) are exposed by the collector it is given (the one of
tfop/kube/workqueue_metrics.py, which it does not import); a queue given none keeps them unexposed.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Hashable
from typing import Generic, TypeVar

from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.lanes import DEFAULT_MAX_STREAK, Lane, Lanes
from tfop.kube.queue_stats import QueueStats, QueueTracker
from tfop.kube.ratelimit import RateLimiter, default_controller_rate_limiter

T = TypeVar("T", bound=Hashable)


class RateLimitingQueue(Generic[T]):
    """FIFO of distinct items for worker threads; thread-safe, one lock."""

    def __init__(self, name: str, rate_limiter: RateLimiter | None = None, *, clock: Clock = SYSTEM_CLOCK,
                 metrics: QueueTracker | None = None, max_streak: int = DEFAULT_MAX_STREAK,
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
        # Items whose run ended within the longest batch period yet asked for, oldest first -> when it ended; and
        # items batch-added while running -> their period (parked at done()).
        self._ended: dict[T, float] = {}
        self._longest_period = 0.0
        self._batched_while_running: dict[T, float] = {}
        self._sequence = itertools.count()
        self._delay_thread: threading.Thread | None = None
        self.stats = QueueStats()
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
        self.stats.adds += 1
        if item in self._processing:
            return  # queued by done()
        self._queue.append(item)
        if self._idle_getters:
            self._ready.notify()

    def add_batched(self, item: T, period: float) -> None:
        """Queue `item` no sooner than `period` seconds after its last run ended (at once if that is past); an item
        already waiting, or parked for sooner, is left as it is."""
        with self._lock:
            if self._shutting_down or item in self._dirty:
                return
            self._longest_period = max(self._longest_period, period)
            if item in self._processing:
                # Parked when the run ends: queued now, done() would start the next run at once.
                self._batched_while_running[item] = min(period, self._batched_while_running.get(item, period))
                return
            ended = self._ended.get(item)
            self._add_after_locked(item, 0.0 if ended is None else ended + period - self._now())

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
            self.stats.queue_latency.observe(now - self._dirty.pop(item))
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
            now = self._now()
            self.stats.work_duration.observe(now - started)
            self._remember_end(item, now)
            period = self._batched_while_running.pop(item, None)
            if period is not None and item not in self._dirty:
                self._add_after_locked(item, period)
            freed = self._queue.release(item)
            if item in self._dirty:
                self._queue.append(item)
            if (freed or item in self._dirty) and self._idle_getters:
                self._ready.notify()
            if self._draining and not self._processing:
                self._ready.notify_all()

    def _remember_end(self, item: T, now: float) -> None:
        """Note when `item`'s run ended, for `add_batched`; ends older than any batch period are let go (the dict
        is in order of end, so they are at its front)."""
        if self._longest_period <= 0:
            return
        self._ended.pop(item, None)
        self._ended[item] = now
        horizon = now - self._longest_period
        while self._ended:
            oldest, when = next(iter(self._ended.items()))
            if when > horizon:
                break
            del self._ended[oldest]

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
            self.stats.retries += 1
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

    def metrics_snapshot(self) -> tuple[int, list[float], QueueStats]:
        """(depth, seconds each in-flight item has been processed, a copy of the counters) for a scrape."""
        with self._lock:
            now = self._now()
            return len(self._dirty), [now - started for started in self._processing.values()], self.stats.copy()
