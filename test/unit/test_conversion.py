"""Table tests of the conversions between the seeds' TFJob versions and v1: lossless round trips from v1, the
seeds' manifests as v1 sees them, and refusals that name the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tfop import yamlio
from tfop.api.conversion import (
    FIELDS_ANNOTATION,
    TF_IMAGE_ANNOTATION,
    V1ALPHA1,
    V1BETA1,
    ConversionError,
    convert,
    from_v1,
    to_v1,
)
from tfop.api.runtime_id import runtime_id

SEEDS = Path(__file__).resolve().parents[1] / "data" / "seeds"
UID = "e11f9577-b5e5-11e7-8522-42010a8e01a4"


def seed(name: str) -> dict[str, Any]:
    return dict(yamlio.load((SEEDS / name).read_text()))


def container(name: str = "tensorflow", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "tf", **fields}


def replica(*containers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"template": {"spec": {"containers": list(containers or [container()])}}, **fields}


def v1(replica_specs: dict[str, Any], status: dict[str, Any] | None = None, annotations: dict[str, str] | None = None,
       **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "mnist", "namespace": "ns", "uid": UID}
    if annotations:
        metadata["annotations"] = annotations
    job: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": metadata,
                           "spec": {"tfReplicaSpecs": replica_specs, **spec}}
    if status is not None:
        job["status"] = status
    return job


FULL_STATUS = {
    "conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    "replicaStatuses": {"Chief": {"active": 1}, "Worker": {"active": 1, "failed": 1, "restarts": 2},
                        "PS": {"succeeded": 2}},
    "startTime": "2026-01-01T00:00:00Z", "runtimeId": runtime_id(UID), "phase": "Running", "state": "Running",
    "reason": "TFJobRunning", "replicaSummary": "2/4",
}

ROUND_TRIPS = {
    "one worker": v1({"Worker": replica()}),
    "seed keys in upper case": v1({"MASTER": replica(), "WORKER": replica(replicas=3), "PS": replica(replicas=2)}),
    "lower-case keys": v1({"chief": replica(), "worker": replica()}),
    "chief, evaluator and every policy": v1(
        {"Chief": replica(restartPolicy="OnFailure"), "Worker": replica(replicas=2, restartPolicy="ExitCode"),
         "PS": replica(), "Evaluator": replica()},
        runPolicy={"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 600,
                   "backoffLimit": 3, "suspend": True, "schedulingPolicy": {"minAvailable": 3, "queue": "q"}},
        successPolicy="AllWorkers", enableDynamicWorker=True),
    "a tf port": v1({"Worker": replica(container(ports=[{"name": "tfjob-port", "containerPort": 3333}]))}),
    "PS without a tensorflow container": v1({"Worker": replica(), "PS": replica(container("server"))}),
    "PS without a template, and a tfImage": v1({"Master": replica(), "PS": {"replicas": 2}},
                                               annotations={TF_IMAGE_ANNOTATION: "tensorflow/tensorflow:1.3.0",
                                                            "team": "a"}),
    "a full status": v1({"Chief": replica(), "Worker": replica(), "PS": replica(replicas=2)}, status=FULL_STATUS),
    "an empty status": v1({"Worker": replica()}, status={}),
    "an elastic policy, and the selectors tfop writes": v1(
        {"Worker": replica(replicas=2), "PS": replica()},
        status={"replicaStatuses": {
            "Worker": {"active": 2, "selector": "training.kubeflow.org/job-name=mnist,"
                                                "training.kubeflow.org/replica-type=worker"},
            "PS": {"active": 1, "selector": "training.kubeflow.org/job-name=mnist,"
                                            "training.kubeflow.org/replica-type=ps"}}},
        elasticPolicy={"minReplicas": 1, "maxReplicas": 4, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": 80}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}}),
    "managed by MultiKueue": v1({"Worker": replica()},
                                runPolicy={"managedBy": "kueue.x-k8s.io/multikueue", "backoffLimit": 1}),
}


@pytest.mark.parametrize("version", [V1ALPHA1, V1BETA1])
@pytest.mark.parametrize("job", ROUND_TRIPS.values(), ids=ROUND_TRIPS.keys())
def test_v1_to_an_older_version_and_back_is_identical(job: dict[str, Any], version: str) -> None:
    original = copy.deepcopy(job)
    old = convert(job, version)
    assert old.problems == [] and old.obj["apiVersion"] == version
    back = convert(old.obj, "kubeflow.org/v1")
    assert back.problems == []
    assert back.obj == original
    assert job == original  # the input is not changed


@pytest.mark.parametrize("version", [V1ALPHA1, V1BETA1])
def test_the_crds_empty_run_policy_needs_no_annotation(version: str) -> None:
    """Every v1 job reads with runPolicy (the CRD defaults it to {}); an old view of one that sets nothing there
    carries nothing, and back in v1 the apiserver fills the default in again."""
    old = from_v1(v1({"Worker": replica()}, runPolicy={}), version)
    assert "annotations" not in old["metadata"]
    assert to_v1(old).obj == v1({"Worker": replica()})


def test_v1alpha1_view_of_a_v1_job() -> None:
    job = v1({"Chief": replica(restartPolicy="OnFailure"), "Worker": replica(replicas=2),
              "PS": {"replicas": 2}, "Evaluator": replica()},
             status=FULL_STATUS, annotations={TF_IMAGE_ANNOTATION: "tensorflow/tensorflow:1.3.0"},
             runPolicy={"backoffLimit": 3})
    alpha = from_v1(job, V1ALPHA1)
    spec = alpha["spec"]
    assert spec["RuntimeId"] == runtime_id(UID)
    assert spec["tfImage"] == "tensorflow/tensorflow:1.3.0"
    assert spec["terminationPolicy"] == {"chief": {"replicaName": "MASTER", "replicaIndex": 0}}
    assert [(r["tfReplicaType"], r.get("replicas"), r.get("isDefaultPS")) for r in spec["replicaSpecs"]] == [
        ("MASTER", None, None), ("WORKER", 2, None), ("PS", 2, True)]
    assert alpha["status"] == {"phase": "Running", "state": "Running", "reason": "TFJobRunning", "replicaStatuses": [
        {"tf_replica_type": "MASTER", "state": "Running", "ReplicasStates": {"Running": 1}},
        {"tf_replica_type": "WORKER", "state": "Failed", "ReplicasStates": {"Running": 1, "Failed": 1}},
        {"tf_replica_type": "PS", "state": "Succeeded", "ReplicasStates": {"Succeeded": 2}}]}
    annotations = alpha["metadata"]["annotations"]
    assert TF_IMAGE_ANNOTATION not in annotations and FIELDS_ANNOTATION in annotations


def test_v1beta1_view_moves_the_run_policy_up() -> None:
    job = v1({"MASTER": replica()}, runPolicy={"cleanPodPolicy": "None", "backoffLimit": 2, "suspend": False})
    beta = from_v1(job, V1BETA1)
    assert beta["spec"] == {"tfReplicaSpecs": {"MASTER": replica()}, "cleanPodPolicy": "None", "backoffLimit": 2}
    assert '"suspend":false' in beta["metadata"]["annotations"][FIELDS_ANNOTATION]


@pytest.mark.parametrize("version", [V1ALPHA1, V1BETA1])
def test_older_versions_carry_managed_by_in_the_annotation(version: str) -> None:
    """Neither older version has runPolicy.managedBy: a client reading and writing back an old view must not hand
    a job MultiKueue runs to tfop."""
    old = from_v1(v1({"Worker": replica()}, runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}), version)
    assert "managedBy" not in json.dumps(old["spec"])
    assert '"managedBy":"kueue.x-k8s.io/multikueue"' in old["metadata"]["annotations"][FIELDS_ANNOTATION]


def test_seed_001_v1beta1_becomes_v1_with_the_same_replicas() -> None:
    converted = to_v1(seed("001-example-tfjob.yaml"))
    assert converted.problems == []
    assert converted.obj["apiVersion"] == "kubeflow.org/v1"
    assert converted.obj["spec"] == seed("001-example-tfjob.yaml")["spec"]


def test_seed_002_v1alpha1_becomes_v1() -> None:
    converted = to_v1(seed("002-example-job.yaml"))
    assert converted.problems == []
    specs = converted.obj["spec"]["tfReplicaSpecs"]
    assert list(specs) == ["Master", "Worker", "PS"]
    assert specs["PS"] == {"replicas": 2}
    assert specs["Master"]["template"]["spec"]["restartPolicy"] == "OnFailure"


def test_seed_002_tf_port_becomes_the_named_port() -> None:
    converted = to_v1(seed("002-tf-smoke-gpu.yaml"))
    assert converted.problems == []
    tensorflow = converted.obj["spec"]["tfReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert tensorflow["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
    # The API's conversion keeps resource names; the webhook and `tfop convert` rename the legacy GPU resource with
    # the operator's gpuResource (test_convert_command.py).
    assert tensorflow["resources"] == {"limits": {"alpha.kubernetes.io/nvidia-gpu": 1}}


def test_seed_003_tfjob_is_a_master_by_default() -> None:
    converted = to_v1(seed("003-example-tfjob.yaml"))
    assert converted.problems == []
    assert (converted.obj["apiVersion"], converted.obj["kind"]) == ("kubeflow.org/v1", "TFJob")
    assert list(converted.obj["spec"]["tfReplicaSpecs"]) == ["Master"]


def test_seed_002_status_sample_keeps_its_tf_image_and_names_the_runtime_id_it_cannot_keep() -> None:
    converted = to_v1(seed("002-example-job-status.yaml"))
    assert [problem.path for problem in converted.problems] == ["spec.RuntimeId"]
    assert converted.obj["metadata"]["annotations"] == {TF_IMAGE_ANNOTATION: "tensorflow/tensorflow:1.3.0"}
    assert converted.obj["status"] == {"phase": "Done", "state": "Succeeded", "replicaStatuses": {
        "Master": {"active": 0, "succeeded": 1, "failed": 0}, "Worker": {"active": 1, "succeeded": 0, "failed": 0},
        "PS": {"active": 2, "succeeded": 0, "failed": 0}}}


def test_v1alpha1_runtime_id_of_the_uid_is_accepted() -> None:
    job = seed("002-example-job.yaml")
    job["metadata"]["uid"] = UID
    job["spec"]["RuntimeId"] = runtime_id(UID)
    assert to_v1(job).problems == []


def alpha(*replicas: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": V1ALPHA1, "kind": "TFJob", "metadata": {"name": "j", "uid": UID},
            "spec": {"replicaSpecs": list(replicas), **spec}}


REFUSED = {
    "a runtime id of its own": (alpha(replica(tfReplicaType="MASTER"), RuntimeId="76no"), "spec.RuntimeId"),
    "a chief that is not the master": (
        alpha(replica(tfReplicaType="MASTER"), replica(tfReplicaType="WORKER", replicas=2),
              terminationPolicy={"chief": {"replicaName": "WORKER", "replicaIndex": 1}}),
        "spec.terminationPolicy.chief"),
    "worker 1 as chief without a master": (
        alpha(replica(tfReplicaType="WORKER", replicas=2),
              terminationPolicy={"chief": {"replicaName": "WORKER", "replicaIndex": 1}}),
        "spec.terminationPolicy.chief"),
    "a type twice": (alpha(replica(tfReplicaType="WORKER"), replica(tfReplicaType="WORKER")),
                     "spec.replicaSpecs[1].tfReplicaType"),
    "an unknown type": (alpha(replica(tfReplicaType="EVALUATOR")), "spec.replicaSpecs[0].tfReplicaType"),
    "isDefaultPS with a tensorflow container": (alpha(replica(tfReplicaType="PS", isDefaultPS=True)),
                                                "spec.replicaSpecs[0].isDefaultPS"),
    "a tfPort the container contradicts": (
        alpha(replica(container(ports=[{"name": "tfjob-port", "containerPort": 1}]), tfPort=2222)),
        "spec.replicaSpecs[0].tfPort"),
    "an unknown replica field": (alpha(replica(tfReplicaType="MASTER", gpus=1)), "spec.replicaSpecs[0].gpus"),
    "an unknown spec field": (alpha(replica(), schedulerName="kube-batch"), "spec.schedulerName"),
    "a v1beta1 field that is not one": (
        {"apiVersion": V1BETA1, "kind": "TFJob", "metadata": {"name": "j"},
         "spec": {"tfReplicaSpecs": {"Worker": replica()}, "successPolicy": "AllWorkers"}}, "spec.successPolicy"),
}


@pytest.mark.parametrize(("job", "path"), REFUSED.values(), ids=REFUSED.keys())
def test_what_v1_has_no_meaning_for_is_named(job: dict[str, Any], path: str) -> None:
    problems = to_v1(job).problems
    assert path in [problem.path for problem in problems], problems


def test_default_terminationpolicy_is_accepted() -> None:
    job = alpha(replica(tfReplicaType="MASTER"), replica(tfReplicaType="WORKER"),
                terminationPolicy={"chief": {"replicaName": "MASTER", "replicaIndex": 0}})
    assert to_v1(job).problems == []


def test_an_unknown_version_is_an_error() -> None:
    with pytest.raises(ConversionError, match="v2"):
        to_v1({"apiVersion": "kubeflow.org/v2"})
    with pytest.raises(ConversionError, match="served versions"):
        convert(v1({"Worker": replica()}), "kubeflow.org/v2")
