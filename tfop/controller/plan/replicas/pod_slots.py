"""Sorting a job's children into replica slots: which pod and service fill each replica the spec asks for, what
state each slot is in, and which children fill no slot (scaled away, a type removed, a second child for one
slot)."""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from tfop.api.constants import (
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    REPLICA_TYPES,
    REPLICA_WORKER,
    RESTART_POLICY_ALWAYS,
    RESTART_POLICY_EXIT_CODE,
    RESTART_POLICY_ON_FAILURE,
    ReplicaType,
)
from tfop.api.exit_codes import ExitClass
from tfop.controller.plan.children.desired import replica_slot_of
from tfop.controller.plan.children.naming import ChildNaming
from tfop.controller.plan.job.model import TFJobSpec
from tfop.controller.plan.observed.batch_job import BatchJobView
from tfop.controller.plan.observed.child import Child
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import POD, SERVICE, PlanContext

_Filling = TypeVar("_Filling", bound=Child)


class SlotState(enum.Enum):
    """What the cache shows for one replica slot; the values read well in a condition message."""

    ABSENT = "not created"
    TERMINATING = "being deleted"
    PENDING = "Pending"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    SUCCEEDED = "Succeeded"
    RETRYABLE = "failed, to be recreated"
    PERMANENT = "failed"
    TOLERATED = "failed, tolerated as a dynamic worker"
    EXHAUSTED = "failed, out of restarts"  # Job backend: its Job failed for its backoffLimit (the job's budget)


@dataclass(frozen=True)
class Slot:
    slot: ReplicaSlot
    pod: PodView | None
    state: SlotState


@dataclass(frozen=True)
class SortedChildren:
    slots: list[Slot]  # every replica the spec asks for, in a stable order
    services: dict[ReplicaSlot, Child]
    surplus: dict[str, list[Child]]  # by kind: ours but filling no slot
    # Every pod with a replica type, slot or not (Job backend: each Job's latest).
    pods_by_type: dict[str, list[PodView]]
    # The Job backend's: each slot's Job, and every pod of each Job by the Job's uid.
    batch_jobs: dict[ReplicaSlot, BatchJobView] = field(default_factory=dict)
    pods_by_job: dict[str, list[PodView]] = field(default_factory=dict)

    def surplus_of(self, kind: str) -> list[Child]:
        return self.surplus.get(kind, [])


def replica_types(spec: TFJobSpec) -> list[ReplicaType]:
    """The job's replica types in their canonical order."""
    return [replica_type for replica_type in REPLICA_TYPES if replica_type in spec.replica_specs]


def sort_children(spec: TFJobSpec, context: PlanContext, naming: ChildNaming) -> SortedChildren:
    observed = context.observed
    pods_by_type: dict[str, list[PodView]] = defaultdict(list)
    for pod in observed.pods:
        slot = replica_slot_of(pod)
        if slot is not None:
            pods_by_type[slot.replica_type].append(pod)
    pods_at, surplus_pods = fill_slots(spec, observed.pods, naming)
    services_at, surplus_services = fill_slots(spec, observed.services, naming)
    slots = [Slot(slot, pods_at.get(slot), slot_state(spec, slot, pods_at.get(slot)))
             for replica_type in replica_types(spec) for slot in
             (ReplicaSlot(replica_type, index) for index in range(spec.replicas(replica_type)))]
    surplus: dict[str, list[Child]] = {POD: list(surplus_pods), SERVICE: list(surplus_services)}
    return SortedChildren(slots, services_at, surplus, dict(pods_by_type))


def fill_slots(spec: TFJobSpec, children: Iterable[_Filling],
               naming: ChildNaming) -> tuple[dict[ReplicaSlot, _Filling], list[_Filling]]:
    """Each slot the spec has takes one child labelled for it: the one with the name the job's naming gives,
    else the first by name; the rest are surplus."""
    at: dict[ReplicaSlot, _Filling] = {}
    surplus: list[_Filling] = []

    def preference(child: _Filling) -> tuple[bool, str]:
        slot, name = replica_slot_of(child), child.name
        return (slot is None or name != naming.name(slot.replica_type, slot.index), name)

    for child in sorted(children, key=preference):
        slot = replica_slot_of(child)
        if slot is None or slot.index >= spec.replicas(slot.replica_type) or slot in at:
            surplus.append(child)
        else:
            at[slot] = child
    return at, surplus


def slot_state(spec: TFJobSpec, slot: ReplicaSlot, pod: PodView | None) -> SlotState:
    if pod is None:
        return SlotState.ABSENT
    state = _state_of(spec, slot, pod)
    # A pod deleted once it had ended for good keeps its end (replicas/finished.py); one stopped by its delete, or
    # to be recreated anyway, is neither there nor failed: its index is made again once it is gone.
    if pod.terminating and (not pod.ended_before_deleted or state is SlotState.RETRYABLE):
        return SlotState.TERMINATING
    return state


_STATE_OF_PHASE = {POD_PENDING: SlotState.PENDING, POD_RUNNING: SlotState.RUNNING, POD_SUCCEEDED: SlotState.SUCCEEDED}


def _state_of(spec: TFJobSpec, slot: ReplicaSlot, pod: PodView) -> SlotState:
    phase = pod.phase
    if phase != POD_FAILED:
        return _STATE_OF_PHASE.get(phase, SlotState.UNKNOWN)
    policy = spec.replica_specs[slot.replica_type].restart_policy
    if policy == RESTART_POLICY_EXIT_CODE:
        if pod.disrupted:  # taken by the cluster, not failed: whatever the code, as the Job's podFailurePolicy
            return SlotState.RETRYABLE
        termination = pod.termination
        # No exit code means the pod failed around the container (evicted, node lost): worth another try.
        exit_class = termination.exit_class if termination is not None else ExitClass.RETRYABLE
        if exit_class is ExitClass.SUCCEEDED:
            return SlotState.SUCCEEDED
        if exit_class is ExitClass.RETRYABLE:
            return SlotState.RETRYABLE
    elif policy in (RESTART_POLICY_ALWAYS, RESTART_POLICY_ON_FAILURE):
        return SlotState.RETRYABLE  # the kubelet restarts in place, so a Failed pod was evicted or lost its node
    if slot.replica_type == REPLICA_WORKER and spec.enable_dynamic_worker:
        return SlotState.TOLERATED
    return SlotState.PERMANENT
