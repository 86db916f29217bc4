"""Builders for the planner's unit tests: a TFJob, its pods and services, the statuses a plan writes, and the
fixed clock they share. Rows of expected values are written out in the tests; these only build the input."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from tfop.api.runtime_id import child_name, runtime_id
from tfop.controller.plan.children.desired import selector_labels
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.job.parse import parse_job
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import POD, SERVICE, CreateRefusal, Plan, PlanContext

NOW = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
T0 = "2026-11-21T10:00:00Z"
JOB_NAME = "mnist"
UID = "uid-1"
RID = runtime_id(UID)


# ---------------------------------------------------------------- builders

def container(name: str = "tensorflow", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "tensorflow/tensorflow:2.16.1", **extra}


def make_job(replicas: Mapping[str, object] | None = None, *, policy: str | None = None, name: str = JOB_NAME,
             uid: str = UID, generation: int = 1, run_policy: dict[str, Any] | None = None,
             status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A TFJob as the apiserver returns it (not defaulted): Worker 2 and PS 1 unless told otherwise."""
    replica_specs: dict[str, Any] = {}
    for replica_type, count in (replicas or {"Worker": 2, "PS": 1}).items():
        replica_specs[replica_type] = {"replicas": count, "template": {"spec": {"containers": [container()]}}}
        if policy is not None:
            replica_specs[replica_type]["restartPolicy"] = policy
    job: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "generation": generation},
        "spec": {"tfReplicaSpecs": replica_specs, **spec},
    }
    if run_policy is not None:
        job["spec"]["runPolicy"] = run_policy
    if status is not None:
        job["status"] = status
        if "replicaStatuses" in status and "childNaming" in status:  # as tfop wrote it
            job["status"] = {**status, "replicaStatuses": with_selectors(
                status["replicaStatuses"], go=status["childNaming"] == "TypeIndex")}
    return job


def selector_of(replica_type: str, job_name: str = JOB_NAME) -> str:
    """status.replicaStatuses.{type}.selector as tfop writes it for a job of its own naming."""
    return (f"training.kubeflow.org/job-name={job_name},training.kubeflow.org/replica-type={replica_type.lower()},"
            f"training.kubeflow.org/runtime-id={RID}")


def go_selector_of(replica_type: str, job_name: str = JOB_NAME) -> str:
    """The same for a job under the Go operator's naming, whose pods carry no runtime id."""
    return (f"training.kubeflow.org/job-name={job_name},training.kubeflow.org/replica-type={replica_type.lower()},"
            "training.kubeflow.org/operator-name in (tfjob-controller,tfop)")


def with_selectors(statuses: object, *, go: bool = False) -> object:
    """replicaStatuses with the selector tfop writes beside each type's counts (where none is given): the fixtures
    write out the counts, and each type's selector is always the same for the job."""
    if not isinstance(statuses, dict):
        return statuses
    selector = go_selector_of if go else selector_of
    return {replica_type: {**entry, "selector": entry.get("selector", selector(replica_type))}
            if isinstance(entry, dict) else entry for replica_type, entry in statuses.items()}


def parsed(job: dict[str, Any], config: ControllerConfig | None = None) -> TFJobModel:
    """A valid raw TFJob as the planner sees it, for building its children's bodies directly."""
    model = parse_job(job, config or ControllerConfig())
    assert isinstance(model, TFJobModel), model
    return model


def name_of(replica_type: str, index: int, job_name: str = JOB_NAME) -> str:
    return child_name(job_name, replica_type, RID, index)


def make_pod(replica_type: str, index: int, phase: str = "Running", *, exit_code: int | None = None,
             reason: str = "", restarts: int = 0, terminating: bool = False, uid: str | None = None,
             pod_reason: str | None = None) -> dict[str, Any]:
    """A pod of the default job as the cache shows it; the tensorflow container's state follows the phase."""
    name = name_of(replica_type, index)
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid or f"pod-{name}",
                                "labels": selector_labels(JOB_NAME, replica_type, RID, index)}
    if terminating:
        metadata["deletionTimestamp"] = T0
    state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}} if phase == "Pending" else {}
    if phase == "Running":
        state = {"running": {"startedAt": T0}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": reason}}
    status: dict[str, Any] = {"phase": phase,
                              "containerStatuses": [{"name": "tensorflow", "restartCount": restarts, "state": state}]}
    if pod_reason:
        status["reason"] = pod_reason
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "status": status}


def batch_job(replica_type: str, index: int, *, failed: int = 0, outcome: tuple[str, str] | None = None,
              suspend: bool | None = None, terminating: bool = False,
              backoff_limit: int | None = None) -> dict[str, Any]:
    """A replica's Job as the cache keeps it (controller/cache_transforms.py: no template)."""
    name = name_of(replica_type, index)
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"job-{name}",
                                "labels": selector_labels(JOB_NAME, replica_type, RID, index),
                                "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                                                     "name": JOB_NAME, "uid": UID, "controller": True}]}
    if terminating:
        metadata["deletionTimestamp"] = T0
    status: dict[str, Any] = {"failed": failed} if failed else {}
    if outcome is not None:
        status["conditions"] = [{"type": outcome[0], "status": "True", "reason": outcome[1]}]
    result: dict[str, Any] = {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "status": status}
    if suspend is not None:
        result["spec"] = {"suspend": suspend}
    if backoff_limit is not None:
        result["spec"] = {**result.get("spec", {}), "backoffLimit": backoff_limit}
    return result


def job_pod(replica_type: str, index: int, suffix: str, phase: str = "Running", *, created: str = T0,
            disrupted: bool = False, **state: Any) -> dict[str, Any]:
    """A pod the replica's Job made: its name is the Job's plus a suffix, its controller the Job."""
    pod = make_pod(replica_type, index, phase, **state)
    job_name = name_of(replica_type, index)
    pod["metadata"] = {**pod["metadata"], "name": f"{job_name}-{suffix}", "uid": f"pod-{job_name}-{suffix}",
                       "creationTimestamp": created,
                       "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job_name,
                                            "uid": f"job-{job_name}", "controller": True}]}
    if disrupted:
        pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True",
                                        "reason": "TerminationByKubelet"}]
    return pod


def make_service(replica_type: str, index: int, *, terminating: bool = False) -> dict[str, Any]:
    name = name_of(replica_type, index)
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"svc-{name}",
                                "labels": selector_labels(JOB_NAME, replica_type, RID, index)}
    if terminating:
        metadata["deletionTimestamp"] = T0
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": {"clusterIP": "None"}}


def services_for(replicas: dict[str, int] | None = None) -> list[dict[str, Any]]:
    return [make_service(replica_type, index)
            for replica_type, count in (replicas or {"Worker": 2, "PS": 1}).items() for index in range(count)]


def running_pods(replicas: dict[str, int] | None = None) -> list[dict[str, Any]]:
    return [make_pod(replica_type, index)
            for replica_type, count in (replicas or {"Worker": 2, "PS": 1}).items() for index in range(count)]


def plan_of(job: dict[str, Any], pods: list[dict[str, Any]], services: list[dict[str, Any]], now: datetime = NOW,
            config: ControllerConfig | None = None, refusals: tuple[CreateRefusal, ...] = ()) -> Plan:
    return plan(PlanContext(job, {POD: pods, SERVICE: services}, now, config or ControllerConfig(), refusals))


def settled(job: dict[str, Any], pods: list[dict[str, Any]] | None = None,
            services: list[dict[str, Any]] | None = None, now: datetime = NOW) -> dict[str, Any]:
    """The job with the status its plan writes: the next step of a scenario, reconcile after reconcile. Table
    rows never use it: their starting statuses are written out below."""
    result = plan_of(job, pods or [], services or [], now)
    job = copy.deepcopy(job)
    if result.status is not None:
        job["status"] = result.status.to_json()
    return job


# ---------------------------------------------------------------- statuses, written out

def stamp(minutes: float = 0) -> str:
    return (NOW + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def cond(condition_type: str, status: str, reason: str, message: str, at: str = T0) -> dict[str, Any]:
    return {"type": condition_type, "status": status, "reason": reason, "message": message,
            "observedGeneration": 1, "lastTransitionTime": at, "lastUpdateTime": at}


def replica_statuses(replicas: dict[str, int], active: bool = True,
                     restarts: dict[str, int] | None = None) -> dict[str, Any]:
    return {replica_type: {"active": count if active else 0, "succeeded": 0, "failed": 0,
                           "restarts": (restarts or {}).get(replica_type, 0), "selector": selector_of(replica_type)}
            for replica_type, count in replicas.items()}


def replicas_of(job: dict[str, Any]) -> dict[str, int]:
    return {key: value["replicas"] for key, value in job["spec"]["tfReplicaSpecs"].items()}


def running(job: dict[str, Any], *, since: float = 0, restarts: dict[str, int] | None = None) -> dict[str, Any]:
    """`job` with the status of a job all of whose replicas run, started `since` minutes from NOW."""
    at, replicas = stamp(since), replicas_of(job)
    total = sum(replicas.values())
    return {**job, "status": {
        "runtimeId": RID, "childNaming": "RuntimeId", "replicaBackend": "pods", "startTime": at,
        "replicaStatuses": replica_statuses(replicas, restarts=restarts),
        "replicaSummary": f"{total}/{total}",
        "conditions": [cond("Created", "True", "TFJobCreated", "TFJob ns/mnist is created.", at),
                       cond("Running", "True", "TFJobRunning", "TFJob ns/mnist is running.", at)],
        "phase": "Running", "state": "Running", "reason": "TFJobRunning", "lastReconcileTime": at,
        **({"workerReplicas": replicas["Worker"]} if "Worker" in replicas else {})}}


def waiting_for_one_pending_worker(job: dict[str, Any]) -> dict[str, Any]:
    """`job` (Worker 2, PS 1) with the status of a job whose worker 0 is still Pending."""
    return {**job, "status": {
        **running(job)["status"], "replicaSummary": "2/3", "phase": "Creating", "state": "Pending",
        "reason": "TFJobPending",
        "conditions": [cond("Created", "True", "TFJobCreated", "TFJob ns/mnist is created."),
                       cond("Running", "False", "TFJobPending",
                            "TFJob ns/mnist is waiting for 1 of 3 replicas to run: 1 Pending.")]}}


RESTARTING_W1 = "TFJob ns/mnist is restarting Worker 1, which exited with code 143."


def restarting_worker_1(job: dict[str, Any]) -> dict[str, Any]:
    """`job` (Worker 2, PS 1) after the plan that deleted worker 1 (exit 143) to recreate it."""
    return {**job, "status": {
        **running(job)["status"], "replicaSummary": "2/3", "phase": "Creating", "state": "Restarting",
        "reason": "TFJobRestarting",
        "replicaStatuses": {
            "Worker": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 1, "retiredRestarts": 1,
                       "retiredPodUIDs": [f"pod-{name_of('Worker', 1)}"]},
            "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}},
        "conditions": [cond("Created", "True", "TFJobCreated", "TFJob ns/mnist is created."),
                       cond("Running", "False", "TFJobRestarting", RESTARTING_W1),
                       cond("Restarting", "True", "TFJobRestarting", RESTARTING_W1)]}}


def suspended(job: dict[str, Any], since: float = 0) -> dict[str, Any]:
    """`job` (Worker 2, PS 1) as its plans leave it once suspended with nothing left running."""
    at = stamp(since)
    return {**job, "status": {
        "runtimeId": RID, "childNaming": "RuntimeId", "replicaBackend": "pods",
        "replicaStatuses": replica_statuses(replicas_of(job), active=False),
        "replicaSummary": "0/3",
        "conditions": [cond("Created", "True", "TFJobCreated", "TFJob ns/mnist is created.", at),
                       cond("Suspended", "True", "TFJobSuspended", "TFJob ns/mnist is suspended.", at),
                       cond("Running", "False", "TFJobSuspended", "TFJob ns/mnist is suspended.", at)],
        "phase": "Creating", "state": "Suspended", "reason": "TFJobSuspended", "lastReconcileTime": at}}


THREE_WORKERS = ("TFJob ns/mnist has an invalid spec: spec.tfReplicaSpecs[Worker].replicas: must be an integer, "
                 "not 'three'.")


def invalid(job: dict[str, Any]) -> dict[str, Any]:
    """`job` (Worker: "three") failed for its invalid spec."""
    return {**job, "status": {
        "runtimeId": RID, "childNaming": "RuntimeId", "replicaBackend": "pods", "completionTime": T0,
        "conditions": [cond("Created", "True", "TFJobCreated", "TFJob ns/mnist is created."),
                       cond("Failed", "True", "InvalidSpec", THREE_WORKERS),
                       cond("Running", "False", "InvalidSpec", THREE_WORKERS)],
        "phase": "Failed", "state": "Failed", "reason": "InvalidSpec", "lastReconcileTime": T0}}


def condition(result: Plan, condition_type: str) -> tuple[str, str] | None:
    assert result.status is not None
    for entry in result.status.to_json().get("conditions", []):
        if entry["type"] == condition_type:
            return entry["status"], entry["reason"]
    return None


def message(result: Plan, condition_type: str) -> str:
    assert result.status is not None
    found: str = next(entry["message"] for entry in result.status.to_json()["conditions"]
                      if entry["type"] == condition_type)
    return found


KEEP = object()  # "do not check this field"


class GangRow(Protocol):
    """What a gang table's row expects of its plan (test_gang.py, test_native_gang.py)."""
    create: list[tuple[str, str]]  # (kind, name), in the order sent
    delete: list[tuple[str, str]]
    patch: list[dict[str, Any]]
    message: list[str]  # fragments of the Running condition's message
    phase: Any  # status.podGroupPhase expected (None: absent; KEEP: not checked)


def check_gang_row(result: Plan, row: GangRow) -> None:
    assert [(creation.kind, creation.name) for creation in result.create] == row.create
    assert [(ref.kind, ref.name) for ref in result.delete] == row.delete
    assert [patch.patch for patch in result.patch] == row.patch
    if row.phase is not KEEP:
        assert result.status is not None
        assert result.status.to_json().get("podGroupPhase") == row.phase
    if row.message:
        running_message = message(result, "Running")
        for fragment in row.message:
            assert fragment in running_message
