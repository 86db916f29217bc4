"""Table tests of restarting a job together (tfop/controller/plan/policies/restart_scope.py): with restart scope
Job, the replica that fails retryably or loses its node restarts with every other live replica, counted once."""

from __future__ import annotations

from typing import Any

import pytest

from support.plan_builders import make_job, make_pod, message, plan_of, running, services_for
from tfop.api.constants import FINALIZER_REPLICA_TRACKING
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.types import POD

W0, W1, PS0 = "mnist-worker-jje2-0", "mnist-worker-jje2-1", "mnist-ps-jje2-0"


def job_scoped(scope: str | None, **fields: Any) -> dict[str, Any]:
    job = running(make_job(policy="ExitCode", **fields))
    if scope is not None:
        job["metadata"]["annotations"] = {"tfop.kubeflow.org/restart-scope": scope}
    return job


def worker_1_killed() -> list[dict[str, Any]]:
    return [make_pod("Worker", 0), make_pod("PS", 0), make_pod("Worker", 1, "Failed", exit_code=137)]


@pytest.mark.parametrize(("scope", "deleted"), [
    ("Job", [W1, W0, PS0]),  # the failed one, then every other live replica
    ("Replica", [W1]),
    (None, [W1]),  # the default: each replica alone, as the Kubeflow training operator does
])
def test_a_retryable_failure_restarts_the_replica_or_the_whole_job(scope: str | None, deleted: list[str]) -> None:
    result = plan_of(job_scoped(scope), worker_1_killed(), services_for())
    assert [ref.name for ref in result.delete if ref.kind == POD] == deleted
    assert all(ref.grace_period_seconds is None for ref in result.delete)  # gracefully: SIGTERM first


def test_a_job_restart_counts_once_and_says_so() -> None:
    result = plan_of(job_scoped("Job"), worker_1_killed(), services_for())
    assert [(restart.replica_type, restart.index, restart.exit_code) for restart in result.restarts] == [
        ("Worker", 1, 137)]
    assert message(result, "Restarting") == (
        "TFJob ns/mnist is restarting Worker 1, which exited with code 137, and with it every other "
        "replica (restart scope Job).")
    statuses = result.status.to_json()["replicaStatuses"] if result.status else {}
    assert (statuses["Worker"]["restarts"], statuses["PS"].get("restarts", 0)) == (1, 0)


@pytest.mark.parametrize(("scope", "pods", "created"), [
    # Worker 0 is gone, Worker 1 still terminating (its node lost, say): together, nothing starts before it goes.
    ("Job", [make_pod("PS", 0, terminating=True), make_pod("Worker", 1, terminating=True)], []),
    ("Job", [make_pod("Worker", 1, terminating=True)], []),
    # The last old pod gone: every replica is created at once.
    ("Job", [], [W0, W1, PS0]),
    # Each replica alone: a missing one is created whatever its peers do.
    ("Replica", [make_pod("PS", 0), make_pod("Worker", 1, terminating=True)], [W0]),
])
def test_a_job_restarted_together_starts_again_only_once_every_old_pod_is_gone(
        scope: str, pods: list[dict[str, Any]], created: list[str]) -> None:
    result = plan_of(job_scoped(scope), pods, services_for())
    assert [creation.name for creation in result.create if creation.kind == POD] == created


def tracked(pod: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["finalizers"] = [FINALIZER_REPLICA_TRACKING]
    return pod


@pytest.mark.parametrize(("scope", "replicas", "pods", "released", "with_delete"), [
    # The failed one's exit is counted by the status, so it waits for it; its peers' ends count for nothing.
    ("Job", {"Worker": 2, "PS": 1}, worker_1_killed(), [W0, W1, PS0], [W0, PS0]),
    ("Replica", {"Worker": 2, "PS": 1}, worker_1_killed(), [W1], []),
    # A worker scaled away is released with its delete; one that ended first keeps its finalizer until the status.
    ("Replica", {"Worker": 1, "PS": 1}, [make_pod("Worker", 0), make_pod("PS", 0), make_pod("Worker", 1)],
     [W1], [W1]),
    ("Replica", {"Worker": 1, "PS": 1},
     [make_pod("Worker", 0), make_pod("PS", 0), make_pod("Worker", 1, "Succeeded", exit_code=0)], [W1], []),
])
def test_a_live_pod_deleted_with_no_end_to_record_is_released_with_its_delete(
        scope: str, replicas: dict[str, int], pods: list[dict[str, Any]], released: list[str],
        with_delete: list[str]) -> None:
    result = plan_of(job_scoped(scope, replicas=replicas), [tracked(pod) for pod in pods], services_for(replicas))
    assert sorted(ref.name for ref in result.release) == sorted(released)
    names = {ref.uid: ref.name for ref in result.release}
    assert sorted(names[uid] for uid in result.release_with_delete) == sorted(with_delete)


def test_nothing_restarts_together_while_every_replica_runs() -> None:
    pods = [make_pod("Worker", 0), make_pod("Worker", 1), make_pod("PS", 0)]
    assert plan_of(job_scoped("Job"), pods, services_for()).delete == []


def test_a_replica_that_finished_is_not_restarted_with_the_others() -> None:
    replicas = {"Chief": 1, "Worker": 2}
    pods = [make_pod("Chief", 0), make_pod("Worker", 0, "Succeeded", exit_code=0),
            make_pod("Worker", 1, "Failed", exit_code=137)]
    result = plan_of(job_scoped("Job", replicas=replicas), pods, services_for(replicas))
    assert [ref.name for ref in result.delete if ref.kind == POD] == [W1, "mnist-chief-jje2-0"]


@pytest.mark.parametrize(("scope", "config", "error"), [
    ("Everything", ControllerConfig(),
     "metadata.annotations[tfop.kubeflow.org/restart-scope]: must be one of Replica, Job, not 'Everything'"),
    ("Job", ControllerConfig(replica_backend="jobs"),
     "metadata.annotations[tfop.kubeflow.org/restart-scope]: Job needs the pods replica backend, not jobs"),
])
def test_a_bad_restart_scope_fails_the_job_naming_the_annotation(scope: str, config: ControllerConfig,
                                                                 error: str) -> None:
    job = make_job()
    job["metadata"]["annotations"] = {"tfop.kubeflow.org/restart-scope": scope}
    result = plan_of(job, [], [], config=config)
    assert error in message(result, "Failed")
