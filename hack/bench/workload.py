"""The workload: N TFJobs of 1 Chief + 4 Workers + 2 PS created at once, and later every pod ending with exit 0
(the status a kubelet would write; kwok only starts pods)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.timeline import PodSeen
from fake_kubelet import exit_pod
from tfop.controller.children import TFJOBS
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound

REPLICAS = {"Chief": 1, "Worker": 4, "PS": 2}
PODS_PER_JOB = sum(REPLICAS.values())
CHILDREN_PER_JOB = 2 * PODS_PER_JOB  # a Pod and a Service per replica
# tfop's client concurrency: TFJobController's create_concurrency (its creator pool, shared by the workers). The
# bench's own writers use as many threads, so driving the workload never lags behind the fastest contender.
CLIENT_CONCURRENCY = 16
CHIEF_TYPES = ("chief", "master")


def tfjob(name: str) -> dict[str, Any]:
    """Only what a user writes: each operator applies its own defaults (restart policy, ports, clean-up)."""
    return {
        "apiVersion": TFJOBS.api_version, "kind": TFJOBS.kind, "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": {
            replica_type: {"replicas": count, "template": {"spec": {
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0",
                                "command": ["python", "/opt/train/train.py"]}]}}}
            for replica_type, count in REPLICAS.items()}},
    }


def create_jobs(client: KubeClient, namespace: str, count: int,
                on_created: Callable[[dict[str, Any]], None] | None = None) -> dict[str, float]:
    """Create `count` jobs at once (CLIENT_CONCURRENCY in flight); returns job uid -> time.monotonic() when its
    create returned, the moment it exists."""
    created: dict[str, float] = {}

    def create(index: int) -> None:
        job = client.create(TFJOBS, tfjob(f"job-{index:04d}"), namespace)
        created[job["metadata"]["uid"]] = time.monotonic()
        if on_created is not None:
            on_created(job)

    with ThreadPoolExecutor(CLIENT_CONCURRENCY, thread_name_prefix="create-job") as pool:
        list(pool.map(create, range(count)))
    return created


def exit_all(client: KubeClient, namespace: str, pods_by_job: dict[str, list[PodSeen]]) -> int:
    """Every pod exits 0, job by job, each job's chief last (as its training would end); returns how many pods
    were gone already (an operator may clean up once the chief is done)."""
    order = [pod for pods in pods_by_job.values()
             for pod in sorted(pods, key=lambda p: p.replica_type in CHIEF_TYPES)]

    def end(pod: PodSeen) -> bool:
        try:
            exit_pod(client, namespace, pod.name, 0)
            return False
        except NotFound:
            return True

    with ThreadPoolExecutor(CLIENT_CONCURRENCY, thread_name_prefix="exit-pod") as pool:
        return sum(pool.map(end, order))
