"""A TFJob as a frozen, typed value: the shape of the Go operator's API structs (TFJob -> spec -> replica specs,
runPolicy, ...), with the defaults applied and every annotation read.

Callers may rely on: a TFJobModel exists only for a job that passed validation, so every field holds a value of
its declared type and every annotation a valid option; nothing in it changes. Pod templates (and the few other
parts that are passed through: network peers, minResources, the HPA's metrics and behavior) stay raw JSON, read
and never written: a body built from one copies it first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final, Literal

from tfop.api.constants import (
    CleanPodPolicy,
    DisruptionBudgetPolicy,
    NodeLossPolicy,
    ReplicaBackendName,
    ReplicaType,
    RestartPolicy,
    RestartScope,
    SuccessPolicy,
)
from tfop.controller.plan.job.legacy_gpu import GpuRename
from tfop.controller.plan.job.tensorboard import TensorBoardAsk
from tfop.objects import Object


@dataclass(frozen=True, slots=True)
class ReplicaSpec:
    replica_type: ReplicaType
    replicas: int
    restart_policy: RestartPolicy
    template: Object  # the pod template, defaulted (TensorFlow's port) and rewritten (default PS server, GPU name)


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    min_available: int | None = None
    queue: str | None = None
    priority_class: str | None = None
    min_resources: Object | None = None
    schedule_timeout_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class RunPolicy:
    clean_pod_policy: CleanPodPolicy  # Running when left out
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    scheduling_policy: SchedulingPolicy | None = None
    suspend: bool = False
    managed_by: str | None = None


@dataclass(frozen=True, slots=True)
class ElasticPolicy:
    """spec.elasticPolicy: the bounds on the workers, and what the job's HPA scales them on. The metrics and
    behavior are autoscaling/v2 MetricSpecs and HorizontalPodAutoscalerBehavior, passed to the HPA as given."""

    min_replicas: int
    max_replicas: int
    metrics: tuple[Object, ...] = ()  # none: no HPA
    behavior: Object | None = None


@dataclass(frozen=True, slots=True)
class TFJobSpec:
    replica_specs: Mapping[ReplicaType, ReplicaSpec]  # by replica type, in the order the spec lists them
    run_policy: RunPolicy
    success_policy: SuccessPolicy | None = None  # AllWorkers, or the default (the chief, else worker 0)
    enable_dynamic_worker: bool = False
    elastic_policy: ElasticPolicy | None = None
    managed_by: str | None = None  # spec.managedBy: the controller that runs the job, as runPolicy.managedBy

    def replicas(self, replica_type: ReplicaType) -> int:
        """How many replicas of `replica_type` the job asks for; 0 for a type it does not have."""
        replica = self.replica_specs.get(replica_type)
        return replica.replicas if replica is not None else 0

    def total_replicas(self) -> int:
        return sum(replica.replicas for replica in self.replica_specs.values())


@dataclass(frozen=True, slots=True)
class JobMeta:
    name: str
    namespace: str
    uid: str
    generation: int | None = None
    # Who last wrote each replica type's `replicas` (from managedFields), by replica type: the cache keeps only
    # that of managedFields (controller/cache_transforms.py), as metadata[REPLICAS_WRITERS].
    replicas_writers: Mapping[str, ReplicasWriter] = field(default_factory=dict)
    # The Workload MultiKueue made for this job, a copy it dispatched to this (worker) cluster (api/kueue.py): the job's
    # Workload is that one, never one tfop makes.
    prebuilt_workload: str | None = None


REPLICAS_WRITERS = "tfop.replicasWriters"  # not a Kubernetes field: the cache's own, never sent to the apiserver


@dataclass(frozen=True, slots=True)
class ReplicasWriter:
    """The managedFields entry that owns a replica count: its field manager (a client's fieldManager, else its user
    agent up to the first "/"), its operation (Update or Apply) and its subresource ("scale" for a write of the
    scale subresource, None for one of the TFJob itself)."""

    manager: str
    operation: str
    subresource: str | None = None


@dataclass(frozen=True, slots=True)
class JobNodePolicy:
    """What the job does with a replica on an unhealthy node (plan/policies/node_loss.py)."""

    policy: NodeLossPolicy
    grace: timedelta


@dataclass(frozen=True, slots=True)
class NetworkIsolation:
    isolated: bool = False
    peers: tuple[Object, ...] = ()  # the NetworkPolicyPeers let in besides the job's own pods


@dataclass(frozen=True, slots=True)
class CapacityResize:
    """The capacity auto-scaler's note of the Worker count it set (tfop.kubeflow.org/resize-reason)."""

    to: int  # the count it set: a resize to another count was asked by someone else
    reason: str  # e.g. "Worker 4 -> 2: ns/b's pods waited 30 s for cpu"


WORKLOAD_PRIORITY_CLASS: Final = "WorkloadPriorityClass"  # Kueue's, named by the job's label
POD_PRIORITY_CLASS: Final = "PriorityClass"  # scheduling.k8s.io's, named by the job's pods


@dataclass(frozen=True, slots=True)
class PriorityClassRef:
    """The class a queued job's Workload takes its priority from (tfop's own Kueue integration): a Kueue
    WorkloadPriorityClass, or a scheduling.k8s.io PriorityClass (the pods', or the cluster's global default)."""

    kind: Literal["WorkloadPriorityClass", "PriorityClass"]
    name: str


@dataclass(frozen=True, slots=True)
class JobOptions:
    """What the job's annotations and the operator's defaults decide for it, one field per option."""

    replica_backend: ReplicaBackendName  # plan/replicas/backends.py
    restart_scope: RestartScope  # plan/policies/restart_scope.py
    node_policy: JobNodePolicy
    evaluator_grace: timedelta  # plan/policies/evaluator.py
    unknown_scheduling_grace: timedelta  # plan/policies/unknown_scheduling.py
    isolation: NetworkIsolation = field(default_factory=NetworkIsolation)  # plan/policies/network_isolation.py
    gpu_renamed: tuple[GpuRename, ...] = ()  # legacy GPU requests renamed in the templates
    unqueued: str | None = None  # why the job runs outside the Kueue queue it names (api/kueue.py)
    # The Kueue LocalQueue tfop's own integration queues the job in (plan/policies/kueue_admission.py); None: the
    # job names none, or Kueue's adapter queues it.
    own_queue: str | None = None
    # The class its Workload's priority comes from, with the own integration: the WorkloadPriorityClass its label
    # names, else the PriorityClass its pods name (api/kueue.py), else (filled in by the planner) the cluster's
    # global default PriorityClass; None: none, priority 0.
    own_priority_class: PriorityClassRef | None = None
    # That class's value, as the cluster has it: not in the job, so filled in by the planner (kueue_admission.py).
    own_priority: int | None = None
    capacity_resize: CapacityResize | None = None  # plan/policies/resize.py
    disruption_budget: DisruptionBudgetPolicy = "None"  # plan/children/disruption_budget.py
    tensorboard: TensorBoardAsk | None = None  # plan/job/tensorboard.py; None: the job asks for none


@dataclass(frozen=True, slots=True)
class TFJobModel:
    metadata: JobMeta
    spec: TFJobSpec
    options: JobOptions
