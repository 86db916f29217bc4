"""What finished stays finished, on the real control plane with kwok nodes: a replica that exited 0 is never made
again when its pod is deleted (as the pod garbage collector past --terminated-pod-gc-threshold, or a user, does),
whenever in its finish the delete comes, the operator killed meanwhile; and a deleted job leaves no pod held by
tfop's finalizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.namespaces import TRACKING_FINALIZER
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, condition, create_job, job_status, pods_by_name, replica
from support.waiting import wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound
from tfop.kube.resource import PODS


def worker_status(client: KubeClient, namespace: str, job: str) -> dict[str, Any]:
    entry: dict[str, Any] = job_status(client, namespace, job).get("replicaStatuses", {}).get("Worker", {})
    return entry


def held(client: KubeClient, namespace: str, pod: str) -> bool | None:
    """Whether the pod holds tfop's finalizer; None once it is gone."""
    try:
        found = client.get(PODS, pod, namespace)
    except NotFound:
        return None
    return TRACKING_FINALIZER in (found["metadata"].get("finalizers") or ())


class ChiefAnd3:
    """A Chief + 3 Workers job, and the names of its pods."""

    def __init__(self, client: KubeClient, namespace: str, name: str, policy: str) -> None:
        self.client, self.namespace, self.name = client, namespace, name
        create_job(client, namespace, name, Chief=replica(restart_policy=policy),
                   Worker=replica(3, restart_policy=policy))
        rid = wait_for(lambda: job_status(client, namespace, name).get("runtimeId"), message="runtimeId")
        self.chief = f"{name}-chief-{rid}-0"
        self.workers = [f"{name}-worker-{rid}-{index}" for index in range(3)]

    def wait_running(self) -> None:
        wait_for(lambda: len(pods_by_name(self.client, self.namespace, self.name)) == 4, message="4 pods")
        wait_for(lambda: condition(self.client, self.namespace, self.name, "Running"), message="Running")

    def uid(self, pod: str) -> str:
        return str(self.client.get(PODS, pod, self.namespace)["metadata"]["uid"])

    def delete_and_wait_gone(self, pod: str) -> None:
        self.client.delete(PODS, pod, self.namespace)
        wait_for(lambda: held(self.client, self.namespace, pod) is None, message=f"{pod} gone")

    def finish_and_check(self, gone: str) -> None:
        """Worker 0 exits 0: the status that records it comes from a pass that saw the deleted pod `gone` go (one
        watch, in order), the pass that made it again before; then the rest exit 0 and the job succeeds, its tally
        counting every worker."""
        exit_pod(self.client, self.namespace, self.workers[0], 0)
        wait_for(lambda: worker_status(self.client, self.namespace, self.name).get("succeeded") == 2,
                 message="Worker succeeded: 2 (worker 0, and worker 1 whose pod is gone)")
        assert gone not in pods_by_name(self.client, self.namespace, self.name), "the finished worker was made again"
        assert worker_status(self.client, self.namespace, self.name).get("succeededIndexes") == "0-1"
        exit_pod(self.client, self.namespace, self.workers[2], 0)
        exit_pod(self.client, self.namespace, self.chief, 0)
        wait_for(lambda: condition(self.client, self.namespace, self.name, "Succeeded"), message="Succeeded")
        final = worker_status(self.client, self.namespace, self.name)
        assert (final["succeeded"], final["succeededIndexes"]) == (3, "0-2")


@pytest.mark.parametrize("policy", ["OnFailure", "ExitCode"])
def test_a_finished_workers_pod_deleted_is_not_made_again(kube_client: KubeClient, namespace: str,
                                                          operator: OperatorProcess, policy: str) -> None:
    """The user's scenario: worker 1 exits 0 while the chief runs; its pod is deleted once tfop has recorded it
    and released the pod (the pod GC's case)."""
    job = ChiefAnd3(kube_client, namespace, "gc", policy)
    job.wait_running()
    exit_pod(kube_client, namespace, job.workers[1], 0)
    wait_for(lambda: worker_status(kube_client, namespace, "gc").get("succeeded") == 1, message="Worker succeeded: 1")
    # Once its end is stored tfop lets the pod go: nothing holds it any more.
    wait_for(lambda: held(kube_client, namespace, job.workers[1]) is False, message="worker 1's pod released")
    job.delete_and_wait_gone(job.workers[1])
    job.finish_and_check(job.workers[1])
    assert "not made again" in operator.job_story(namespace, "gc")
    _, metrics = operator.get("/metrics")
    assert f'tf_operator_finished_replica_pods_gone_total{{job_namespace="{namespace}"}} 1.0' in metrics


def test_deleted_before_its_end_is_written_with_the_operator_killed(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, tmp_path: Path) -> None:
    """The operator is killed (SIGKILL) before worker 1 ends, so nothing can write its end; the pod is deleted
    meanwhile and waits, held by the finalizer; the next operator records it, then releases it."""
    log = tmp_path / "operator.log"
    first = OperatorProcess(cluster.kubeconfig, log, "--namespace", namespace).start()
    job = ChiefAnd3(kube_client, namespace, "crash", "ExitCode")
    job.wait_running()
    first.kill()
    exit_pod(kube_client, namespace, job.workers[1], 0)
    kube_client.delete(PODS, job.workers[1], namespace)
    pod = kube_client.get(PODS, job.workers[1], namespace)
    assert pod["metadata"].get("deletionTimestamp") and held(kube_client, namespace, job.workers[1]) is True
    assert "succeededIndexes" not in worker_status(kube_client, namespace, "crash")
    second = OperatorProcess(cluster.kubeconfig, log, "--namespace", namespace).start()
    try:
        wait_for(lambda: held(kube_client, namespace, job.workers[1]) is None, message="worker 1's pod gone")
        assert worker_status(kube_client, namespace, "crash")["succeededIndexes"] == "1"
        job.finish_and_check(job.workers[1])
    finally:
        second.terminate()
        print(f"--- operator log ---\n{log.read_text()[-5000:]}")


def test_deleted_after_its_end_is_written_before_the_release(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, tmp_path: Path) -> None:
    """The state an operator stopped between its status write and the release leaves (the end recorded, the
    pod still held), made by putting the finalizer back with the operator killed: the deleted pod waits, and the
    next operator only releases it."""
    log = tmp_path / "operator.log"
    first = OperatorProcess(cluster.kubeconfig, log, "--namespace", namespace).start()
    job = ChiefAnd3(kube_client, namespace, "window", "OnFailure")
    job.wait_running()
    exit_pod(kube_client, namespace, job.workers[1], 0)
    wait_for(lambda: held(kube_client, namespace, job.workers[1]) is False, message="worker 1 recorded, released")
    first.kill()
    uid = job.uid(job.workers[1])
    kube_client.patch(PODS, job.workers[1], {"metadata": {"finalizers": [TRACKING_FINALIZER]}}, namespace)
    kube_client.delete(PODS, job.workers[1], namespace, uid=uid)
    assert held(kube_client, namespace, job.workers[1]) is True
    second = OperatorProcess(cluster.kubeconfig, log, "--namespace", namespace).start()
    try:
        wait_for(lambda: held(kube_client, namespace, job.workers[1]) is None, message="worker 1's pod gone")
        job.finish_and_check(job.workers[1])
    finally:
        second.terminate()
        print(f"--- operator log ---\n{log.read_text()[-5000:]}")


@pytest.mark.parametrize("propagation", ["Background", "Foreground", "Orphan"])
def test_a_deleted_job_leaves_no_pod_held(kube_client: KubeClient, namespace: str, operator: OperatorProcess,
                                          propagation: str) -> None:
    """Whichever way the job goes, its pods (one ended, the others running) can go: the garbage collector
    deletes them, or (orphaned) whoever deletes them later."""
    job = ChiefAnd3(kube_client, namespace, "bye", "ExitCode")
    job.wait_running()
    exit_pod(kube_client, namespace, job.workers[1], 0)
    wait_for(lambda: worker_status(kube_client, namespace, "bye").get("succeededIndexes") == "1",
             message="worker 1's end recorded")
    kube_client.delete(TFJOBS, "bye", namespace, propagation_policy=propagation)
    names = [job.chief, *job.workers]
    if propagation == "Orphan":
        wait_for(lambda: all(held(kube_client, namespace, pod) is False for pod in names),
                 message="the orphaned pods released")
        for pod in names:
            kube_client.delete(PODS, pod, namespace)
    wait_for(lambda: all(held(kube_client, namespace, pod) is None for pod in names), message="every pod gone")
    wait_for(lambda: not _exists(kube_client, namespace, "bye"), message="the job gone")


def _exists(client: KubeClient, namespace: str, name: str) -> bool:
    try:
        client.get(TFJOBS, name, namespace)
    except NotFound:
        return False
    return True
