"""The work queues' metrics, under the `workqueue_*` names dashboards know.

They are plain numbers each queue updates under its own lock (`QueueStats`, tfop/kube/queue_stats.py), turned
into samples only when Prometheus scrapes (`WorkqueueCollector`), because prometheus_client's own metric objects
take a lock per update and would cost more than the queue operation itself. Computing the in-flight gauges
(unfinished work, longest running processor) at scrape time also makes them exact without a ticking thread. Queues
with the same name share one series, summed.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from tfop.kube.queue_stats import MeteredQueue, QueueStats


class WorkqueueCollector(Collector):
    """Exposes every queue's numbers per queue name on scrape.

    Counters must never go down, so when a queue is garbage-collected its counters are folded into per-name
    totals (a finalizer appends them to a list, which needs no lock and so cannot deadlock with a scrape).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: weakref.WeakSet[MeteredQueue] = weakref.WeakSet()
        self._retired: list[tuple[str, QueueStats]] = []
        self._totals: dict[str, QueueStats] = {}

    def track(self, queue: MeteredQueue) -> None:
        with self._lock:
            self._live.add(queue)
            self._totals.setdefault(queue.name, QueueStats())
        weakref.finalize(queue, self._retired.append, (queue.name, queue.stats))

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
            queue_depth, in_flight, stats = queue.metrics_snapshot()
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
