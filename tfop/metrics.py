"""The operator's own metrics.

- The job counters are the Kubeflow training operator's (v1.x, pkg/common/metrics.go):
  `training_operator_jobs_{created,deleted,successful,failed,restarted}_total{job_namespace,framework}`, with
  framework="tensorflow", so dashboards and alerts built on that operator keep working after the switch. They
  are exported under that name only: the older tf-operator's `tf_operator_jobs_*_total`, which tfop exported
  before, are gone (docs/install/from-go-operator.md).
- What tfop adds keeps its `tf_operator_` prefix, as no other operator exports it: restarts by exit class,
  pods created and deleted, job duration and start latency, leadership.

The machinery's families (workqueue_*, rest_client_*, controller_runtime_*, leader_election_*) are in
tfop/kube/metrics.py. Both are made in the registry the process creates at start: nothing is registered at
import, and tests make their own.

Every series whose label values are known in advance exists from the start at 0 (the namespaces given with
--namespace, or each namespace once its first TFJob is seen), so `rate()` and `increase()` in alerts have a
baseline instead of a series that appears with its first increment."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)

from tfop.api.exit_codes import EXIT_CLASS_LABELS
from tfop.kube.metrics import KubeMetrics

_MINUTE = 60.0
OUTCOMES = ("succeeded", "failed")
# A resize's (cause, strategy), as plan/policies/resize.py names them: who asked, and how TensorFlow followed.
RESIZES = tuple((cause, strategy) for cause in ("User", "HPA", "Capacity") for strategy in ("Restart", "InPlace"))
# The reasons a replica's disruption is counted under from the start (plan/policies/disruptions.py): the
# DisruptionTarget condition's, then tfop's own. Another reason a newer cluster gives is counted as it comes.
DISRUPTION_REASONS = ("PreemptionByScheduler", "EvictionByEvictionAPI", "DeletionByTaintManager",
                      "TerminationByKubelet", "NodeDrained", "NodeLost", "NodeUnhealthy", "ReclaimNotice")
FRAMEWORK = "tensorflow"  # the `framework` label of the job counters, as the Kubeflow training operator sets it


def create_registry() -> CollectorRegistry:
    """The registry /metrics serves, with the process, platform and GC families every Python exporter has (the
    dashboard's CPU, memory and file descriptor panels read them). `*_created` timestamps double the series of
    every counter and no dashboard reads them, so they are turned off (a process-wide setting)."""
    disable_created_metrics()  # type: ignore[no-untyped-call]
    registry = CollectorRegistry()
    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(collector)
    return registry


@dataclass(frozen=True)
class OperatorMetrics:
    jobs_created: Counter
    jobs_deleted: Counter
    jobs_successful: Counter
    jobs_failed: Counter
    jobs_restarted: Counter
    restarts: Counter
    resizes: Counter
    disruptions: Counter
    children_created: dict[str, Counter]  # by child kind; only the kinds dashboards count
    children_deleted: dict[str, Counter]
    finished_pods_gone: Counter
    is_leader: Gauge
    job_duration: Histogram
    job_start_latency: Histogram
    kube: KubeMetrics

    @property
    def job_counters(self) -> dict[str, Counter]:
        """By the field names of JobCounters; labelled (job_namespace, FRAMEWORK)."""
        return {"created": self.jobs_created, "deleted": self.jobs_deleted, "successful": self.jobs_successful,
                "failed": self.jobs_failed, "restarted": self.jobs_restarted}

    def know_namespace(self, namespace: str) -> None:
        """Every per-namespace series of `namespace`, at 0 if new (idempotent and cheap: call it freely)."""
        for counter in self.job_counters.values():
            counter.labels(namespace, FRAMEWORK)
        for counter in (*self.children_created.values(), *self.children_deleted.values(), self.finished_pods_gone):
            counter.labels(namespace)
        for exit_class in EXIT_CLASS_LABELS:
            self.restarts.labels(namespace, exit_class)
        for cause, strategy in RESIZES:
            self.resizes.labels(namespace, cause, strategy)
        for reason in DISRUPTION_REASONS:
            self.disruptions.labels(namespace, reason)

    @classmethod
    def create(cls, registry: CollectorRegistry | None = None, *, namespaces: tuple[str, ...] | list[str] = (),
               ) -> OperatorMetrics:
        def counter(name: str, doc: str, *labels: str) -> Counter:
            return Counter(name, doc, list(labels), registry=registry)

        def job_counter(what: str, doc: str) -> Counter:
            return counter(f"training_operator_jobs_{what}", doc, "job_namespace", "framework")

        metrics = cls(
            jobs_created=job_counter("created", "TFJobs seen created, counted once per job."),
            jobs_deleted=job_counter("deleted", "TFJobs deleted by the operator (TTL)."),
            jobs_successful=job_counter("successful", "TFJobs that succeeded."),
            jobs_failed=job_counter("failed", "TFJobs that failed."),
            jobs_restarted=job_counter("restarted", "Replica restarts (in place and recreations)."),
            restarts=counter("tf_operator_restarts", "Replica restarts (in place and recreations) by how the "
                             "container ended: retryable (128-255), permanent (1-127), succeeded (0), unknown "
                             "(evicted, node lost).", "job_namespace", "exit_class"),
            resizes=counter("tf_operator_resizes", "Changes of a job's Worker count, by who asked (User, HPA, "
                            "Capacity) and how TensorFlow followed (Restart: every replica restarted together; "
                            "InPlace: workers joined or left).", "job_namespace", "cause", "strategy"),
            disruptions=counter("tf_operator_replica_disruptions", "Replicas the cluster took, replaced without "
                                "counting a restart, by reason: the pod's DisruptionTarget reason "
                                "(PreemptionByScheduler, EvictionByEvictionAPI, ...), NodeDrained, NodeLost, "
                                "NodeUnhealthy, ReclaimNotice.", "job_namespace", "reason"),
            children_created={"Pod": counter("tf_operator_pods_created", "Pods the operator created.",
                                             "job_namespace"),
                              "Job": counter("tf_operator_replica_jobs_created",
                                             "batch/v1 Jobs the operator created for replicas (Job backend).",
                                             "job_namespace")},
            children_deleted={"Pod": counter("tf_operator_pods_deleted", "Pods the operator deleted.",
                                             "job_namespace"),
                              "Job": counter("tf_operator_replica_jobs_deleted",
                                             "batch/v1 Jobs of replicas the operator deleted (Job backend).",
                                             "job_namespace")},
            finished_pods_gone=counter("tf_operator_finished_replica_pods_gone",
                                       "Pods of replicas that had succeeded, gone while their job ran (the pod "
                                       "garbage collector, a user): the replicas stay finished, not made again.",
                                       "job_namespace"),
            is_leader=Gauge("tf_operator_is_leader", "1 while this process leads (always 1 without --leader-elect).",
                            registry=registry),
            job_duration=Histogram(
                "tf_operator_job_duration_seconds", "From a job's start to its completion, by outcome.", ["outcome"],
                buckets=(_MINUTE, 5 * _MINUTE, 15 * _MINUTE, 30 * _MINUTE, 60 * _MINUTE, 2 * 3600, 4 * 3600,
                         8 * 3600, 12 * 3600, 24 * 3600, 48 * 3600, 7 * 24 * 3600), registry=registry),
            job_start_latency=Histogram(
                "tf_operator_job_start_latency_seconds", "From a job's creation until all its replicas first run.",
                buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600), registry=registry),
            kube=KubeMetrics.create(registry),
        )
        for namespace in namespaces:
            metrics.know_namespace(namespace)
        for outcome in OUTCOMES:
            metrics.job_duration.labels(outcome)
        return metrics
