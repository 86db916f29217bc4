"""The capacity auto-scaler against the real control plane, on two kwok nodes of 2 CPUs each that only this test's
pods select and tolerate (kwok runs the pods): an elastic job grows into the idle room; workers a user asked for
beyond it are given up rather than left Pending; when another job's pods wait for CPU it shrinks, and it grows
back once that job is gone. Every resize is told by a Resized event and status.lastResize with cause Capacity."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from localcluster import LocalCluster
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, events_about, job_status, pods_by_name, tfjob
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.resource import NODES

TAINT = "tfop.test/capacity"
WINDOWS = "growAfterSeconds: 5\n  shrinkAfterSeconds: 5\n  giveUpAfterSeconds: 10\n  checkEverySeconds: 1\n"


@pytest.fixture
def pool(cluster: LocalCluster) -> Iterator[str]:
    """Two kwok nodes of 2 CPUs, labelled pool=<this pool> and tainted for this test's pods only."""
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    name = f"capacity-{uuid.uuid4().hex[:6]}"
    nodes = [f"{name}-{i}" for i in range(2)]
    for node in nodes:
        client.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": node, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"type": "kwok", "kubernetes.io/hostname": node, "kubernetes.io/os": "linux", "pool": name}},
            "spec": {"taints": [{"key": TAINT, "value": "true", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                       "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"}}})
        wait_for(lambda node=node: any(c["type"] == "Ready" and c["status"] == "True" for c in
                                       client.get(NODES, node).get("status", {}).get("conditions", [])),
                 DEADLINE, f"kwok to make node {node} Ready")
    yield name
    for node in nodes:
        client.delete(NODES, node)


@pytest.fixture
def operator(cluster: LocalCluster, tfjob_crd: Path, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    config = tmp_path / "config.yaml"
    config.write_text(f"capacityScaling:\n  enabled: true\n  {WINDOWS}")
    process = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace,
                              "--config", str(config)).start()
    yield process
    process.terminate()
    print(f"--- operator log ---\n{process.log_tail(80)}")


def listed(operator: OperatorProcess) -> set[tuple[str, str]]:
    """(resource, namespace) of every list the operator's informers made so far ("*": all namespaces)."""
    lines = (line for line in operator.log_path.read_text(errors="replace").splitlines() if line.startswith("{"))
    return {(entry["resource"], entry["namespace"]) for entry in map(json.loads, lines)
            if entry.get("event") == "listed"}


def worker(pool: str, replicas: int) -> dict[str, Any]:
    return {"replicas": replicas, "template": {"spec": {
        "nodeSelector": {"pool": pool}, "tolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}


def workers(client: KubeClient, namespace: str, job: str) -> int:
    return int(client.get(TFJOBS, job, namespace)["spec"]["tfReplicaSpecs"]["Worker"]["replicas"])


def running(client: KubeClient, namespace: str, job: str) -> int:
    return sum(1 for pod in pods_by_name(client, namespace, job).values()
               if pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp"))


def last_resize(client: KubeClient, namespace: str, job: str, to: int) -> dict[str, Any]:
    """status.lastResize once it tells the resize to `to` workers (the status is written a moment after the spec)."""
    return dict(wait_for(lambda: (last := job_status(client, namespace, job).get("lastResize")) and last["to"] == to
                         and last, message=f"{job}'s status to tell the resize to {to}"))


def resizes_counted(operator: OperatorProcess, namespace: str) -> dict[tuple[str, str], float]:
    """tf_operator_resizes_total of `namespace`, by (cause, strategy), as the operator's /metrics exports it."""
    return {(sample.labels["cause"], sample.labels["strategy"]): sample.value
            for family in text_string_to_metric_families(operator.get("/metrics")[1])
            if family.name == "tf_operator_resizes" for sample in family.samples
            if sample.name == "tf_operator_resizes_total" and sample.labels.get("job_namespace") == namespace}


def capacity_events(client: KubeClient, namespace: str, job: str) -> list[str]:
    return [e["message"] for e in sorted(events_about(client, namespace, job), key=lambda e: e["metadata"]["name"])
            if e["reason"] == "Resized" and "capacity auto-scaler" in e["message"]]


def test_an_elastic_job_grows_gives_up_shrinks_for_a_waiting_job_and_grows_back(
        kube_client: KubeClient, namespace: str, pool: str, operator: OperatorProcess) -> None:
    # It reads every namespace's pods and the nodes, whatever namespaces the operator runs jobs in.
    wait_for(lambda: {("pods", "*"), ("nodes", "*")} <= listed(operator), message="the auto-scaler's caches")
    start = time.monotonic()
    timeline: list[str] = []

    def mark(what: str) -> None:
        timeline.append(f"{time.monotonic() - start:5.0f} s  {what}")

    elastic = tfjob("a", Worker=worker(pool, 1))
    elastic["spec"].update(enableDynamicWorker=True, elasticPolicy={"minReplicas": 1, "maxReplicas": 6})
    kube_client.create(TFJOBS, elastic, namespace)
    mark("a created with 1 worker (min 1, max 6), on 2 nodes of 2 CPUs, 1 CPU a worker")

    # Grows into the idle room: 4 workers fit, not 6.
    wait_for(lambda: workers(kube_client, namespace, "a") == 4, message="a to grow to 4 workers")
    wait_for(lambda: running(kube_client, namespace, "a") == 4, message="a's 4 workers running")
    mark("a grown to 4, all running")
    status = last_resize(kube_client, namespace, "a", 4)
    assert (status["from"], status["to"], status["cause"], status["strategy"]) == (1, 4, "Capacity", "InPlace")
    assert status["message"].startswith(f"TFJob {namespace}/a: Worker 1 -> 4, asked by the capacity auto-scaler "
                                        "(Worker 1 -> 4: 3 workers fit in capacity idle for "), status

    # A user asks for 6: workers 4 and 5 find no node, and are given up rather than left Pending.
    kube_client.patch(TFJOBS, "a", {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 6}}}}, namespace)
    wait_for(lambda: workers(kube_client, namespace, "a") == 4, message="a to give up workers 4 and 5")
    wait_for(lambda: len(pods_by_name(kube_client, namespace, "a")) == 4, message="a's pods 4 and 5 gone")
    mark("a's workers 4-5 (asked by a user) given up: 6 -> 4")
    given_up = last_resize(kube_client, namespace, "a", 4)
    assert given_up["message"].split("(", 1)[1].startswith("Worker 6 -> 4: workers 4-5 found no node for "), given_up

    # Job b (2 workers, not elastic) does not fit: a shrinks to make room for it.
    kube_client.create(TFJOBS, tfjob("b", Worker=worker(pool, 2)), namespace)
    mark("b created with 2 workers: no room")
    wait_for(lambda: workers(kube_client, namespace, "a") == 2, message="a to shrink to 2 workers for b")
    mark("a shrunk to 2")
    wait_for(lambda: running(kube_client, namespace, "b") == 2, message="b's 2 workers running")
    mark("b running")
    assert running(kube_client, namespace, "a") == 2
    shrink = last_resize(kube_client, namespace, "a", 2)
    assert (shrink["from"], shrink["to"], shrink["cause"]) == (4, 2, "Capacity"), shrink
    assert f"(Worker 4 -> 2: {namespace}/b's pods waited " in shrink["message"], shrink
    assert shrink["message"].endswith(" s for cpu); workers 2-3 stop gracefully; the other replicas run on."), shrink

    # b ends: a grows back into the room b leaves.
    kube_client.delete(TFJOBS, "b", namespace)
    wait_for(lambda: workers(kube_client, namespace, "a") == 4, message="a to grow back to 4 workers")
    wait_for(lambda: running(kube_client, namespace, "a") == 4, message="a's 4 workers running again")
    mark("a grown back to 4 after b ended")
    print("\n" + "\n".join(timeline))

    last_resize(kube_client, namespace, "a", 4)
    told = wait_for(lambda: len(e := capacity_events(kube_client, namespace, "a")) >= 4 and e,
                    message="a's 4 capacity Resized events")
    assert [message.split(", asked by")[0] for message in told] == [
        f"TFJob {namespace}/a: Worker {a} -> {b}" for a, b in ((1, 4), (6, 4), (4, 2), (2, 4))], told
    final = job_status(kube_client, namespace, "a")
    # Nothing of it is a failure or a restart.
    assert final["replicaStatuses"]["Worker"].get("restarts", 0) == 0, final
    assert not any(c["type"] == "Failed" and c["status"] == "True" for c in final["conditions"]), final
    # Counted once the status that tells each resize is stored: a moment after the status the test read.
    counted = wait_for(lambda: (seen := resizes_counted(operator, namespace)).get(("Capacity", "InPlace")) == 4
                       and seen, message="4 capacity resizes counted")
    assert {key: value for key, value in counted.items() if value} == {("Capacity", "InPlace"): 4,
                                                                       ("User", "InPlace"): 1}, counted


def test_an_operator_of_one_namespace_without_capacity_scaling_never_watches_all_pods(
        cluster: LocalCluster, tfjob_crd: Path, namespace: str, tmp_path: Path) -> None:
    """The cluster's pods would cost memory in proportion to the whole cluster, for a feature that is off."""
    process = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace).start()
    try:
        wait_for(lambda: ("pods", namespace) in listed(process), message="the operator's own pod cache")
        assert not {entry for entry in listed(process) if entry[0] == "pods" and entry[1] != namespace}, \
            listed(process)
    finally:
        process.terminate()
