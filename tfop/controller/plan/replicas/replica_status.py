"""What a plan records about a job's replicas: their restarts counted against backoffLimit (each new one announced
once, as the status first sees it), and replicaStatuses and replicaSummary as the plan leaves the pods."""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

from tfop.api.constants import (
    CONDITION_SUCCEEDED,
    EVENT_WARNING,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    NAMING_RUNTIME_ID,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    REASON_RESTARTING,
    ReplicaType,
)
from tfop.api.defaults import canonical_replica_type
from tfop.api.runtime_id import runtime_id
from tfop.controller.plan.children.naming import ChildNaming
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job.model import TFJobSpec
from tfop.controller.plan.job_status import ReplicaStatus
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.replicas.exit_events import announce_exits, latest_exits
from tfop.controller.plan.replicas.finished import FinishedReplicas, record_finished
from tfop.controller.plan.replicas.pod_slots import Slot, SlotState, SortedChildren, replica_types
from tfop.controller.plan.replicas.recreated_exits import recreated_exits
from tfop.controller.plan.replicas.restart_ledger import RestartCount, RestartLedger, count_restarts
from tfop.controller.plan.types import JOB, POD, ReplicaRestart


def count_replica_restarts(draft: PlanDraft, spec: TFJobSpec, pods_by_type: dict[str, list[PodView]], *,
                           adopted: bool,
                           deleting: set[str], recreating: set[str]) -> dict[str, RestartCount]:
    """Counts restarts per replica type of the job, announcing the new ones: a recreation as it is
    decided, restarts in place as the status first sees them. `adopted`: the status was written by another
    operator (conditions but no restart counts), so restarts found now happened under it."""
    counts: dict[str, RestartCount] = {}
    for replica_type in replica_types(spec):
        before = draft.status.replica(replica_type)
        count = count_restarts(RestartLedger.from_replica_status(before), pods_by_type.get(replica_type, []),
                               deleting=deleting, recreating=recreating, restarts_of=_restart_count)
        counts[replica_type] = count
        announce_exits(draft, count.recreated)
        for pod in count.recreated:
            if not pod.disrupted:  # a disruption is no failure: update_running tells it as ReplicaDisrupted
                draft.event(EVENT_WARNING, REASON_RESTARTING,
                            f"{draft.job_ref} is restarting {describe_failure(pod)}.")
            draft.restarts_by_exit_class[pod.exit_class_name] += 1
            draft.restarted.append(_restart_of(pod, replica_type, count.total, in_place=0))
        known = before.restarts if before is not None else None
        if known is None and adopted:
            known = count.total - len(count.recreated)  # the restarts so far are the baseline, not news
        in_place = count.total - (known or 0) - (len(count.recreated) - count.disrupted)
        if in_place > 0:
            latest = latest_restarted(pods_by_type.get(replica_type, []))
            restart = _restart_of(latest, replica_type, count.total, in_place=in_place)
            draft.restarts_by_exit_class[restart.exit_class] += in_place
            draft.restarted.append(restart)
            draft.event(EVENT_WARNING, REASON_RESTARTING,
                        f"{draft.job_ref}: {replica_type} containers restarted in place {in_place} more time(s), "
                        f"{count.total} restart(s) of {replica_type} replicas in all.")
        draft.restarts += len(count.recreated) + max(in_place, 0)
    return counts


def record_replicas(draft: PlanDraft, spec: TFJobSpec, children: SortedChildren, counts: dict[str, RestartCount], *,
                    finishing: bool) -> None:
    """replicaStatuses and replicaSummary as the plan leaves the pods. Until the job finishes, a pending or running
    pod stays active until it is gone, even when deleted now or terminating: it holds its node's resources until
    then, and Kueue releases a suspended job's quota once no replica is active (the Go operator, which counts pods
    by phase, agrees). When the job finishes, its status is the final tally: pods the clean-up removes are no
    longer active, and the ended ones among them still count as succeeded or failed."""
    deleted = draft.deleted_uids(POD)
    for job_uid in draft.deleted_uids(JOB):  # a Job's pods go with it
        deleted.update(pod.uid for pod in children.pods_by_job.get(job_uid, []))

    def counted(pod: PodView) -> bool:
        if not finishing and pod.phase in (POD_PENDING, POD_RUNNING):
            return True
        if pod.terminating and not pod.ended_before_deleted:
            return False
        return pod.uid not in deleted or (finishing and pod.phase in (POD_SUCCEEDED, POD_FAILED))

    finished = record_finished(FinishedReplicas.of_status(draft.status), spec, children.slots)
    statuses: dict[str, ReplicaStatus] = {}
    ended: list[PodView] = []  # told in one event per exit code, whatever their replica types
    naming = _naming(draft)
    for replica_type in replica_types(spec):
        pods = [pod for pod in children.pods_by_type.get(replica_type, []) if counted(pod)]
        count, before = counts[replica_type], draft.status.replica(replica_type)
        exits = recreated_exits(before, count.recreated, spec.replicas(replica_type))
        counted_now = _with_recalled(replica_status(pods, count.total), children.slots, replica_type)
        statuses[replica_type] = replace(count.ledger.kept_in(finished.kept_in(counted_now, replica_type)),
                                         recreated_exits=tuple(exits) or None,
                                         selector=naming.type_selector(replica_type))
        # Pods that ended since the last plan grow the tally; the recreated ones were announced as they went.
        ended += latest_exits([pod for pod in pods if pod.phase in (POD_SUCCEEDED, POD_FAILED)],
                              _ended(statuses[replica_type]) - _ended(before))
    # Only the plan that finishes a job records with `finishing`: if it succeeds, its event tells the exits of 0.
    announce_exits(draft, ended, succeeding=finishing and draft.is_true(CONDITION_SUCCEEDED))
    running = sum(1 for slot in children.slots
                  if slot.state is SlotState.RUNNING and slot.pod is not None and slot.pod.uid not in deleted)
    summary = f"{running}/{len(children.slots)}"
    if finishing:
        # The final tally: the pods are gone or going, so "0/7 running" would read like a failure.
        succeeded = sum(entry.succeeded or 0 for entry in statuses.values())
        failed = sum(entry.failed or 0 for entry in statuses.values())
        summary = f"{succeeded}/{len(children.slots)} succeeded" + (f", {failed} failed" if failed else "")
    draft.status = replace(draft.status, replica_statuses=MappingProxyType(statuses), replica_summary=summary)


def replica_status(pods: Iterable[PodView], restarts: int) -> ReplicaStatus:
    """Counts of one replica type's pods by phase; `active` is pending or running. The caller chooses the pods
    (record_replicas: going pods stay active until they are gone)."""
    phases = [pod.phase for pod in pods]
    return ReplicaStatus(active=sum(phase in (POD_PENDING, POD_RUNNING) for phase in phases),
                         succeeded=phases.count(POD_SUCCEEDED), failed=phases.count(POD_FAILED), restarts=restarts)


def _with_recalled(counts: ReplicaStatus, slots: list[Slot], replica_type: str) -> ReplicaStatus:
    """The counts by phase, with the replicas whose pods are gone but whose ends are recorded (finished.py)."""
    recalled = [slot.state for slot in slots
                if slot.slot.replica_type == replica_type and slot.pod is None and slot.state is not SlotState.ABSENT]
    return replace(counts, succeeded=(counts.succeeded or 0) + recalled.count(SlotState.SUCCEEDED),
                   failed=(counts.failed or 0) + recalled.count(SlotState.TOLERATED))


def _naming(draft: PlanDraft) -> ChildNaming:
    """The job's naming as the planner recorded it in this draft's status (before any replica is recorded)."""
    return ChildNaming(draft.status.child_naming or NAMING_RUNTIME_ID, draft.job_name, runtime_id(draft.uid or ""))


def _ended(replica_status: ReplicaStatus | None) -> int:
    if replica_status is None:
        return 0
    return (replica_status.succeeded or 0) + (replica_status.failed or 0)


def describe_failure(pod: PodView) -> str:
    """e.g. `Worker 1, which exited with code 137 (OOMKilled)`, or `Worker 1, whose pod was disrupted
    (PreemptionByScheduler)`: a disrupted pod's exit code is what the disruption did to it."""
    who = replica_name(pod)
    if pod.disruption is not None and pod.disruption.source == "Peer":
        termination = pod.termination
        how = f"which {termination.describe()}" if termination is not None else "whose pod failed"
        return f"{who}, {how} within the window of {pod.disruption.message}"
    if pod.disruption is not None:
        return f"{who}, whose pod was disrupted" + (f" ({pod.disruption.reason})" if pod.disruption.reason else "")
    termination = pod.termination
    if termination is not None:
        return f"{who}, which {termination.describe()}"
    return f"{who}, whose pod failed" + (f" ({pod.reason})" if pod.reason else "")


def replica_name(pod: PodView) -> str:
    """e.g. `Worker 1`, from the pod's labels."""
    return (f"{canonical_replica_type(pod.labels.get(LABEL_REPLICA_TYPE)) or 'replica'} "
            f"{pod.labels.get(LABEL_REPLICA_INDEX) or '?'}")


def _restart_of(pod: PodView | None, replica_type: ReplicaType, restarts: int, *, in_place: int) -> ReplicaRestart:
    index = pod.labels.get(LABEL_REPLICA_INDEX, "") if pod is not None else ""
    return ReplicaRestart(replica_type, int(index) if index.isdigit() else None,
                          pod.exit_code if pod is not None else None,
                          pod.exit_class_name if pod is not None else "unknown", restarts, in_place)


def _restart_count(pod: PodView) -> int:
    return pod.counted_restarts


def latest_restarted(pods: list[PodView]) -> PodView | None:
    """Of `pods`, the one whose tensorflow container was restarted in place last (None: none was)."""
    restarted = [pod for pod in pods if pod.restarted_at]
    return max(restarted, key=lambda pod: pod.restarted_at) if restarted else None
