"""What happened to a job as a whole, for its timeline: a replica replaced because its node was lost, replicas
restarted together (restart scope Job, a resize by restart), and resizes, each with its reason. Read from what
is already at hand: the job's events (NodeLost, Resized, TFJobRestarting), its status.lastResize (kept after the
Resized event expires from the apiserver, an hour later), and its pods as the cache keeps them, deleted ones
included (cache.py): pods whose deletion was asked for within RESTART_TOGETHER_SECONDS of each other, before the
job finished (its cleanup deletes pods too), were restarted together."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tfop.api.constants import (
    CONDITION_FAILED,
    CONDITION_RESTARTING,
    CONDITION_SUCCEEDED,
    KIND,
    REASON_NODE_LOST,
    REASON_RESIZED,
    REASON_RESTARTING,
    STATUS_LAST_RESIZE,
)
from tfop.api.timestamps import parse_time
from tfop.objects import Object
from tfop.ui.views.clock_text import moment_text
from tfop.ui.views.job_page import event_time

NODE_LOSS = "node-loss"
RESTART_TOGETHER = "restart-together"
RESIZE = "resize"
# One plan deletes the pods it restarts together; their deletions reach the apiserver within this of each other.
RESTART_TOGETHER_SECONDS = 5.0
# How far back an event may be to be the reason of a restart together (the plan that deletes tells it too).
REASON_WINDOW = timedelta(seconds=60)
SAME_MOMENT = timedelta(seconds=2)


@dataclass(frozen=True)
class Happening:
    moment: datetime
    kind: str  # NODE_LOSS, RESTART_TOGETHER or RESIZE
    label: str  # short, on the timeline
    reason: str  # why, in the operator's words

    @property
    def when(self) -> str:
        return moment_text(self.moment)


def _job_events(events: Iterable[Object], reasons: set[str]) -> list[tuple[datetime, Object]]:
    found = []
    for event in events:
        involved = event.get("involvedObject") or {}
        moment = event_time(event)
        if involved.get("kind") == KIND and event.get("reason") in reasons and moment is not None:
            found.append((moment, event))
    return sorted(found, key=lambda pair: pair[0])


def node_losses(events: Iterable[Object]) -> list[Happening]:
    return [Happening(moment, NODE_LOSS, "node lost", str(event.get("message", "")))
            for moment, event in _job_events(events, {REASON_NODE_LOST})]


def resizes(events: Iterable[Object], job_status: Object) -> list[Happening]:
    """The Resized events, and status.lastResize unless one of them tells it already."""
    told = [Happening(moment, RESIZE, "resized", str(event.get("message", "")))
            for moment, event in _job_events(events, {REASON_RESIZED})]
    last = job_status.get(STATUS_LAST_RESIZE)
    moment = parse_time(last.get("time")) if isinstance(last, dict) else None
    if isinstance(last, dict) and moment is not None and not any(
            abs(happening.moment - moment) <= SAME_MOMENT for happening in told):
        told.append(Happening(moment, RESIZE, "resized", str(last.get("message", ""))
                              or f"Worker {last.get('from')} -> {last.get('to')}"))
    return sorted(told, key=lambda happening: happening.moment)


def deletion_asked(pod: Object) -> datetime | None:
    """When the pod's deletion was asked for: its deletionTimestamp is that plus its grace period."""
    meta = pod.get("metadata") or {}
    deadline = parse_time(meta.get("deletionTimestamp"))
    grace = meta.get("deletionGracePeriodSeconds")
    if deadline is None:
        return None
    return deadline - timedelta(seconds=grace if isinstance(grace, int) and not isinstance(grace, bool) else 0)


def _finished_at(conditions: Iterable[Object]) -> datetime | None:
    times = [parse_time(c.get("lastTransitionTime")) for c in conditions if isinstance(c, dict)
             and c.get("type") in (CONDITION_SUCCEEDED, CONDITION_FAILED) and c.get("status") == "True"]
    known = [moment for moment in times if moment is not None]
    return min(known) if known else None


def _reason_near(moment: datetime, events: list[tuple[datetime, Object]], conditions: Iterable[Object]) -> str:
    """The latest event that tells a restart (or a node loss, a resize) at or shortly before `moment`, else the
    Restarting condition's message when it became True then."""
    told = [event for when, event in events if moment - REASON_WINDOW <= when <= moment + SAME_MOMENT]
    if told:
        return str(told[-1].get("message", ""))
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == CONDITION_RESTARTING:
            when = parse_time(condition.get("lastTransitionTime"))
            if when is not None and moment - REASON_WINDOW <= when <= moment + SAME_MOMENT:
                return str(condition.get("message", ""))
    return ""


def restarts_together(pods: Iterable[Object], events: Iterable[Object], conditions: list[Object]) -> list[Happening]:
    """Groups of two or more pods whose deletions were asked for together while the job ran."""
    finished = _finished_at(conditions)
    asked = sorted((moment, str((pod.get("metadata") or {}).get("name", ""))) for pod in pods
                   for moment in [deletion_asked(pod)]
                   if moment is not None and (finished is None or moment < finished))
    groups: list[list[tuple[datetime, str]]] = []
    for moment, name in asked:
        if groups and (moment - groups[-1][0][0]).total_seconds() <= RESTART_TOGETHER_SECONDS:
            groups[-1].append((moment, name))
        else:
            groups.append([(moment, name)])
    reasons = _job_events(events, {REASON_RESTARTING, REASON_NODE_LOST, REASON_RESIZED})
    happenings = []
    for group in groups:
        names = sorted({name for _, name in group})
        if len(names) < 2:
            continue
        moment = group[0][0]
        why = _reason_near(moment, reasons, conditions)
        happenings.append(Happening(moment, RESTART_TOGETHER, f"{len(names)} restarted together",
                                    f"{', '.join(names)}" + (f": {why}" if why else "")))
    return happenings


def happenings(pods: Iterable[Object], events: Iterable[Object], job: Object) -> list[Happening]:
    """Every happening of the job, oldest first."""
    pods, events = list(pods), list(events)
    status = job.get("status") or {}
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    found = [*node_losses(events), *restarts_together(pods, events, conditions), *resizes(events, status)]
    return sorted(found, key=lambda happening: (happening.moment, happening.kind))
