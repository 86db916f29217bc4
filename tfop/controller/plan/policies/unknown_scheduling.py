"""Pods that name what the cluster lacks: a PriorityClass that does not exist (the apiserver's Priority admission
refuses to create them, 403 `no PriorityClass with name X was found`) or a scheduler that never takes them (none
runs under their schedulerName: they stay Pending, with no node and no PodScheduled condition). Left alone, either
waits for ever. The job waits up to its grace (the annotation tfop.kubeflow.org/unknown-scheduling-grace-seconds,
else the controller config's unknownSchedulingGraceSeconds), its Running condition saying when it gives up, then
fails with a reason that names what is missing, as the Job controller fails a Job past its own limits.

Pure and level-triggered: each wait is timed from stored state, never from what a process remembers. A refused pod
has no object to time it by, so its wait runs from when the job's Running condition last became False (it stopped
running, or never ran); a pod no scheduler takes waits from its creation. The plan is requeued for the moment a
grace ends, and for the moment a new pod's wait for a scheduler is worth telling.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tfop.api.constants import (
    CONDITION_FAILED,
    CONDITION_RUNNING,
    POD_PENDING,
    REASON_PRIORITY_CLASS_NOT_FOUND,
    REASON_SCHEDULER_NOT_FOUND,
    ReplicaType,
)
from tfop.api.fields import mapping, text
from tfop.api.timestamps import format_time
from tfop.controller.plan.children.desired import replica_slot_of
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.policies.cleanup import finish
from tfop.controller.plan.slots import ReplicaSlot, replica_ranges
from tfop.controller.plan.status import FALSE
from tfop.controller.plan.types import POD, CreateRefusal

PRIORITY_CLASS = "PriorityClass"
SCHEDULER = "scheduler"
DEFAULT_SCHEDULER = "default-scheduler"  # what the apiserver sets where a pod names no scheduler
# The Priority admission plugin's words for a pod whose priorityClassName names no PriorityClass.
_NO_PRIORITY_CLASS = re.compile(r"no PriorityClass with name (\S+) was found")
# How long a new pod may wait for a scheduler before the job tells it (at most the grace): a running scheduler
# takes a pod within a second or two, so a healthy job's message never mentions its scheduler.
_UNTAKEN_AFTER = timedelta(seconds=10)


@dataclass(frozen=True, order=True)
class MissingWait:
    """Replicas that wait for a PriorityClass or a scheduler the cluster lacks, since when."""

    since: datetime
    what: str  # PRIORITY_CLASS or SCHEDULER
    name: str
    replicas: tuple[ReplicaSlot, ...]

    def describe(self) -> str:
        """e.g. `the PriorityClass "high" that Worker 0-1 name does not exist`."""
        if self.what == PRIORITY_CLASS:
            return f'the PriorityClass "{self.name}" that {replica_ranges(self.replicas)} name does not exist'
        return f'no scheduler named "{self.name}" has taken {replica_ranges(self.replicas)}'

    def gives_up(self, grace: timedelta) -> str:
        """e.g. `The PriorityClass ... does not exist: the job fails at 2026-11-21T10:10:00Z unless it is created.`"""
        said, unless = self.describe(), "it is created" if self.what == PRIORITY_CLASS else "one takes them"
        return f"{said[0].upper()}{said[1:]}: the job fails at {format_time(self.since + grace)} unless {unless}."


def missing_waits(draft: PlanDraft, model: TFJobModel, pods: Iterable[PodView],
                  refusals: Iterable[CreateRefusal]) -> list[MissingWait]:
    """What the job's replicas wait for that the cluster lacks, soonest started first."""
    grace = model.options.unknown_scheduling_grace
    return sorted([*_refused_priority_classes(draft, refusals), *_untaken_pods(draft, model, pods, grace)])


def fail_for_missing(draft: PlanDraft, waits: list[MissingWait], grace: timedelta) -> bool:
    """Finishes the job as Failed once a wait has outlasted the grace; whether it did. Before, the plan is requeued
    for that moment, even if nothing changes before it."""
    for wait in waits:
        remaining = (wait.since + grace - draft.now).total_seconds()
        if remaining > 0:
            draft.requeue(remaining)
            continue
        reason = REASON_PRIORITY_CLASS_NOT_FOUND if wait.what == PRIORITY_CLASS else REASON_SCHEDULER_NOT_FOUND
        finish(draft, CONDITION_FAILED, reason,
               f"{draft.job_ref} has failed because {wait.describe()}: it waited from {format_time(wait.since)}, "
               f"longer than its unknown-scheduling grace of {grace.total_seconds():g}s.")
        return True
    return False


def give_up_note(waits: list[MissingWait], grace: timedelta) -> str:
    """For the Running condition: what is missing, and when the job fails unless it appears."""
    return " ".join(wait.gives_up(grace) for wait in waits)


def _refused_priority_classes(draft: PlanDraft, refusals: Iterable[CreateRefusal]) -> list[MissingWait]:
    by_class: dict[str, list[ReplicaSlot]] = {}
    for refusal in refusals:
        found = _NO_PRIORITY_CLASS.search(refusal.message)
        if refusal.kind == POD and refusal.slot is not None and found:
            by_class.setdefault(found.group(1), []).append(refusal.slot)
    since = _stopped_running(draft)
    return [MissingWait(since, PRIORITY_CLASS, name, tuple(sorted(slots))) for name, slots in by_class.items()]


def _stopped_running(draft: PlanDraft) -> datetime:
    """When the job's Running condition last became False; now if it is not False yet."""
    running = draft.old_condition(CONDITION_RUNNING)
    if running is not None and running.status == FALSE:
        return running.last_transition_time or draft.now
    return draft.now


def _untaken_pods(draft: PlanDraft, model: TFJobModel, pods: Iterable[PodView],
                  grace: timedelta) -> list[MissingWait]:
    """Pods no scheduler has looked at (no node, no PodScheduled condition: the cache keeps only an unscheduled
    one) for `_UNTAKEN_AFTER` or the grace, whichever is shorter, by the scheduler they name."""
    told_after = min(_UNTAKEN_AFTER, grace)
    by_scheduler: dict[str, list[tuple[datetime, ReplicaSlot]]] = {}
    for pod in pods:
        created, slot = pod.created, replica_slot_of(pod)
        if created is None or slot is None or slot.replica_type not in model.spec.replica_specs or not _untaken(pod):
            continue
        if draft.now - created < told_after:
            draft.requeue((created + told_after - draft.now).total_seconds())
            continue
        by_scheduler.setdefault(_scheduler_of(draft, model, slot.replica_type), []).append((created, slot))
    return [MissingWait(min(created for created, _ in waiting), SCHEDULER, name,
                        tuple(sorted(slot for _, slot in waiting))) for name, waiting in by_scheduler.items()]


def _untaken(pod: PodView) -> bool:
    return not pod.terminating and pod.phase == POD_PENDING and not pod.node_name and pod.scheduled is None


def _scheduler_of(draft: PlanDraft, model: TFJobModel, replica_type: ReplicaType) -> str:
    """The scheduler a replica's pods name: their template's, else the gang scheduler's, else the default."""
    named = text(mapping(model.spec.replica_specs[replica_type].template.get("spec")).get("schedulerName"))
    gang = draft.config.gang
    return named or (gang.scheduler_name if gang is not None else DEFAULT_SCHEDULER)
