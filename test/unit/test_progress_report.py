"""A progress report read and judged (tfop/progress/report.py): the URL, the body, the token's review, and whether
the pod it is bound to may report for the job; every decision a table of written-out rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from tfop.controller.plan.job_status import Metric, TrainerStatus
from tfop.progress.report import Caller, Refusal, Target, authorize, caller_of, read_report, target_of

NOW = datetime(2026, 12, 2, 8, 0, 0, 750_000, tzinfo=UTC)
STAMP = datetime(2026, 12, 2, 8, 0, 0, tzinfo=UTC)  # whole seconds, as the status keeps times
AUDIENCE = "tfop.kubeflow.org/namespaces/ns/tfjobs/mnist/progress"
POD = "mnist-worker-ab12-0"

PATHS: dict[str, tuple[str, Target | None]] = {
    "a job's": ("/apis/kubeflow.org/v1/namespaces/ns/tfjobs/mnist/status", Target("ns", "mnist")),
    "with a query": ("/apis/kubeflow.org/v1/namespaces/ns/tfjobs/mnist/status?x=1", Target("ns", "mnist")),
    "Kubeflow Trainer's": ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/mnist/status", None),
    "no job": ("/apis/kubeflow.org/v1/namespaces/ns/tfjobs//status", None),
    "a name no object may have": ("/apis/kubeflow.org/v1/namespaces/ns/tfjobs/Mnist/status", None),
    "beyond the status": ("/apis/kubeflow.org/v1/namespaces/ns/tfjobs/mnist/status/x", None),
    "a dot-dot": ("/apis/kubeflow.org/v1/namespaces/../tfjobs/mnist/status", None),
}


@pytest.mark.parametrize(("path", "expected"), PATHS.values(), ids=PATHS.keys())
def test_the_url_names_the_job(path: str, expected: Target | None) -> None:
    assert target_of(path) == expected


def body(**trainer: Any) -> bytes:
    return json.dumps({"trainerStatus": trainer}).encode()


SDK_BODY = body(lastUpdatedTime="2026-12-02T07:59:58.123+00:00", progressPercentage=45,
                estimatedRemainingSeconds=600,
                metrics=[{"name": "loss", "value": "0.2347"}, {"name": "currentEpoch", "value": "2"},
                         {"name": "totalEpochs", "value": "5"}, {"name": "step", "value": "1200.0"}])
BODIES: dict[str, tuple[bytes, TrainerStatus | Refusal | None]] = {
    "what the Kubeflow SDK sends": (SDK_BODY, TrainerStatus(
        progress_percentage=45, estimated_remaining_seconds=600,
        estimated_completion_time=datetime(2026, 12, 2, 8, 10, 0, tzinfo=UTC), current_step=1200, current_epoch=2,
        total_epochs=5, metrics=(Metric("loss", "0.2347"), Metric("currentEpoch", "2"), Metric("totalEpochs", "5"),
                                 Metric("step", "1200.0")), last_updated_time=STAMP, reported_by=POD)),
    "progress alone": (body(progressPercentage=0), TrainerStatus(
        progress_percentage=0, last_updated_time=STAMP, reported_by=POD)),
    "keys it does not name are ignored": (body(progressPercentage=100, phase="done"), TrainerStatus(
        progress_percentage=100, last_updated_time=STAMP, reported_by=POD)),
    "a step that is not a count": (body(metrics=[{"name": "currentStep", "value": "1.5"},
                                                 {"name": "step", "value": "7"}]), TrainerStatus(
        current_step=7, metrics=(Metric("currentStep", "1.5"), Metric("step", "7")), last_updated_time=STAMP,
        reported_by=POD)),
    "a checkpoint time is a metric like any other": (body(metrics=[
        {"name": "lastCheckpointTime", "value": "2026-12-02T07:59:00Z"}]), TrainerStatus(
        metrics=(Metric("lastCheckpointTime", "2026-12-02T07:59:00Z"),), last_updated_time=STAMP, reported_by=POD)),
    "a checkpoint time that is no time": (body(metrics=[{"name": "lastCheckpointTime", "value": "just now"}]), Refusal(
        422, "Invalid",
        "the metric lastCheckpointTime must be an RFC 3339 time or seconds since 1970, not 'just now'")),
    "no trainerStatus": (b'{"dataInitializerStatus": {}}', None),
    "trainerStatus null": (b'{"trainerStatus": null}', None),
    "not JSON": (b"progress=45", Refusal(400, "BadRequest", "the body is not JSON")),
    "a list": (b"[45]", Refusal(400, "BadRequest", "the body is not a JSON object")),
    "trainerStatus a number": (b'{"trainerStatus": 45}', Refusal(422, "Invalid", "trainerStatus must be an object")),
    "over 100 %": (body(progressPercentage=101), Refusal(
        422, "Invalid", "trainerStatus.progressPercentage must be an integer from 0 to 100, not 101")),
    "a fraction of a percent": (body(progressPercentage=45.5), Refusal(
        422, "Invalid", "trainerStatus.progressPercentage must be an integer from 0 to 100, not 45.5")),
    "true as a percent": (body(progressPercentage=True), Refusal(
        422, "Invalid", "trainerStatus.progressPercentage must be an integer from 0 to 100, not True")),
    "time running backwards": (body(estimatedRemainingSeconds=-1), Refusal(
        422, "Invalid", "trainerStatus.estimatedRemainingSeconds must be an integer from 0 to 2147483647, not -1")),
    "metrics not a list": (body(metrics={"loss": "1"}), Refusal(
        422, "Invalid", "trainerStatus.metrics must be a list")),
    "257 metrics": (body(metrics=[{"name": f"m{i}", "value": "1"} for i in range(257)]), Refusal(
        422, "Invalid", "trainerStatus.metrics has 257 entries, more than 256")),
    "a number as a value": (body(metrics=[{"name": "loss", "value": 0.5}]), Refusal(
        422, "Invalid", "trainerStatus.metrics[0].value must be a string of 1 to 64 characters, not 0.5")),
    "a name too long": (body(metrics=[{"name": "x" * 65, "value": "1"}]), Refusal(
        422, "Invalid", f"trainerStatus.metrics[0].name must be a string of 1 to 64 characters, not {'x' * 65!r}")),
    "an empty value": (body(metrics=[{"name": "loss", "value": ""}]), Refusal(
        422, "Invalid", "trainerStatus.metrics[0].value must be a string of 1 to 64 characters, not ''")),
}


@pytest.mark.parametrize(("raw", "expected"), BODIES.values(), ids=BODIES.keys())
def test_the_body_is_read_within_kubeflows_bounds(raw: bytes, expected: TrainerStatus | Refusal | None) -> None:
    assert read_report(raw, NOW, POD) == expected


def reviewed(*, authenticated: bool = True, audiences: tuple[str, ...] = (AUDIENCE,),
             username: str = "system:serviceaccount:ns:default", pod: tuple[str, str] | None = (POD, "uid-p"),
             error: str | None = None) -> dict[str, Any]:
    """A TokenReview's status as the apiserver writes it for a pod's projected token."""
    extra = {} if pod is None else {"authentication.kubernetes.io/pod-name": [pod[0]],
                                    "authentication.kubernetes.io/pod-uid": [pod[1]]}
    status: dict[str, Any] = {"authenticated": authenticated, "audiences": list(audiences),
                              "user": {"username": username, "uid": "sa-uid", "groups": ["system:serviceaccounts"],
                                       "extra": extra}}
    if error:
        status["error"] = error
    return status


REVIEWS: dict[str, tuple[Any, Caller | Refusal]] = {
    "a pod's token for the job": (reviewed(), Caller("ns", "default", POD, "uid-p")),
    "forged or expired": (reviewed(authenticated=False, error="invalid bearer token"), Refusal(
        401, "Unauthorized", "the token is not valid: invalid bearer token")),
    "for another audience": (reviewed(audiences=()), Refusal(
        401, "Unauthorized", f"the token is not for this job's audience {AUDIENCE}")),
    "a user's, not a ServiceAccount's": (reviewed(username="alice", pod=None), Refusal(
        401, "Unauthorized", "the token is alice's, not a ServiceAccount's")),
    "a ServiceAccount's, bound to no pod": (reviewed(pod=None), Refusal(
        401, "Unauthorized", "the token is not bound to a pod (mount the projected token tfop adds)")),
    "no status at all": (None, Refusal(401, "Unauthorized", "the token is not valid: not authenticated")),
}


@pytest.mark.parametrize(("status", "expected"), REVIEWS.values(), ids=REVIEWS.keys())
def test_the_tokens_review_names_the_pod_it_is_bound_to(status: Any, expected: Caller | Refusal) -> None:
    assert caller_of(status, AUDIENCE) == expected


def pod(name: str = POD, uid: str = "uid-p", owner: str | None = "mnist", labels: dict[str, str] | None = None,
        owner_kind: str = "TFJob", owner_uid: str = "uid-job") -> dict[str, Any]:
    refs = [] if owner is None else [{"apiVersion": "kubeflow.org/v1" if owner_kind == "TFJob" else "batch/v1",
                                      "kind": owner_kind, "name": owner, "uid": owner_uid, "controller": True}]
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "ownerReferences": refs,
                         "labels": labels or {}}}


CALLER = Caller("ns", "default", POD, "uid-p")
TARGET = Target("ns", "mnist")
JOB = {"metadata": {"name": "mnist", "namespace": "ns", "uid": "uid-job"}}
DECISIONS: dict[str, tuple[Target, Caller, dict[str, Any] | None, Refusal | None]] = {
    "a pod of the job": (TARGET, CALLER, pod(), None),
    "a pod of an earlier job of the name": (TARGET, CALLER, pod(owner_uid="uid-old"), Refusal(
        403, "Forbidden", f"pod ns/{POD} belongs to an earlier TFJob ns/mnist, which is gone")),
    "a pod of the job's replica Job (the Jobs backend)": (TARGET, CALLER, pod(
        owner="mnist-worker-ab12-0", owner_kind="Job",
        labels={"training.kubeflow.org/job-name": "mnist", "batch.kubernetes.io/job-name": "mnist-worker-ab12-0"}),
        None),
    "a pod of another job": (TARGET, CALLER, pod(owner="other"), Refusal(
        403, "Forbidden", f"pod ns/{POD} belongs to TFJob ns/other, so it may not report for TFJob ns/mnist")),
    "a pod of no job, labelled as the job's": (TARGET, CALLER, pod(
        owner=None, labels={"training.kubeflow.org/job-name": "mnist"}), Refusal(
        403, "Forbidden", f"pod ns/{POD} belongs to no TFJob, so it may not report for TFJob ns/mnist")),
    "a pod tfop does not cache (no job's)": (TARGET, CALLER, None, Refusal(
        403, "Forbidden", f"pod ns/{POD} is not a pod of any TFJob tfop runs")),
    "a new pod under the token's pod's name": (TARGET, CALLER, pod(uid="uid-new"), Refusal(
        403, "Forbidden", f"the token was issued to an earlier pod ns/{POD}, which is gone")),
    "a pod of another namespace": (Target("other", "mnist"), CALLER, pod(), Refusal(
        403, "Forbidden", f"pod ns/{POD} may not report for TFJob other/mnist")),
}


@pytest.mark.parametrize(("target", "caller", "cached", "expected"), DECISIONS.values(), ids=DECISIONS.keys())
def test_only_a_pod_of_the_job_may_report_for_it(target: Target, caller: Caller, cached: dict[str, Any] | None,
                                                  expected: Refusal | None) -> None:
    assert authorize(target, caller, cached, JOB) == expected


def test_a_pod_of_a_job_no_longer_cached_may_not_report() -> None:
    assert authorize(TARGET, CALLER, pod(), None) == Refusal(
        403, "Forbidden", f"pod ns/{POD} belongs to an earlier TFJob ns/mnist, which is gone")
