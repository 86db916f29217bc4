"""Planning one reconcile of a TFJob: PlanContext (job, its children by kind, now, config) -> Plan.

Pure and level-triggered: the plan depends only on its context, never on which event woke the worker, so
planning twice on the same state yields the same plan, and a plan made from a status the job already has changes
nothing. The wiring passes only children whose controller ownerReference is this job's uid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from tfop.api.constants import (
    CONDITION_CREATED,
    CONDITION_FAILED,
    CONDITION_SUCCEEDED,
    EVENT_WARNING,
    NODE_LOSS_REPLACE,
    REASON_CREATED,
    REASON_INVALID_SPEC,
    REASON_SPEC_CORRECTED,
    REASON_TEMPLATE_RESTART_POLICY,
    RESTART_SCOPE_JOB,
)
from tfop.api.kueue import (
    INTEGRATION_OWN,
    REASON_ADAPTER_CONFLICT,
    REASON_NOT_QUEUED,
    dispatched_by_multikueue,
    managed_elsewhere,
)
from tfop.api.runtime_id import runtime_id
from tfop.controller.plan.children.batch_job import made_by_job
from tfop.controller.plan.children.desired import DesiredChildren, pod_restart_policy
from tfop.controller.plan.children.job_child import JobState
from tfop.controller.plan.children.naming import ChildNaming, naming_of
from tfop.controller.plan.children.workload import PodSetPlacement
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job.legacy_gpu import REASON_GPU_RESOURCE_RENAMED, renamed_message
from tfop.controller.plan.job.model import RunPolicy, TFJobModel, TFJobSpec
from tfop.controller.plan.job.parse import InvalidJob, lenient_run_policy, parse_job, template_restart_policies
from tfop.controller.plan.policies.backoff import fail_for_replicas
from tfop.controller.plan.policies.checkpoints import annotate_checkpoint, record_checkpoint
from tfop.controller.plan.policies.cleanup import finish, keep_finished
from tfop.controller.plan.policies.deadline import fail_past_deadline
from tfop.controller.plan.policies.disruptions import judge_disruptions
from tfop.controller.plan.policies.evaluator import (
    evaluators_waited_for,
    finish_training,
    waiting_for_evaluators,
)
from tfop.controller.plan.policies.gang import plan_pod_group
from tfop.controller.plan.policies.job_children import OwnChild, keep_job_children, waiting_for_a_name
from tfop.controller.plan.policies.kueue_admission import adapter_conflict, admit, with_workload_priority
from tfop.controller.plan.policies.multikueue import keep_dispatched_workload, report_finished
from tfop.controller.plan.policies.node_loss import (
    ReplicaOnNode,
    Verdict,
    force_deleted_pods,
    move_off_bad_nodes,
    replicas_on_bad_nodes,
)
from tfop.controller.plan.policies.progress import record_progress
from tfop.controller.plan.policies.resize import Resize, plan_resize
from tfop.controller.plan.policies.restart_scope import restarted_with
from tfop.controller.plan.policies.running import update_running
from tfop.controller.plan.policies.success import settle_remaining, succeeded
from tfop.controller.plan.policies.suspension import resume_if_suspended, suspend
from tfop.controller.plan.policies.tensorboard import tell_tensorboard
from tfop.controller.plan.policies.unknown_scheduling import MissingWait, fail_for_missing, give_up_note, missing_waits
from tfop.controller.plan.replicas.backends import BACKENDS, ReplicaBackend, settled_backend
from tfop.controller.plan.replicas.finished import FinishedReplicas, pods_to_release, recall_finished
from tfop.controller.plan.replicas.pod_slots import SlotState, SortedChildren
from tfop.controller.plan.replicas.replica_status import record_replicas
from tfop.controller.plan.status import TRUE, is_terminating, listing
from tfop.controller.plan.types import POD, POD_GROUP, SERVICE, ChildRef, Creation, JobEvent, Plan, PlanContext

__all__ = ["plan"]

@dataclass(frozen=True)
class _Planning:
    """One plan in the making: the draft it fills in, what it was given, and the job parsed, with its children
    sorted into replica slots. Every step of a valid, running job takes this one value."""

    draft: PlanDraft
    context: PlanContext
    model: TFJobModel
    naming: ChildNaming
    children: SortedChildren
    backend: ReplicaBackend
    on_bad_nodes: list[ReplicaOnNode]  # the job's pods on nodes that are not healthy (policies/node_loss.py)


def plan(context: PlanContext) -> Plan:
    job = context.job
    if managed_elsewhere(job):
        if dispatched_by_multikueue(job) and context.config.kueue_integration == INTEGRATION_OWN:
            return _dispatched(context)
        return Plan()  # another controller runs the job
    if is_terminating(job):  # the garbage collector removes its children, once tfop's finalizer has gone
        return Plan(release=[ChildRef.of(POD, pod) for pod in context.observed.pods if pod.tracked])
    draft = PlanDraft(job, context.now, context.config)
    parsed = parse_job(job, context.config, settled_backend=settled_backend(draft.previous, context),
                       claims=context.claims)
    if isinstance(parsed, TFJobModel):
        parsed = with_workload_priority(parsed, context)
    _note_created(draft, parsed)
    observed = context.observed
    own = [*observed.batch_jobs, *(pod for pod in observed.pods if not made_by_job(pod)), *observed.services]
    naming = naming_of(draft.job_name, draft.uid or "", draft.previous, own, context.config.child_naming)
    draft.status = replace(draft.status, child_naming=naming.scheme)
    backend_name = parsed.options.replica_backend if isinstance(parsed, TFJobModel) else parsed.replica_backend
    if backend_name is not None:
        draft.status = replace(draft.status, replica_backend=backend_name)
    refused = [refusal for refusal in context.refusals if refusal.permanent]
    # A finished or rejected job is cleaned up by its run policy; an invalid one's read leniently.
    run_policy = parsed.spec.run_policy if isinstance(parsed, TFJobModel) else lenient_run_policy(parsed.source)
    spec = parsed.spec if isinstance(parsed, TFJobModel) else None
    if _is_finished(draft):
        keep_finished(draft, run_policy, context, just_finished=False)
    elif isinstance(parsed, InvalidJob) or refused:
        errors = [str(error) for error in parsed.errors] if isinstance(parsed, InvalidJob) else []
        _reject(draft, run_policy, context, errors or [r.describe() for r in refused])
    else:
        backend = BACKENDS[parsed.options.replica_backend]
        observed = context.observed
        on_bad_nodes = [] if observed.nodes is None else replicas_on_bad_nodes(
            observed.pods, observed.nodes, draft.now, draft.config.node_loss, parsed.options.node_policy,
            draft.config.disruptions.reclaim_taints)
        # Each pod's disruption is decided once, before anything reads the pods (policies/disruptions.py).
        context = judge_disruptions(draft, parsed, context, on_bad_nodes)
        # A replica whose pod is gone keeps the end the status recorded for it (replicas/finished.py).
        sorted_children = recall_finished(parsed.spec, backend.sort_children(parsed.spec, context, naming),
                                          FinishedReplicas.of_status(draft.previous))
        _run(_Planning(draft, context, parsed, naming, sorted_children, backend, on_bad_nodes))
    _release_pods(draft, context, spec)
    if context.config.kueue_integration == INTEGRATION_OWN:
        report_finished(draft, context)
    record_progress(draft, context.progress)
    record_checkpoint(draft, context.progress)
    if spec is not None and not _is_finished(draft):
        annotate_checkpoint(draft, context.observed.pods)
    return draft.finalize(refused=bool(context.refusals))


def _dispatched(context: PlanContext) -> Plan:
    """A job MultiKueue sends to a worker cluster, with tfop's own Kueue integration: its Workload only
    (policies/multikueue.py). No status (Kueue's adapter copies the worker's), no event but why it cannot be
    queued."""
    job = context.job
    if is_terminating(job):
        return Plan()
    draft = PlanDraft(job, context.now, context.config)
    parsed = parse_job(job, context.config, claims=context.claims)
    if isinstance(parsed, InvalidJob):
        errors = listing([str(error) for error in parsed.errors])
        return Plan(events=[JobEvent(EVENT_WARNING, REASON_INVALID_SPEC,
                                     f"{draft.job_ref} is not queued: it has an invalid spec: {errors}.")])
    model = with_workload_priority(parsed, context)
    keep_dispatched_workload(draft, model, context)
    return Plan(create=draft.create, delete=draft.delete,
                desired=DesiredChildren(model, context.config.service_domain) if draft.create else None,
                requeue_after=draft.requeue_after)


def _release_pods(draft: PlanDraft, context: PlanContext, spec: TFJobSpec | None) -> None:
    """The pods whose tracking finalizer goes once this plan's status is stored: all of a finished job's (its
    final tally is in that status), else those whose end this status records or that need no record."""
    replicas = {replica_type: spec.replicas(replica_type) for replica_type in spec.replica_specs} if spec else {}
    released = pods_to_release(context.observed.pods, FinishedReplicas.of_status(draft.status), replicas,
                               deleting=draft.deleted_uids(POD), everything=spec is None or _is_finished(draft))
    draft.release = [ChildRef.of(POD, pod) for pod in released]


def _note_created(draft: PlanDraft, parsed: TFJobModel | InvalidJob) -> None:
    """Said once, as the job is first seen: its creation, why a job that names a Kueue queue runs outside it, and
    which pod templates' restartPolicy the replica's replaces (an invalid job is told these too)."""
    if draft.condition(CONDITION_CREATED) is None:
        unqueued = parsed.options.unqueued if isinstance(parsed, TFJobModel) else None
        said = f" It runs unqueued: {unqueued}." if unqueued else ""
        draft.set_condition(CONDITION_CREATED, true=True, reason=REASON_CREATED,
                            message=f"{draft.job_ref} is created.{said}")
        if unqueued:
            draft.event(EVENT_WARNING, REASON_NOT_QUEUED, f"{draft.job_ref} runs unqueued: {unqueued}.")
        for replica_type, asked, policy in template_restart_policies(parsed):
            if asked and policy and asked != pod_restart_policy(policy):
                given = "" if pod_restart_policy(policy) == policy else f": pods get {pod_restart_policy(policy)}"
                draft.event(EVENT_WARNING, REASON_TEMPLATE_RESTART_POLICY,
                            f"{draft.job_ref}: the restartPolicy {asked} in the pod template of {replica_type} is "
                            f"replaced by the replica's restartPolicy ({policy}{given}).")
    if draft.uid:
        draft.status = replace(draft.status, runtime_id=runtime_id(draft.uid))


def _is_finished(draft: PlanDraft) -> bool:
    """Succeeded and Failed are final, except a failure for an invalid spec that the user has edited since."""
    if draft.is_true(CONDITION_SUCCEEDED):
        return True
    failed = draft.condition(CONDITION_FAILED)
    if failed is None or failed.status != TRUE:
        return False
    return failed.reason != REASON_INVALID_SPEC or failed.observed_generation == draft.generation


def _reject(draft: PlanDraft, run_policy: RunPolicy, context: PlanContext, errors: list[str]) -> None:
    """An invalid job fails, creating nothing more and cleaning up what it made, and waits for its spec to change.
    Invalid means: the parse found errors, or the apiserver refused a child built from its template."""
    listed = listing(errors)
    finish(draft, CONDITION_FAILED, REASON_INVALID_SPEC, f"{draft.job_ref} has an invalid spec: {listed}.")
    keep_finished(draft, run_policy, context, just_finished=True)


def _run(p: _Planning) -> None:
    draft, children = p.draft, p.children
    if draft.is_true(CONDITION_FAILED):  # it failed for an invalid spec, and the new spec is valid
        draft.set_condition(CONDITION_FAILED, true=False, reason=REASON_SPEC_CORRECTED,
                            message=f"{draft.job_ref} has a valid spec again.")
        draft.status = replace(draft.status, completion_time=None)
    if waiting_for_evaluators(draft):  # the training succeeded: nothing is made or restarted again
        counts = p.backend.count_restarts(draft, p.model.spec, p.context, children, deleting=set(), recreating=set())
        finish_training(draft, p.model, p.context, children, counts)
        return
    own_kueue = draft.config.kueue_integration == INTEGRATION_OWN
    conflict = adapter_conflict(draft, p.context) if own_kueue else None
    if conflict is not None:  # before the user's suspend: the adapter's webhook suspended the job as it came
        suspend(draft, p.model.spec, p.context, children, p.backend, reason=REASON_ADAPTER_CONFLICT, message=conflict)
        return
    if p.model.spec.run_policy.suspend:
        suspend(draft, p.model.spec, p.context, children, p.backend)
        return
    admission = admit(draft, p.model, p.context) if own_kueue else None
    if admission is not None and admission.held:
        if draft.create:  # the Workload
            p.draft.desired = _desired(p, MappingProxyType({}))
        suspend(draft, p.model.spec, p.context, children, p.backend, state=JobState.QUEUED,
                reason=admission.reason, message=admission.message)
        return
    resume_if_suspended(draft)
    if draft.status.start_time is None:
        draft.status = replace(draft.status, start_time=draft.stamp)

    retryable = [slot for slot in children.slots if slot.state is SlotState.RETRYABLE]
    recreate = p.backend.to_recreate(retryable)
    scaled_down = [child for child in children.surplus_of(p.backend.kind) if not child.terminating]
    recreating = {slot.pod.uid for slot in recreate if slot.pod is not None}
    observed = p.context.observed
    # A replica replaced for its node is not restarted: its pod's count retires, and no restart is added.
    on_bad_nodes = p.on_bad_nodes
    moving = {replica.pod.uid for replica in on_bad_nodes if replica.verdict in (Verdict.LOST, Verdict.MOVE)}
    # Pods the cluster is taking (a drain's eviction, a preemption): they go by themselves, and with restart scope
    # Job the others go with them.
    taken = [pod for pod in observed.pods if pod.terminating and pod.disrupted and pod.uid not in recreating]
    # A reclaimed node's replicas are moved before it goes: told as restarting, as a drained one is.
    reclaimed = {found.pod.uid for found in on_bad_nodes if found.reclaimed and not found.pod.terminating}
    taken += [pod for pod in observed.pods if pod.uid in reclaimed]
    # A resize by restart stops every live replica; the batch Job backend's controller would replace them alone.
    resize = plan_resize(draft, p.model, p.context, observed.pods if p.backend.kind == POD else [])
    resized = {pod.uid for pod in resize.restart} - recreating - moving - {child.uid for child in scaled_down}
    # Restarted with them (restart scope Job): retired, not counted, since the job restarts once.
    together = [pod for pod in resize.restart if pod.uid in resized] or (
        restarted_with(children.slots, recreating | moving | {pod.uid for pod in taken})
        if p.model.options.restart_scope == RESTART_SCOPE_JOB
        else [])
    counts = p.backend.count_restarts(draft, p.model.spec, p.context, children,
                                      deleting=recreating | moving | {pod.uid for pod in together}
                                      | {child.uid for child in scaled_down},
                                      recreating=recreating)
    if succeeded(p.model.spec, children.slots):  # success wins over failure: the chief's result is what was asked for
        # Replicas still running get a moment to end by themselves, told with the success rather than deleted;
        # the evaluators a success waits for have a wait of their own (policies/evaluator.py) and need none.
        settling = 0.0 if recreate or moving or together or scaled_down else settle_remaining(
            children.slots, draft.now, spared=evaluators_waited_for(draft, p.model, children))
        if settling > 0:
            draft.requeue(settling)
            record_replicas(p.draft, p.model.spec, p.children, counts, finishing=False)
            return
        finish_training(draft, p.model, p.context, children, counts)
        return
    missing = missing_waits(draft, p.model, observed.pods, p.context.refusals)
    if _finish_if_done(p, sum(count.total for count in counts.values()), missing):
        keep_finished(draft, p.model.spec.run_policy, p.context, just_finished=True)
        record_replicas(p.draft, p.model.spec, p.children, counts, finishing=True)
        return

    for child in [*(slot.pod for slot in recreate if slot.pod is not None), *scaled_down, *together]:
        draft.delete_child(p.backend.kind, child)  # a recreated pod is made once the old one is gone: its name is taken
    if p.backend.kind == POD:  # the replicas of these pods restart with the job or are gone: no end to record
        retired = {pod.uid for pod in together} | {child.uid for child in scaled_down}
        draft.retired |= {pod.uid for pod in observed.pods if pod.uid in retired and not pod.ended}
    for service in children.surplus_of(SERVICE):
        if not service.terminating:
            draft.delete_child(SERVICE, service)
    node_note = move_off_bad_nodes(draft, on_bad_nodes, already_deleted=draft.deleted_uids(POD))
    p.backend.resume(draft, children)
    p.backend.keep_in_line(draft, p.model.spec, children)
    own = keep_job_children(draft, p.model, p.context)
    tell_tensorboard(draft, p.model)
    gang = plan_pod_group(draft, p.model, p.context, own.get(POD_GROUP, OwnChild()),
                          pods=[(slot.slot, slot.pod) for slot in children.slots if slot.pod is not None])
    _create_missing(p, hold_pods=gang.hold_pods is not None or waiting_for_a_name(own, p.context)
                    or _restart_together_pending(p, resize),
                    placements=admission.placements if admission is not None else MappingProxyType({}))
    replaced = p.backend.replaced(retryable, counts)
    replaced += [pod for pod in taken if pod.uid not in {each.uid for each in replaced}]
    update_running(draft, children, p.context.refusals, replaced, gang=gang,
                   node_note=node_note,
                   with_all=bool(together) or (bool(taken) and p.model.options.restart_scope == RESTART_SCOPE_JOB),
                   give_up_note=give_up_note(missing, p.model.options.unknown_scheduling_grace))
    record_replicas(p.draft, p.model.spec, p.children, counts, finishing=False)


def _restart_together_pending(p: _Planning, resize: Resize) -> bool:
    """Restart scope Job, and a resize by restart, start the replicas together: none is recreated while another
    of the job's pods is still going (terminating, or deleted by this plan; for a resize, one made for the old
    size). A replica started alone would wait for its peers, and could give up, a second job restart, before the
    last old pod is gone (one on a lost node goes only when the node is declared lost)."""
    deleting = p.draft.deleted_uids(POD)
    going = [pod for pod in p.context.observed.pods if pod.terminating or pod.uid in deleting]
    if p.model.options.restart_scope == RESTART_SCOPE_JOB:
        return bool(going)
    return p.backend.kind == POD and any(resize.out_of_date(pod) for pod in going)


def _create_missing(p: _Planning, *, hold_pods: bool, placements: Mapping[str, PodSetPlacement]) -> None:
    """Every slot's missing pod, and the replacement of each pod force-deleted for its node, sent only if that
    delete removed it (policies/node_loss.py), both only if the gang scheduler lets them exist yet; then every
    missing service: the job runs once its pods do, so they reach the scheduler first. The applier builds the
    bodies as it sends them."""
    forced = force_deleted_pods(p.draft) if p.backend.kind == POD else set()
    for kind in (p.backend.kind, SERVICE):
        for slot in p.children.slots:
            replica = slot.slot
            name = p.naming.name(replica.replica_type, replica.index)
            if kind == SERVICE:
                if replica not in p.children.services:
                    p.draft.create.append(Creation(kind, replica, name))
            elif hold_pods:
                continue
            elif slot.state is SlotState.ABSENT:
                p.draft.create.append(Creation(kind, replica, name))
            elif slot.pod is not None and (replaced := slot.pod.uid) in forced:
                p.draft.create.append(Creation(kind, replica, name, replaces=replaced))
    if p.draft.create or p.draft.patch:
        p.draft.desired = _desired(p, placements)
        _announce_gpu_renames(p)


def _desired(p: _Planning, placements: Mapping[str, PodSetPlacement]) -> DesiredChildren:
    config = p.draft.config
    replaces_lost_pods = config.node_loss.watch_nodes and p.model.options.node_policy.policy == NODE_LOSS_REPLACE
    return DesiredChildren(p.model, config.service_domain, config.accelerators, config.gang, p.naming,
                           replaces_lost_pods=replaces_lost_pods, placements=placements, progress=config.progress)


def _announce_gpu_renames(p: _Planning) -> None:
    """Said whenever pods (or Jobs) of a replica type whose template names the legacy GPU resource are created
    (identical events are counted as one by the recorder). No later plan would say it again, so this plan's
    status does not wait for one."""
    created = {c.slot.replica_type for c in p.draft.create if c.kind == p.backend.kind and c.slot is not None}
    renamed = [rename for rename in p.model.options.gpu_renamed if rename.replica_type in created]
    if renamed:
        p.draft.event(EVENT_WARNING, REASON_GPU_RESOURCE_RENAMED,
                      renamed_message(p.draft.job_ref, renamed, p.draft.config.gpu_resource), only_this_plan=True)


def _finish_if_done(p: _Planning, restarts: int, missing: list[MissingWait]) -> bool:
    """Whether the job failed: a replica that failed for good, too many restarts, the deadline, or a PriorityClass
    or scheduler its pods name still missing after the grace."""
    run_policy = p.model.spec.run_policy
    return (fail_for_replicas(p.draft, run_policy, p.children.slots, restarts, has_failed=p.backend.has_failed)
            or fail_past_deadline(p.draft, run_policy)
            or fail_for_missing(p.draft, missing, p.model.options.unknown_scheduling_grace))
