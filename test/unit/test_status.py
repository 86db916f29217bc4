"""Table tests of the status pieces: exit codes, conditions, replica counts, the summary fields, restart ledger."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from support.plan_builders import make_job, plan_of, running_pods
from tfop.api.constants import JobPhase, JobState
from tfop.api.exit_codes import ExitClass, classify_exit_code
from tfop.controller.plan.job_status import Condition, ReplicaStatus
from tfop.controller.plan.observed.pod import PodView, Termination
from tfop.controller.plan.replicas.replica_status import replica_status
from tfop.controller.plan.replicas.restart_ledger import RestartLedger, count_restarts
from tfop.controller.plan.status import (
    Summary,
    condition_is_true,
    conditions_of,
    find_condition,
    is_terminating,
    set_condition,
    summary,
)

NOW = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
T0 = "2026-11-21T10:00:00Z"
T1 = "2026-11-21T10:01:00Z"


def pod(phase: str = "Running", *, uid: str = "p", restarts: int = 0, terminating: bool = False,
        statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": uid, "uid": uid}
    if terminating:
        metadata["deletionTimestamp"] = T0
    return {"metadata": metadata, "status": {"phase": phase, "containerStatuses": statuses if statuses is not None
                                             else [{"name": "tensorflow", "restartCount": restarts}]}}


# ---------------------------------------------------------------- exit codes

@pytest.mark.parametrize(("code", "expected"), [
    (0, ExitClass.SUCCEEDED), (1, ExitClass.PERMANENT), (2, ExitClass.PERMANENT), (126, ExitClass.PERMANENT),
    (127, ExitClass.PERMANENT), (128, ExitClass.RETRYABLE), (130, ExitClass.RETRYABLE),
    (137, ExitClass.RETRYABLE), (143, ExitClass.RETRYABLE), (255, ExitClass.RETRYABLE),
    (256, ExitClass.PERMANENT), (-1, ExitClass.PERMANENT), (48879, ExitClass.PERMANENT),
], ids=str)
def test_classify_exit_code(code: int, expected: ExitClass) -> None:
    assert classify_exit_code(code) is expected


def terminated(code: int, reason: str | None = None) -> dict[str, Any]:
    return {"terminated": {"exitCode": code, **({"reason": reason} if reason else {})}}


@pytest.mark.parametrize(("statuses", "expected"), [
    ([{"name": "tensorflow", "state": terminated(137, "OOMKilled")}], Termination(137, "OOMKilled")),
    ([{"name": "tensorflow", "state": terminated(1, "Error")}], Termination(1, "Error")),
    ([{"name": "tensorflow", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
       "lastState": terminated(2, "Error")}], Termination(2, "Error")),
    ([{"name": "tensorflow", "state": terminated(0, "Completed"), "lastState": terminated(9)}],
     Termination(0, "Completed")),
    ([{"name": "sidecar", "state": terminated(1)}, {"name": "tensorflow", "state": terminated(143)}],
     Termination(143)),
    ([{"name": "sidecar", "state": terminated(1)}], None),
    ([{"name": "tensorflow", "state": {"running": {}}}], None),
    ([{"name": "tensorflow", "state": {"terminated": {"exitCode": "1"}}}], None),
    ([], None),
    ("junk", None),
], ids=["oom", "error", "restarted in place: last state", "current state first", "other containers ignored",
        "only a sidecar ended", "running", "exit code of the wrong type", "no statuses", "junk"])
def test_container_termination(statuses: Any, expected: Termination | None) -> None:
    assert PodView.of(pod("Failed", statuses=statuses)).termination == expected


@pytest.mark.parametrize(("termination", "text"), [
    (Termination(137, "OOMKilled"), "exited with code 137 (OOMKilled)"),
    (Termination(1), "exited with code 1"),
], ids=["with reason", "without reason"])
def test_termination_describe(termination: Termination, text: str) -> None:
    assert termination.describe() == text


# ---------------------------------------------------------------- conditions

def running(status: str = "True", **extra: Any) -> dict[str, Any]:
    return {"type": "Running", "status": status, "reason": "TFJobRunning", "message": "running",
            "observedGeneration": 1, "lastTransitionTime": T0, "lastUpdateTime": T0, **extra}


CREATED = {"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "created",
           "observedGeneration": 1, "lastTransitionTime": T0, "lastUpdateTime": T0}


@pytest.mark.parametrize(("before", "call", "after"), [
    ([], dict(true=True, reason="TFJobRunning", message="running"), [running(lastTransitionTime=T1,
                                                                             lastUpdateTime=T1)]),
    ([CREATED, running()], dict(true=True, reason="TFJobRunning", message="running"), [CREATED, running()]),
    ([CREATED, running()], dict(true=False, reason="TFJobRestarting", message="again"),
     [CREATED, running("False", reason="TFJobRestarting", message="again", lastTransitionTime=T1,
                       lastUpdateTime=T1)]),
    ([running(), CREATED], dict(true=True, reason="TFJobRunning", message="still running"),
     [running(message="still running", lastUpdateTime=T1), CREATED]),
    ([CREATED, running()], dict(true=True, reason="TFJobRunning", message="running", generation=2),
     [CREATED, running(observedGeneration=2, lastUpdateTime=T1)]),
    ([CREATED], dict(true=True, reason="TFJobRunning", message="running"),
     [CREATED, running(lastTransitionTime=T1, lastUpdateTime=T1)]),
], ids=["added", "unchanged: same list", "status flips: new transition time",
        "message changes: transition time kept, place kept", "new generation recorded", "appended after others"])
def test_set_condition(before: list[dict[str, Any]], call: dict[str, Any], after: list[dict[str, Any]]) -> None:
    original = copy.deepcopy(before)
    generation = call.pop("generation", 1)
    result = set_condition(conditions(before), "Running", now=NOW + timedelta(minutes=1), generation=generation,
                           **call)
    assert [condition.to_json() for condition in result] == after
    assert before == original


def test_set_condition_without_generation_leaves_it_out() -> None:
    result = set_condition((), "Created", true=True, reason="r", message="m", now=NOW, generation=None)
    assert "observedGeneration" not in result[0].to_json()


@pytest.mark.parametrize(("status", "expected"), [
    ({"conditions": [CREATED, "junk", {"status": "True"}, running()]}, [CREATED, running()]),
    ({"conditions": "junk"}, []), ({}, []), (None, []),
], ids=["junk entries dropped", "junk list", "no conditions", "no status"])
def test_conditions_of(status: Any, expected: list[dict[str, Any]]) -> None:
    assert [condition.to_json() for condition in conditions_of(status)] == expected


def test_find_and_truth() -> None:
    found = conditions([CREATED, running("False")])
    assert find_condition(found, "Created") == Condition.from_json(CREATED) and find_condition(found, "Failed") is None
    assert condition_is_true(found, "Created") and not condition_is_true(found, "Running")
    assert not condition_is_true(found, "Failed")


def conditions(entries: list[dict[str, Any]]) -> tuple[Condition, ...]:
    return tuple(Condition.from_json(entry) for entry in entries)


def cond(condition_type: str, status: str, reason: str) -> dict[str, Any]:
    return {"type": condition_type, "status": status, "reason": reason, "message": ""}


@pytest.mark.parametrize(("conditions", "cleaning_up", "expected"), [
    ([cond("Created", "True", "TFJobCreated")], False, ("Creating", "Created", "TFJobCreated")),
    ([cond("Created", "True", "TFJobCreated"), cond("Running", "False", "TFJobPending")], False,
     ("Creating", "Pending", "TFJobPending")),
    ([cond("Running", "True", "TFJobRunning")], False, ("Running", "Running", "TFJobRunning")),
    ([cond("Running", "False", "TFJobRestarting"), cond("Restarting", "True", "TFJobRestarting")], False,
     ("Creating", "Restarting", "TFJobRestarting")),
    ([cond("Running", "False", "TFJobSucceeded"), cond("Succeeded", "True", "TFJobSucceeded")], True,
     ("CleanUp", "Succeeded", "TFJobSucceeded")),
    ([cond("Succeeded", "True", "TFJobSucceeded")], False, ("Done", "Succeeded", "TFJobSucceeded")),
    ([cond("Failed", "True", "DeadlineExceeded")], False, ("Failed", "Failed", "DeadlineExceeded")),
    ([cond("Failed", "True", "BackoffLimitExceeded")], True, ("CleanUp", "Failed", "BackoffLimitExceeded")),
    ([cond("Failed", "False", "InvalidSpecCorrected"), cond("Running", "True", "TFJobRunning")], False,
     ("Running", "Running", "TFJobRunning")),
    ([cond("Suspended", "True", "TFJobSuspended"), cond("Running", "False", "TFJobSuspended")], False,
     ("Creating", "Suspended", "TFJobSuspended")),
    ([cond("Suspended", "True", "TFJobSuspended")], True, ("CleanUp", "Suspended", "TFJobSuspended")),
    ([], False, ("Creating", "Created", "")),
    # A failed create holds the job in Pending (with the refusal in the message), never in Running.
    ([cond("Created", "True", "TFJobCreated"), cond("Running", "False", "TFJobPending"),
      cond("Restarting", "False", "TFJobRunning")], False, ("Creating", "Pending", "TFJobPending")),
    # Restarting wins over a Running condition not yet cleared only once Running is false.
    ([cond("Running", "True", "TFJobRunning"), cond("Suspended", "False", "TFJobResumed")], False,
     ("Running", "Running", "TFJobRunning")),
], ids=["created", "pending", "running", "restarting", "succeeded, cleaning up", "done", "failed",
        "failed, cleaning up", "running after a corrected spec", "suspended", "suspending", "nothing",
        "pending again after a restart", "running after a resume"])
def test_summary(conditions: list[dict[str, Any]], cleaning_up: bool,
                 expected: tuple[JobPhase, JobState, str]) -> None:
    assert summary(tuple(map(Condition.from_json, conditions)), cleaning_up=cleaning_up) == Summary(*expected)


# ---------------------------------------------------------------- pods

@pytest.mark.parametrize(("given", "expected"), [
    (pod("Pending"), "Pending"), (pod("Succeeded"), "Succeeded"), ({"status": {}}, "Pending"), ({}, "Pending"),
], ids=["pending", "succeeded", "no phase yet", "no status"])
def test_pod_phase(given: dict[str, Any], expected: str) -> None:
    assert PodView.of(given).phase == expected


@pytest.mark.parametrize(("statuses", "expected"), [
    ([{"name": "tensorflow", "restartCount": 3}], 3),
    ([{"name": "tensorflow", "restartCount": 3}, {"name": "sidecar", "restartCount": 2}], 5),
    ([{"name": "tensorflow"}], 0), ([{"name": "tensorflow", "restartCount": "3"}], 0),
    ([{"name": "tensorflow", "restartCount": -4}], 0),
], ids=["one container", "all containers", "missing", "wrong type", "negative"])
def test_pod_restart_count(statuses: list[dict[str, Any]], expected: int) -> None:
    assert PodView.of(pod(statuses=statuses)).restart_count == expected


def test_is_terminating() -> None:
    assert is_terminating(pod(terminating=True)) and not is_terminating(pod()) and not is_terminating({})
    assert PodView.of(pod(terminating=True)).terminating and not PodView.of(pod()).terminating


def test_replica_status_counts_pods_by_phase() -> None:
    pods = [pod("Pending"), pod("Running"), pod("Running"), pod("Succeeded"), pod("Failed"), pod("Unknown")]
    assert replica_status([PodView.of(entry) for entry in pods], restarts=4).to_json() == {
        "active": 3, "succeeded": 1, "failed": 1, "restarts": 4}


# ---------------------------------------------------------------- the restart ledger

LEDGER_CASES = {
    "pods alive: their restarts in place count, nothing is retired": (
        RestartLedger(), [pod(uid="a", restarts=2), pod(uid="b", restarts=1)], set(), set(),
        RestartLedger(), 3, []),
    "a failed pod deleted to be recreated: its restarts plus one": (
        RestartLedger(), [pod("Failed", uid="a", restarts=2), pod(uid="b", restarts=1)], {"a"}, {"a"},
        RestartLedger(3, ("a",)), 4, ["a"]),
    "a pod deleted to scale down keeps its restarts, no recreation": (
        RestartLedger(), [pod(uid="a", restarts=2)], {"a"}, set(), RestartLedger(2, ("a",)), 2, []),
    "seen again while terminating: not counted twice": (
        RestartLedger(3, ("a",)), [pod("Failed", uid="a", restarts=2, terminating=True)], set(), set(),
        RestartLedger(3, ("a",)), 3, []),
    "a counted pod whose delete failed is not counted again": (
        RestartLedger(3, ("a",)), [pod("Failed", uid="a", restarts=2)], {"a"}, {"a"},
        RestartLedger(3, ("a",)), 3, []),
    "gone for good: its uid is forgotten, its count kept": (
        RestartLedger(3, ("a",)), [pod(uid="b")], set(), set(), RestartLedger(3), 3, []),
    "a failed pod found terminating, never counted: a recreation": (
        RestartLedger(1), [pod("Failed", uid="c", restarts=1, terminating=True)], set(), set(),
        RestartLedger(3, ("c",)), 3, ["c"]),
    "a running pod found terminating (deleted by a user): its restarts only": (
        RestartLedger(), [pod(uid="d", restarts=4, terminating=True)], set(), set(), RestartLedger(4, ("d",)), 4, []),
}


@pytest.mark.parametrize(("ledger", "pods", "deleting", "recreating", "new_ledger", "total", "recreated"),
                         list(LEDGER_CASES.values()), ids=list(LEDGER_CASES))
def test_count_restarts(ledger: RestartLedger, pods: list[dict[str, Any]], deleting: set[str], recreating: set[str],
                        new_ledger: RestartLedger, total: int, recreated: list[str]) -> None:
    count = count_restarts(ledger, [PodView.of(entry) for entry in pods], deleting=deleting, recreating=recreating,
                           restarts_of=lambda seen: seen.restart_count)
    assert count.ledger == new_ledger
    assert count.total == total
    assert [entry.uid for entry in count.recreated] == recreated


@pytest.mark.parametrize(("entry", "ledger", "fields"), [
    ({}, RestartLedger(), {}),
    ({"active": 1, "restarts": 4, "retiredRestarts": 3, "retiredPodUIDs": ["a"]}, RestartLedger(3, ("a",)),
     {"retiredRestarts": 3, "retiredPodUIDs": ["a"]}),
    ({"retiredRestarts": 2}, RestartLedger(2), {"retiredRestarts": 2}),
    ({"retiredRestarts": "3", "retiredPodUIDs": "a"}, RestartLedger(), {}),
    ({"retiredRestarts": -3, "retiredPodUIDs": ["a", 7]}, RestartLedger(0, ("a",)), {"retiredPodUIDs": ["a"]}),
    (None, RestartLedger(), {}),
], ids=["empty", "full", "count only", "wrong types", "negative and junk", "no entry"])
def test_ledger_round_trip(entry: Any, ledger: RestartLedger, fields: dict[str, Any]) -> None:
    assert RestartLedger.from_replica_status(ReplicaStatus.from_json(entry) if entry is not None else None) == ledger
    assert ledger.kept_in(ReplicaStatus()).to_json() == fields


SELECTOR_ROWS = {
    "tfop's naming: the runtime id makes the selector this job's": (
        "RuntimeId", "Worker",
        ("training.kubeflow.org/job-name=mnist,training.kubeflow.org/replica-type=worker,"
         "training.kubeflow.org/runtime-id=jje2")),
    "a PS under tfop's naming": (
        "RuntimeId", "PS",
        ("training.kubeflow.org/job-name=mnist,training.kubeflow.org/replica-type=ps,"
         "training.kubeflow.org/runtime-id=jje2")),
    "the Go operator's naming: its pods have no runtime id, their operator-name label says whose they are": (
        "TypeIndex", "Worker",
        ("training.kubeflow.org/job-name=mnist,training.kubeflow.org/replica-type=worker,"
         "training.kubeflow.org/operator-name in (tfjob-controller,tfop)")),
}


@pytest.mark.parametrize(("scheme", "replica_type", "expected"), SELECTOR_ROWS.values(), ids=SELECTOR_ROWS.keys())
def test_each_replica_type_gets_the_selector_of_its_pods(scheme: str, replica_type: str, expected: str) -> None:
    job = make_job({"Worker": 2, "PS": 1}, status={"childNaming": scheme})
    pods = [] if scheme == "TypeIndex" else running_pods()
    result = plan_of(job, pods, [])
    assert result.status is not None
    assert result.status.to_json()["replicaStatuses"][replica_type]["selector"] == expected
    if scheme == "RuntimeId":  # the selector picks exactly the pods tfop labels for that type
        picked = [pod["metadata"]["name"] for pod in pods if all(
            pod["metadata"]["labels"].get(key) == value
            for key, value in (term.split("=") for term in expected.split(",")))]
        assert picked == [pod["metadata"]["name"] for pod in pods
                          if pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] == replica_type.lower()]
