"""TFJobs whose pods run on the local cluster's real node, the few kubectl reads the tests make of them (apply, get,
job_pods and story kept in hack/bench/real_jobs.py, which a benchmark on real TensorFlow shares), and a scenario's
namespace with a tfop of its own watching it."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.real_jobs import apply as apply
from bench.real_jobs import get as get
from bench.real_jobs import job_pods as job_pods
from bench.real_jobs import story as story
from localcluster import LocalCluster
from localcluster.node_layout import NODE_LABEL
from localcluster.operator_config import write as write_operator_config
from support.namespaces import make_namespace, release_tracked_pods
from support.operator_process import OperatorProcess
from support.waiting import DEADLINE
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError
from tfop.kube.resource import NAMESPACES


def on_real_node(spec: dict[str, Any]) -> dict[str, Any]:
    """A pod spec that asks for the real node: its label, and a toleration of its taint."""
    return {**spec, "nodeSelector": {NODE_LABEL: "true"},
            "tolerations": [{"key": NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}]}


def shell_container(image: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": "tensorflow", "image": image, "imagePullPolicy": "Never", "command": ["sh", "-c", script],
            **extra}


def tfjob(name: str, replicas: dict[str, dict[str, Any]], backoff_limit: int = 3) -> dict[str, Any]:
    """replicas: type -> {"restartPolicy": ..., "spec": pod spec}; every pod is put on the real node."""
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
        "spec": {"runPolicy": {"backoffLimit": backoff_limit, "cleanPodPolicy": "None"},
                 "tfReplicaSpecs": {kind: {"replicas": 1, "restartPolicy": r["restartPolicy"],
                                           "template": {"spec": on_real_node(r["spec"])}}
                                    for kind, r in replicas.items()}},
    }


@contextlib.contextmanager
def scenario_namespace(cluster: LocalCluster, base: str, logs: Path) -> Iterator[tuple[str, OperatorProcess]]:
    """A namespace of its own and a tfop watching it; afterwards tfop is stopped, the finalizers it keeps on pods
    are let go, and the namespace goes."""
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    namespace = f"{base}-{uuid.uuid4().hex[:6]}"
    make_namespace(client, namespace)
    tfop = OperatorProcess(cluster.kubeconfig, logs / "tfop.log", "--namespace", namespace,
                           "--config", str(write_operator_config(cluster.directory))).start()
    try:
        yield namespace, tfop
    finally:
        tfop.kill()
        with contextlib.suppress(ApiError):
            release_tracked_pods(client, namespace)
            client.delete(NAMESPACES, namespace)


def wait_for_condition(cluster: LocalCluster, namespace: str, name: str, wanted: set[str],
                       timeout: float = DEADLINE) -> dict[str, Any]:
    """Waits until one of the `wanted` condition types is True on the TFJob; returns the job."""
    deadline = time.monotonic() + timeout
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = get(cluster, namespace, "tfjob", name)
        true = {c["type"] for c in job.get("status", {}).get("conditions", []) if c["status"] == "True"}
        if true & wanted:
            return job
        time.sleep(1.0)  # a kubectl run costs about 45 ms of CPU; jobs on real nodes take tens of seconds
    raise AssertionError(f"TFJob {name} reached none of {wanted} in {timeout:.0f}s; status: "
                         f"{json.dumps(job.get('status'), indent=1)}")


def dns_denials(cluster: LocalCluster, namespace: str, lines: int = 40) -> str:
    """The last of the cluster DNS's logged denials and errors (NXDOMAIN, SERVFAIL) of the namespace's names: when
    a replica could not find a peer, whether the name was missing or the DNS failed."""
    log = cluster.log_file("coredns")
    found = [line for line in log.read_text(errors="replace").splitlines() if f".{namespace}." in line] \
        if log.exists() else []
    return "\n".join(found[-lines:]) or "(none)"


def pods_now(cluster: LocalCluster, namespace: str) -> str:
    """One line of what the namespace's pods are doing, for a failed wait's message, which CI shows little more of
    than its first line: each pod's phase and node, whether it is being deleted, why the scheduler found no node
    for it, and why a container waits or ended; then any real node that is not Ready or is tainted."""
    pods = json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-o", "json", check=False).stdout
                      or '{"items": []}')["items"]
    seen = []
    for pod in sorted(pods, key=lambda pod: pod["metadata"]["name"]):
        status = pod.get("status", {})
        facts = [status.get("phase", "?"), pod["spec"].get("nodeName") or "unbound"]
        if pod["metadata"].get("deletionTimestamp"):
            facts.append("deleting")
        facts += [f"unscheduled: {condition.get('message', condition.get('reason', ''))}"
                  for condition in status.get("conditions", [])
                  if condition["type"] == "PodScheduled" and condition["status"] == "False"]
        facts += [f"{state} {detail.get('reason', '')} {detail.get('exitCode', '')}".strip()
                  for container in status.get("containerStatuses", [])
                  for state, detail in container.get("state", {}).items() if state != "running"]
        seen.append(f"{pod['metadata']['name']} {', '.join(facts)}")
    nodes = json.loads(cluster.kubectl("get", "nodes", "-l", f"{NODE_LABEL}=true", "-o", "json",
                                       check=False).stdout or '{"items": []}')["items"]
    for node in nodes:
        ready = next((c["status"] for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"), "?")
        taints = [t["key"] for t in node["spec"].get("taints", []) if t["key"] != NODE_LABEL]
        if ready != "True" or taints or node["spec"].get("unschedulable"):
            seen.append(f"node {node['metadata']['name']} Ready={ready} taints={taints} "
                        f"cordoned={bool(node['spec'].get('unschedulable'))}")
    return "pods: " + "; ".join(seen)
