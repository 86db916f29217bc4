"""Kueue's TFJob adapter and tfop's own integration never both queue a job (plan/policies/kueue_admission.py's
adapter_conflict): a Workload the job controls that tfop did not make (PlanContext.foreign) holds the job,
with no Workload of tfop's and no pods, said once as a Warning; gone, the job is queued by tfop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from support.plan_builders import NOW, RID, make_job, running_pods, services_for
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import POD, SERVICE, WORKLOAD, PlanContext

OWN = ControllerConfig(kueue_integration="own")
ADAPTER = ControllerConfig(kueue_integration="kueue")
OURS = f"tfjob-mnist-{RID}"
THEIRS = "tfjob-mnist-3f2a1"  # Kueue's adapter names its Workloads tfjob-<job>-<hash>
T1 = "2026-11-21T09:58:00Z"
CONFLICT = ("TFJob ns/mnist is queued by Kueue's kubeflow.org/tfjob adapter too (its Workload tfjob-mnist-3f2a1), "
            "and tfop's own Kueue integration makes no second Workload for it, so it does not run: take "
            "kubeflow.org/tfjob out of integrations.frameworks in Kueue's Configuration and delete that Workload "
            "(tfop then queues the job), or run tfop with kueue.integration: kueue.")
QUEUED = f"TFJob ns/mnist waits for its Kueue Workload {OURS} in LocalQueue team."


def condition(condition_type: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": condition_type, "status": status, "reason": reason, "message": message,
            "lastUpdateTime": T1, "lastTransitionTime": T1}


CREATED = condition("Created", "True", "TFJobCreated", "TFJob ns/mnist is created.")
RUNNING = condition("Running", "True", "TFJobRunning", "TFJob ns/mnist is running.")


def queued_job(*conditions: dict[str, Any], suspend: bool = False) -> dict[str, Any]:
    job = make_job(run_policy={"suspend": True} if suspend else None)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
    if conditions:
        job["status"] = {"conditions": list(conditions)}
    return job


def our_workload() -> dict[str, Any]:
    conditions = [condition("QuotaReserved", "True", "QuotaReserved", ""),
                  condition("Admitted", "True", "Admitted", "")]
    return {"metadata": {"name": OURS, "namespace": "ns", "uid": "wl-1", "resourceVersion": "7"},
            "spec": {"queueName": "team", "podSets": [{"name": "worker", "count": 2}, {"name": "ps", "count": 1}]},
            "status": {"conditions": conditions, "admission": {"clusterQueue": "cq", "podSetAssignments": [
                {"name": "worker", "flavors": {"cpu": "f"}, "count": 2},
                {"name": "ps", "flavors": {"cpu": "f"}, "count": 1}]}}}


@dataclass(frozen=True)
class Row:
    job: dict[str, Any]
    theirs: tuple[str, ...]
    ours: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    config: ControllerConfig = OWN
    # expected:
    suspended: tuple[str, str, str] | None = None  # the Suspended condition (status, reason, message)
    events: list[tuple[str, str]] = field(default_factory=list)  # (type, reason)
    creates: list[str] = field(default_factory=list)  # kinds, in order
    deletes: list[tuple[str, str]] = field(default_factory=list)  # (kind, name)


ROWS = {
    "a new job the adapter queues too: held, no Workload of tfop's, told as a Warning": Row(
        queued_job(), (THEIRS,), suspended=("True", "KueueAdapterConflict", CONFLICT),
        events=[("Normal", "TFJobCreated"), ("Warning", "KueueAdapterConflict")]),
    "suspended by the adapter's webhook as it came: the conflict, not the user's suspension, is said": Row(
        queued_job(CREATED, suspend=True), (THEIRS,), suspended=("True", "KueueAdapterConflict", CONFLICT),
        events=[("Warning", "KueueAdapterConflict")]),
    "running on tfop's admission when the adapter's Workload comes: tfop's goes, and the pods": Row(
        queued_job(CREATED, RUNNING), (THEIRS,), ours=[our_workload()], pods=running_pods(),
        suspended=("True", "KueueAdapterConflict", CONFLICT), events=[("Warning", "KueueAdapterConflict")],
        deletes=[(WORKLOAD, OURS), (POD, "mnist-ps-jje2-0"), (POD, "mnist-worker-jje2-0"),
                 (POD, "mnist-worker-jje2-1")]),
    "told already: nothing said again": Row(
        queued_job(CREATED, condition("Suspended", "True", "KueueAdapterConflict", CONFLICT)), (THEIRS,),
        suspended=("True", "KueueAdapterConflict", CONFLICT)),
    "the adapter's Workload deleted: tfop queues the job, and says so": Row(
        queued_job(CREATED, condition("Suspended", "True", "KueueAdapterConflict", CONFLICT)), (),
        suspended=("True", "QueuedByKueue", QUEUED), events=[("Normal", "QueuedByKueue")], creates=[WORKLOAD]),
    "with the adapter chosen (kueue), its Workloads are its own business": Row(
        queued_job(CREATED), (THEIRS,), config=ADAPTER, events=[], creates=[POD, POD, POD, SERVICE, SERVICE, SERVICE]),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_the_adapters_workload_holds_the_job(row: Row) -> None:
    services = services_for() if row.pods else []
    context = PlanContext(row.job, {POD: row.pods, SERVICE: services, WORKLOAD: row.ours}, NOW, row.config,
                          foreign={WORKLOAD: row.theirs} if row.theirs else {})
    result = plan(context)
    status = result.status.to_json() if result.status is not None else row.job["status"]  # None: unchanged
    found = next((c for c in status["conditions"] if c["type"] == "Suspended"), None)
    assert (None if found is None else (found["status"], found["reason"], found["message"])) == row.suspended
    assert [(event.type, event.reason) for event in result.events] == row.events
    assert [creation.kind for creation in result.create] == row.creates
    assert sorted((ref.kind, ref.name) for ref in result.delete if ref.kind in (WORKLOAD, POD)) == sorted(row.deletes)
