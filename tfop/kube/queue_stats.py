"""A work queue's counters, and what a collector needs of a queue to expose them.

Apart from both the queue (tfop/kube/workqueue.py) and its Prometheus collector (tfop/kube/workqueue_metrics.py), so
that the queue counts without knowing who exposes the counts, and the collector reads any queue through
`MeteredQueue` without importing the queue: neither imports the other.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from typing import Protocol

# client-go's workqueue buckets: 10 ns to 10 s, by factors of ten.
DURATION_BUCKETS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
_BUCKET_LABELS = [repr(bound) for bound in DURATION_BUCKETS] + ["+Inf"]  # as prometheus_client writes `le`


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


class QueueStats:
    """The counters of one queue. Holds no reference to the queue, so it can outlive it (see the collector)."""

    __slots__ = ("adds", "queue_latency", "retries", "work_duration")

    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.queue_latency = _Histogram()
        self.work_duration = _Histogram()

    def merge(self, other: QueueStats) -> None:
        self.adds += other.adds
        self.retries += other.retries
        self.queue_latency.merge(other.queue_latency)
        self.work_duration.merge(other.work_duration)

    def copy(self) -> QueueStats:
        clone = QueueStats()
        clone.merge(self)
        return clone


class MeteredQueue(Protocol):
    """A queue whose counters a collector exposes."""

    @property
    def name(self) -> str: ...

    @property
    def stats(self) -> QueueStats:
        """The live counters (the collector keeps them when the queue is garbage-collected)."""
        ...

    def metrics_snapshot(self) -> tuple[int, list[float], QueueStats]:
        """(depth, seconds each in-flight item has been processed, a copy of the counters) for a scrape."""
        ...


class QueueTracker(Protocol):
    """Who exposes a queue's counters (the collector): told of each queue made with one."""

    def track(self, queue: MeteredQueue) -> None: ...
