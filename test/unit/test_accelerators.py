from __future__ import annotations

import copy
from datetime import UTC
from typing import Any

import pytest

from tfop.controller.plan.children.accelerators import apply_accelerators
from tfop.controller.plan.controller_config import Accelerator, HostVolume

GPU = {"nvidia.com/gpu": Accelerator(
    env=(("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64"),),
    volumes=(HostVolume("nvidia", "/usr/local/nvidia", "/home/kubernetes/bin/nvidia"),))}


def pod_spec(resources: dict[str, Any] | None = None, **container: Any) -> dict[str, Any]:
    return {"containers": [{"name": "tensorflow", "image": "tf", "resources": resources or {}, **container},
                           {"name": "sidecar", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}


@pytest.mark.parametrize("resources", [{"limits": {"nvidia.com/gpu": 1}}, {"requests": {"nvidia.com/gpu": "2"}}],
                         ids=["limit", "request"])
def test_a_container_asking_for_the_resource_gets_env_and_host_mounts(resources: dict[str, Any]) -> None:
    spec = pod_spec(resources)
    apply_accelerators(spec, GPU)
    tensorflow, sidecar = spec["containers"]
    assert tensorflow["env"] == [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}]
    assert tensorflow["volumeMounts"] == [{"name": "nvidia", "mountPath": "/usr/local/nvidia"}]
    assert spec["volumes"] == [{"name": "nvidia", "hostPath": {"path": "/home/kubernetes/bin/nvidia"}}]
    assert "env" not in sidecar and "volumeMounts" not in sidecar  # only the tensorflow container


@pytest.mark.parametrize("resources", [{}, {"limits": {"cpu": "4"}}, {"limits": {"nvidia.com/gpu": 0}}],
                         ids=["none", "cpu-only", "zero-gpus"])
def test_nothing_changes_without_a_request(resources: dict[str, Any]) -> None:
    spec = pod_spec(resources)
    before = copy.deepcopy(spec)
    apply_accelerators(spec, GPU)
    assert spec == before


def test_what_the_user_wrote_wins() -> None:
    spec = pod_spec({"limits": {"nvidia.com/gpu": 1}},
                    env=[{"name": "LD_LIBRARY_PATH", "value": "/mine"}],
                    volumeMounts=[{"name": "drivers", "mountPath": "/usr/local/nvidia"}])
    spec["volumes"] = [{"name": "drivers", "emptyDir": {}}]
    apply_accelerators(spec, GPU)
    tensorflow = spec["containers"][0]
    assert tensorflow["env"] == [{"name": "LD_LIBRARY_PATH", "value": "/mine"}]
    assert tensorflow["volumeMounts"] == [{"name": "drivers", "mountPath": "/usr/local/nvidia"}]
    assert spec["volumes"] == [{"name": "drivers", "emptyDir": {}}]


def test_the_planner_config_reaches_the_desired_pods() -> None:
    from datetime import datetime

    from tfop.controller.plan.controller_config import ControllerConfig
    from tfop.controller.plan.planner import plan
    from tfop.controller.plan.types import POD, PlanContext

    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": {"name": "gpu", "namespace": "ns", "uid": "uid-1", "generation": 1},
           "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": pod_spec(
               {"limits": {"nvidia.com/gpu": 1}})}}}}}
    result = plan(PlanContext(job, {}, datetime(2026, 11, 21, tzinfo=UTC), ControllerConfig(accelerators=GPU)))
    assert len(result.creates(POD)) == 2 and result.desired is not None
    for creation in result.creates(POD):
        pod = result.desired.body(POD, creation.slot)
        tensorflow = pod["spec"]["containers"][0]
        assert {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"} in tensorflow["env"]
        assert pod["spec"]["volumes"] == [{"name": "nvidia", "hostPath": {"path": "/home/kubernetes/bin/nvidia"}}]
