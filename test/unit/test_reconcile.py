"""Table tests of plan(): each rule of the reconcile as rows of (state in -> actions, status, events out)."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from support.plan_builders import (
    JOB_NAME,
    KEEP,
    NOW,
    RID,
    T0,
    cond,
    condition,
    invalid,
    make_job,
    make_pod,
    make_service,
    message,
    name_of,
    plan_of,
    restarting_worker_1,
    running,
    running_pods,
    services_for,
    settled,
    suspended,
    waiting_for_one_pending_worker,
    with_selectors,
)
from tfop.controller.apply.child_writes import is_permanent_refusal
from tfop.controller.cache_transforms import slim_job, slim_metadata, slim_pod
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import POD, SERVICE, CreateRefusal, JobCounters, Plan, ReplicaRestart
from tfop.kube.errors import ApiError, error_from_status

# ---------------------------------------------------------------- the table



@dataclass
class Case:
    job: dict[str, Any]
    pods: list[dict[str, Any]] = field(default_factory=list)
    services: list[dict[str, Any]] | None = None  # None: every desired service exists
    now: datetime = NOW
    create_pods: Any = KEEP  # expected names, sorted
    create_services: Any = KEEP
    delete_pods: Any = KEEP
    delete_services: Any = KEEP
    conditions: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    events: Any = KEEP  # expected reasons, in order
    counters: Any = KEEP
    requeue_after: Any = KEEP
    delete_job: bool = False
    status: dict[str, Any] = field(default_factory=dict)  # expected top-level status values (None: absent)
    messages: dict[str, list[str]] = field(default_factory=dict)  # condition type -> fragments of its message
    unchanged_status: bool = False
    refusals: tuple[CreateRefusal, ...] = ()
    restarts: Any = KEEP  # expected plan.restarts (what the operator logs)
    config: ControllerConfig = field(default_factory=ControllerConfig)


def at(minutes: float) -> datetime:
    return NOW + timedelta(minutes=minutes)


def ended(pod: dict[str, Any], finished_at: str) -> dict[str, Any]:
    """`pod` whose tensorflow container ended at `finished_at`, as its kubelet stamps it."""
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = finished_at
    return pod


W0, W1, W2, PS0 = name_of("Worker", 0), name_of("Worker", 1), name_of("Worker", 2), name_of("PS", 0)
CHIEF0 = name_of("Chief", 0)
ALL3 = sorted([W0, W1, PS0])
CREATED = {"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "TFJob ns/mnist is created.",
           "observedGeneration": 1, "lastTransitionTime": T0, "lastUpdateTime": T0}
COUNTED = make_job(status={"startTime": T0, "conditions": [CREATED], "replicaStatuses": {"Worker": {
    "active": 1, "succeeded": 0, "failed": 0, "restarts": 1, "retiredRestarts": 1,
    "retiredPodUIDs": ["old-w1"]}, "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}}})

CREATION = {
    "fresh job creates every pod and service": Case(
        make_job(), services=[], create_pods=ALL3, create_services=ALL3, delete_pods=[], events=["TFJobCreated"],
        counters=JobCounters(created=1), conditions={"Created": ("True", "TFJobCreated"),
                                                     "Running": ("False", "TFJobPending")},
        status={"startTime": T0, "runtimeId": RID, "phase": "Creating", "state": "Pending", "replicaSummary": "0/3"}),
    "all children present: nothing to create": Case(
        running(make_job()), running_pods(), create_pods=[], create_services=[], delete_pods=[], delete_services=[],
        events=[], unchanged_status=True),
    "only the missing pod is created": Case(
        running(make_job()), [make_pod("Worker", 0), make_pod("PS", 0)], create_pods=[W1], create_services=[]),
    "only the missing service is created": Case(
        running(make_job()), running_pods(), [make_service("Worker", 0), make_service("PS", 0)],
        create_pods=[], create_services=[W1]),
    "scale down deletes the pods and services above the new count": Case(
        running(make_job({"Worker": 1, "PS": 1})), [*running_pods({"Worker": 3, "PS": 1})],
        services_for({"Worker": 3, "PS": 1}), create_pods=[], delete_pods=sorted([W1, W2]),
        delete_services=sorted([W1, W2])),
    "scale down leaves children already terminating alone": Case(
        running(make_job({"Worker": 1})), [make_pod("Worker", 0), make_pod("Worker", 1, terminating=True)],
        [make_service("Worker", 0), make_service("Worker", 1, terminating=True)], delete_pods=[],
        delete_services=[], create_pods=[]),
    "a replica type removed from the spec loses its pods": Case(
        make_job({"Worker": 1}), [make_pod("Worker", 0), make_pod("PS", 0)],
        [make_service("Worker", 0), make_service("PS", 0)], create_pods=[], delete_pods=[PS0], delete_services=[PS0]),
    "a terminating pod is neither recreated nor a failure": Case(
        running(make_job()), [make_pod("Worker", 0), make_pod("Worker", 1, "Failed", exit_code=1, terminating=True),
                              make_pod("PS", 0)],
        create_pods=[], delete_pods=[], conditions={"Failed": None}),
    "a second pod labelled for a slot is deleted; the one named for the slot keeps it": Case(
        running(make_job({"Worker": 1})), [{**make_pod("Worker", 0), "metadata": {
            **make_pod("Worker", 0)["metadata"], "name": "mnist-worker-0", "uid": "other"}}, make_pod("Worker", 0)],
        services_for({"Worker": 1}), create_pods=[], delete_pods=["mnist-worker-0"]),
    "a job being deleted is left to the garbage collector": Case(
        {**make_job(), "metadata": {**make_job()["metadata"], "deletionTimestamp": T0}},
        create_pods=[], create_services=[], delete_pods=[], events=[], unchanged_status=True),
    "a pod whose service is terminating waits for it": Case(
        running(make_job({"Worker": 1})), running_pods({"Worker": 1}), [make_service("Worker", 0, terminating=True)],
        create_services=[], delete_services=[]),
}

EXIT_CODES = {
    "ExitCode 137 (OOMKilled) recreates the pod once the old one is gone": Case(
        running(make_job()), [make_pod("Worker", 0), make_pod("Worker", 1, "Failed", exit_code=137,
                                                               reason="OOMKilled"), make_pod("PS", 0)],
        create_pods=[], delete_pods=[W1], delete_services=[], events=["ExitedWithCode", "TFJobRestarting"],
        counters=JobCounters(restarted=1, restarts_by_exit_class=(("retryable", 1),)),
        conditions={"Restarting": ("True", "TFJobRestarting"), "Running": ("False", "TFJobRestarting"),
                    "Failed": None},
        messages={"Restarting": ["Worker 1", "137", "OOMKilled"]},
        restarts=(ReplicaRestart("Worker", 1, 137, "retryable", restarts=1),),
        status={"state": "Restarting", "phase": "Creating", "reason": "TFJobRestarting", "replicaSummary": "2/3"}),
    "ExitCode 128 and 255 are retryable too": Case(
        running(make_job({"Worker": 2})), [make_pod("Worker", 0, "Failed", exit_code=128),
                                           make_pod("Worker", 1, "Failed", exit_code=255)],
        delete_pods=sorted([W0, W1]), counters=JobCounters(restarted=2, restarts_by_exit_class=(("retryable", 2),))),
    "ExitCode 1 fails the job with the replica, code and reason": Case(
        running(make_job()), [make_pod("Worker", 0), make_pod("Worker", 1, "Failed", exit_code=1, reason="Error"),
                              make_pod("PS", 0)],
        create_pods=[], delete_pods=sorted([W0, PS0]), events=["ExitedWithCode", "TFJobFailed"],
        counters=JobCounters(failed=1),
        conditions={"Failed": ("True", "TFJobFailed"), "Running": ("False", "TFJobFailed")},
        messages={"Failed": ["Worker 1", "exited with code 1", "(Error)"]}, restarts=(),
        status={"completionTime": T0, "state": "Failed", "phase": "CleanUp", "reason": "TFJobFailed",
                "replicaSummary": "0/3 succeeded, 1 failed"}),
    "ExitCode 127 is permanent": Case(
        running(make_job({"Worker": 1})), [make_pod("Worker", 0, "Failed", exit_code=127)],
        conditions={"Failed": ("True", "TFJobFailed")}),
    "OOMKilled is retryable even when the container's main process exited 0 (a child of it was killed)": Case(
        running(make_job({"Worker": 1})), [make_pod("Worker", 0, "Failed", exit_code=0, reason="OOMKilled")],
        delete_pods=[W0], conditions={"Succeeded": None, "Restarting": ("True", "TFJobRestarting")},
        counters=JobCounters(restarted=1, restarts_by_exit_class=(("retryable", 1),)),
        messages={"Restarting": ["Worker 0", "exited with code 0 (OOMKilled)"]}),
    "ExitCode 0 in a Failed pod (a sidecar failed) is a success": Case(
        running(make_job({"Worker": 1})), [make_pod("Worker", 0, "Failed", exit_code=0)],
        conditions={"Succeeded": ("True", "TFJobSucceeded")}),
    "ExitCode pod evicted before its container ended is recreated": Case(
        running(make_job({"Worker": 1})), [make_pod("Worker", 0, "Failed", pod_reason="Evicted")],
        delete_pods=[W0], messages={"Restarting": ["Worker 0", "Evicted"]}),
    "OnFailure: a Failed pod (node lost) is recreated, its restarts in place retired with it": Case(
        running(make_job({"Worker": 1}, policy="OnFailure"), restarts={"Worker": 2}),
        [make_pod("Worker", 0, "Failed", exit_code=1, restarts=2, pod_reason="NodeLost")], delete_pods=[W0],
        conditions={"Restarting": ("True", "TFJobRestarting"), "Failed": None},
        counters=JobCounters(restarted=1, restarts_by_exit_class=(("permanent", 1),)),
        status={"replicaStatuses": {"Worker": {"active": 0, "succeeded": 0, "failed": 0, "restarts": 3,
                                               "retiredRestarts": 3, "retiredPodUIDs": [f"pod-{W0}"],
                                               "recreatedExits": [{"index": 0, "exitCode": 1, "reason": ""}]}}}),
    "ExitCode 137: the recreated replica's exit is kept in the status, the new pod having none": Case(
        running(make_job({"Worker": 2})),
        [make_pod("Worker", 0), ended(make_pod("Worker", 1, "Failed", exit_code=137, reason="Error"),
                                      "2026-11-21T09:59:58Z")],
        delete_pods=[W1], conditions={"Restarting": ("True", "TFJobRestarting")},
        counters=JobCounters(restarted=1, restarts_by_exit_class=(("retryable", 1),)),
        status={"replicaStatuses": {"Worker": {
            "active": 1, "succeeded": 0, "failed": 0, "restarts": 1, "retiredRestarts": 1,
            "retiredPodUIDs": [f"pod-{W1}"],
            "recreatedExits": [{"index": 1, "exitCode": 137, "reason": "Error", "finishedAt": "2026-11-21T09:59:58Z"}],
        }}}),
    "Always: a Failed pod is recreated": Case(
        running(make_job({"Worker": 1}, policy="Always")), [make_pod("Worker", 0, "Failed", exit_code=2)],
        delete_pods=[W0], conditions={"Failed": None}),
    "OnFailure: restarts in place are counted and announced": Case(
        running(make_job({"Worker": 1}, policy="OnFailure")), [make_pod("Worker", 0, restarts=2)],
        # no lastState in these pods, so the class of the restarts is unknown
        delete_pods=[], events=["TFJobRestarting"],
        counters=JobCounters(restarted=2, restarts_by_exit_class=(("unknown", 2),)),
        conditions={"Running": ("True", "TFJobRunning")},
        restarts=(ReplicaRestart("Worker", None, None, "unknown", restarts=2, in_place=2),),
        status={"state": "Running", "replicaSummary": "1/1"}),
    "Never: a failed pod fails the job": Case(
        running(make_job({"Worker": 2}, policy="Never")), [make_pod("Worker", 0),
                                                            make_pod("Worker", 1, "Failed", exit_code=137)],
        conditions={"Failed": ("True", "TFJobFailed")}, delete_pods=[W0]),
    "Never: a failed worker is tolerated with enableDynamicWorker": Case(
        running(make_job({"Worker": 2}, policy="Never", enableDynamicWorker=True)),
        [make_pod("Worker", 0), make_pod("Worker", 1, "Failed", exit_code=1)],
        create_pods=[], delete_pods=[], conditions={"Failed": None, "Running": ("True", "TFJobRunning")}),
    "enableDynamicWorker does not excuse a failed chief": Case(
        running(make_job({"Chief": 1, "Worker": 1}, enableDynamicWorker=True)),
        [make_pod("Chief", 0, "Failed", exit_code=3), make_pod("Worker", 0)],
        conditions={"Failed": ("True", "TFJobFailed")}, messages={"Failed": ["Chief 0", "code 3"]}),
}

BACKOFF = {
    "restarts in place beyond backoffLimit fail the job": Case(
        running(make_job({"Worker": 2}, policy="OnFailure", run_policy={"backoffLimit": 2})),
        [make_pod("Worker", 0, restarts=2), make_pod("Worker", 1, restarts=1)],
        conditions={"Failed": ("True", "BackoffLimitExceeded")}, events=["TFJobRestarting", "BackoffLimitExceeded"],
        delete_pods=sorted([W0, W1]), messages={"Failed": ["3 times", "backoffLimit of 2"]}),
    "restarts up to backoffLimit are allowed": Case(
        running(make_job({"Worker": 2}, policy="OnFailure", run_policy={"backoffLimit": 2})),
        [make_pod("Worker", 0, restarts=1), make_pod("Worker", 1, restarts=1)], conditions={"Failed": None}),
    "backoffLimit 0: the first recreation is one too many": Case(
        running(make_job({"Worker": 1}, run_policy={"backoffLimit": 0})),
        [make_pod("Worker", 0, "Failed", exit_code=137)], create_pods=[], delete_pods=[],
        conditions={"Failed": ("True", "BackoffLimitExceeded"), "Restarting": None}),
    "recreations retired in status count against backoffLimit": Case(
        make_job(run_policy={"backoffLimit": 1}, status=COUNTED["status"]),
        [make_pod("Worker", 0), make_pod("Worker", 1, "Failed", exit_code=137), make_pod("PS", 0)],
        conditions={"Failed": ("True", "BackoffLimitExceeded")}),
    "a terminating pod already counted is not counted again": Case(
        COUNTED, [make_pod("Worker", 0), make_pod("Worker", 1, "Failed", exit_code=137, terminating=True,
                                                  uid="old-w1"), make_pod("PS", 0)],
        create_pods=[], delete_pods=[], events=[], counters=JobCounters(), status={"replicaStatuses": {
            "Worker": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 1, "retiredRestarts": 1,
                       "retiredPodUIDs": ["old-w1"]},
            "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}}}),
    "a failed pod found terminating but not counted (status lost) is counted once": Case(
        running(make_job()), [make_pod("Worker", 0), make_pod("Worker", 1, "Failed", exit_code=137, terminating=True,
                                                               restarts=0), make_pod("PS", 0)],
        delete_pods=[], events=["ExitedWithCode", "TFJobRestarting"],
        counters=JobCounters(restarted=1, restarts_by_exit_class=(("retryable", 1),))),
    "a counted pod whose delete failed is deleted again, not counted again": Case(
        COUNTED, [make_pod("Worker", 0), make_pod("Worker", 1, "Failed", exit_code=137, uid="old-w1"),
                  make_pod("PS", 0)],
        delete_pods=[W1], events=[], counters=JobCounters()),
    "the ledger forgets uids of pods that are gone, keeping their count": Case(
        COUNTED, [make_pod("Worker", 0), make_pod("PS", 0)], create_pods=[W1], events=[],
        status={"replicaStatuses": {"Worker": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 1,
                                               "retiredRestarts": 1},
                                    "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}}}),
}

DEADLINE_JOB = make_job({"Worker": 2}, run_policy={"activeDeadlineSeconds": 600})
DEADLINE = {
    "a fresh job with a deadline is requeued for exactly that deadline": Case(
        DEADLINE_JOB, requeue_after=600.0, status={"startTime": T0}),
    "a running job is requeued for the rest of its deadline": Case(
        running(DEADLINE_JOB), running_pods({"Worker": 2}), now=at(5), requeue_after=300.0),
    "past the deadline the job fails and every pod goes, finished ones too": Case(
        running(DEADLINE_JOB), [make_pod("Worker", 0), make_pod("Worker", 1, "Succeeded", exit_code=0)],
        now=at(10), conditions={"Failed": ("True", "DeadlineExceeded")}, events=["ExitedWithCode", "DeadlineExceeded"],
        delete_pods=sorted([W0, W1]), delete_services=sorted([W0, W1]), create_pods=[],
        counters=JobCounters(failed=1), requeue_after=None),
    "the deadline counts from startTime, not from now": Case(
        running(DEADLINE_JOB, since=-9), running_pods({"Worker": 2}), now=at(1.5),
        conditions={"Failed": ("True", "DeadlineExceeded")}),
    "a suspended job has no deadline timer": Case(
        make_job({"Worker": 1}, run_policy={"activeDeadlineSeconds": 60, "suspend": True}), requeue_after=None),
}

FINISHED_AT = make_job({"Worker": 1}, run_policy={"ttlSecondsAfterFinished": 60}, status={
    "startTime": T0, "completionTime": T0, "runtimeId": RID, "childNaming": "RuntimeId", "replicaBackend": "pods",
    "phase": "Done", "state": "Succeeded",
    "reason": "TFJobSucceeded", "lastReconcileTime": T0, "conditions": [
        CREATED, {"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded", "message": "done",
                  "lastTransitionTime": T0}]})
TTL = {
    "before its TTL a finished job is requeued for the rest": Case(
        FINISHED_AT, now=at(0.5), requeue_after=30.0, delete_job=False),
    "once its TTL passed the job is deleted": Case(
        FINISHED_AT, now=at(1), delete_job=True, events=["TTLExpired"], counters=JobCounters(deleted=1),
        requeue_after=None),
    "TTL 0 still lets the final status be written first": Case(
        running(make_job({"Worker": 1}, run_policy={"ttlSecondsAfterFinished": 0})),
        [make_pod("Worker", 0, "Succeeded", exit_code=0)], delete_job=False, requeue_after=0.0,
        conditions={"Succeeded": ("True", "TFJobSucceeded")}),
    "no TTL: a finished job is never requeued": Case(
        {**FINISHED_AT, "spec": make_job({"Worker": 1})["spec"]}, now=at(60), requeue_after=None,
        delete_job=False),
}

SUCCESS = {
    "the chief's success ends the job; Running pods are cleaned up": Case(
        running(make_job({"Chief": 1, "Worker": 2})),
        [make_pod("Chief", 0, "Succeeded", exit_code=0), make_pod("Worker", 0), make_pod("Worker", 1)],
        services_for({"Chief": 1, "Worker": 2}), conditions={"Succeeded": ("True", "TFJobSucceeded"),
                                                             "Running": ("False", "TFJobSucceeded")},
        delete_pods=sorted([W0, W1]), delete_services=sorted([W0, W1]), events=["TFJobSucceeded"],
        counters=JobCounters(successful=1), status={"completionTime": T0, "phase": "CleanUp", "state": "Succeeded",
                                                    "replicaSummary": "1/3 succeeded"}),
    "the chief ended 1.5 s ago, the workers still run: success waits half a second more for them": Case(
        running(make_job({"Chief": 1, "Worker": 2})),
        [ended(make_pod("Chief", 0, "Succeeded", exit_code=0), T0), make_pod("Worker", 0), make_pod("Worker", 1)],
        services_for({"Chief": 1, "Worker": 2}), now=NOW + timedelta(seconds=1.5),
        conditions={"Succeeded": None, "Running": ("True", "TFJobRunning")}, delete_pods=[], delete_services=[],
        requeue_after=0.5, events=["ExitedWithCode"], counters=JobCounters(),
        status={"replicaSummary": "2/3", "state": "Running"}),
    "2 s after the chief ended, the job succeeds and what still runs is cleaned up": Case(
        running(make_job({"Chief": 1, "Worker": 2})),
        [ended(make_pod("Chief", 0, "Succeeded", exit_code=0), T0), make_pod("Worker", 0), make_pod("Worker", 1)],
        services_for({"Chief": 1, "Worker": 2}), now=NOW + timedelta(seconds=2),
        conditions={"Succeeded": ("True", "TFJobSucceeded")}, delete_pods=sorted([W0, W1]),
        delete_services=sorted([W0, W1]), events=["TFJobSucceeded"], counters=JobCounters(successful=1),
        status={"phase": "CleanUp", "replicaSummary": "1/3 succeeded"}),
    "the workers ended with the chief: nothing to clean up, the success tells every exit": Case(
        running(make_job({"Chief": 1, "Worker": 2})),
        [ended(make_pod("Chief", 0, "Succeeded", exit_code=0), T0),
         ended(make_pod("Worker", 0, "Succeeded", exit_code=0), T0), make_pod("Worker", 1, "Failed", exit_code=1)],
        services_for({"Chief": 1, "Worker": 2}), now=NOW + timedelta(seconds=1),
        conditions={"Succeeded": ("True", "TFJobSucceeded")}, delete_pods=[], delete_services=[],
        events=["ExitedWithCode", "TFJobSucceeded"], counters=JobCounters(successful=1),
        status={"phase": "Done", "replicaSummary": "2/3 succeeded, 1 failed"}),
    "an end stamped ahead of our clock (a node's clock ahead): success does not wait": Case(
        running(make_job({"Chief": 1, "Worker": 2})),
        [ended(make_pod("Chief", 0, "Succeeded", exit_code=0), "2026-11-21T10:00:30Z"), make_pod("Worker", 0),
         make_pod("Worker", 1)],
        services_for({"Chief": 1, "Worker": 2}), conditions={"Succeeded": ("True", "TFJobSucceeded")},
        delete_pods=sorted([W0, W1]), events=["TFJobSucceeded"]),
    "a Master is a chief too": Case(
        running(make_job({"Master": 1, "Worker": 1})), [make_pod("Master", 0, "Succeeded", exit_code=0),
                                                        make_pod("Worker", 0)],
        services_for({"Master": 1, "Worker": 1}), conditions={"Succeeded": ("True", "TFJobSucceeded")}),
    "with a chief, worker 0's success is not the job's": Case(
        running(make_job({"Chief": 1, "Worker": 1})), [make_pod("Chief", 0),
                                                       make_pod("Worker", 0, "Succeeded", exit_code=0)],
        services_for({"Chief": 1, "Worker": 1}), conditions={"Succeeded": None, "Running": ("True", "TFJobRunning")}),
    "without a chief, worker 0 decides": Case(
        running(make_job()), [make_pod("Worker", 0, "Succeeded", exit_code=0), make_pod("Worker", 1),
                              make_pod("PS", 0)],
        conditions={"Succeeded": ("True", "TFJobSucceeded")}, delete_pods=sorted([W1, PS0])),
    "without a chief, worker 1's success alone is not enough": Case(
        running(make_job()), [make_pod("Worker", 0), make_pod("Worker", 1, "Succeeded", exit_code=0),
                              make_pod("PS", 0)], conditions={"Succeeded": None}),
    "AllWorkers waits for every worker": Case(
        running(make_job(successPolicy="AllWorkers")), [make_pod("Worker", 0, "Succeeded", exit_code=0),
                                                         make_pod("Worker", 1), make_pod("PS", 0)],
        conditions={"Succeeded": None, "Running": ("True", "TFJobRunning")}),
    "AllWorkers succeeds with the last worker": Case(
        running(make_job(successPolicy="AllWorkers")), [make_pod("Worker", 0, "Succeeded", exit_code=0),
                                                         make_pod("Worker", 1, "Succeeded", exit_code=0),
                                                         make_pod("PS", 0)],
        conditions={"Succeeded": ("True", "TFJobSucceeded")}, delete_pods=[PS0], delete_services=[PS0]),
    "cleanPodPolicy All deletes finished pods too, and they still count in the final tally": Case(
        running(make_job(run_policy={"cleanPodPolicy": "All"})),
        [make_pod("Worker", 0, "Succeeded", exit_code=0), make_pod("Worker", 1), make_pod("PS", 0)],
        delete_pods=ALL3, delete_services=ALL3, status={"replicaSummary": "1/3 succeeded", "replicaStatuses": {
            "Worker": {"active": 0, "succeeded": 1, "failed": 0, "restarts": 0, "succeededIndexes": "0"},
            "PS": {"active": 0, "succeeded": 0, "failed": 0, "restarts": 0}}}),
    "cleanPodPolicy None keeps everything": Case(
        running(make_job(run_policy={"cleanPodPolicy": "None"})),
        [make_pod("Worker", 0, "Succeeded", exit_code=0), make_pod("Worker", 1), make_pod("PS", 0)],
        delete_pods=[], delete_services=[], status={"phase": "Done"}),
    "a finished job never recreates the pods deleted after it": Case(
        FINISHED_AT, [], [], create_pods=[], create_services=[], now=at(0.1), unchanged_status=True),
    "a finished job keeps cleaning up what runs again": Case(
        FINISHED_AT, [make_pod("Worker", 0)], [make_service("Worker", 0)], now=at(0.1), delete_pods=[W0],
        delete_services=[W0], events=[], status={"phase": "CleanUp"}),
    "a finished job's phase settles to Done once cleaned up": Case(
        {**FINISHED_AT, "status": {**FINISHED_AT["status"], "phase": "CleanUp", "state": "Succeeded"}},
        services=[], now=at(0.1), status={"phase": "Done", "reason": "TFJobSucceeded"}, events=[]),
}

SUSPENDED_JOB = make_job(run_policy={"suspend": True})
SUSPEND = {
    "suspending deletes every pod and service and stops the clock": Case(
        {**running(make_job()), "spec": SUSPENDED_JOB["spec"]}, running_pods(), delete_pods=ALL3,
        delete_services=ALL3, create_pods=[], events=["TFJobSuspended"],
        conditions={"Suspended": ("True", "TFJobSuspended"), "Running": ("False", "TFJobSuspended")},
        status={"startTime": None, "phase": "CleanUp", "state": "Suspended", "replicaSummary": "0/3"}),
    "a job created suspended creates nothing": Case(
        SUSPENDED_JOB, services=[], create_pods=[], create_services=[], events=["TFJobCreated", "TFJobSuspended"],
        status={"startTime": None, "phase": "Creating", "state": "Suspended", "reason": "TFJobSuspended"}),
    "a suspended job with nothing left changes nothing": Case(
        suspended(SUSPENDED_JOB), services=[], unchanged_status=True, events=[], delete_pods=[]),
    "resuming restarts the clock even if a startTime was left behind": Case(
        make_job({"Worker": 1}, status={**suspended(SUSPENDED_JOB)["status"], "startTime": "2026-11-20T10:00:00Z"}),
        services=[], create_pods=[W0], status={"startTime": T0}, events=["TFJobResumed"]),
    "resuming recreates the children and restarts the clock": Case(
        {**suspended(SUSPENDED_JOB, since=-30), "spec": make_job()["spec"]}, create_pods=ALL3, create_services=ALL3,
        services=[], events=["TFJobResumed"], conditions={"Suspended": ("False", "TFJobResumed")},
        status={"startTime": T0}),
}

MULTIKUEUE = {"managedBy": "kueue.x-k8s.io/multikueue"}
# The manager cluster's copy of a job MultiKueue runs elsewhere: its status is the worker's, copied over by Kueue.
MIRRORED = make_job({"Worker": 2}, run_policy={**MULTIKUEUE, "ttlSecondsAfterFinished": 60}, status={
    "startTime": T0, "completionTime": T0, "replicaStatuses": {"Worker": {"active": 0, "succeeded": 1}},
    "conditions": [cond("Succeeded", "True", "TFJobSucceeded", "TFJob ns/mnist successfully completed.")]})
QUEUED = {"metadata": {**make_job()["metadata"], "labels": {"kueue.x-k8s.io/queue-name": "team-a"}}}
UNQUEUED = ("TFJob ns/mnist is created. It runs unqueued: it names the Kueue queue team-a (kueue.x-k8s.io/queue-name) "
            "but was not suspended when it was created, so Kueue does not manage it and it runs now, outside any "
            "quota; Kueue queues TFJobs only with its kubeflow.org/tfjob integration enabled (integrations.frameworks "
            "in its Configuration) and its webhooks covering this namespace.")
LOWER_WORKER = ("spec.tfReplicaSpecs[worker]: must be spelt Worker in a job queued by Kueue (label "
                "kueue.x-k8s.io/queue-name=team-a): Kueue counts quota only for the keys Chief, Master, Worker, PS, "
                "Evaluator, so its pods would run outside the queue's quota")
ADAPTER = ControllerConfig(kueue_integration="kueue")  # Kueue's TFJob adapter queues the job
MANAGED_BY = {
    "a job another controller runs (MultiKueue's manager copy) gets no child, no status, no event": Case(
        make_job(run_policy=MULTIKUEUE), services=[], create_pods=[], create_services=[], events=[],
        counters=JobCounters(), requeue_after=None, unchanged_status=True),
    "children of a job another controller runs are never deleted": Case(
        make_job(run_policy={"managedBy": "example.com/other"}), running_pods(), delete_pods=[], delete_services=[],
        create_pods=[], events=[], unchanged_status=True),
    "a finished job another controller runs is never deleted by its TTL": Case(
        MIRRORED, services=[], now=at(600), delete_pods=[], events=[], requeue_after=None, delete_job=False,
        unchanged_status=True),
    "managedBy kubeflow.org/training-operator is tfop's to run": Case(
        make_job(run_policy={"managedBy": "kubeflow.org/training-operator"}), services=[], create_pods=ALL3,
        create_services=ALL3, events=["TFJobCreated"]),
    "an empty managedBy is tfop's to run": Case(
        make_job(run_policy={"managedBy": ""}), services=[], create_pods=ALL3, events=["TFJobCreated"]),
    "a queued job whose key Kueue cannot count fails, creating nothing": Case(
        {**make_job({"worker": 2}), **QUEUED}, services=[], create_pods=[], create_services=[],
        events=["TFJobCreated", "InvalidSpec"], conditions={"Failed": ("True", "InvalidSpec")},
        messages={"Failed": [LOWER_WORKER]}, status={"state": "Failed"}, config=ADAPTER),
    "a queued job with TitleCase keys runs once Kueue admits it (unsuspended: generation 2)": Case(
        {**make_job(generation=2), "metadata": {**QUEUED["metadata"], "generation": 2}}, services=[],
        create_pods=ALL3, events=["TFJobCreated"],
        messages={"Created": ["TFJob ns/mnist is created."]}, config=ADAPTER),
    "a job naming a queue stored unsuspended as created: Kueue does not manage it; it runs, and says so": Case(
        {**make_job(), **QUEUED}, services=[], create_pods=ALL3, events=["TFJobCreated", "NotQueuedByKueue"],
        messages={"Created": [UNQUEUED]}, config=ADAPTER),
    "a job naming a queue, created suspended: Kueue's or the user's doing, nothing said": Case(
        {**make_job(run_policy={"suspend": True}), **QUEUED}, services=[], create_pods=[],
        events=["TFJobCreated", "TFJobSuspended"],
        messages={"Created": ["TFJob ns/mnist is created."]}, config=ADAPTER),
    "lowercase keys are fine without a Kueue queue": Case(
        make_job({"worker": 1}), services=[], create_pods=[W0], events=["TFJobCreated"]),
    # Kueue frees a suspended job's quota once no replica is active: a pod holds its node until it is gone.
    "suspended by Kueue after it started: pods are deleted and stay active while they go": Case(
        {**running(make_job()), **QUEUED, "spec": SUSPENDED_JOB["spec"]}, running_pods(), delete_pods=ALL3,
        conditions={"Running": ("False", "TFJobSuspended")}, status={"replicaStatuses": {
            "Worker": {"active": 2, "succeeded": 0, "failed": 0, "restarts": 0,
                       "retiredPodUIDs": [f"pod-{W0}", f"pod-{W1}"]},
            "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0, "retiredPodUIDs": [f"pod-{PS0}"]}}}),
    "a suspended job's pods still terminating are still active": Case(
        {**suspended(make_job(run_policy={"suspend": True})), **QUEUED},
        [make_pod("Worker", 0, terminating=True), make_pod("Worker", 1, terminating=True),
         make_pod("PS", 0, terminating=True)], services=[], delete_pods=[], create_pods=[], events=[],
        status={"replicaStatuses": {
            "Worker": {"active": 2, "succeeded": 0, "failed": 0, "restarts": 0,
                       "retiredPodUIDs": [f"pod-{W0}", f"pod-{W1}"]},
            "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0, "retiredPodUIDs": [f"pod-{PS0}"]}}}),
    "a suspended job whose pods are gone has none active": Case(
        {**suspended(make_job(run_policy={"suspend": True})), **QUEUED}, [], services=[], delete_pods=[],
        create_pods=[], events=[], unchanged_status=True),
}

STATUS = {
    "Running only when every pod runs; the pending ones are counted": Case(
        running(make_job()), [make_pod("Worker", 0), make_pod("Worker", 1, "Pending"), make_pod("PS", 0, "Pending")],
        conditions={"Running": ("False", "TFJobPending")}, messages={"Running": ["2 of 3", "2 Pending"]},
        status={"phase": "Creating", "state": "Pending", "reason": "TFJobPending", "replicaSummary": "1/3"}),
    "all pods running: Running, announced once": Case(
        waiting_for_one_pending_worker(make_job()),
        running_pods(), conditions={"Running": ("True", "TFJobRunning")}, events=["TFJobRunning"],
        status={"phase": "Running", "state": "Running", "reason": "TFJobRunning", "replicaSummary": "3/3"}),
    "replicaStatuses count active, succeeded and failed pods per type": Case(
        running(make_job({"Worker": 3, "PS": 1}, enableDynamicWorker=True, policy="Never")),
        [make_pod("Worker", 0), make_pod("Worker", 1, "Succeeded", exit_code=0),
         make_pod("Worker", 2, "Failed", exit_code=1), make_pod("PS", 0, "Pending")],
        services_for({"Worker": 3, "PS": 1}), status={"replicaStatuses": {
            "Worker": {"active": 1, "succeeded": 1, "failed": 1, "restarts": 0, "succeededIndexes": "1",
                       "failedIndexes": "2"},
            "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}}}),
    "a restart in progress: Running false says so; Restarting stays until all run": Case(
        restarting_worker_1(make_job()),
        [make_pod("Worker", 0), make_pod("Worker", 1, "Pending", uid="new-w1"), make_pod("PS", 0)],
        conditions={"Restarting": ("True", "TFJobRestarting"), "Running": ("False", "TFJobRestarting")}, events=[],
        status={"state": "Restarting", "reason": "TFJobRestarting", "replicaSummary": "2/3"}),
    "a restart is over when every pod runs again": Case(
        restarting_worker_1(make_job()),
        [make_pod("Worker", 0), make_pod("Worker", 1, uid="new-w1"), make_pod("PS", 0)],
        conditions={"Restarting": ("False", "TFJobRunning"), "Running": ("True", "TFJobRunning")},
        events=["TFJobRunning"], status={"replicaStatuses": {
            "Worker": {"active": 2, "succeeded": 0, "failed": 0, "restarts": 1, "retiredRestarts": 1},
            "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}}}),
}

INVALID = {
    "an invalid spec fails the job with the field named, creating nothing": Case(
        make_job({"Worker": "three"}), services=[], create_pods=[], create_services=[],
        events=["TFJobCreated", "InvalidSpec"],
        conditions={"Failed": ("True", "InvalidSpec")}, counters=JobCounters(created=1, failed=1),
        messages={"Failed": ["spec.tfReplicaSpecs[Worker].replicas", "must be an integer"]},
        status={"state": "Failed", "phase": "Failed"}),
    "an invalid job is not re-announced while its spec stays the same": Case(
        invalid(make_job({"Worker": "three"})), services=[], events=[], unchanged_status=True, create_pods=[]),
    "an edit that is still invalid is reported again": Case(
        {**invalid(make_job({"Worker": "three"})), "metadata": {**make_job()["metadata"], "generation": 2},
         "spec": make_job({"Worker": -1})["spec"]},
        events=["InvalidSpec"], counters=JobCounters(), messages={"Failed": ["must not be negative"]}),
    "an edit that fixes the spec runs the job": Case(
        {**invalid(make_job({"Worker": "three"})), "metadata": {**make_job()["metadata"], "generation": 2},
         "spec": make_job()["spec"]}, services=[], create_pods=ALL3,
        conditions={"Failed": ("False", "InvalidSpecCorrected")},
        status={"completionTime": None, "state": "Pending", "startTime": T0}),
    "a job turned invalid stops its running pods": Case(
        {**running(make_job()), "metadata": {**make_job()["metadata"], "generation": 2},
         "spec": make_job({"Worker": 2, "Boss": 1})["spec"]}, running_pods(),
        delete_pods=ALL3, conditions={"Failed": ("True", "InvalidSpec")}, messages={"Failed": ["'Boss'"]}),
    "a job without uid cannot name its children": Case(
        {**make_job(), "metadata": {"name": JOB_NAME, "namespace": "ns"}}, create_pods=[],
        conditions={"Failed": ("True", "InvalidSpec")}, messages={"Failed": ["metadata.uid"]}),
}

BAD_ENV = f'Pod "{W1}" is invalid: spec.containers[0].env[0].name: Invalid value: "1=BAD": a valid env var name'
QUOTA = f'pods "{W1}" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2'
TOO_LARGE = "etcdserver: request is too large"
REFUSED = {
    "a pod the apiserver refuses fails the job with the replica and the field, and cleans up": Case(
        running(make_job()), [make_pod("Worker", 0), make_pod("PS", 0)],
        refusals=(CreateRefusal(POD, ReplicaSlot("Worker", 1), W1, BAD_ENV, permanent=True),),
        create_pods=[], create_services=[], delete_pods=sorted([W0, PS0]), delete_services=ALL3,
        events=["InvalidSpec"], counters=JobCounters(failed=1),
        conditions={"Failed": ("True", "InvalidSpec"), "Running": ("False", "InvalidSpec")},
        messages={"Failed": ["the apiserver refused the pod of Worker 1", "env[0].name", "1=BAD"]},
        status={"state": "Failed", "completionTime": T0}),
    "a transient refusal keeps the job waiting and says why in its Running condition": Case(
        make_job(), services=[], refusals=(CreateRefusal(POD, ReplicaSlot("Worker", 1), W1, QUOTA, permanent=False),),
        create_pods=ALL3, create_services=ALL3, conditions={"Running": ("False", "TFJobPending"), "Failed": None},
        messages={"Running": ["waiting for 3 of 3 replicas", "creating them fails", "Worker 1", "exceeded quota"]}),
    "a pod too large for etcd fails the job instead of being retried forever": Case(
        make_job(), services=[],
        refusals=(CreateRefusal(POD, ReplicaSlot("Worker", 0), W0, TOO_LARGE, permanent=True),),
        create_pods=[], create_services=[], events=["TFJobCreated", "InvalidSpec"],
        counters=JobCounters(created=1, failed=1),
        conditions={"Failed": ("True", "InvalidSpec")},
        messages={"Failed": ["the apiserver refused the pod of Worker 0", "request is too large"]}),
    "a permanent refusal wins over a transient one": Case(
        make_job(), services=[], refusals=(CreateRefusal(POD, ReplicaSlot("Worker", 1), W1, QUOTA, permanent=False),
                                           CreateRefusal(SERVICE, ReplicaSlot("PS", 0), PS0, "bad port", True)),
        create_pods=[], conditions={"Failed": ("True", "InvalidSpec")},
        messages={"Failed": ["the apiserver refused the service of PS 0: bad port"]}),
}

# ---------------------------------------------------------------- taking over from the Kubeflow training operator

GO_UID_LABELS = {"training.kubeflow.org/operator-name": "tfjob-controller"}


def go_child(child: dict[str, Any]) -> dict[str, Any]:
    """`child` as the Go operator (v1.9) makes it: named `{job}-{type}-{index}`, labelled without a runtime id."""
    child = copy.deepcopy(child)
    labels = child["metadata"]["labels"]
    labels.pop("training.kubeflow.org/runtime-id")
    labels.update(GO_UID_LABELS)
    name = f"{JOB_NAME}-{labels['training.kubeflow.org/replica-type']}-{labels['training.kubeflow.org/replica-index']}"
    child["metadata"].update({"name": name, "uid": f"go-{name}"})
    return child


def go_pods(replicas: dict[str, int], **pod: Any) -> list[dict[str, Any]]:
    return [go_child(make_pod(replica_type, index, **pod))
            for replica_type, count in replicas.items() for index in range(count)]


def go_services(replicas: dict[str, int]) -> list[dict[str, Any]]:
    return [go_child(make_service(replica_type, index))
            for replica_type, count in replicas.items() for index in range(count)]


def go_status(*conditions: dict[str, Any], **replica_statuses: dict[str, Any]) -> dict[str, Any]:
    """A status as the Go operator writes it: its conditions carry no observedGeneration, its replica statuses
    no restart counts, and there is no runtimeId, childNaming or replicaSummary."""
    return {"conditions": list(conditions), "replicaStatuses": replica_statuses, "startTime": T0,
            "lastReconcileTime": T0}


def go_cond(condition_type: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": condition_type, "status": "True", "reason": reason, "message": message,
            "lastUpdateTime": T0, "lastTransitionTime": T0}


GO_CREATED = go_cond("Created", "TFJobCreated", "TFJob mnist is created.")
GO_RUNNING = go_cond("Running", "TFJobRunning", "TFJob ns/mnist is running.")
GO_JOB = make_job(status=go_status(GO_CREATED, GO_RUNNING, Worker={"active": 2}, PS={"active": 1}))
GO_NAMES = ["mnist-ps-0", "mnist-worker-0", "mnist-worker-1"]
ADOPTED = {**GO_JOB, "status": {**GO_JOB["status"], "childNaming": "TypeIndex"}}

TAKEOVER = {
    "a running job of the Go operator is adopted as it is: nothing created, deleted or announced": Case(
        GO_JOB, go_pods({"Worker": 2, "PS": 1}), go_services({"Worker": 2, "PS": 1}), create_pods=[],
        create_services=[], delete_pods=[], delete_services=[], events=[], counters=JobCounters(),
        conditions={"Created": ("True", "TFJobCreated"), "Running": ("True", "TFJobRunning"), "Restarting": None},
        status={"childNaming": "TypeIndex", "runtimeId": RID, "startTime": T0, "replicaSummary": "3/3",
                "phase": "Running", "state": "Running", "reason": "TFJobRunning",
                "replicaStatuses": {"Worker": {"active": 2, "succeeded": 0, "failed": 0, "restarts": 0},
                                    "PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 0}}}),
    "a Go-named replica exiting 137 is deleted to be recreated": Case(
        ADOPTED, [*go_pods({"Worker": 1}), go_child(make_pod("Worker", 1, "Failed", exit_code=137)),
                  *go_pods({"PS": 1})], go_services({"Worker": 2, "PS": 1}), create_pods=[],
        delete_pods=["mnist-worker-1"], delete_services=[], events=["ExitedWithCode", "TFJobRestarting"],
        counters=JobCounters(restarted=1, restarts_by_exit_class=(("retryable", 1),))),
    "once it is gone it is created again under its Go name, which its peers and Service know": Case(
        ADOPTED, [*go_pods({"Worker": 1}), *go_pods({"PS": 1})], go_services({"Worker": 2, "PS": 1}),
        create_pods=["mnist-worker-1"], create_services=[], delete_pods=[]),
    "the naming recorded in the status holds when every child is gone": Case(
        ADOPTED, [], [], create_pods=GO_NAMES, create_services=GO_NAMES),
    "a Go job's restarts in place are the baseline, not news": Case(
        make_job({"Worker": 1}, policy="OnFailure", status=go_status(GO_CREATED, GO_RUNNING, Worker={"active": 1})),
        go_pods({"Worker": 1}, restarts=3), go_services({"Worker": 1}), events=[], counters=JobCounters(),
        status={"replicaStatuses": {"Worker": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 3}}}),
    "a Go job caught restarting (Go drops Running then) runs again": Case(
        make_job(status=go_status(GO_CREATED, go_cond("Restarting", "TFJobRestarting",
                                                      "job mnist is restarting because Worker replica(s) failed."),
                                  Worker={"active": 2}, PS={"active": 1})),
        go_pods({"Worker": 2, "PS": 1}), go_services({"Worker": 2, "PS": 1}), create_pods=[], delete_pods=[],
        events=["TFJobRunning"], counters=JobCounters(),
        conditions={"Running": ("True", "TFJobRunning"), "Restarting": ("False", "TFJobRunning")}),
    "a Go job that succeeded stays finished and is not counted again": Case(
        make_job({"Worker": 1}, status={**go_status(GO_CREATED, go_cond(
            "Succeeded", "TFJobSucceeded", "TFJob ns/mnist successfully completed."), Worker={"succeeded": 1}),
            "completionTime": T0}),
        go_pods({"Worker": 1}, phase="Succeeded", exit_code=0), go_services({"Worker": 1}), create_pods=[],
        delete_pods=[], events=[], counters=JobCounters(), status={"state": "Succeeded", "phase": "Done"}),
}

# ---------------------------------------------------------------- what the pods suffer

GPU_WORDS = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
PULL_WORDS = 'Back-off pulling image "tensorflow/tensorflow:2.99"'


def unschedulable(pod: dict[str, Any], words: str = GPU_WORDS) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": words}]}
    return pod


def waiting(pod: dict[str, Any], reason: str, words: str = "") -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": reason, "message": words}}
    return pod


HUNDRED = make_job({"Worker": 100}, status={"startTime": T0, "runtimeId": RID, "childNaming": "RuntimeId",
                                            "replicaBackend": "pods", "conditions": [CREATED]})
NO_GPU_RUNNING = ("TFJob ns/mnist is waiting for 100 of 100 replicas to run: 100 Pending. Worker 0-99 "
                  "[Unschedulable]: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
TROUBLES = {
    "a hundred workers no node fits: one event, the scheduler's words in Running": Case(
        HUNDRED, [unschedulable(make_pod("Worker", i, "Pending")) for i in range(100)], events=["Unschedulable"],
        conditions={"Running": ("False", "TFJobPending")}, messages={"Running": [NO_GPU_RUNNING]}),
    "a trouble the Running condition already shows is not announced again": Case(
        {**HUNDRED, "status": {**HUNDRED["status"], "conditions": [
            CREATED, cond("Running", "False", "TFJobPending", NO_GPU_RUNNING)]}},
        [unschedulable(make_pod("Worker", i, "Pending")) for i in range(100)], events=[], unchanged_status=False),
    "ErrImagePull and ImagePullBackOff are one kind: one event": Case(
        running(make_job()), [waiting(make_pod("Worker", 0, "Pending"), "ErrImagePull", "rpc error"),
                              waiting(make_pod("Worker", 1, "Pending"), "ImagePullBackOff", PULL_WORDS),
                              make_pod("PS", 0)],
        events=["ImagePullBackOff"], conditions={"Running": ("False", "TFJobPending")},
        messages={"Running": [
            ("TFJob ns/mnist is waiting for 2 of 3 replicas to run: 2 Pending. Worker 0 [ImagePullBackOff]: "
            "container tensorflow: ErrImagePull: rpc error; Worker 1 [ImagePullBackOff]: container tensorflow: "
            'ImagePullBackOff: Back-off pulling image "tensorflow/tensorflow:2.99".')]}),
    "a crash-looping replica is told while the job runs": Case(
        running(make_job({"Worker": 2}, policy="OnFailure"), restarts={"Worker": 4}),
        [make_pod("Worker", 0), waiting(make_pod("Worker", 1, restarts=4), "CrashLoopBackOff", "back-off 40s")],
        events=["CrashLoopBackOff"], counters=JobCounters(), conditions={"Running": ("True", "TFJobRunning")},
        messages={"Running": [("TFJob ns/mnist is running. Worker 1 [CrashLoopBackOff]: container tensorflow: "
                              "CrashLoopBackOff: back-off 40s.")]}),
    "an evicted replica is recreated and the eviction told": Case(
        running(make_job({"Worker": 1})), [{**make_pod("Worker", 0, "Failed", pod_reason="Evicted"), "status": {
            "phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}}],
        delete_pods=[W0], events=["TFJobRestarting", "Evicted"],
        messages={"Running": [("TFJob ns/mnist is restarting Worker 0, whose pod failed (Evicted). Worker 0 "
                              "[Evicted]: The node was low on resource: memory.")]}),
    "a worker that ends is told with its exit code": Case(
        running(make_job({"Worker": 3})), [make_pod("Worker", 0), make_pod("Worker", 1, "Succeeded", exit_code=0),
                                           make_pod("Worker", 2, "Succeeded", exit_code=0)],
        events=["ExitedWithCode"], conditions={"Succeeded": None}),
}

# How the applier sorts the apiserver's answers to a create into permanent (the job fails) and transient (retried).
REFUSAL_KINDS: dict[str, tuple[int, str, str, bool]] = {
    "invalid": (422, "Invalid", BAD_ENV, True),
    "undecodable": (400, "BadRequest", "quantities must match the regular expression", True),
    "too large for etcd": (500, "InternalError", TOO_LARGE, True),
    "too large for the apiserver's etcd client": (
        500, "InternalError", "rpc error: code = ResourceExhausted desc = trying to send message larger than max",
        True),
    "too large for the apiserver": (413, "RequestEntityTooLarge", "limit is 3145728", True),
    "quota": (403, "Forbidden", QUOTA, False),
    "denied by a webhook": (403, "Forbidden", 'admission webhook "x" denied the request', False),
    "throttled": (429, "TooManyRequests", "please try again later", False),
    "server failing": (500, "InternalError", "etcdserver: leader changed", False),
    "webhook timeout": (504, "Timeout", "context deadline exceeded", False),
}


@pytest.mark.parametrize(("code", "reason", "message", "permanent"), list(REFUSAL_KINDS.values()),
                         ids=list(REFUSAL_KINDS))
def test_refusals_are_permanent_only_when_the_same_body_must_fail_again(code: int, reason: str, message: str,
                                                                        permanent: bool) -> None:
    error: ApiError = error_from_status(code, {"kind": "Status", "code": code, "reason": reason, "message": message})
    assert is_permanent_refusal(error) is permanent


TABLE = {**CREATION, **EXIT_CODES, **BACKOFF, **DEADLINE, **TTL, **SUCCESS, **SUSPEND, **STATUS, **INVALID,
         **REFUSED, **TAKEOVER, **TROUBLES, **MANAGED_BY}


@pytest.mark.parametrize(("case", "events"), [
    (TROUBLES["a hundred workers no node fits: one event, the scheduler's words in Running"], [
        ("Warning", "Unschedulable", ("TFJob ns/mnist: Worker 0-99 [Unschedulable]: 0/3 nodes are available: 3 "
                                     "Insufficient nvidia.com/gpu."))]),
    (TROUBLES["a worker that ends is told with its exit code"], [
        ("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 1-2 exited with code 0.")]),
    (TAKEOVER["a Go-named replica exiting 137 is deleted to be recreated"], [
        ("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 1 exited with code 137."),
        ("Warning", "TFJobRestarting", "TFJob ns/mnist is restarting Worker 1, which exited with code 137.")]),
], ids=["unschedulable", "exited", "recreated"])
def test_events_say_which_replicas_and_why(case: Case, events: list[tuple[str, str, str]]) -> None:
    result = plan_of(case.job, case.pods, case.services or [], case.now)
    assert [(event.type, event.reason, event.message) for event in result.events] == events


def test_a_template_restart_policy_the_operator_overrides_is_told_once() -> None:
    job = make_job({"Worker": 1}, policy="ExitCode")
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "Always"
    first = plan_of(job, [], [])
    assert [(event.type, event.reason, event.message) for event in first.events] == [
        ("Normal", "TFJobCreated", "TFJob ns/mnist is created."),
        ("Warning", "SetPodTemplateRestartPolicy", ("TFJob ns/mnist: the restartPolicy Always in the pod template "
                                                  "of Worker is replaced by the replica's restartPolicy (ExitCode: "
                                                  "pods get Never).")),
    ]
    assert [event.reason for event in plan_of(settled(job), [], []).events] == []
    # Without a replica restartPolicy the template's is the replica's (defaulting): nothing is overridden.
    del job["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"]
    assert [event.reason for event in plan_of(job, [], []).events] == ["TFJobCreated"]


def _names(children: list[Any]) -> list[str]:
    return sorted(child.name for child in children)


@pytest.mark.parametrize("case", list(TABLE.values()), ids=list(TABLE))
def test_plan(case: Case) -> None:
    services = services_for({key: value["replicas"] for key, value in case.job["spec"]["tfReplicaSpecs"].items()
                             if isinstance(value.get("replicas"), int) and value["replicas"] >= 0}
                            ) if case.services is None else case.services
    before = copy.deepcopy((case.job, case.pods, services))
    result = plan_of(case.job, case.pods, services, case.now, config=case.config, refusals=case.refusals)
    assert (case.job, case.pods, services) == before, "plan() must not mutate its input"
    for attribute, actual in (("create_pods", result.creates(POD)), ("create_services", result.creates(SERVICE)),
                              ("delete_pods", result.deletes(POD)), ("delete_services", result.deletes(SERVICE))):
        if getattr(case, attribute) is not KEEP:
            assert _names(actual) == getattr(case, attribute), attribute
    if case.events is not KEEP:
        assert [event.reason for event in result.events] == case.events
    if case.counters is not KEEP:
        assert result.counters == case.counters
    if case.restarts is not KEEP:
        assert result.restarts == case.restarts
    if case.requeue_after is not KEEP:
        assert result.requeue_after == case.requeue_after
    assert result.delete_job == case.delete_job
    if case.unchanged_status or case.delete_job:
        assert result.status is None
        return
    if not (case.conditions or case.messages or case.status):
        return
    assert result.status is not None
    for condition_type, expected in case.conditions.items():
        assert condition(result, condition_type) == expected, condition_type
    for condition_type, fragments in case.messages.items():
        for fragment in fragments:
            assert fragment in message(result, condition_type)
    for key, written in case.status.items():
        # the selectors tfop writes beside the counts written out
        status = result.status.to_json()
        go = status.get("childNaming") == "TypeIndex"
        assert status.get(key) == (with_selectors(written, go=go) if key == "replicaStatuses" else written), key
    assert result.status.to_json()["lastReconcileTime"] == case.now.strftime("%Y-%m-%dT%H:%M:%SZ")


# A plan whose TTL timer is already due deletes the job on the next pass: that is progress, not a repeat.
REPEATABLE = {key: case for key, case in TABLE.items() if not case.delete_job and case.requeue_after != 0.0}


@pytest.mark.parametrize("case", list(REPEATABLE.values()), ids=list(REPEATABLE))
def test_planning_again_on_the_written_status_changes_nothing(case: Case) -> None:
    """Idempotence: with the status a plan wrote and the same children, the next plan has nothing to say."""
    services = case.services if case.services is not None else services_for(
        {key: value["replicas"] for key, value in case.job["spec"]["tfReplicaSpecs"].items()
         if isinstance(value.get("replicas"), int) and value["replicas"] >= 0})
    first = plan_of(case.job, case.pods, services, case.now, config=case.config, refusals=case.refusals)
    job = copy.deepcopy(case.job)
    if first.status is not None:
        job["status"] = first.status.to_json()
    second = plan_of(job, case.pods, services, case.now, config=case.config, refusals=case.refusals)
    assert second.status is None
    assert second.events == []
    assert second.counters == JobCounters()
    assert second.create == first.create  # what the cache does not show yet, again
    assert second.delete == first.delete


def as_served(child: dict[str, Any]) -> dict[str, Any]:
    """`child` with the parts the apiserver adds and the planner should never need: a spec with TF_CONFIG,
    managed fields, annotations, addresses, timestamps."""
    served = copy.deepcopy(child)
    served["metadata"].update({"annotations": {"a": "b"}, "generation": 1, "managedFields": [{"manager": "x"}],
                               "creationTimestamp": T0})
    served["metadata"]["ownerReferences"] = [
        *({**ref, "blockOwnerDeletion": True} for ref in served["metadata"].get("ownerReferences", [])),
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "not-the-controller", "uid": "cm-1"}]
    served["spec"] = {"containers": [{"name": "tensorflow", "image": "tf", "env": [
        {"name": "TF_CONFIG", "value": '{"cluster": {"worker": ["a:2222", "b:2222"]}}'}]}], "nodeName": "n1"}
    status = served.setdefault("status", {})
    status.update({"hostIP": "198.18.0.1", "podIP": "198.18.0.9", "startTime": T0, "qosClass": "BestEffort"})
    if child["kind"] == "Pod":
        conditions = status.setdefault("conditions", [])
        if not any(condition["type"] == "PodScheduled" for condition in conditions):
            conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": T0})
        conditions += [{"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": T0},
                       {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": T0}]
    for container in status.get("containerStatuses", []):
        container.update({"image": "tf", "imageID": "sha256:x", "containerID": "containerd://x", "ready": True,
                          "lastState": container.get("lastState", {})})
        for state in (container["state"], container["lastState"]):
            for details in state.values():
                details.update({"startedAt": T0, "containerID": "containerd://x"})
    return served


@pytest.mark.parametrize("case", list(TABLE.values()), ids=list(TABLE))
def test_the_cache_keeps_all_the_planner_reads(case: Case) -> None:
    """The informer transforms (controller/cache_transforms.py) drop nothing a plan depends on."""
    services = case.services if case.services is not None else services_for(
        {key: value["replicas"] for key, value in case.job["spec"]["tfReplicaSpecs"].items()
         if isinstance(value.get("replicas"), int) and value["replicas"] >= 0})
    whole = plan_of(case.job, [as_served(pod) for pod in case.pods], [as_served(svc) for svc in services], case.now,
                    config=case.config, refusals=case.refusals)
    cached = plan_of(case.job, [slim_pod(as_served(pod)) for pod in case.pods],
                     [slim_metadata(as_served(svc)) for svc in services], case.now, config=case.config,
                     refusals=case.refusals)
    assert (cached.create, cached.delete, cached.status, cached.events, cached.counters, cached.requeue_after) == (
        whole.create, whole.delete, whole.status, whole.events, whole.counters, whole.requeue_after)


def test_the_cache_drops_the_spec_and_what_else_no_one_reads() -> None:
    pod = slim_pod(as_served(make_pod("Worker", 0, "Failed", exit_code=137, reason="OOMKilled")))
    assert set(pod) == {"apiVersion", "kind", "metadata", "spec", "status"}
    assert pod["spec"] == {"nodeName": "n1"}  # of the spec only where it runs, for node loss
    assert set(pod["metadata"]) == {"name", "namespace", "uid", "labels", "ownerReferences", "creationTimestamp"}
    assert pod["metadata"]["ownerReferences"] == []  # only a ConfigMap's, not its controller's
    assert pod["status"] == {"phase": "Failed", "containerStatuses": [
        {"name": "tensorflow", "restartCount": 0, "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}


def test_the_cache_keeps_the_pod_conditions_read_an_unscheduled_pod_and_a_disruption() -> None:
    pod = make_pod("Worker", 0, "Pending")
    unscheduled = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
    disrupted = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI", "message": "evicted"}
    pod["status"]["conditions"] = [{**unscheduled, "lastTransitionTime": T0},
                                   {**disrupted, "lastProbeTime": None, "lastTransitionTime": T0},
                                   {"type": "Ready", "status": "False", "reason": "PodCompleted"}]
    # A disruption's time is kept: its peers' window begins then (plan/policies/disruptions.py).
    assert slim_pod(pod)["status"]["conditions"] == [unscheduled, {**disrupted, "lastTransitionTime": T0}]


def test_the_job_cache_drops_only_managed_fields_and_kubectls_copy_of_the_manifest() -> None:
    """Of managedFields only who wrote each replica count stays (test_replicas_writers); here nobody did."""
    job = running(make_job())
    served = copy.deepcopy(job)
    served["metadata"].update({"managedFields": [{"manager": "kubectl"}], "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": '{"spec": "as long as the spec"}', "team": "a"}})
    assert slim_job(served) == {**job, "metadata": {**job["metadata"], "annotations": {"team": "a"}}}
    del served["metadata"]["annotations"]["team"]
    assert slim_job(served) == job


def test_a_job_runs_from_creation_to_success_and_deletion() -> None:
    """The rules together, reconcile after reconcile, as the cache would show the job."""
    job = make_job({"Worker": 2}, run_policy={"ttlSecondsAfterFinished": 30})
    first = plan_of(job, [], [], NOW)
    assert _names(first.creates(POD)) == sorted([W0, W1])
    job = settled(job)
    pending = [make_pod("Worker", 0, "Pending"), make_pod("Worker", 1, "Pending")]
    job = settled(job, pending, services_for({"Worker": 2}), at(0.1))
    all_running = plan_of(job, running_pods({"Worker": 2}), services_for({"Worker": 2}), at(0.2))
    assert [event.reason for event in all_running.events] == ["TFJobRunning"]
    job = settled(job, running_pods({"Worker": 2}), services_for({"Worker": 2}), at(0.2))
    done = plan_of(job, [make_pod("Worker", 0, "Succeeded", exit_code=0), make_pod("Worker", 1)],
                services_for({"Worker": 2}), at(1))
    assert done.counters == JobCounters(successful=1) and done.requeue_after == 30.0
    assert _names(done.deletes(POD)) == [W1]
    assert done.status is not None and done.status.to_json()["completionTime"] == "2026-11-21T10:01:00Z"
    job = settled(job, [make_pod("Worker", 0, "Succeeded", exit_code=0), make_pod("Worker", 1)],
                  services_for({"Worker": 2}), at(1))
    assert plan_of(job, [make_pod("Worker", 0, "Succeeded", exit_code=0)], [make_service("Worker", 0)],
                at(1.4)).requeue_after == pytest.approx(6.0)
    gone = plan_of(job, [make_pod("Worker", 0, "Succeeded", exit_code=0)], [make_service("Worker", 0)], at(1.5))
    assert gone.delete_job and gone.counters == JobCounters(deleted=1)


def test_an_exit_code_job_restarts_until_backoff_limit() -> None:
    """Each recreation is counted once, however often the cache shows the old pod (the Go operator counts none
    of them, so such a job restarts forever). The count lives in the status, so an operator restart keeps it."""
    job = running(make_job({"Worker": 1}, run_policy={"backoffLimit": 2}))
    services = services_for({"Worker": 1})

    def step(pods: list[dict[str, Any]]) -> Plan:
        nonlocal job
        result = plan_of(job, pods, services, NOW)
        if result.status is not None:
            job = {**job, "status": result.status.to_json()}
        return result

    for attempt in (1, 2):
        failed = make_pod("Worker", 0, "Failed", exit_code=137, uid=f"w0-{attempt}")
        assert _names(step([failed]).deletes(POD)) == [W0]
        terminating = {**failed, "metadata": {**failed["metadata"], "deletionTimestamp": T0}}
        assert step([terminating]).counters == JobCounters()
        assert _names(step([]).creates(POD)) == [W0]
        assert job["status"]["replicaStatuses"]["Worker"]["restarts"] == attempt
    last = step([make_pod("Worker", 0, "Failed", exit_code=137, uid="w0-3")])
    assert condition(last, "Failed") == ("True", "BackoffLimitExceeded")
    assert last.deletes(POD) == [] and last.creates(POD) == []  # cleanPodPolicy Running keeps a failed pod


def test_a_new_generation_is_recorded_on_the_conditions_a_plan_sets() -> None:
    job = {**running(make_job()), "metadata": {**make_job()["metadata"], "generation": 2}}
    result = plan_of(job, running_pods(), services_for(), at(1))
    assert result.status is not None
    generations = {entry["type"]: entry["observedGeneration"] for entry in result.status.to_json()["conditions"]}
    assert generations == {"Created": 1, "Running": 2}
    running_condition = next(entry for entry in result.status.to_json()["conditions"] if entry["type"] == "Running")
    assert running_condition["lastTransitionTime"] == T0
    assert running_condition["lastUpdateTime"] == "2026-11-21T10:01:00Z"


def test_tf_config_addresses_use_the_configured_domain() -> None:
    result = plan_of(make_job({"Worker": 2}), [], [], NOW, ControllerConfig(service_domain="svc.cluster.local"))
    assert result.desired is not None
    pod = result.desired.body(POD, result.creates(POD)[0].slot)
    env = pod["spec"]["containers"][0]["env"]
    assert f"{W0}.ns.svc.cluster.local:2222" in env[0]["value"]


GARBAGE = [None, "", "x", -1, 0, 3.5, True, [], {}, [1], {"a": None}]


def _mutations(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """`value` with a few fields, anywhere in it, replaced by values of the wrong type."""
    if isinstance(value, dict):
        mutated = {key: _mutations(rng, item, depth + 1) for key, item in value.items()}
        if mutated and rng.random() < 0.3:
            mutated[rng.choice(sorted(mutated))] = rng.choice(GARBAGE)
        return mutated
    if isinstance(value, list):
        return [_mutations(rng, item, depth + 1) for item in value]
    return rng.choice(GARBAGE) if rng.random() < 0.05 else value


@pytest.mark.parametrize("seed", range(150))
def test_plan_never_raises_on_malformed_input(seed: int) -> None:
    rng = random.Random(seed)
    base = running(make_job({"Chief": 1, "Worker": 2, "PS": 1}, run_policy={"backoffLimit": 3,
                                                                            "activeDeadlineSeconds": 60}))
    job = _mutations(rng, base)
    pods = [_mutations(rng, pod) for pod in running_pods({"Chief": 1, "Worker": 2, "PS": 1})]
    result = plan_of(job, [pod for pod in pods if isinstance(pod, dict)], [], NOW)
    assert isinstance(result, Plan)


def test_first_run_of_all_replicas_is_marked_for_the_start_latency_metric() -> None:
    job = make_job({"Worker": 1})
    pending = plan_of(settled(job, [make_pod("Worker", 0, "Pending")]), [make_pod("Worker", 0, "Pending")], [], NOW)
    running_job = {**job, "status": pending.status.to_json() if pending.status is not None else None}
    result = plan_of(running_job, [make_pod("Worker", 0)], [], NOW)
    assert result.counters.started_running == 1
    assert result.status is not None
    again = plan_of({**job, "status": result.status.to_json()}, [make_pod("Worker", 0)], [], NOW)
    assert again.counters.started_running == 0


def test_in_place_restarts_take_the_class_of_the_latest_exit() -> None:
    job = make_job({"Worker": 2}, policy="OnFailure")
    before = running(job)
    restarted = make_pod("Worker", 1, restarts=1)
    restarted["status"]["containerStatuses"][0]["lastState"] = {
        "terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": T0}}
    result = plan_of(before, [make_pod("Worker", 0), restarted], [], NOW)
    assert result.counters.restarts_by_exit_class == (("retryable", 1),)
