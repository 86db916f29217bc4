"""Table tests of the bound on waiting for what the cluster lacks (tfop/controller/plan/policies/unknown_scheduling.py):
a job whose pods name a missing PriorityClass (their creates refused by admission) or a scheduler that never takes
them waits up to its grace, saying when it gives up, then fails with a reason naming what is missing. The clock is
10:00:00, the grace 600 s unless a row says; every expected row is written out."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from support.plan_builders import (
    NOW,
    RID,
    cond,
    make_job,
    make_pod,
    message,
    name_of,
    services_for,
    stamp,
    with_selectors,
)
from tfop.api.timestamps import format_time
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.planner import plan
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import POD, SERVICE, CreateRefusal, JobCounters, Plan, PlanContext

GRACE = "tfop.kubeflow.org/unknown-scheduling-grace-seconds"
W0, W1 = name_of("Worker", 0), name_of("Worker", 1)
REFUSED = (f'creating them fails: the apiserver refused the pod of Worker 0: pods "{W0}" is forbidden: no '
           f'PriorityClass with name high was found; the apiserver refused the pod of Worker 1: pods "{W1}" is '
           "forbidden: no PriorityClass with name high was found")


def job(annotations: dict[str, str] | None = None, scheduler: str | None = None) -> dict[str, Any]:
    """Two workers, their template naming `scheduler` if given."""
    made = make_job({"Worker": 2})
    if scheduler is not None:
        made["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = scheduler
    if annotations:
        made["metadata"] = {**made["metadata"], "annotations": annotations}
    return made


def waiting(job: dict[str, Any], since: float, running_message: str) -> dict[str, Any]:
    """`job` as its plans left it: its Running condition False since `since` minutes from 10:00."""
    at = stamp(since)
    return {**job, "status": {
        "runtimeId": RID, "childNaming": "RuntimeId", "replicaBackend": "pods", "startTime": at,
        "workerReplicas": 2,
        "replicaStatuses": with_selectors({"Worker": {"active": 0, "succeeded": 0, "failed": 0, "restarts": 0}}),
        "replicaSummary": "0/2",
        "conditions": [cond("Created", "True", "TFJobCreated", "TFJob ns/mnist is created.", at),
                       cond("Running", "False", "TFJobPending", running_message, at)],
        "phase": "Creating", "state": "Pending", "reason": "TFJobPending", "lastReconcileTime": at}}


def refused_priority_class(*indexes: int, words: str = "no PriorityClass with name high was found"
                           ) -> tuple[CreateRefusal, ...]:
    """What the apiserver's Priority admission answers (403) to creating these workers' pods."""
    return tuple(CreateRefusal(POD, ReplicaSlot("Worker", index), name_of("Worker", index),
                               f'pods "{name_of("Worker", index)}" is forbidden: {words}', False)
                 for index in indexes)


def pending(index: int, created: float, *, node: str | None = None,
            scheduled: tuple[str, str] | None = None) -> dict[str, Any]:
    """Worker `index`'s pod, created `created` minutes from 10:00 and not running: on `node` if given, with a
    PodScheduled condition (status, reason) if given, else untouched by any scheduler."""
    pod = make_pod("Worker", index, "Pending")
    pod["metadata"]["creationTimestamp"] = format_time(NOW + timedelta(minutes=created))
    if node is not None:
        pod["spec"] = {"nodeName": node}
    if scheduled is not None:
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": scheduled[0], "reason": scheduled[1],
                                        "message": "0/3 nodes are available: 3 Insufficient cpu."}]
    return pod


@dataclass
class Case:
    job: dict[str, Any]
    pods: list[dict[str, Any]] = field(default_factory=list)
    refusals: tuple[CreateRefusal, ...] = ()
    now: datetime = NOW
    config: ControllerConfig = field(default_factory=ControllerConfig)
    running: tuple[str, str, str] | None = None  # the Running condition: status, reason, message
    failed: tuple[str, str] | None = None  # the Failed condition, True: reason, message
    requeue_after: float | None = None
    deletes: list[str] = field(default_factory=list)
    counters: JobCounters = field(default_factory=JobCounters)


def at(minutes: float) -> datetime:
    return NOW + timedelta(minutes=minutes)


WAITING_CREATE = f"TFJob ns/mnist is waiting for 2 of 2 replicas to run: 2 not created; {REFUSED}."
WAITING_PENDING = "TFJob ns/mnist is waiting for 2 of 2 replicas to run: 2 Pending."
NO_CLASS = 'The PriorityClass "high" that Worker 0-1 name does not exist: the job fails at {} unless it is created.'
NO_SCHEDULER = 'No scheduler named "{}" has taken Worker 0-1: the job fails at {} unless one takes them.'

ROWS = {
    "a PriorityClass refused at once: the Running condition says when the job gives up": Case(
        job(), refusals=refused_priority_class(0, 1),
        running=("False", "TFJobPending", f"{WAITING_CREATE} {NO_CLASS.format('2026-11-21T10:10:00Z')}"),
        requeue_after=600.0, counters=JobCounters(created=1)),
    "still refused within the grace: timed from when Running became False, requeued for the end": Case(
        waiting(job(), -5, WAITING_CREATE), refusals=refused_priority_class(0, 1),
        running=("False", "TFJobPending", f"{WAITING_CREATE} {NO_CLASS.format('2026-11-21T10:05:00Z')}"),
        requeue_after=300.0),
    "refused past the grace: the job fails naming the PriorityClass": Case(
        waiting(job(), -10, WAITING_CREATE), refusals=refused_priority_class(0, 1),
        failed=("PriorityClassNotFound", (
                'TFJob ns/mnist has failed because the PriorityClass "high" that Worker 0-1 name does not exist: it '
                "waited from 2026-11-21T09:50:00Z, longer than its unknown-scheduling grace of 600s.")),
        counters=JobCounters(failed=1)),
    "the job's annotation sets a shorter grace": Case(
        waiting(job({GRACE: "30"}), -0.5, WAITING_CREATE), refusals=refused_priority_class(0, 1),
        failed=("PriorityClassNotFound", (
                'TFJob ns/mnist has failed because the PriorityClass "high" that Worker 0-1 name does not exist: it '
                "waited from 2026-11-21T09:59:30Z, longer than its unknown-scheduling grace of 30s.")),
        counters=JobCounters(failed=1)),
    "the operator's config sets the grace of every job": Case(
        waiting(job(), -1, WAITING_CREATE), refusals=refused_priority_class(0, 1),
        config=ControllerConfig(unknown_scheduling_grace_seconds=3600.0),
        running=("False", "TFJobPending", f"{WAITING_CREATE} {NO_CLASS.format('2026-11-21T10:59:00Z')}"),
        requeue_after=3540.0),
    "another refusal (a quota) is retried without a bound": Case(
        waiting(job(), -60, WAITING_CREATE),
        refusals=refused_priority_class(0, 1, words="exceeded quota: q, requested: pods=1, used: pods=4, limited: "
                                                    "pods=4"),
        running=("False", "TFJobPending", (
            "TFJob ns/mnist is waiting for 2 of 2 replicas to run: 2 not created; creating them fails: the "
            f'apiserver refused the pod of Worker 0: pods "{W0}" is forbidden: exceeded quota: q, requested: '
            "pods=1, used: pods=4, limited: pods=4; the apiserver refused the pod of Worker 1: pods "
            f'"{W1}" is forbidden: exceeded quota: q, requested: pods=1, used: pods=4, limited: pods=4.'))),
    "pods created moments ago are not yet told: requeued for when they would be": Case(
        waiting(job(), -0.05, WAITING_PENDING), [pending(0, -0.05), pending(1, -0.05)],
        running=("False", "TFJobPending", WAITING_PENDING), requeue_after=7.0),
    "pods no scheduler has taken: told with the default scheduler's name and when the job gives up": Case(
        waiting(job(), -2, WAITING_PENDING), [pending(0, -2), pending(1, -1)],
        running=("False", "TFJobPending",
                 f"{WAITING_PENDING} {NO_SCHEDULER.format('default-scheduler', '2026-11-21T10:08:00Z')}"),
        requeue_after=480.0),
    "the scheduler the template names": Case(
        waiting(job(scheduler="my-scheduler"), -2, WAITING_PENDING), [pending(0, -2), pending(1, -2)],
        running=("False", "TFJobPending",
                 f"{WAITING_PENDING} {NO_SCHEDULER.format('my-scheduler', '2026-11-21T10:08:00Z')}"),
        requeue_after=480.0),
    "the gang scheduler's name, for pods that name none": Case(
        waiting(job(), -2, WAITING_PENDING), [pending(0, -2), pending(1, -2)],
        config=ControllerConfig(gang_scheduler="volcano"),
        running=("False", "TFJobPending", (
            "TFJob ns/mnist is waiting for 2 of 2 replicas to run: 2 Pending; their pods are created once the volcano "
            "scheduler admits PodGroup ns/mnist, which is not created yet. "
            f"{NO_SCHEDULER.format('volcano', '2026-11-21T10:08:00Z')}")),
        requeue_after=480.0),
    "untaken past the grace, timed from the oldest pod: the job fails naming the scheduler": Case(
        waiting(job(scheduler="my-scheduler"), -11, WAITING_PENDING), [pending(0, -11), pending(1, -3)],
        failed=("SchedulerNotFound", (
                'TFJob ns/mnist has failed because no scheduler named "my-scheduler" has taken Worker 0-1: it waited '
                "from 2026-11-21T09:49:00Z, longer than its unknown-scheduling grace of 600s.")),
        deletes=[W0, W1], counters=JobCounters(failed=1)),
    "a pod the scheduler found no room for waits without a bound": Case(
        waiting(job(), -60, WAITING_PENDING),
        [pending(0, -60, scheduled=("False", "Unschedulable")), pending(1, -60, scheduled=("False", "Unschedulable"))],
        running=("False", "TFJobPending", (
            "TFJob ns/mnist is waiting for 2 of 2 replicas to run: 2 Pending. Worker 0-1 [Unschedulable]: 0/3 nodes "
            "are available: 3 Insufficient cpu."))),
    "a pod bound to a node waits for its kubelet, not a scheduler": Case(
        waiting(job(), -60, WAITING_PENDING), [pending(0, -60, node="n1"), pending(1, -60, node="n2")],
        running=("False", "TFJobPending", WAITING_PENDING)),
}


def _plan(case: Case, status: dict[str, Any] | None = None) -> Plan:
    job = case.job if status is None else {**case.job, "status": status}
    return plan(PlanContext(job, {POD: case.pods, SERVICE: services_for({"Worker": 2})}, case.now, case.config,
                            case.refusals))


def _condition(result: Plan, condition_type: str) -> tuple[str, str, str] | None:
    assert result.status is not None
    for entry in result.status.to_json()["conditions"]:
        if entry["type"] == condition_type:
            return entry["status"], entry["reason"], entry["message"]
    return None


@pytest.mark.parametrize("case", list(ROWS.values()), ids=list(ROWS))
def test_waiting_for_what_the_cluster_lacks(case: Case) -> None:
    before = copy.deepcopy(case.job)
    result = _plan(case)
    assert case.job == before, "plan() must not mutate its input"
    assert result.requeue_after == case.requeue_after
    assert [ref.name for ref in result.deletes(POD)] == case.deletes
    assert result.counters == case.counters
    if case.failed is None:
        assert result.status is None or _condition(result, "Failed") is None
        if case.running is not None and result.status is not None:
            assert _condition(result, "Running") == case.running
        elif case.running is not None:
            assert case.job["status"]["conditions"][1]["message"] == case.running[2]
        return
    assert _condition(result, "Failed") == ("True", *case.failed)
    assert message(result, "Running") == case.failed[1]
    assert [event.reason for event in result.events if event.type == "Warning"] == [case.failed[0]]


@pytest.mark.parametrize("case", list(ROWS.values()), ids=list(ROWS))
def test_planning_again_on_the_written_status_changes_nothing(case: Case) -> None:
    first = _plan(case)
    second = _plan(case, first.status.to_json() if first.status is not None else case.job.get("status"))
    assert second.status is None
    assert second.requeue_after == first.requeue_after or case.failed is not None
