"""The planner's part for a job's PodGroup (one per job, when a gang scheduler is configured), beyond what the
shared policy for a job's own children does (make it, keep it in line, replace a stray one: policies/job_children.py):
what its phase says, and when the pods must wait for it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tfop.api.constants import CONDITION_RUNNING, EVENT_WARNING
from tfop.controller.plan.children.pod_group import admission_wait, gang_size, pod_group_name
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.gang_schedulers import GangScheduler
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.policies.gang_placement import GANG_UNSCHEDULABLE, GangPhase, gang_phase
from tfop.controller.plan.policies.job_children import OwnChild
from tfop.controller.plan.types import PlanContext


@dataclass(frozen=True)
class GangState:
    """What the pods of a job may do as far as its group is concerned."""

    hold_pods: str | None = None  # why the missing pods must not be created yet
    note: str = ""  # what the group and the scheduler say, for a message about pending replicas
    phase: GangPhase | None = None  # what the group's phase says, once the group exists
    gang: GangScheduler | None = None

    @property
    def running_note(self) -> str:
        """For the message of a job whose replicas all run: the group's phase (it may lag behind the pods)."""
        return f" {self.phase.summary()}." if self.phase is not None else ""

    def announce(self, draft: PlanDraft) -> None:
        """One GangUnschedulable Warning when the gang's Running message first carries the mark; call it when
        that message is the one set (it is how a later plan knows the event was given)."""
        if self.phase is None or self.gang is None or not self.phase.cannot_be_placed:
            return
        if f"[{GANG_UNSCHEDULABLE}]" not in draft.message_of(CONDITION_RUNNING, before=True):
            draft.event(EVENT_WARNING, GANG_UNSCHEDULABLE, self.phase.event_message(draft.job_ref, self.gang))


def plan_pod_group(draft: PlanDraft, job: TFJobModel, context: PlanContext, group: OwnChild,
                   pods: Iterable[tuple[Any, PodView]] = ()) -> GangState:
    """For a job that runs (neither finished nor suspended), once the shared policy kept its group
    (policies/job_children.py; `group` is what it found). `pods`: the job's pods with their replica slots, for
    telling whether the gang cannot be placed."""
    gang = context.config.gang
    draft.status = replace(draft.status, pod_group_phase=None)  # set again below from the group the cache shows
    if gang is None:
        return GangState()
    namespace, name = job.metadata.namespace, pod_group_name(job.metadata.name)
    ref = f"PodGroup {namespace}/{name}"
    if context.gang_problem is not None:
        return GangState(hold_pods=context.gang_problem, note=f"; {context.gang_problem}")
    current = group.current
    if group.name_taken:
        return GangState(hold_pods=f"{ref} is being deleted; a new one is made once it is gone",
                         note=f"; {ref} is being deleted")
    reported: GangPhase | None = None
    if current is not None:
        reported = gang_phase(current, gang, gang_size(job.spec), pods, draft.now)
        if reported.phase:
            draft.status = replace(draft.status, pod_group_phase=reported.phase)
        if reported.recheck_after is not None:
            draft.requeue(reported.recheck_after)  # the grace ends with no change to wake the job
    wait = admission_wait(current, gang)
    if wait is not None:
        note = f"; their pods are created once the {gang.name} scheduler admits {ref}, which {wait}"
        if reported is not None and reported.cannot_be_placed:
            note += f" [{GANG_UNSCHEDULABLE}]"
        return GangState(hold_pods=f"{ref} {wait}", note=note, phase=reported, gang=gang)
    # What the scheduler says about each pod it cannot place is in the troubles the Running message lists already.
    return GangState(note=f"; {reported.note()}" if reported is not None else "", phase=reported, gang=gang)

