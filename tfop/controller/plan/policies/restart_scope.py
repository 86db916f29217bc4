"""Restarting a job together: with MultiWorkerMirroredStrategy every worker is one collective, and when one
worker is replaced the survivors fail or hang waiting for it. A job annotated
`tfop.kubeflow.org/restart-scope: Job` restarts every live replica with the one that failed (a retryable exit) or
lost its node, so all of them start again from the last checkpoint. The others are deleted gracefully (SIGTERM,
then their pod's grace period) and retired without a restart of their own: a job restart counts as the restarts
of the replicas that caused it, once.

The annotation is read by plan/job/annotations.py. Pods backend only: with Jobs, the Job controller replaces a
failed pod before tfop could restart the others.
"""

from __future__ import annotations

from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.replicas.pod_slots import Slot, SlotState


def restarted_with(slots: list[Slot], causes: set[str]) -> list[PodView]:
    """The live pods of the other replicas, to restart with those whose uids are `causes`; none if nothing
    causes a restart. Replicas that have finished their part are left alone."""
    if not causes:
        return []
    return [slot.pod for slot in slots if slot.pod is not None and slot.pod.uid not in causes
            and not slot.pod.terminating and slot.state in (SlotState.RUNNING, SlotState.PENDING,
                                                                  SlotState.UNKNOWN)]
