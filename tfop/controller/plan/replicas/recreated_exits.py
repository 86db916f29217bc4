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
from typing import Any

from tfop.api.fields import integer, items, mapping
from tfop.controller.plan.children.desired import replica_slot_of
from tfop.controller.plan.observed.pod import PodView

RECREATED_EXITS = "recreatedExits"


def recreated_exits(replica_status: object, recreated: Iterable[PodView], replicas: int) -> list[dict[str, Any]]:
    """`replica_status`: one type's replicaStatuses entry before this plan; `recreated`: its pods retired in this
    plan to be replaced (each is retired once: restart_ledger.py); `replicas`: how many the type has now.
    By index; a pod that never ran to an exit (evicted, its node lost) leaves the entry before it."""
    by_index: dict[int, dict[str, Any]] = {}
    for entry in items(mapping(replica_status).get(RECREATED_EXITS)):
        index = integer(mapping(entry).get("index"))
        if index is not None:
            by_index[index] = dict(mapping(entry))
    for pod in recreated:
        termination, slot = pod.termination, replica_slot_of(pod)
        if termination is None or slot is None:
            continue
        exit_ = {"index": slot.index, "exitCode": termination.exit_code, "reason": termination.reason}
        finished = pod.finished_at
        by_index[slot.index] = {**exit_, "finishedAt": finished} if finished else exit_
    return [by_index[index] for index in sorted(by_index) if 0 <= index < replicas]


def recreated_exits_fields(replica_status: object, recreated: Iterable[PodView], replicas: int) -> dict[str, Any]:
    """Left out while empty, so a job that never recreated a pod keeps a plain status."""
    exits = recreated_exits(replica_status, recreated, replicas)
    return {RECREATED_EXITS: exits} if exits else {}
