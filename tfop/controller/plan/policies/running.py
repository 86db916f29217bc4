"""Whether a job runs: Running means every replica pod runs (or has finished its part); while any is pending the
condition says how many and why (what the pods suffer, what the apiserver refused, the gang, lost nodes, when it
gives up on a PriorityClass or scheduler the cluster lacks), rather than claiming the job runs. Restarting says
which replicas are being replaced."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from tfop.api.constants import (
    CONDITION_RESTARTING,
    CONDITION_RUNNING,
    REASON_PENDING,
    REASON_RESTARTING,
    REASON_RUNNING,
)
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.policies.gang import GangState
from tfop.controller.plan.policies.troubles import announce_troubles, troubles_of, with_troubles
from tfop.controller.plan.replicas.pod_slots import SlotState, SortedChildren
from tfop.controller.plan.replicas.replica_status import describe_failure
from tfop.controller.plan.status import listing
from tfop.controller.plan.types import POD, CreateRefusal


def update_running(draft: PlanDraft, children: SortedChildren, refusals: Iterable[CreateRefusal],
                   replaced: list[PodView], *, gang: GangState, node_note: str = "", with_all: bool = False,
                   give_up_note: str = "") -> None:
    """The Running and Restarting conditions of a job that runs. `replaced`: the failed pods this plan replaces;
    `refusals`: what the apiserver refused of the last plan's creates; `with_all`: the restart takes every
    replica with it (restart scope Job); `give_up_note`: what the job waits for that the cluster lacks, and when
    it gives up (policies/unknown_scheduling.py), told while it does not run."""
    troubles = troubles_of((slot.slot, slot.pod) for slot in children.slots if slot.pod is not None)
    announce_troubles(draft, troubles)
    if replaced:
        listed = listing([describe_failure(pod) for pod in replaced])
        together = ", and with it every other replica (restart scope Job)" if with_all else ""
        draft.set_condition(CONDITION_RESTARTING, true=True, reason=REASON_RESTARTING,
                            message=f"{draft.job_ref} is restarting {listed}{together}.")
    deleted = draft.deleted_uids(POD)  # a pod this plan deletes (restarted together, resized) no longer runs
    states = Counter(SlotState.TERMINATING if slot.pod is not None and slot.pod.uid in deleted else slot.state
                     for slot in children.slots)
    finished = states[SlotState.SUCCEEDED] + states[SlotState.TOLERATED]
    waiting = len(children.slots) - finished - states[SlotState.RUNNING]
    said_of_nodes = f" {node_note}." if node_note else ""
    giving_up = f" {give_up_note}" if give_up_note else ""
    if waiting == 0 and states[SlotState.RUNNING] > 0:
        message = f"{draft.job_ref} is running."
        draft.set_condition(CONDITION_RUNNING, true=True, reason=REASON_RUNNING,
                            message=with_troubles(message + gang.running_note + said_of_nodes, troubles))
        draft.clear_condition(CONDITION_RESTARTING, reason=REASON_RUNNING, message=message)
    elif draft.is_true(CONDITION_RESTARTING):
        draft.set_condition(CONDITION_RUNNING, true=False, reason=REASON_RESTARTING,
                            message=with_troubles(draft.message_of(CONDITION_RESTARTING) + giving_up, troubles))
    else:
        detail = ", ".join(f"{states[state]} {state.value}" for state in SlotState if states[state]
                           and state not in (SlotState.RUNNING, SlotState.SUCCEEDED, SlotState.TOLERATED))
        refused = [refusal.describe() for refusal in refusals]
        cause = f"; creating them fails: {listing(refused)}" if refused else ""
        message = (f"{draft.job_ref} is waiting for {waiting} of {len(children.slots)} replicas to run: "
                   f"{detail}{cause}{gang.note}.{said_of_nodes}{giving_up}")
        gang.announce(draft)
        draft.set_condition(CONDITION_RUNNING, true=False, reason=REASON_PENDING,
                            message=with_troubles(message, troubles))
