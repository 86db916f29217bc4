"""What finished stays finished: the replicas that succeeded or failed for good, recorded in the job's status before
their pods may go, so that a pod deleted after its end (the pod garbage collector past
--terminated-pod-gc-threshold, a user, a node evicting ended pods) is never made again while the job runs, and
still counts in replicaStatuses and for the success policy.

The record is one type's indexes as ranges, `replicaStatuses[Worker].succeededIndexes: "0,2-5"` and
`failedIndexes` (failed for good: a tolerated dynamic worker, a permanent exit), as the Job controller's
completedIndexes: a few bytes whatever the job's size. Every pod tfop creates carries FINALIZER_REPLICA_TRACKING;
a plan lists the pods whose finalizer may go (`pods_to_release`) and the applier removes it only once that plan's
status is stored. An operator stopped between a pod's end and the status write so loses nothing: the pod is
still there for the next pass, which records it, then releases it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tfop.api.constants import MAX_REPLICAS, REPLICA_WORKER, ReplicaType
from tfop.api.fields import text
from tfop.controller.plan.children.desired import replica_slot_of
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job.model import TFJobSpec
from tfop.controller.plan.job_status import ReplicaStatus, TFJobStatus
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.replicas.pod_slots import Slot, SlotState, SortedChildren, replica_types

FAILED_FOR_GOOD = (SlotState.PERMANENT, SlotState.TOLERATED)


def parse_indexes(value: object) -> frozenset[int]:
    """`"0,2-4"` -> {0, 2, 3, 4}. A piece that is not an index or a range of them is skipped: the status is
    anyone's to write, and a bad piece must not lose the others; no index reaches MAX_REPLICAS, which no job has,
    so a written range cannot be made to cost more than that."""
    indexes: set[int] = set()
    for piece in (text(value) or "").split(","):
        first, dash, last = piece.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            continue
        start, end = int(first), min(int(last or first), MAX_REPLICAS - 1)
        indexes.update(range(start, end + 1))
    return frozenset(indexes)


def format_indexes(indexes: Iterable[int]) -> str:
    """{0, 2, 3, 4} -> `"0,2-4"`; "" for none."""
    pieces: list[str] = []
    ordered = sorted(set(indexes))
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        pieces.append(str(ordered[start]) if end == start else f"{ordered[start]}-{ordered[end]}")
        start = end + 1
    return ",".join(pieces)


@dataclass(frozen=True)
class FinishedReplicas:
    """Per replica type, the indexes that succeeded and those that failed for good."""

    succeeded: Mapping[str, frozenset[int]]
    failed: Mapping[str, frozenset[int]]

    @classmethod
    def of_status(cls, status: TFJobStatus) -> FinishedReplicas:
        statuses = status.replica_statuses or {}
        return cls({replica_type: parse_indexes(entry.succeeded_indexes) for replica_type, entry in statuses.items()},
                   {replica_type: parse_indexes(entry.failed_indexes) for replica_type, entry in statuses.items()})

    def ended(self, replica_type: str) -> frozenset[int]:
        return self.succeeded.get(replica_type, frozenset()) | self.failed.get(replica_type, frozenset())

    def kept_in(self, replica_status: ReplicaStatus, replica_type: str) -> ReplicaStatus:
        """`replica_status` with the type's record; left out while empty, so a job none of whose replicas has
        ended keeps a plain status."""
        return replace(replica_status,
                       succeeded_indexes=format_indexes(self.succeeded.get(replica_type, ())) or None,
                       failed_indexes=format_indexes(self.failed.get(replica_type, ())) or None)


def record_finished(previous: FinishedReplicas, spec: TFJobSpec, slots: Iterable[Slot]) -> FinishedReplicas:
    """The record grown by the slots that have ended for good, trimmed to the indexes the job still has (a
    replica scaled away and added again is a new one)."""
    slots = list(slots)
    succeeded: dict[str, frozenset[int]] = {}
    failed: dict[str, frozenset[int]] = {}
    for replica_type in replica_types(spec):
        kept = range(spec.replicas(replica_type))
        of_type = [slot for slot in slots if slot.slot.replica_type == replica_type]
        succeeded[replica_type] = frozenset(
            index for index in previous.succeeded.get(replica_type, frozenset()) | {
                slot.slot.index for slot in of_type if slot.state is SlotState.SUCCEEDED} if index in kept)
        failed[replica_type] = frozenset(
            index for index in previous.failed.get(replica_type, frozenset()) | {
                slot.slot.index for slot in of_type if slot.state in FAILED_FOR_GOOD} if index in kept)
    return FinishedReplicas(succeeded, failed)


def recall_finished(spec: TFJobSpec, children: SortedChildren, record: FinishedReplicas) -> SortedChildren:
    """The slots whose pod is gone but whose end is recorded keep that end: Succeeded, or a failed dynamic worker
    tolerated. (A replica failed for good otherwise failed the job as it was seen.)"""
    def recalled(slot: Slot) -> Slot:
        if slot.state is not SlotState.ABSENT:
            return slot
        replica_type, index = slot.slot.replica_type, slot.slot.index
        if index in record.succeeded.get(replica_type, frozenset()):
            return replace(slot, state=SlotState.SUCCEEDED)
        if (index in record.failed.get(replica_type, frozenset()) and replica_type == REPLICA_WORKER
                and spec.enable_dynamic_worker):
            return replace(slot, state=SlotState.TOLERATED)
        return slot

    return replace(children, slots=[recalled(slot) for slot in children.slots])


def pods_to_release(pods: Iterable[PodView], record: FinishedReplicas, replicas: Mapping[ReplicaType, int], *,
                    deleting: set[str], everything: bool) -> list[PodView]:
    """The pods holding tfop's finalizer that no longer need it once the plan whose `record` this is is stored:
    every one when `everything` (the job finished, its final tally written, or is being deleted); a pod the plan
    deletes (`deleting`: tfop's own decision, a restart, a resize, a lost node, a clean-up); one deleted by anyone
    (the plan's record holds it if it had ended for good, since the record grows with every slot that has); one
    that ended and is recorded, or whose index the job no longer has. A live pod keeps it, and so does one that
    ended and is not recorded yet."""
    def releasable(pod: PodView) -> bool:
        slot = replica_slot_of(pod)
        if everything or pod.uid in deleting or slot is None or pod.terminating:
            return True
        return pod.ended and (slot.index in record.ended(slot.replica_type)
                              or slot.index >= replicas.get(slot.replica_type, 0))

    return [pod for pod in pods if pod.tracked and releasable(pod)]
