"""Planning one reconcile of a TFJob: (job, its pods and services, now, config) -> Plan.

Pure and level-triggered: the plan depends only on what it is given, never on which event woke the worker, so
planning twice on the same state yields the same plan, and a plan made from a status the job already has changes
nothing. The wiring passes only children whose controller ownerReference is this job's uid.
"""

from __future__ import annotations

import enum
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tfop.api.constants import (
    CHIEF_REPLICA_TYPES,
    CLEAN_POD_POLICY_ALL,
    CONDITION_CREATED,
    CONDITION_FAILED,
    CONDITION_RESTARTING,
    CONDITION_RUNNING,
    CONDITION_SUCCEEDED,
    CONDITION_SUSPENDED,
    EVENT_WARNING,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    REASON_BACKOFF_LIMIT_EXCEEDED,
    REASON_CREATED,
    REASON_DEADLINE_EXCEEDED,
    REASON_FAILED,
    REASON_INVALID_SPEC,
    REASON_PENDING,
    REASON_RESTARTING,
    REASON_RESUMED,
    REASON_RUNNING,
    REASON_SPEC_CORRECTED,
    REASON_SUCCEEDED,
    REASON_SUSPENDED,
    REPLICA_TYPES,
    REPLICA_WORKER,
    RESTART_POLICY_ALWAYS,
    RESTART_POLICY_EXIT_CODE,
    RESTART_POLICY_ON_FAILURE,
    SUCCESS_POLICY_ALL_WORKERS,
)
from tfop.api.defaults import apply_defaults, canonical_replica_type
from tfop.api.fields import integer, mapping, mapping_at, text
from tfop.api.runtime_id import runtime_id
from tfop.api.timestamps import parse_time
from tfop.api.validation import FieldError, validate
from tfop.controller.draft import PlanDraft
from tfop.controller.exitcodes import (
    ExitClass,
    container_termination,
    exit_class_name,
    latest_exit_class_name,
)
from tfop.controller.lifecycle import COMPLETION_TIME, clean_up, finish, keep_finished
from tfop.controller.plan_types import ChildRef, JobCounters, JobEvent, Plan, PlannerConfig
from tfop.controller.resources import DesiredChildren, ReplicaSlot, job_runtime_id, replica_count, replica_slot_of
from tfop.controller.restarts import RestartCount, RestartLedger, count_restarts
from tfop.controller.status import TRUE, is_terminating, pod_phase, replica_status

__all__ = ["ChildRef", "JobCounters", "JobEvent", "Plan", "PlannerConfig", "plan"]

START_TIME = "startTime"
_MAX_LISTED = 5  # replicas or field errors named in one message; the rest are counted


class SlotState(enum.Enum):
    """What the cache shows for one replica slot; the values read well in a condition message."""

    ABSENT = "not created"
    TERMINATING = "being deleted"
    PENDING = "Pending"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    SUCCEEDED = "Succeeded"
    RETRYABLE = "failed, to be recreated"
    PERMANENT = "failed"
    TOLERATED = "failed, tolerated as a dynamic worker"


@dataclass(frozen=True)
class _Slot:
    slot: ReplicaSlot
    pod: dict[str, Any] | None
    state: SlotState


@dataclass(frozen=True)
class _Children:
    slots: list[_Slot]  # every replica the spec asks for, in a stable order
    services: dict[ReplicaSlot, dict[str, Any]]
    surplus_pods: list[dict[str, Any]]  # ours but filling no slot: scaled down, a type removed, a foreign name
    surplus_services: list[dict[str, Any]]
    pods_by_type: dict[str, list[dict[str, Any]]]  # every pod with a replica type, slot or not


def plan(job: dict[str, Any], pods: list[dict[str, Any]], services: list[dict[str, Any]], now: datetime,
         config: PlannerConfig = PlannerConfig()) -> Plan:
    if is_terminating(job):
        return Plan()  # the garbage collector removes the children of a deleted job
    draft = PlanDraft(job, now, config)
    defaulted = apply_defaults(job)
    errors = validate(defaulted)
    _note_created(draft, defaulted)
    if _is_finished(draft):
        keep_finished(draft, defaulted, pods, services, just_finished=False)
    elif errors:
        _reject(draft, defaulted, errors, pods, services)
    else:
        _run(draft, defaulted, pods, services)
    return draft.finalize()


def _note_created(draft: PlanDraft, job: dict[str, Any]) -> None:
    if draft.condition(CONDITION_CREATED) is None:
        draft.set_condition(CONDITION_CREATED, true=True, reason=REASON_CREATED, message=f"{draft.job_ref} is created.")
    uid = text(mapping_at(job, "metadata").get("uid"))
    if uid:
        draft.status["runtimeId"] = runtime_id(uid)


def _is_finished(draft: PlanDraft) -> bool:
    """Succeeded and Failed are final, except a failure for an invalid spec that the user has edited since."""
    if draft.is_true(CONDITION_SUCCEEDED):
        return True
    failed = draft.condition(CONDITION_FAILED)
    if failed is None or failed.get("status") != TRUE:
        return False
    return failed.get("reason") != REASON_INVALID_SPEC or failed.get("observedGeneration") == draft.generation


def _reject(draft: PlanDraft, job: dict[str, Any], errors: list[FieldError], pods: list[dict[str, Any]],
            services: list[dict[str, Any]]) -> None:
    """An invalid job fails without creating anything, and waits for its spec to change."""
    listed = _listing([str(error) for error in errors])
    finish(draft, CONDITION_FAILED, REASON_INVALID_SPEC, f"{draft.job_ref} has an invalid spec: {listed}.")
    keep_finished(draft, job, pods, services, just_finished=True)


def _run(draft: PlanDraft, job: dict[str, Any], pods: list[dict[str, Any]], services: list[dict[str, Any]]) -> None:
    if draft.is_true(CONDITION_FAILED):  # it failed for an invalid spec, and the new spec is valid
        draft.set_condition(CONDITION_FAILED, true=False, reason=REASON_SPEC_CORRECTED,
                            message=f"{draft.job_ref} has a valid spec again.")
        draft.status.pop(COMPLETION_TIME, None)
    children = _sort_children(job, pods, services)
    if job["spec"]["runPolicy"].get("suspend") is True:
        _suspend(draft, job, children, pods, services)
        return
    if draft.is_true(CONDITION_SUSPENDED):
        draft.set_condition(CONDITION_SUSPENDED, true=False, reason=REASON_RESUMED,
                            message=f"{draft.job_ref} is resumed.")
        draft.set_time(START_TIME)  # activeDeadlineSeconds counts from the resume, as for a batch Job
    if parse_time(draft.status.get(START_TIME)) is None:
        draft.set_time(START_TIME)

    recreate = [slot for slot in children.slots if slot.state is SlotState.RETRYABLE]
    scaled_down = [pod for pod in children.surplus_pods if not is_terminating(pod)]
    recreating = {_uid(slot.pod) for slot in recreate}
    counts = _count_restarts(draft, job, children, deleting=recreating | {_uid(pod) for pod in scaled_down},
                             recreating=recreating)
    if _finish_if_done(draft, job, children, sum(count.total for count in counts.values())):
        keep_finished(draft, job, pods, services, just_finished=True)
        _record_replicas(draft, job, children, counts, finishing=True)
        return

    for pod in [*(slot.pod for slot in recreate if slot.pod is not None), *scaled_down]:
        draft.delete_pod(pod)  # a recreated pod is created once the old one is gone: its name is taken until then
    for service in children.surplus_services:
        if not is_terminating(service):
            draft.delete_service(service)
    desired = DesiredChildren(job, draft.config.service_domain, draft.config.accelerators)
    for slot in children.slots:
        if slot.state is SlotState.ABSENT:
            draft.create_pods.append(desired.pod(slot.slot.replica_type, slot.slot.index))
        if slot.slot not in children.services:
            draft.create_services.append(desired.service(slot.slot.replica_type, slot.slot.index))
    _update_running(draft, children, [count.recreated for count in counts.values()])
    _record_replicas(draft, job, children, counts, finishing=False)


def _suspend(draft: PlanDraft, job: dict[str, Any], children: _Children, pods: list[dict[str, Any]],
             services: list[dict[str, Any]]) -> None:
    """A suspended job keeps nothing running; its clock (startTime) stops, and restarts in place so far are kept."""
    deleting = {_uid(pod) for pod in pods if not is_terminating(pod)}
    counts = _count_restarts(draft, job, children, deleting=deleting, recreating=set())
    clean_up(draft, pods, services, CLEAN_POD_POLICY_ALL)
    draft.note_cleanup(pods, services)
    message = f"{draft.job_ref} is suspended."
    draft.set_condition(CONDITION_SUSPENDED, true=True, reason=REASON_SUSPENDED, message=message)
    draft.set_condition(CONDITION_RUNNING, true=False, reason=REASON_SUSPENDED, message=message)
    draft.clear_condition(CONDITION_RESTARTING, reason=REASON_SUSPENDED, message=message)
    draft.status.pop(START_TIME, None)
    _record_replicas(draft, job, children, counts, finishing=False)


def _sort_children(job: dict[str, Any], pods: list[dict[str, Any]], services: list[dict[str, Any]]) -> _Children:
    job_name: str = job["metadata"]["name"]
    rid = job_runtime_id(job)
    pods_at: dict[ReplicaSlot, dict[str, Any]] = {}
    surplus_pods: list[dict[str, Any]] = []
    pods_by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pod in pods:
        slot = replica_slot_of(pod, job_name, rid)
        if slot is not None:
            pods_by_type[slot.replica_type].append(pod)
        if slot is None or slot.index >= replica_count(job, slot.replica_type) or slot in pods_at:
            surplus_pods.append(pod)
        else:
            pods_at[slot] = pod
    services_at: dict[ReplicaSlot, dict[str, Any]] = {}
    surplus_services: list[dict[str, Any]] = []
    for service in services:
        slot = replica_slot_of(service, job_name, rid)
        if slot is None or slot.index >= replica_count(job, slot.replica_type) or slot in services_at:
            surplus_services.append(service)
        else:
            services_at[slot] = service
    slots = [_Slot(slot, pods_at.get(slot), _slot_state(job, slot, pods_at.get(slot)))
             for replica_type in _replica_types(job) for slot in
             (ReplicaSlot(replica_type, index) for index in range(replica_count(job, replica_type)))]
    return _Children(slots, services_at, surplus_pods, surplus_services, dict(pods_by_type))


def _slot_state(job: dict[str, Any], slot: ReplicaSlot, pod: dict[str, Any] | None) -> SlotState:
    if pod is None:
        return SlotState.ABSENT
    if is_terminating(pod):  # neither there nor failed: its index is recreated once it is gone
        return SlotState.TERMINATING
    phase = pod_phase(pod)
    if phase != POD_FAILED:
        return {POD_PENDING: SlotState.PENDING, POD_RUNNING: SlotState.RUNNING,
                POD_SUCCEEDED: SlotState.SUCCEEDED}.get(phase, SlotState.UNKNOWN)
    policy = job["spec"]["tfReplicaSpecs"][slot.replica_type]["restartPolicy"]
    if policy == RESTART_POLICY_EXIT_CODE:
        termination = container_termination(pod)
        # No exit code means the pod failed around the container (evicted, node lost): worth another try.
        exit_class = termination.exit_class if termination is not None else ExitClass.RETRYABLE
        if exit_class is ExitClass.SUCCEEDED:
            return SlotState.SUCCEEDED
        if exit_class is ExitClass.RETRYABLE:
            return SlotState.RETRYABLE
    elif policy in (RESTART_POLICY_ALWAYS, RESTART_POLICY_ON_FAILURE):
        return SlotState.RETRYABLE  # the kubelet restarts in place, so a Failed pod was evicted or lost its node
    if slot.replica_type == REPLICA_WORKER and job["spec"].get("enableDynamicWorker") is True:
        return SlotState.TOLERATED
    return SlotState.PERMANENT


def _count_restarts(draft: PlanDraft, job: dict[str, Any], children: _Children, *, deleting: set[str],
                    recreating: set[str]) -> dict[str, RestartCount]:
    """Counts restarts per replica type, announcing the new ones: a recreation as it is decided, restarts in
    place as the status first sees them."""
    previous = mapping(draft.status.get("replicaStatuses"))
    counts: dict[str, RestartCount] = {}
    for replica_type in _replica_types(job):
        before = mapping(previous.get(replica_type))
        count = count_restarts(RestartLedger.from_replica_status(before), children.pods_by_type.get(replica_type, []),
                               deleting=deleting, recreating=recreating)
        counts[replica_type] = count
        for pod in count.recreated:
            draft.event(EVENT_WARNING, REASON_RESTARTING, f"{draft.job_ref} is restarting {_describe_failure(pod)}.")
            draft.restarts_by_exit_class[exit_class_name(pod)] += 1
        in_place = count.total - (integer(before.get("restarts")) or 0) - len(count.recreated)
        if in_place > 0:
            draft.restarts_by_exit_class[latest_exit_class_name(children.pods_by_type.get(replica_type, []))] += in_place
            draft.event(EVENT_WARNING, REASON_RESTARTING,
                        f"{draft.job_ref}: {replica_type} containers restarted in place {in_place} more time(s), "
                        f"{count.total} restart(s) of {replica_type} replicas in all.")
        draft.restarts += len(count.recreated) + max(in_place, 0)
    return counts


def _finish_if_done(draft: PlanDraft, job: dict[str, Any], children: _Children, restarts: int) -> bool:
    """Success wins over failure (the chief's result is what the user asked for); then a replica that failed for
    good, too many restarts, and the deadline."""
    run_policy = job["spec"]["runPolicy"]
    if _succeeded(job, children.slots):
        finish(draft, CONDITION_SUCCEEDED, REASON_SUCCEEDED, f"{draft.job_ref} successfully completed.")
        return True
    failed = [slot.pod for slot in children.slots if slot.state is SlotState.PERMANENT and slot.pod is not None]
    if failed:
        listed = _listing([_describe_failure(pod) for pod in failed])
        finish(draft, CONDITION_FAILED, REASON_FAILED, f"{draft.job_ref} has failed because {listed}.")
        return True
    backoff_limit = run_policy.get("backoffLimit")
    if backoff_limit is not None and restarts > backoff_limit:
        finish(draft, CONDITION_FAILED, REASON_BACKOFF_LIMIT_EXCEEDED,
               f"{draft.job_ref} has failed because its replicas restarted {restarts} times, more than its "
               f"backoffLimit of {backoff_limit}.")
        return True
    deadline = run_policy.get("activeDeadlineSeconds")
    started = parse_time(draft.status.get(START_TIME))
    if deadline is not None and started is not None:
        remaining = (started - draft.now).total_seconds() + deadline
        if remaining <= 0:
            finish(draft, CONDITION_FAILED, REASON_DEADLINE_EXCEEDED,
                   f"{draft.job_ref} has failed because it ran longer than its activeDeadlineSeconds of {deadline} "
                   f"(started at {draft.status[START_TIME]}).")
            return True
        draft.requeue(remaining)  # fire exactly at the deadline, even if no pod changes before it
    return False


def _succeeded(job: dict[str, Any], slots: list[_Slot]) -> bool:
    """With a chief (Chief or Master), the job succeeds with it. Without one, with worker 0, or with every
    worker under successPolicy AllWorkers (failed dynamic workers aside). A job of only PS and evaluators
    succeeds when all of them have."""
    states = {slot.slot: slot.state for slot in slots}
    for chief in CHIEF_REPLICA_TYPES:
        if replica_count(job, chief) > 0:
            return states.get(ReplicaSlot(chief, 0)) is SlotState.SUCCEEDED
    workers = [states.get(ReplicaSlot(REPLICA_WORKER, index)) for index in range(replica_count(job, REPLICA_WORKER))]
    if workers and job["spec"].get("successPolicy") == SUCCESS_POLICY_ALL_WORKERS:
        return SlotState.SUCCEEDED in workers and all(
            state in (SlotState.SUCCEEDED, SlotState.TOLERATED) for state in workers)
    if workers:
        return workers[0] is SlotState.SUCCEEDED
    return bool(slots) and all(slot.state is SlotState.SUCCEEDED for slot in slots)


def _update_running(draft: PlanDraft, children: _Children, recreated: Iterable[list[dict[str, Any]]]) -> None:
    """Running means every replica pod runs (or has finished its part); while any is pending the condition says
    how many, rather than claiming the job runs."""
    replaced = [pod for pods in recreated for pod in pods]
    if replaced:
        listed = _listing([_describe_failure(pod) for pod in replaced])
        draft.set_condition(CONDITION_RESTARTING, true=True, reason=REASON_RESTARTING,
                            message=f"{draft.job_ref} is restarting {listed}.")
    states = Counter(slot.state for slot in children.slots)
    finished = states[SlotState.SUCCEEDED] + states[SlotState.TOLERATED]
    waiting = len(children.slots) - finished - states[SlotState.RUNNING]
    if waiting == 0 and states[SlotState.RUNNING] > 0:
        message = f"{draft.job_ref} is running."
        draft.set_condition(CONDITION_RUNNING, true=True, reason=REASON_RUNNING, message=message)
        draft.clear_condition(CONDITION_RESTARTING, reason=REASON_RUNNING, message=message)
    elif draft.is_true(CONDITION_RESTARTING):
        restarting = draft.condition(CONDITION_RESTARTING) or {}
        draft.set_condition(CONDITION_RUNNING, true=False, reason=REASON_RESTARTING,
                            message=str(restarting.get("message", "")))
    else:
        detail = ", ".join(f"{states[state]} {state.value}" for state in SlotState if states[state]
                           and state not in (SlotState.RUNNING, SlotState.SUCCEEDED, SlotState.TOLERATED))
        draft.set_condition(CONDITION_RUNNING, true=False, reason=REASON_PENDING,
                            message=f"{draft.job_ref} is waiting for {waiting} of {len(children.slots)} replicas "
                                    f"to run: {detail}.")


def _record_replicas(draft: PlanDraft, job: dict[str, Any], children: _Children, counts: dict[str, RestartCount],
                     *, finishing: bool) -> None:
    """replicaStatuses and replicaSummary as the plan leaves the pods. A pod deleted now is no longer active; when
    the job finishes, pods removed by the clean-up still count as succeeded or failed, as the job's final tally."""
    deleted = {ref.uid for ref in draft.delete_pods}

    def counted(pod: dict[str, Any]) -> bool:
        if is_terminating(pod):
            return False
        return _uid(pod) not in deleted or (finishing and pod_phase(pod) in (POD_SUCCEEDED, POD_FAILED))

    draft.status["replicaStatuses"] = {
        replica_type: {**replica_status([pod for pod in children.pods_by_type.get(replica_type, []) if counted(pod)],
                                        counts[replica_type].total),
                       **counts[replica_type].ledger.status_fields()}
        for replica_type in _replica_types(job)
    }
    running = sum(1 for slot in children.slots
                  if slot.state is SlotState.RUNNING and slot.pod is not None and _uid(slot.pod) not in deleted)
    draft.status["replicaSummary"] = f"{running}/{len(children.slots)}"


def _replica_types(job: dict[str, Any]) -> list[str]:
    return [replica_type for replica_type in REPLICA_TYPES if replica_type in job["spec"]["tfReplicaSpecs"]]


def _describe_failure(pod: dict[str, Any]) -> str:
    """e.g. `Worker 1, which exited with code 137 (OOMKilled)`."""
    labels = mapping_at(pod, "metadata", "labels")
    who = (f"{canonical_replica_type(labels.get(LABEL_REPLICA_TYPE)) or 'replica'} "
           f"{text(labels.get(LABEL_REPLICA_INDEX)) or '?'}")
    termination = container_termination(pod)
    if termination is not None:
        return f"{who}, which {termination.describe()}"
    reason = text(mapping_at(pod, "status").get("reason"))
    return f"{who}, whose pod failed" + (f" ({reason})" if reason else "")


def _listing(entries: list[str]) -> str:
    shown = "; ".join(entries[:_MAX_LISTED])
    return shown if len(entries) <= _MAX_LISTED else f"{shown}; and {len(entries) - _MAX_LISTED} more"


def _uid(pod: dict[str, Any] | None) -> str:
    return text(mapping_at(pod, "metadata").get("uid")) or ""
