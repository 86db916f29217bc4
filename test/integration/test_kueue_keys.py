"""Replica keys under real Kueue (v0.19, its TFJob integration enabled): its TFJob integration looks replica types up by
their TitleCase keys only, so a `worker` key is left out of the job's Workload, and Kueue would admit the job on a quota
that does not count those pods. tfop refuses such a queued job (InvalidSpec, naming the key) before it creates a single
pod."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster
from support.kueue import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    QUEUE_LABEL,
    RESOURCE_FLAVORS,
    integration_config,
    is_true,
    live_pods,
    workload_of,
)
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, condition
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient


def cpu_replica(replicas: int) -> dict[str, Any]:
    return {"replicas": replicas, "restartPolicy": "Never", "template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0",
         "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]}}}


@pytest.fixture
def cpu_queue(kube_client: KubeClient, kueue_namespace: str) -> Iterator[str]:
    """A LocalQueue in the test's namespace on a ClusterQueue of 8 CPUs; the cluster-scoped parts go afterwards."""
    name = f"keys-{uuid.uuid4().hex[:6]}"
    kube_client.create(RESOURCE_FLAVORS, {"apiVersion": RESOURCE_FLAVORS.api_version, "kind": "ResourceFlavor",
                                          "metadata": {"name": name}})
    kube_client.create(CLUSTER_QUEUES, {
        "apiVersion": CLUSTER_QUEUES.api_version, "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": name, "resources": [{"name": "cpu", "nominalQuota": "8"}]}]}]}})
    kube_client.create(LOCAL_QUEUES, {"apiVersion": LOCAL_QUEUES.api_version, "kind": "LocalQueue",
                                      "metadata": {"name": name}, "spec": {"clusterQueue": name}}, kueue_namespace)
    yield name
    kube_client.delete(LOCAL_QUEUES, name, kueue_namespace)
    kube_client.delete(CLUSTER_QUEUES, name)
    kube_client.delete(RESOURCE_FLAVORS, name)


def test_kueue_counts_only_titlecase_keys_and_tfop_refuses_the_others(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, kueue_namespace: str, cpu_queue: str,
        tmp_path: Path) -> None:
    namespace = kueue_namespace
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": {"name": "mixed", "labels": {QUEUE_LABEL: cpu_queue}},
           "spec": {"tfReplicaSpecs": {"Chief": cpu_replica(1), "worker": cpu_replica(2)}}}
    created = kube_client.create(TFJOBS, job, namespace)
    assert created["spec"]["runPolicy"]["suspend"] is True  # Kueue's webhook holds it for the queue

    # Before tfop runs: what Kueue alone makes of the job. Its Workload has the Chief's pod set only, and it is
    # admitted on 1 CPU although the job's three pods would take 3.
    workload = wait_for(lambda: workload_of(kube_client, namespace, created), DEADLINE, "Kueue's Workload for the job")
    assert [(pod_set["name"], pod_set["count"]) for pod_set in workload["spec"]["podSets"]] == [("chief", 1)]
    wait_for(lambda: is_true(workload_of(kube_client, namespace, created), "Admitted"), DEADLINE, "Kueue to admit it")
    # Kueue unsuspends the job once its Workload is admitted: a moment after the condition, not with it.
    wait_for(lambda: kube_client.get(TFJOBS, "mixed", namespace)["spec"]["runPolicy"]["suspend"] is False, DEADLINE,
             "Kueue to unsuspend the admitted job")

    operator = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace, "--config",
                               str(integration_config(tmp_path, "kueue"))).start()
    try:
        failed = wait_for(lambda: condition(kube_client, namespace, "mixed", "Failed"),
                          message="tfop to refuse the job")
    finally:
        operator.terminate()
    assert failed["reason"] == "InvalidSpec"
    assert ("spec.tfReplicaSpecs[worker]: must be spelt Worker in a job queued by Kueue (label "
            f"kueue.x-k8s.io/queue-name={cpu_queue})") in failed["message"]
    assert live_pods(kube_client, namespace, "mixed") == []
    wait_for(lambda: is_true(workload_of(kube_client, namespace, created), "Finished"), DEADLINE,
             "Kueue to finish the Workload of the failed job, releasing its quota")
