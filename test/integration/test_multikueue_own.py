"""MultiKueue with tfop's own Kueue integration, across two local clusters with Kueue v0.19 as released (no TFJob
adapter; the TFJob kind an external framework to Kueue and to MultiKueue's generic adapter, support/multikueue.py):
a TFJob sent to the manager with spec.managedBy kueue.x-k8s.io/multikueue gets its Workload from the manager's
tfop and nothing else there; MultiKueue sends it to the worker, whose tfop adopts the Workload MultiKueue made for
the copy and runs it; the worker's status reaches the manager whole, the job succeeds there, and MultiKueue deletes
the worker's copy.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fake_kubelet import exit_pod
from support.kueue import workload_of
from support.kueue_own import markdown_table
from support.multikueue import (
    EXAMPLES,
    MULTIKUEUE,
    WORKLOADS,
    Side,
    condition_true,
    get_or_none,
    multikueue_pair,
)
from support.tfjobs import TFJOBS, children, events_about, job_status, pods_by_name
from support.waiting import DEADLINE, wait_for
from tfop import yamlio
from tfop.api.runtime_id import runtime_id
from tfop.kube.resource import PODS, SERVICES

PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
ORIGIN = "kueue.x-k8s.io/multikueue-origin"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side, str]]:
    """The pair of support/multikueue.py, queued by tfop itself."""
    with multikueue_pair(tmp_path_factory, "own") as sides:
        yield sides


class Marks:
    """When each fact was first seen true, in seconds since the job was created: every fact is polled on each
    look, so one that turns true while the test waits for another is noted then, not when its wait comes."""

    def __init__(self, facts: dict[str, Callable[[], bool]]) -> None:
        self.facts = facts
        self.started = time.monotonic()
        self.seen: dict[str, float] = {}

    def look(self) -> None:
        for name, fact in self.facts.items():
            if name not in self.seen and fact():
                self.seen[name] = time.monotonic() - self.started

    def seen_yet(self, name: str) -> bool:
        self.look()
        return name in self.seen

    def wait(self, name: str) -> float:
        wait_for(lambda: self.seen_yet(name), DEADLINE, name, interval=0.1)
        return self.seen[name]


def running_pods(side: Side, namespace: str, count: int) -> list[dict[str, Any]]:
    items = list(pods_by_name(side.client, namespace, "dist").values())
    return items if len(items) == count and all(
        (pod.get("status") or {}).get("phase") == "Running" for pod in items) else []


def test_a_job_queued_on_the_manager_runs_on_the_worker_and_succeeds_there(pair: tuple[Side, Side, str]) -> None:
    manager, worker, namespace = pair
    created = manager.client.create(TFJOBS, yamlio.load((EXAMPLES / "tfjob-own.yaml").read_text()), namespace)
    marks = Marks({
        "Workload admitted on the manager": lambda: condition_true(
            workload_of(manager.client, namespace, created), "Admitted"),
        "copy on the worker": lambda: get_or_none(worker.client, TFJOBS, "dist", namespace) is not None,
        "3 pods running on the worker": lambda: bool(running_pods(worker, namespace, 3)),
        "Running on the manager": lambda: condition_true(manager.client.get(TFJOBS, "dist", namespace), "Running"),
        "Succeeded on the manager": lambda: condition_true(manager.client.get(TFJOBS, "dist", namespace),
                                                           "Succeeded"),
        "worker's copy deleted": lambda: "copy on the worker" in marks.seen and get_or_none(
            worker.client, TFJOBS, "dist", namespace) is None,
    })
    assert created["spec"]["managedBy"] == MULTIKUEUE  # kept by the CRD, where Kueue's generic adapter reads it
    manager_workload = wait_for(lambda: workload_of(manager.client, namespace, created), DEADLINE,
                                "the manager's tfop to make the job's Workload")

    marks.wait("3 pods running on the worker")
    remote = worker.client.get(TFJOBS, "dist", namespace)
    assert "managedBy" not in remote["spec"]  # removed by MultiKueue: the worker's tfop runs the copy
    name = manager_workload["metadata"]["name"]
    assert (remote["metadata"].get("annotations") or {}).get(PREBUILT) == name
    assert (remote["metadata"].get("labels") or {}).get(ORIGIN) == "tfop-manager"
    # The worker's tfop adopted the Workload MultiKueue made (same name), and made none of its own.
    worker_workloads, _ = worker.client.list(WORKLOADS, namespace)
    assert [(w["metadata"]["name"], [o["uid"] for o in w["metadata"].get("ownerReferences", [])])
            for w in worker_workloads] == [(name, [remote["metadata"]["uid"]])]
    assert condition_true(worker_workloads[0], "Admitted")

    marks.wait("Running on the manager")  # the copy's status, copied back
    pods = running_pods(worker, namespace, 3)
    chief = next(pod["metadata"]["name"] for pod in pods if "-chief-" in pod["metadata"]["name"])
    exit_pod(worker.client, namespace, chief, 0)
    marks.wait("Succeeded on the manager")
    marks.wait("worker's copy deleted")
    marks.look()
    rows = [(what, f"{marks.seen[what]:.1f}") for what in marks.facts if what in marks.seen]
    print(markdown_table("MultiKueue with tfop's own integration: seconds from the create on the manager",
                         ("what", "s"), [("created on the manager", "0.0"), *rows]), file=sys.stderr)
    assert set(marks.seen) == set(marks.facts), marks.seen

    mirrored = job_status(manager.client, namespace, "dist")
    print(f"the manager's copy's status: {json.dumps(mirrored, sort_keys=True)}", file=sys.stderr)
    # The adapter copies the worker's status whole: tfop's own fields come too, the worker copy's runtime id
    # among them (the manager's tfop wrote none).
    succeeded = next(c for c in mirrored["conditions"] if c["type"] == "Succeeded")
    assert succeeded["status"] == "True" and succeeded["message"].startswith(f"TFJob {namespace}/dist")
    assert mirrored["replicaStatuses"]["Chief"]["succeeded"] == 1
    # The copy adopted its admitted Workload and made its pods in one pass: it was never held (Suspended).
    assert [c["type"] for c in mirrored["conditions"]] == ["Created", "Running", "Succeeded"], mirrored["conditions"]
    assert mirrored["runtimeId"] == runtime_id(remote["metadata"]["uid"]) != runtime_id(created["metadata"]["uid"])
    wait_for(lambda: condition_true(workload_of(manager.client, namespace, created), "Finished"), DEADLINE,
             "the manager's Workload to finish")
    # Nothing ran on the manager; its tfop said only that it made the Workload.
    assert children(manager.client, PODS, namespace, "dist") == []
    assert children(manager.client, SERVICES, namespace, "dist") == []
    reasons = {event.get("reason") for event in events_about(manager.client, namespace, "dist")
               if event.get("reportingComponent") == "tfop" or (event.get("source") or {}).get("component") == "tfop"}
    assert reasons <= {"SuccessfulCreate"}, reasons
    wait_for(lambda: worker.client.list(WORKLOADS, namespace)[0] == [], DEADLINE,
             "MultiKueue to delete the worker's Workload with the copy")
