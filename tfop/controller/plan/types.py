"""The planner's input and output as plain data: what the wiring passes in and what it must apply."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import Protocol

from tfop.api.constants import EventType, ReplicaType
from tfop.api.exit_codes import ExitClassLabel
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job_status import TFJobStatus, TrainerStatus
from tfop.controller.plan.observed.child import Child
from tfop.controller.plan.observed.observation import Observation
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.observed.workload import QueuePosition
from tfop.controller.plan.slots import ReplicaSlot
from tfop.objects import Object

# The kinds of child a plan creates and deletes, by the `kind` of their objects. controller/children.py maps each
# to its API resource; the planner only needs the names. A job's own kind is named by its entry's `kind`
# (children/job_child.py); POD_GROUP and NETWORK_POLICY to WORKLOAD are those entries' names, here because rules and
# tests name them; a new entry needs no line here.
POD = "Pod"
SERVICE = "Service"
POD_GROUP = "PodGroup"  # one per job, when a gang scheduler is configured
JOB = "Job"  # a batch/v1 Job per replica, with the Job backend; the pods it makes are passed as POD children too
NETWORK_POLICY = "NetworkPolicy"  # one per job that asks for it (plan/children/network_policy.py)
AUTOSCALER = "HorizontalPodAutoscaler"  # one per job whose elasticPolicy has metrics (plan/children/autoscaler.py)
DISRUPTION_BUDGET = "PodDisruptionBudget"  # one per job that asks for it (plan/children/disruption_budget.py)
TENSORBOARD = "TensorBoard"  # a Deployment, one per job that asks for it (plan/children/tensorboard.py)
TENSORBOARD_SERVICE = "TensorBoardService"  # its Service, apart from the replicas' (plan/children/tensorboard.py)
WORKLOAD = "Workload"  # Kueue's, one per queued job with tfop's own Kueue integration (plan/children/workload.py)


class ChildBodies(Protocol):
    """Builds the body of each child a plan creates, when the applier sends it (children/desired.py's
    DesiredChildren): a plan names its children by kind and slot, and never holds their bodies."""

    # Whether the job's pods mount the default PS server's script, which must exist in the namespace first.
    @property
    def needs_server_script(self) -> bool: ...

    def body(self, kind: str, slot: ReplicaSlot | None) -> Object:
        """The child of `kind` for `slot` (None: the job's own child of that kind)."""
        ...


@dataclass(frozen=True)
class CreateRefusal:
    """The apiserver refused to create a child this job's previous plan asked for. `permanent` when it refused
    the object itself (422 Invalid, 400 Bad Request: the user's template cannot make a valid pod or service, and
    sending it again gives the same answer); otherwise the cluster said "not now" (quota, throttling, a webhook
    or the server failing), and the create is retried."""

    kind: str
    slot: ReplicaSlot | None  # None: a child of the whole job (its PodGroup)
    name: str
    message: str
    permanent: bool

    def describe(self) -> str:
        """e.g. `the apiserver refused the pod of Worker 1: Pod "x" is invalid: spec.volumes[0].name: ...`."""
        whose = "the job" if self.slot is None else f"{self.slot.replica_type} {self.slot.index}"
        return f"the apiserver refused the {self.kind.lower()} of {whose}: {self.message.rstrip('.')}"


@dataclass(frozen=True)
class PlanContext:
    """Everything one plan depends on: the job as cached, the children it controls by kind, the time, the
    settings, and what the apiserver just refused of the plan made from the same state. Nothing else is read,
    so the same context always yields the same plan."""

    job: Object
    children: Mapping[str, list[Object]] = field(default_factory=lambda: MappingProxyType({}))
    now: datetime = datetime.min
    config: ControllerConfig = field(default_factory=ControllerConfig)
    refusals: tuple[CreateRefusal, ...] = ()
    # Why the configured gang scheduler cannot be used (its PodGroup CRD is not installed), or None.
    gang_problem: str | None = None
    # The cached nodes the job's pods are on, by name (a name missing: the node was deleted); None: node health is
    # not known (no node cache), and nothing is decided about it.
    nodes: Mapping[str, Object] | None = None
    # The cached Kueue ResourceFlavors the job's admitted Workload names, by name (tfop's own Kueue integration).
    flavors: Mapping[str, Object] = field(default_factory=lambda: MappingProxyType({}))
    # The cached value of the Kueue WorkloadPriorityClass the job names, by name (tfop's own Kueue integration).
    priority_classes: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    # The cached values of the scheduling.k8s.io PriorityClasses its Workload's priority may come from, by name
    # (the one its pods name, and the cluster's global default), and the name of that default (the lowest valued
    # of those marked globalDefault), if any: tfop's own Kueue integration, for a job that names no
    # WorkloadPriorityClass.
    pod_priority_classes: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    default_priority_class: str | None = None
    # The latest progress a pod of the job reported (tfop/progress/), None when none was received since start.
    progress: TrainerStatus | None = None
    # By kind, the names of the objects the job controls that another controller made (kinds whose entry has
    # `others_seen`: Kueue's TFJob adapter's Workloads), sorted; never in `children`.
    foreign: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    # The cached PersistentVolumeClaims the job's templates name, by name (a name missing: not cached); read for a
    # TensorBoard's log volume (plan/job/tensorboard.py).
    claims: Mapping[str, Object] = field(default_factory=lambda: MappingProxyType({}))
    # The cached Workload a copy MultiKueue dispatched to this cluster names (api/kueue.py PREBUILT_WORKLOAD) while no
    # controller owns it yet: tfop adopts it (plan/policies/multikueue.py). None once the job controls it (it is
    # then among the children), or when there is none.
    prebuilt_workload: Object | None = None
    # Where the job's pending Workload stands in its queue, as Kueue's visibility API last said (tfop/controller/
    # kueue_positions.py); None when it is not pending, or the API was not read (not served, not allowed).
    queue_position: QueuePosition | None = None

    def of_kind(self, kind: str) -> list[Object]:
        return self.children.get(kind, [])

    @cached_property
    def observed(self) -> Observation:
        """Every child and node viewed, once per pass: what the policies read."""
        return Observation.of(pods=self.of_kind(POD), batch_jobs=self.of_kind(JOB), services=self.of_kind(SERVICE),
                              nodes=self.nodes, own={kind: children for kind, children in self.children.items()
                                                     if kind not in (POD, JOB, SERVICE)})

    def with_pods(self, pods: tuple[PodView, ...]) -> PlanContext:
        """This context with its pods viewed again: each one's disruption decided (policies/disruptions.py), which
        every later rule then reads. The raw children stay as they are."""
        again = replace(self)
        again.__dict__["observed"] = replace(self.observed, pods=pods)  # the cached_property's own slot
        return again


@dataclass(frozen=True)
class Creation:
    """A child to create for a replica slot, or for the whole job (slot None: its PodGroup). Its body is built only
    when it is sent (see Plan.desired), so a plan for thousands of replicas holds names, not thousands of pod specs
    each listing the whole cluster."""

    kind: str
    slot: ReplicaSlot | None
    name: str
    # The uid of the pod this one replaces, force-deleted by the same plan: sent only if the apiserver answered
    # that delete by removing the pod (no finalizer holds it), else left to a later plan, which sees it gone.
    replaces: str | None = None


@dataclass(frozen=True)
class ChildPatch:
    """A merge patch for a child whose spec follows the job's (the PodGroup when the scheduling policy changes), or
    of its status (`subresource`: a Kueue Workload's quota handed back)."""

    kind: str
    name: str
    patch: Object
    subresource: str | None = None


@dataclass(frozen=True)
class PodAnnotation:
    """An annotation to set on one pod, sent with the pod's uid as a precondition and without an event: the
    checkpoint time on every live pod (policies/checkpoints.py), as frequent as it is unremarkable."""

    name: str
    uid: str
    key: str
    value: str


@dataclass(frozen=True)
class ChildRef:
    """A child to delete: the uid goes into the delete's precondition, so a newer object that took the same name
    is never deleted by mistake."""

    kind: str
    name: str
    uid: str
    # 0 removes the object without waiting for its kubelet, which is gone (a pod on a lost node); None: its own.
    grace_period_seconds: int | None = None

    @classmethod
    def of(cls, kind: str, child: Child | Object, *, force: bool = False) -> ChildRef:
        if not isinstance(child, Child):
            child = Child.of(child)
        return cls(kind, child.name, child.uid, 0 if force else None)


@dataclass(frozen=True)
class JobEvent:
    type: EventType
    reason: str
    message: str
    # Told in the operator's log and by the job's condition only, not written as an Event: news that needs no
    # debugging and would cost a write per job (the Kubeflow training operator writes none for these either).
    quiet: bool = False


@dataclass(frozen=True)
class ReplicaRestart:
    """A restart the plan saw, for the operator's log: a recreation of one pod, or containers of a replica type
    restarted in place by the kubelet (`in_place` times; the replica is the one that restarted last)."""

    replica_type: ReplicaType
    index: int | None
    exit_code: int | None  # None: the pod failed without a container exit (evicted, node lost)
    exit_class: ExitClassLabel
    restarts: int  # of this replica type so far, as counted against backoffLimit
    in_place: int = 0  # 0: the pod is recreated


@dataclass(frozen=True)
class JobCounters:
    """How much to bump each job counter. Each comes from a status transition the plan makes, so the wiring
    should bump them only once the status write succeeded: then a job is counted once, even across restarts."""

    created: int = 0
    deleted: int = 0
    successful: int = 0
    failed: int = 0
    restarted: int = 0
    # The restarts above by how the container ended: retryable, permanent, succeeded, or unknown (no exit code:
    # evicted, node lost).
    restarts_by_exit_class: tuple[tuple[ExitClassLabel, int], ...] = ()
    started_running: int = 0  # all replicas ran for the first time (never restarted before): start latency
    # Resizes the plan told (plan/policies/resize.py), by (cause, strategy).
    resizes: tuple[tuple[tuple[str, str], int], ...] = ()
    # Disruptions the plan recorded (plan/policies/disruptions.py), by reason.
    disruptions: tuple[tuple[str, int], ...] = ()


class StatusWait(enum.Enum):
    """Whether a plan's status write may wait for a later plan that will say the same and more. A status that waits
    is announced by nothing (no events, no counters): the plan that writes it derives them again from the status
    stored, which is the same one. Nothing that only this plan sees may wait: deletes, restarts and events about
    this plan's own actions (PlanDraft.event(only_this_plan=True)) never do."""

    NO = "no"
    FOR_CREATES = "for its creates"  # never written: the plan made once they are seen (they wake it) tells it
    BRIEFLY = "briefly"  # only counts and messages moved: several of these become one write


@dataclass(frozen=True)
class Plan:
    # In the order to send them: the job's own (a PodGroup), every replica's pod, then every replica's service.
    create: list[Creation] = field(default_factory=list)
    delete: list[ChildRef] = field(default_factory=list)
    patch: list[ChildPatch] = field(default_factory=list)
    annotate: list[PodAnnotation] = field(default_factory=list)  # pods' annotations, of the status as stored
    desired: ChildBodies | None = None  # builds the bodies of `create`; None when there is nothing to create
    status: TFJobStatus | None = None  # the complete new status; None when it is unchanged
    status_waits: StatusWait = StatusWait.NO
    events: list[JobEvent] = field(default_factory=list)
    requeue_after: float | None = None  # seconds until the soonest timer (deadline, TTL)
    delete_job: bool = False  # ttlSecondsAfterFinished has passed
    # Pods whose tracking finalizer goes once this plan's status is stored (replicas/finished.py); a pod the plan
    # force-deletes is released just before its delete, so that the delete removes it.
    release: list[ChildRef] = field(default_factory=list)
    # Of those, the live pods this plan deletes and whose end no status records (restarted with others, scaled
    # away): each is released as soon as its delete is sent, so that a restart together waits for no status.
    release_with_delete: frozenset[str] = frozenset()
    counters: JobCounters = field(default_factory=JobCounters)
    restarts: tuple[ReplicaRestart, ...] = ()  # seen by this plan, for the log

    def creates(self, kind: str) -> list[Creation]:
        return [creation for creation in self.create if creation.kind == kind]

    def deletes(self, kind: str) -> list[ChildRef]:
        return [ref for ref in self.delete if ref.kind == kind]
