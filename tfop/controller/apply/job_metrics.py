"""The operator's job metrics that a plan's transitions move, counted once their status is stored."""

from __future__ import annotations

from datetime import datetime

from tfop.api.timestamps import parse_time
from tfop.controller.plan.types import (
    Plan,
)
from tfop.metrics import FRAMEWORK, OperatorMetrics
from tfop.objects import Object


def count_transitions(metrics: OperatorMetrics, job: Object, plan: Plan, now: datetime) -> None:
    """The metrics a plan's transitions move."""
    namespace = job["metadata"]["namespace"]
    counters = plan.counters
    for name, metric in metrics.job_counters.items():
        amount = getattr(counters, name)
        if amount and name != "deleted":  # counted by _delete_job, which knows whether it deleted
            metric.labels(namespace, FRAMEWORK).inc(amount)
    for exit_class, amount in counters.restarts_by_exit_class:
        metrics.restarts.labels(namespace, exit_class).inc(amount)
    for (cause, strategy), amount in counters.resizes:
        metrics.resizes.labels(namespace, cause, strategy).inc(amount)
    for reason, amount in counters.disruptions:
        metrics.disruptions.labels(namespace, reason).inc(amount)
    if (counters.successful or counters.failed) and plan.status is not None:
        started, completed = plan.status.start_time, plan.status.completion_time
        if started is not None and completed is not None:
            outcome = "succeeded" if counters.successful else "failed"
            metrics.job_duration.labels(outcome).observe(max(0.0, (completed - started).total_seconds()))
    if counters.started_running:
        created = parse_time(job["metadata"].get("creationTimestamp"))
        if created is not None:
            metrics.job_start_latency.observe(max(0.0, (now - created).total_seconds()))
