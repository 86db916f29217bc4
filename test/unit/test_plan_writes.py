"""Table tests of the writes a plan asks for: which status writes may wait (plan.status_waits: for the creates the plan
sends, briefly when only counts and messages moved, never for a state change, a delete or a restart), and which of
its events are only logged (quiet: the Created and Running transitions), and which the Succeeded event tells (the
exits of 0 it ends with)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from support.plan_builders import (
    T0,
    cond,
    make_job,
    make_pod,
    make_service,
    plan_of,
    running,
    running_pods,
    services_for,
    waiting_for_one_pending_worker,
)
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import CreateRefusal, StatusWait

CHIEF_JOB = {"Chief": 1, "Worker": 2}


@dataclass
class Row:
    job: dict[str, Any]
    pods: list[dict[str, Any]]
    services: list[dict[str, Any]] | None = None  # None: every desired service exists
    refusals: tuple[CreateRefusal, ...] = ()
    waits: StatusWait = StatusWait.NO
    writes: bool = True  # the plan has a status to write at all
    events: list[str] = field(default_factory=list)  # the reasons it announces once written; quiet: log only


def unschedulable(replica_type: str, index: int) -> dict[str, Any]:
    pod = make_pod(replica_type, index, "Pending")
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                    "message": "0/3 nodes are available: 3 Insufficient cpu."}]
    return pod


ROWS = {
    "a fresh job's status waits for the creates it sends": Row(
        make_job(), [], [], waits=StatusWait.FOR_CREATES, events=["TFJobCreated (quiet)"]),
    "a running job missing a pod waits for its create": Row(
        running(make_job()), [make_pod("Worker", 0), make_pod("PS", 0)], waits=StatusWait.FOR_CREATES),
    "its children seen, none runs yet: a job's first status waits briefly for them to": Row(
        make_job(), [make_pod("Worker", 0, "Pending"), make_pod("Worker", 1, "Pending"), make_pod("PS", 0, "Pending")],
        waits=StatusWait.BRIEFLY, events=["TFJobCreated (quiet)"]),
    "its children seen and running: a job's first status says Running at once": Row(
        make_job(), running_pods(), waits=StatusWait.NO, events=["TFJobCreated (quiet)", "TFJobRunning (quiet)"]),
    "creates the apiserver refused are told at once": Row(
        make_job(), [], [], refusals=(CreateRefusal("Pod", ReplicaSlot("Worker", 0), "mnist-worker-0",
                                                    "exceeded quota", permanent=False),),
        waits=StatusWait.NO, events=["TFJobCreated (quiet)"]),
    "one more pod runs, others pending: only counts move": Row(
        {**make_job(), "status": {**waiting_for_one_pending_worker(make_job())["status"],
                                  "replicaSummary": "1/3"}},
        [make_pod("Worker", 0, "Pending"), make_pod("Worker", 1), make_pod("PS", 0, "Pending")],
        waits=StatusWait.BRIEFLY),
    "a pending pod turns unschedulable: its trouble is told briefly later": Row(
        waiting_for_one_pending_worker(make_job()), [unschedulable("Worker", 0), make_pod("Worker", 1),
                                                      make_pod("PS", 0)],
        waits=StatusWait.BRIEFLY, events=["Unschedulable"]),
    "the last pending pod runs: Running is written at once": Row(
        waiting_for_one_pending_worker(make_job()), running_pods(), waits=StatusWait.NO,
        events=["TFJobRunning (quiet)"]),
    "a worker ends while the chief runs: its end is recorded at once, its pod may go": Row(
        running(make_job(CHIEF_JOB)),
        [make_pod("Chief", 0), make_pod("Worker", 0, "Succeeded", exit_code=0), make_pod("Worker", 1)],
        services_for(CHIEF_JOB), waits=StatusWait.NO, events=["ExitedWithCode"]),
    "the chief ends: Succeeded is written at once": Row(
        running(make_job(CHIEF_JOB)),
        [make_pod("Chief", 0, "Succeeded", exit_code=0), make_pod("Worker", 0, "Succeeded", exit_code=0),
         make_pod("Worker", 1, "Succeeded", exit_code=0)],
        services_for(CHIEF_JOB), waits=StatusWait.NO, events=["TFJobSucceeded"]),
    "a finished job's clean-up ends (phase CleanUp -> Done): briefly": Row(
        {**running(make_job(CHIEF_JOB)), "status": {
            **running(make_job(CHIEF_JOB))["status"], "phase": "CleanUp", "state": "Succeeded",
            "reason": "TFJobSucceeded", "completionTime": T0, "replicaSummary": "1/3 succeeded",
            "replicaStatuses": {"Chief": {"active": 0, "succeeded": 1, "failed": 0, "restarts": 0},
                                "Worker": {"active": 0, "succeeded": 0, "failed": 0, "restarts": 0}},
            "conditions": [cond("Created", "True", "TFJobCreated", "TFJob ns/mnist is created."),
                           cond("Running", "False", "TFJobSucceeded", "TFJob ns/mnist successfully completed."),
                           cond("Succeeded", "True", "TFJobSucceeded", "TFJob ns/mnist successfully completed.")]}},
        [make_pod("Chief", 0, "Succeeded", exit_code=0)], [make_service("Chief", 0)], waits=StatusWait.BRIEFLY),
    "a pod recreated for exit 137 never waits: the plan deletes it": Row(
        running(make_job()), [make_pod("Worker", 0), make_pod("Worker", 1, "Failed", exit_code=137),
                              make_pod("PS", 0)],
        waits=StatusWait.NO, events=["ExitedWithCode", "TFJobRestarting"]),
    "a restart in place is counted at once": Row(
        running(make_job({"Worker": 1}, policy="OnFailure")), [make_pod("Worker", 0, restarts=1)],
        services_for({"Worker": 1}), waits=StatusWait.NO, events=["TFJobRestarting"]),
    "nothing changed: nothing to write, nothing waits": Row(
        running(make_job()), running_pods(), waits=StatusWait.NO, writes=False),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_which_status_writes_may_wait(row: Row) -> None:
    result = plan_of(row.job, row.pods, services_for() if row.services is None else row.services,
                     refusals=row.refusals)
    assert (result.status is not None) == row.writes
    assert result.status_waits is row.waits
    assert [event.reason + (" (quiet)" if event.quiet else "") for event in result.events] == row.events


def test_replicas_of_every_type_that_ended_with_one_code_are_told_in_one_event() -> None:
    result = plan_of(running(make_job(CHIEF_JOB)),
                     [make_pod("Chief", 0), make_pod("Worker", 0, "Succeeded", exit_code=0),
                      make_pod("Worker", 1, "Succeeded", exit_code=0)], services_for(CHIEF_JOB))
    assert [event.message for event in result.events if event.reason == "ExitedWithCode"] == [
        "TFJob ns/mnist: Worker 0-1 exited with code 0."]


def test_the_success_tells_the_exits_of_0_it_ends_with_and_the_others_keep_their_event() -> None:
    """One write for the success and the exits that made it: the user reads both in one line."""
    result = plan_of(running(make_job(CHIEF_JOB)),
                     [make_pod("Chief", 0, "Succeeded", exit_code=0), make_pod("Worker", 0, "Succeeded", exit_code=0),
                      make_pod("Worker", 1, "Failed", exit_code=1)], services_for(CHIEF_JOB))
    assert [(event.reason, event.message) for event in result.events] == [
        ("ExitedWithCode", "TFJob ns/mnist: Worker 1 exited with code 1."),
        ("TFJobSucceeded", "TFJob ns/mnist successfully completed: Chief 0, Worker 0 exited with code 0.")]


def test_a_fresh_jobs_pods_are_created_before_its_services() -> None:
    result = plan_of(make_job(), [], [])
    assert [(creation.kind, creation.slot) for creation in result.create] == [
        ("Pod", ReplicaSlot("Worker", 0)), ("Pod", ReplicaSlot("Worker", 1)), ("Pod", ReplicaSlot("PS", 0)),
        ("Service", ReplicaSlot("Worker", 0)), ("Service", ReplicaSlot("Worker", 1)), ("Service", ReplicaSlot("PS", 0))]
