"""Which of a job's replicas go, by cleanPodPolicy: its pods (or replica Jobs) and their services, and its
PodGroup, when it finishes, is suspended, or waits for its evaluators; the Jobs a suspension keeps, suspended, and
resumes. These work on the raw child lists.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tfop.api.constants import (
    CLEAN_POD_POLICY_ALL,
    CLEAN_POD_POLICY_NONE,
    POD_FAILED,
    POD_SUCCEEDED,
)
from tfop.api.fields import mapping
from tfop.controller.plan.children.batch_job import controller_uid, is_suspended, job_outcome, made_by_job
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.status import is_terminating, pod_phase
from tfop.controller.plan.types import JOB, POD, POD_GROUP, SERVICE, ChildPatch, PlanContext
from tfop.objects import Object


def clean_up(draft: PlanDraft, context: PlanContext, policy: str, *, spare: frozenset[str] = frozenset()) -> None:
    """Deletes the pods the policy names (All; Running: those not finished; None) and the services of every pod
    that is not kept (a Service and its Pod share their name), and the job's PodGroup unless every pod is kept
    (None: a pod still running keeps its group), then notes whether anything is still going. With the Job
    backend the same goes for each replica's Job, deleted with its pod; the pods of Jobs are never deleted by
    themselves. `spare`: names of pods or Jobs kept whatever the policy (evaluators finishing), with their
    services and the PodGroup they are scheduled in."""
    kept = _clean_pods_and_groups(draft, context, policy, spare)
    if policy != CLEAN_POD_POLICY_NONE:
        for batch_job, finished in _live_batch_jobs(context):
            if _name(batch_job) in spare or (finished and policy != CLEAN_POD_POLICY_ALL):
                kept.add(_name(batch_job))
            else:
                draft.delete_child(JOB, batch_job)
    _clean_services(draft, context, policy, kept)


def suspend_replica_jobs(draft: PlanDraft, context: PlanContext) -> None:
    """A suspension with the Job backend: each unfinished Job is suspended (the Job controller removes its pod)
    and kept, with its restarts; PodGroups, stray pods and services go as under cleanPodPolicy All."""
    _clean_pods_and_groups(draft, context, CLEAN_POD_POLICY_ALL)
    for batch_job, finished in _live_batch_jobs(context):
        if not finished and not is_suspended(batch_job):
            draft.patch.append(ChildPatch(JOB, _name(batch_job), {"spec": {"suspend": True}}))
    _clean_services(draft, context, CLEAN_POD_POLICY_ALL, set())


def _clean_pods_and_groups(draft: PlanDraft, context: PlanContext, policy: str,
                           spare: frozenset[str] = frozenset()) -> set[str]:
    """Deletes the PodGroups and the pods the policy names; returns the names of the pods it keeps."""
    kept: set[str] = set(spare)
    if policy == CLEAN_POD_POLICY_NONE:
        return kept
    for group in context.of_kind(POD_GROUP):
        if not is_terminating(group) and not spare:
            draft.delete_child(POD_GROUP, group)
    for pod in context.of_kind(POD):
        if made_by_job(pod) or is_terminating(pod) or _name(pod) in spare:
            continue
        if policy == CLEAN_POD_POLICY_ALL or pod_phase(pod) not in (POD_SUCCEEDED, POD_FAILED):
            draft.delete_child(POD, pod)
        else:
            kept.add(_name(pod))
    return kept


def _live_batch_jobs(context: PlanContext) -> list[tuple[Object, bool]]:
    """The replica Jobs not being deleted, each with whether it has finished: the Job controller says so, or it
    has yet to say so of a pod that has ended."""
    job_pods = [pod for pod in context.of_kind(POD) if made_by_job(pod)]
    live = []
    for batch_job in context.of_kind(JOB):
        if is_terminating(batch_job):
            continue
        its_pods = [pod for pod in job_pods if controller_uid(pod) == _uid(batch_job)]
        finished = job_outcome(batch_job) is not None or (bool(its_pods) and all(
            pod_phase(pod) in (POD_SUCCEEDED, POD_FAILED) for pod in its_pods))
        live.append((batch_job, finished))
    return live


def _clean_services(draft: PlanDraft, context: PlanContext, policy: str, kept: set[str]) -> None:
    """Deletes the services of the pods not kept, and notes whether the clean-up is still going."""
    services, groups = context.of_kind(SERVICE), context.of_kind(POD_GROUP)
    if policy != CLEAN_POD_POLICY_NONE:
        for service in services:
            if not is_terminating(service) and _name(service) not in kept:
                draft.delete_child(SERVICE, service)
    if not any(not is_terminating(group) for group in groups) or policy != CLEAN_POD_POLICY_NONE:
        draft.status.pop("podGroupPhase", None)  # no PodGroup is left to have a phase
    pods = [pod for pod in context.of_kind(POD) if not made_by_job(pod)]
    draft.note_cleanup([*pods, *services, *groups, *context.of_kind(JOB)])


def resume_jobs(draft: PlanDraft, batch_jobs: Iterable[dict[str, Any]]) -> None:
    """The Jobs a suspension left suspended run again (the Job controller makes their pods)."""
    for batch_job in batch_jobs:
        if is_suspended(batch_job) and not is_terminating(batch_job) and job_outcome(batch_job) is None:
            draft.patch.append(ChildPatch(JOB, _name(batch_job), {"spec": {"suspend": False}}))


def _uid(child: dict[str, Any]) -> str:
    return str(mapping(child.get("metadata")).get("uid"))


def _name(child: dict[str, Any]) -> str:
    return str(mapping(child.get("metadata")).get("name"))
