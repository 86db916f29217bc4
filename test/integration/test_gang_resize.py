"""Resizing a gang-scheduled job against the real co-scheduler (scheduler-plugins v0.32.7's Coscheduling) on the
gang tests' kwok node of 8 GPUs: the PodGroup follows the job's size, so no pod is left waiting for a group
that no longer fits the job, and pods the scheduler parked as unschedulable are placed as soon as their group's
minMember is lowered, not after the scheduler's 5-minute flush of its unschedulable pods."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster
from localcluster.addons.coscheduler import CoScheduler
from support.gang import GPU, PLUGIN_GROUPS, bound, gpu_replica, pods_of, running
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, condition, job_status
from support.waiting import DEADLINE, consistently, wait_for
from tfop.kube.client import KubeClient

# The scheduler's own flush of its unschedulable pods (podMaxInUnschedulablePodsDuration): a pod parked this long
# is tried again whatever changed. The minMember is lowered PARKED_FOR after the pods are seen parked (looked for
# every 0.1 s), so no flush comes sooner than FLUSH - PARKED_FOR after it: pods placed within the suite's DEADLINE
# of it were placed by the group's update, not the flush, and a loaded machine still has the whole deadline.
FLUSH = 300.0
PARKED_FOR = 15.0
assert DEADLINE < FLUSH - PARKED_FOR, "a placement within the wait could be the flush's"
TF_CLUSTER = "tfop.kubeflow.org/tf-cluster"


def gang_job(name: str, node: str, workers: int, *, gpus: int = 1, ps: int = 0, dynamic: bool = False,
             min_available: int | None = None) -> dict[str, Any]:
    replicas = {"Worker": gpu_replica(node, workers, gpus=gpus)}
    if ps:
        replicas["PS"] = gpu_replica(node, ps)
    spec: dict[str, Any] = {"tfReplicaSpecs": replicas}
    if dynamic:
        spec["enableDynamicWorker"] = True
    if min_available is not None:
        spec["runPolicy"] = {"schedulingPolicy": {"minAvailable": min_available}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": spec}


def group_spec(client: KubeClient, namespace: str, job: str) -> dict[str, Any]:
    return dict(client.get(PLUGIN_GROUPS, job, namespace)["spec"])


def all_running(client: KubeClient, namespace: str, job: str, count: int,
                made_for: str | None = None) -> list[dict[str, Any]] | None:
    """The job's pods once exactly `count` exist (none being deleted) and every one runs; `made_for`: and each was
    made for that size (its tf-cluster annotation: the pods of a restart's new size, not the old ones it has not
    deleted yet)."""
    pods = pods_of(client, namespace, job)
    fit = made_for is None or all(pod["metadata"]["annotations"].get(TF_CLUSTER) == made_for for pod in pods)
    return pods if len(pods) == count and running(pods) == count and fit else None


def parked(client: KubeClient, namespace: str, job: str, count: int) -> bool:
    """Whether the job's `count` pods all exist and the co-scheduler has tried and refused every one."""
    pods = pods_of(client, namespace, job)
    return len(pods) == count and all(
        any(c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable"
            for c in pod.get("status", {}).get("conditions", [])) for pod in pods)


def scale(cluster: LocalCluster, namespace: str, job: str, workers: int) -> None:
    cluster.kubectl("scale", f"tfjob/{job}", f"--replicas={workers}", "-n", namespace)


@pytest.mark.parametrize("strategy", ["restart", "in-place"])
def test_a_resize_moves_the_pod_group_with_the_job_and_every_pod_is_placed(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, gang_node: str,
        coscheduler: CoScheduler, operators: Callable[..., OperatorProcess], strategy: str) -> None:
    """Up 2 -> 4 and down 4 -> 1, by an edit of the spec (restart) or `kubectl scale` (in place): after each, the
    group asks for exactly the job's pods and every one of them is placed and runs."""
    client = kube_client
    operators("--gang-scheduler-name", "scheduler-plugins").start()
    client.create(TFJOBS, gang_job("elastic", gang_node, 2, ps=1, dynamic=strategy == "in-place"), namespace)
    wait_for(lambda: all_running(client, namespace, "elastic", 3), message="2 workers and the PS to run")
    assert group_spec(client, namespace, "elastic") == {"minMember": 3, "minResources": {GPU: "3"}}
    wait_for(lambda: job_status(client, namespace, "elastic").get("workerReplicas") == 2,
             message="the status to record 2 workers")

    for workers in (4, 1):
        if strategy == "restart":
            client.patch(TFJOBS, "elastic", {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers}}}},
                         namespace)
        else:
            scale(cluster, namespace, "elastic", workers)
        size = f"Worker={workers},PS=1" if strategy == "restart" else "PS=1"
        pods = wait_for(lambda w=workers, k=size: all_running(
            client, namespace, "elastic", w + 1, made_for=k), message=f"{workers} workers and the PS to run")
        assert bound(pods) == workers + 1
        # The group was patched before the pass deleted the pods of the old size or made those of the new one.
        assert group_spec(client, namespace, "elastic") == {"minMember": workers + 1,
                                                           "minResources": {GPU: str(workers + 1)}}
        wait_for(lambda w=workers: job_status(client, namespace, "elastic").get("workerReplicas") == w,
                 message=f"the status to record {workers} workers")
    statuses = job_status(client, namespace, "elastic")["replicaStatuses"]
    assert {t: s.get("restarts", 0) for t, s in statuses.items()} == {"Worker": 0, "PS": 0}
    assert condition(client, namespace, "elastic", "Failed") is None


def wait_parked_then_time_placement(client: KubeClient, namespace: str, job: str, pods: int,
                                    lower: Callable[[], None], placed: int) -> tuple[float, float]:
    """Waits until the co-scheduler has parked the job's `pods`, and stays so (its per-pod backoff, 1 to 10 s, is
    over: they sit in its unschedulable queue); then calls `lower` and waits until `placed` pods are bound.
    Returns the seconds from `lower` to the group's new minMember being stored, and to the pods being bound."""
    wait_for(lambda: parked(client, namespace, job, pods), message=f"the co-scheduler to refuse {job}'s {pods} pods")
    before = group_spec(client, namespace, job)["minMember"]
    consistently(lambda: bound(pods_of(client, namespace, job)) == 0, PARKED_FOR, f"no pod of {job} placed")
    started = time.monotonic()
    lower()
    wait_for(lambda: group_spec(client, namespace, job)["minMember"] != before, message="the group's new minMember",
             interval=0.05)
    patched = time.monotonic() - started
    wait_for(lambda: bound(pods_of(client, namespace, job)) == placed, DEADLINE,
             f"{placed} pods of {job} placed after the group's minMember was lowered", interval=0.05)
    return patched, time.monotonic() - started


def test_pods_parked_for_too_high_a_min_available_are_placed_once_it_is_lowered(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, gang_node: str,
        coscheduler: CoScheduler, operators: Callable[..., OperatorProcess]) -> None:
    """The Go operator's SDK test: minAvailable above the job's pod count parks them (the co-scheduler's PreFilter:
    not enough sibling pods), and lowering it lets them run, in that test only after 360 s."""
    client = kube_client
    operators("--gang-scheduler-name", "scheduler-plugins").start()
    client.create(TFJOBS, gang_job("sdk", gang_node, 3, min_available=10), namespace)

    def lower() -> None:
        client.patch(TFJOBS, "sdk", {"spec": {"runPolicy": {"schedulingPolicy": {"minAvailable": 1}}}}, namespace)

    patched, placed = wait_parked_then_time_placement(client, namespace, "sdk", 3, lower, 3)
    print(f"minAvailable 10 -> 1: group patched after {patched:.2f} s, 3 pods bound after {placed:.2f} s")
    assert group_spec(client, namespace, "sdk")["minMember"] == 1
    wait_for(lambda: all_running(client, namespace, "sdk", 3), message="the 3 workers to run")


def test_a_gang_that_does_not_fit_runs_once_scaled_down_to_what_fits(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, gang_node: str,
        coscheduler: CoScheduler, operators: Callable[..., OperatorProcess]) -> None:
    """4 workers of 3 GPUs (12) on the one node of 8 they tolerate are parked whole: each round of the co-scheduler,
    the pod that no longer fits fails the node filters and its plugin rejects the gang's waiting pods. `kubectl
    scale` to 2 (6 GPUs) lowers the group's minMember and minResources, and the 2 are placed: made again, since
    the scheduler tries a parked pod again on the group's update only if the co-scheduler's plugin refused it
    last, and one the node filters refused last would wait for an unrelated event or the 5-minute flush."""
    client = kube_client
    operators("--gang-scheduler-name", "scheduler-plugins").start()
    client.create(TFJOBS, gang_job("big", gang_node, 4, gpus=3, dynamic=True), namespace)
    wait_for(lambda: job_status(client, namespace, "big").get("workerReplicas") == 4,
             message="the status to record 4 workers")
    parked_uids = {pod["metadata"]["uid"] for pod in pods_of(client, namespace, "big")}
    patched, placed = wait_parked_then_time_placement(
        client, namespace, "big", 4, lambda: scale(cluster, namespace, "big", 2), 2)
    print(f"kubectl scale 4 -> 2: group patched after {patched:.2f} s, 2 pods bound after {placed:.2f} s")
    assert group_spec(client, namespace, "big") == {"minMember": 2, "minResources": {GPU: "6"}}
    pods = wait_for(lambda: all_running(client, namespace, "big", 2), message="the 2 workers to run")
    assert sorted(pod["metadata"]["name"].rsplit("-", 1)[1] for pod in pods) == ["0", "1"]
    assert not parked_uids & {pod["metadata"]["uid"] for pod in pods}, "workers 0 and 1 were not made again"
    statuses = job_status(client, namespace, "big")["replicaStatuses"]
    assert statuses["Worker"].get("restarts", 0) == 0  # made again for the resize: no restart
