"""Restarting a job together: with MultiWorkerMirroredStrategy every worker is one collective, and when one
worker is replaced the survivors fail or hang waiting for it. A job annotated
`tfop.kubeflow.org/restart-scope: Job` restarts every live replica with the one that failed (a retryable exit) or
lost its node, so all of them start again from the last checkpoint. The others are deleted gracefully (SIGTERM,
then their pod's grace period) and retired without a restart of their own: a job restart counts as the restarts
of the replicas that caused it, once.

Pods backend only: with Jobs, the Job controller replaces a failed pod before tfop could restart the others.
"""

from __future__ import annotations

from tfop.api.constants import (
    ANNOTATION_RESTART_SCOPE,
    REPLICA_BACKEND_PODS,
    RESTART_SCOPE_JOB,
    RESTART_SCOPE_REPLICA,
    RESTART_SCOPES,
)
from tfop.api.fields import mapping_at, text
from tfop.controller.plan.pod_slots import Slot, SlotState
from tfop.controller.plan.replica_records import uid_of
from tfop.controller.plan.status import is_terminating
from tfop.objects import Object


def restart_scope_of(job: Object, backend: str | None) -> tuple[str, list[str]]:
    """The job's restart scope, and what is wrong with the annotation that sets it."""
    asked = mapping_at(job, "metadata", "annotations").get(ANNOTATION_RESTART_SCOPE)
    if asked is None:
        return RESTART_SCOPE_REPLICA, []
    where = f"metadata.annotations[{ANNOTATION_RESTART_SCOPE}]"
    if asked not in RESTART_SCOPES:
        return RESTART_SCOPE_REPLICA, [f"{where}: must be one of {', '.join(RESTART_SCOPES)}, not {asked!r}"]
    if asked == RESTART_SCOPE_JOB and backend not in (None, REPLICA_BACKEND_PODS):
        return RESTART_SCOPE_REPLICA, [f"{where}: {RESTART_SCOPE_JOB} needs the pods replica backend, not {backend}"]
    return str(text(asked)), []


def restarted_with(slots: list[Slot], causes: set[str]) -> list[Object]:
    """The live pods of the other replicas, to restart with those whose uids are `causes`; none if nothing
    causes a restart. Replicas that have finished their part are left alone."""
    if not causes:
        return []
    return [slot.pod for slot in slots if slot.pod is not None and uid_of(slot.pod) not in causes
            and not is_terminating(slot.pod) and slot.state in (SlotState.RUNNING, SlotState.PENDING,
                                                                  SlotState.UNKNOWN)]
