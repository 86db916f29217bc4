"""The end of a TFJob's life: finishing it, cleaning up its children, and deleting it when its TTL has passed.

These work on the raw child lists and read the spec leniently, because an invalid job finishes this way too.
"""

from __future__ import annotations

from typing import Any

from tfop.api.constants import (
    CLEAN_POD_POLICIES,
    CLEAN_POD_POLICY_ALL,
    CLEAN_POD_POLICY_NONE,
    CLEAN_POD_POLICY_RUNNING,
    CONDITION_FAILED,
    CONDITION_RESTARTING,
    CONDITION_RUNNING,
    EVENT_NORMAL,
    POD_FAILED,
    POD_SUCCEEDED,
    REASON_DEADLINE_EXCEEDED,
    REASON_TTL_EXPIRED,
)
from tfop.api.fields import integer, mapping, mapping_at, text
from tfop.api.timestamps import parse_time
from tfop.controller.draft import PlanDraft
from tfop.controller.plan_types import POD, POD_GROUP, SERVICE, PlanContext
from tfop.controller.status import is_terminating, pod_phase

COMPLETION_TIME = "completionTime"


def finish(draft: PlanDraft, condition_type: str, reason: str, message: str) -> None:
    """Marks the job Succeeded or Failed now; its children are cleaned up by `keep_finished` in the same plan."""
    draft.set_condition(condition_type, true=True, reason=reason, message=message)
    draft.set_condition(CONDITION_RUNNING, true=False, reason=reason, message=message)
    draft.clear_condition(CONDITION_RESTARTING, reason=reason, message=message)
    if parse_time(draft.status.get(COMPLETION_TIME)) is None:
        draft.set_time(COMPLETION_TIME)


def keep_finished(draft: PlanDraft, job: dict[str, Any], context: PlanContext, *, just_finished: bool) -> None:
    """What a finished job still needs, on every reconcile: its children cleaned up as runPolicy says (never
    recreated), and deletion once ttlSecondsAfterFinished has passed."""
    run_policy = mapping_at(job, "spec", "runPolicy")
    failed = draft.condition(CONDITION_FAILED) or {}
    # A deadline is about resources as much as time: nothing of the job may keep running past it.
    policy = (CLEAN_POD_POLICY_ALL if failed.get("reason") == REASON_DEADLINE_EXCEEDED
              else clean_pod_policy(run_policy.get("cleanPodPolicy")))
    clean_up(draft, context, policy)
    completion = parse_time(draft.status.get(COMPLETION_TIME))
    if completion is None:  # a status written by someone else; finishing now is the best we know
        draft.set_time(COMPLETION_TIME)
        completion = draft.now
    ttl = integer(run_policy.get("ttlSecondsAfterFinished"))
    if ttl is None or ttl < 0:
        return
    remaining = (completion - draft.now).total_seconds() + ttl
    if remaining > 0 or just_finished:
        # Even an expired TTL waits one reconcile after finishing, so the final status is written and seen.
        draft.requeue(remaining)
        return
    draft.delete_job = True
    draft.event(EVENT_NORMAL, REASON_TTL_EXPIRED,
                f"{draft.job_ref} finished at {draft.status[COMPLETION_TIME]}; deleting it because its "
                f"ttlSecondsAfterFinished of {ttl}s has passed.")


def clean_pod_policy(value: object) -> str:
    policy = text(value)
    return policy if policy in CLEAN_POD_POLICIES and policy is not None else CLEAN_POD_POLICY_RUNNING


def clean_up(draft: PlanDraft, context: PlanContext, policy: str) -> None:
    """Deletes the pods the policy names (All; Running: those not finished; None) and the services of every pod
    that is not kept (a Service and its Pod share their name), and the job's PodGroup unless every pod is kept
    (None: a pod still running keeps its group), then notes whether anything is still going."""
    pods, services, groups = context.of_kind(POD), context.of_kind(SERVICE), context.of_kind(POD_GROUP)
    if policy != CLEAN_POD_POLICY_NONE:
        for group in groups:
            if not is_terminating(group):
                draft.delete_child(POD_GROUP, group)
        kept: set[str] = set()
        for pod in pods:
            if is_terminating(pod):
                continue
            if policy == CLEAN_POD_POLICY_ALL or pod_phase(pod) not in (POD_SUCCEEDED, POD_FAILED):
                draft.delete_child(POD, pod)
            else:
                kept.add(str(mapping(pod.get("metadata")).get("name")))
        for service in services:
            if not is_terminating(service) and mapping(service.get("metadata")).get("name") not in kept:
                draft.delete_child(SERVICE, service)
    if not any(not is_terminating(group) for group in groups) or policy != CLEAN_POD_POLICY_NONE:
        draft.status.pop("podGroupPhase", None)  # no PodGroup is left to have a phase
    draft.note_cleanup([*pods, *services, *groups])
