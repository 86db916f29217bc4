"""Node loss against the real apiserver and scheduler: the test plays the node's kubelet and the node lifecycle
controller (this cluster runs neither for the node it makes), marking a node unreachable as they would, and tfop
must replace the replica on it (or, under WaitForProof, wait for the out-of-service taint).

The node is a plain Node object that kwok does not manage (kwok takes only nodes labelled type=kwok); a taint of
its own keeps every other test's pods off it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from support.operator_process import OperatorProcess
from support.tfjobs import IMAGE, TFJOBS, events_about, job_status, pods_by_name, tfjob
from support.waiting import DEADLINE, consistently, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.resource import NODES, PODS

OWN_TAINT = "tfop.test/node-loss"
HOLD = "tfop.test/hold"  # a finalizer no controller removes: the test does


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def lone_node(kube_client: KubeClient, namespace: str) -> Iterator[str]:
    """A Ready node only this test's job may use, with no kubelet behind it: its pods are bound and stay Pending."""
    name = f"lone-{namespace}"[:63]
    kube_client.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"kubernetes.io/hostname": name, OWN_TAINT: namespace}},
        "spec": {"taints": [{"key": OWN_TAINT, "value": namespace, "effect": "NoSchedule"}]}})
    set_ready(kube_client, name, "True", datetime.now(UTC))
    yield name
    kube_client.delete(NODES, name)


def set_ready(client: KubeClient, name: str, status: str, since: datetime) -> None:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    client.patch(NODES, name, {"status": {"capacity": capacity, "allocatable": capacity, "conditions": [
        {"type": "Ready", "status": status, "reason": "Test", "message": "set by the test",
         "lastHeartbeatTime": stamp(since), "lastTransitionTime": stamp(since)}]}}, subresource="status")


def taint(client: KubeClient, name: str, namespace: str, *keys: str) -> None:
    """The node's own taint plus `keys`, each NoSchedule and NoExecute, as the node lifecycle controller sets."""
    added = stamp(datetime.now(UTC))
    taints = [{"key": OWN_TAINT, "value": namespace, "effect": "NoSchedule"}] + [
        {"key": key, "effect": effect, "timeAdded": added} for key in keys for effect in ("NoSchedule", "NoExecute")]
    client.patch(NODES, name, {"spec": {"taints": taints}})


def job_on(name: str, node: str, namespace: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    template = {"spec": {"nodeSelector": {OWN_TAINT: namespace},
                         "tolerations": [{"key": OWN_TAINT, "operator": "Exists"}],
                         "containers": [{"name": "tensorflow", "image": IMAGE}]}}
    job = tfjob(name, Worker={"replicas": 1, "template": template})
    job["metadata"]["annotations"] = {"tfop.kubeflow.org/node-loss-grace-seconds": "5", **(annotations or {})}
    return job


def bound_pod(client: KubeClient, namespace: str, job: str, node: str) -> dict[str, Any]:
    def bound() -> dict[str, Any] | None:
        pods = list(pods_by_name(client, namespace, job).values())
        return pods[0] if len(pods) == 1 and pods[0]["spec"].get("nodeName") == node else None

    return wait_for(bound, DEADLINE, f"the pod of {job} bound to {node}")


def pod_uid(client: KubeClient, namespace: str, job: str) -> str | None:
    pods = list(pods_by_name(client, namespace, job).values())
    return pods[0]["metadata"]["uid"] if pods else None


def node_lost_events(client: KubeClient, namespace: str, job: str) -> list[str]:
    return [event["message"] for event in events_about(client, namespace, job) if event["reason"] == "NodeLost"]


def running_message(client: KubeClient, namespace: str, job: str) -> str:
    for entry in job_status(client, namespace, job).get("conditions", []):
        if entry["type"] == "Running":
            return str(entry.get("message", ""))
    return ""


def test_a_replica_on_an_unreachable_node_is_replaced_after_the_grace(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess, lone_node: str) -> None:
    kube_client.create(TFJOBS, job_on("lost", lone_node, namespace), namespace)
    old = bound_pod(kube_client, namespace, "lost", lone_node)["metadata"]["uid"]
    went_silent = datetime.now(UTC) - timedelta(seconds=2)
    set_ready(kube_client, lone_node, "Unknown", went_silent)
    taint(kube_client, lone_node, namespace, "node.kubernetes.io/unreachable")

    # A new pod under the same name: the old one was removed without its (absent) kubelet's confirmation.
    wait_for(lambda: pod_uid(kube_client, namespace, "lost") not in (None, old), DEADLINE, "the replacement pod")
    [told] = wait_for(lambda: node_lost_events(kube_client, namespace, "lost"), DEADLINE, "the NodeLost event")
    assert told == (f"TFJob {namespace}/lost: Worker 0's node {lone_node} is unreachable since "
                    f"{stamp(went_silent)[11:19]}; replacing it without waiting for its kubelet.")
    # The replacement is not a restart: nothing counts against backoffLimit.
    assert job_status(kube_client, namespace, "lost")["replicaStatuses"]["Worker"].get("restarts", 0) == 0


def test_a_lost_replica_whose_pod_a_finalizer_holds_is_replaced_once_the_pod_is_gone(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess, lone_node: str) -> None:
    """The forced delete leaves the pod in place while a finalizer holds it: its replacement, planned with the
    delete, is not sent (the name is taken), and it is made once the finalizer goes, not after expectations expire."""
    kube_client.create(TFJOBS, job_on("held", lone_node, namespace), namespace)
    pod = bound_pod(kube_client, namespace, "held", lone_node)
    old, name = pod["metadata"]["uid"], pod["metadata"]["name"]
    kube_client.patch(PODS, name, {"metadata": {"finalizers": [HOLD]}}, namespace)
    set_ready(kube_client, lone_node, "Unknown", datetime.now(UTC) - timedelta(seconds=2))
    taint(kube_client, lone_node, namespace, "node.kubernetes.io/unreachable")

    wait_for(lambda: kube_client.get(PODS, name, namespace)["metadata"].get("deletionTimestamp"), DEADLINE,
             "the pod on the lost node deleted (held by its finalizer)")
    consistently(lambda: kube_client.get(PODS, name, namespace)["metadata"]["uid"] == old, 5,
                 "the held pod alone under its name")
    kube_client.patch(PODS, name, {"metadata": {"finalizers": None}}, namespace)
    wait_for(lambda: pod_uid(kube_client, namespace, "held") not in (None, old), DEADLINE, "the replacement pod")


def test_wait_for_proof_keeps_the_replica_until_the_node_is_out_of_service(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess, lone_node: str) -> None:
    job = job_on("proof", lone_node, namespace, {"tfop.kubeflow.org/node-loss-policy": "WaitForProof"})
    kube_client.create(TFJOBS, job, namespace)
    old = bound_pod(kube_client, namespace, "proof", lone_node)["metadata"]["uid"]
    set_ready(kube_client, lone_node, "Unknown", datetime.now(UTC) - timedelta(seconds=60))
    taint(kube_client, lone_node, namespace, "node.kubernetes.io/unreachable")

    wait_for(lambda: "waiting for proof its processes are gone" in running_message(kube_client, namespace, "proof"),
             DEADLINE, "the Running message to say tfop waits for proof")
    consistently(lambda: pod_uid(kube_client, namespace, "proof") == old, 8,
                 "the pod on the unreachable node kept (well past the 5 s grace)")
    assert node_lost_events(kube_client, namespace, "proof") == []

    taint(kube_client, lone_node, namespace, "node.kubernetes.io/unreachable", "node.kubernetes.io/out-of-service")
    wait_for(lambda: pod_uid(kube_client, namespace, "proof") not in (None, old), DEADLINE, "the replacement pod")
    [told] = wait_for(lambda: node_lost_events(kube_client, namespace, "proof"), DEADLINE, "the NodeLost event")
    assert "is out of service (node.kubernetes.io/out-of-service); replacing it" in told
