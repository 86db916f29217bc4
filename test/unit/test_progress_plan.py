"""Progress in the planner: what a pod is given to report with (plan/children/progress_reporting.py), the latest
report written into status.trainerStatus (plan/policies/progress.py), and the field read and written back as
stored (plan/job_status.py). Rows written out."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from support.plan_builders import NOW, make_job, plan_of, running, running_pods, services_for
from tfop.controller.plan.children.progress_reporting import report_progress
from tfop.controller.plan.controller_config import ControllerConfig, ProgressSettings
from tfop.controller.plan.job_status import Metric, TFJobStatus, TrainerStatus
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import POD, SERVICE, PlanContext

ON = ProgressSettings(enabled=True, url="https://tfop.tfop-system.svc:8444")
MOUNT = {"name": "tfop-progress", "mountPath": "/var/run/secrets/tfop.kubeflow.org/progress", "readOnly": True}
ENV = [{"name": "KUBEFLOW_TRAINER_SERVER_URL",
        "value": "https://tfop.tfop-system.svc:8444/apis/kubeflow.org/v1/namespaces/ns/tfjobs/mnist/status"},
       {"name": "KUBEFLOW_TRAINER_SERVER_CA_CERT", "value": "/var/run/secrets/tfop.kubeflow.org/progress/ca.crt"},
       {"name": "KUBEFLOW_TRAINER_SERVER_TOKEN", "value": "/var/run/secrets/tfop.kubeflow.org/progress/token"}]
VOLUME = {"name": "tfop-progress", "projected": {"sources": [
    {"serviceAccountToken": {"audience": "tfop.kubeflow.org/namespaces/ns/tfjobs/mnist/progress",
                             "expirationSeconds": 3600, "path": "token"}},
    {"configMap": {"name": "tfop-progress", "items": [{"key": "ca.crt", "path": "ca.crt"},
                                                       {"key": "tfop_progress.py", "path": "tfop_progress.py"}]}}]}}
TF = {"name": "tensorflow", "image": "tf"}
SPECS: dict[str, tuple[ProgressSettings, dict[str, Any], dict[str, Any]]] = {
    "off: the pod as it was": (ProgressSettings(), {"containers": [TF]}, {"containers": [TF]}),
    "on: every container, one volume": (ON, {"containers": [TF, {"name": "side", "image": "s"}]}, {
        "containers": [{**TF, "env": ENV, "volumeMounts": [MOUNT]},
                       {"name": "side", "image": "s", "env": ENV, "volumeMounts": [MOUNT]}],
        "volumes": [VOLUME]}),
    "the user's variables kept, tfop's replacing theirs": (ON, {"containers": [{**TF, "env": [
        {"name": "A", "value": "1"}, {"name": "KUBEFLOW_TRAINER_SERVER_URL", "value": "https://elsewhere"}]}]}, {
        "containers": [{**TF, "env": [{"name": "A", "value": "1"}, *ENV], "volumeMounts": [MOUNT]}],
        "volumes": [VOLUME]}),
    "the user's volumes kept, one at tfop's path replaced": (ON, {
        "containers": [{**TF, "volumeMounts": [{"name": "data", "mountPath": "/data"},
                                               {"name": "x", "mountPath": MOUNT["mountPath"]}]}],
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "tfop-progress", "emptyDir": {}}]}, {
        "containers": [{**TF, "env": ENV, "volumeMounts": [{"name": "data", "mountPath": "/data"}, MOUNT]}],
        "volumes": [{"name": "data", "emptyDir": {}}, VOLUME]}),
}


@pytest.mark.parametrize(("settings", "spec", "expected"), SPECS.values(), ids=SPECS.keys())
def test_a_pod_is_given_the_token_and_the_address_of_its_jobs_endpoint(
        settings: ProgressSettings, spec: dict[str, Any], expected: dict[str, Any]) -> None:
    given = copy.deepcopy(spec)
    report_progress(given, settings, "ns", "mnist")
    assert given == expected


def test_the_planners_pods_report_when_the_endpoint_is_on() -> None:
    job = make_job({"Worker": 1})
    made = plan_of(job, [], [], config=ControllerConfig(progress=ON))
    assert made.desired is not None
    pod = made.desired.body(POD, next(creation.slot for creation in made.create if creation.kind == POD))
    assert pod["spec"]["volumes"] == [VOLUME]
    assert [e["name"] for e in pod["spec"]["containers"][0]["env"]] == [e["name"] for e in ENV]


T1 = datetime(2026, 11, 21, 10, 1, 0, tzinfo=UTC)
T2 = datetime(2026, 11, 21, 10, 2, 0, tzinfo=UTC)
HALF = TrainerStatus(progress_percentage=50, metrics=(Metric("loss", "0.5"),), last_updated_time=T2,
                     reported_by="mnist-worker-0")
HALF_JSON = {"progressPercentage": 50, "metrics": [{"name": "loss", "value": "0.5"}],
             "lastUpdatedTime": "2026-11-21T10:02:00Z", "reportedBy": "mnist-worker-0"}
EARLIER = {"progressPercentage": 10, "lastUpdatedTime": "2026-11-21T10:01:00Z"}
LATER = {"progressPercentage": 90, "lastUpdatedTime": "2026-11-21T10:03:00Z"}
RECORDS: dict[str, tuple[dict[str, Any] | None, TrainerStatus | None, dict[str, Any] | None]] = {
    "no report: nothing": (None, None, None),
    "no report: the stored one stays": (EARLIER, None, EARLIER),
    "a first report": (None, HALF, HALF_JSON),
    "a newer report replaces the stored one": (EARLIER, HALF, HALF_JSON),
    "an older report does not": (LATER, HALF, LATER),
    "the same second, other content: the report wins": (
        {**HALF_JSON, "progressPercentage": 49}, HALF, HALF_JSON),
}


@pytest.mark.parametrize(("stored", "report", "expected"), RECORDS.values(), ids=RECORDS.keys())
def test_the_latest_report_is_written_into_the_status(stored: dict[str, Any] | None, report: TrainerStatus | None,
                                                     expected: dict[str, Any] | None) -> None:
    job = running(make_job({"Worker": 2, "PS": 1}))
    if stored is not None:
        job["status"]["trainerStatus"] = stored
    result = plan(PlanContext(job, {POD: running_pods(), SERVICE: services_for()}, NOW, ControllerConfig(),
                              progress=report))
    status = result.status.to_json() if result.status is not None else job["status"]
    assert status.get("trainerStatus") == expected
    if result.status is not None:  # a report moves nothing else
        assert {k: v for k, v in status.items() if k not in ("trainerStatus", "lastReconcileTime")} == {
            k: v for k, v in job["status"].items() if k not in ("trainerStatus", "lastReconcileTime")}


def test_a_report_already_stored_writes_nothing() -> None:
    job = running(make_job({"Worker": 2, "PS": 1}))
    job["status"]["trainerStatus"] = HALF_JSON
    assert plan(PlanContext(job, {POD: running_pods(), SERVICE: services_for()}, NOW, ControllerConfig(),
                            progress=HALF)).status is None


def test_trainer_status_is_read_typed_and_written_back_as_stored() -> None:
    stored = {"state": "Running", "trainerStatus": {
        "reportedBy": "p", "progressPercentage": 45, "estimatedRemainingSeconds": 600,
        "estimatedCompletionTime": "2026-11-21T10:12:00Z", "currentStep": 120, "totalSteps": 1000,
        "currentEpoch": 2, "totalEpochs": 5, "metrics": [{"name": "loss", "value": "0.25"}],
        "lastUpdatedTime": "2026-11-21T10:02:00Z", "futureField": {"x": 1}}}
    status = TFJobStatus.from_json(stored)
    assert status.trainer_status is not None
    assert status.trainer_status.content() == TrainerStatus(
        progress_percentage=45, estimated_remaining_seconds=600,
        estimated_completion_time=datetime(2026, 11, 21, 10, 12, tzinfo=UTC), current_step=120, total_steps=1000,
        current_epoch=2, total_epochs=5, metrics=(Metric("loss", "0.25"),), last_updated_time=T2, reported_by="p")
    assert json.dumps(status.to_json()) == json.dumps(stored)

