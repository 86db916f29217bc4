"""The Job backend's planning, as table rows: a replica is a batch/v1 Job whose pod the Job controller makes and
replaces; the TFJob's rules (exit codes, backoffLimit, success, clean-up, suspend, scaling) read the same."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from support.plan_builders import (
    NOW,
    batch_job,
    job_pod,
    make_job,
    make_pod,
    name_of,
    parsed,
    running,
    services_for,
    with_selectors,
)
from tfop.controller.owners import owner_key
from tfop.controller.plan.children.batch_job import MAX_BACKOFF_LIMIT
from tfop.controller.plan.children.desired import DesiredChildren
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import JOB, POD, SERVICE, Plan, PlanContext

JOBS_CONFIG = ControllerConfig(replica_backend="jobs")
W0, W1, PS0 = name_of("Worker", 0), name_of("Worker", 1), name_of("PS", 0)


def on_jobs(job: dict[str, Any]) -> dict[str, Any]:
    """`job` with the status a running Job-backed job has."""
    job = running(job)
    job["status"] = {**job["status"], "replicaBackend": "jobs"}
    return job


def all_jobs(replicas: dict[str, int] | None = None) -> list[dict[str, Any]]:
    return [batch_job(replica_type, index)
            for replica_type, count in (replicas or {"Worker": 2, "PS": 1}).items() for index in range(count)]


def running_job_pods(replicas: dict[str, int] | None = None) -> list[dict[str, Any]]:
    return [job_pod(replica_type, index, "a")
            for replica_type, count in (replicas or {"Worker": 2, "PS": 1}).items() for index in range(count)]


@dataclass
class Row:
    job: dict[str, Any]
    jobs: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    services: list[dict[str, Any]] | None = None  # None: every replica's
    config: ControllerConfig = JOBS_CONFIG
    create: list[tuple[str, str]] = field(default_factory=list)  # (kind, name), sorted
    delete: list[tuple[str, str]] = field(default_factory=list)
    patch: list[tuple[str, str, Any]] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)  # top-level status values
    conditions: dict[str, tuple[str, str, str] | None] = field(default_factory=dict)  # type -> (status, reason, msg)
    events: list[str] | None = None  # reasons, in order


BACKOFF_1 = {"backoffLimit": 1}
ANNOTATED = {**make_job({"Worker": 1}), "metadata": {**make_job({"Worker": 1})["metadata"],
                                                     "annotations": {"tfop.kubeflow.org/replica-backend": "jobs"}}}
BAD_ANNOTATION = {**ANNOTATED, "metadata": {**ANNOTATED["metadata"],
                                            "annotations": {"tfop.kubeflow.org/replica-backend": "Job"}}}
ON_PODS = {**ANNOTATED, "status": {**running(make_job({"Worker": 1}))["status"], "replicaBackend": "pods"}}
RESTARTING_W1 = "TFJob ns/mnist is restarting Worker 1, which exited with code 137."
FAILED_W1 = "TFJob ns/mnist has failed because Worker 1, which exited with code 1 (Error)."
CHIEF_WORKER = {"Chief": 1, "Worker": 1}

ROWS = {
    "the annotation asks for Jobs: a Job and a Service per replica, and the choice recorded": Row(
        ANNOTATED, [], [], services=[], config=ControllerConfig(),
        create=[(JOB, W0), (SERVICE, W0)], status={"replicaBackend": "jobs", "replicaSummary": "0/1"},
        conditions={"Running": ("False", "TFJobPending",
                                "TFJob ns/mnist is waiting for 1 of 1 replicas to run: 1 not created.")}),
    "the operator's default is Jobs": Row(
        make_job({"Worker": 1}), [], [], services=[], create=[(JOB, W0), (SERVICE, W0)],
        status={"replicaBackend": "jobs"}),
    "a job recorded on Pods stays on Pods whatever the annotation and default": Row(
        ON_PODS, [], [], create=[(POD, W0)], status={"replicaBackend": "pods"}),
    "a job whose Pods exist is on Pods though nothing is recorded": Row(
        make_job({"Worker": 1}), [], [make_pod("Worker", 0)], status={"replicaBackend": "pods"}),
    "an annotation naming no backend fails the job, naming the annotation": Row(
        BAD_ANNOTATION, [], [], services=[], status={"replicaBackend": None},
        conditions={"Failed": ("True", "InvalidSpec", (
            "TFJob ns/mnist has an invalid spec: metadata.annotations[tfop.kubeflow.org/replica-backend]: must be "
            "one of pods, jobs, not 'Job'."))}),
    "every Job's pod runs: the job runs, nothing to do": Row(
        on_jobs(make_job()), all_jobs(), running_job_pods(),
        conditions={"Running": ("True", "TFJobRunning", "TFJob ns/mnist is running.")}, events=[]),
    "a pod not made yet by its Job is Pending": Row(
        on_jobs(make_job()), all_jobs(), running_job_pods({"Worker": 1, "PS": 1}),
        status={"replicaSummary": "2/3"},
        conditions={"Running": ("False", "TFJobPending",
                                "TFJob ns/mnist is waiting for 1 of 3 replicas to run: 1 Pending.")}),
    "exit 137: the Job controller replaces the pod; the job restarts it without deleting anything": Row(
        on_jobs(make_job()), [batch_job("Worker", 0), batch_job("Worker", 1, failed=1), batch_job("PS", 0)],
        [job_pod("Worker", 0, "a"), job_pod("Worker", 1, "a", "Failed", exit_code=137), job_pod("PS", 0, "a")],
        status={"replicaStatuses": {"Worker": {"active": 1, "succeeded": 0, "failed": 1, "restarts": 1},
                                    "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}}},
        conditions={"Restarting": ("True", "TFJobRestarting", RESTARTING_W1),
                    "Running": ("False", "TFJobRestarting", RESTARTING_W1)},
        events=["TFJobRestarting", "ExitedWithCode"]),
    "the replacement runs: the job runs again, the restart kept": Row(
        on_jobs(make_job({"Worker": 2})) | {"status": {
            **on_jobs(make_job({"Worker": 2}))["status"],
            "replicaStatuses": {"Worker": {"active": 1, "succeeded": 0, "failed": 1, "restarts": 1}}}},
        [batch_job("Worker", 0), batch_job("Worker", 1, failed=1)],
        [job_pod("Worker", 0, "a"), job_pod("Worker", 1, "a", "Failed", exit_code=137),
         job_pod("Worker", 1, "b", created="2026-11-21T10:01:00Z")],
        status={"replicaStatuses": {"Worker": {"active": 2, "succeeded": 0, "failed": 0, "restarts": 1}}},
        conditions={"Running": ("True", "TFJobRunning", "TFJob ns/mnist is running.")}, events=[]),
    "exit 1 fails the Job by its podFailurePolicy and the job with the Pod backend's message": Row(
        on_jobs(make_job()), [batch_job("Worker", 0), batch_job("Worker", 1, failed=1,
                                                                 outcome=("Failed", "PodFailurePolicy")),
                              batch_job("PS", 0)],
        [job_pod("Worker", 0, "a"), job_pod("Worker", 1, "a", "Failed", exit_code=1, reason="Error"),
         job_pod("PS", 0, "a")],
        delete=[(JOB, PS0), (JOB, W0), (SERVICE, PS0), (SERVICE, W0)],
        status={"replicaSummary": "0/3 succeeded, 1 failed"},
        conditions={"Failed": ("True", "TFJobFailed", FAILED_W1)}),
    "a pod failed with 1 before its Job says so already fails the job": Row(
        on_jobs(make_job({"Worker": 1})), [batch_job("Worker", 0)],
        [job_pod("Worker", 0, "a", "Failed", exit_code=1, reason="Error")],
        conditions={"Failed": ("True", "TFJobFailed",
                               "TFJob ns/mnist has failed because Worker 0, which exited with code 1 (Error).")}),
    "a Job out of its backoffLimit fails the job for its backoffLimit": Row(
        on_jobs(make_job({"Worker": 1}, run_policy=BACKOFF_1)),
        [batch_job("Worker", 0, failed=2, outcome=("Failed", "BackoffLimitExceeded"))],
        [job_pod("Worker", 0, "a", "Failed", exit_code=143),
         job_pod("Worker", 0, "b", "Failed", exit_code=143, created="2026-11-21T10:01:00Z")],
        conditions={"Failed": ("True", "BackoffLimitExceeded", (
            "TFJob ns/mnist has failed because its replicas restarted 2 times, more than its backoffLimit of 1."))}),
    "restarts summed over the Jobs spend the job's backoffLimit": Row(
        on_jobs(make_job({"Worker": 2}, run_policy=BACKOFF_1)),
        [batch_job("Worker", 0, failed=1), batch_job("Worker", 1, failed=1)],
        [job_pod("Worker", 0, "b"), job_pod("Worker", 1, "b")],
        delete=[(JOB, W0), (JOB, W1), (SERVICE, W0), (SERVICE, W1)],
        conditions={"Failed": ("True", "BackoffLimitExceeded", (
            "TFJob ns/mnist has failed because its replicas restarted 2 times, more than its backoffLimit of 1."))}),
    "an evicted pod (DisruptionTarget) is replaced by its Job and not counted": Row(
        on_jobs(make_job({"Worker": 1}, run_policy=BACKOFF_1)), [batch_job("Worker", 0)],
        [job_pod("Worker", 0, "a", "Failed", disrupted=True, pod_reason="Evicted")],
        status={"replicaStatuses": {"Worker": {"active": 0, "succeeded": 0, "failed": 1, "restarts": 0}}},
        conditions={"Failed": None, "Restarting": ("True", "TFJobRestarting", (
            "TFJob ns/mnist is restarting Worker 0, whose pod was disrupted (TerminationByKubelet)."))}),
    "Never: the Job's one failure is final, not a restart": Row(
        on_jobs(make_job({"Worker": 1}, policy="Never")),
        [batch_job("Worker", 0, failed=1, outcome=("Failed", "BackoffLimitExceeded"))],
        [job_pod("Worker", 0, "a", "Failed", exit_code=137)],
        status={"replicaStatuses": {"Worker": {"active": 0, "succeeded": 0, "failed": 1, "restarts": 0,
                                               "failedIndexes": "0"}}},
        conditions={"Failed": ("True", "TFJobFailed",
                               "TFJob ns/mnist has failed because Worker 0, which exited with code 137.")}),
    "OnFailure: in-place restarts of a Job's pod count": Row(
        on_jobs(make_job({"Worker": 1}, policy="OnFailure")), [batch_job("Worker", 0)],
        [job_pod("Worker", 0, "a", restarts=2)],
        status={"replicaStatuses": {"Worker": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 2}}},
        events=["TFJobRestarting"]),
    "the chief's Job completes: success, and cleanPodPolicy Running deletes the Jobs still running": Row(
        on_jobs(make_job(CHIEF_WORKER)), [batch_job("Chief", 0, outcome=("Complete", "CompletionsReached")),
                                          batch_job("Worker", 0)],
        [job_pod("Chief", 0, "a", "Succeeded", exit_code=0), job_pod("Worker", 0, "a")],
        delete=[(JOB, name_of("Worker", 0)), (SERVICE, name_of("Worker", 0))],
        status={"replicaSummary": "1/2 succeeded"},
        conditions={"Succeeded": ("True", "TFJobSucceeded", "TFJob ns/mnist successfully completed.")}),
    "suspended: each running Job is suspended (not deleted), the services go": Row(
        on_jobs(make_job(run_policy={"suspend": True})), all_jobs(), running_job_pods(),
        delete=[(SERVICE, PS0), (SERVICE, W0), (SERVICE, W1)],
        patch=[(JOB, PS0, {"spec": {"suspend": True}}), (JOB, W0, {"spec": {"suspend": True}}),
               (JOB, W1, {"spec": {"suspend": True}})],
        conditions={"Suspended": ("True", "TFJobSuspended", "TFJob ns/mnist is suspended.")}),
    "resumed: the suspended Jobs run again and the services come back": Row(
        on_jobs(make_job({"Worker": 1})), [batch_job("Worker", 0, suspend=True)], [], services=[],
        create=[(SERVICE, W0)], patch=[(JOB, W0, {"spec": {"suspend": False}})]),
    "scaled down: the surplus Job goes, with its pod": Row(
        on_jobs(make_job({"Worker": 1})), all_jobs({"Worker": 2}), running_job_pods({"Worker": 2}),
        services=services_for({"Worker": 2}), delete=[(JOB, W1), (SERVICE, W1)],
        status={"replicaSummary": "1/1"}),
    "OnFailure: a Job an earlier tfop gave a limit of its own (which counted disruptions) is given none": Row(
        on_jobs(make_job({"Worker": 1}, policy="OnFailure", run_policy=BACKOFF_1)),
        [batch_job("Worker", 0, backoff_limit=2)], [job_pod("Worker", 0, "a")],
        patch=[(JOB, W0, {"spec": {"backoffLimit": MAX_BACKOFF_LIMIT}})]),
    "ExitCode: an edited backoffLimit moves the Jobs' with it": Row(
        on_jobs(make_job({"Worker": 1}, run_policy={"backoffLimit": 3})),
        [batch_job("Worker", 0, backoff_limit=1)], [job_pod("Worker", 0, "a")],
        patch=[(JOB, W0, {"spec": {"backoffLimit": 3}})]),
    "a Job whose limit is in line, or one that has ended, is not patched": Row(
        on_jobs(make_job(CHIEF_WORKER, run_policy=BACKOFF_1)),
        [batch_job("Chief", 0, backoff_limit=1),
         batch_job("Worker", 0, backoff_limit=5, outcome=("Complete", "CompletionsReached"))],
        [job_pod("Chief", 0, "a"), job_pod("Worker", 0, "a", "Succeeded", exit_code=0)], patch=[]),
    "a Job being deleted is waited for": Row(
        on_jobs(make_job({"Worker": 1})), [batch_job("Worker", 0, terminating=True)], [job_pod("Worker", 0, "a")],
        conditions={"Running": ("False", "TFJobPending",
                                "TFJob ns/mnist is waiting for 1 of 1 replicas to run: 1 being deleted.")}),
}


def plan_row(row: Row) -> Plan:
    replicas = {key: value["replicas"] for key, value in row.job["spec"]["tfReplicaSpecs"].items()}
    services = services_for(replicas) if row.services is None else row.services
    return plan(PlanContext(row.job, {POD: row.pods, SERVICE: services, JOB: row.jobs}, NOW, row.config))


@pytest.mark.parametrize("row", list(ROWS.values()), ids=list(ROWS))
def test_job_backend(row: Row) -> None:
    before = copy.deepcopy((row.job, row.jobs, row.pods))
    result = plan_row(row)
    assert (row.job, row.jobs, row.pods) == before, "plan() must not mutate its input"
    assert sorted((c.kind, c.name) for c in result.create) == row.create
    assert sorted((d.kind, d.name) for d in result.delete) == row.delete
    assert sorted((p.kind, p.name, p.patch) for p in result.patch) == row.patch
    if row.events is not None:
        assert [event.reason for event in result.events] == row.events
    status = result.status.to_json() if result.status is not None else row.job.get("status", {})
    for key, written in row.status.items():
        # the selectors tfop writes beside the counts written out
        go = status.get("childNaming") == "TypeIndex"
        assert status.get(key) == (with_selectors(written, go=go) if key == "replicaStatuses" else written), key
    conditions = {entry["type"]: entry for entry in status.get("conditions", [])}
    for condition_type, wanted in row.conditions.items():
        entry = conditions.get(condition_type)
        if wanted is None:
            assert entry is None or entry["status"] == "False", condition_type
        else:
            assert entry is not None and (entry["status"], entry["reason"], entry["message"]) == wanted


@pytest.mark.parametrize(("policy", "run_policy", "restart_policy", "backoff_limit", "failure_rules"), [
    ("ExitCode", {"backoffLimit": 3}, "Never", 3, ["Ignore", "FailJob"]),
    ("ExitCode", {}, "Never", MAX_BACKOFF_LIMIT, ["Ignore", "FailJob"]),
    # No podFailurePolicy can leave disruptions out of a limit of the Job's own: tfop alone holds the budget.
    ("OnFailure", {"backoffLimit": 3}, "OnFailure", MAX_BACKOFF_LIMIT, None),
    ("Always", {"backoffLimit": 0}, "OnFailure", MAX_BACKOFF_LIMIT, None),
    ("Never", {"backoffLimit": 3}, "Never", 0, None),
])
def test_a_replicas_job_maps_its_restart_policy(policy: str, run_policy: dict[str, Any], restart_policy: str,
                                                backoff_limit: int, failure_rules: list[str] | None) -> None:
    from tfop.api.defaults import apply_defaults

    job = apply_defaults(make_job({"Worker": 2}, policy=policy, run_policy=run_policy))
    desired = DesiredChildren(parsed(job))
    body = desired.batch_job("Worker", 1)
    pod = desired.pod("Worker", 1)
    assert body["apiVersion"] == "batch/v1" and body["kind"] == "Job"
    assert body["metadata"]["name"] == W1 == pod["metadata"]["name"]
    assert body["metadata"]["labels"] == pod["metadata"]["labels"] == body["spec"]["template"]["metadata"]["labels"]
    assert body["metadata"]["ownerReferences"] == pod["metadata"]["ownerReferences"]
    spec = body["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, backoff_limit)
    assert spec["template"]["spec"]["restartPolicy"] == restart_policy
    assert spec["template"]["spec"]["containers"] == pod["spec"]["containers"]  # TF_CONFIG and all
    rules = spec.get("podFailurePolicy", {}).get("rules")
    assert ([rule["action"] for rule in rules] if rules else None) == failure_rules
    if rules:
        assert rules[0]["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]
        assert rules[1]["onExitCodes"] == {"containerName": "tensorflow", "operator": "In",
                                           "values": list(range(1, 128))}


def test_a_job_made_pod_is_keyed_to_its_tfjob_by_label() -> None:
    pod = job_pod("Worker", 0, "x7k2q")
    pod["metadata"]["labels"]["training.kubeflow.org/job-name"] = "mnist"
    assert owner_key(pod) == "ns/mnist"
    assert owner_key({"metadata": {"namespace": "ns", "name": "p", "labels": {}, "ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "other", "uid": "u", "controller": True}]}}) is None


def test_the_pod_backend_recreates_a_disrupted_pod_without_counting_it() -> None:
    """As a Job's podFailurePolicy ignores DisruptionTarget, so does the Pod backend's restart count."""
    job = running(make_job({"Worker": 1}, run_policy=BACKOFF_1))
    evicted = make_pod("Worker", 0, "Failed", pod_reason="Evicted")
    evicted["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    result = plan(PlanContext(job, {POD: [evicted], SERVICE: services_for({"Worker": 1})}, NOW, ControllerConfig()))
    assert [(d.kind, d.name) for d in result.delete] == [(POD, W0)]
    assert result.status is not None
    assert result.status.to_json()["replicaStatuses"]["Worker"]["restarts"] == 0
    assert not any(c["type"] == "Failed" for c in result.status.to_json()["conditions"])


def test_the_planner_decides_the_same_on_jobs_as_the_cache_slims_them() -> None:
    from tfop.api.defaults import apply_defaults
    from tfop.controller.cache_transforms import slim_batch_job, slim_pod

    job = on_jobs(make_job({"Worker": 2}, run_policy={"suspend": True}))
    desired = DesiredChildren(parsed(apply_defaults(job)))
    whole = [{**desired.batch_job("Worker", index), "status": {"active": 1, "failed": index}}
             for index in range(2)]
    for body, cached in zip(whole, all_jobs({"Worker": 2}), strict=True):
        body["metadata"]["uid"] = cached["metadata"]["uid"]
    pods = running_job_pods({"Worker": 2})
    slim = [slim_batch_job(body) for body in whole]
    assert all("template" not in body.get("spec", {}) for body in slim)

    def planned(jobs: list[dict[str, Any]]) -> Plan:
        return plan(PlanContext(job, {POD: [slim_pod(pod) for pod in pods], SERVICE: services_for({"Worker": 2}),
                                      JOB: jobs}, NOW, JOBS_CONFIG))

    assert planned(whole) == planned(slim)
    assert sorted((p.name, p.patch["spec"]["suspend"]) for p in planned(slim).patch) == [(W0, True), (W1, True)]
