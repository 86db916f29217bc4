"""The one policy for a job's own children (its PodGroup, NetworkPolicy, HPA, TensorBoard: the table of
children/job_children.py): while the job runs, each kind the job wants is made, kept in line by its in-line check,
and every other of that kind deleted (a stray, one of an old name, one no longer wanted); in any other state, the
kinds not kept in it are deleted and the others left as they are, but for a finished job's kinds kept for a TTL
after it finished (the TensorBoard), deleted once it has passed.

A name still held by a child being deleted is waited for: nothing is made under it until it is gone (the delete
wakes the job), and meanwhile no replica's child is made either, since the job's own come first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tfop.api.kueue import INTEGRATION_OWN
from tfop.controller.plan.children.job_child import JobChildKind, JobState
from tfop.controller.plan.children.job_children import job_child_kinds
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.observed.own_child import OwnedView
from tfop.controller.plan.types import ChildPatch, Creation, PlanContext


@dataclass(frozen=True)
class OwnChild:
    """What a running job's plan found of one kind of its own children."""

    current: OwnedView | None = None  # the one it keeps (None: it wants none, or it is made by this plan)
    name_taken: bool = False  # its name is held by one being deleted: not made yet


def kinds_of(context: PlanContext) -> tuple[JobChildKind, ...]:
    """The table for this operator: the PodGroup only with a gang scheduler whose CRD is installed, the Workload
    only with tfop's own Kueue integration."""
    return job_child_kinds(context.config.gang if context.gang_problem is None else None,
                           own_kueue=context.config.kueue_integration == INTEGRATION_OWN)


def keep_job_children(draft: PlanDraft, job: TFJobModel, context: PlanContext) -> dict[str, OwnChild]:
    """For a job that runs: by kind, what there is of each. Not those a rule of their own keeps first
    (JobChildKind.kept_first: the Workload, since whether the job runs at all depends on it)."""
    return {kind.kind: keep_job_child(draft, job, context, kind) for kind in kinds_of(context)
            if not kind.kept_first}


def settle_job_children(draft: PlanDraft, context: PlanContext, state: JobState,
                        completed: datetime | None = None) -> None:
    """For a job that does not run (suspended, finished, rejected): each kind settled (settle_job_child)."""
    for kind in kinds_of(context):
        settle_job_child(draft, context, kind, state, completed)


def settle_job_child(draft: PlanDraft, context: PlanContext, kind: JobChildKind, state: JobState,
                     completed: datetime | None = None) -> None:
    """One kind of the children of a job that does not run: deleted unless the kind is kept in `state`, and, of a
    job that finished at `completed`, once its TTL has passed (looking again when it will); nothing is made or
    patched. The one another controller deletes (JobChildKind.handed_over) is left alone."""
    kept = kind.handed_over(context.job) if kind.handed_over is not None else None
    children = [child for child in context.observed.own_of(kind.kind) if not child.terminating and child.name != kept]
    if not children:
        return
    if state in kind.kept_in:
        if completed is None or kind.finished_ttl is None:
            return
        remaining = (completed - draft.now).total_seconds() + kind.finished_ttl(context.job, draft.config)
        if remaining > 0:
            draft.requeue(remaining)
            return
    for child in children:
        draft.delete_child(kind.kind, child)


def waiting_for_a_name(own: dict[str, OwnChild], context: PlanContext) -> bool:
    """Whether a child the job wants waits for its name: the replicas' children wait with it, unless the kind is
    beside the training (the TensorBoard)."""
    beside = {kind.kind for kind in kinds_of(context) if not kind.replicas_wait}
    return any(child.name_taken for kind, child in own.items() if kind not in beside)


def keep_job_child(draft: PlanDraft, job: TFJobModel, context: PlanContext, kind: JobChildKind) -> OwnChild:
    """One kind of the job's own children, kept as the policy says."""
    name, wanted = kind.name(job.metadata), kind.wanted(job)
    current: OwnedView | None = None
    name_taken = False
    for child in context.observed.own_of(kind.kind):
        own_name = child.name == name
        if child.terminating:
            name_taken = name_taken or own_name
        elif wanted is not None and own_name and current is None:
            current = child
        else:
            draft.delete_child(kind.kind, child)
    if wanted is None:
        return OwnChild()
    if current is None:
        if not name_taken:
            draft.create.append(Creation(kind.kind, None, name))
        return OwnChild(name_taken=name_taken)
    if kind.replaced is not None and kind.replaced(current.spec, wanted):
        draft.delete_child(kind.kind, current)
        return OwnChild(name_taken=True)
    patch = kind.drift(current.spec, wanted)
    if patch is not None:
        draft.patch.append(ChildPatch(kind.kind, name, patch))
    return OwnChild(current)
