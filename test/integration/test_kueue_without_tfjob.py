"""Real Kueue (v0.19) with its TFJob integration off, as Kueue's releases from mid-2026 ship it: a TFJob that names
a queue is not held. A release's manifests still register the TFJob webhooks, which a disabled integration answers
without changing anything, so the job is stored as written (not suspended), no Workload is made, and tfop runs it
at once; tfop says so in the Created condition and with a NotQueuedByKueue Warning.

A cluster of its own (kwok nodes only): the session's Kueue, with the integration on, serves the shared cluster.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from localcluster import LocalCluster
from localcluster.addons.kueue import TFJOB_INTEGRATION, Kueue
from support.crds import crd_established
from support.kueue import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    cluster_queue,
    flavor,
    integration_config,
    is_true,
    live_pods,
    local_queue,
    queued_tfjob,
)
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, condition, events_about
from support.waiting import DEADLINE, consistently, wait_for
from tfop.kube.client import KubeClient

CRD_FILE = Path(__file__).resolve().parents[2] / "crd" / "kubeflow.org_tfjobs.yaml"


@dataclass
class Setup:
    cluster: LocalCluster
    client: KubeClient
    namespace: str


@pytest.fixture(scope="module")
def without_integration(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    """A cluster with Kueue running only batch/job but serving every TFJob webhook a release installs, a queue of
    8 GPUs, and tfop watching one namespace."""
    cluster = LocalCluster(tmp_path_factory.mktemp("nokueuetf"), real_nodes=0)
    kueue: Kueue | None = None
    operator: OperatorProcess | None = None
    try:
        cluster.up()
        cluster.kubectl("apply", "-f", str(CRD_FILE))
        wait_for(lambda: crd_established(cluster, "tfjobs.kubeflow.org"), DEADLINE, "the TFJob CRD to be Established")
        kueue = Kueue(cluster, integrations=["batch/job"], webhook_integrations=["batch/job", TFJOB_INTEGRATION])
        kueue.start()
        namespace = f"unqueued-{uuid.uuid4().hex[:6]}"
        cluster.kubectl("create", "namespace", namespace)
        client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
        client.create(RESOURCE_FLAVORS, flavor("gpu"))
        client.create(CLUSTER_QUEUES, cluster_queue("team", "gpu", 8, namespace))
        client.create(LOCAL_QUEUES, local_queue("queue", "team"), namespace)
        wait_for(lambda: is_true(client.get(CLUSTER_QUEUES, "team"), "Active"), message="the ClusterQueue to be Active")
        operator = OperatorProcess(cluster.kubeconfig, cluster.directory / "tfop.log", "--namespace", namespace,
                                   "--config", str(integration_config(cluster.directory, "kueue")))
        operator.start()
        yield Setup(cluster, client, namespace)
    finally:
        if operator is not None:
            operator.terminate()
            print(f"--- tfop log ---\n{operator.log_tail(40)}")
        if kueue is not None:
            kueue.stop()
        cluster.destroy()


def test_a_queued_job_runs_unqueued_and_tfop_says_so(without_integration: Setup) -> None:
    cluster, client, ns = without_integration.cluster, without_integration.client, without_integration.namespace
    webhooks = json.loads(cluster.kubectl("get", "mutatingwebhookconfiguration",
                                          "kueue-mutating-webhook-configuration", "-o", "json").stdout)["webhooks"]
    assert any("tfjobs" in rule["resources"] for webhook in webhooks for rule in webhook["rules"]), \
        "the TFJob webhook is registered, so the create goes through Kueue"

    created = client.create(TFJOBS, queued_tfjob("unqueued", "queue", gpus_per_replica=1), ns)
    print(f"stored runPolicy: {created['spec']['runPolicy']}")
    assert created["spec"]["runPolicy"].get("suspend") is not True, "Kueue's webhook did not suspend it"
    wait_for(lambda: len(live_pods(client, ns, "unqueued")) == 2, DEADLINE, "tfop to create both pods at once")

    events = wait_for(lambda: [e for e in events_about(client, ns, "unqueued") if e.get("reason") ==
                               "NotQueuedByKueue"], DEADLINE, "a NotQueuedByKueue event")
    print(f"event: {events[0]['type']} {events[0]['reason']}: {events[0]['message']}")
    assert events[0]["type"] == "Warning"
    created_condition = condition(client, ns, "unqueued", "Created") or {}
    print(f"Created condition: {created_condition.get('message')}")
    assert "runs unqueued: it names the Kueue queue queue" in str(created_condition.get("message"))
    assert "kubeflow.org/tfjob integration" in str(created_condition.get("message"))
    # Kueue does not account for it: no Workload ever appears, and the job stays unsuspended.
    consistently(lambda: not client.list(WORKLOADS, ns)[0]
                 and client.get(TFJOBS, "unqueued", ns)["spec"]["runPolicy"].get("suspend") is not True, 10,
                 "no Workload for the job, and the job never suspended")
