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
from collections.abc import Iterator

import pytest

from fake_kubelet import exit_pod
from support.multikueue import EXAMPLES, MULTIKUEUE, Side, condition_true, multikueue_pair, workload_finished
from support.tfjobs import TFJOBS, children, events_about, job_status, pods_by_name
from support.waiting import DEADLINE, wait_for
from tfop import yamlio
from tfop.kube.errors import NotFound
from tfop.kube.resource import PODS, SERVICES


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side, str]]:
    """The pair of support/multikueue.py, queued by Kueue's TFJob adapter."""
    with multikueue_pair(tmp_path_factory, "kueue") as sides:
        yield sides


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
