"""The exit that made tfop recreate a replica's pod, kept in the status.

A pod recreated for a retryable exit (restartPolicy ExitCode) starts with no exit of its own, and the failed pod
is gone from the apiserver, so nothing else a reader of the job can read still says why the replica restarted
(events expire within the hour). Its latest such exit is kept per replica index in
`replicaStatuses[type].recreatedExits`, e.g. `[{"index": 0, "exitCode": 137, "reason": "Error",
"finishedAt": "..."}]`: tfop ui's replica table and timeline show it. An index the job no longer has (scaled
down) is dropped, so the list never outgrows the replicas.
"""

from __future__ import annotations

from collections.abc import Iterable

from tfop.controller.plan.children.desired import replica_slot_of
from tfop.controller.plan.job_status import RecreatedExit, ReplicaStatus
from tfop.controller.plan.observed.pod import PodView


def recreated_exits(replica_status: ReplicaStatus | None, recreated: Iterable[PodView],
                    replicas: int) -> list[RecreatedExit]:
    """`replica_status`: one type's replicaStatuses entry before this plan; `recreated`: its pods retired in this
    plan to be replaced (each is retired once: restart_ledger.py); `replicas`: how many the type has now.
    By index; a pod that never ran to an exit (evicted, its node lost) leaves the entry before it."""
    kept = replica_status.recreated_exits if replica_status is not None else None
    by_index = {entry.index: entry for entry in kept or ()}
    for pod in recreated:
        termination, slot = pod.termination, replica_slot_of(pod)
        if termination is None or slot is None:
            continue
        by_index[slot.index] = RecreatedExit(slot.index, termination.exit_code, termination.reason, pod.finished_at)
    return [by_index[index] for index in sorted(by_index) if 0 <= index < replicas]
