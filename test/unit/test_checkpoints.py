"""When the job last saved a checkpoint (plan/policies/checkpoints.py): the report's metric read as a time, recorded in
status.lastCheckpointTime (forward only, never past tfop's receipt), and written on the live pods as
volcano.sh/last-checkpoint-time: only where it differs, at most once per 30 s of checkpoint time per pod, the last
save of a burst once it is 30 s old. Rows written out."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from support.plan_builders import NOW, make_job, make_pod, name_of, running, services_for
from tfop.api.timestamps import parse_moment
from tfop.controller.cache_transforms import slim_pod
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job_status import Metric, TrainerStatus
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import POD, SERVICE, Plan, PlanContext, PodAnnotation, StatusWait

KEY = "volcano.sh/last-checkpoint-time"

MOMENTS: dict[str, tuple[str, datetime | None]] = {
    "RFC 3339 with Z": ("2026-11-21T09:58:20Z", datetime(2026, 11, 21, 9, 58, 20, tzinfo=UTC)),
    "an offset, and a fraction dropped": ("2026-11-21T10:58:20.75+01:00",
                                          datetime(2026, 11, 21, 9, 58, 20, tzinfo=UTC)),
    "what the Kubeflow SDK makes of time.time()": ("1795255100.123456", datetime(2026, 11, 21, 9, 58, 20, tzinfo=UTC)),
    "whole seconds": ("1795255100", datetime(2026, 11, 21, 9, 58, 20, tzinfo=UTC)),
    "not a time": ("yesterday", None),
    "negative": ("-5", None),
    "past the year 9999": ("1e12", None),
    "infinite": ("inf", None),
}


@pytest.mark.parametrize(("value", "expected"), MOMENTS.values(), ids=MOMENTS.keys())
def test_a_checkpoint_time_is_read_as_rfc3339_or_seconds_since_1970(value: str, expected: datetime | None) -> None:
    assert parse_moment(value) == expected


def report(checkpoint: str | None, received: str = "2026-11-21T10:00:00Z") -> TrainerStatus:
    metrics = (Metric("loss", "0.5"),) + (() if checkpoint is None else (Metric("lastCheckpointTime", checkpoint),))
    return TrainerStatus(progress_percentage=50, metrics=metrics,
                         last_updated_time=datetime.fromisoformat(received), reported_by="mnist-worker-0")


RECORDS: dict[str, tuple[str | None, TrainerStatus | None, str | None]] = {
    "no report: nothing": (None, None, None),
    "no report: the stored time stays": ("2026-11-21T09:50:00Z", None, "2026-11-21T09:50:00Z"),
    "a report without the metric: nothing": (None, report(None), None),
    "a report without the metric keeps the stored time": ("2026-11-21T09:50:00Z", report(None), "2026-11-21T09:50:00Z"),
    "a first checkpoint": (None, report("2026-11-21T09:58:20Z"), "2026-11-21T09:58:20Z"),
    "seconds since 1970": (None, report("1795255100.5"), "2026-11-21T09:58:20Z"),
    "a later one replaces the stored": ("2026-11-21T09:50:00Z", report("2026-11-21T09:58:20Z"), "2026-11-21T09:58:20Z"),
    "an earlier one does not": ("2026-11-21T09:59:00Z", report("2026-11-21T09:58:20Z"), "2026-11-21T09:59:00Z"),
    "a pod's clock ahead: taken as the report's receipt": (
        None, report("2026-11-21T10:05:00Z", received="2026-11-21T10:00:00Z"), "2026-11-21T10:00:00Z"),
}


@pytest.mark.parametrize(("stored", "given", "expected"), RECORDS.values(), ids=RECORDS.keys())
def test_the_reported_checkpoint_is_recorded_forward_only(stored: str | None, given: TrainerStatus | None,
                                                          expected: str | None) -> None:
    job = running(make_job({"Worker": 1}))
    if stored is not None:
        job["status"]["lastCheckpointTime"] = stored
    result = plan(PlanContext(job, {POD: [make_pod("Worker", 0)], SERVICE: services_for({"Worker": 1})}, NOW,
                              ControllerConfig(), progress=given))
    status = result.status.to_json() if result.status is not None else job["status"]
    assert status.get("lastCheckpointTime") == expected


def test_a_new_checkpoint_alone_waits_briefly_like_progress() -> None:
    result = plan(PlanContext(running(make_job({"Worker": 1})), {POD: [make_pod("Worker", 0)],
                                                                 SERVICE: services_for({"Worker": 1})},
                              NOW, ControllerConfig(), progress=report("2026-11-21T09:58:20Z")))
    assert result.status is not None and result.status_waits is StatusWait.BRIEFLY


def pod(index: int, annotation: str | None = None, phase: str = "Running", *, terminating: bool = False,
        exit_code: int | None = None) -> dict[str, Any]:
    made = make_pod("Worker", index, phase, terminating=terminating, exit_code=exit_code)
    if annotation is not None:
        made["metadata"]["annotations"] = {KEY: annotation}
    return made


def planned(stored: str | None, pods: list[dict[str, Any]], now: datetime = NOW) -> Plan:
    job = running(make_job({"Worker": len(pods)}))
    if stored is not None:
        job["status"]["lastCheckpointTime"] = stored
    return plan(PlanContext(job, {POD: pods, SERVICE: services_for({"Worker": len(pods)})}, now, ControllerConfig()))


W0, W1 = name_of("Worker", 0), name_of("Worker", 1)
SAVED = "2026-11-21T09:59:50Z"  # 10 s before NOW
ANNOTATIONS: dict[str, tuple[str | None, list[dict[str, Any]], list[tuple[str, str]], float | None]] = {
    "no checkpoint known: nothing": (None, [pod(0), pod(1)], [], None),
    "every live pod without it": (SAVED, [pod(0), pod(1)], [(W0, SAVED), (W1, SAVED)], None),
    "already said: nothing": (SAVED, [pod(0, SAVED), pod(1, SAVED)], [], None),
    "a save 30 s or more after the one written": (SAVED, [pod(0, "2026-11-21T09:59:20Z"), pod(1, SAVED)],
                                                  [(W0, SAVED)], None),
    "a save less than 30 s after: later, when it is 30 s old": (SAVED, [pod(0, "2026-11-21T09:59:30Z"), pod(1, SAVED)],
                                                                [], 20.0),
    "a save 30 s old with none newer: written": ("2026-11-21T09:59:30Z", [pod(0, "2026-11-21T09:59:10Z"),
                                                                          pod(1, "2026-11-21T09:59:30Z")],
                                                 [(W0, "2026-11-21T09:59:30Z")], None),
    "a time ahead of the status's (not tfop's): put right": (SAVED, [pod(0, "2026-11-21T10:00:00Z"), pod(1, SAVED)],
                                                            [(W0, SAVED)], None),
    "an unreadable value: put right": (SAVED, [pod(0, "soon"), pod(1, SAVED)], [(W0, SAVED)], None),
    "pods going or ended are left alone": (SAVED, [pod(0, terminating=True),
                                                   pod(1, "2026-11-21T09:00:00Z", "Succeeded", exit_code=0)], [], None),
}


@pytest.mark.parametrize(("stored", "pods", "expected", "requeue"), ANNOTATIONS.values(), ids=ANNOTATIONS.keys())
def test_the_live_pods_say_the_stored_checkpoint_time(stored: str | None, pods: list[dict[str, Any]],
                                                      expected: list[tuple[str, str]], requeue: float | None) -> None:
    result = planned(stored, pods)
    assert [(a.name, a.value) for a in result.annotate] == expected
    assert all(a.key == KEY and a.uid == f"pod-{a.name}" for a in result.annotate)
    assert result.requeue_after == requeue


def test_the_annotation_follows_the_stored_status_never_the_one_held_back() -> None:
    """A report's new time goes into this pass's status; the pods get it from the pass after it is stored."""
    job = running(make_job({"Worker": 1}))
    job["status"]["lastCheckpointTime"] = "2026-11-21T09:50:00Z"
    context = PlanContext(job, {POD: [pod(0, "2026-11-21T09:50:00Z")], SERVICE: services_for({"Worker": 1})}, NOW,
                          ControllerConfig(), progress=report(SAVED))
    first = plan(context)
    assert first.status is not None and first.status.to_json()["lastCheckpointTime"] == SAVED
    assert first.annotate == []
    stored = copy.deepcopy(job)
    stored["status"] = first.status.to_json()
    second = plan(PlanContext(stored, context.children, NOW, ControllerConfig(), progress=report(SAVED)))
    assert second.annotate == [PodAnnotation(W0, f"pod-{W0}", KEY, SAVED)]


def test_a_finished_job_annotates_nothing() -> None:
    job = running(make_job({"Worker": 1}))
    job["status"]["lastCheckpointTime"] = SAVED
    job["status"]["conditions"].append({"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded",
                                        "message": "done", "lastTransitionTime": SAVED})
    assert plan(PlanContext(job, {POD: [pod(0)], SERVICE: services_for({"Worker": 1})}, NOW,
                            ControllerConfig())).annotate == []


def test_the_pod_cache_keeps_the_annotation_and_no_other() -> None:
    made = pod(0, SAVED)
    made["metadata"]["annotations"]["other"] = "x"
    assert slim_pod(made)["metadata"]["annotations"] == {KEY: SAVED}
