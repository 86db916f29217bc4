"""runPolicy.activeDeadlineSeconds: a job running longer fails, counted from status.startTime (set as it starts,
and again as it resumes from a suspension, as for a batch Job)."""

from __future__ import annotations

from tfop.api.constants import CONDITION_FAILED, REASON_DEADLINE_EXCEEDED
from tfop.api.timestamps import format_time
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import RunPolicy
from tfop.controller.plan.policies.cleanup import finish


def fail_past_deadline(draft: PlanDraft, run_policy: RunPolicy) -> bool:
    """Finishes the job as Failed once its deadline has passed; whether it did. Before, the plan is requeued for
    the very moment, even if no pod changes before it."""
    deadline = run_policy.active_deadline_seconds
    started = draft.status.start_time
    if deadline is None or started is None:
        return False
    remaining = (started - draft.now).total_seconds() + deadline
    if remaining <= 0:
        finish(draft, CONDITION_FAILED, REASON_DEADLINE_EXCEEDED,
               f"{draft.job_ref} has failed because it ran longer than its activeDeadlineSeconds of {deadline} "
               f"(started at {format_time(started)}).")
        return True
    draft.requeue(remaining)
    return False
