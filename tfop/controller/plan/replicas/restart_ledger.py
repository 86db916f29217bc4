"""Counting the restarts of a replica type against backoffLimit.

Restarts happen in two places: the kubelet restarts containers in place (restartCount on the pod), and the
operator deletes a failed pod to recreate it. A pod's restartCount dies with the pod, so when a pod goes away its
restarts are "retired" into the job's status, together with one restart for the recreation. The uids of retired
pods that the cache still shows (terminating) are kept too, so seeing the same pod again, in the next reconcile or
after an operator restart, does not count it twice. Both live in replicaStatuses[type]:
`retiredRestarts` and `retiredPodUIDs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from tfop.api.constants import POD_FAILED
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job_status import ReplicaStatus
from tfop.controller.plan.observed.batch_job import BatchJobView
from tfop.controller.plan.observed.pod import PodView

_Counted = TypeVar("_Counted", PodView, BatchJobView)



@dataclass(frozen=True)
class RestartLedger:
    retired: int = 0
    pod_uids: tuple[str, ...] = ()

    @classmethod
    def from_replica_status(cls, replica_status: ReplicaStatus | None) -> RestartLedger:
        if replica_status is None:
            return cls()
        return cls(max(replica_status.retired_restarts or 0, 0), replica_status.retired_pod_uids or ())

    def kept_in(self, replica_status: ReplicaStatus) -> ReplicaStatus:
        """`replica_status` with the ledger; its fields left out while empty, so a job that never restarted keeps
        a plain status."""
        return replace(replica_status, retired_restarts=self.retired or None, retired_pod_uids=self.pod_uids or None)


@dataclass(frozen=True)
class RestartCount:
    ledger: RestartLedger
    total: int  # retired restarts plus the in-place restarts of the pods still alive
    recreated: list[PodView] = field(default_factory=list)  # failed pods retired now, to be replaced
    # Of those, pods disrupted (DisruptionTarget: evicted, preempted, drained): replaced without counting against
    # backoffLimit, as a Job's podFailurePolicy ignores them with the Job backend.
    disrupted: int = 0


def count_restarts(ledger: RestartLedger, pods: Iterable[_Counted], *, deleting: set[str], recreating: set[str],
                   restarts_of: Callable[[_Counted], int]) -> RestartCount:
    """`pods` are all the cache's pods of one replica type; `deleting` the uids this plan deletes, of which
    `recreating` are failed pods deleted to be replaced. A pod found terminating that failed is a replacement
    too: the plan that deleted it may not have saved its status. The Job backend passes its Jobs as `pods`, with
    `restarts_of` counting each Job's restarts."""
    retired = ledger.retired
    counted = set(ledger.pod_uids)
    alive = 0
    recreated: list[PodView] = []
    disrupted = 0
    present: set[str] = set()
    for pod in pods:
        uid = pod.uid
        present.add(uid)
        if uid in counted:
            continue
        restarts = restarts_of(pod)
        if not pod.terminating and uid not in deleting:
            alive += restarts
            continue
        if not isinstance(pod, PodView):  # a Job deleted now: its restarts retire; the planner replaces none
            retired += restarts
            counted.add(uid)
            continue
        replaced = uid in recreating or (pod.terminating and pod.phase == POD_FAILED)
        retired += restarts + (1 if replaced and not pod.disrupted else 0)
        counted.add(uid)
        if replaced:
            recreated.append(pod)
            disrupted += pod.disrupted
    # A uid the cache no longer shows belongs to a pod that is gone for good: it can never be seen again.
    kept = tuple(sorted(uid for uid in counted if uid in present))
    return RestartCount(RestartLedger(retired, kept), retired + alive, recreated, disrupted)
