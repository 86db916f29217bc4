"""How long a decided success waits for replicas still running: rows of the replicas' states and end times, and
the seconds written out."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from support.plan_builders import NOW, make_pod
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.policies.success import settle_remaining
from tfop.controller.plan.replicas.pod_slots import Slot, SlotState
from tfop.controller.plan.slots import ReplicaSlot


def chief_ended(at: str | None) -> Slot:
    pod: dict[str, Any] = make_pod("Chief", 0, "Succeeded", exit_code=0)
    if at is not None:
        pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = at
    return Slot(ReplicaSlot("Chief", 0), PodView.of(pod), SlotState.SUCCEEDED)


def worker(state: SlotState, ended_at: str | None = None) -> Slot:
    phase = {SlotState.RUNNING: "Running", SlotState.PENDING: "Pending"}.get(state, "Succeeded")
    pod: dict[str, Any] = make_pod("Worker", 0, phase, exit_code=0 if phase == "Succeeded" else None)
    if ended_at is not None:
        pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = ended_at
    return Slot(ReplicaSlot("Worker", 0), PodView.of(pod), state)


ROWS = [
    # name, slots, seconds after NOW (10:00:00), expected wait
    ("a worker still runs, the chief ended just now: the whole window", [chief_ended("2026-11-21T10:00:00Z"),
                                                                        worker(SlotState.RUNNING)], 0.0, 2.0),
    ("1.5 s later: half a second left", [chief_ended("2026-11-21T10:00:00Z"), worker(SlotState.RUNNING)], 1.5, 0.5),
    ("2 s later: finish now", [chief_ended("2026-11-21T10:00:00Z"), worker(SlotState.RUNNING)], 2.0, 0.0),
    ("nothing runs: finish now", [chief_ended("2026-11-21T10:00:00Z"),
                                  worker(SlotState.SUCCEEDED, "2026-11-21T10:00:00Z")], 0.0, 0.0),
    ("a pending replica does not end by itself: finish now", [chief_ended("2026-11-21T10:00:00Z"),
                                                              worker(SlotState.PENDING)], 0.0, 0.0),
    ("no end time known: finish now", [chief_ended(None), worker(SlotState.RUNNING)], 0.0, 0.0),
    ("an end stamped in our future (a node clock ahead): finish now",
     [chief_ended("2026-11-21T10:00:05Z"), worker(SlotState.RUNNING)], 0.0, 0.0),
    ("the window runs from the latest end", [chief_ended("2026-11-21T09:59:00Z"),
                                             worker(SlotState.SUCCEEDED, "2026-11-21T10:00:01Z"),
                                             worker(SlotState.RUNNING)], 2.0, 1.0),
]


@pytest.mark.parametrize(("slots", "after", "wait"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_how_long_success_waits(slots: list[Slot], after: float, wait: float) -> None:
    assert settle_remaining(slots, NOW + timedelta(seconds=after)) == wait


def evaluator_running() -> Slot:
    return Slot(ReplicaSlot("Evaluator", 0), PodView.of(make_pod("Evaluator", 0, "Running")), SlotState.RUNNING)


SPARED = [
    # name, slots, spared, expected wait at NOW: the evaluators a success waits for have a wait of their own
    ("only a spared evaluator runs: finish now (its own wait starts)",
     [chief_ended("2026-11-21T10:00:00Z"), evaluator_running()], frozenset({ReplicaSlot("Evaluator", 0)}), 0.0),
    ("the evaluator is not spared (no wait for it): the whole window",
     [chief_ended("2026-11-21T10:00:00Z"), evaluator_running()], frozenset(), 2.0),
    ("a worker runs beside a spared evaluator: the whole window, for the worker",
     [chief_ended("2026-11-21T10:00:00Z"), evaluator_running(), worker(SlotState.RUNNING)],
     frozenset({ReplicaSlot("Evaluator", 0)}), 2.0),
]


@pytest.mark.parametrize(("slots", "spared", "wait"), [row[1:] for row in SPARED], ids=[row[0] for row in SPARED])
def test_spared_replicas_are_not_waited_for(slots: list[Slot], spared: frozenset[ReplicaSlot], wait: float) -> None:
    assert settle_remaining(slots, NOW, spared=spared) == wait
