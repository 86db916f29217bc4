"""The tolerations of a pod whose replica tfop replaces on a lost node (controller/plan/children/
node_loss_tolerations.py): unlimited NoExecute ones for the not-ready and unreachable taints, so the taint
eviction controller sets no timer that could fire on the replacement; a template's own are kept. Which plans add
them: the Pods backend's, with the Replace policy, when the operator watches nodes."""

from __future__ import annotations

from typing import Any

import pytest

from support.plan_builders import make_job, plan_of
from tfop.controller.plan.children.node_loss_tolerations import tolerate_node_loss
from tfop.controller.plan.controller_config import ControllerConfig, NodeLossSettings
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import JOB, POD

NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
USERS_UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 60}
UNREACHABLE_NO_SCHEDULE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoSchedule"}
NOT_READY_ANY_EFFECT = {"key": "node.kubernetes.io/not-ready", "operator": "Exists"}
EVERYTHING = {"operator": "Exists"}


@pytest.mark.parametrize(("template", "expected"), [
    ({}, [NOT_READY, UNREACHABLE]),
    ({"tolerations": None}, [NOT_READY, UNREACHABLE]),
    ({"tolerations": [GPU]}, [GPU, NOT_READY, UNREACHABLE]),
    # the user's own limit stands
    ({"tolerations": [USERS_UNREACHABLE]}, [USERS_UNREACHABLE, NOT_READY]),
    # tolerating the NoSchedule taint is not tolerating the NoExecute one
    ({"tolerations": [UNREACHABLE_NO_SCHEDULE]}, [UNREACHABLE_NO_SCHEDULE, NOT_READY, UNREACHABLE]),
    ({"tolerations": [NOT_READY_ANY_EFFECT]}, [NOT_READY_ANY_EFFECT, UNREACHABLE]),
    ({"tolerations": [EVERYTHING]}, [EVERYTHING]),
])
def test_the_node_loss_taints_are_tolerated_without_a_limit(template: dict[str, Any],
                                                            expected: list[dict[str, Any]]) -> None:
    spec = {"containers": [], **template}
    tolerate_node_loss(spec)
    assert spec["tolerations"] == expected


def created_pod_tolerations(job: dict[str, Any], config: ControllerConfig) -> list[Any]:
    plan = plan_of(job, [], [], config=config)
    assert plan.desired is not None
    return list(plan.desired.body(POD, ReplicaSlot("Worker", 0))["spec"].get("tolerations") or [])


@pytest.mark.parametrize(("annotations", "settings", "expected"), [
    ({}, NodeLossSettings(), [NOT_READY, UNREACHABLE]),  # Replace, the default
    ({"tfop.kubeflow.org/node-loss-policy": "WaitForProof"}, NodeLossSettings(), []),
    ({}, NodeLossSettings(policy="WaitForProof"), []),
    ({}, NodeLossSettings(watch_nodes=False), []),  # tfop replaces nothing: Kubernetes' eviction stays
])
def test_a_plan_adds_them_when_tfop_replaces_lost_pods(annotations: dict[str, str], settings: NodeLossSettings,
                                                       expected: list[dict[str, Any]]) -> None:
    job = make_job()
    job["metadata"]["annotations"] = annotations
    assert created_pod_tolerations(job, ControllerConfig(node_loss=settings)) == expected


def test_the_jobs_backend_keeps_kubernetes_eviction() -> None:
    """Its pods are the Job controller's, made under new names: no timer can fire on a replacement of the same name."""
    job = make_job()
    job["metadata"]["annotations"] = {"tfop.kubeflow.org/replica-backend": "jobs"}
    plan = plan_of(job, [], [], config=ControllerConfig())
    assert plan.desired is not None
    assert "tolerations" not in plan.desired.body(JOB, ReplicaSlot("Worker", 0))["spec"]["template"]["spec"]
