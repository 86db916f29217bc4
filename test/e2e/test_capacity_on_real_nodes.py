"""The capacity auto-scaler on the local cluster's two real nodes, with real TensorFlow: elastic job A, asynchronous
PS training resized in place (examples/train_ps_dynamic.py, min 1, max 4 workers), grows to fill both nodes; job B
arrives and does not fit; A shrinks within the window, B runs and ends, and A grows again. The chief and the PS
run on untouched throughout, and nothing counts as a failure or a restart.

Each worker's CPU request is sized from what the nodes have left when the test starts, so that two of A's workers
fill a node: A's four need both nodes, and B's two need what two of A's workers hold.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster
from localcluster.node_layout import NODE_LABEL
from localcluster.operator_config import write as write_operator_config
from support.node_loss import tf_pod
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, get, job_pods, on_real_node, pods_now, shell_container, story
from support.waiting import KUBECTL_INTERVAL, wait_for
from tfop.controller.capacity.model import pod_request, quantities

WINDOWS = {"enabled": True, "growAfterSeconds": 5, "shrinkAfterSeconds": 5, "giveUpAfterSeconds": 60,
           "checkEverySeconds": 1}


@pytest.fixture
def operator(real_node: LocalCluster, tfjob_crd: Path, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    """tfop with the local cluster's config and the capacity auto-scaler on, with short windows."""
    config = tmp_path / "tfop-config.yaml"
    config.write_text(write_operator_config(real_node.directory).read_text()
                      + f"capacityScaling: {json.dumps(WINDOWS)}\n")
    process = OperatorProcess(real_node.kubeconfig, tmp_path / "tfop.log", "--namespace", namespace,
                              "--config", str(config)).start()
    yield process
    process.kill()


def settled(cluster: LocalCluster) -> bool:
    """No pod on a real node is being deleted and no namespace is: what an earlier test left is gone, so the room
    measured now is the room the test has throughout."""
    pods = json.loads(cluster.kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
    namespaces = json.loads(cluster.kubectl("get", "namespaces", "-o", "json").stdout)["items"]
    real = {node["metadata"]["name"] for node in json.loads(
        cluster.kubectl("get", "nodes", "-l", f"{NODE_LABEL}=true", "-o", "json").stdout)["items"]}
    return (not any(pod["metadata"].get("deletionTimestamp") and pod["spec"].get("nodeName") in real for pod in pods)
            and not any(ns.get("status", {}).get("phase") == "Terminating" for ns in namespaces))


def cpu_left(cluster: LocalCluster) -> Fraction:
    """The least CPU any real node has left: its allocatable minus the requests of the pods bound to it."""
    nodes = json.loads(cluster.kubectl("get", "nodes", "-l", f"{NODE_LABEL}=true", "-o", "json").stdout)["items"]
    pods = json.loads(cluster.kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
    left = []
    for node in nodes:
        used = sum((pod_request(pod["spec"]).get("cpu", Fraction(0)) for pod in pods
                    if pod["spec"].get("nodeName") == node["metadata"]["name"]
                    and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")), Fraction(0))
        left.append(quantities(node["status"]["allocatable"])["cpu"] - used)
    assert len(left) == 2, nodes
    return min(left)


def with_cpu(spec: dict[str, Any], millis: int) -> dict[str, Any]:
    container = spec["containers"][0]
    container["resources"] = {"requests": {"cpu": f"{millis}m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}}
    return spec


def workers(cluster: LocalCluster, namespace: str, job: str) -> int:
    return int(get(cluster, namespace, "tfjob", job)["spec"]["tfReplicaSpecs"]["Worker"]["replicas"])


def running(cluster: LocalCluster, namespace: str, job: str, replica_type: str = "worker") -> dict[str, Any]:
    return {pod["metadata"]["labels"]["training.kubeflow.org/replica-index"]: pod
            for pod in job_pods(cluster, namespace, job)
            if pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] == replica_type
            and pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")}


def test_an_elastic_ps_job_fills_two_nodes_shrinks_for_a_job_that_does_not_fit_and_grows_back(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, busybox: str) -> None:
    cluster = real_node
    wait_for(lambda: settled(cluster), message="the pods and namespaces of earlier tests to be gone",
             interval=KUBECTL_INTERVAL)
    # Two workers and the chief and PS (50m each) on one node, with a margin: a third worker does not fit.
    worker_millis = int((cpu_left(cluster) * 1000 - 200) // 2)
    assert worker_millis >= 300, f"the real nodes have too little CPU left: {cpu_left(cluster)}"
    small = tf_pod("train_ps_dynamic.py", {"STEPS": "100000", "STEP_SECONDS": "1"}, grace=15)
    big = with_cpu(tf_pod("train_ps_dynamic.py", {"STEPS": "100000", "STEP_SECONDS": "1"}, grace=15), worker_millis)
    a = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "a"}, "spec": {
        "enableDynamicWorker": True, "elasticPolicy": {"minReplicas": 1, "maxReplicas": 4},
        "runPolicy": {"backoffLimit": 3, "cleanPodPolicy": "All"},
        "tfReplicaSpecs": {kind: {"replicas": 1, "restartPolicy": "ExitCode", "template": {"spec": spec}}
                           for kind, spec in (("Chief", small), ("PS", small), ("Worker", big))}}}
    start = time.time()
    timeline: list[str] = []

    def mark(what: str) -> None:
        timeline.append(f"| {time.time() - start:4.0f} s | {what} |")

    def explain() -> str:
        """The timeline so far, the pods and the scaler's last words: why a wait did not end."""
        said = [line for line in operator.log_path.read_text(errors="replace").splitlines() if "capacity" in line]
        return f"timeline: {' '.join(timeline)}; {pods_now(cluster, namespace)}; scaler: {' | '.join(said[-4:])}"

    apply(cluster, namespace, a)
    mark(f"A created: 1 worker of {worker_millis}m CPU (min 1, max 4)")
    wait_for(lambda: workers(cluster, namespace, "a") == 4, message="A to grow to 4 workers",
             interval=KUBECTL_INTERVAL, explain=explain)
    mark("A grown to 4 workers")
    grown = wait_for(lambda: (r := running(cluster, namespace, "a")) and len(r) == 4 and r,
                     message="A's 4 workers running", interval=KUBECTL_INTERVAL, explain=explain)
    mark(f"A's 4 workers running, on {sorted({p['spec']['nodeName'] for p in grown.values()})}")
    assert len({pod["spec"]["nodeName"] for pod in grown.values()}) == 2, "A's 4 workers need both nodes"
    kept = {kind: running(cluster, namespace, "a", kind)["0"]["metadata"]["uid"] for kind in ("chief", "ps")}

    sleeper = with_cpu(on_real_node({"containers": [shell_container(busybox, "sleep 20")],
                                     "terminationGracePeriodSeconds": 1}), worker_millis)
    apply(cluster, namespace, {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "b"}, "spec": {
        "runPolicy": {"cleanPodPolicy": "None"},
        "tfReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "Never", "template": {"spec": sleeper}}}}})
    mark(f"B created: 2 workers of {worker_millis}m CPU, no room")
    wait_for(lambda: workers(cluster, namespace, "a") == 2, message="A to shrink to 2 for B",
             interval=KUBECTL_INTERVAL, explain=explain)
    mark("A shrunk to 2 workers")
    wait_for(lambda: len(running(cluster, namespace, "b")) == 2, message="B's workers running",
             interval=KUBECTL_INTERVAL, explain=explain)
    mark("B running")
    wait_for(lambda: any(c["type"] == "Succeeded" and c["status"] == "True"
                         for c in get(cluster, namespace, "tfjob", "b").get("status", {}).get("conditions", [])),
             message="B to succeed", interval=KUBECTL_INTERVAL, explain=explain)
    mark("B succeeded")
    wait_for(lambda: workers(cluster, namespace, "a") == 4, message="A to grow back to 4 workers",
             interval=KUBECTL_INTERVAL, explain=explain)
    mark("A grown back to 4 workers")
    wait_for(lambda: len(running(cluster, namespace, "a")) == 4, message="A's 4 workers running again",
             interval=KUBECTL_INTERVAL, explain=explain)
    mark("A's 4 workers running again")
    print("\n" + "\n".join(timeline))

    job = get(cluster, namespace, "tfjob", "a")
    told = [line.strip() for line in cluster.kubectl(
        "get", "events", "-n", namespace, "--field-selector", "reason=Resized,involvedObject.name=a",
        "--sort-by=.lastTimestamp", "-o", "custom-columns=MESSAGE:.message", "--no-headers").stdout.splitlines()]
    print("\n".join(told))
    assert [line.split(", asked by")[0] for line in told] == [
        f"TFJob {namespace}/a: Worker {x} -> {y}" for x, y in ((1, 4), (4, 2), (2, 4))], story(cluster, namespace)
    assert all("asked by the capacity auto-scaler" in line for line in told), told
    assert f"{namespace}/b's pods waited" in told[1] and " s for cpu)" in told[1], told
    # Nothing of it is a failure: no restart counted, no Failed condition, the chief and PS never replaced.
    assert job["status"]["replicaStatuses"]["Worker"].get("restarts", 0) == 0, job["status"]
    assert job["status"]["replicaStatuses"]["Worker"].get("failed", 0) == 0, job["status"]
    assert not any(c["type"] == "Failed" and c["status"] == "True" for c in job["status"]["conditions"]), job["status"]
    for kind, uid in kept.items():
        pod = running(cluster, namespace, "a", kind)["0"]
        assert pod["metadata"]["uid"] == uid and all(s["restartCount"] == 0
                                                     for s in pod["status"]["containerStatuses"]), (kind, pod["status"])
    assert job["status"]["lastResize"]["cause"] == "Capacity", job["status"]["lastResize"]
