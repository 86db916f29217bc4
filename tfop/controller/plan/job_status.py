"""The TFJob's status as a typed value: parsed once from the status the job has, produced by the planner, and
turned into JSON by the applier alone (`to_json`).

A status is shared with other writers (the Kubeflow training operator's, one edited by hand), so nothing in it is
lost or reordered: a field tfop does not know, or one whose value is not of its type, is kept as it was (`extra`);
a value read leniently (a list with a junk entry, a timestamp spelled otherwise) is written back as it was stored
while the plan leaves it as read (`stored`); and the keys keep the order the stored status has them. So a status
read and written unchanged is the same JSON, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar

from tfop.api.constants import NAMINGS, REPLICA_BACKENDS, ChildNamingScheme, ReplicaBackendName
from tfop.api.fields import integer, one_of
from tfop.api.timestamps import format_time, parse_time
from tfop.controller.plan.frozen import make, replace
from tfop.objects import Object

_NOTHING: Mapping[str, Any] = MappingProxyType({})
_Value = TypeVar("_Value")
_Record = TypeVar("_Record", "ReplicaStatus", "TFJobStatus", "LastResize", "Condition", "DisruptionRecord",
                   "TrainerStatus")


@dataclass(frozen=True, slots=True)
class _Key(Generic[_Value]):
    """One JSON key of a record: its attribute, and how a value is read (None: not of its type) and written."""

    name: str
    attribute: str
    read: Callable[[object], _Value | None]
    write: Callable[[_Value], object]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _uids(value: object) -> tuple[str, ...] | None:
    return tuple(uid for uid in value if isinstance(uid, str)) if isinstance(value, list) else None


def _same(value: object) -> object:
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class _Json:
    # What the record does not type, as stored (another writer's fields, values not of their type).
    extra: Mapping[str, Any] = field(default_factory=lambda: _NOTHING)
    # The keys as the stored JSON had them: a record written back keeps that order, new keys after.
    order: tuple[str, ...] = field(default=(), compare=False)
    # Typed keys whose stored JSON is not what their value writes (read leniently), as stored.
    stored: Mapping[str, Any] = field(default_factory=lambda: _NOTHING, compare=False)


def _parse(cls: type[_Record], keys: tuple[_Key[Any], ...], raw: Object) -> _Record:
    by_name = {key.name: key for key in keys}
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    stored: dict[str, Any] = {}
    for name, value in raw.items():
        key = by_name.get(name)
        typed = key.read(value) if key is not None else None
        if key is None or typed is None:
            extra[name] = value
            continue
        values[key.attribute] = typed
        if key.write(typed) != value:
            stored[name] = value
    return make(cls, **values, extra=MappingProxyType(extra) if extra else _NOTHING, order=tuple(raw),
                stored=MappingProxyType(stored) if stored else _NOTHING)


def _dump(record: _Json, keys: tuple[_Key[Any], ...]) -> Object:
    """The record's JSON: typed values written, what `extra` kept where no typed value replaces it, in the stored
    order with new keys after."""
    written = {key.name: record.stored[key.name] if key.name in record.stored and key.read(record.stored[key.name])
               == value else key.write(value) for key in keys if (value := getattr(record, key.attribute)) is not None}
    out: Object = {}
    for name in (*record.order, *(key.name for key in keys), *record.extra):
        if name in out:
            continue
        if name in written:
            out[name] = written[name]
        elif name in record.extra:
            out[name] = record.extra[name]
    return out


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
        return cls(index, code, _text(entry.get("reason")) or "", _text(entry.get("finishedAt")) or "")

    def to_json(self) -> Object:
        exit_: Object = {"index": self.index, "exitCode": self.exit_code, "reason": self.reason}
        return {**exit_, "finishedAt": self.finished_at} if self.finished_at else exit_


def _exits(value: object) -> tuple[RecreatedExit, ...] | None:
    """The well-formed entries; the others are dropped when the list is next written."""
    if not isinstance(value, list):
        return None
    return tuple(entry for entry in map(RecreatedExit.read, value) if entry is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaStatus(_Json):
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
        return _parse(cls, _REPLICA_KEYS, raw)

    def to_json(self) -> Object:
        return _dump(self, _REPLICA_KEYS)


_REPLICA_KEYS: tuple[_Key[Any], ...] = (
    *(_Key(name, name, integer, _same) for name in ("active", "succeeded", "failed", "restarts")),
    _Key("succeededIndexes", "succeeded_indexes", _text, _same),
    _Key("failedIndexes", "failed_indexes", _text, _same),
    _Key("retiredRestarts", "retired_restarts", integer, _same),
    _Key("retiredPodUIDs", "retired_pod_uids", _uids, list),
    _Key("recreatedExits", "recreated_exits", _exits, lambda exits: [entry.to_json() for entry in exits]),
    _Key("selector", "selector", _text, _same),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class LastResize(_Json):
    """lastResize: the latest Worker count change, as its Resized event told it (policies/resize.py)."""

    from_: int | None = None
    to: int | None = None
    cause: str | None = None  # User, HPA, Capacity
    strategy: str | None = None  # Restart, InPlace
    time: datetime | None = None
    message: str | None = None

    @classmethod
    def from_json(cls, raw: Object) -> LastResize:
        return _parse(cls, _RESIZE_KEYS, raw)

    def to_json(self) -> Object:
        return _dump(self, _RESIZE_KEYS)


_RESIZE_KEYS: tuple[_Key[Any], ...] = (
    _Key("from", "from_", integer, _same), _Key("to", "to", integer, _same),
    _Key("cause", "cause", _text, _same), _Key("strategy", "strategy", _text, _same),
    _Key("time", "time", parse_time, format_time), _Key("message", "message", _text, _same),
)


# Who told tfop of a disruption: the pod's DisruptionTarget condition, a drain of its node, its node itself (lost,
# unhealthy, reclaimed), or a peer's disruption breaking a synchronous job's collective (policies/disruptions.py).
DisruptionSource = Literal["DisruptionTarget", "NodeDrain", "Node", "Peer"]
DISRUPTION_SOURCES: tuple[DisruptionSource, ...] = ("DisruptionTarget", "NodeDrain", "Node", "Peer")


@dataclass(frozen=True, slots=True, kw_only=True)
class DisruptionRecord(_Json):
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
        return _parse(cls, _DISRUPTION_KEYS, raw)

    def to_json(self) -> Object:
        return _dump(self, _DISRUPTION_KEYS)


_DISRUPTION_KEYS: tuple[_Key[Any], ...] = (
    _Key("replica", "replica", _text, _same), _Key("podUID", "pod_uid", _text, _same),
    _Key("reason", "reason", _text, _same),
    _Key("source", "source", lambda value: one_of(value, DISRUPTION_SOURCES), _same),
    _Key("message", "message", _text, _same), _Key("time", "time", parse_time, format_time),
    _Key("peersUntil", "peers_until", parse_time, format_time),
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
class Condition(_Json):
    """One of the job's conditions (metav1.Condition's shape, plus lastUpdateTime); status.py sets them."""

    type: str  # Created, Running, Restarting, Suspended, Succeeded, Failed
    status: str | None = None  # True or False
    reason: str | None = None
    message: str | None = None
    observed_generation: int | None = None  # the spec's metadata.generation the condition was computed from
    last_transition_time: datetime | None = None  # when the status last flipped
    last_update_time: datetime | None = None  # when anything of it last changed

    @classmethod
    def from_json(cls, raw: Object) -> Condition:
        return _parse(cls, _CONDITION_KEYS, raw)

    def to_json(self) -> Object:
        return _dump(self, _CONDITION_KEYS)


_CONDITION_KEYS: tuple[_Key[Any], ...] = (
    _Key("type", "type", _text, _same), _Key("status", "status", _text, _same),
    _Key("reason", "reason", _text, _same), _Key("message", "message", _text, _same),
    _Key("observedGeneration", "observed_generation", integer, _same),
    _Key("lastTransitionTime", "last_transition_time", parse_time, format_time),
    _Key("lastUpdateTime", "last_update_time", parse_time, format_time),
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
class TrainerStatus(_Json):
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
        return _parse(cls, _TRAINER_KEYS, raw)

    def to_json(self) -> Object:
        return _dump(self, _TRAINER_KEYS)

    def content(self) -> TrainerStatus:
        """The report without its JSON bookkeeping, to compare with another."""
        return replace(self, extra=_NOTHING, order=(), stored=_NOTHING)


_TRAINER_KEYS: tuple[_Key[Any], ...] = (
    *(_Key(name, attribute, integer, _same) for name, attribute in (
        ("progressPercentage", "progress_percentage"), ("estimatedRemainingSeconds", "estimated_remaining_seconds"))),
    _Key("estimatedCompletionTime", "estimated_completion_time", parse_time, format_time),
    *(_Key(name, attribute, integer, _same) for name, attribute in (
        ("currentStep", "current_step"), ("totalSteps", "total_steps"), ("currentEpoch", "current_epoch"),
        ("totalEpochs", "total_epochs"))),
    _Key("metrics", "metrics", _metrics, lambda metrics: [{"name": m.name, "value": m.value} for m in metrics]),
    _Key("lastUpdatedTime", "last_updated_time", parse_time, format_time),
    _Key("reportedBy", "reported_by", _text, _same),
)


def _trainer(value: object) -> TrainerStatus | None:
    return TrainerStatus.from_json(value) if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class TFJobStatus(_Json):
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
    phase: str | None = None  # the older API's phase
    state: str | None = None  # the STATE column
    reason: str | None = None  # the reason of the condition that decided phase and state
    trainer_status: TrainerStatus | None = None  # the progress the job's pods report (policies/progress.py)

    @classmethod
    def from_json(cls, raw: object) -> TFJobStatus:
        """The status as stored; anything but a JSON object reads as an empty status."""
        return _parse(cls, _STATUS_KEYS, raw) if isinstance(raw, dict) else cls()

    def to_json(self) -> Object:
        return _dump(self, _STATUS_KEYS)

    def replica(self, replica_type: str) -> ReplicaStatus | None:
        return (self.replica_statuses or {}).get(replica_type)

    def without_reconcile_time(self) -> TFJobStatus:
        return replace(self, last_reconcile_time=None)


_STATUS_KEYS: tuple[_Key[Any], ...] = (
    _Key("conditions", "conditions", _conditions, lambda conditions: [entry.to_json() for entry in conditions]),
    _Key("replicaStatuses", "replica_statuses", _replica_statuses,
         lambda statuses: {replica_type: entry.to_json() for replica_type, entry in statuses.items()}),
    _Key("replicaSummary", "replica_summary", _text, _same),
    _Key("startTime", "start_time", parse_time, format_time),
    _Key("completionTime", "completion_time", parse_time, format_time),
    _Key("lastReconcileTime", "last_reconcile_time", parse_time, format_time),
    _Key("childNaming", "child_naming", lambda value: one_of(value, NAMINGS), _same),
    _Key("replicaBackend", "replica_backend", lambda value: one_of(value, REPLICA_BACKENDS), _same),
    _Key("runtimeId", "runtime_id", _text, _same),
    _Key("workerReplicas", "worker_replicas", integer, _same),
    _Key("lastResize", "last_resize", _resize, lambda resize: resize.to_json()),
    _Key("disruptions", "disruptions", _disruptions, lambda entries: [entry.to_json() for entry in entries]),
    _Key("podGroupPhase", "pod_group_phase", _text, _same),
    _Key("phase", "phase", _text, _same),
    _Key("state", "state", _text, _same),
    _Key("reason", "reason", _text, _same),
    _Key("trainerStatus", "trainer_status", _trainer, lambda trainer: trainer.to_json()),
)
