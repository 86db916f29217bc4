"""MultiKueue with tfop's own Kueue integration: Kueue's generic MultiKueue adapter for external kinds (Kueue's
Configuration: multiKueue.externalFrameworks) dispatches a TFJob whose spec.managedBy is kueue.x-k8s.io/multikueue
from a manager cluster to a worker cluster.

On the manager (`keep_dispatched_workload`), the job's Workload is made and kept as any queued job's, so that the
MultiKueue admission check of its ClusterQueue sends it; nothing else is. Its pods run on the worker, and its status
is the worker's copy's, which the adapter copies whole onto it (a merge patch of the status subresource, fields
the worker's copy lacks removed): so no plan writes the status of such a job, and the two writers never fight. Once
that status says the job finished, its Workload stays as it is (MultiKueue finishes it; made again, it would run
the job again); a suspended job keeps none (MultiKueue then deletes the worker's copy).

On the worker (`follow_prebuilt`), MultiKueue makes the Workload first, which the worker's Kueue admits, then the
copy of the job, without spec.managedBy and naming that Workload (api/kueue.py PREBUILT_WORKLOAD). tfop makes no
Workload for such a copy: it adopts that one, setting the job as its controller (as Kueue's own job integrations
do), and follows its admission as its own from that pass on. Once the job's stored status says it finished, the
Workload's Finished condition says so too (`report_finished`): the manager's MultiKueue waits for it, copies the
job's status (final already, since it was stored first), finishes the manager's Workload and deletes the copy and
its Workload.
tfop never deletes that Workload (children/workload.py, handed_over).
"""

from __future__ import annotations

from tfop.api.constants import CONDITION_FAILED, CONDITION_SUCCEEDED
from tfop.api.kueue import PREBUILT_WORKLOAD, prebuilt_workload
from tfop.api.timestamps import format_time
from tfop.controller.plan.children.job_child import JobState, owner_reference
from tfop.controller.plan.children.workload import PRIORITY_CLASS_RETRY_SECONDS, WORKLOAD_KIND
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.job_status import Condition
from tfop.controller.plan.observed.child import Child
from tfop.controller.plan.observed.workload import FINISHED, observe_workload
from tfop.controller.plan.policies.job_children import keep_job_child, settle_job_child
from tfop.controller.plan.status import TRUE
from tfop.controller.plan.types import WORKLOAD, ChildPatch, PlanContext
from tfop.objects import Object

# A copy whose prebuilt Workload the cache has not shown yet: its informer tells no job of an unowned Workload, so
# the job looks again this soon.
PREBUILT_RETRY_SECONDS = 1.0
# The Finished condition's reasons, as Kueue's job integrations write them.
FINISHED_SUCCEEDED, FINISHED_FAILED = "Succeeded", "Failed"


def final_condition(draft: PlanDraft) -> Condition | None:
    """The job's Succeeded or Failed condition, if the stored status has one True."""
    for condition_type in (CONDITION_SUCCEEDED, CONDITION_FAILED):
        condition = draft.old_condition(condition_type)
        if condition is not None and condition.status == TRUE:
            return condition
    return None


def keep_dispatched_workload(draft: PlanDraft, job: TFJobModel, context: PlanContext) -> None:
    """On the manager: the Workload of a job MultiKueue dispatches, kept as the child-kind table's policy keeps it
    (made, a stray or one of an old shape deleted) while the job neither finished nor is suspended."""
    if final_condition(draft) is not None:
        return
    if job.spec.run_policy.suspend:
        settle_job_child(draft, context, WORKLOAD_KIND, JobState.SUSPENDED)
        return
    if job.options.own_priority_class is not None and job.options.own_priority is None:
        draft.requeue(PRIORITY_CLASS_RETRY_SECONDS)  # no Workload is made without its priority
    keep_job_child(draft, job, context, WORKLOAD_KIND)


def follow_prebuilt(draft: PlanDraft, job: TFJobModel, context: PlanContext) -> Object | str:
    """On a worker: the prebuilt Workload of a copy MultiKueue made, as cached, once the job controls it or as
    this plan adopts it (the patch goes before any create, so the pods an admission lets this plan make are made
    only if it took); else why the job waits. Any other Workload the job controls is deleted."""
    name = job.metadata.prebuilt_workload or ""
    current: Object | None = None
    for child in context.of_kind(WORKLOAD):
        seen = Child.of(child)
        if seen.name == name and not seen.terminating:
            current = child
        elif not seen.terminating:
            draft.delete_child(WORKLOAD, child)
    if current is not None:
        return current
    found = context.prebuilt_workload
    if found is None:
        draft.requeue(PREBUILT_RETRY_SECONDS)
        return (f"{draft.job_ref} waits for its Kueue Workload {name}, which MultiKueue makes for it "
                f"({PREBUILT_WORKLOAD}).")
    seen = Child.of(found)
    if seen.terminating:
        return f"{draft.job_ref} waits: its Kueue Workload {name} is being deleted."
    if seen.controller is not None:
        return (f"{draft.job_ref} waits: its Kueue Workload {name} ({PREBUILT_WORKLOAD}) is controlled by "
                f"{seen.controller.kind} {seen.controller.name}, not by the job.")
    draft.patch.append(ChildPatch(WORKLOAD, name, {"metadata": {
        "resourceVersion": seen.resource_version, "ownerReferences": [owner_reference(job.metadata)]}}))
    return found


def report_finished(draft: PlanDraft, context: PlanContext) -> None:
    """On a worker: a finished copy's prebuilt Workload marked Finished, once the stored status says the job
    finished (so MultiKueue, which copies the status as it reads that condition, copies the final one)."""
    name = prebuilt_workload(context.job)
    final = final_condition(draft)
    if name is None or final is None:
        return
    stored = next((w for w in context.of_kind(WORKLOAD) if Child.of(w).name == name), None)
    if stored is None:
        return
    workload = observe_workload(stored)
    if workload.terminating or workload.finished:
        return
    reason = FINISHED_SUCCEEDED if final.type == CONDITION_SUCCEEDED else FINISHED_FAILED
    finished = {"type": FINISHED, "status": TRUE, "reason": reason, "message": final.message or reason,
                "lastTransitionTime": format_time(draft.now)}
    conditions = [*(c for c in workload.conditions if c.get("type") != FINISHED), finished]
    # The whole list (a merge patch replaces lists), guarded by the resourceVersion read.
    draft.patch.append(ChildPatch(WORKLOAD, name, {"metadata": {"resourceVersion": workload.resource_version},
                                                   "status": {"conditions": conditions}}, subresource="status"))
