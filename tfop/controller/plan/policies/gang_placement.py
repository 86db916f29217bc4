"""What a job's PodGroup says about its gang, told on the job: its phase in words, and whether the gang cannot be
placed (a Warning event, GangUnschedulable, once per episode).

What callers may rely on: everything is read from the group and the pods as they are (level-triggered); a gang is
called unplaceable only once all of its minMember pods have existed for GANG_PLACEMENT_GRACE and the scheduler
still reports some of them Unschedulable, while the group has not reached a placed phase. The grace keeps the
scheduler's first answers out: the Coscheduling plugin rejects a pod whose siblings do not exist yet (tfop creates
pods in growing batches), and that condition stays on the pod until the scheduler tries it again.

What the schedulers write (scheduler-plugins v0.32.7, Volcano v1.12):
- scheduler-plugins' controller (cmd/controller) sets the phase: Pending while fewer than minMember of the group's
  pods exist, Scheduling once they do, Running once minMember run or succeeded, Finished once minMember
  succeeded, Failed once one failed with minMember existing; it never changes Finished or Failed again. The
  Coscheduling plugin writes nothing to the group: what it says goes into each pod's PodScheduled condition.
- Volcano's scheduler sets Pending (not admitted), Inqueue (admitted: the pods may be created), Running, Unknown
  (part of the gang placed) and Completed, and writes conditions (type Unschedulable, with a message) on the group.
- kube-scheduler (1.37) writes no phase: its condition PodGroupInitiallyScheduled, True once it bound the whole
  gang, False with its reason while it cannot, is told as a phase (children/native_gang.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tfop.api.constants import REASON_GANG_UNSCHEDULABLE
from tfop.controller.plan.children.native_gang import PHASE_SCHEDULED, PHASE_UNSCHEDULABLE, native_phase
from tfop.controller.plan.gang_schedulers import GANG_KUBERNETES, GANG_SCHEDULER_PLUGINS, GANG_VOLCANO, GangScheduler
from tfop.controller.plan.observed.own_child import OwnedView
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.policies.troubles import UNSCHEDULABLE, Trouble, describe, pod_trouble

GANG_UNSCHEDULABLE = REASON_GANG_UNSCHEDULABLE  # the Warning event's reason, and its mark in the Running message
GANG_PLACEMENT_GRACE = 30.0  # seconds all minMember pods exist before their Unschedulable counts against the gang

# What each phase means, by scheduler: the words follow the phase in the Running condition's message.
_PHASE_WORDS: dict[str, dict[str, str]] = {
    GANG_SCHEDULER_PLUGINS: {
        "Pending": "fewer than minMember of its pods exist",
        "Scheduling": "its pods wait to be placed together",
        "Running": "minMember of its pods run",
        "Finished": "minMember of its pods succeeded",
        "Failed": "one of its pods failed; the scheduler-plugins controller keeps this phase",
        "Unknown": "part of the gang is placed",
    },
    GANG_VOLCANO: {
        "Pending": "waiting for the scheduler to admit it",
        "Inqueue": "admitted; its pods are placed once all fit",
        "Running": "minMember of its pods run",
        "Unknown": "part of the gang is placed, the rest cannot be",
        "Completed": "its pods are done",
    },
    GANG_KUBERNETES: {
        PHASE_SCHEDULED: "kube-scheduler placed the whole gang",
        PHASE_UNSCHEDULABLE: "kube-scheduler cannot place the whole gang yet, so it binds none of its pods",
    },
}
# What a group without a phase means, by scheduler.
_NO_PHASE = {GANG_KUBERNETES: "kube-scheduler has not tried the whole gang yet"}
# Phases in which the scheduler has placed the gang (or is done with it): nothing is unplaceable there.
_PLACED = frozenset({"Running", "Finished", "Failed", "Completed", PHASE_SCHEDULED})


@dataclass(frozen=True)
class GangPhase:
    ref: str  # e.g. `PodGroup ns/mnist`
    phase: str  # "" before any controller or scheduler set one
    words: str  # what the phase means
    scheduler_says: str  # the newest message in the group's conditions (Volcano), or ""
    unplaceable: list[Trouble]  # the gang's unschedulable pods, when the gang counts as unplaceable
    volcano_unschedulable: str  # Volcano: the message of the group's Unschedulable condition, when it is True
    recheck_after: float | None  # seconds until the grace ends, when it still runs

    @property
    def cannot_be_placed(self) -> bool:
        return bool(self.unplaceable or self.volcano_unschedulable)

    def summary(self) -> str:
        """e.g. `PodGroup ns/mnist is Scheduling (its pods wait to be placed together)`."""
        if not self.phase:
            return f"{self.ref} has no phase yet ({self.words})"
        said = f"; {self.scheduler_says}" if self.scheduler_says else ""
        return f"{self.ref} is {self.phase} ({self.words}{said})"

    def note(self) -> str:
        """For the Running condition while replicas wait: the summary, and the mark of an unplaceable gang."""
        if not self.cannot_be_placed:
            return self.summary()
        count = len(self.unplaceable)
        why = (f"{count} of its pods are unschedulable" if count else self.volcano_unschedulable.rstrip("."))
        return f"{self.summary()} [{GANG_UNSCHEDULABLE}]: the gang cannot be placed: {why}"

    def event_message(self, job_ref: str, gang: GangScheduler) -> str:
        said = describe(self.unplaceable) if self.unplaceable else self.volcano_unschedulable.rstrip(".")
        return f"{job_ref}: the {gang.name} scheduler cannot place its gang ({self.summary()}): {said}."


def gang_phase(group: OwnedView, gang: GangScheduler, min_member: int, pods: Iterable[tuple[Any, PodView]],
               now: datetime) -> GangPhase:
    """`pods`: the job's pods with their replica slots. `min_member`: the group's minMember as tfop wants it."""
    ref = f"PodGroup {group.namespace}/{group.name}"
    phase = native_phase(group) if gang.native else group.phase
    words = (_PHASE_WORDS.get(gang.name, {}).get(phase, "a phase tfop does not know") if phase else
             _NO_PHASE.get(gang.name, "its scheduler's controller has not written one"))
    said = [condition.message for condition in group.conditions if condition.message]
    volcano_unschedulable = next(
        (condition.message or "the scheduler marks it Unschedulable" for condition in group.conditions
         if condition.type == UNSCHEDULABLE and condition.status == "True"), "")
    unplaceable: list[Trouble] = []
    recheck: float | None = None
    live = [(slot, pod) for slot, pod in pods if not pod.terminating]
    unschedulable = sorted(Trouble(trouble[0], trouble[1], slot) for slot, trouble in
                           ((slot, pod_trouble(pod)) for slot, pod in live)
                           if trouble is not None and trouble[0] == UNSCHEDULABLE)
    if phase in _PLACED:
        volcano_unschedulable = ""
    elif unschedulable and min_member > 0 and len(live) >= min_member:
        created = [pod.created for _, pod in live]
        newest = max((time for time in created if time is not None), default=now)
        waited = (now - newest).total_seconds()
        if waited >= GANG_PLACEMENT_GRACE:
            unplaceable = unschedulable
        else:
            recheck = GANG_PLACEMENT_GRACE - waited
    scheduler_says = next((message for message in reversed(said) if message != volcano_unschedulable), "")
    return GangPhase(ref, phase, words, scheduler_says, unplaceable, volcano_unschedulable, recheck)
