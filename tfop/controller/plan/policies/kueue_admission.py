"""tfop's own Kueue integration (`kueue.integration: own`): a job that names a LocalQueue (the label
kueue.x-k8s.io/queue-name) runs only while Kueue admits its Workload, which tfop makes and follows itself.

What callers may rely on:
- A queued job has exactly one Workload of its current shape (queue, priority class, pod set counts): the Workload
  is an entry of the child-kind table (children/workload.py), kept by its one policy (policies/job_children.py),
  which deletes one of another shape, or a stray, first and makes the new one once it is gone, so Kueue never
  sees two for one job.
- A copy of a job MultiKueue dispatched to this cluster has the Workload MultiKueue made for it, adopted rather
  than made (policies/multikueue.py), and followed as any other.
- Until the Workload is admitted (or once it is evicted or deactivated) the job is held: `Admission.held`, and the
  planner takes the suspension path (pods deleted with their grace period, so TensorFlow gets SIGTERM; restarts
  not counted; the clock stopped). Nothing in the user's spec is written.
- Admitted, each replica type's pods get what the admission assigned its pod set (`Admission.placements`): the
  flavors' node labels and tolerations (read from the ResourceFlavors, which must be in the cache: else the job
  waits and looks again) and what admission checks add.
- Evicted, once none of the job's pods is left, the quota is handed back as Kueue's own job integrations do:
  admission cleared, QuotaReserved and Admitted False, Requeued set (True after a preemption or node failure,
  False otherwise, which Kueue turns True when the job may queue again, e.g. on reactivation).
- Admitted, once the job is Running (every replica's pod runs), the Workload's PodsReady condition says so, which
  is what Kueue's `waitForPodsReady` waits for before it admits the next job; while a replica restarts it is False
  (WaitForRecovery, which Kueue's recoveryTimeout bounds), and an evicted job's is False until it runs again.
- A held job let run tells so once, in an AdmittedByKueue event naming the ClusterQueue, each pod set's flavors
  and, admitted again, the evictions Kueue counted.
- Admitted, the replicas that ended for good are reported in the Workload's reclaimablePods, so Kueue releases
  their quota while the others run (policies/kueue_reclaimable.py).
- A job that is suspended by its user, finished or rejected keeps no Workload (the entry is kept only in the
  running and queued states).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from tfop.api.constants import CONDITION_RUNNING, CONDITION_SUSPENDED, EVENT_NORMAL
from tfop.api.fields import mapping_at
from tfop.api.kueue import PRIORITY_CLASS, TFJOB_INTEGRATION
from tfop.api.timestamps import format_time
from tfop.controller.plan.children.workload import (
    POD_SET_LABEL,
    PREFERRED_TOPOLOGY,
    PRIORITY_CLASS_RETRY_SECONDS,
    REQUIRED_TOPOLOGY,
    TOPOLOGY_GATE,
    UNCONSTRAINED_TOPOLOGY,
    WORKLOAD_ANNOTATION,
    WORKLOAD_KIND,
    PodSetPlacement,
    pod_set_name,
    workload_name,
)
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job.model import (
    POD_PRIORITY_CLASS,
    WORKLOAD_PRIORITY_CLASS,
    PriorityClassRef,
    TFJobModel,
)
from tfop.controller.plan.observed.workload import (
    ADMITTED,
    PODS_READY,
    QUOTA_RESERVED,
    REQUEUED,
    ObservedWorkload,
    PodSetAdmission,
    QueuePosition,
    flavor_placement,
    observe_workload,
)
from tfop.controller.plan.policies.job_children import keep_job_child
from tfop.controller.plan.policies.kueue_reclaimable import wanted_reclaimable
from tfop.controller.plan.policies.multikueue import follow_prebuilt
from tfop.controller.plan.replicas.finished import FinishedReplicas
from tfop.controller.plan.types import POD, WORKLOAD, ChildPatch, PlanContext
from tfop.objects import Object

REASON_QUEUED = "QueuedByKueue"  # the Suspended condition's reason while the Workload waits for quota
REASON_EVICTED = "EvictedByKueue"  # ... once Kueue evicted it (its own reason is in the message)
REASON_ADMITTED = "AdmittedByKueue"  # the Normal event as a held job's Workload is admitted (again)
# The PodsReady condition's reasons, as Kueue's job integrations write them for its waitForPodsReady: True once
# every pod runs (Started; Recovered after a wait for recovery), False again while a replica restarts
# (WaitForRecovery, which recoveryTimeout bounds), and False until the pods start (WaitForStart) once evicted.
PODS_STARTED, PODS_RECOVERED = "Started", "Recovered"
WAIT_FOR_RECOVERY, WAIT_FOR_START = "WaitForRecovery", "WaitForStart"
# Kueue requeues at once after these evictions; after any other it decides when (Kueue's job integrations alike).
REQUEUED_AT_ONCE = ("Preempted", "NodeFailures")
# A flavor not in the cache yet (created just before the admission): looked for again this soon.
FLAVOR_RETRY_SECONDS = 1.0


@dataclass(frozen=True)
class Admission:
    """`placements` by replica type when the job may run; else `held` with the reason and message its Suspended
    condition gets."""

    placements: Mapping[str, PodSetPlacement] = field(default_factory=lambda: MappingProxyType({}))
    held: bool = False
    reason: str = ""
    message: str = ""


def with_workload_priority(job: TFJobModel, context: PlanContext) -> TFJobModel:
    """The job with the class its Workload's priority comes from and that class's value, as the cluster has them:
    the class the job names (its WorkloadPriorityClass, else its pods' PriorityClass), else the cluster's global
    default PriorityClass (Kueue's job integrations alike); a job that names none on a cluster without a default
    keeps no class, and its Workload priority 0, as Kueue's own integrations write it."""
    if job.options.own_queue is None:
        return job
    ref = job.options.own_priority_class
    if ref is None:
        if context.default_priority_class is None:
            return job
        ref = PriorityClassRef(POD_PRIORITY_CLASS, context.default_priority_class)
    values = context.priority_classes if ref.kind == WORKLOAD_PRIORITY_CLASS else context.pod_priority_classes
    return replace(job, options=replace(job.options, own_priority_class=ref, own_priority=values.get(ref.name)))


def adapter_conflict(draft: PlanDraft, context: PlanContext) -> str | None:
    """Why the job is held when Kueue's TFJob adapter made a Workload for it too (its webhooks cover a namespace
    the start's dry run did not see, or Kueue's Configuration changed since): tfop makes none of its own (the
    suspension path deletes one it made), so Kueue never counts the job twice; None when there is none."""
    theirs = context.foreign.get(WORKLOAD, ())
    if not theirs:
        return None
    return (f"{draft.job_ref} is queued by Kueue's {TFJOB_INTEGRATION} adapter too (its Workload "
            f"{', '.join(theirs)}), and tfop's own Kueue integration makes no second Workload for it, so it does not "
            f"run: take {TFJOB_INTEGRATION} out of integrations.frameworks in Kueue's Configuration and delete that "
            f"Workload (tfop then queues the job), or run tfop with kueue.integration: kueue.")


def admit(draft: PlanDraft, job: TFJobModel, context: PlanContext) -> Admission | None:
    """The job's Workload kept (made, replaced, or a stray deleted: the child-kind table's policy), and whether
    the job may run now; None when tfop does not queue it (no queue label, or Kueue's adapter does)."""
    queue = job.options.own_queue
    if queue is not None and job.metadata.prebuilt_workload is not None:  # a copy MultiKueue dispatched here
        prebuilt = follow_prebuilt(draft, job, context)
        if isinstance(prebuilt, str):
            return _held(REASON_QUEUED, prebuilt)
        stored = prebuilt
    else:
        own = keep_job_child(draft, job, context, WORKLOAD_KIND)
        if queue is None:
            return None
        if own.current is None:
            return _waiting_for_workload(draft, job, queue)
        found = next((w for w in context.of_kind(WORKLOAD) if mapping_at(w, "metadata").get("uid") == own.current.uid),
                     None)
        if found is None:  # the view is made from these very objects
            raise ValueError(f"no cached Workload {own.current.name}")
        stored = found
    name = workload_name(job.metadata)
    current = observe_workload(stored)
    # One patch of it per plan: a second one guarded by the same resourceVersion would always fail (an adoption's
    # goes first; what the status lacks is written by the next pass).
    patched = any(patch.kind == WORKLOAD and patch.name == current.name for patch in draft.patch)
    if current.admitted:
        status = _admitted_status(current, draft)
        if status and not patched:
            draft.patch.append(ChildPatch(WORKLOAD, current.name, {
                "metadata": {"resourceVersion": current.resource_version}, "status": status}, subresource="status"))
        admission = _admitted(draft, job, current, context)
        if not admission.held:
            _tell_admitted(draft, current)
        return admission
    eviction = current.eviction
    if eviction is not None and current.quota_reserved:  # being stopped; the quota is handed back once it is
        if not context.of_kind(POD) and not patched:
            draft.patch.append(ChildPatch(WORKLOAD, current.name, _requeue(current, draft), subresource="status"))
        return _held(REASON_EVICTED, f"{draft.job_ref} was evicted by Kueue ({eviction.reason}: "
                                     f"{eviction.message.rstrip('.')}) and is queued again in LocalQueue {queue}.")
    if not current.active:
        return _held(REASON_QUEUED, f"{draft.job_ref} waits: its Kueue Workload {name} is deactivated "
                                    f"(spec.active is false).")
    where = _position(context.queue_position)
    if eviction is not None:  # Kueue clears it when it admits the Workload again
        return _held(REASON_QUEUED, f"{draft.job_ref} is queued again in Kueue LocalQueue {queue}{where} after an "
                                    f"eviction ({eviction.reason}).")
    waiting = f": {current.waiting.rstrip('.')}" if current.waiting else ""
    return _held(REASON_QUEUED, f"{draft.job_ref} is queued in Kueue LocalQueue {queue}{where}{waiting}.")


def _position(position: QueuePosition | None) -> str:
    """The words after the LocalQueue's name in a pending job's message; none when the position is not known."""
    if position is None:
        return ""
    if position.in_local_queue is None:
        return f", behind at least {position.looked_at} other Workloads"
    cluster_queue = position.in_cluster_queue
    return f" at position {position.in_local_queue}" + ("" if cluster_queue is None else
                                                        f" ({cluster_queue} in its ClusterQueue)")


def _waiting_for_workload(draft: PlanDraft, job: TFJobModel, queue: str) -> Admission:
    """Held while its Workload is made, or cannot be made yet: its priority class is not cached."""
    ref = job.options.own_priority_class
    if ref is not None and job.options.own_priority is None:
        draft.requeue(PRIORITY_CLASS_RETRY_SECONDS)
        if ref.kind == WORKLOAD_PRIORITY_CLASS:
            return _held(REASON_QUEUED, f"{draft.job_ref} waits for the Kueue WorkloadPriorityClass "
                                        f"{ref.name} it names ({PRIORITY_CLASS}) to exist.")
        return _held(REASON_QUEUED, f"{draft.job_ref} waits for the PriorityClass {ref.name} its pods name "
                                    f"to exist: its Kueue Workload's priority is that class's value.")
    return _held(REASON_QUEUED, f"{draft.job_ref} waits for its Kueue Workload {workload_name(job.metadata)} in "
                                f"LocalQueue {queue}.")


def _held(reason: str, message: str) -> Admission:
    return Admission(held=True, reason=reason, message=message)


def _admitted(draft: PlanDraft, job: TFJobModel, workload: ObservedWorkload, context: PlanContext) -> Admission:
    placements: dict[str, PodSetPlacement] = {}
    for replica_type, replica in job.spec.replica_specs.items():
        if replica.replicas == 0:
            continue
        assignment = workload.assignments.get(pod_set_name(replica_type))
        if assignment is None:
            return _held(REASON_QUEUED, f"{draft.job_ref} waits: the admission of its Kueue Workload "
                                        f"{workload.name} assigns nothing to pod set {pod_set_name(replica_type)}.")
        missing = [flavor for flavor in assignment.flavors if flavor not in context.flavors]
        if missing:
            draft.requeue(FLAVOR_RETRY_SECONDS)
            return _held(REASON_QUEUED, f"{draft.job_ref} is admitted by Kueue but waits to see ResourceFlavor "
                                        f"{', '.join(missing)}.")
        placements[replica_type] = _placement(assignment, context.flavors, workload.name,
                                              job.spec.replica_specs[replica_type].template)
    return Admission(MappingProxyType(placements))


def _tell_admitted(draft: PlanDraft, workload: ObservedWorkload) -> None:
    """One event as a held job is let run: the ClusterQueue and each pod set's flavors, and whether (and after
    which evictions, as Kueue counts them) it is admitted again."""
    held = draft.old_condition(CONDITION_SUSPENDED)
    if held is None or held.status != "True" or held.reason not in (REASON_QUEUED, REASON_EVICTED):
        return
    flavors = "; ".join(f"{name}: {', '.join(assignment.flavors)}"
                        for name, assignment in sorted(workload.assignments.items()))
    again = ""
    if workload.evictions:
        total = sum(count for _, count in workload.evictions)
        again = (f" again after {total} eviction{'' if total == 1 else 's'} "
                 f"({', '.join(reason for reason, _ in workload.evictions)})")
    draft.event(EVENT_NORMAL, REASON_ADMITTED, f"{draft.job_ref} is admitted{again} by Kueue in ClusterQueue "
                                           f"{workload.cluster_queue}, flavors {flavors}.")


def _placement(assignment: PodSetAdmission, flavors: Mapping[str, Object], workload: str,
               template: Object) -> PodSetPlacement:
    node_selector: dict[str, str] = {}
    tolerations: list[Object] = []
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    gates: tuple[str, ...] = ()
    if assignment.topology:  # Kueue's topology ungater places each pod in its domain, and lets it be scheduled
        labels[POD_SET_LABEL] = assignment.name
        annotations[WORKLOAD_ANNOTATION] = workload
        gates = (TOPOLOGY_GATE,)
        asked = mapping_at(template, "metadata", "annotations")
        if not any(key in asked for key in (REQUIRED_TOPOLOGY, PREFERRED_TOPOLOGY, UNCONSTRAINED_TOPOLOGY)):
            annotations[UNCONSTRAINED_TOPOLOGY] = "true"  # a flavor's topology the job did not ask for
    for flavor in assignment.flavors:
        flavor_labels, flavor_tolerations = flavor_placement(flavors[flavor])
        node_selector.update(flavor_labels)
        tolerations.extend(t for t in flavor_tolerations if t not in tolerations)
    for update in assignment.updates:
        node_selector.update(update.node_selector)
        labels.update(update.labels)
        annotations.update(update.annotations)
        tolerations.extend(t for t in update.tolerations if t not in tolerations)
    return PodSetPlacement(MappingProxyType(node_selector), tuple(tolerations), MappingProxyType(labels),
                           MappingProxyType(annotations), gates)


def _requeue(workload: ObservedWorkload, draft: PlanDraft) -> Object:
    """The status merge patch that hands an evicted Workload's quota back. The whole condition list is written
    (a merge patch replaces lists), guarded by the resourceVersion read, so a write of Kueue's in between makes
    this one fail and be planned again."""
    eviction = workload.eviction
    assert eviction is not None
    message = eviction.message or f"Evicted: {eviction.reason}"
    conditions = list(workload.conditions)
    if workload.pods_ready:  # its pods are gone: the next admission's wait for them starts anew
        conditions = _set_condition(conditions, PODS_READY, "False", WAIT_FOR_START,
                                    "The job was stopped; its pods start again once it is admitted", draft)
    for condition_type, status, reason in (
            (QUOTA_RESERVED, "False", "Pending"),
            (ADMITTED, "False", "NoReservation"),
            (REQUEUED, "True" if eviction.reason in REQUEUED_AT_ONCE else "False", eviction.reason)):
        conditions = _set_condition(conditions, condition_type, status, reason, message, draft)
    return {"metadata": {"resourceVersion": workload.resource_version},
            "status": {"admission": None, "conditions": conditions}}


def _admitted_status(workload: ObservedWorkload, draft: PlanDraft) -> Object:
    """What an admitted Workload's status lacks, as of the previous pass's job status (stored, so what it says
    holds): PodsReady once the job is Running, and the replicas ended for good as reclaimable pods."""
    status: Object = {}
    running = draft.is_true(CONDITION_RUNNING)
    if running and not workload.pods_ready:
        reason = PODS_RECOVERED if workload.pods_ready_reason == WAIT_FOR_RECOVERY else PODS_STARTED
        status["conditions"] = _set_condition(list(workload.conditions), PODS_READY, "True", reason,
                                              "All pods reached readiness and the workload is running", draft)
    elif not running and workload.pods_ready:  # a replica restarts (or the job is resized by restart)
        status["conditions"] = _set_condition(list(workload.conditions), PODS_READY, "False", WAIT_FOR_RECOVERY,
                                              f"{draft.job_ref} is not running: it waits for its replicas to run "
                                              f"again", draft)
    finished = FinishedReplicas.of_status(draft.previous)
    ended = {pod_set_name(replica_type): len(finished.ended(replica_type)) for replica_type in finished.succeeded}
    wanted = wanted_reclaimable(workload.pod_sets, ended, workload.reclaimable)
    if wanted != workload.reclaimable:
        status["reclaimablePods"] = [{"name": name, "count": count} for name, count in wanted]
    return status


def _set_condition(conditions: list[Object], condition_type: str, status: str, reason: str, message: str,
                   draft: PlanDraft) -> list[Object]:
    old = next((c for c in conditions if c.get("type") == condition_type), None)
    changed = old is None or old.get("status") != status
    condition = {"type": condition_type, "status": status, "reason": reason, "message": message,
                 "lastTransitionTime": format_time(draft.now) if changed or old is None
                 else old.get("lastTransitionTime")}
    return [condition if c is old else c for c in conditions] if old is not None else [*conditions, condition]
