"""The Job backend in the planner: which backend a job has, its Jobs sorted into replica slots with each slot's
state read from the Job and its latest pod, and its restarts summed over the Jobs.

The Job controller, not the operator, replaces a replica's failed pod; the planner only reads what it did. A Job's
restarts are the failed pods it counted (Job `status.failed`, which leaves out the disruptions its
podFailurePolicy ignores), but for the last one when that failure was final, plus the in-place restarts of its
pods' containers (OnFailure). Their sum over all the Jobs is the job's restart count against its backoffLimit.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

from tfop.api.constants import (
    EVENT_WARNING,
    LABEL_REPLICA_INDEX,
    POD_FAILED,
    REASON_RESTARTING,
    REPLICA_WORKER,
    RESTART_POLICY_EXIT_CODE,
    RESTART_POLICY_NEVER,
)
from tfop.controller.plan.children.batch_job import (
    FAILED_BY_BACKOFF_LIMIT,
    controller_uid,
    job_backoff_limit,
    made_by_job,
)
from tfop.controller.plan.children.desired import replica_slot_of
from tfop.controller.plan.children.naming import ChildNaming
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import TFJobSpec
from tfop.controller.plan.observed.batch_job import BatchJobView
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.replicas.pod_slots import (
    Slot,
    SlotState,
    SortedChildren,
    fill_slots,
    replica_types,
    slot_state,
)
from tfop.controller.plan.replicas.replica_status import describe_failure
from tfop.controller.plan.replicas.restart_ledger import RestartCount, RestartLedger, count_restarts
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import JOB, SERVICE, ChildPatch, PlanContext, ReplicaRestart

_NEVER = datetime.min.replace(tzinfo=UTC)  # a pod without a creationTimestamp sorts first


def sort_job_children(spec: TFJobSpec, context: PlanContext, naming: ChildNaming) -> SortedChildren:
    """The slots of a job whose replicas are Jobs."""
    observed = context.observed
    pods_by_job: dict[str, list[PodView]] = defaultdict(list)
    for pod in observed.pods:
        if made_by_job(pod):
            pods_by_job[controller_uid(pod)].append(pod)
    jobs_at, surplus_jobs = fill_slots(spec, observed.batch_jobs, naming)
    services_at, surplus_services = fill_slots(spec, observed.services, naming)
    latest_by_type: dict[str, list[PodView]] = defaultdict(list)
    for each_job in observed.batch_jobs:
        latest = latest_pod(pods_by_job.get(each_job.uid, []))
        slot = replica_slot_of(each_job)
        if latest is not None and slot is not None:
            latest_by_type[slot.replica_type].append(latest)
    slots = []
    for replica_type in replica_types(spec):
        for index in range(spec.replicas(replica_type)):
            replica = ReplicaSlot(replica_type, index)
            batch_job = jobs_at.get(replica)
            pods = pods_by_job.get(batch_job.uid, []) if batch_job is not None else []
            state = job_slot_state(spec, replica, batch_job, latest_pod(pods))
            shown = latest_failed(pods) if state in (SlotState.PERMANENT, SlotState.TOLERATED,
                                                     SlotState.EXHAUSTED) else latest_pod(pods)
            slots.append(Slot(replica, shown or latest_pod(pods), state))
    return SortedChildren(slots, services_at, {JOB: list(surplus_jobs), SERVICE: list(surplus_services)},
                          dict(latest_by_type),
                          batch_jobs=jobs_at, pods_by_job=dict(pods_by_job))


def job_slot_state(spec: TFJobSpec, slot: ReplicaSlot, batch_job: BatchJobView | None,
                   pod: PodView | None) -> SlotState:
    """The Job decides once it has finished; until then its latest pod shows where the replica is, read as the Pod
    backend reads a pod (a failed one is being replaced by the Job controller, or about to fail the Job)."""
    if batch_job is None:
        return SlotState.ABSENT
    if batch_job.terminating:
        return SlotState.TERMINATING
    outcome = batch_job.outcome
    policy = spec.replica_specs[slot.replica_type].restart_policy
    if outcome is not None:
        if outcome.result == "Complete":
            return SlotState.SUCCEEDED
        if outcome.reason == FAILED_BY_BACKOFF_LIMIT and policy != RESTART_POLICY_NEVER:
            return SlotState.EXHAUSTED
        if slot.replica_type == REPLICA_WORKER and spec.enable_dynamic_worker:
            return SlotState.TOLERATED
        return SlotState.PERMANENT
    if pod is None:
        return SlotState.PENDING  # the Job controller is about to make it
    if pod.terminating:
        return SlotState.TERMINATING
    if pod.phase == POD_FAILED and pod.disrupted and policy != RESTART_POLICY_NEVER:
        return SlotState.RETRYABLE  # ignored by the Job's podFailurePolicy: replaced, not counted
    return slot_state(spec, slot, pod)


def latest_pod(pods: list[PodView]) -> PodView | None:
    """The pod the Job made last, preferring one not being deleted."""
    if not pods:
        return None
    return max(pods, key=lambda pod: (not pod.terminating, pod.created or _NEVER, pod.name))


def latest_failed(pods: list[PodView]) -> PodView | None:
    return latest_pod([pod for pod in pods if pod.phase == POD_FAILED])


def job_restarts(slot_of_job: Slot | None, batch_job: BatchJobView, pods: list[PodView], *,
                 ignores_disruptions: bool) -> int:
    """The failed pods the Job counted, less a final failure (which fails the job rather than restarting it), plus
    its pods' in-place restarts. A Job without the podFailurePolicy that ignores disruptions (`ignores_disruptions`
    False: it has none under OnFailure, Always and Never) counts its disrupted pods too, which are no restarts: its
    count is then capped by its failed pods without DisruptionTarget. Capped rather than less the disrupted ones, so
    the count never dips while the Job has yet to count a disrupted pod the cache already shows failed."""
    failed = batch_job.failed
    if not ignores_disruptions:
        failed = min(failed, sum(1 for pod in pods if pod.phase == POD_FAILED and not pod.disrupted))
    if slot_of_job is not None and slot_of_job.state in (SlotState.PERMANENT, SlotState.TOLERATED):
        failed -= 1
    return max(failed, 0) + sum(pod.restart_count for pod in pods if not pod.terminating)


def count_job_restarts(draft: PlanDraft, spec: TFJobSpec, context: PlanContext, children: SortedChildren, *,
                       deleting: set[str]) -> dict[str, RestartCount]:
    """Restarts per replica type summed over its Jobs; a Job deleted now (`deleting`: Job uids) has its count
    retired into the status, as the Pod backend retires a deleted pod's. New restarts are announced with the
    latest failure."""
    slot_by_job = {children.batch_jobs[slot.slot].uid: slot for slot in children.slots
                   if slot.slot in children.batch_jobs}
    jobs_by_type: dict[str, list[BatchJobView]] = defaultdict(list)
    batch_jobs = context.observed.batch_jobs
    for batch_job in batch_jobs:
        slot = replica_slot_of(batch_job)
        if slot is not None:
            jobs_by_type[slot.replica_type].append(batch_job)
    restarts = {batch_job.uid: job_restarts(slot_by_job.get(batch_job.uid), batch_job,
                                            children.pods_by_job.get(batch_job.uid, []),
                                            ignores_disruptions=_ignores_disruptions(spec, batch_job))
                for batch_job in batch_jobs}
    counts: dict[str, RestartCount] = {}
    for replica_type in replica_types(spec):
        before = draft.status.replica(replica_type)
        count = count_restarts(RestartLedger.from_replica_status(before), jobs_by_type.get(replica_type, []),
                               deleting=deleting, recreating=set(),
                               restarts_of=lambda batch_job: restarts[batch_job.uid])
        counts[replica_type] = count
        new = count.total - ((before.restarts if before is not None else None) or 0)
        if new <= 0:
            continue
        pods = [pod for batch_job in jobs_by_type.get(replica_type, [])
                for pod in children.pods_by_job.get(batch_job.uid, [])]
        # A disruption is no restart: name the failure that is one.
        latest = _latest_ended([pod for pod in pods if not pod.disrupted]) or _latest_ended(pods)
        said = describe_failure(latest) if latest is not None else f"{replica_type} replicas"
        draft.event(EVENT_WARNING, REASON_RESTARTING,
                    f"{draft.job_ref} is restarting {said}." if new == 1 else
                    f"{draft.job_ref}: {replica_type} replicas restarted {new} more time(s), {count.total} in all; "
                    f"the latest: {said}.")
        exit_class = latest.exit_class_name if latest is not None else "unknown"
        draft.restarts_by_exit_class[exit_class] += new
        draft.restarts += new
        index = latest.labels.get(LABEL_REPLICA_INDEX, "") if latest is not None else ""
        draft.restarted.append(ReplicaRestart(replica_type, int(index) if index.isdigit() else None,
                                              latest.exit_code if latest is not None else None, exit_class,
                                              count.total, in_place=new))
    return counts


def keep_job_limits(draft: PlanDraft, spec: TFJobSpec, children: SortedChildren) -> None:
    """Each running replica's Job keeps the backoffLimit its restartPolicy maps to (children/batch_job.py), one of
    the few fields of a Job that may change: a Job an earlier tfop made under OnFailure or Always had a limit of its
    own that counted disruptions, and a TFJob whose backoffLimit is edited moves its Jobs' with it."""
    for slot, batch_job in children.batch_jobs.items():
        replica = spec.replica_specs.get(slot.replica_type)
        if replica is None or batch_job.terminating or batch_job.outcome is not None or batch_job.backoff_limit is None:
            continue
        wanted = job_backoff_limit(replica.restart_policy, spec.run_policy.backoff_limit)
        if batch_job.backoff_limit != wanted:
            draft.patch.append(ChildPatch(JOB, batch_job.name, {"spec": {"backoffLimit": wanted}}))


def _ignores_disruptions(spec: TFJobSpec, batch_job: BatchJobView) -> bool:
    """Whether the replica's Job has the podFailurePolicy that ignores DisruptionTarget (ExitCode's: Kubernetes
    allows a podFailurePolicy only with the pod restartPolicy Never)."""
    slot = replica_slot_of(batch_job)
    replica_spec = spec.replica_specs.get(slot.replica_type) if slot is not None else None
    return replica_spec is not None and replica_spec.restart_policy == RESTART_POLICY_EXIT_CODE


def _latest_ended(pods: list[PodView]) -> PodView | None:
    """Of `pods`, the one whose tensorflow container ended last (failed, or restarted in place)."""
    def finished(pod: PodView) -> str:
        if pod.phase == POD_FAILED:
            at = next((run.terminated.finished_at for run in pod.containers
                       if run.terminated is not None and run.terminated.finished_at), "")
            if at:
                return at
        return next((run.last_terminated.finished_at for run in pod.containers
                     if run.last_terminated is not None and run.last_terminated.finished_at), "")

    ended = [pod for pod in pods if finished(pod) or pod.phase == POD_FAILED]
    return max(ended, key=lambda pod: (finished(pod), pod.created or _NEVER)) if ended else None
