"""TFJobStatus (plan/job_status.py): JSON in, the typed value, JSON out, byte for byte; and the fields as typed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from support.plan_builders import invalid as invalid_job
from support.plan_builders import (
    make_job,
    make_pod,
    plan_of,
    restarting_worker_1,
    running,
    services_for,
    suspended,
    waiting_for_one_pending_worker,
)
from tfop.controller.plan.job_status import Condition, LastResize, RecreatedExit, ReplicaStatus, TFJobStatus

JOB = make_job({"Worker": 2, "PS": 1})
T0 = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
GO_OPERATOR = {  # a status the Kubeflow training operator wrote: fields tfop does not write, its own key order
    "conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "created",
                    "lastUpdateTime": "2026-11-21T10:00:00Z", "lastTransitionTime": "2026-11-21T10:00:00Z"}],
    "replicaStatuses": {"Worker": {"active": 2, "labelSelector": {"matchLabels": {"a": "b"}}}},
    "startTime": "2026-11-21T10:00:00Z", "lastReconcileTime": "2026-11-21T10:00:00Z"}
ODD = {  # what an edit by hand may leave: a junk entry, values of the wrong type, a timestamp spelled otherwise
    "reason": "TFJobRunning", "workerReplicas": "two", "startTime": "2026-11-21T10:00:00.250+00:00",
    "completionTime": 7, "replicaStatuses": {"Worker": {"retiredPodUIDs": ["a", 7], "recreatedExits": [
        {"index": 0, "exitCode": 137, "reason": "Error"}, "junk"]}, "PS": "junk"},
    "lastResize": {"from": 1, "to": 2, "by": "me"}, "conditions": "none"}
FRESH = plan_of(make_job({"Worker": 1}), [], []).status
STORED: dict[str, dict[str, Any]] = {
    "running": running(JOB)["status"],
    "one worker pending": waiting_for_one_pending_worker(JOB)["status"],
    "restarting worker 1": restarting_worker_1(JOB)["status"],
    "suspended": suspended(JOB)["status"],
    "invalid": invalid_job(make_job({"Worker": "three"}))["status"],
    "the Go operator's": GO_OPERATOR,
    "edited by hand": ODD,
    "empty": {},
    "a fresh job's first, as the planner writes it": FRESH.to_json() if FRESH is not None else {},
}


@pytest.mark.parametrize("stored", STORED.values(), ids=STORED.keys())
def test_a_status_read_and_written_back_is_the_same_json(stored: dict[str, Any]) -> None:
    assert json.dumps(TFJobStatus.from_json(stored).to_json()) == json.dumps(stored)


def test_the_fields_are_typed() -> None:
    status = TFJobStatus.from_json(restarting_worker_1(JOB)["status"])
    assert (status.start_time, status.last_reconcile_time, status.child_naming, status.replica_backend,
            status.worker_replicas, status.replica_summary, status.state) == (
        T0, T0, "RuntimeId", "pods", 2, "2/3", "Restarting")
    assert status.replica("Worker") == ReplicaStatus(active=1, succeeded=0, failed=0, restarts=1, retired_restarts=1,
                                                     retired_pod_uids=("pod-mnist-worker-jje2-1",))
    assert status.replica("Evaluator") is None


def test_values_not_of_their_type_read_as_left_out_and_are_kept() -> None:
    status = TFJobStatus.from_json(ODD)
    assert (status.worker_replicas, status.completion_time, status.conditions, status.reason) == (
        None, None, None, "TFJobRunning")
    assert status.start_time == datetime(2026, 11, 21, 10, 0, 0, 250000, tzinfo=UTC)
    assert status.replica("Worker") == ReplicaStatus(
        retired_pod_uids=("a",), recreated_exits=(RecreatedExit(0, 137, "Error"),))
    assert status.replica("PS") == ReplicaStatus()
    assert status.last_resize == LastResize(from_=1, to=2, extra={"by": "me"})
    assert dict(status.extra) == {"workerReplicas": "two", "completionTime": 7, "conditions": "none"}


def test_a_changed_field_is_written_in_its_place_and_new_ones_after() -> None:
    status = TFJobStatus.from_json(GO_OPERATOR)
    changed = TFJobStatus(**{**_fields(status), "start_time": datetime(2026, 11, 21, 10, 5, tzinfo=UTC),
                             "state": "Running"})
    assert json.dumps(changed.to_json()) == json.dumps({
        **GO_OPERATOR, "startTime": "2026-11-21T10:05:00Z", "state": "Running"})


def test_a_typed_value_replaces_what_the_stored_status_held_under_its_key() -> None:
    status = TFJobStatus.from_json(ODD)
    changed = TFJobStatus(**{**_fields(status), "worker_replicas": 3})
    assert changed.to_json()["workerReplicas"] == 3
    assert list(changed.to_json()) == list(ODD)


def test_the_planner_reads_the_status_it_wrote_as_written() -> None:
    first = plan_of(JOB, [], [])
    assert first.status is not None
    again = plan_of({**JOB, "status": first.status.to_json()},
                    [make_pod("Worker", 0, "Pending"), make_pod("Worker", 1, "Pending"), make_pod("PS", 0, "Pending")],
                    services_for({"Worker": 2, "PS": 1}))
    assert again.status is not None and again.status.start_time == first.status.start_time


def _fields(status: TFJobStatus) -> dict[str, Any]:
    return {name: getattr(status, name) for name in TFJobStatus.__dataclass_fields__}


def test_the_conditions_are_typed_in_the_order_written() -> None:
    status = TFJobStatus.from_json(GO_OPERATOR)
    assert status.conditions == (Condition(type="Created", status="True", reason="TFJobCreated", message="created",
                                           last_update_time=T0, last_transition_time=T0),)
    assert list(status.conditions[0].to_json()) == ["type", "status", "reason", "message", "lastUpdateTime",
                                                    "lastTransitionTime"]
    assert TFJobStatus.from_json({"conditions": [{"status": "True"}, "junk", {"type": "Running"}]}).conditions == (
        Condition(type="Running"),)
