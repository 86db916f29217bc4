"""Table tests of the evaluators' final evaluation (tfop/controller/plan/policies/evaluator.py): a job whose training
succeeded waits, up to its grace, for a running evaluator, then succeeds whatever the evaluation came to. The clock
is 10:00:00; every expected row is written out."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from support.plan_builders import (
    NOW,
    RID,
    T0,
    batch_job,
    cond,
    condition,
    job_pod,
    make_job,
    make_pod,
    make_service,
    message,
    name_of,
    running,
    services_for,
    stamp,
    with_selectors,
)
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import JOB, POD, POD_GROUP, SERVICE, JobCounters, Plan, PlanContext

CHIEF0, W0, EV0 = name_of("Chief", 0), name_of("Worker", 0), name_of("Evaluator", 0)
REPLICAS = {"Chief": 1, "Worker": 1, "Evaluator": 1}
GRACE = "tfop.kubeflow.org/evaluator-grace-seconds"
WAIT_300 = ("TFJob ns/mnist: the training succeeded; waiting up to 300s, until 10:05:00, for Evaluator 0's final "
            "evaluation.")


def job(annotations: dict[str, str] | None = None, **run_policy: Any) -> dict[str, Any]:
    """A running Chief + Worker + Evaluator job."""
    made = running(make_job(REPLICAS, run_policy=run_policy or None))
    if annotations:
        made["metadata"] = {**made["metadata"], "annotations": annotations}
    return made


def waiting(job: dict[str, Any], text: str = WAIT_300) -> dict[str, Any]:
    """`job` as the wait leaves it once its worker is gone: its chief succeeded at 10:00:00."""
    return {**job, "status": {
        "runtimeId": RID, "childNaming": "RuntimeId", "replicaBackend": "pods", "startTime": T0,
        "replicaStatuses": with_selectors({"Chief": {"active": 0, "succeeded": 1, "failed": 0, "restarts": 0,
                                                     "succeededIndexes": "0"},
                                           "Worker": {"active": 0, "succeeded": 0, "failed": 0, "restarts": 0},
                                           "Evaluator": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}}),
        "replicaSummary": "1/3 succeeded, 1 evaluating",
        "conditions": [cond("Created", "True", "TFJobCreated", "TFJob ns/mnist is created."),
                       cond("Running", "True", "WaitingForEvaluator", text),
                       cond("Succeeded", "False", "WaitingForEvaluator", text)],
        "phase": "Running", "state": "Running", "reason": "WaitingForEvaluator", "lastReconcileTime": T0}}


CHIEF_DONE = make_pod("Chief", 0, "Succeeded", exit_code=0)
EVALUATING = make_pod("Evaluator", 0)
WAIT_LEFT = [make_service("Chief", 0), make_service("Evaluator", 0)]  # the worker's service went with it


@dataclass
class Case:
    job: dict[str, Any]
    pods: list[dict[str, Any]]
    services: list[dict[str, Any]] = field(default_factory=lambda: services_for(REPLICAS))
    now: datetime = NOW
    conditions: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    running_message: str | None = None  # the whole message of the Running condition
    delete_pods: list[str] = field(default_factory=list)
    delete_services: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    counters: JobCounters = field(default_factory=JobCounters)
    requeue_after: float | None = None
    status: dict[str, Any] = field(default_factory=dict)
    unchanged_status: bool = False


def ended(pod: dict[str, Any], finished_at: str) -> dict[str, Any]:
    """A copy of `pod` whose tensorflow container ended at `finished_at`, as its kubelet stamps it."""
    pod = copy.deepcopy(pod)
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = finished_at
    return pod


def at(minutes: float) -> datetime:
    return NOW + timedelta(minutes=minutes)


WAITS = {"Succeeded": ("False", "WaitingForEvaluator"), "Running": ("True", "WaitingForEvaluator"), "Failed": None}
SUCCEEDED = {"Succeeded": ("True", "TFJobSucceeded"), "Running": ("False", "TFJobSucceeded"), "Failed": None}

ROWS = {
    "the chief succeeds with the evaluator running: the job waits, the worker goes, the evaluator stays": Case(
        job(), [CHIEF_DONE, make_pod("Worker", 0), EVALUATING], conditions=WAITS, running_message=WAIT_300,
        delete_pods=[W0], delete_services=[W0], events=["ExitedWithCode", "WaitingForEvaluator"], requeue_after=300.0,
        status={"state": "Running", "phase": "Running", "reason": "WaitingForEvaluator", "completionTime": None,
                "replicaSummary": "1/3 succeeded, 1 evaluating", "replicaStatuses": {
                    "Chief": {"active": 0, "succeeded": 1, "failed": 0, "restarts": 0, "succeededIndexes": "0"},
                    "Worker": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0},
                    "Evaluator": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}}}),
    "the job's annotation sets the grace": Case(
        job({GRACE: "60"}), [CHIEF_DONE, make_pod("Worker", 0), EVALUATING], conditions=WAITS,
        running_message=("TFJob ns/mnist: the training succeeded; waiting up to 60s, until 10:01:00, for "
                         "Evaluator 0's final evaluation."), delete_pods=[W0], delete_services=[W0],
        events=["ExitedWithCode", "WaitingForEvaluator"], requeue_after=60.0),
    "activeDeadlineSeconds ends the wait sooner": Case(
        job(activeDeadlineSeconds=120), [CHIEF_DONE, make_pod("Worker", 0), EVALUATING], conditions=WAITS,
        running_message=("TFJob ns/mnist: the training succeeded; waiting up to 120s, until 10:02:00, for "
                         "Evaluator 0's final evaluation."), delete_pods=[W0], delete_services=[W0],
        events=["ExitedWithCode", "WaitingForEvaluator"], requeue_after=120.0),
    "the evaluator still evaluates within the grace: nothing changes, nothing is made again": Case(
        waiting(job()), [CHIEF_DONE, EVALUATING], WAIT_LEFT, now=at(2), conditions=WAITS, requeue_after=180.0,
        unchanged_status=True),
    "the chief's pod gone does not start the training again, and its recorded end still counts": Case(
        waiting(job()), [EVALUATING], [make_service("Evaluator", 0)], now=at(2), conditions=WAITS,
        requeue_after=180.0, unchanged_status=True),
    "a worker that fails during the wait does not fail the job": Case(
        waiting(job()), [CHIEF_DONE, make_pod("Worker", 0, "Failed", exit_code=1), EVALUATING],
        [*WAIT_LEFT, make_service("Worker", 0)], now=at(1), conditions=WAITS, events=["ExitedWithCode"],
        requeue_after=240.0),
    "the evaluator finishes: the job succeeds and keeps it as cleanPodPolicy Running says": Case(
        waiting(job()), [CHIEF_DONE, make_pod("Evaluator", 0, "Succeeded", exit_code=0)], WAIT_LEFT, now=at(2),
        conditions=SUCCEEDED, events=["TFJobSucceeded"], counters=JobCounters(successful=1),
        status={"state": "Succeeded", "phase": "Done", "completionTime": stamp(2),
                "replicaSummary": "2/3 succeeded"}),
    "the evaluator fails: a Warning, and the job succeeds all the same": Case(
        waiting(job()), [CHIEF_DONE, make_pod("Evaluator", 0, "Failed", exit_code=1, reason="Error")], WAIT_LEFT,
        now=at(2), conditions=SUCCEEDED, events=["ExitedWithCode", "EvaluatorFailed", "TFJobSucceeded"],
        counters=JobCounters(successful=1),
        status={"state": "Succeeded", "replicaSummary": "1/3 succeeded, 1 failed"}),
    "the grace runs out: a Warning, the evaluator is cleaned up, the job succeeds": Case(
        waiting(job()), [CHIEF_DONE, EVALUATING], WAIT_LEFT, now=at(5), conditions=SUCCEEDED,
        delete_pods=[EV0], delete_services=[EV0], events=["EvaluatorGraceExpired", "TFJobSucceeded"],
        counters=JobCounters(successful=1), status={"state": "Succeeded", "phase": "CleanUp",
                                                    "completionTime": stamp(5), "replicaSummary": "1/3 succeeded"}),
    "suspending ends the wait: the job succeeds": Case(
        waiting(job(suspend=True)), [CHIEF_DONE, EVALUATING], WAIT_LEFT, now=at(1), conditions=SUCCEEDED,
        delete_pods=[EV0], delete_services=[EV0], events=["EvaluatorGraceExpired", "TFJobSucceeded"],
        counters=JobCounters(successful=1), status={"state": "Succeeded", "completionTime": stamp(1)}),
    "a grace of 0 succeeds at once and cleans up the evaluator, as before": Case(
        job({GRACE: "0"}), [CHIEF_DONE, make_pod("Worker", 0), EVALUATING], conditions=SUCCEEDED,
        delete_pods=sorted([EV0, W0]), delete_services=sorted([EV0, W0]), events=["TFJobSucceeded"],
        counters=JobCounters(successful=1), status={"state": "Succeeded", "replicaSummary": "1/3 succeeded"}),
    "cleanPodPolicy All: the wait deletes what runs, the chief's ended pod stays to be counted at the end": Case(
        job(cleanPodPolicy="All"), [CHIEF_DONE, make_pod("Worker", 0), EVALUATING], conditions=WAITS,
        running_message=WAIT_300, delete_pods=[W0], delete_services=[W0],
        events=["ExitedWithCode", "WaitingForEvaluator"], requeue_after=300.0,
        status={"replicaSummary": "1/3 succeeded, 1 evaluating"}),
    "cleanPodPolicy All: the evaluator finishes, the tally counts the chief, then every pod goes": Case(
        waiting(job(cleanPodPolicy="All")), [CHIEF_DONE, make_pod("Evaluator", 0, "Succeeded", exit_code=0)],
        WAIT_LEFT, now=at(2), conditions=SUCCEEDED, delete_pods=sorted([CHIEF0, EV0]),
        delete_services=sorted([CHIEF0, EV0]), events=["TFJobSucceeded"], counters=JobCounters(successful=1),
        status={"state": "Succeeded", "phase": "CleanUp", "replicaSummary": "2/3 succeeded", "replicaStatuses": {
            "Chief": {"active": 0, "succeeded": 1, "failed": 0, "restarts": 0, "succeededIndexes": "0"},
            "Worker": {"active": 0, "succeeded": 0, "failed": 0, "restarts": 0},
            "Evaluator": {"active": 0, "succeeded": 1, "failed": 0, "restarts": 0, "succeededIndexes": "0"}}}),
    "cleanPodPolicy None deletes nothing, so nothing is waited for": Case(
        job(cleanPodPolicy="None"), [CHIEF_DONE, make_pod("Worker", 0), EVALUATING], conditions=SUCCEEDED,
        events=["TFJobSucceeded"], counters=JobCounters(successful=1),
        status={"state": "Succeeded", "phase": "Done"}),
    "a pending evaluator has not started evaluating: not waited for": Case(
        job(), [CHIEF_DONE, make_pod("Worker", 0), make_pod("Evaluator", 0, "Pending")], conditions=SUCCEEDED,
        delete_pods=sorted([EV0, W0]), delete_services=sorted([EV0, W0]), events=["TFJobSucceeded"],
        counters=JobCounters(successful=1)),
    "an evaluator that ended before the chief is not waited for": Case(
        job(), [CHIEF_DONE, make_pod("Worker", 0), make_pod("Evaluator", 0, "Succeeded", exit_code=0)],
        conditions=SUCCEEDED, delete_pods=[W0], delete_services=[W0], events=["TFJobSucceeded"],
        counters=JobCounters(successful=1), status={"replicaSummary": "2/3 succeeded"}),
    # The success's settle (policies/success.py): replicas still running get up to 2 s after the last end to end
    # by themselves; an evaluator the success waits for is not held up by it, one it does not is a replica like any.
    "the chief ended a second ago, a worker and the evaluator run: the worker has 1 s left, no wait starts yet": Case(
        job(), [ended(CHIEF_DONE, T0), make_pod("Worker", 0), EVALUATING], now=NOW + timedelta(seconds=1),
        conditions={"Succeeded": None, "Running": ("True", "TFJobRunning")}, events=["ExitedWithCode"],
        requeue_after=1.0, status={"state": "Running", "replicaSummary": "2/3"}),
    "the chief ended a second ago and only the evaluator runs: its wait starts at once": Case(
        job(), [ended(CHIEF_DONE, T0), ended(make_pod("Worker", 0, "Succeeded", exit_code=0), T0), EVALUATING],
        now=NOW + timedelta(seconds=1), conditions=WAITS,
        running_message=("TFJob ns/mnist: the training succeeded; waiting up to 300s, until 10:05:01, for "
                         "Evaluator 0's final evaluation."),
        events=["ExitedWithCode", "WaitingForEvaluator"], requeue_after=300.0,
        status={"state": "Running", "reason": "WaitingForEvaluator", "replicaSummary": "2/3 succeeded, 1 evaluating"}),
    "a grace of 0: the evaluator is not waited for, but gets the 2 s any running replica gets": Case(
        job({GRACE: "0"}), [ended(CHIEF_DONE, T0), ended(make_pod("Worker", 0, "Succeeded", exit_code=0), T0),
                            EVALUATING],
        now=NOW + timedelta(seconds=1), conditions={"Succeeded": None, "Running": ("True", "TFJobRunning")},
        events=["ExitedWithCode"], requeue_after=1.0, status={"state": "Running", "replicaSummary": "1/3"}),
    "a grace of 0, 2 s on: the job succeeds and the evaluator still running is cleaned up": Case(
        job({GRACE: "0"}), [ended(CHIEF_DONE, T0), ended(make_pod("Worker", 0, "Succeeded", exit_code=0), T0),
                            EVALUATING],
        now=NOW + timedelta(seconds=2), conditions=SUCCEEDED, delete_pods=[EV0], delete_services=[EV0],
        events=["TFJobSucceeded"], counters=JobCounters(successful=1),
        status={"state": "Succeeded", "phase": "CleanUp", "replicaSummary": "2/3 succeeded"}),
    "while the chief runs, nothing waits": Case(
        job(), [make_pod("Chief", 0), make_pod("Worker", 0), EVALUATING],
        conditions={"Succeeded": None, "Running": ("True", "TFJobRunning")}, unchanged_status=True),
}

INVALID = {
    "a grace in minutes": "'5m'",
    "a negative grace": "'-1'",
    "more than a day": "'86401'",
    "not a number": "'nan'",
}


def _names(refs: list[Any]) -> list[str]:
    return sorted(ref.name for ref in refs)


def _plan(case: Case, status: dict[str, Any] | None = None) -> Plan:
    job = case.job if status is None else {**case.job, "status": status}
    return plan(PlanContext(job, {POD: case.pods, SERVICE: case.services}, case.now, ControllerConfig()))


@pytest.mark.parametrize("case", list(ROWS.values()), ids=list(ROWS))
def test_final_evaluation(case: Case) -> None:
    before = copy.deepcopy(case.job)
    result = _plan(case)
    assert case.job == before, "plan() must not mutate its input"
    assert result.creates(POD) == [] and result.creates(SERVICE) == []
    assert _names(result.deletes(POD)) == case.delete_pods
    assert _names(result.deletes(SERVICE)) == case.delete_services
    assert [event.reason for event in result.events] == case.events
    assert result.counters == case.counters
    assert result.requeue_after == case.requeue_after
    if case.unchanged_status:
        assert result.status is None
        return
    for condition_type, expected in case.conditions.items():
        assert condition(result, condition_type) == expected, condition_type
    if case.running_message is not None:
        assert message(result, "Running") == message(result, "Succeeded") == case.running_message
    assert result.status is not None
    for key, written in case.status.items():
        # the selectors tfop writes beside the counts written out
        status = result.status.to_json()
        go = status.get("childNaming") == "TypeIndex"
        assert status.get(key) == (with_selectors(written, go=go) if key == "replicaStatuses" else written), key


@pytest.mark.parametrize("case", list(ROWS.values()), ids=list(ROWS))
def test_planning_again_on_the_written_status_changes_nothing(case: Case) -> None:
    first = _plan(case)
    second = _plan(case, first.status.to_json() if first.status is not None else case.job.get("status"))
    assert second.status is None
    assert second.events == []
    assert second.delete == first.delete


def test_the_failed_evaluation_and_the_cut_short_one_are_told_in_words() -> None:
    failed = _plan(ROWS["the evaluator fails: a Warning, and the job succeeds all the same"])
    expired = _plan(ROWS["the grace runs out: a Warning, the evaluator is cleaned up, the job succeeds"])
    assert [(e.type, e.message) for e in failed.events if e.reason == "EvaluatorFailed"] == [
        ("Warning", ("TFJob ns/mnist: the final evaluation failed: Evaluator 0, which exited with code 1 (Error). "
                     "The job succeeded: its training did."))]
    assert [(e.type, e.message) for e in expired.events if e.reason == "EvaluatorGraceExpired"] == [
        ("Warning", ("TFJob ns/mnist: Evaluator 0 was still evaluating when the wait for its final evaluation "
                     "ended; it is cleaned up as cleanPodPolicy says."))]


def test_the_success_after_the_wait_tells_the_evaluators_exit_and_the_wait_tells_the_chiefs() -> None:
    """The chief's exit of 0 is told as the wait starts (the job is not Succeeded yet); the exits of 0 the job
    ends with, by its Succeeded event."""
    started = _plan(ROWS["the chief succeeds with the evaluator running: the job waits, the worker goes, the "
                         "evaluator stays"])
    assert [(e.reason, e.message) for e in started.events] == [
        ("ExitedWithCode", "TFJob ns/mnist: Chief 0 exited with code 0."), ("WaitingForEvaluator", WAIT_300)]
    ended_wait = _plan(ROWS["the evaluator finishes: the job succeeds and keeps it as cleanPodPolicy Running says"])
    assert [(e.reason, e.message) for e in ended_wait.events] == [
        ("TFJobSucceeded", "TFJob ns/mnist successfully completed: Evaluator 0 exited with code 0.")]


def test_the_config_sets_the_default_grace() -> None:
    case = ROWS["the chief succeeds with the evaluator running: the job waits, the worker goes, the evaluator stays"]
    result = plan(PlanContext(case.job, {POD: case.pods, SERVICE: case.services}, NOW,
                              ControllerConfig(evaluator_grace_seconds=30)))
    assert message(result, "Running") == ("TFJob ns/mnist: the training succeeded; waiting up to 30s, until "
                                          "10:00:30, for Evaluator 0's final evaluation.")
    assert result.requeue_after == 30.0
    annotated = plan(PlanContext(job({GRACE: "90"}), {POD: case.pods, SERVICE: case.services}, NOW,
                                 ControllerConfig(evaluator_grace_seconds=30)))
    assert annotated.requeue_after == 90.0  # the job's annotation wins


@pytest.mark.parametrize("value", list(INVALID.values()), ids=list(INVALID))
def test_a_bad_grace_fails_the_job_naming_the_annotation(value: str) -> None:
    result = plan(PlanContext(job({GRACE: value[1:-1]}), {POD: [], SERVICE: []}, NOW, ControllerConfig()))
    assert condition(result, "Failed") == ("True", "InvalidSpec")
    assert message(result, "Failed") == (
        "TFJob ns/mnist has an invalid spec: metadata.annotations[tfop.kubeflow.org/evaluator-grace-seconds]: must "
        f"be a number of seconds from 0 to 86400, not {value}.")


def test_with_the_job_backend_the_evaluators_job_is_spared() -> None:
    on_jobs = job()
    on_jobs["status"] = {**on_jobs["status"], "replicaBackend": "jobs"}
    children = {JOB: [batch_job("Chief", 0, outcome=("Complete", "CompletionsReached")), batch_job("Worker", 0),
                      batch_job("Evaluator", 0)],
                POD: [job_pod("Chief", 0, "a", "Succeeded", exit_code=0), job_pod("Worker", 0, "a"),
                      job_pod("Evaluator", 0, "a")],
                SERVICE: services_for(REPLICAS)}
    result = plan(PlanContext(on_jobs, children, NOW, ControllerConfig()))
    assert condition(result, "Succeeded") == ("False", "WaitingForEvaluator")
    assert _names(result.deletes(JOB)) == [W0] and _names(result.deletes(SERVICE)) == [W0]
    assert result.deletes(POD) == [] and result.create == []
    assert message(result, "Running") == WAIT_300


def test_the_pod_group_stays_while_the_evaluator_finishes_and_goes_with_it() -> None:
    """The evaluator's pod was scheduled in the job's gang: its group goes only when the job is done."""
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "mnist", "namespace": "ns", "uid": "pg-mnist"}, "spec": {"minMember": 3}}
    gang = ControllerConfig(gang_scheduler="scheduler-plugins")
    started = plan(PlanContext(job(), {POD: [CHIEF_DONE, make_pod("Worker", 0), EVALUATING],
                                       SERVICE: services_for(REPLICAS), POD_GROUP: [group]}, NOW, gang))
    assert condition(started, "Succeeded") == ("False", "WaitingForEvaluator")
    assert started.deletes(POD_GROUP) == [] and _names(started.deletes(POD)) == [W0]
    ended = plan(PlanContext(waiting(job()), {POD: [CHIEF_DONE, EVALUATING], SERVICE: WAIT_LEFT,
                                              POD_GROUP: [group]}, at(5), gang))
    assert condition(ended, "Succeeded") == ("True", "TFJobSucceeded")
    assert _names(ended.deletes(POD_GROUP)) == ["mnist"] and _names(ended.deletes(POD)) == [EV0]
