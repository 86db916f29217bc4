"""The machinery's metric families under client-go's and controller-runtime's names, so existing dashboards
work unchanged: rest_client_*, leader_election_master_status, workqueue_* and controller_runtime_*.

Nothing is registered at import. The operator makes one registry at start and hands this bundle to every piece
of machinery; a component given none makes a private, unregistered bundle, so a test reads its own samples
without seeing another test's.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from tfop.kube.workqueue_metrics import WorkqueueCollector

_RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
                      0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40,
                      50, 60)


EVENTS_DROPPED_REASONS = ("queue_full", "spam_filter", "api_error", "stopped")


@dataclass(frozen=True)
class KubeMetrics:
    requests: Counter
    request_duration: Histogram
    leader: Gauge
    events_dropped: Counter
    workqueues: WorkqueueCollector
    reconcile_total: Counter
    reconcile_errors: Counter
    reconcile_time: Histogram
    active_workers: Gauge
    max_concurrent: Gauge

    @classmethod
    def create(cls, registry: CollectorRegistry | None = None) -> KubeMetrics:
        """Every family, registered in `registry` (None: registered nowhere). Series with label values known
        now start at 0 (the runtime adds its controller's when it is made)."""
        workqueues = WorkqueueCollector()
        if registry is not None:
            registry.register(workqueues)
        metrics = cls(
            requests=Counter("rest_client_requests", "HTTP requests to the apiserver, by status code and method.",
                             ["code", "method"], registry=registry),
            request_duration=Histogram(
                "rest_client_request_duration_seconds", "Request latency to the apiserver, by verb.", ["verb"],
                buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0), registry=registry),
            leader=Gauge("leader_election_master_status", "1 while this process holds the named lease, else 0.",
                         ["name"], registry=registry),
            events_dropped=Counter(
                "tfop_events_dropped",
                "Events not written to the API, by why: queue_full, spam_filter, api_error, stopped.",
                ["reason"], registry=registry),
            workqueues=workqueues,
            reconcile_total=Counter(
                "controller_runtime_reconcile", "Reconciliations by result (success, error, requeue_after).",
                ["controller", "result"], registry=registry),
            reconcile_errors=Counter("controller_runtime_reconcile_errors", "Reconciliations that failed.",
                                     ["controller"], registry=registry),
            reconcile_time=Histogram("controller_runtime_reconcile_time_seconds", "Time per reconciliation.",
                                     ["controller"], buckets=_RECONCILE_BUCKETS, registry=registry),
            active_workers=Gauge("controller_runtime_active_workers", "Workers reconciling right now.",
                                 ["controller"], registry=registry),
            max_concurrent=Gauge("controller_runtime_max_concurrent_reconciles", "Worker threads.",
                                 ["controller"], registry=registry),
        )
        for reason in EVENTS_DROPPED_REASONS:
            metrics.events_dropped.labels(reason)
        return metrics
