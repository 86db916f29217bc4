"""A job's Worker count changed while it runs, against the real control plane (kwok runs the pods): by restart,
every replica is replaced together with the new TF_CONFIG; in place (enableDynamicWorker), workers are only added
and removed while the others run on. Neither counts as a restart, and each resize is told by an event."""

from __future__ import annotations

import json
from typing import Any

from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, create_job, events_about, job_status, pods_by_name, replica, tfjob
from support.waiting import wait_for
from tfop.kube.client import KubeClient

RESIZER = "resize-test"  # the field manager of the tests' resizes, which the Resized event names


def scale(client: KubeClient, namespace: str, name: str, workers: int) -> None:
    client.patch(TFJOBS, name, {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers}}}}, namespace,
                 field_manager=RESIZER)


def running_pods(client: KubeClient, namespace: str, job: str, count: int) -> dict[str, dict[str, Any]]:
    """The job's pods once exactly `count` of them exist, every one Running and none being deleted."""
    def settled() -> dict[str, dict[str, Any]] | None:
        pods = pods_by_name(client, namespace, job)
        ready = len(pods) == count and all(
            p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
            for p in pods.values())
        return pods if ready else None
    return wait_for(settled, message=f"{count} running pods of {job}")


def uids(pods: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {name: pod["metadata"]["uid"] for name, pod in pods.items()}


def tf_config(pod: dict[str, Any]) -> dict[str, Any]:
    tensorflow = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
    return dict(json.loads(next(e["value"] for e in tensorflow["env"] if e["name"] == "TF_CONFIG")))


def resized_events(client: KubeClient, namespace: str, job: str, count: int) -> list[str]:
    return list(wait_for(lambda: len(messages := [e["message"] for e in events_about(client, namespace, job)
                                                   if e["reason"] == "Resized"]) >= count and messages,
                         message=f"{count} Resized event(s) of {job}"))


def restarts(client: KubeClient, namespace: str, job: str) -> dict[str, int]:
    return {replica_type: entry.get("restarts", 0)
            for replica_type, entry in job_status(client, namespace, job)["replicaStatuses"].items()}


def planned_for(client: KubeClient, namespace: str, job: str, workers: int) -> None:
    """Until the status says the pods are planned for `workers`, a new count is the job's first, not a resize."""
    wait_for(lambda: job_status(client, namespace, job).get("workerReplicas") == workers,
             message=f"{job}'s status to record {workers} workers")


def test_a_resize_by_restart_replaces_every_replica_together_with_the_new_tf_config(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    create_job(kube_client, namespace, "mwms", Worker=replica(2), PS=replica())
    before = uids(running_pods(kube_client, namespace, "mwms", 3))
    planned_for(kube_client, namespace, "mwms", 2)
    scale(kube_client, namespace, "mwms", 3)
    after = running_pods(kube_client, namespace, "mwms", 4)
    assert not set(before.values()) & set(uids(after).values()), "every replica of the old size is replaced"
    for pod in after.values():
        assert len(tf_config(pod)["cluster"]["worker"]) == 3, pod["metadata"]["name"]
        assert pod["metadata"]["annotations"]["tfop.kubeflow.org/tf-cluster"] == "Worker=3,PS=1"
    assert resized_events(kube_client, namespace, "mwms", 1) == [(
        f"TFJob {namespace}/mwms: Worker 2 -> 3, asked by {RESIZER} (an update of the spec); "
        "every replica stops gracefully and starts again together with the new TF_CONFIG.")]
    status = job_status(kube_client, namespace, "mwms")
    assert (status["workerReplicas"], status["lastResize"]["cause"], status["lastResize"]["strategy"]) == (
        3, "User", "Restart")
    assert restarts(kube_client, namespace, "mwms") == {"Worker": 0, "PS": 0}


def test_a_resize_in_place_adds_and_removes_workers_while_the_chief_and_ps_run_on(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    job = tfjob("async", Chief=replica(), Worker=replica(2), PS=replica())
    job["spec"]["enableDynamicWorker"] = True
    kube_client.create(TFJOBS, job, namespace)
    first = uids(running_pods(kube_client, namespace, "async", 4))
    planned_for(kube_client, namespace, "async", 2)
    scale(kube_client, namespace, "async", 4)
    grown = running_pods(kube_client, namespace, "async", 6)
    planned_for(kube_client, namespace, "async", 4)
    assert first.items() <= uids(grown).items(), "the replicas already running are untouched"
    scale(kube_client, namespace, "async", 1)
    shrunk = running_pods(kube_client, namespace, "async", 3)
    kept = {name for name in first if "-worker-" not in name or name.endswith("-0")}
    assert uids(shrunk) == {name: first[name] for name in kept}
    for name, pod in shrunk.items():
        if "-worker-" in name:
            assert tf_config(pod)["cluster"]["worker"] == {"0": f"{name}.{namespace}.svc:2222"}
    assert sorted(message.split(", asked by")[0] for message in resized_events(kube_client, namespace, "async", 2)) == [
        f"TFJob {namespace}/async: Worker 2 -> 4", f"TFJob {namespace}/async: Worker 4 -> 1"]
    assert restarts(kube_client, namespace, "async") == {"Chief": 0, "Worker": 0, "PS": 0}
    assert not any(c["type"] == "Failed" and c["status"] == "True"
                   for c in job_status(kube_client, namespace, "async")["conditions"])
