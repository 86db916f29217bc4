"""A Kueue Workload (kueue.x-k8s.io/v1beta2) as tfop's own integration reads it: what it asks for, whether Kueue
admitted it, what the admission assigned each pod set, and whether Kueue evicted it.

Callers may rely on: `admitted` is true only while Kueue's Admitted condition is True, the Workload is active
(spec.active not false) and not evicted, so a job runs only on an admission that still holds. A pod set's
assignment names flavors, not their node labels: those are on the ResourceFlavor objects (kueue_admission.py
reads them). Conditions are kept raw: tfop rewrites them, as Kueue's job integrations do, when it hands a stopped
job's quota back (the Workload's status is shared with Kueue, which owns every other field of it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from tfop.api.fields import integer, items, mapping, mapping_at, text
from tfop.objects import Object

ADMITTED = "Admitted"
QUOTA_RESERVED = "QuotaReserved"
EVICTED = "Evicted"
REQUEUED = "Requeued"
PODS_READY = "PodsReady"
FINISHED = "Finished"


@dataclass(frozen=True, slots=True)
class Eviction:
    """Kueue's Evicted condition: its reason (Preempted, PodsReadyTimeout, Deactivated, ClusterQueueStopped, ...)
    and message, as Kueue wrote them."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class PodSetUpdate:
    """What an admission check asks a pod set's pods to carry besides the flavors (status.admissionChecks[*].
    podSetUpdates): added to the pods, never replacing what they have."""

    labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    node_selector: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    tolerations: tuple[Object, ...] = ()


@dataclass(frozen=True, slots=True)
class PodSetAdmission:
    """One pod set's part of the admission: the flavors it was given (one per resource; distinct names, sorted),
    the pods counted, and whether a topology assignment came with it."""

    name: str
    flavors: tuple[str, ...]
    count: int | None
    topology: bool = False
    updates: tuple[PodSetUpdate, ...] = ()


@dataclass(frozen=True, slots=True)
class QueuePosition:
    """Where a pending Workload stands, as Kueue's visibility API (pendingworkloads of its LocalQueue) last said:
    counted from 1, the next to be admitted when quota allows, in its LocalQueue and in the ClusterQueue that
    LocalQueue feeds. Both None when it is past the first `looked_at` pending Workloads of the LocalQueue, all the
    API was asked for (tfop/controller/kueue_positions.py)."""

    in_local_queue: int | None
    in_cluster_queue: int | None
    looked_at: int


@dataclass(frozen=True, slots=True)
class ObservedWorkload:
    name: str
    uid: str
    resource_version: str
    terminating: bool
    active: bool
    queue_name: str | None
    priority_class: str | None  # the WorkloadPriorityClass its priorityClassRef names
    pod_sets: tuple[tuple[str, int], ...]  # (name, count) as stored, in order
    cluster_queue: str | None  # the admission's, while there is one
    admitted: bool
    quota_reserved: bool
    eviction: Eviction | None  # Evicted is True
    waiting: str | None  # why it has no quota yet: QuotaReserved False's message, as Kueue says it
    pods_ready: bool  # PodsReady is True (written by the job's integration: tfop's)
    reclaimable: tuple[tuple[str, int], ...]  # status.reclaimablePods: (pod set, count), as stored
    assignments: Mapping[str, PodSetAdmission]
    conditions: tuple[Object, ...]
    # How often Kueue evicted it, by reason (status.schedulingStats.evictions, summed), in Kueue's order.
    evictions: tuple[tuple[str, int], ...] = ()
    finished: bool = False  # Finished is True (the job's integration says it ended)

    @property
    def pods_ready_reason(self) -> str | None:
        found = _condition(self.conditions, PODS_READY)
        return None if found is None else text(found.get("reason"))


def observe_workload(workload: Object) -> ObservedWorkload:
    metadata = mapping(workload.get("metadata"))
    spec = mapping(workload.get("spec"))
    status = mapping(workload.get("status"))
    conditions = tuple(mapping(condition) for condition in items(status.get("conditions")))
    evicted = _condition(conditions, EVICTED)
    eviction = (Eviction(text(evicted.get("reason")) or "", text(evicted.get("message")) or "")
                if evicted is not None and evicted.get("status") == "True" else None)
    reserved = _condition(conditions, QUOTA_RESERVED)
    active = spec.get("active") is not False
    admission = mapping(status.get("admission"))
    updates = _pod_set_updates(status)
    assignments = {}
    for assignment in map(mapping, items(admission.get("podSetAssignments"))):
        name = text(assignment.get("name")) or ""
        flavors = tuple(sorted({str(flavor) for flavor in mapping(assignment.get("flavors")).values()}))
        assignments[name] = PodSetAdmission(name, flavors, integer(assignment.get("count")),
                                            assignment.get("topologyAssignment") is not None,
                                            updates.get(name, ()))
    return ObservedWorkload(
        name=text(metadata.get("name")) or "", uid=text(metadata.get("uid")) or "",
        resource_version=text(metadata.get("resourceVersion")) or "",
        terminating=metadata.get("deletionTimestamp") is not None, active=active,
        queue_name=text(spec.get("queueName")),
        priority_class=_workload_priority_class(mapping(spec.get("priorityClassRef"))),
        pod_sets=tuple((text(pod_set.get("name")) or "", integer(pod_set.get("count")) or 0)
                       for pod_set in map(mapping, items(spec.get("podSets")))),
        cluster_queue=text(admission.get("clusterQueue")),
        admitted=_is_true(conditions, ADMITTED) and active and eviction is None and bool(admission),
        quota_reserved=_is_true(conditions, QUOTA_RESERVED) or bool(admission),
        eviction=eviction,
        waiting=(text(reserved.get("message")) if reserved is not None and reserved.get("status") != "True"
                 else None),
        pods_ready=_is_true(conditions, PODS_READY),
        reclaimable=tuple((text(entry.get("name")) or "", integer(entry.get("count")) or 0)
                          for entry in map(mapping, items(status.get("reclaimablePods")))),
        assignments=MappingProxyType(assignments), conditions=conditions,
        evictions=_evictions(mapping_at(status, "schedulingStats")), finished=_is_true(conditions, FINISHED))


def _evictions(stats: Object) -> tuple[tuple[str, int], ...]:
    counts: dict[str, int] = {}
    for entry in map(mapping, items(stats.get("evictions"))):
        reason = text(entry.get("reason")) or ""
        counts[reason] = counts.get(reason, 0) + (integer(entry.get("count")) or 0)
    return tuple((reason, count) for reason, count in counts.items() if count > 0)


def _workload_priority_class(ref: Object) -> str | None:
    if ref.get("kind") == "WorkloadPriorityClass":
        return text(ref.get("name"))
    return None


def _pod_set_updates(status: Object) -> dict[str, tuple[PodSetUpdate, ...]]:
    found: dict[str, list[PodSetUpdate]] = {}
    for check in map(mapping, items(status.get("admissionChecks"))):
        for update in map(mapping, items(check.get("podSetUpdates"))):
            found.setdefault(text(update.get("name")) or "", []).append(PodSetUpdate(
                MappingProxyType(_strings(update.get("labels"))),
                MappingProxyType(_strings(update.get("annotations"))),
                MappingProxyType(_strings(update.get("nodeSelector"))),
                tuple(mapping(toleration) for toleration in items(update.get("tolerations")))))
    return {name: tuple(updates) for name, updates in found.items()}


def _strings(value: object) -> dict[str, str]:
    return {str(key): str(item) for key, item in mapping(value).items()}


def _condition(conditions: tuple[Object, ...], condition_type: str) -> Object | None:
    return next((condition for condition in conditions if condition.get("type") == condition_type), None)


def _is_true(conditions: tuple[Object, ...], condition_type: str) -> bool:
    condition = _condition(conditions, condition_type)
    return condition is not None and condition.get("status") == "True"


def flavor_placement(flavor: Object) -> tuple[dict[str, str], tuple[Object, ...]]:
    """A ResourceFlavor's node labels (the node selector its pods get) and tolerations."""
    spec = mapping_at(flavor, "spec")
    return _strings(spec.get("nodeLabels")), tuple(mapping(toleration) for toleration in items(spec.get("tolerations")))
