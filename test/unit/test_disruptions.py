"""A replica whose pod the cluster took (DisruptionTarget: preempted, evicted, drained, its node tainted), as table
rows on both replica backends: replaced without counting a restart whatever its exit code, except under Never,
and told by one Normal ReplicaDisrupted event naming who took it (docs/tfjob/reference.md)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from support.plan_builders import (
    NOW,
    batch_job,
    cond,
    job_pod,
    make_job,
    make_pod,
    name_of,
    running,
    services_for,
)
from tfop.api.constants import ReplicaBackendName
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import JOB, POD, SERVICE, PlanContext

W0 = name_of("Worker", 0)


def taken(pod: dict[str, Any], reason: str, message: str = "") -> dict[str, Any]:
    """`pod` with the DisruptionTarget condition the apiserver, scheduler, taint manager or kubelet sets."""
    condition = {"type": "DisruptionTarget", "status": "True", "reason": reason}
    if message:
        condition["message"] = message
    return {**pod, "status": {**pod["status"], "conditions": [condition]}}


def on(backend: str, policy: str, restarting: str | None = None, recorded: str | None = None) -> dict[str, Any]:
    """A running one-Worker job with backoffLimit 0 (so any counted restart would fail it) on `backend`; with
    `restarting`, the Restarting condition an earlier plan set; with `recorded`, the uid of a pod whose
    disruption an earlier plan recorded and told."""
    job = running(make_job({"Worker": 1}, policy=policy, run_policy={"backoffLimit": 0}))
    job["status"] = {**job["status"], "replicaBackend": backend}
    if restarting is not None:
        job["status"]["conditions"] = [*job["status"]["conditions"],
                                       cond("Restarting", "True", "TFJobRestarting", restarting, job["status"]
                                            ["startTime"])]
    if recorded is not None:
        job["status"]["disruptions"] = [{"replica": "Worker 0", "podUID": recorded, "reason": "EvictionByEvictionAPI",
                                         "source": "DisruptionTarget", "time": "2026-11-21T10:00:30Z"}]
    return job


def evicted_by_kubelet() -> dict[str, Any]:
    """A pod the kubelet evicted for node pressure: Failed, reason Evicted, its words in the message."""
    pod = make_pod("Worker", 0, "Failed", pod_reason="Evicted")
    pod["status"]["message"] = "The node was low on resource: memory. Container tensorflow was using 3Gi."
    return pod


@dataclass
class Row:
    job: dict[str, Any]
    pods: list[dict[str, Any]]
    jobs: list[dict[str, Any]] | None  # None: the Pod backend
    deleted: list[tuple[str, str]]
    restarts: int
    failed: str | None  # the Failed condition's message, None: not failed
    restarting: str | None  # the Restarting condition's message while True
    events: list[tuple[str, str, str]]  # (type, reason, message), in order


RESTARTING_EVICTED = "TFJob ns/mnist is restarting Worker 0, whose pod was disrupted (EvictionByEvictionAPI)."
DISRUPTED_EVICTED = ("Normal", "ReplicaDisrupted", ("TFJob ns/mnist: Worker 0's pod was disrupted "
                     "(EvictionByEvictionAPI: Eviction API: evicting); it is replaced."))
EXITED_1 = ("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 1.")

ROWS = {
    "Pods, ExitCode: evicted through the Eviction API, exit 1: replaced, uncounted, told": Row(
        on("pods", "ExitCode"),
        [taken(make_pod("Worker", 0, "Failed", exit_code=1, reason="Error"), "EvictionByEvictionAPI",
               "Eviction API: evicting")], None,
        deleted=[(POD, W0)], restarts=0, failed=None, restarting=RESTARTING_EVICTED,
        events=[DISRUPTED_EVICTED, EXITED_1]),
    "Pods, ExitCode: preempted, exit 137: told as a disruption, not as a restart (no TFJobRestarting Warning)": Row(
        on("pods", "ExitCode"),
        [taken(make_pod("Worker", 0, "Failed", exit_code=137, reason="Error"), "PreemptionByScheduler")], None,
        deleted=[(POD, W0)], restarts=0, failed=None,
        restarting="TFJob ns/mnist is restarting Worker 0, whose pod was disrupted (PreemptionByScheduler).",
        events=[("Normal", "ReplicaDisrupted", ("TFJob ns/mnist: Worker 0's pod was disrupted "
                                               "(PreemptionByScheduler); it is replaced.")),
                ("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 137.")]),
    "Pods, OnFailure: evicted by the kubelet with no exit code: replaced, told": Row(
        on("pods", "OnFailure"),
        [taken(evicted_by_kubelet(), "TerminationByKubelet", "The node was low on resource: memory.")], None,
        deleted=[(POD, W0)], restarts=0, failed=None,
        restarting="TFJob ns/mnist is restarting Worker 0, whose pod was disrupted (TerminationByKubelet).",
        events=[("Normal", "ReplicaDisrupted", ("TFJob ns/mnist: Worker 0's pod was disrupted (TerminationByKubelet: "
                 "The node was low on resource: memory.); it is replaced.")),
                ("Warning", "Evicted", ("TFJob ns/mnist: Worker 0 [Evicted]: The node was low on resource: memory. "
                                       "Container tensorflow was using 3Gi."))]),
    "Pods, ExitCode: exit 1 without DisruptionTarget still fails the job": Row(
        on("pods", "ExitCode"), [make_pod("Worker", 0, "Failed", exit_code=1, reason="Error")], None,
        deleted=[], restarts=0,
        failed="TFJob ns/mnist has failed because Worker 0, which exited with code 1 (Error).", restarting=None,
        events=[EXITED_1, ("Warning", "TFJobFailed",
                           "TFJob ns/mnist has failed because Worker 0, which exited with code 1 (Error).")]),
    "Pods, Never: a disrupted pod is not replaced (Never replaces nothing)": Row(
        on("pods", "Never"),
        [taken(make_pod("Worker", 0, "Failed", exit_code=137, reason="Error"), "DeletionByTaintManager")], None,
        deleted=[], restarts=0,
        failed="TFJob ns/mnist has failed because Worker 0, whose pod was disrupted (DeletionByTaintManager).",
        restarting=None,
        events=[("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 137."),
                ("Warning", "TFJobFailed", ("TFJob ns/mnist has failed because Worker 0, whose pod was disrupted "
                                           "(DeletionByTaintManager)."))]),
    "Jobs, ExitCode: evicted, exit 1, ignored by the Job's podFailurePolicy: awaited, uncounted, told": Row(
        on("jobs", "ExitCode"),
        [taken(job_pod("Worker", 0, "a", "Failed", exit_code=1, reason="Error"), "EvictionByEvictionAPI",
               "Eviction API: evicting")], [batch_job("Worker", 0)],
        deleted=[], restarts=0, failed=None, restarting=RESTARTING_EVICTED,
        events=[DISRUPTED_EVICTED, EXITED_1]),
    "Jobs, ExitCode: a disruption the status already records is not told again": Row(
        on("jobs", "ExitCode", restarting=RESTARTING_EVICTED, recorded=f"pod-{W0}-a"),
        [taken(job_pod("Worker", 0, "a", "Failed", exit_code=1, reason="Error"), "EvictionByEvictionAPI",
               "Eviction API: evicting")], [batch_job("Worker", 0)],
        deleted=[], restarts=0, failed=None, restarting=RESTARTING_EVICTED, events=[EXITED_1]),
    "Jobs, ExitCode: the replacement runs: the job runs again, nothing told": Row(
        on("jobs", "ExitCode", restarting=RESTARTING_EVICTED, recorded=f"pod-{W0}-a"),
        [taken(job_pod("Worker", 0, "a", "Failed", exit_code=1, reason="Error"), "EvictionByEvictionAPI"),
         job_pod("Worker", 0, "b", created="2026-11-21T10:01:00Z")], [batch_job("Worker", 0)],
        deleted=[], restarts=0, failed=None, restarting=None, events=[]),
    "Jobs, OnFailure: the Job (no podFailurePolicy) counted the disrupted pod as failed; tfop does not": Row(
        on("jobs", "OnFailure"),
        [taken(job_pod("Worker", 0, "a", "Failed", exit_code=143, reason="Error"), "TerminationByKubelet",
               "Pod was terminated in response to imminent node shutdown.")], [batch_job("Worker", 0, failed=1)],
        deleted=[], restarts=0, failed=None,
        restarting="TFJob ns/mnist is restarting Worker 0, whose pod was disrupted (TerminationByKubelet).",
        events=[("Normal", "ReplicaDisrupted", ("TFJob ns/mnist: Worker 0's pod was disrupted (TerminationByKubelet: "
                 "Pod was terminated in response to imminent node shutdown.); it is replaced.")),
                ("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 143.")]),
    "Jobs, OnFailure: a pod failed without DisruptionTarget is still a restart, past backoffLimit 0": Row(
        on("jobs", "OnFailure"),
        [job_pod("Worker", 0, "a", "Failed", pod_reason="DeadlineExceeded"),
         taken(job_pod("Worker", 0, "b", "Failed", exit_code=143, reason="Error", created="2026-11-21T10:01:00Z"),
               "PreemptionByScheduler")], [batch_job("Worker", 0, failed=2)],
        deleted=[], restarts=1,
        failed="TFJob ns/mnist has failed because its replicas restarted 1 times, more than its backoffLimit of 0.",
        restarting=None,
        events=[("Normal", "ReplicaDisrupted", ("TFJob ns/mnist: Worker 0's pod was disrupted "
                                               "(PreemptionByScheduler); it is replaced.")),
                ("Warning", "TFJobRestarting",
                 "TFJob ns/mnist is restarting Worker 0, whose pod failed (DeadlineExceeded)."),
                ("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 143."),
                ("Warning", "BackoffLimitExceeded", ("TFJob ns/mnist has failed because its replicas restarted 1 "
                                                    "times, more than its backoffLimit of 0."))]),
    "Jobs, Never: a disrupted pod fails the job, as with Pods": Row(
        on("jobs", "Never"),
        [taken(job_pod("Worker", 0, "a", "Failed", exit_code=137, reason="Error"), "PreemptionByScheduler")],
        [batch_job("Worker", 0)],
        deleted=[], restarts=0,
        failed="TFJob ns/mnist has failed because Worker 0, whose pod was disrupted (PreemptionByScheduler).",
        restarting=None,
        events=[("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 137."),
                ("Warning", "TFJobFailed", ("TFJob ns/mnist has failed because Worker 0, whose pod was disrupted "
                                           "(PreemptionByScheduler)."))]),
}


@pytest.mark.parametrize("row", list(ROWS.values()), ids=list(ROWS))
def test_a_disrupted_replica(row: Row) -> None:
    children: dict[str, list[dict[str, Any]]] = {POD: row.pods, SERVICE: services_for({"Worker": 1})}
    if row.jobs is not None:
        children[JOB] = row.jobs
    before = copy.deepcopy(children)
    backend: ReplicaBackendName = "pods" if row.jobs is None else "jobs"
    result = plan(PlanContext(row.job, children, NOW, ControllerConfig(replica_backend=backend)))
    assert children == before, "plan() must not mutate its input"
    assert sorted((d.kind, d.name) for d in result.delete if d.kind != SERVICE) == row.deleted
    assert [(e.type, e.reason, e.message) for e in result.events] == row.events
    status = result.status.to_json() if result.status is not None else row.job["status"]
    assert status["replicaStatuses"]["Worker"]["restarts"] == row.restarts
    conditions = {entry["type"]: entry for entry in status["conditions"] if entry["status"] == "True"}
    assert (conditions["Failed"]["message"] if "Failed" in conditions else None) == row.failed
    assert (conditions["Restarting"]["message"] if "Restarting" in conditions else None) == row.restarting
