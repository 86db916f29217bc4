"""The planner's part for a job's PodGroup (one per job, when a gang scheduler is configured): create it before
the pods, keep its spec in line with the job's, replace a stray one, and say when the pods must wait for it."""

from __future__ import annotations

from dataclasses import dataclass

from tfop.api.fields import mapping_at, text
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.gang import admission_wait, describe, pod_group_name, pod_group_spec, spec_drift
from tfop.controller.plan.status import is_terminating
from tfop.controller.plan.types import POD_GROUP, ChildPatch, Creation, PlanContext
from tfop.objects import Object

POD_GROUP_PHASE = "podGroupPhase"  # in the job's status, for kubectl get -o wide


@dataclass(frozen=True)
class GangState:
    """What the pods of a job may do as far as its group is concerned."""

    hold_pods: str | None = None  # why the missing pods must not be created yet
    note: str = ""  # what the group and the scheduler say, for a message about pending replicas


def plan_pod_group(draft: PlanDraft, job: Object, context: PlanContext) -> GangState:
    """`job` is defaulted and valid, and runs (neither finished nor suspended)."""
    gang = context.config.gang
    draft.status.pop(POD_GROUP_PHASE, None)  # set again below from the group the cache shows
    if gang is None:
        return GangState()
    namespace, name = job["metadata"]["namespace"], pod_group_name(job)
    ref = f"PodGroup {namespace}/{name}"
    if context.gang_problem is not None:
        return GangState(hold_pods=context.gang_problem, note=f"; {context.gang_problem}")
    current: Object | None = None
    name_taken = False
    for group in context.of_kind(POD_GROUP):
        own_name = mapping_at(group, "metadata").get("name") == name
        if is_terminating(group):
            name_taken = name_taken or own_name
        elif own_name and current is None:
            current = group
        else:
            draft.delete_child(POD_GROUP, group)
    if current is None:
        if name_taken:
            return GangState(hold_pods=f"{ref} is being deleted; a new one is made once it is gone",
                             note=f"; {ref} is being deleted")
        draft.create.append(Creation(POD_GROUP, None, name))
    else:
        phase = text(mapping_at(current, "status").get("phase"))
        if phase:
            draft.status[POD_GROUP_PHASE] = phase
        drift = spec_drift(pod_group_spec(job, gang), current)
        if drift is not None:
            draft.patch.append(ChildPatch(POD_GROUP, name, drift))
    wait = admission_wait(current, gang)
    if wait is not None:
        return GangState(hold_pods=f"{ref} {wait}",
                         note=f"; their pods are created once the {gang.name} scheduler admits {ref}, which {wait}")
    # What the scheduler says about pods it cannot place is in the troubles the Running message lists already.
    return GangState(note=f"; {ref}: {describe(current)}" if current is not None else "")

