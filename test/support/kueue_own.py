"""The cluster tfop's own Kueue integration is tested on (test_kueue_own*.py): Kueue v0.19 as released (no TFJob
adapter, its visibility API served) beside a cluster with two kwok nodes of 8 GPUs, labelled and tainted for one
pool; a flavor for that pool and a ClusterQueue `team` of 4 GPUs (one job of two 2-GPU replicas) with its LocalQueue
`queue`; tfop with `kueue.integration` left out (own, the default) watching the namespace, reading queue positions
every second. Before Kueue is installed, tfop's own integration chosen in the config refuses to start, saying why."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster import LocalCluster
from localcluster.addons.kueue import TFJOB_INTEGRATION, Kueue, module_dir
from localcluster.addons.kueue_manifests import release_integrations
from support.crds import crd_established
from support.kueue import CLUSTER_QUEUES, GPU, LOCAL_QUEUES, NODES, RESOURCE_FLAVORS, cluster_queue, flavor, is_true
from support.kueue import local_queue as make_local_queue
from support.operator_process import OperatorProcess
from support.tfjobs import condition, events_about, job_status
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient

CRD_FILE = Path(__file__).resolve().parents[2] / "crd" / "kubeflow.org_tfjobs.yaml"
POOL_LABEL = "tfop.test/gpu-pool"
NAMESPACE_LABEL = ("tfop.test/kueue-own", "on")
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
POSITIONS_EVERY = 1


@dataclass
class Setup:
    client: KubeClient
    namespace: str
    pool: str


def kwok_node(name: str, labels: dict[str, str], gpus: int, taint: dict[str, str] | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                     "labels": {"type": "kwok", "kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", GPU: str(gpus)},
                   "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", GPU: str(gpus)}}}
    if taint is not None:
        node["spec"] = {"taints": [taint]}
    return node


def released_kueue(cluster: LocalCluster) -> Kueue:
    """The cluster's Kueue (KUEUE_VERSION) configured as its release ships: the integrations its Configuration
    enables, which leave out kubeflow.org/tfjob, tfop's kind among its external frameworks, so that its pod
    integration leaves tfop's pods to their owner, and its visibility API served (on loopback). Its integrations'
    webhooks see only the namespaces labelled NAMESPACE_LABEL (the other tests' pods never pass through Kueue)."""
    integrations = release_integrations(module_dir())
    assert TFJOB_INTEGRATION not in integrations, integrations
    return Kueue(cluster, integrations, namespace_labels=dict([NAMESPACE_LABEL]),
                 config_overrides={"integrations": {"externalFrameworks": ["TFJob.v1.kubeflow.org"]}}, visibility=True)


@contextmanager
def own_integration_cluster(directory: Path) -> Iterator[Setup]:
    cluster = LocalCluster(directory, real_nodes=0)
    kueue: Kueue | None = None
    operator: OperatorProcess | None = None
    try:
        cluster.up()
        cluster.kubectl("apply", "-f", str(CRD_FILE))
        wait_for(lambda: crd_established(cluster, "tfjobs.kubeflow.org"), DEADLINE, "the TFJob CRD to be Established")
        config = cluster.directory / "tfop-own-kueue.yaml"
        config.write_text("kueue:\n  integration: own\n")
        early = OperatorProcess(cluster.kubeconfig, cluster.directory / "tfop-early.log", "--config", str(config))
        process = early.start(wait_ready=False).process
        assert process is not None and process.wait(DEADLINE) == 1
        assert "kueue.integration is own, but the apiserver does not serve" in early.log_tail(20), early.log_tail(20)
        kueue = released_kueue(cluster)
        kueue.start()
        namespace = f"own-{uuid.uuid4().hex[:6]}"
        cluster.kubectl("create", "namespace", namespace)
        cluster.kubectl("label", "namespace", namespace, "=".join(NAMESPACE_LABEL))
        client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
        pool = f"{namespace}-pool"
        taint = {"key": POOL_LABEL, "value": pool, "effect": "NoSchedule"}
        for index in range(2):
            client.create(NODES, kwok_node(f"{pool}-{index}", {POOL_LABEL: pool}, 8, taint))
        toleration = {"key": POOL_LABEL, "operator": "Equal", "value": pool, "effect": "NoSchedule"}
        client.create(RESOURCE_FLAVORS, flavor(pool, {POOL_LABEL: pool}, [toleration]))
        client.create(CLUSTER_QUEUES, cluster_queue("team", pool, 4, namespace))
        client.create(LOCAL_QUEUES, make_local_queue("queue", "team"), namespace)
        wait_for(lambda: is_true(client.get(CLUSTER_QUEUES, "team"), "Active"), message="the ClusterQueue to be Active")
        # The integration left out: own is the default, and the start's dry run finds no TFJob adapter in this
        # Kueue. Queue positions read every POSITIONS_EVERY seconds rather than 10, for the tests' waits.
        settings = cluster.directory / "tfop-positions.yaml"
        settings.write_text(f"kueue:\n  positionsEverySeconds: {POSITIONS_EVERY}\n")
        operator = OperatorProcess(cluster.kubeconfig, cluster.directory / "tfop.log", "--namespace", namespace,
                                   "--config", str(settings))
        operator.start()
        assert '"kueue integration"' not in operator.log_tail(200), operator.log_tail(200)
        yield Setup(client, namespace, pool)
    finally:
        if operator is not None:
            operator.terminate()
            print(f"--- tfop log ---\n{operator.log_tail(60)}")
        if kueue is not None:
            print(f"--- kueue log: {kueue.log_file}")
            kueue.stop()
        cluster.destroy()


def suspended(client: KubeClient, namespace: str, job: str) -> dict[str, Any] | None:
    found = condition(client, namespace, job, "Suspended")
    return found if found is not None and found.get("status") == "True" else None


def event_of(client: KubeClient, namespace: str, job: str, reason: str) -> dict[str, Any] | None:
    """The job's latest event of `reason`. Evictions are seen by their EvictedByKueue event: the Suspended
    condition says so only until the pods are gone, which on kwok nodes can be a few milliseconds, too short for a
    poll to see."""
    found = [e for e in events_about(client, namespace, job) if e.get("reason") == reason]
    return max(found, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "", default=None)


def evicted_event(client: KubeClient, namespace: str, job: str) -> dict[str, Any] | None:
    return event_of(client, namespace, job, "EvictedByKueue")


def restarts(client: KubeClient, namespace: str, job: str) -> dict[str, int]:
    return {t: s.get("restarts", 0) for t, s in job_status(client, namespace, job)["replicaStatuses"].items()}


def markdown_table(title: str, header: tuple[str, ...], rows: Sequence[tuple[object, ...]]) -> str:
    """A table as the docs' Kueue page shows it, printed by the scenario that measured it."""
    lines = [f"{title}", "", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
