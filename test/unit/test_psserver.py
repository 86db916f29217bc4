"""The default PS server: which PS gets it, what the container looks like, and the job's pods built from it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from support.plan_builders import parsed
from tfop import yamlio
from tfop.api.conversion import TF_IMAGE_ANNOTATION, to_v1
from tfop.api.defaults import apply_defaults
from tfop.api.validation import validate
from tfop.controller.plan.children.desired import DesiredChildren
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.default_ps_server import SCRIPT_CONFIGMAP, needs_default_server, with_default_ps_server
from tfop.controller.plan.planner import plan
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import POD, SERVICE, PlanContext
from tfop.controller.ps_server_configmap import server_script
from tfop.psserver.grpc_tensorflow_server import server_definition

SEEDS = Path(__file__).resolve().parents[1] / "data" / "seeds"
SEED_PATH = "/opt/mlkube/grpc_tensorflow_server/grpc_tensorflow_server.py"
TF = {"name": "tensorflow", "image": "tf"}


def job(ps: dict[str, Any] | None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    replicas: dict[str, Any] = {"Worker": {"replicas": 1, "template": {"spec": {"containers": [dict(TF)]}}}}
    if ps is not None:
        replicas["PS"] = ps
    metadata: dict[str, Any] = {"name": "mnist", "namespace": "ns", "uid": "uid-1"}
    if annotations:
        metadata["annotations"] = annotations
    return apply_defaults({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": metadata,
                           "spec": {"tfReplicaSpecs": replicas}})


@pytest.mark.parametrize(("ps", "needed"), [
    ({"replicas": 2}, True),
    ({"replicas": 1, "template": {}}, True),
    ({"replicas": 1, "template": {"spec": {"containers": []}}}, True),
    ({"replicas": 1, "template": {"spec": {"containers": [{"name": "sidecar", "image": "s"}]}}}, True),
    ({"replicas": 1, "template": {"spec": {"containers": [dict(TF)]}}}, False),
], ids=["no template", "empty template", "no containers", "only a sidecar", "its own tensorflow"])
def test_which_ps_gets_the_default_server(ps: dict[str, Any], needed: bool) -> None:
    assert needs_default_server(ps) is needed
    changed = with_default_ps_server(job(ps), ControllerConfig())
    assert (changed != job(ps)) is needed
    assert validate(changed) == []


def test_the_container_runs_the_script_from_the_configured_path_with_the_configured_image() -> None:
    config = ControllerConfig(tf_image="tensorflow/tensorflow:2.21.0", grpc_server_file_path="/srv/ps/server.py")
    ps = with_default_ps_server(job({"replicas": 2}), config)["spec"]["tfReplicaSpecs"]["PS"]
    pod_spec = ps["template"]["spec"]
    assert pod_spec["containers"] == [{
        "name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0", "command": ["python", "/srv/ps/server.py"],
        "ports": [{"name": "tfjob-port", "containerPort": 2222}],
        "volumeMounts": [{"name": "tfop-grpc-server", "mountPath": "/srv/ps", "readOnly": True}]}]
    assert pod_spec["volumes"] == [{"name": "tfop-grpc-server", "configMap": {
        "name": SCRIPT_CONFIGMAP, "items": [{"key": "grpc_tensorflow_server.py", "path": "server.py"}]}}]


def test_the_jobs_tf_image_wins_over_the_config() -> None:
    changed = with_default_ps_server(job({"replicas": 1}, {TF_IMAGE_ANNOTATION: "tensorflow/tensorflow:1.3.0"}),
                                     ControllerConfig())
    assert changed["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["image"] == (
        "tensorflow/tensorflow:1.3.0")


def test_seed_002_example_job_plans_a_default_server_for_each_ps() -> None:
    """Seed 002's example-job, converted from v1alpha1: MASTER, WORKER and two PS without a template."""
    converted = to_v1(yamlio.load((SEEDS / "002-example-job.yaml").read_text())).obj
    converted["metadata"].update(namespace="default", uid="uid-1")
    config = ControllerConfig(grpc_server_file_path=SEED_PATH)
    result = plan(PlanContext(converted, {POD: [], SERVICE: []}, datetime(2026, 1, 1, tzinfo=UTC), config))
    assert result.desired is not None and result.desired.needs_server_script
    names = sorted(creation.name for creation in result.create if creation.kind == POD)
    rid = result.status.to_json()["runtimeId"] if result.status else ""
    assert names == sorted(f"example-job-{t}-{rid}-{i}" for t, i in [("master", 0), ("worker", 0), ("ps", 0),
                                                                     ("ps", 1)])
    pod = result.desired.body(POD, ReplicaSlot("PS", 1))
    tensorflow = pod["spec"]["containers"][0]
    assert tensorflow["command"] == ["python", SEED_PATH]
    assert tensorflow["volumeMounts"][0]["mountPath"] == "/opt/mlkube/grpc_tensorflow_server"
    tf_config = json.loads(next(e["value"] for e in tensorflow["env"] if e["name"] == "TF_CONFIG"))
    assert tf_config["task"] == {"type": "ps", "index": 1}
    assert sorted(tf_config["cluster"]) == ["chief", "ps", "worker"]
    assert [p["port"] for p in result.desired.body(SERVICE, ReplicaSlot("PS", 1))["spec"]["ports"]] == [2222]


def test_a_job_without_a_default_server_needs_no_script() -> None:
    assert not DesiredChildren(parsed(with_default_ps_server(job(None), ControllerConfig()))).needs_server_script


def test_the_script_reads_its_task_from_tf_config() -> None:
    tf_config = json.dumps({"cluster": {"chief": ["c:2222"], "ps": ["p0:2222", "p1:2222"], "evaluator": ["e:2222"]},
                            "task": {"type": "ps", "index": 1}})
    assert server_definition(tf_config) == ({"chief": ["c:2222"], "ps": ["p0:2222", "p1:2222"]}, "ps", 1)
    assert "def main" in server_script()
