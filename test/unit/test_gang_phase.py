"""What a PodGroup's phase says on the job, and when a gang counts as unplaceable: rows with the words written out
(gang_phase), then the planner's rows for the GangUnschedulable event and the Running message."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from support.plan_builders import NOW, make_job, make_pod, running, running_pods, services_for
from tfop.api.timestamps import format_time
from tfop.controller.plan.children.desired import replica_slot_of
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.gang_schedulers import GANG_SCHEDULERS, GangSchedulerName
from tfop.controller.plan.observed.own_child import OwnedView
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.planner import plan
from tfop.controller.plan.policies.gang_placement import GANG_PLACEMENT_GRACE, gang_phase
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import POD, POD_GROUP, SERVICE, Plan, PlanContext

NO_ROOM = "0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity."
SIBLINGS = ("pre-filter pod mnist-worker-0 cannot find enough sibling pods, current pods number: 1, minMember of "
            "group: 3")


def pod(replica_type: str, index: int, *, age: float, unschedulable: str | None = None,
        phase: str = "Pending") -> dict[str, Any]:
    """A pod of the default job, created `age` seconds before NOW; the scheduler's words if it cannot place it."""
    made = make_pod(replica_type, index, phase)
    made["metadata"]["creationTimestamp"] = format_time(NOW - timedelta(seconds=age))
    if unschedulable is not None:
        made["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                         "message": unschedulable}]
    return made


def three(*, age: float, unschedulable: str | None = NO_ROOM) -> list[dict[str, Any]]:
    """The default job's three pods (Worker 0, 1 and PS 0), all unschedulable by default."""
    return [pod("Worker", 0, age=age, unschedulable=unschedulable), pod("Worker", 1, age=age,
            unschedulable=unschedulable), pod("PS", 0, age=age, unschedulable=unschedulable)]


def group(phase: str | None, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if conditions is not None:
        status["conditions"] = conditions
    return {"metadata": {"name": "mnist", "namespace": "ns", "uid": "pg-1"}, "spec": {"minMember": 3},
            "status": status}


@dataclass
class Row:
    group: dict[str, Any]
    pods: list[dict[str, Any]] = field(default_factory=list)
    gang: GangSchedulerName = "scheduler-plugins"
    min_member: int = 3
    note: str = ""  # the Running message's words for the group, exactly
    event: str | None = None  # the GangUnschedulable event's message, exactly (None: the gang is not unplaceable)
    recheck: float | None = None


PENDING_NOTE = "PodGroup ns/mnist is Pending (fewer than minMember of its pods exist)"
SCHEDULING_NOTE = "PodGroup ns/mnist is Scheduling (its pods wait to be placed together)"
OLD = GANG_PLACEMENT_GRACE + 5

ROWS = {
    "no phase yet: the controller has not run": Row(
        group(None), note="PodGroup ns/mnist has no phase yet (its scheduler's controller has not written one)"),
    "Pending: not every pod exists": Row(group("Pending"), pods=three(age=OLD)[:2], note=PENDING_NOTE),
    "Scheduling, pods unschedulable within the grace: not yet, and look again when it ends": Row(
        group("Scheduling"), pods=three(age=10), note=SCHEDULING_NOTE, recheck=GANG_PLACEMENT_GRACE - 10),
    "the grace counts from the newest pod": Row(
        group("Scheduling"), pods=[*three(age=OLD)[:2], pod("PS", 0, age=1, unschedulable=NO_ROOM)],
        note=SCHEDULING_NOTE, recheck=GANG_PLACEMENT_GRACE - 1),
    "Scheduling, pods still unschedulable after the grace: unplaceable": Row(
        group("Scheduling"), pods=three(age=OLD),
        note=f"{SCHEDULING_NOTE} [GangUnschedulable]: the gang cannot be placed: 3 of its pods are unschedulable",
        event="TFJob ns/mnist: the scheduler-plugins scheduler cannot place its gang (PodGroup ns/mnist is "
              "Scheduling (its pods wait to be placed together)): PS 0, Worker 0-1 [Unschedulable]: 0/5 nodes are "
              "available: 1 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity."),
    "one pod's old words about missing siblings, the others waiting at Permit: not unplaceable within the grace": Row(
        group("Scheduling"), pods=[pod("Worker", 0, age=12, unschedulable=SIBLINGS), pod("Worker", 1, age=11),
                                   pod("PS", 0, age=11)], note=SCHEDULING_NOTE, recheck=GANG_PLACEMENT_GRACE - 11),
    "no pod unschedulable after the grace: not unplaceable, nothing to look at again": Row(
        group("Scheduling"), pods=three(age=OLD, unschedulable=None), note=SCHEDULING_NOTE),
    "fewer pods than minMember exist: the plugin waits for them, not the gang's fault": Row(
        group("Pending"), pods=three(age=OLD)[:2], note=PENDING_NOTE),
    "minAvailable 2 of 3: two pods are enough to judge": Row(
        group("Scheduling"), pods=three(age=OLD)[:2], min_member=2,
        note=f"{SCHEDULING_NOTE} [GangUnschedulable]: the gang cannot be placed: 2 of its pods are unschedulable",
        event="TFJob ns/mnist: the scheduler-plugins scheduler cannot place its gang (PodGroup ns/mnist is "
              "Scheduling (its pods wait to be placed together)): Worker 0-1 [Unschedulable]: 0/5 nodes are "
              "available: 1 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity."),
    "Running: placed, whatever one pod says": Row(
        group("Running"), pods=[*three(age=OLD, unschedulable=None)[:2], pod("PS", 0, age=OLD, unschedulable=NO_ROOM)],
        note="PodGroup ns/mnist is Running (minMember of its pods run)"),
    "Failed stays Failed with scheduler-plugins": Row(
        group("Failed"), pods=three(age=OLD),
        note="PodGroup ns/mnist is Failed (one of its pods failed; the scheduler-plugins controller keeps this "
             "phase)"),
    "Finished": Row(group("Finished"), note="PodGroup ns/mnist is Finished (minMember of its pods succeeded)"),
    "Volcano: Pending with the scheduler's Unschedulable condition: unplaceable before any pod exists": Row(
        group("Pending", [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                           "message": "3/3 tasks in gang unschedulable: pod group is not ready, 3 minAvailable."}]),
        gang="volcano",
        note="PodGroup ns/mnist is Pending (waiting for the scheduler to admit it) [GangUnschedulable]: the gang "
             "cannot be placed: 3/3 tasks in gang unschedulable: pod group is not ready, 3 minAvailable",
        event="TFJob ns/mnist: the volcano scheduler cannot place its gang (PodGroup ns/mnist is Pending (waiting "
              "for the scheduler to admit it)): 3/3 tasks in gang unschedulable: pod group is not ready, 3 "
              "minAvailable."),
    "Volcano: a condition that is no longer True is only quoted": Row(
        group("Inqueue", [{"type": "Unschedulable", "status": "False", "message": "was short of GPUs"}]),
        gang="volcano", note="PodGroup ns/mnist is Inqueue (admitted; its pods are placed once all fit; was short of "
                             "GPUs)"),
    "Volcano: Unknown, part placed, the rest unschedulable after the grace": Row(
        group("Unknown"), gang="volcano", pods=[*three(age=OLD)[:1], *three(age=OLD, unschedulable=None)[1:]],
        note="PodGroup ns/mnist is Unknown (part of the gang is placed, the rest cannot be) [GangUnschedulable]: "
             "the gang cannot be placed: 1 of its pods are unschedulable",
        event="TFJob ns/mnist: the volcano scheduler cannot place its gang (PodGroup ns/mnist is Unknown (part of "
              "the gang is placed, the rest cannot be)): Worker 0 [Unschedulable]: 0/5 nodes are available: 1 "
              "Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity."),
    "Volcano: Completed": Row(group("Completed"), gang="volcano", note="PodGroup ns/mnist is Completed (its pods are "
                                                                       "done)"),
    "a phase no table knows is shown as it is": Row(
        group("Shrinking"), note="PodGroup ns/mnist is Shrinking (a phase tfop does not know)"),
}


def slotted(pods: list[dict[str, Any]]) -> list[tuple[ReplicaSlot, PodView]]:
    slots = [(replica_slot_of(made), made) for made in map(PodView.of, pods)]
    return [(slot, made) for slot, made in slots if slot is not None]


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_gang_phase_rows(row: Row) -> None:
    gang = GANG_SCHEDULERS[row.gang]
    result = gang_phase(OwnedView.of(row.group), gang, row.min_member, slotted(row.pods), NOW)
    assert result.note() == row.note
    assert (result.event_message("TFJob ns/mnist", gang) if result.cannot_be_placed else None) == row.event
    assert result.recheck_after == row.recheck


# ---------------------------------------------------------------- the planner: event once, message, requeue

@dataclass
class PlanRow:
    job: dict[str, Any]
    groups: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    message: str  # the Running condition's message, exactly
    events: list[tuple[str, str]] = field(default_factory=list)  # (type, reason) of every event, in order
    requeue: float | None = None


WAITING = "TFJob ns/mnist is waiting for 3 of 3 replicas to run: 3 Pending; "
TROUBLES = ("PS 0, Worker 0-1 [Unschedulable]: 0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 4 node(s) "
            "didn't match Pod's node affinity.")
UNPLACEABLE = (f"{WAITING}{SCHEDULING_NOTE} [GangUnschedulable]: the gang cannot be placed: 3 of its pods are "
               f"unschedulable. {TROUBLES}")


def with_running_message(job: dict[str, Any], message: str) -> dict[str, Any]:
    conditions = [{"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "TFJob ns/mnist is "
                   "created."}, {"type": "Running", "status": "False", "reason": "TFJobPending", "message": message}]
    return {**job, "status": {"conditions": conditions, "startTime": format_time(NOW)}}


PLAN_ROWS = {
    "the gang cannot be placed: one Warning, with the pods' own": PlanRow(
        with_running_message(make_job(), f"{WAITING}{SCHEDULING_NOTE}. {TROUBLES}"), [group("Scheduling")],
        three(age=OLD), UNPLACEABLE, events=[("Warning", "GangUnschedulable")]),
    "planned again on the same state: no second event": PlanRow(
        with_running_message(make_job(), UNPLACEABLE), [group("Scheduling")], three(age=OLD), UNPLACEABLE),
    "within the grace: no event yet, and the job is looked at again when the grace ends": PlanRow(
        with_running_message(make_job(), f"{WAITING}{SCHEDULING_NOTE}. {TROUBLES}"), [group("Scheduling")],
        three(age=20), f"{WAITING}{SCHEDULING_NOTE}. {TROUBLES}", requeue=GANG_PLACEMENT_GRACE - 20),
    "a running job's message names the group's phase": PlanRow(
        running(make_job()), [group("Running")], running_pods(),
        "TFJob ns/mnist is running. PodGroup ns/mnist is Running (minMember of its pods run)."),
}


def plan_rows(row: PlanRow) -> Plan:
    children = {POD: row.pods, SERVICE: services_for(), POD_GROUP: row.groups}
    return plan(PlanContext(row.job, children, NOW, ControllerConfig(gang_scheduler="scheduler-plugins")))


@pytest.mark.parametrize("row", PLAN_ROWS.values(), ids=PLAN_ROWS.keys())
def test_planner_rows(row: PlanRow) -> None:
    result = plan_rows(row)
    assert result.status is not None
    running_condition = next(c for c in result.status.to_json()["conditions"] if c["type"] == "Running")
    assert running_condition["message"] == row.message
    assert [(event.type, event.reason) for event in result.events] == row.events
    assert result.requeue_after == row.requeue
