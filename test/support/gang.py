"""The gang tests' kwok node, its pods and PodGroups, as test_gang.py and test_gang_resize.py write and read them.
The fixtures that make the node and start the co-scheduler are in test/integration/conftest.py."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from support.tfjobs import pods_by_name
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists
from tfop.kube.resource import Resource

PLUGIN_GROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
VOLCANO_GROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
TAINT = "tfop.test/gang"
GPU = "nvidia.com/gpu"


def make_gang_node(client: KubeClient) -> str:
    """A kwok node with 8 GPUs that only the gang tests' pods tolerate, and their priority classes."""
    name = f"gang-node-{uuid.uuid4().hex[:6]}"
    client.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        "labels": {"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
        "spec": {"taints": [{"key": TAINT, "value": "true", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110", GPU: "8"},
                   "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110", GPU: "8"}}})
    wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True"
                         for c in client.get(NODES, name).get("status", {}).get("conditions", [])),
             DEADLINE, f"kwok to make node {name} Ready")
    make_priority_classes(client)
    return name


def make_priority_classes(client: KubeClient) -> None:
    """The gang tests' priority classes (idempotent): a pod naming one that does not exist is refused, so a test
    whose jobs name them makes them, whichever tests ran before it."""
    for priority_class, value in (("tfop-gang-high", 1000), ("tfop-gang-low", 100), ("tfop-gang-blocker", 10000)):
        with contextlib.suppress(AlreadyExists):
            client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                             "metadata": {"name": priority_class}, "value": value})


def gpu_replica(node: str, replicas: int, gpus: int = 1, priority_class: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0",
                        "resources": {"limits": {GPU: gpus}}}],
        "nodeSelector": {"kubernetes.io/hostname": node},
        "tolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"replicas": replicas, "restartPolicy": "Never", "template": {"spec": spec}}


def pods_of(client: KubeClient, namespace: str, job: str) -> list[dict[str, Any]]:
    return list(pods_by_name(client, namespace, job).values())


def bound(pods: list[dict[str, Any]]) -> int:
    return sum(1 for pod in pods if pod["spec"].get("nodeName"))


def running(pods: list[dict[str, Any]]) -> int:
    return sum(1 for pod in pods if pod.get("status", {}).get("phase") == "Running")
