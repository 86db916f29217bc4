"""MultiKueue across two local clusters, each with its own apiserver, kwok nodes, Kueue and tfop: a TFJob sent to
the manager cluster runs on the worker cluster only, and the manager's copy shows the worker's status.

The manager's Kueue has an AdmissionCheck of controller kueue.x-k8s.io/multikueue whose MultiKueueConfig names one
MultiKueueCluster, reached through a Secret holding the worker's kubeconfig. Its TFJob webhook sets
runPolicy.managedBy to kueue.x-k8s.io/multikueue on a job whose queue uses that check; MultiKueue then creates the
job on the worker without managedBy (so the worker's tfop runs it) and copies its status back. The manager's tfop
must never touch its copy.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from localcluster.addons.kueue import Kueue
from support.crds import crd_established
from support.kueue import integration_config
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, children, events_about, job_status, pods_by_name
from support.waiting import DEADLINE, wait_for
from tfop import yamlio
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound
from tfop.kube.resource import PODS, SERVICES, Resource

REPO = Path(__file__).resolve().parents[2]
CRD_FILE = REPO / "crd" / "kubeflow.org_tfjobs.yaml"
EXAMPLES = REPO / "examples" / "multikueue"  # docs/scheduling/multikueue.md applies the same files
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
MULTIKUEUE_CLUSTERS = Resource("kueue.x-k8s.io", "v1beta2", "multikueueclusters", "MultiKueueCluster",
                               namespaced=False)
MULTIKUEUE = "kueue.x-k8s.io/multikueue"


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


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side, str]]:
    """A manager and a worker cluster (kwok nodes only, beside the session's cluster), Kueue on both, MultiKueue
    set up on the manager, tfop on both watching one namespace that exists on both."""
    sides: list[Side] = []
    namespace = f"multikueue-{uuid.uuid4().hex[:6]}"
    try:
        for name in ("manager", "worker"):
            cluster = LocalCluster(tmp_path_factory.mktemp(name), real_nodes=0)
            cluster.up()
            cluster.kubectl("apply", "-f", str(CRD_FILE))
            wait_for(lambda c=cluster: crd_established(c, "tfjobs.kubeflow.org"), DEADLINE, f"the {name}'s TFJob CRD")
            overrides = {"multiKueue": {"gcInterval": "5s", "origin": "tfop-manager"}} if name == "manager" else {}
            side = Side(name, cluster, Kueue(cluster, config_overrides=overrides),
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
                 "the MultiKueueCluster to connect to the worker cluster")
        for side in sides:
            side.cluster.kubectl("wait", "--for=condition=Active", f"--timeout={DEADLINE:.0f}s", "clusterqueue/team",
                                 timeout=DEADLINE + 60)
            side.operator = OperatorProcess(side.cluster.kubeconfig, side.cluster.directory / "tfop.log",
                                            "--namespace", namespace, "--config",
                                            str(integration_config(side.cluster.directory, "kueue"))).start()
        yield manager, worker, namespace
    finally:
        for side in sides:
            if side.operator is not None:
                side.operator.terminate()
                print(f"--- {side.name}'s tfop log ---\n{side.operator.log_tail(40)}")
            side.kueue.stop()
            side.cluster.destroy()


def workload_finished(client: KubeClient, namespace: str) -> bool:
    items, _ = client.list(WORKLOADS, namespace)
    return bool(items) and all(condition_true(item, "Finished") for item in items)


def test_a_job_sent_to_the_manager_runs_on_the_worker_only(pair: tuple[Side, Side, str]) -> None:
    manager, worker, namespace = pair
    started = time.monotonic()
    timeline: list[str] = []

    def note(what: str) -> None:
        timeline.append(f"{time.monotonic() - started:6.2f}s {what}")

    created = manager.client.create(TFJOBS, yamlio.load((EXAMPLES / "tfjob.yaml").read_text()), namespace)
    note("created on the manager")
    assert created["spec"]["runPolicy"]["managedBy"] == MULTIKUEUE, "Kueue's webhook hands the job to MultiKueue"

    pods = wait_for(lambda: len(pods_by_name(worker.client, namespace, "dist")) == 3 and pods_by_name(
        worker.client, namespace, "dist"), DEADLINE, "the job's three pods on the worker cluster")
    note("3 pods on the worker")
    remote = worker.client.get(TFJOBS, "dist", namespace)
    assert remote["spec"].get("runPolicy", {}).get("managedBy") is None  # cleared by MultiKueue: tfop's to run
    wait_for(lambda: condition_true(worker.client.get(TFJOBS, "dist", namespace), "Running"), DEADLINE,
             "the worker's tfop to see every replica run")
    note("Running on the worker")
    wait_for(lambda: condition_true(manager.client.get(TFJOBS, "dist", namespace), "Running"), DEADLINE,
             "MultiKueue to copy the Running condition to the manager")
    note("Running on the manager")

    chief = next(name for name in pods if "-chief-" in name)
    exit_pod(worker.client, namespace, chief, 0)
    note("chief exited 0 on the worker")
    wait_for(lambda: condition_true(manager.client.get(TFJOBS, "dist", namespace), "Succeeded"), DEADLINE,
             "the manager's copy to show the worker's Succeeded")
    note("Succeeded on the manager")
    wait_for(lambda: workload_finished(manager.client, namespace), DEADLINE, "the manager's Workload to finish")
    note("manager's Workload Finished")

    def remote_gone() -> bool:
        try:
            worker.client.get(TFJOBS, "dist", namespace)
        except NotFound:
            return True
        return False

    wait_for(remote_gone, DEADLINE, "MultiKueue to delete the worker's copy once the job finished")
    note("worker's copy deleted by MultiKueue")
    print("MultiKueue timeline:\n" + "\n".join(timeline), file=sys.stderr)

    mirrored = job_status(manager.client, namespace, "dist")
    print(f"the manager's copy's status: {json.dumps(mirrored, sort_keys=True)}", file=sys.stderr)
    succeeded = next(c for c in mirrored["conditions"] if c["type"] == "Succeeded")
    assert succeeded["reason"] == "TFJobSucceeded" and succeeded["message"].startswith(f"TFJob {namespace}/dist")
    assert mirrored["replicaStatuses"]["Chief"]["succeeded"] == 1
    # The manager's tfop never touched its copy: nothing made, nothing said.
    assert children(manager.client, PODS, namespace, "dist") == []
    assert children(manager.client, SERVICES, namespace, "dist") == []
    tfop_events = [event for event in events_about(manager.client, namespace, "dist")
                   if event.get("reportingComponent") == "tfop"
                   or (event.get("source") or {}).get("component") == "tfop"]
    assert tfop_events == []
    assert manager.operator is not None
    lines = [json.loads(line) for line in manager.operator.log_path.read_text().splitlines()
             if line.startswith("{") and f"{namespace}/dist" in line]
    assert [line["event"] for line in lines] == ["job managed by another controller: leaving it alone"], lines
