"""What finished stays finished (plan/replicas/finished.py): the record of the replicas that ended for good, the
state of a pod deleted once it had ended, which pods tfop's finalizer is released from, and the plans of a job
whose finished replica's pod is gone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from support.plan_builders import (
    NOW,
    RID,
    T0,
    batch_job,
    job_pod,
    make_job,
    make_pod,
    name_of,
    parsed,
    plan_of,
    running,
    services_for,
)
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job_status import ReplicaStatus, TFJobStatus
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.planner import plan
from tfop.controller.plan.replicas.finished import (
    FinishedReplicas,
    format_indexes,
    parse_indexes,
    pods_to_release,
    record_finished,
)
from tfop.controller.plan.replicas.pod_slots import Slot, SlotState, slot_state
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import JOB, POD, SERVICE, PlanContext

FINALIZER = "tfop.kubeflow.org/replica-tracking"  # spelled out: the tests state the API they expect


@pytest.mark.parametrize(("text", "indexes"), [
    ("", frozenset()),
    ("0", frozenset({0})),
    ("0,2-4", frozenset({0, 2, 3, 4})),
    ("1-1,3", frozenset({1, 3})),
    ("0, 7-8", frozenset({0, 7, 8})),
    ("x,2,-3,4-", frozenset({2})),  # bad pieces are skipped, the good ones kept
    ("9998-999999999999", frozenset({9998, 9999})),  # no job has 10,000 replicas of a type
    ("12000", frozenset()),
])
def test_parse_indexes(text: str, indexes: frozenset[int]) -> None:
    assert parse_indexes(text) == indexes


@pytest.mark.parametrize(("indexes", "text"), [
    (set(), ""),
    ({3}, "3"),
    ({0, 1, 2, 3}, "0-3"),
    ({4, 0, 2, 3}, "0,2-4"),
    ({0, 2, 4, 5, 6, 9}, "0,2,4-6,9"),
])
def test_format_indexes(indexes: set[int], text: str) -> None:
    assert format_indexes(indexes) == text


def test_the_largest_job_s_finished_replicas_take_a_few_bytes() -> None:
    assert format_indexes(range(5_000)) == "0-4999"
    assert format_indexes(set(range(5_000)) - {2_500}) == "0-2499,2501-4999"
    # The worst case, every other one: 2,500 numbers of 9,445 digits in all, and 2,499 commas.
    assert len(format_indexes(range(0, 5_000, 2))) == 11_944


def pod(replica_type: str, index: int, phase: str = "Running", *, exit_code: int | None = None,
        deleted_with_grace: int | None = None, held: bool = True) -> dict[str, Any]:
    """A pod as the cache shows it; `deleted_with_grace`: deleted, with that grace period."""
    made = make_pod(replica_type, index, phase, exit_code=exit_code, terminating=deleted_with_grace is not None)
    if deleted_with_grace is not None:
        made["metadata"]["deletionGracePeriodSeconds"] = deleted_with_grace
    if held:
        made["metadata"]["finalizers"] = [FINALIZER]
    return made


W1 = ReplicaSlot("Worker", 1)


@pytest.mark.parametrize(("policy", "made", "state"), [
    ("OnFailure", pod("Worker", 1, "Succeeded", exit_code=0), SlotState.SUCCEEDED),
    # Deleted once it had ended (the apiserver gives an ended pod no grace): it keeps its end.
    ("OnFailure", pod("Worker", 1, "Succeeded", exit_code=0, deleted_with_grace=0), SlotState.SUCCEEDED),
    ("ExitCode", pod("Worker", 1, "Failed", exit_code=1, deleted_with_grace=0), SlotState.PERMANENT),
    # Stopped by its delete (a grace period: it was running), whatever its exit: made again once gone.
    ("OnFailure", pod("Worker", 1, "Succeeded", exit_code=0, deleted_with_grace=30), SlotState.TERMINATING),
    ("OnFailure", pod("Worker", 1, "Running", deleted_with_grace=30), SlotState.TERMINATING),
    # A retryable end is made again anyway: deleted, it waits to be gone as before.
    ("ExitCode", pod("Worker", 1, "Failed", exit_code=137, deleted_with_grace=0), SlotState.TERMINATING),
    ("ExitCode", pod("Worker", 1, "Failed", exit_code=137), SlotState.RETRYABLE),
])
def test_a_deleted_pod_keeps_the_end_it_had(policy: str, made: dict[str, Any], state: SlotState) -> None:
    spec = parsed(make_job({"Chief": 1, "Worker": 3}, policy=policy)).spec
    assert slot_state(spec, W1, PodView.of(made)) is state


def slot(index: int, state: SlotState) -> Slot:
    return Slot(ReplicaSlot("Worker", index), None, state)


@pytest.mark.parametrize(("before", "slots", "replicas", "succeeded", "failed"), [
    ({}, [slot(0, SlotState.RUNNING), slot(1, SlotState.SUCCEEDED)], 2, "1", ""),
    # What was recorded stays, whatever the slot shows now (its pod gone).
    ({"succeededIndexes": "1"}, [slot(0, SlotState.SUCCEEDED), slot(1, SlotState.ABSENT)], 2, "0-1", ""),
    ({}, [slot(0, SlotState.TOLERATED), slot(1, SlotState.PERMANENT), slot(2, SlotState.RETRYABLE)], 3, "", "0-1"),
    # Scaled down to 2: index 3 is not the job's any more; added again it is a new replica.
    ({"succeededIndexes": "0,3", "failedIndexes": "2"}, [slot(0, SlotState.ABSENT), slot(1, SlotState.RUNNING)], 2,
     "0", ""),
])
def test_the_record_grows_with_what_ended(before: dict[str, str], slots: list[Slot], replicas: int, succeeded: str,
                                          failed: str) -> None:
    spec = parsed(make_job({"Worker": replicas})).spec
    stored = TFJobStatus.from_json({"replicaStatuses": {"Worker": before}})
    record = record_finished(FinishedReplicas.of_status(stored), spec, slots)
    assert record.kept_in(ReplicaStatus(), "Worker").to_json() == {
        key: value for key, value in {"succeededIndexes": succeeded, "failedIndexes": failed}.items() if value}


RECORDED_W1 = FinishedReplicas({"Worker": frozenset({1})}, {})
NONE_RECORDED = FinishedReplicas({}, {})


@pytest.mark.parametrize(("pods", "record", "deleting", "everything", "released"), [
    # Live pods keep it; so does an ended one not yet recorded.
    ([pod("Worker", 0), pod("Worker", 1, "Succeeded", exit_code=0)], NONE_RECORDED, set(), False, []),
    # Once its end is in the status the plan writes, an ended pod is released.
    ([pod("Worker", 0), pod("Worker", 1, "Succeeded", exit_code=0)], RECORDED_W1, set(), False, ["worker-1"]),
    # Deleted by anyone: a pod stopped by its delete has nothing to record, one that had ended is recorded by now.
    ([pod("Worker", 0, deleted_with_grace=30), pod("Worker", 1, "Succeeded", exit_code=0, deleted_with_grace=0)],
     RECORDED_W1, set(), False, ["worker-0", "worker-1"]),
    # The plan deletes it (a restart, a lost node, a clean-up).
    ([pod("Worker", 0), pod("Worker", 2)], NONE_RECORDED, {f"pod-{name_of('Worker', 2)}"}, False, ["worker-2"]),
    # An ended pod of an index the job no longer has (scaled down).
    ([pod("Worker", 5, "Succeeded", exit_code=0)], NONE_RECORDED, set(), False, ["worker-5"]),
    # The job finished (its final tally written) or is being deleted: every pod.
    ([pod("Worker", 0), pod("Worker", 1, "Succeeded", exit_code=0)], NONE_RECORDED, set(), True,
     ["worker-0", "worker-1"]),
    # A pod without the finalizer (an older tfop made it) has nothing to release.
    ([pod("Worker", 1, "Succeeded", exit_code=0, held=False)], RECORDED_W1, set(), True, []),
])
def test_which_pods_are_released(pods: list[dict[str, Any]], record: FinishedReplicas, deleting: set[str],
                                 everything: bool, released: list[str]) -> None:
    names = [p.name for p in pods_to_release([PodView.of(p) for p in pods], record, {"Worker": 3},
                                             deleting=deleting, everything=everything)]
    assert names == [f"mnist-{name.split('-')[0]}-{RID}-{name.split('-')[1]}" for name in released]


# --------------------------------------------------------------------------- plans, the user's scenario

CHIEF_AND_3 = {"Chief": 1, "Worker": 3}


def chief_and_3_running(policy: str, workers: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A Chief + 3 Workers job as tfop left it running; `workers`: the Worker entry of replicaStatuses."""
    job = running(make_job(CHIEF_AND_3, policy=policy, **spec))
    if workers is not None:
        job["status"]["replicaStatuses"]["Worker"] = {**job["status"]["replicaStatuses"]["Worker"], **workers}
    return job


@dataclass
class Row:
    job: dict[str, Any]
    pods: list[dict[str, Any]]
    creates: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    worker: dict[str, Any] | None = None  # the Worker entry of the written status, but its selector; None: unchanged
    succeeded: bool = False


def pods_but_w1(*w1: dict[str, Any]) -> list[dict[str, Any]]:
    return [pod("Chief", 0), pod("Worker", 0), *w1, pod("Worker", 2)]


RECORDED = {"active": 2, "succeeded": 1, "failed": 0, "restarts": 0, "succeededIndexes": "1"}
# A deleted pod's restarts are retired into the status as it goes (restart_ledger.py), once.
RETIRED_W1 = {"retiredPodUIDs": [f"pod-{name_of('Worker', 1)}"]}
PLANS = {
    f"{policy}: {name}": row
    for policy in ("OnFailure", "ExitCode")
    for name, row in {
        "Worker 1 exits 0: its end is recorded, then its pod released": Row(
            chief_and_3_running(policy), pods_but_w1(pod("Worker", 1, "Succeeded", exit_code=0)),
            released=["worker-1"], worker=RECORDED),
        "its pod deleted before the status write: held by the finalizer, recorded, released, not made again": Row(
            chief_and_3_running(policy), pods_but_w1(pod("Worker", 1, "Succeeded", exit_code=0, deleted_with_grace=0)),
            released=["worker-1"], worker=RECORDED | RETIRED_W1),
        "its pod deleted after the status write, before the release: released, nothing else": Row(
            chief_and_3_running(policy, {"succeeded": 1, "active": 2, "succeededIndexes": "1"}),
            pods_but_w1(pod("Worker", 1, "Succeeded", exit_code=0, deleted_with_grace=0)), released=["worker-1"],
            worker=RECORDED | RETIRED_W1),
        "its pod gone after the release: not made again, still counted": Row(
            chief_and_3_running(policy, {"succeeded": 1, "active": 2, "succeededIndexes": "1"}), pods_but_w1()),
        "its pod gone, its end never recorded (an older tfop, no finalizer): made again, as before": Row(
            chief_and_3_running(policy), pods_but_w1(), creates=["worker-1"],
            worker={"active": 2, "succeeded": 0, "failed": 0, "restarts": 0}),
        "a running worker deleted by a user: released, made again once gone": Row(
            chief_and_3_running(policy), pods_but_w1(pod("Worker", 1, deleted_with_grace=30)),
            released=["worker-1"], worker={"active": 3, "succeeded": 0, "failed": 0, "restarts": 0} | RETIRED_W1),
    }.items()
}


def _with_recorded(job: dict[str, Any], replica_type: str, indexes: str, succeeded: int) -> dict[str, Any]:
    """`job` whose status records the `indexes` of `replica_type` as succeeded."""
    entry = job["status"]["replicaStatuses"][replica_type]
    job["status"]["replicaStatuses"][replica_type] = {**entry, "succeeded": succeeded, "succeededIndexes": indexes}
    return job


PLANS |= {
    "AllWorkers: the workers whose pods are gone count as finished": Row(
        _with_recorded(running(make_job({"Worker": 3}, policy="OnFailure", successPolicy="AllWorkers")), "Worker",
                       "0-1", 2),
        [pod("Worker", 2, "Succeeded", exit_code=0)], released=["worker-2"], succeeded=True,
        worker={"active": 0, "succeeded": 3, "failed": 0, "restarts": 0, "succeededIndexes": "0-2"}),
    "worker 0 decides success (no chief): its recorded end, with its pod gone, succeeds the job": Row(
        _with_recorded(running(make_job({"Worker": 2}, policy="ExitCode")), "Worker", "0", 1), [pod("Worker", 1)],
        released=["worker-1"], succeeded=True,
        worker={"active": 0, "succeeded": 1, "failed": 0, "restarts": 0, "succeededIndexes": "0"}),
    "the chief decides success: its recorded end, with its pod gone, succeeds the job": Row(
        _with_recorded(chief_and_3_running("OnFailure"), "Chief", "0", 1),
        [pod("Worker", 0, "Succeeded", exit_code=0), pod("Worker", 1, "Succeeded", exit_code=0),
         pod("Worker", 2, "Succeeded", exit_code=0)], released=["worker-0", "worker-1", "worker-2"], succeeded=True,
        worker={"active": 0, "succeeded": 3, "failed": 0, "restarts": 0, "succeededIndexes": "0-2"}),
}


@pytest.mark.parametrize("row", PLANS.values(), ids=PLANS.keys())
def test_plans_of_a_job_whose_finished_replica_is_gone(row: Row) -> None:
    replicas = {replica_type: spec["replicas"] for replica_type, spec in row.job["spec"]["tfReplicaSpecs"].items()}
    result = plan_of(row.job, row.pods, services_for(replicas))
    short = {name_of(t, i): f"{t.lower()}-{i}" for t, n in replicas.items() for i in range(n)}
    assert [short[c.name] for c in result.creates(POD)] == row.creates
    assert [short[ref.name] for ref in result.release] == row.released
    if row.worker is None:
        assert (result.status is None
                or result.status.to_json()["replicaStatuses"] == row.job["status"]["replicaStatuses"])
    else:
        assert result.status is not None
        written = dict(result.status.to_json()["replicaStatuses"]["Worker"])
        written.pop("selector")
        assert written == row.worker
    succeeded = result.status is not None and any(
        c["type"] == "Succeeded" and c["status"] == "True" for c in result.status.to_json().get("conditions", ()))
    assert succeeded == row.succeeded


def test_a_job_being_deleted_releases_every_pod_and_does_nothing_else() -> None:
    job = chief_and_3_running("OnFailure")
    job["metadata"]["deletionTimestamp"] = T0
    pods = [pod("Chief", 0), pod("Worker", 0, "Succeeded", exit_code=0, deleted_with_grace=0),
            pod("Worker", 1, held=False), pod("Worker", 2, deleted_with_grace=30)]
    result = plan_of(job, pods, services_for(CHIEF_AND_3))
    assert [ref.name for ref in result.release] == [name_of("Chief", 0), name_of("Worker", 0), name_of("Worker", 2)]
    assert (result.create, result.delete, result.status) == ([], [], None)


def test_the_job_backend_keeps_the_record_too() -> None:
    """A replica's Job that completed and was then deleted (by a user) is not made again."""
    job = _with_recorded(running(make_job({"Worker": 3}, policy="ExitCode")), "Worker", "1", 1)
    job["status"]["replicaBackend"] = "jobs"
    jobs = [batch_job("Worker", 0), batch_job("Worker", 2)]
    pods = [job_pod("Worker", 0, "a"), job_pod("Worker", 2, "a")]
    result = plan(PlanContext(job, {JOB: jobs, POD: pods, SERVICE: services_for({"Worker": 3})}, NOW,
                              ControllerConfig()))
    assert result.create == [] and result.release == []
    assert result.status is None or result.status.to_json()["replicaStatuses"]["Worker"]["succeededIndexes"] == "1"
