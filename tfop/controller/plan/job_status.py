"""The TFJob's status as a typed value: parsed once from the status the job has, produced by the planner, and
turned into JSON by the applier alone (`to_json`).

A status is shared with other writers (the Kubeflow training operator's, one edited by hand), so nothing in it is
lost or reordered: a field tfop does not know, or one whose value is not of its type, is kept as it was (`extra`);
a value read leniently (a list with a junk entry, a timestamp spelled otherwise) is written back as it was stored
while the plan leaves it as read (`stored`); and the keys keep the order the stored status has them. So a status
read and written unchanged is the same JSON, byte for byte.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal

from tfop.api.constants import (
    CONDITION_STATUSES,
    JOB_PHASES,
    JOB_STATES,
    NAMINGS,
    REPLICA_BACKENDS,
    ChildNamingScheme,
    ConditionStatus,
    JobPhase,
    JobState,
    ReplicaBackendName,
)
from tfop.api.fields import integer, one_of
from tfop.api.timestamps import format_time, parse_time
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.json_record import (
    NOTHING,
    JsonRecord,
    Key,
    dump_record,
    enum_of,
    parse_record,
    same,
    text,
    uids,
)
from tfop.objects import Object


@dataclass(frozen=True, slots=True)
class RecreatedExit:
    """The exit that made tfop recreate a replica's pod (replicas/recreated_exits.py)."""

    index: int
    exit_code: int
    reason: str = ""
    finished_at: str = ""  # "" when the kubelet did not say

    @classmethod
    def read(cls, value: object) -> RecreatedExit | None:
        """None for an entry without an integer index and exit code."""
        entry = value if isinstance(value, dict) else {}
        index, code = integer(entry.get("index")), integer(entry.get("exitCode"))
        if index is None or code is None:
            return None
        return cls(index, code, text(entry.get("reason")) or "", text(entry.get("finishedAt")) or "")

    def to_json(self) -> Object:
        exit_: Object = {"index": self.index, "exitCode": self.exit_code, "reason": self.reason}
        return {**exit_, "finishedAt": self.finished_at} if self.finished_at else exit_


def _exits(value: object) -> tuple[RecreatedExit, ...] | None:
    """The well-formed entries; the others are dropped when the list is next written."""
    if not isinstance(value, list):
        return None
    return tuple(entry for entry in map(RecreatedExit.read, value) if entry is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaStatus(JsonRecord):
    """replicaStatuses[type]: one replica type's pods by state, its restarts and what the ledger keeps."""

    active: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    restarts: int | None = None  # counted against backoffLimit
    retired_restarts: int | None = None  # restarts of pods already gone
    retired_pod_uids: tuple[str, ...] | None = None  # of those, the pods the cache may still show
    recreated_exits: tuple[RecreatedExit, ...] | None = None
    selector: str | None = None  # the label selector of the type's pods (the scale subresource's)
    # The indexes that succeeded, and that failed for good, as ranges ("0,2-5"): replicas/finished.py.
    succeeded_indexes: str | None = None
    failed_indexes: str | None = None

    @classmethod
    def from_json(cls, raw: Object) -> ReplicaStatus:
        return parse_record(cls, _REPLICA_KEYS, raw)

    def to_json(self) -> Object:
        return dump_record(self, _REPLICA_KEYS)


_REPLICA_KEYS: tuple[Key[Any], ...] = (
    *(Key(name, name, integer, same) for name in ("active", "succeeded", "failed", "restarts")),
    Key("succeededIndexes", "succeeded_indexes", text, same),
    Key("failedIndexes", "failed_indexes", text, same),
    Key("retiredRestarts", "retired_restarts", integer, same),
    Key("retiredPodUIDs", "retired_pod_uids", uids, list),
    Key("recreatedExits", "recreated_exits", _exits, lambda exits: [entry.to_json() for entry in exits]),
    Key("selector", "selector", text, same),
)


class ResizeCause(enum.Enum):
    """Who changed the Worker count (policies/resize.py)."""

    USER = "User"  # kubectl scale, an edit of the spec, any client of the scale subresource
    HPA = "HPA"  # the HorizontalPodAutoscaler tfop made from the job's elasticPolicy
    CAPACITY = "Capacity"  # the capacity auto-scaler (tfop/controller/capacity), its reason in the annotation


class ResizeStrategy(enum.Enum):
    """How TensorFlow followed a resize: every live replica restarted, or the workers added or removed in place."""

    RESTART = "Restart"
    IN_PLACE = "InPlace"


@dataclass(frozen=True, slots=True, kw_only=True)
class LastResize(JsonRecord):
    """lastResize: the latest Worker count change, as its Resized event told it (policies/resize.py)."""

    from_: int | None = None
    to: int | None = None
    cause: ResizeCause | None = None
    strategy: ResizeStrategy | None = None
    time: datetime | None = None
    message: str | None = None

    @classmethod
    def from_json(cls, raw: Object) -> LastResize:
        return parse_record(cls, _RESIZE_KEYS, raw)

    def to_json(self) -> Object:
        return dump_record(self, _RESIZE_KEYS)


_RESIZE_KEYS: tuple[Key[Any], ...] = (
    Key("from", "from_", integer, same), Key("to", "to", integer, same),
    Key("cause", "cause", enum_of(ResizeCause), lambda cause: cause.value),
    Key("strategy", "strategy", enum_of(ResizeStrategy), lambda strategy: strategy.value),
    Key("time", "time", parse_time, format_time), Key("message", "message", text, same),
)


# Who told tfop of a disruption: the pod's DisruptionTarget condition, a drain of its node, its node itself (lost,
# unhealthy, reclaimed), or a peer's disruption breaking a synchronous job's collective (policies/disruptions.py).
DisruptionSource = Literal["DisruptionTarget", "NodeDrain", "Node", "Peer"]
DISRUPTION_SOURCES: tuple[DisruptionSource, ...] = ("DisruptionTarget", "NodeDrain", "Node", "Peer")


@dataclass(frozen=True, slots=True, kw_only=True)
class DisruptionRecord(JsonRecord):
    """One entry of `disruptions`: a replica the cluster took, as its ReplicaDisrupted event told it
    (policies/disruptions.py). Kept while its pod is seen or its peers' window is open, and the latest few beyond."""

    replica: str | None = None  # e.g. Worker 1
    pod_uid: str | None = None
    reason: str | None = None  # e.g. EvictionByEvictionAPI, NodeDrained, NodeLost, ReclaimNotice
    source: DisruptionSource | None = None
    message: str | None = None
    time: datetime | None = None  # when it began
    # Restart scope Job: until then, a peer's failure is this disruption's, not counted.
    peers_until: datetime | None = None

    @classmethod
    def from_json(cls, raw: Object) -> DisruptionRecord:
        return parse_record(cls, _DISRUPTION_KEYS, raw)

    def to_json(self) -> Object:
        return dump_record(self, _DISRUPTION_KEYS)


_DISRUPTION_KEYS: tuple[Key[Any], ...] = (
    Key("replica", "replica", text, same), Key("podUID", "pod_uid", text, same),
    Key("reason", "reason", text, same),
    Key("source", "source", lambda value: one_of(value, DISRUPTION_SOURCES), same),
    Key("message", "message", text, same), Key("time", "time", parse_time, format_time),
    Key("peersUntil", "peers_until", parse_time, format_time),
)


def _disruptions(value: object) -> tuple[DisruptionRecord, ...] | None:
    """The entries that are objects naming a pod; the others are dropped when the list is next written."""
    if not isinstance(value, list):
        return None
    return tuple(DisruptionRecord.from_json(entry) for entry in value
                 if isinstance(entry, dict) and isinstance(entry.get("podUID"), str))


def _replica_statuses(value: object) -> Mapping[str, ReplicaStatus] | None:
    """By replica type; an entry that is not an object reads as an empty one."""
    if not isinstance(value, dict):
        return None
    return MappingProxyType({replica_type: ReplicaStatus.from_json(entry if isinstance(entry, dict) else {})
                             for replica_type, entry in value.items()})


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition(JsonRecord):
    """One of the job's conditions (metav1.Condition's shape, plus lastUpdateTime); status.py sets them."""

    type: str  # Created, Running, Restarting, Suspended, Succeeded, Failed
    status: ConditionStatus | None = None
    reason: str | None = None
    message: str | None = None
    observed_generation: int | None = None  # the spec's metadata.generation the condition was computed from
    last_transition_time: datetime | None = None  # when the status last flipped
    last_update_time: datetime | None = None  # when anything of it last changed

    @classmethod
    def from_json(cls, raw: Object) -> Condition:
        return parse_record(cls, _CONDITION_KEYS, raw)

    def to_json(self) -> Object:
        return dump_record(self, _CONDITION_KEYS)


_CONDITION_KEYS: tuple[Key[Any], ...] = (
    Key("type", "type", text, same),
    Key("status", "status", lambda value: one_of(value, CONDITION_STATUSES), same),
    Key("reason", "reason", text, same), Key("message", "message", text, same),
    Key("observedGeneration", "observed_generation", integer, same),
    Key("lastTransitionTime", "last_transition_time", parse_time, format_time),
    Key("lastUpdateTime", "last_update_time", parse_time, format_time),
)


def _conditions(value: object) -> tuple[Condition, ...] | None:
    """The well-formed conditions (objects with a type); the others are dropped when the list is next written."""
    if not isinstance(value, list):
        return None
    return tuple(Condition.from_json(entry) for entry in value
                 if isinstance(entry, dict) and isinstance(entry.get("type"), str))


def _resize(value: object) -> LastResize | None:
    return LastResize.from_json(value) if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class Metric:
    """One named value a training program reported, as text (the Kubeflow protocol sends every value so)."""

    name: str
    value: str


def _metrics(value: object) -> tuple[Metric, ...] | None:
    """The well-formed entries (a name and a value, both strings); the others are dropped when next written."""
    if not isinstance(value, list):
        return None
    return tuple(Metric(entry["name"], entry["value"]) for entry in value if isinstance(entry, dict)
                 and isinstance(entry.get("name"), str) and isinstance(entry.get("value"), str))


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainerStatus(JsonRecord):
    """trainerStatus: the latest progress a pod of the job reported (tfop/progress/, docs/tfjob/progress.md), in
    the shape of Kubeflow Trainer's TrainJob field, plus what tfop derives from it (the step and epoch from the
    metrics of those names, when the job should end, and which pod said so)."""

    progress_percentage: int | None = None  # 0-100
    estimated_remaining_seconds: int | None = None  # as of last_updated_time
    estimated_completion_time: datetime | None = None  # last_updated_time + the remaining seconds (the ETA column)
    current_step: int | None = None
    total_steps: int | None = None
    current_epoch: int | None = None
    total_epochs: int | None = None
    metrics: tuple[Metric, ...] | None = None  # the last values, in the order reported
    last_updated_time: datetime | None = None  # when tfop received the report (never the pod's clock)
    reported_by: str | None = None  # the pod whose token signed the report

    @classmethod
    def from_json(cls, raw: Object) -> TrainerStatus:
        return parse_record(cls, _TRAINER_KEYS, raw)

    def to_json(self) -> Object:
        return dump_record(self, _TRAINER_KEYS)

    def content(self) -> TrainerStatus:
        """The report without its JSON bookkeeping, to compare with another."""
        return replace(self, extra=NOTHING, order=(), stored=NOTHING)


_TRAINER_KEYS: tuple[Key[Any], ...] = (
    *(Key(name, attribute, integer, same) for name, attribute in (
        ("progressPercentage", "progress_percentage"), ("estimatedRemainingSeconds", "estimated_remaining_seconds"))),
    Key("estimatedCompletionTime", "estimated_completion_time", parse_time, format_time),
    *(Key(name, attribute, integer, same) for name, attribute in (
        ("currentStep", "current_step"), ("totalSteps", "total_steps"), ("currentEpoch", "current_epoch"),
        ("totalEpochs", "total_epochs"))),
    Key("metrics", "metrics", _metrics, lambda metrics: [{"name": m.name, "value": m.value} for m in metrics]),
    Key("lastUpdatedTime", "last_updated_time", parse_time, format_time),
    Key("reportedBy", "reported_by", text, same),
)


def _trainer(value: object) -> TrainerStatus | None:
    return TrainerStatus.from_json(value) if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class TFJobStatus(JsonRecord):
    """A TFJob's status. Each field None: the status does not have it."""

    conditions: tuple[Condition, ...] | None = None
    replica_statuses: Mapping[str, ReplicaStatus] | None = None  # by replica type
    replica_summary: str | None = None  # e.g. 3/4, or 4/4 succeeded
    start_time: datetime | None = None
    completion_time: datetime | None = None
    last_reconcile_time: datetime | None = None  # stamped only with a real change
    child_naming: ChildNamingScheme | None = None  # plan/children/naming.py
    replica_backend: ReplicaBackendName | None = None  # plan/replicas/backends.py
    runtime_id: str | None = None
    worker_replicas: int | None = None  # the Worker count the pods are made for (policies/resize.py)
    last_resize: LastResize | None = None
    disruptions: tuple[DisruptionRecord, ...] | None = None  # the latest, oldest first (policies/disruptions.py)
    pod_group_phase: str | None = None  # the job's PodGroup's phase, for kubectl get -o wide
    phase: JobPhase | None = None  # the older API's phase
    state: JobState | None = None  # the STATE column
    reason: str | None = None  # the reason of the condition that decided phase and state
    trainer_status: TrainerStatus | None = None  # the progress the job's pods report (policies/progress.py)
    last_checkpoint_time: datetime | None = None  # when the program last saved, as reported (policies/checkpoints.py)

    @classmethod
    def from_json(cls, raw: object) -> TFJobStatus:
        """The status as stored; anything but a JSON object reads as an empty status."""
        return parse_record(cls, _STATUS_KEYS, raw) if isinstance(raw, dict) else cls()

    def to_json(self) -> Object:
        return dump_record(self, _STATUS_KEYS)

    def replica(self, replica_type: str) -> ReplicaStatus | None:
        return (self.replica_statuses or {}).get(replica_type)

    def without_reconcile_time(self) -> TFJobStatus:
        return replace(self, last_reconcile_time=None)


_STATUS_KEYS: tuple[Key[Any], ...] = (
    Key("conditions", "conditions", _conditions, lambda conditions: [entry.to_json() for entry in conditions]),
    Key("replicaStatuses", "replica_statuses", _replica_statuses,
         lambda statuses: {replica_type: entry.to_json() for replica_type, entry in statuses.items()}),
    Key("replicaSummary", "replica_summary", text, same),
    Key("startTime", "start_time", parse_time, format_time),
    Key("completionTime", "completion_time", parse_time, format_time),
    Key("lastReconcileTime", "last_reconcile_time", parse_time, format_time),
    Key("childNaming", "child_naming", lambda value: one_of(value, NAMINGS), same),
    Key("replicaBackend", "replica_backend", lambda value: one_of(value, REPLICA_BACKENDS), same),
    Key("runtimeId", "runtime_id", text, same),
    Key("workerReplicas", "worker_replicas", integer, same),
    Key("lastResize", "last_resize", _resize, lambda resize: resize.to_json()),
    Key("disruptions", "disruptions", _disruptions, lambda entries: [entry.to_json() for entry in entries]),
    Key("podGroupPhase", "pod_group_phase", text, same),
    Key("phase", "phase", lambda value: one_of(value, JOB_PHASES), same),
    Key("state", "state", lambda value: one_of(value, JOB_STATES), same),
    Key("reason", "reason", text, same),
    Key("trainerStatus", "trainer_status", _trainer, lambda trainer: trainer.to_json()),
    Key("lastCheckpointTime", "last_checkpoint_time", parse_time, format_time),
)
