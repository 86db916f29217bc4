"""Kueue's objects as the tests write them, what they read back about a job's Workload, and a timeline of jobs.

Spelt out here rather than imported: the tests state the Kueue API they expect (kueue.x-k8s.io/v1beta2, served from
v0.15).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from localcluster import LocalCluster
from support.tfjobs import JOB_NAME_LABEL, TFJOBS, tfjob
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.resource import PODS, Resource

RESOURCE_FLAVORS = Resource("kueue.x-k8s.io", "v1beta2", "resourceflavors", "ResourceFlavor", namespaced=False)
CLUSTER_QUEUES = Resource("kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", namespaced=False)
LOCAL_QUEUES = Resource("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue")
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
PRIORITY_CLASSES = Resource("kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", "WorkloadPriorityClass",
                            namespaced=False)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
GPU = "nvidia.com/gpu"
# The label the session's Kueue (test/integration/conftest.py) serves its TFJob webhooks in namespaces with.
KUEUE_NAMESPACE_LABEL = ("tfop.test/kueue", "on")


def integration_config(directory: Path, integration: str) -> Path:
    """A controller config file choosing the Kueue integration (`kueue`, Kueue's TFJob adapter, or `own`), for
    `tfop run --config`: the tests name the integration they test rather than rely on what the start settles."""
    path = directory / f"tfop-kueue-{integration}.yaml"
    path.write_text(f"kueue:\n  integration: {integration}\n")
    return path


def cover_namespace(cluster: LocalCluster, namespace: str, label: tuple[str, str]) -> None:
    """Labels the namespace for Kueue's webhooks, and waits until the apiserver sends a TFJob there through them
    (it sees the label through its own namespace cache, a moment after the label is written): a dry-run create of
    a TFJob naming a queue comes back suspended."""
    cluster.kubectl("label", "namespace", namespace, "=".join(label))
    probe = tfjob("webhook-probe", Worker={"replicas": 1, "template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "tensorflow/tensorflow"}]}}})
    probe["metadata"]["labels"] = {QUEUE_LABEL: "probe"}

    def suspended_by_kueue() -> bool:
        result = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-n", namespace, "-f", "-",
                                 input=json.dumps(probe))
        return json.loads(result.stdout)["spec"]["runPolicy"].get("suspend") is True

    wait_for(suspended_by_kueue, DEADLINE, f"Kueue's TFJob webhook to see namespace {namespace}", interval=0.3)


def flavor(name: str, node_labels: dict[str, str] | None = None,
           tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_labels:
        spec["nodeLabels"] = node_labels
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": RESOURCE_FLAVORS.api_version, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": spec}


def cluster_queue(name: str, flavor_name: str, gpus: int, namespace: str, preemption: bool = False) -> dict[str, Any]:
    """A ClusterQueue of `gpus` GPUs of one flavor, for one namespace; `preemption`: lower priorities give way."""
    return quota_queue(name, flavor_name, {GPU: str(gpus)}, namespace, preemption)


def quota_queue(name: str, flavor_name: str, quotas: dict[str, str], namespace: str,
                preemption: bool = False) -> dict[str, Any]:
    """A ClusterQueue of one flavor with a nominal quota of each resource named (e.g. {"cpu": "100m"}), for one
    namespace; `preemption`: lower priorities give way."""
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "resourceGroups": [{"coveredResources": list(quotas), "flavors": [
            {"name": flavor_name, "resources": [{"name": resource, "nominalQuota": quota}
                                                for resource, quota in quotas.items()]}]}],
    }
    if preemption:
        spec["preemption"] = {"withinClusterQueue": "LowerPriority"}
    return {"apiVersion": CLUSTER_QUEUES.api_version, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": spec}


def workload_priority_class(name: str, value: int) -> dict[str, Any]:
    """A Kueue WorkloadPriorityClass: the priority of the Workloads of jobs labelled PRIORITY_LABEL: `name`."""
    return {"apiVersion": PRIORITY_CLASSES.api_version, "kind": "WorkloadPriorityClass", "metadata": {"name": name},
            "value": value}


def local_queue(name: str, cluster_queue_name: str) -> dict[str, Any]:
    return {"apiVersion": LOCAL_QUEUES.api_version, "kind": "LocalQueue", "metadata": {"name": name},
            "spec": {"clusterQueue": cluster_queue_name}}


def gpu_replica(gpus: int, replicas: int = 1) -> dict[str, Any]:
    """A replica spec whose tensorflow container asks for `gpus` GPUs (requests and limits, as Kueue counts)."""
    container = {"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0",
                 "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}}}
    return {"replicas": replicas, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [container]}}}


def queued_tfjob(name: str, queue: str, gpus_per_replica: int, priority_class: str | None = None,
                 backoff_limit: int = 0, workers: int = 1) -> dict[str, Any]:
    """A Chief and `workers` Workers of `gpus_per_replica` GPUs each, sent to LocalQueue `queue`. backoffLimit 0: a
    single restart counted against it would fail the job."""
    labels = {QUEUE_LABEL: queue}
    if priority_class:
        labels[PRIORITY_LABEL] = priority_class
    return {"apiVersion": TFJOBS.api_version, "kind": "TFJob", "metadata": {"name": name, "labels": labels},
            "spec": {"runPolicy": {"backoffLimit": backoff_limit},
                     "tfReplicaSpecs": {"Chief": gpu_replica(gpus_per_replica),
                                        "Worker": gpu_replica(gpus_per_replica, workers)}}}


def workload_of(client: KubeClient, namespace: str, job: dict[str, Any]) -> dict[str, Any] | None:
    """The Workload Kueue made for `job` (owned by it), if any yet."""
    items, _ = client.list(WORKLOADS, namespace)
    uid = job["metadata"]["uid"]
    for workload in items:
        if any(owner.get("uid") == uid for owner in workload["metadata"].get("ownerReferences", [])):
            return workload
    return None


def is_true(obj: dict[str, Any] | None, condition_type: str) -> bool:
    if obj is None:
        return False
    return any(c["type"] == condition_type and c["status"] == "True"
               for c in (obj.get("status") or {}).get("conditions", []))


def live_pods(client: KubeClient, namespace: str, job: str) -> list[dict[str, Any]]:
    """The job's pods, terminating ones included: what exists at all."""
    items, _ = client.list(PODS, namespace, label_selector=f"{JOB_NAME_LABEL}={job}")
    return items


def running_pods(client: KubeClient, namespace: str, job: str, count: int) -> list[dict[str, Any]]:
    """Waits until the job has `count` pods, all Running (kwok started them), and returns them."""
    def check() -> list[dict[str, Any]] | None:
        pods = live_pods(client, namespace, job)
        ok = len(pods) == count and all(p.get("status", {}).get("phase") == "Running" for p in pods)
        return pods if ok else None

    pods: list[dict[str, Any]] = wait_for(check, DEADLINE, f"{count} Running pods of {job}", interval=0.2)
    return pods


class Timeline:
    """Polls jobs and their Workloads in a thread and notes, per job, when each fact first turned true and when
    it turned false again (seconds since the timeline started), for the test to print and check the order of."""

    def __init__(self, client: KubeClient, namespace: str, interval: float = 0.2) -> None:
        self.client = client
        self.namespace = namespace
        self.interval = interval
        self.started = time.monotonic()
        self.events: list[tuple[float, str, str]] = []  # (seconds, job, "admitted" / "admitted ended" / ...)
        self._jobs: dict[str, dict[str, Any]] = {}
        self._state: dict[tuple[str, str], bool] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kueue-timeline", daemon=True)
        self._lock = threading.Lock()

    def start(self) -> Timeline:
        self._thread.start()
        return self

    def created(self, job: dict[str, Any]) -> None:
        with self._lock:
            self._jobs[job["metadata"]["name"]] = job
            self.events.append((self.elapsed(), job["metadata"]["name"], "created"))

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(DEADLINE)

    def first(self, job: str, event: str) -> float | None:
        with self._lock:
            return next((at for at, name, what in self.events if name == job and what == event), None)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                jobs = dict(self._jobs)
            for name, job in jobs.items():
                try:
                    facts = self._facts(name, job)
                except Exception:  # noqa: BLE001 - a failed poll only delays a note; the test's own waits judge
                    continue
                with self._lock:
                    for fact, value in facts.items():
                        if self._state.get((name, fact), False) != value:
                            self._state[(name, fact)] = value
                            self.events.append((self.elapsed(), name, fact if value else f"{fact} ended"))

    def _facts(self, name: str, job: dict[str, Any]) -> dict[str, bool]:
        current = self.client.get(TFJOBS, name, self.namespace)
        workload = workload_of(self.client, self.namespace, job)
        return {"workload": workload is not None, "admitted": is_true(workload, "Admitted"),
                "pods": bool(live_pods(self.client, self.namespace, name)),
                "suspended": current["spec"].get("runPolicy", {}).get("suspend") is True,
                "held": is_true(current, "Suspended"),
                "running": is_true(current, "Running"),
                "succeeded": is_true(current, "Succeeded"),
                "workload finished": is_true(workload, "Finished")}

    def table(self) -> str:
        with self._lock:
            return "\n".join(f"{at:7.2f}s  {name:12} {what}" for at, name, what in self.events)

    def rows(self) -> list[tuple[str, str, str]]:
        """(seconds, job, what) of every note, in order, as a markdown table's rows."""
        with self._lock:
            return [(f"{at:.1f}", name, what) for at, name, what in self.events]
