"""The Job backend in the planner: which backend a job has, its Jobs sorted into replica slots with each slot's
state read from the Job and its latest pod, and its restarts summed over the Jobs.

The Job controller, not the operator, replaces a replica's failed pod; the planner only reads what it did. A Job's
restarts are the failed pods it counted (Job `status.failed`, which leaves out the disruptions its
podFailurePolicy ignores), but for the last one when that failure was final, plus the in-place restarts of its
pods' containers (OnFailure). Their sum over all the Jobs is the job's restart count against its backoffLimit.
"""

from __future__ import annotations

from collections import defaultdict

from tfop.api.constants import (
    EVENT_WARNING,
    LABEL_REPLICA_INDEX,
    POD_FAILED,
    REASON_RESTARTING,
    REPLICA_WORKER,
    RESTART_POLICY_EXIT_CODE,
    RESTART_POLICY_NEVER,
)
from tfop.api.fields import integer, mapping, mapping_at, text
from tfop.controller.plan.children.batch_job import (
    FAILED_BY_BACKOFF_LIMIT,
    controller_uid,
    failed_pods,
    is_disrupted,
    job_outcome,
    made_by_job,
)
from tfop.controller.plan.children.desired import replica_slot_of
from tfop.controller.plan.children.naming import ChildNaming
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import TFJobSpec
from tfop.controller.plan.replicas.exit_codes import container_termination, exit_class_name
from tfop.controller.plan.replicas.pod_slots import (
    Slot,
    SlotState,
    SortedChildren,
    fill_slots,
    replica_types,
    slot_state,
)
from tfop.controller.plan.replicas.replica_status import describe_failure, uid_of
from tfop.controller.plan.replicas.restart_ledger import RestartCount, RestartLedger, count_restarts
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.status import is_terminating, pod_phase, pod_restart_count
from tfop.controller.plan.types import JOB, POD, SERVICE, PlanContext, ReplicaRestart
from tfop.objects import Object


def sort_job_children(spec: TFJobSpec, context: PlanContext, naming: ChildNaming) -> SortedChildren:
    """The slots of a job whose replicas are Jobs."""
    pods_by_job: dict[str, list[Object]] = defaultdict(list)
    for pod in context.of_kind(POD):
        if made_by_job(pod):
            pods_by_job[controller_uid(pod)].append(pod)
    jobs_at, surplus_jobs = fill_slots(spec, context.of_kind(JOB), naming)
    services_at, surplus_services = fill_slots(spec, context.of_kind(SERVICE), naming)
    latest_by_type: dict[str, list[Object]] = defaultdict(list)
    for each_job in context.of_kind(JOB):
        latest = latest_pod(pods_by_job.get(uid_of(each_job), []))
        slot = replica_slot_of(each_job)
        if latest is not None and slot is not None:
            latest_by_type[slot.replica_type].append(latest)
    slots = []
    for replica_type in replica_types(spec):
        for index in range(spec.replicas(replica_type)):
            replica = ReplicaSlot(replica_type, index)
            batch_job = jobs_at.get(replica)
            pods = pods_by_job.get(uid_of(batch_job), []) if batch_job is not None else []
            state = job_slot_state(spec, replica, batch_job, latest_pod(pods))
            shown = latest_failed(pods) if state in (SlotState.PERMANENT, SlotState.TOLERATED,
                                                     SlotState.EXHAUSTED) else latest_pod(pods)
            slots.append(Slot(replica, shown or latest_pod(pods), state))
    return SortedChildren(slots, services_at, {JOB: surplus_jobs, SERVICE: surplus_services}, dict(latest_by_type),
                          batch_jobs=jobs_at, pods_by_job=dict(pods_by_job))


def job_slot_state(spec: TFJobSpec, slot: ReplicaSlot, batch_job: Object | None, pod: Object | None) -> SlotState:
    """The Job decides once it has finished; until then its latest pod shows where the replica is, read as the Pod
    backend reads a pod (a failed one is being replaced by the Job controller, or about to fail the Job)."""
    if batch_job is None:
        return SlotState.ABSENT
    if is_terminating(batch_job):
        return SlotState.TERMINATING
    outcome = job_outcome(batch_job)
    policy = spec.replica_specs[slot.replica_type].restart_policy
    if outcome is not None:
        result, reason = outcome
        if result == "Complete":
            return SlotState.SUCCEEDED
        if reason == FAILED_BY_BACKOFF_LIMIT and policy != RESTART_POLICY_NEVER:
            return SlotState.EXHAUSTED
        if slot.replica_type == REPLICA_WORKER and spec.enable_dynamic_worker:
            return SlotState.TOLERATED
        return SlotState.PERMANENT
    if pod is None:
        return SlotState.PENDING  # the Job controller is about to make it
    if is_terminating(pod):
        return SlotState.TERMINATING
    if pod_phase(pod) == POD_FAILED and is_disrupted(pod) and policy != RESTART_POLICY_NEVER:
        return SlotState.RETRYABLE  # ignored by the Job's podFailurePolicy: replaced, not counted
    return slot_state(spec, slot, pod)


def latest_pod(pods: list[Object]) -> Object | None:
    """The pod the Job made last, preferring one not being deleted."""
    if not pods:
        return None
    return max(pods, key=lambda pod: (not is_terminating(pod),
                                      text(mapping_at(pod, "metadata").get("creationTimestamp")) or "",
                                      text(mapping_at(pod, "metadata").get("name")) or ""))


def latest_failed(pods: list[Object]) -> Object | None:
    return latest_pod([pod for pod in pods if pod_phase(pod) == POD_FAILED])


def job_restarts(slot_of_job: Slot | None, batch_job: Object, pods: list[Object], *, ignores_disruptions: bool) -> int:
    """The failed pods the Job counted, less a final failure (which fails the job rather than restarting it), plus
    its pods' in-place restarts. A Job without the podFailurePolicy that ignores disruptions (`ignores_disruptions`
    False: it has none under OnFailure, Always and Never) counts its disrupted pods too, which are no restarts: its
    count is then capped by its failed pods without DisruptionTarget. Capped rather than less the disrupted ones, so
    the count never dips while the Job has yet to count a disrupted pod the cache already shows failed."""
    failed = failed_pods(batch_job)
    if not ignores_disruptions:
        failed = min(failed, sum(1 for pod in pods if pod_phase(pod) == POD_FAILED and not is_disrupted(pod)))
    if slot_of_job is not None and slot_of_job.state in (SlotState.PERMANENT, SlotState.TOLERATED):
        failed -= 1
    return max(failed, 0) + sum(pod_restart_count(pod) for pod in pods if not is_terminating(pod))


def count_job_restarts(draft: PlanDraft, spec: TFJobSpec, context: PlanContext, children: SortedChildren, *,
                       deleting: set[str]) -> dict[str, RestartCount]:
    """Restarts per replica type summed over its Jobs; a Job deleted now (`deleting`: Job uids) has its count
    retired into the status, as the Pod backend retires a deleted pod's. New restarts are announced with the
    latest failure."""
    slot_by_job = {uid_of(children.batch_jobs[slot.slot]): slot for slot in children.slots
                   if slot.slot in children.batch_jobs}
    previous = mapping(draft.status.get("replicaStatuses"))
    jobs_by_type: dict[str, list[Object]] = defaultdict(list)
    for batch_job in context.of_kind(JOB):
        slot = replica_slot_of(batch_job)
        if slot is not None:
            jobs_by_type[slot.replica_type].append(batch_job)
    restarts = {uid_of(batch_job): job_restarts(slot_by_job.get(uid_of(batch_job)), batch_job,
                                                children.pods_by_job.get(uid_of(batch_job), []),
                                                ignores_disruptions=_ignores_disruptions(spec, batch_job))
                for batch_job in context.of_kind(JOB)}
    counts: dict[str, RestartCount] = {}
    for replica_type in replica_types(spec):
        before = mapping(previous.get(replica_type))
        count = count_restarts(RestartLedger.from_replica_status(before), jobs_by_type.get(replica_type, []),
                               deleting=deleting, recreating=set(),
                               restarts_of=lambda batch_job: restarts[uid_of(batch_job)])
        counts[replica_type] = count
        new = count.total - (integer(before.get("restarts")) or 0)
        if new <= 0:
            continue
        pods = [pod for batch_job in jobs_by_type.get(replica_type, [])
                for pod in children.pods_by_job.get(uid_of(batch_job), [])]
        # A disruption is no restart: name the failure that is one.
        latest = _latest_ended([pod for pod in pods if not is_disrupted(pod)]) or _latest_ended(pods)
        said = describe_failure(latest) if latest is not None else f"{replica_type} replicas"
        draft.event(EVENT_WARNING, REASON_RESTARTING,
                    f"{draft.job_ref} is restarting {said}." if new == 1 else
                    f"{draft.job_ref}: {replica_type} replicas restarted {new} more time(s), {count.total} in all; "
                    f"the latest: {said}.")
        exit_class = exit_class_name(latest) if latest is not None else "unknown"
        draft.restarts_by_exit_class[exit_class] += new
        draft.restarts += new
        termination = container_termination(latest)
        index = text(mapping_at(latest, "metadata", "labels").get(LABEL_REPLICA_INDEX)) or ""
        draft.restarted.append(ReplicaRestart(replica_type, int(index) if index.isdigit() else None,
                                              termination.exit_code if termination else None, exit_class,
                                              count.total, in_place=new))
    return counts


def _ignores_disruptions(spec: TFJobSpec, batch_job: Object) -> bool:
    """Whether the replica's Job has the podFailurePolicy that ignores DisruptionTarget (ExitCode's: Kubernetes
    allows a podFailurePolicy only with the pod restartPolicy Never)."""
    slot = replica_slot_of(batch_job)
    replica_spec = spec.replica_specs.get(slot.replica_type) if slot is not None else None
    return replica_spec is not None and replica_spec.restart_policy == RESTART_POLICY_EXIT_CODE


def _latest_ended(pods: list[Object]) -> Object | None:
    """Of `pods`, the one whose tensorflow container ended last (failed, or restarted in place)."""
    def finished(pod: Object) -> str:
        for key in ("state", "lastState"):
            for status in mapping_at(pod, "status").get("containerStatuses") or ():
                at = text(mapping_at(status, key, "terminated").get("finishedAt"))
                if at and (key == "lastState" or pod_phase(pod) == POD_FAILED):
                    return at
        return ""

    ended = [pod for pod in pods if finished(pod) or pod_phase(pod) == POD_FAILED]
    return max(ended, key=lambda pod: (finished(pod), text(mapping_at(pod, "metadata").get("creationTimestamp"))
                                       or "")) if ended else None
