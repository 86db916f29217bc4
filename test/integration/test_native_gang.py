"""Kubernetes' own gang scheduling (`--gang-scheduler-name kubernetes`) against the real apiserver and the stock
kube-scheduler, on the gang tests' kwok node of 8 GPUs: what tfop does depends on what the cluster serves, and
each test checks the side this cluster is on. From 1.37 (the local cluster turns the Workload API on there,
hack/localcluster/feature_gates.py): one of two 6-GPU jobs runs whole while no pod of the other is ever bound,
then the other runs whole; a suspended job's PodGroup goes and comes back; a resize moves minCount. Before 1.37:
the operator names what the cluster lacks and no pod is made."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from localcluster.feature_gates import WORKLOAD_API_SINCE, minor
from support.gang import bound, gpu_replica, pods_of, running
from support.namespaces import exists
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, condition, job_status, pods_by_name
from support.waiting import DEADLINE, consistently, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound
from tfop.kube.resource import PODS, Resource

GROUPS = Resource("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup")
GATE = "--gang-scheduler-name"


@pytest.fixture(scope="module")
def serves_the_api(cluster: LocalCluster) -> bool:
    """Whether this cluster serves PodGroups of scheduling.k8s.io/v1beta1: asked, and checked against its version."""
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    try:
        served = any(entry.get("name") == "podgroups"
                     for entry in client.request("GET", "/apis/scheduling.k8s.io/v1beta1").get("resources", ()))
    except NotFound:
        served = False
    version = client.request("GET", "/version")["gitVersion"]
    print(f"the cluster runs {version}; PodGroups of scheduling.k8s.io/v1beta1 served: {served}")
    assert served == (minor(version) >= WORKLOAD_API_SINCE), "the local cluster turns the API on from 1.37 exactly"
    return served


def six_gpu_job(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"tfReplicaSpecs": {"Worker": gpu_replica(node, 3), "PS": gpu_replica(node, 3)}}}


def running_message(client: KubeClient, namespace: str, name: str) -> str:
    """The message of the job's Running condition, True or not."""
    entry: dict[str, Any] = next(
        (c for c in job_status(client, namespace, name).get("conditions", []) if c["type"] == "Running"), {})
    return str(entry.get("message", ""))


def waits_for_the_api(client: KubeClient, namespace: str, node: str, process: OperatorProcess) -> None:
    """The side of a cluster without the API: said at start and in the job, and nothing made."""
    wait_for(lambda: process.get("/readyz")[0] == 500 and "GenericWorkload" in process.get("/readyz")[1],
             message="/readyz to name the missing API and its gate")
    client.create(TFJOBS, six_gpu_job("waiting", node), namespace)
    wait_for(lambda: "does not serve PodGroup scheduling.k8s.io/v1beta1 (Kubernetes 1.37 or later"
             in running_message(client, namespace, "waiting"), DEADLINE, "the job's status to name what is missing")
    consistently(lambda: not pods_of(client, namespace, "waiting"), 2, "no pod without the API")


def test_one_job_runs_whole_while_no_pod_of_the_other_is_bound_then_the_other(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, gang_node: str,
        serves_the_api: bool, operators: Callable[..., OperatorProcess]) -> None:
    process = operators(GATE, "kubernetes").start(wait_ready=serves_the_api)
    if not serves_the_api:
        waits_for_the_api(kube_client, namespace, gang_node, process)
        return
    for job in ("job-a", "job-b"):
        kube_client.create(TFJOBS, six_gpu_job(job, gang_node), namespace)
    wait_for(lambda: all(len(pods_of(kube_client, namespace, job)) == 6 for job in ("job-a", "job-b")), DEADLINE,
             "both jobs' 6 pods to exist")
    for job in ("job-a", "job-b"):
        group = kube_client.get(GROUPS, job, namespace)
        assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 6}}
        assert group["metadata"]["ownerReferences"][0]["name"] == job
        for pod in pods_of(kube_client, namespace, job):
            assert pod["spec"]["schedulingGroup"] == {"podGroupName": job}

    def whole() -> str | None:
        return next((job for job in ("job-a", "job-b") if running(pods_of(kube_client, namespace, job)) == 6), None)

    first = wait_for(whole, DEADLINE, "one job to run whole")
    second = "job-b" if first == "job-a" else "job-a"
    consistently(lambda: bound(pods_of(kube_client, namespace, second)) == 0, 15, f"no pod of {second} bound",
                 interval=0.5)
    said = kube_client.get(GROUPS, second, namespace).get("status", {}).get("conditions", [])
    print(f"{second}'s PodGroup conditions while it waits: {said}")
    wait_for(lambda: job_status(kube_client, namespace, second).get("podGroupPhase") == "Unschedulable", DEADLINE,
             f"{second}'s status to show its PodGroup Unschedulable")
    assert job_status(kube_client, namespace, first).get("podGroupPhase") == "Scheduled"

    worker_0 = next(name for name in pods_by_name(kube_client, namespace, first) if "-worker-" in name
                    and name.endswith("-0"))
    exit_pod(kube_client, namespace, worker_0, 0)
    wait_for(lambda: (condition(kube_client, namespace, first, "Succeeded") or {}).get("status") == "True", DEADLINE,
             f"{first} to succeed")
    wait_for(lambda: not exists(kube_client, GROUPS, first, namespace), DEADLINE, f"{first}'s PodGroup to go")
    wait_for(lambda: running(pods_of(kube_client, namespace, second)) == 6, DEADLINE, f"{second} to run whole")


def test_suspend_and_resize_keep_the_group_in_step(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, gang_node: str,
        serves_the_api: bool, operators: Callable[..., OperatorProcess]) -> None:
    process = operators(GATE, "kubernetes").start(wait_ready=serves_the_api)
    if not serves_the_api:
        waits_for_the_api(kube_client, namespace, gang_node, process)
        return
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "elastic"},
           "spec": {"enableDynamicWorker": True, "tfReplicaSpecs": {"Worker": gpu_replica(gang_node, 2)}}}
    kube_client.create(TFJOBS, job, namespace)
    wait_for(lambda: running(pods_of(kube_client, namespace, "elastic")) == 2, DEADLINE, "both workers to run")

    def min_count() -> int:
        return int(kube_client.get(GROUPS, "elastic", namespace)["spec"]["schedulingPolicy"]["gang"]["minCount"])

    assert min_count() == 2
    kube_client.patch(TFJOBS, "elastic", {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 3}}}}, namespace)
    wait_for(lambda: min_count() == 3, DEADLINE, "minCount to follow the Worker count up")
    wait_for(lambda: running(pods_of(kube_client, namespace, "elastic")) == 3, DEADLINE, "the third worker to run")
    first_uid = kube_client.get(GROUPS, "elastic", namespace)["metadata"]["uid"]

    kube_client.patch(TFJOBS, "elastic", {"spec": {"runPolicy": {"suspend": True}}}, namespace)
    wait_for(lambda: not pods_of(kube_client, namespace, "elastic"), DEADLINE, "the pods to go")
    wait_for(lambda: not exists(kube_client, GROUPS, "elastic", namespace), DEADLINE,
             "the PodGroup to go (its protection finalizer lets it once no pod names it)")
    kube_client.patch(TFJOBS, "elastic", {"spec": {"runPolicy": {"suspend": False},
                                                   "tfReplicaSpecs": {"Worker": {"replicas": 1}}}}, namespace)
    wait_for(lambda: running(pods_of(kube_client, namespace, "elastic")) == 1, DEADLINE, "the one worker to run")
    group = kube_client.get(GROUPS, "elastic", namespace)
    assert group["metadata"]["uid"] != first_uid
    assert min_count() == 1
    assert all(pod["spec"]["schedulingGroup"] == {"podGroupName": "elastic"}
               for pod in kube_client.list(PODS, namespace)[0] if pod["metadata"]["name"].startswith("elastic-"))
