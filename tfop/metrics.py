"""The operator's own Prometheus metrics, named as existing dashboards know them: the Kubeflow training
operator's job counters and controller-runtime's reconcile metrics. Machinery metrics (workqueue_*,
rest_client_*, leader_election_*) live with their machinery in tfop/kube. All use the default registry, which
/metrics serves."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

# `*_created` timestamps double the series of every counter and no dashboard reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]

CONTROLLER = "tfjob"

jobs_created = Counter("tf_operator_jobs_created", "TFJobs seen created, counted once per job.", ["job_namespace"])
jobs_deleted = Counter("tf_operator_jobs_deleted", "TFJobs deleted by the operator (TTL).", ["job_namespace"])
jobs_successful = Counter("tf_operator_jobs_successful", "TFJobs that succeeded.", ["job_namespace"])
jobs_failed = Counter("tf_operator_jobs_failed", "TFJobs that failed.", ["job_namespace"])
jobs_restarted = Counter("tf_operator_jobs_restarted", "Replica restarts the operator made (pod recreations).",
                         ["job_namespace"])

restarts = Counter("tf_operator_restarts", "Replica restarts (in place and recreations) by how the container "
                   "ended: retryable (128-255), permanent (1-127), succeeded (0), unknown (evicted, node lost).",
                   ["job_namespace", "exit_class"])
pods_created = Counter("tf_operator_pods_created", "Pods the operator created.", ["job_namespace"])
pods_deleted = Counter("tf_operator_pods_deleted", "Pods the operator deleted.", ["job_namespace"])
is_leader = Gauge("tf_operator_is_leader", "1 while this process leads (always 1 without --leader-elect).")
_MINUTE = 60.0
job_duration = Histogram(
    "tf_operator_job_duration_seconds", "From a job's start to its completion, by outcome.", ["outcome"],
    buckets=(_MINUTE, 5 * _MINUTE, 15 * _MINUTE, 30 * _MINUTE, 60 * _MINUTE, 2 * 3600, 4 * 3600, 8 * 3600, 12 * 3600,
             24 * 3600, 48 * 3600, 7 * 24 * 3600))
job_start_latency = Histogram(
    "tf_operator_job_start_latency_seconds", "From a job's creation until all its replicas first run.",
    buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600))

JOB_COUNTERS = {
    "created": jobs_created,
    "deleted": jobs_deleted,
    "successful": jobs_successful,
    "failed": jobs_failed,
    "restarted": jobs_restarted,
}

reconcile_total = Counter("controller_runtime_reconcile", "Reconciliations by result (success, error, requeue, "
                          "requeue_after).", ["controller", "result"])
reconcile_errors = Counter("controller_runtime_reconcile_errors", "Reconciliations that failed.", ["controller"])
reconcile_time = Histogram(
    "controller_runtime_reconcile_time_seconds", "Time per reconciliation.", ["controller"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
             1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60))
active_workers = Gauge("controller_runtime_active_workers", "Workers reconciling right now.", ["controller"])
max_concurrent = Gauge("controller_runtime_max_concurrent_reconciles", "Worker threads.", ["controller"])
