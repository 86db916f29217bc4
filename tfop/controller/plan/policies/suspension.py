"""runPolicy.suspend: a suspended job keeps nothing running (how is its backend's business: Pods are deleted, Jobs
suspended and kept), its clock (status.startTime) stops, and the restarts counted so far are kept; resumed, it
starts its clock again, so activeDeadlineSeconds counts from the resume, as for a batch Job."""

from __future__ import annotations

from tfop.api.constants import (
    CONDITION_RESTARTING,
    CONDITION_RUNNING,
    CONDITION_SUSPENDED,
    REASON_RESUMED,
    REASON_SUSPENDED,
)
from tfop.controller.plan.children.job_child import JobState
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job.model import TFJobSpec
from tfop.controller.plan.policies.job_children import settle_job_children
from tfop.controller.plan.replicas.backends import ReplicaBackend
from tfop.controller.plan.replicas.pod_slots import SortedChildren
from tfop.controller.plan.replicas.replica_status import record_replicas
from tfop.controller.plan.types import PlanContext


def suspend(draft: PlanDraft, spec: TFJobSpec, context: PlanContext, children: SortedChildren,
            backend: ReplicaBackend, *, state: JobState = JobState.SUSPENDED, reason: str = REASON_SUSPENDED,
            message: str | None = None) -> None:
    """`state`, `reason`, `message`: QUEUED and why, when Kueue holds the job (tfop's own integration) rather than
    its user's runPolicy.suspend; the job's Workload is kept then."""
    counts = backend.count_restarts(draft, spec, context, children, deleting=backend.retired_on_suspend(context),
                                    recreating=set())
    settle_job_children(draft, context, state)  # its own first: the PodGroup, the HPA
    backend.suspend(draft, context)
    message = message or f"{draft.job_ref} is suspended."
    draft.set_condition(CONDITION_SUSPENDED, true=True, reason=reason, message=message)
    draft.set_condition(CONDITION_RUNNING, true=False, reason=reason, message=message)
    draft.clear_condition(CONDITION_RESTARTING, reason=reason, message=message)
    draft.status = replace(draft.status, start_time=None)
    record_replicas(draft, spec, children, counts, finishing=False)


def resume_if_suspended(draft: PlanDraft) -> None:
    if draft.is_true(CONDITION_SUSPENDED):
        draft.set_condition(CONDITION_SUSPENDED, true=False, reason=REASON_RESUMED,
                            message=f"{draft.job_ref} is resumed.")
        draft.status = replace(draft.status, start_time=draft.stamp)
