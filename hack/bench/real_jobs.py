"""TensorFlow jobs on the local cluster's real nodes, and what is read of them: pod specs placing replicas on chosen
nodes, the few kubectl reads of a job and its pods, the runtime's and the apiserver's times, and every pod's log of a
job followed while its pods live (a deleted pod's log goes with it). Shared by the e2e tests on real nodes (through
test/support) and the benchmarks that run real TensorFlow (bench.disruptions)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from localcluster import LocalCluster
from localcluster.node_layout import NODE_LABEL
from localcluster.operator_config import tensorflow_image

T = TypeVar("T")
# test/support/waiting.py's DEADLINE and KUBECTL_INTERVAL, which hack/ cannot import (it imports nothing of test/;
# test/unit/test_bench_disruptions.py holds them equal): what one ordinary step of the control plane is given under
# load, and how often a check through kubectl (about 45 ms of CPU) is made.
STEP_DEADLINE = 180.0
KUBECTL_INTERVAL = 1.0


def wait_until(check: Callable[[], T], timeout: float, what: str, interval: float = KUBECTL_INTERVAL) -> T:
    """Poll `check` until it answers something truthy, and return that; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last value: {value!r}")
        time.sleep(interval)
    return value


def tf_pod(script: str, env: dict[str, str], *, node: str | None = None, prefer: str | None = None,
           spread: str | None = None, shared: Path | None = None, grace: int = 5) -> dict[str, Any]:
    """A pod spec running /opt/train/`script` on a real node: pinned to `node`, or preferring `prefer`, or spread
    over the nodes away from the other pods of the TFJob `spread`; `shared` is mounted at /shared."""
    affinity: dict[str, Any] = {}
    if prefer:
        affinity["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
            "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [prefer]}]}}]}
    if spread:
        affinity["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100,
            "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {
                "matchLabels": {"training.kubeflow.org/job-name": spread}}}}]}
    container: dict[str, Any] = {
        "name": "tensorflow", "image": tensorflow_image(), "imagePullPolicy": "Never",
        "command": ["python", f"/opt/train/{script}"], "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": {"requests": {"cpu": "50m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}},
    }
    spec: dict[str, Any] = {
        "nodeSelector": {NODE_LABEL: "true", **({"kubernetes.io/hostname": node} if node else {})},
        "tolerations": [{"key": NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}],
        # Short by default, so a restart together is quick; long enough for a SIGTERM to reach TensorFlow.
        "terminationGracePeriodSeconds": grace,
        "containers": [container],
    }
    if affinity:
        spec["affinity"] = affinity
    if shared:
        spec["volumes"] = [{"name": "shared", "hostPath": {"path": str(shared), "type": "Directory"}}]
        container["volumeMounts"] = [{"name": "shared", "mountPath": "/shared"}]
    return spec


def timestamp(text: str) -> float:
    """An RFC 3339 time (the apiserver's seconds, or the runtime's nanoseconds) as a Unix time."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    seconds = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    return seconds + (float(f"0.{fraction}") if fraction else 0.0)


@dataclass(frozen=True)
class LogLine:
    at: float
    text: str


def started_at(pod: dict[str, Any]) -> float | None:
    """When the pod's tensorflow container started, whether it runs still or has finished since."""
    for status in pod.get("status", {}).get("containerStatuses", []):
        state = status.get("state", {})
        began = (state.get("running") or state.get("terminated") or {}).get("startedAt")
        if status["name"] == "tensorflow" and began:
            return timestamp(began)
    return None


def condition_at(job: dict[str, Any], kind: str) -> float | None:
    for condition in job.get("status", {}).get("conditions", []):
        if condition["type"] == kind and condition["status"] == "True":
            return timestamp(condition["lastTransitionTime"])
    return None


def apply(cluster: LocalCluster, namespace: str, obj: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(obj))


def get(cluster: LocalCluster, namespace: str, kind: str, name: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", kind, name, "-n", namespace, "-o", "json").stdout)  # type: ignore[no-any-return]


def job_pods(cluster: LocalCluster, namespace: str, name: str) -> list[dict[str, Any]]:
    items = json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-o", "json",
                                       "-l", f"training.kubeflow.org/job-name={name}").stdout)["items"]
    return items  # type: ignore[no-any-return]


def story(cluster: LocalCluster, namespace: str) -> str:
    """The namespace's events in order, for an assertion's message: what tfop and the kubelets said happened."""
    return str(cluster.kubectl("get", "events", "-n", namespace, "--sort-by=.lastTimestamp", "-o",
                               "custom-columns=AT:.lastTimestamp,OBJECT:.involvedObject.name,REASON:.reason,"
                               "MESSAGE:.message", check=False).stdout)


class JobLogs:
    """Every pod's tensorflow log of one job, followed (`kubectl logs -f --timestamps`) from the moment its container
    runs: a resize deletes pods, and a deleted pod's log goes with it, so it is read while the pod lives. A container
    restarted in place (its restartCount up) is followed again, its lines appended to its pod's. Lines carry the
    runtime's timestamps. Stopped by close(), or used as a context manager."""

    def __init__(self, cluster: LocalCluster, namespace: str, job: str) -> None:
        self.cluster, self.namespace, self.job = cluster, namespace, job
        self.lines: dict[str, list[LogLine]] = {}
        self.followers: dict[str, subprocess.Popen[str]] = {}
        self.instances: dict[str, tuple[int, int]] = {}  # uid -> (restartCount followed, its first line's index)
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.poller = threading.Thread(target=self._poll, daemon=True)
        self.poller.start()

    def __enter__(self) -> JobLogs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.done.set()
        self.poller.join(timeout=STEP_DEADLINE)
        with self.lock:
            for follower in self.followers.values():
                if follower.poll() is None:
                    follower.terminate()

    def uids(self) -> list[str]:
        """The pods followed so far."""
        with self.lock:
            return list(self.lines)

    def of(self, uid: str) -> list[LogLine]:
        """The pod's lines, of every container instance followed, oldest first."""
        with self.lock:
            return list(self.lines.get(uid, []))

    def _poll(self) -> None:
        while not self.done.wait(KUBECTL_INTERVAL):
            for pod in job_pods(self.cluster, self.namespace, self.job):
                uid, instance = pod["metadata"]["uid"], restart_count(pod)
                with self.lock:
                    following = self.followers.get(uid)
                    followed, first = self.instances.get(uid, (-1, 0))
                    if following is not None and (following.poll() is None or (
                            instance == followed and len(self.lines[uid]) > first)):
                        continue  # followed now, or this instance followed to its end
                if started_at(pod) is None:
                    continue  # `kubectl logs` of a container not started yet fails at once
                self._follow(uid, pod["metadata"]["name"], instance)

    def _follow(self, uid: str, pod: str, instance: int) -> None:
        assert self.cluster.bin_dir is not None, "bin_dir is known once the control plane is built"
        follower = subprocess.Popen(
            [str(self.cluster.bin_dir / "kubectl"), "--kubeconfig", str(self.cluster.kubeconfig), "logs", "-f",
             "--timestamps", "-n", self.namespace, pod, "-c", "tensorflow"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        with self.lock:
            lines = self.lines.setdefault(uid, [])
            followed, first = self.instances.get(uid, (-1, 0))
            if instance == followed:
                del lines[first:]  # a follower of this instance that failed early: its lines are read all again
            else:
                first = len(lines)
            self.instances[uid] = (instance, first)
            self.followers[uid] = follower

        def read() -> None:
            assert follower.stdout is not None
            for raw in follower.stdout:
                when, _, text = raw.rstrip("\n").partition(" ")
                with self.lock:
                    self.lines[uid].append(LogLine(timestamp(when), text))
        threading.Thread(target=read, daemon=True).start()


def restart_count(pod: dict[str, Any]) -> int:
    """How often the pod's tensorflow container has restarted in place."""
    return next((int(s.get("restartCount", 0)) for s in pod.get("status", {}).get("containerStatuses", [])
                 if s["name"] == "tensorflow"), 0)
