"""Which of a job's replicas go, by cleanPodPolicy: its pods (or replica Jobs) and their services, when it
finishes, is suspended, or waits for its evaluators; the Jobs a suspension keeps, suspended, and resumes. These
read the pass's views of the children (PlanContext.observed).
"""

from __future__ import annotations

from collections.abc import Iterable

from tfop.api.constants import (
    CLEAN_POD_POLICY_ALL,
    CLEAN_POD_POLICY_NONE,
    POD_FAILED,
    POD_SUCCEEDED,
    CleanPodPolicy,
)
from tfop.controller.plan.children.batch_job import controller_uid, made_by_job
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.observed.batch_job import BatchJobView
from tfop.controller.plan.types import JOB, POD, POD_GROUP, SERVICE, ChildPatch, PlanContext


def clean_up(draft: PlanDraft, context: PlanContext, policy: CleanPodPolicy, *,
             spare: frozenset[str] = frozenset()) -> None:
    """Deletes the pods the policy names (All; Running: those not finished; None) and the services of every pod
    that is not kept (a Service and its Pod share their name), then notes whether anything is still going. With
    the Job backend the same goes for each replica's Job, deleted with its pod; the pods of Jobs are never deleted
    by themselves. `spare`: names of pods or Jobs kept whatever the policy (evaluators finishing), with their
    services. The job's own children (its PodGroup among them) are policies/job_children.py's."""
    kept = _clean_pods(draft, context, policy, spare)
    if policy != CLEAN_POD_POLICY_NONE:
        for batch_job, finished in _live_batch_jobs(context):
            if batch_job.name in spare or (finished and policy != CLEAN_POD_POLICY_ALL):
                kept.add(batch_job.name)
            else:
                draft.delete_child(JOB, batch_job)
    _clean_services(draft, context, policy, kept)


def suspend_replica_jobs(draft: PlanDraft, context: PlanContext) -> None:
    """A suspension with the Job backend: each unfinished Job is suspended (the Job controller removes its pod)
    and kept, with its restarts; stray pods and services go as under cleanPodPolicy All."""
    _clean_pods(draft, context, CLEAN_POD_POLICY_ALL)
    for batch_job, finished in _live_batch_jobs(context):
        if not finished and not batch_job.suspended:
            draft.patch.append(ChildPatch(JOB, batch_job.name, {"spec": {"suspend": True}}))
    _clean_services(draft, context, CLEAN_POD_POLICY_ALL, set())


def _clean_pods(draft: PlanDraft, context: PlanContext, policy: CleanPodPolicy,
                spare: frozenset[str] = frozenset()) -> set[str]:
    """Deletes the pods the policy names; returns the names of the pods it keeps."""
    kept: set[str] = set(spare)
    if policy == CLEAN_POD_POLICY_NONE:
        return kept
    for pod in context.observed.pods:
        if made_by_job(pod) or pod.terminating or pod.name in spare:
            continue
        if policy == CLEAN_POD_POLICY_ALL or pod.phase not in (POD_SUCCEEDED, POD_FAILED):
            draft.delete_child(POD, pod)
        else:
            kept.add(pod.name)
    return kept


def _live_batch_jobs(context: PlanContext) -> list[tuple[BatchJobView, bool]]:
    """The replica Jobs not being deleted, each with whether it has finished: the Job controller says so, or it
    has yet to say so of a pod that has ended."""
    job_pods = [pod for pod in context.observed.pods if made_by_job(pod)]
    live = []
    for batch_job in context.observed.batch_jobs:
        if batch_job.terminating:
            continue
        its_pods = [pod for pod in job_pods if controller_uid(pod) == batch_job.uid]
        finished = batch_job.outcome is not None or (bool(its_pods) and all(
            pod.phase in (POD_SUCCEEDED, POD_FAILED) for pod in its_pods))
        live.append((batch_job, finished))
    return live


def _clean_services(draft: PlanDraft, context: PlanContext, policy: CleanPodPolicy, kept: set[str]) -> None:
    """Deletes the services of the pods not kept, and notes whether the clean-up is still going."""
    services, groups = context.observed.services, context.observed.own_of(POD_GROUP)
    if policy != CLEAN_POD_POLICY_NONE:
        for service in services:
            if not service.terminating and service.name not in kept:
                draft.delete_child(SERVICE, service)
    if not any(not group.terminating for group in groups) or policy != CLEAN_POD_POLICY_NONE:
        draft.status = replace(draft.status, pod_group_phase=None)  # no PodGroup is left to have a phase
    pods = [pod for pod in context.observed.pods if not made_by_job(pod)]
    draft.note_cleanup(any(child.terminating for child in (*pods, *services, *context.observed.batch_jobs))
                       or any(group.terminating for group in groups))


def resume_jobs(draft: PlanDraft, batch_jobs: Iterable[BatchJobView]) -> None:
    """The Jobs a suspension left suspended run again (the Job controller makes their pods)."""
    for batch_job in batch_jobs:
        if batch_job.suspended and not batch_job.terminating and batch_job.outcome is None:
            draft.patch.append(ChildPatch(JOB, batch_job.name, {"spec": {"suspend": False}}))
