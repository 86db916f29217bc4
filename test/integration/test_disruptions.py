"""Disruptions on the local cluster (docs/tfjob/disruptions.md): `kubectl drain` of a node holding a replica (cordon,
then the Eviction API), a spot reclaim notice's taint, and the job's own PodDisruptionBudget, against the real
apiserver, scheduler and disruption controller. The nodes are the test's own kwok nodes, which only its jobs'
pods tolerate, so a drain takes nothing of another test's."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.operator_process import OperatorProcess
from support.tfjobs import IMAGE, TFJOBS, condition, events_about, job_status, pods_by_name, tfjob
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError, NotFound
from tfop.kube.resource import NODES, PODS, Resource

OWN = "tfop.test/disrupt"
BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
SPOT_NOTICE = "aws-node-termination-handler/spot-itn"


@pytest.fixture
def nodes(kube_client: KubeClient, namespace: str) -> Iterator[list[str]]:
    """Four kwok nodes only this test's pods go to (a label to select, a taint to tolerate): a job's three replicas
    one to a node, and room for them all once one node is drained."""
    names = [f"disrupt-{uuid.uuid4().hex[:6]}" for _ in range(4)]
    for name in names:
        kube_client.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", OWN: namespace}},
            "spec": {"taints": [{"key": OWN, "value": namespace, "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                       "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"}}})
    for name in names:
        wait_for(lambda name=name: node_ready(kube_client, name), DEADLINE, f"kwok to make node {name} Ready")
    yield names
    for name in names:
        with contextlib.suppress(NotFound):
            kube_client.delete(NODES, name)


def node_ready(client: KubeClient, name: str) -> bool:
    return any(entry["type"] == "Ready" and entry["status"] == "True"
               for entry in client.get(NODES, name).get("status", {}).get("conditions", []))


def job(name: str, namespace: str, workers: int, annotations: dict[str, str],
        policy: str = "OnFailure") -> dict[str, Any]:
    apart = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"training.kubeflow.org/job-name": name}},
        "topologyKey": "kubernetes.io/hostname"}]}}  # one replica to a node: a drain takes exactly one
    template = {"spec": {"nodeSelector": {OWN: namespace}, "tolerations": [{"key": OWN, "operator": "Exists"}],
                         "affinity": apart, "containers": [{"name": "tensorflow", "image": IMAGE}]}}
    body = tfjob(name, {"backoffLimit": 0}, Worker={"replicas": workers, "restartPolicy": policy,
                                                    "template": template})
    body["metadata"]["annotations"] = annotations
    return body


def running_pods(client: KubeClient, namespace: str, name: str, count: int) -> dict[str, dict[str, Any]]:
    """The job's pods once `count` of them run (bound, Running, not being deleted) and no other is left."""
    def ready() -> dict[str, dict[str, Any]] | None:
        pods = pods_by_name(client, namespace, name)
        live = {pod_name: pod for pod_name, pod in pods.items() if pod.get("status", {}).get("phase") == "Running"
                and not pod["metadata"].get("deletionTimestamp")}
        return live if len(live) == count == len(pods) else None

    return wait_for(ready, DEADLINE, f"{count} running pods of {name}")


def all_made_again(client: KubeClient, namespace: str, name: str,
                   before: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The job's pods once every replica runs in a new pod: the one the cluster took, and its peers with it."""
    old = {pod["metadata"]["uid"] for pod in before.values()}

    def new() -> dict[str, dict[str, Any]] | None:
        pods = pods_by_name(client, namespace, name)
        fresh = {pod_name: pod for pod_name, pod in pods.items() if pod.get("status", {}).get("phase") == "Running"
                 and not pod["metadata"].get("deletionTimestamp") and pod["metadata"]["uid"] not in old}
        return fresh if len(fresh) == len(before) == len(pods) else None

    return wait_for(new, DEADLINE, f"every replica of {name} made again, together")


def recorded(client: KubeClient, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
    return [entry for entry in job_status(client, namespace, name).get("disruptions", []) if entry["reason"] == reason]


def disrupted_events(client: KubeClient, namespace: str, name: str) -> set[tuple[str, str]]:
    return {(event["type"], event["message"]) for event in events_about(client, namespace, name)
            if event["reason"] == "ReplicaDisrupted"}


def counted(operator: OperatorProcess, namespace: str, reason: str) -> float:
    _, page = operator.get("/metrics")
    series = f'tf_operator_replica_disruptions_total{{job_namespace="{namespace}",reason="{reason}"}}'
    return next((float(line.split()[-1]) for line in page.splitlines() if line.startswith(series + " ")), -1.0)


def evict(client: KubeClient, namespace: str, pod: str) -> None:
    client.request("POST", PODS.path(namespace, pod, "eviction"), max_retries=0,
                   body={"apiVersion": "policy/v1", "kind": "Eviction",
                         "metadata": {"name": pod, "namespace": namespace}})


def test_kubectl_drain_restarts_a_synchronous_job_together_uncounted(
        cluster: LocalCluster, kube_client: KubeClient, namespace: str, nodes: list[str],
        operator: OperatorProcess) -> None:
    kube_client.create(TFJOBS, job("drained", namespace, 3, {"tfop.kubeflow.org/restart-scope": "Job"}), namespace)
    before = running_pods(kube_client, namespace, "drained", 3)
    worker_1 = next(pod for pod in before.values()
                    if pod["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "1")
    node = worker_1["spec"]["nodeName"]
    taken = sorted(pod_name for pod_name, pod in before.items() if pod["spec"]["nodeName"] == node)
    assert taken == [worker_1["metadata"]["name"]]

    cluster.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", f"--timeout={DEADLINE:.0f}s",
                    timeout=DEADLINE + 60)

    after = all_made_again(kube_client, namespace, "drained", before)
    assert node not in {pod["spec"]["nodeName"] for pod in after.values()}
    entries = recorded(kube_client, namespace, "drained", "EvictionByEvictionAPI")
    assert sorted(entry["podUID"] for entry in entries) == sorted(before[name]["metadata"]["uid"] for name in taken)
    assert all(entry["source"] == "DisruptionTarget" and entry["peersUntil"] for entry in entries)
    status = job_status(kube_client, namespace, "drained")
    assert status["replicaStatuses"]["Worker"]["restarts"] == 0
    assert not condition(kube_client, namespace, "drained", "Failed")
    wait_for(lambda: condition(kube_client, namespace, "drained", "Running"), DEADLINE, "Running again")
    told = wait_for(lambda: events if len(events := disrupted_events(kube_client, namespace, "drained")) == len(taken)
                    else None, DEADLINE, "a ReplicaDisrupted event per drained pod")
    assert all(kind == "Normal" and "(EvictionByEvictionAPI" in message for kind, message in told)
    assert not any(event["reason"] == "TFJobRestarting" for event in events_about(kube_client, namespace, "drained"))
    wait_for(lambda: counted(operator, namespace, "EvictionByEvictionAPI") == len(taken), DEADLINE,
             "the disruptions counted by reason")


def test_a_reclaim_notice_moves_the_replicas_before_the_node_goes(
        kube_client: KubeClient, namespace: str, nodes: list[str], operator: OperatorProcess) -> None:
    kube_client.create(TFJOBS, job("reclaimed", namespace, 3, {"tfop.kubeflow.org/restart-scope": "Job"}), namespace)
    before = running_pods(kube_client, namespace, "reclaimed", 3)
    node = next(iter(before.values()))["spec"]["nodeName"]
    on_node = {pod["metadata"]["uid"] for pod in before.values() if pod["spec"]["nodeName"] == node}

    # As the AWS node termination handler does on a spot interruption notice; the node stays Ready.
    taints = [{"key": OWN, "value": namespace, "effect": "NoSchedule"},
              {"key": SPOT_NOTICE, "value": "notice", "effect": "NoSchedule"}]
    kube_client.patch(NODES, node, {"spec": {"taints": taints}})

    after = all_made_again(kube_client, namespace, "reclaimed", before)
    assert node not in {pod["spec"]["nodeName"] for pod in after.values()}
    assert {entry["podUID"] for entry in recorded(kube_client, namespace, "reclaimed", "ReclaimNotice")} == on_node
    assert job_status(kube_client, namespace, "reclaimed")["replicaStatuses"]["Worker"]["restarts"] == 0
    told = disrupted_events(kube_client, namespace, "reclaimed")
    assert told and all(f"has the reclaim notice {SPOT_NOTICE}" in message for _, message in told)
    assert not any(event["reason"] in ("NodeLost", "TFJobRestarting")
                   for event in events_about(kube_client, namespace, "reclaimed"))
    assert node_ready(kube_client, node), "the node never went"
    wait_for(lambda: counted(operator, namespace, "ReclaimNotice") == len(on_node), DEADLINE, "counted")


def budget_of(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    items, _ = client.list(BUDGETS, namespace, label_selector=f"training.kubeflow.org/job-name={name}")
    return items[0] if items else None


def test_the_jobs_own_disruption_budget_holds_evictions_and_goes_with_the_job(
        kube_client: KubeClient, namespace: str, nodes: list[str], operator: OperatorProcess) -> None:
    kube_client.create(TFJOBS, job("kept", namespace, 2, {"tfop.kubeflow.org/disruption-budget": "NoEviction"},
                                   policy="ExitCode"), namespace)
    kube_client.create(TFJOBS, job("paced", namespace, 3, {"tfop.kubeflow.org/disruption-budget": "OneAtATime"}),
                       namespace)
    kept = running_pods(kube_client, namespace, "kept", 2)
    paced = running_pods(kube_client, namespace, "paced", 3)
    # The disruption controller counts the pods the budget selects, and allows what its minAvailable leaves.
    wait_for(lambda: (b := budget_of(kube_client, namespace, "kept")) is not None and b.get("status", {}).get(
        "expectedPods") == 2 and b["status"].get("currentHealthy") == 2, DEADLINE, "kept's budget counting its pods")
    wait_for(lambda: (b := budget_of(kube_client, namespace, "paced")) is not None and b.get("status", {}).get(
        "disruptionsAllowed") == 1, DEADLINE, "paced's budget allowing one eviction")
    assert budget_of(kube_client, namespace, "kept")["spec"]["minAvailable"] == 2  # type: ignore[index]
    assert budget_of(kube_client, namespace, "paced")["spec"]["minAvailable"] == 2  # type: ignore[index]

    victim = sorted(kept)[0]
    with pytest.raises(ApiError) as refused:
        evict(kube_client, namespace, victim)
    assert refused.value.status == 429, refused.value
    assert not kube_client.get(PODS, victim, namespace)["metadata"].get("deletionTimestamp")

    evict(kube_client, namespace, sorted(paced)[0])  # one at a time: the first is let through
    wait_for(lambda: recorded(kube_client, namespace, "paced", "EvictionByEvictionAPI"), DEADLINE, "recorded")
    running_pods(kube_client, namespace, "paced", 3)
    assert job_status(kube_client, namespace, "paced")["replicaStatuses"]["Worker"]["restarts"] == 0

    for pod_name in kept:
        exit_pod(kube_client, namespace, pod_name, 0)
    wait_for(lambda: condition(kube_client, namespace, "kept", "Succeeded"), DEADLINE, "kept Succeeded")
    wait_for(lambda: budget_of(kube_client, namespace, "kept") is None, DEADLINE, "kept's budget deleted")
    assert budget_of(kube_client, namespace, "paced") is not None, "a running job keeps its own"
