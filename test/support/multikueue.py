"""Two local clusters set up for MultiKueue as docs/scheduling/multikueue.md says (test_multikueue*.py): a manager
and a worker, each with its own apiserver, kwok nodes, Kueue v0.19 and tfop watching one namespace that exists on
both; the manager's Kueue has an AdmissionCheck of controller kueue.x-k8s.io/multikueue whose MultiKueueConfig
names the worker, reached through a Secret holding the worker's kubeconfig.

Two Kueue configurations, one per tfop integration (`kueue.integration`):
- `kueue`: Kueue's TFJob adapter (kubeflow.org/tfjob among its frameworks) queues the jobs; its webhook hands a
  queued job to MultiKueue through spec.runPolicy.managedBy.
- `own`: Kueue's shipped frameworks (no kubeflow.org/tfjob; on the manager, those whose kinds the clusters serve),
  the TFJob kind named as an external framework both
  to the job framework (integrations.externalFrameworks) and to MultiKueue's generic adapter
  (multiKueue.externalFrameworks, feature gate MultiKueueAdaptersForCustomJobs); tfop makes the Workloads, and the
  user hands a job to MultiKueue through spec.managedBy.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster
from localcluster.addons.kueue import TFJOB_INTEGRATION, Kueue, module_dir
from localcluster.addons.kueue_manifests import integration_resource, release_integrations
from localcluster.addons.process import tail
from support.crds import crd_established
from support.kueue import integration_config
from support.operator_process import OperatorProcess
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound
from tfop.kube.resource import Resource

REPO = Path(__file__).resolve().parents[2]
CRD_FILE = REPO / "crd" / "kubeflow.org_tfjobs.yaml"
EXAMPLES = REPO / "examples" / "multikueue"  # docs/scheduling/multikueue.md applies the same files
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
MULTIKUEUE_CLUSTERS = Resource("kueue.x-k8s.io", "v1beta2", "multikueueclusters", "MultiKueueCluster",
                               namespaced=False)
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
TFJOB_KIND = "TFJob.v1.kubeflow.org"  # Kueue's `Kind.version.group` spelling of an external framework


@dataclass
class Side:
    """One cluster of the pair, with its Kueue, its tfop and a client."""

    name: str
    cluster: LocalCluster
    kueue: Kueue
    client: KubeClient
    operator: OperatorProcess | None = None


def apply_example(side: Side, name: str, namespace: str) -> None:
    side.cluster.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / name))


def condition_true(obj: dict[str, Any] | None, condition_type: str) -> bool:
    return any(c.get("type") == condition_type and c.get("status") == "True"
               for c in ((obj or {}).get("status") or {}).get("conditions", []))


def get_or_none(client: KubeClient, resource: Resource, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        return client.get(resource, name, namespace)
    except NotFound:
        return None


def kueue_of(cluster: LocalCluster, integration: str, manager: bool) -> Kueue:
    """The cluster's Kueue as the integration needs it (see the module's docstring); the manager's collects
    finished jobs' remote objects every 5 s and names its origin."""
    multikueue: dict[str, Any] = {"gcInterval": "5s", "origin": "tfop-manager"} if manager else {}
    if integration == "kueue":
        return Kueue(cluster, config_overrides={"multiKueue": multikueue} if manager else {})
    integrations = release_integrations(module_dir())
    assert TFJOB_INTEGRATION not in integrations, integrations
    if manager:
        integrations = served(cluster, integrations)
    return Kueue(cluster, integrations, config_overrides={
        "integrations": {"externalFrameworks": [TFJOB_KIND]},
        "multiKueue": {**multikueue, "externalFrameworks": [{"name": TFJOB_KIND}]},
        "featureGates": {"MultiKueueAdaptersForCustomJobs": True}})


def served(cluster: LocalCluster, integrations: list[str]) -> list[str]:
    """The integrations whose kind the cluster serves. MultiKueue connects to a worker only once it watches there
    every kind of the manager's integrations it can dispatch (Kueue v0.19.0, multikueuecluster.go,
    updateConfigAndRefreshWatchers): the release's list names JobSet, Ray, MPIJob... whose CRDs a bare cluster
    lacks. The two clusters serve the same kinds, so the manager's own answer is the worker's."""
    names = set(cluster.kubectl("api-resources", "-o", "name").stdout.split())
    kept = []
    for integration in integrations:
        group, resource = integration_resource(integration)
        if (f"{resource}.{group}" if group else resource) in names:
            kept.append(integration)
    return kept


@contextmanager
def multikueue_pair(tmp_path_factory: pytest.TempPathFactory, integration: str) -> Iterator[tuple[Side, Side, str]]:
    """(manager, worker, namespace), both clusters kwok nodes only, beside the session's cluster, with tfop's
    `integration` on both."""
    sides: list[Side] = []
    namespace = f"multikueue-{uuid.uuid4().hex[:6]}"
    try:
        for name in ("manager", "worker"):
            cluster = LocalCluster(tmp_path_factory.mktemp(name), real_nodes=0)
            cluster.up()
            cluster.kubectl("apply", "-f", str(CRD_FILE))
            wait_for(lambda c=cluster: crd_established(c, "tfjobs.kubeflow.org"), DEADLINE, f"the {name}'s TFJob CRD")
            side = Side(name, cluster, kueue_of(cluster, integration, name == "manager"),
                        KubeClient.from_kubeconfig(str(cluster.kubeconfig)))
            sides.append(side)
            side.kueue.start()
            cluster.kubectl("create", "namespace", namespace)
        manager, worker = sides
        apply_example(worker, "worker.yaml", namespace)
        # As docs/scheduling/multikueue.md says to: the worker's kubeconfig with its files inlined (MultiKueue refuses
        # file paths).
        kubeconfig = worker.cluster.kubectl("config", "view", "--flatten", "--raw").stdout
        manager.cluster.kubectl("create", "secret", "generic", "worker-kubeconfig", "-n", "kueue-system",
                                "--from-file=kubeconfig=/dev/stdin", input=kubeconfig)
        apply_example(manager, "manager.yaml", namespace)
        wait_for(lambda: condition_true(manager.client.get(MULTIKUEUE_CLUSTERS, "worker"), "Active"), DEADLINE,
                 "the MultiKueueCluster to connect to the worker cluster",
                 explain=lambda: str(manager.client.get(MULTIKUEUE_CLUSTERS, "worker").get("status") or {}))
        for side in sides:
            side.cluster.kubectl("wait", "--for=condition=Active", f"--timeout={DEADLINE:.0f}s", "clusterqueue/team",
                                 timeout=DEADLINE + 60)
            side.operator = OperatorProcess(side.cluster.kubeconfig, side.cluster.directory / "tfop.log",
                                            "--namespace", namespace, "--config",
                                            str(integration_config(side.cluster.directory, integration))).start()
        yield manager, worker, namespace
    finally:
        for side in sides:
            if side.operator is not None:
                side.operator.terminate()
                print(f"--- {side.name}'s tfop log ---\n{side.operator.log_tail(40)}")
            print(f"--- {side.name}'s kueue log ---\n{tail(side.kueue.log_file)}")
            side.kueue.stop()
            side.cluster.destroy()


def workload_finished(client: KubeClient, namespace: str) -> bool:
    items, _ = client.list(WORKLOADS, namespace)
    return bool(items) and all(condition_true(item, "Finished") for item in items)
