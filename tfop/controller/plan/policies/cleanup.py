"""The end of a TFJob's life: finishing it, cleaning up its children (replicas/removal.py says which go), and
deleting it when its TTL has passed.

An invalid job finishes this way too, with the run policy read leniently (plan/job/parse.py's lenient_run_policy).
"""

from __future__ import annotations

from typing import Literal

from tfop.api.constants import (
    CLEAN_POD_POLICY_ALL,
    CLEAN_POD_POLICY_NONE,
    CONDITION_FAILED,
    CONDITION_RESTARTING,
    CONDITION_RUNNING,
    EVENT_NORMAL,
    REASON_DEADLINE_EXCEEDED,
    REASON_TTL_EXPIRED,
)
from tfop.api.timestamps import format_time
from tfop.controller.plan.children.job_child import JobState
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job.model import RunPolicy
from tfop.controller.plan.policies.job_children import settle_job_children
from tfop.controller.plan.replicas.removal import clean_up
from tfop.controller.plan.types import PlanContext


def finish(draft: PlanDraft, condition_type: Literal["Succeeded", "Failed"], reason: str, message: str) -> None:
    """Marks the job Succeeded or Failed now; its children are cleaned up by `keep_finished` in the same plan."""
    draft.set_condition(condition_type, true=True, reason=reason, message=message)
    draft.set_condition(CONDITION_RUNNING, true=False, reason=reason, message=message)
    draft.clear_condition(CONDITION_RESTARTING, reason=reason, message=message)
    if draft.status.completion_time is None:
        draft.status = replace(draft.status, completion_time=draft.stamp)


def keep_finished(draft: PlanDraft, run_policy: RunPolicy, context: PlanContext, *, just_finished: bool) -> None:
    """What a finished job still needs, on every reconcile: its children cleaned up as runPolicy says (never
    recreated; its own, such as the HPA, as their entries say: policies/job_children.py), and deletion once
    ttlSecondsAfterFinished has passed."""
    failed = draft.condition(CONDITION_FAILED)
    # A deadline is about resources as much as time: nothing of the job may keep running past it.
    deadline = failed is not None and failed.reason == REASON_DEADLINE_EXCEEDED
    policy = CLEAN_POD_POLICY_ALL if deadline else run_policy.clean_pod_policy
    completion = draft.status.completion_time
    if completion is None:  # a status written by someone else; finishing now is the best we know
        draft.status = replace(draft.status, completion_time=draft.stamp)
        completion = draft.now
    settle_job_children(draft, context, JobState.FINISHED_PODS_KEPT if policy == CLEAN_POD_POLICY_NONE
                        else JobState.FINISHED, completion)
    clean_up(draft, context, policy)
    ttl = run_policy.ttl_seconds_after_finished
    if ttl is None:
        return
    remaining = (completion - draft.now).total_seconds() + ttl
    if remaining > 0 or just_finished:
        # Even an expired TTL waits one reconcile after finishing, so the final status is written and seen.
        draft.requeue(remaining)
        return
    draft.delete_job = True
    draft.event(EVENT_NORMAL, REASON_TTL_EXPIRED,
                f"{draft.job_ref} finished at {format_time(completion)}; deleting it because its "
                f"ttlSecondsAfterFinished of {ttl}s has passed.")
