"""A job's summary above its replica table (replicas by phase, last failures, progress and its metric charts), and
which pod events belong to a job by the pod's name: tables whose expected rows are written out."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tfop.ui.cache import pod_event_job, pod_event_of_job
from tfop.ui.views.job_page import RecreatedExit
from tfop.ui.views.summary import (
    CHART_HEIGHT,
    Chart,
    Failure,
    PhaseCounts,
    Progress,
    charts,
    last_failures,
    metric_values,
    phase_counts,
    progress,
)


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2026-03-01T{clock}+00:00")


def pod(name: str, replica_type: str, index: str, phase: str = "Running", deleting: bool = False,
        **states: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"training.kubeflow.org/replica-type": replica_type,
                                                      "training.kubeflow.org/replica-index": index}}
    if deleting:
        meta["deletionTimestamp"] = "2026-03-01T12:00:00Z"
    return {"metadata": meta, "status": {"phase": phase, "containerStatuses": [{"name": "tensorflow", **states}]}}


def ended(code: int, clock: str, reason: str = "Error") -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": reason, "finishedAt": f"2026-03-01T{clock}Z"}}


def test_replicas_by_phase_in_the_order_of_a_pods_life() -> None:
    pods = [pod("w2", "Worker", "2", "Failed"), pod("w0", "Worker", "0"), pod("w1", "Worker", "1", "Pending"),
            pod("w3", "Worker", "3", deleting=True), pod("w4", "Worker", "4"), pod("c", "Chief", "0", "Succeeded")]
    assert phase_counts(pods) == (
        PhaseCounts("Chief", (("Succeeded", 1),)),
        PhaseCounts("Worker", (("Pending", 1), ("Running", 2), ("Terminating", 1), ("Failed", 1))),
    )


def test_the_last_failures_newest_first_each_told_once() -> None:
    pods = [pod("j-worker-0", "worker", "0", state=ended(1, "12:05:00")),
            pod("j-worker-1", "worker", "1", lastState=ended(137, "12:03:00"), state={"running": {}}),
            pod("j-worker-2", "worker", "2", state=ended(0, "12:06:00", "Completed"))]
    recreated = {("worker", "1"): RecreatedExit("worker", "1", 137, "Error", at("12:03:00")),  # the same as its pod's
                 ("ps", "0"): RecreatedExit("ps", "0", 143, "Error", at("12:04:00")),
                 ("worker", "3"): RecreatedExit("worker", "3", 0, "Completed", at("12:07:00"))}
    assert last_failures(pods, recreated) == (
        Failure("worker-0", "j-worker-0", 1, "Error", "Permanent", at("12:05:00")),
        Failure("ps-0", "", 143, "Error", "Retryable", at("12:04:00")),
        Failure("worker-1", "j-worker-1", 137, "Error", "Retryable", at("12:03:00")),
    )
    many = [pod(f"j-worker-{i}", "worker", str(i), state=ended(1, f"12:0{i}:00")) for i in range(8)]
    assert [f.replica for f in last_failures(many, {})] == ["worker-7", "worker-6", "worker-5", "worker-4",
                                                            "worker-3"]


TRAINER_STATUS = {"progressPercentage": 45, "estimatedCompletionTime": "2026-03-01T12:11:00Z",
                  "currentEpoch": 4, "totalEpochs": 10, "currentStep": 400, "totalSteps": 1000,
                  "metrics": [{"name": "loss", "value": "0.2347"}, {"name": "accuracy", "value": "0.9312"},
                              {"name": "currentEpoch", "value": "4"}, {"name": "note", "value": "warm"}],
                  "lastUpdatedTime": "2026-03-01T12:00:40Z", "reportedBy": "j-chief-0"}


@pytest.mark.parametrize(("status", "expected"), [
    ({}, None),
    ({"trainerStatus": TRAINER_STATUS},
     Progress(45, at("12:11:00"), "4 of 10", "400 of 1000", at("12:00:40"), "j-chief-0",
              (("loss", "0.2347"), ("accuracy", "0.9312"), ("note", "warm")))),
    ({"trainerStatus": {"progressPercentage": 140, "currentStep": 7}},
     Progress(100, None, "", "7", None, "", ())),
    ({"trainerStatus": {"progressPercentage": "45", "currentEpoch": True}}, Progress(None, None, "", "", None, "", ())),
])
def test_progress_from_the_trainer_status(status: dict[str, Any], expected: Progress | None) -> None:
    assert progress({"status": status}) == expected


def test_numeric_metrics_are_kept_and_charted_on_their_own_scale() -> None:
    assert metric_values({"status": {"trainerStatus": TRAINER_STATUS}}) == (
        at("12:00:40"), {"loss": 0.2347, "accuracy": 0.9312})
    assert metric_values({"status": {"trainerStatus": {"metrics": []}}}) is None
    history = [(at("12:00:00"), {"loss": 1.0, "accuracy": 0.5}), (at("12:00:10"), {"loss": 0.5}),
               (at("12:00:20"), {"loss": 0.25, "accuracy": 0.5, "lr": 0.1})]
    assert charts(history, (("loss", "0.2500"),)) == (
        # loss first; 220 px wide over 20 s, 44 px tall over 0.25 to 1.
        Chart("loss", "0.2500", 0.25, 1.0, f"0.0,0.0 110.0,{CHART_HEIGHT * 2 / 3:.1f} 220.0,{CHART_HEIGHT:.1f}", 3),
        # A flat line is drawn at the bottom; its last value as it was measured.
        Chart("accuracy", "0.5", 0.5, 0.5, f"0.0,{CHART_HEIGHT:.1f} 220.0,{CHART_HEIGHT:.1f}", 2),
    )  # lr: one value, no line


@pytest.mark.parametrize(("name", "job", "of_this_job"), [
    ("mnist-worker-0", "ns/mnist", True),
    ("mnist-worker-x7k2-10", "ns/mnist", True),
    ("mnist-worker-zzzz-1", "ns/mnist", False),  # an earlier job of the same name
    ("a-b-ps-3", "ns/a-b", True),
    ("mnist-launcher-0", None, False),
])
def test_a_pods_events_belong_to_its_job_by_the_pods_name(name: str, job: str | None, of_this_job: bool) -> None:
    event = {"involvedObject": {"kind": "Pod", "namespace": "ns", "name": name}}
    assert pod_event_job(event) == ([job] if job else [])
    assert pod_event_of_job(event, "x7k2") is of_this_job
