"""Disruptions beyond the pod's own condition, and what they cause in a synchronous job's peers, as table rows
(plan/policies/disruptions.py; docs/tfjob/disruptions.md): a drain, a reclaim notice, and the window in which a
peer's failure is the disruption's. Every row is a job of 3 Workers with backoffLimit 0, so any counted restart
fails it; Worker 1 is the one the cluster takes, at T (10 s before the plan's now)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from support.plan_builders import NOW, make_job, make_pod, name_of, running, services_for
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import POD, SERVICE, PlanContext

T = "2026-11-21T09:59:50Z"  # Worker 1's disruption began
W0, W1, W2 = (name_of("Worker", index) for index in range(3))
U0, U1 = f"pod-{W0}", f"pod-{W1}"
EVICTED = ("Normal", "ReplicaDisrupted", ("TFJob ns/mnist: Worker 1's pod was disrupted (EvictionByEvictionAPI: "
           "Eviction API: evicting the pod for a drain); it is replaced."))
# T + Worker 1's grace period (30 s) + the peer window (60 s).
Recorded = tuple[str, str, str, str, str | None]  # (replica, reason, source, time, peersUntil)
EVICTION_RECORD: Recorded = ("Worker 1", "EvictionByEvictionAPI", "DisruptionTarget", T, "2026-11-21T10:01:20Z")


def job(policy: str, scope: str = "Job", recorded: bool = False) -> dict[str, Any]:
    """The running job; `recorded`: an earlier plan recorded and told Worker 1's eviction."""
    result = running(make_job({"Worker": 3}, policy=policy, run_policy={"backoffLimit": 0}))
    result["metadata"]["annotations"] = {"tfop.kubeflow.org/restart-scope": scope}
    if recorded:
        result["status"]["disruptions"] = [{
            "replica": "Worker 1", "podUID": U1, "reason": "EvictionByEvictionAPI", "source": "DisruptionTarget",
            "message": "Eviction API: evicting the pod for a drain", "time": T, "peersUntil": EVICTION_RECORD[4]}]
    return result


def on(pod: dict[str, Any], node: str) -> dict[str, Any]:
    return {**pod, "spec": {"nodeName": node}}


def evicted(pod: dict[str, Any]) -> dict[str, Any]:
    """`pod` as the Eviction API leaves it: the condition, and deleted with its 30 s grace period."""
    pod = copy.deepcopy(pod)
    pod["metadata"] |= {"deletionTimestamp": "2026-11-21T10:00:20Z", "deletionGracePeriodSeconds": 30}
    pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                                    "message": "Eviction API: evicting the pod for a drain",
                                    "lastTransitionTime": T}]
    return pod


def deleted(pod: dict[str, Any]) -> dict[str, Any]:
    """`pod` deleted (30 s grace period) with no DisruptionTarget: what a drain that deletes leaves."""
    pod = copy.deepcopy(pod)
    pod["metadata"] |= {"deletionTimestamp": "2026-11-21T10:00:20Z", "deletionGracePeriodSeconds": 30}
    return pod


def ended(index: int, code: int, at: str, reason: str = "Error") -> dict[str, Any]:
    """Worker `index` Failed (ExitCode: no in-place restart), its container ended at `at`."""
    pod = make_pod("Worker", index, "Failed", exit_code=code, reason=reason)
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = at
    return pod


def restarted(index: int, code: int, at: str, reason: str = "Error") -> dict[str, Any]:
    """Worker `index` Running again after its container exited at `at` and the kubelet restarted it (OnFailure)."""
    pod = make_pod("Worker", index, restarts=1)
    pod["status"]["containerStatuses"][0]["lastState"] = {
        "terminated": {"exitCode": code, "reason": reason, "finishedAt": at}}
    return pod


def node(name: str, *, ready: str = "True", since: str = T, cordoned: bool = False,
         taints: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": [{"key": key, "effect": "NoSchedule", "timeAdded": since} for key in taints]}
    if cordoned:
        spec["unschedulable"] = True
    return {"metadata": {"name": name}, "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": since}]}}


HEALTHY = {"n0": node("n0"), "n1": node("n1"), "n2": node("n2")}


@dataclass
class Row:
    job: dict[str, Any]
    pods: list[dict[str, Any]]
    deleted: list[str]  # pods, by name (a failed job's clean-up, cleanPodPolicy Running, deletes those running)
    restarts: int  # of the Workers, against backoffLimit 0
    failed: str | None  # the Failed condition's message
    events: list[tuple[str, str, str]]
    recorded: Sequence[Recorded]
    counted: tuple[tuple[str, int], ...] = ()  # the disruption metric's increments, by reason
    nodes: dict[str, Any] = field(default_factory=lambda: HEALTHY)
    forced: list[str] = field(default_factory=list)  # of `deleted`, those deleted without a grace period


RECORDED: list[Recorded] = [EVICTION_RECORD]
FAILED_1 = "TFJob ns/mnist has failed because Worker 0, which exited with code 1 (Error)."
PAST_BACKOFF = "TFJob ns/mnist has failed because its replicas restarted 1 times, more than its backoffLimit of 0."

ROWS = {
    # Item 3: restart scope Job moves every replica with the disrupted one; async PS (Replica) only that one.
    "drained (evicted) Worker 1, restart scope Job: the others stopped gracefully with it, told once, recorded": Row(
        job("OnFailure"), [on(make_pod("Worker", 0), "n0"), on(evicted(make_pod("Worker", 1)), "n1"),
                           on(make_pod("Worker", 2), "n2")],
        deleted=[W0, W2], restarts=0, failed=None, events=[EVICTED], recorded=RECORDED,
        counted=(("EvictionByEvictionAPI", 1),)),
    "the same eviction already recorded: not told or counted again, the others already going": Row(
        job("OnFailure", recorded=True),
        [on(deleted(make_pod("Worker", 0)), "n0"), on(evicted(make_pod("Worker", 1)), "n1"),
         on(deleted(make_pod("Worker", 2)), "n2")],
        deleted=[], restarts=0, failed=None, events=[], recorded=RECORDED),
    "drained Worker 1, restart scope Replica (asynchronous PS): only Worker 1 moves": Row(
        job("OnFailure", scope="Replica"),
        [on(make_pod("Worker", 0), "n0"), on(evicted(make_pod("Worker", 1)), "n1"), on(make_pod("Worker", 2), "n2")],
        deleted=[], restarts=0, failed=None, events=[EVICTED],
        recorded=[("Worker 1", "EvictionByEvictionAPI", "DisruptionTarget", T, None)],
        counted=(("EvictionByEvictionAPI", 1),)),
    "a drain that deletes (no condition) on a cordoned node: NodeDrained, from the delete's time": Row(
        job("ExitCode"), [on(make_pod("Worker", 0), "n0"), on(deleted(make_pod("Worker", 1)), "n1"),
                          on(make_pod("Worker", 2), "n2")],
        deleted=[W0, W2], restarts=0, failed=None,
        events=[("Normal", "ReplicaDisrupted", ("TFJob ns/mnist: Worker 1's pod was disrupted (NodeDrained: deleted "
                 "on its cordoned node n1); it is replaced."))],
        recorded=[("Worker 1", "NodeDrained", "NodeDrain", T, "2026-11-21T10:01:20Z")],
        counted=(("NodeDrained", 1),), nodes={**HEALTHY, "n1": node("n1", cordoned=True)}),
    "a pod deleted on a cordoned node that is not Ready either: still a drain, not a loss yet": Row(
        job("ExitCode", scope="Replica"), [on(make_pod("Worker", 0), "n0"), on(deleted(make_pod("Worker", 1)), "n1"),
                                           on(make_pod("Worker", 2), "n2")],
        deleted=[], restarts=0, failed=None,
        events=[("Normal", "ReplicaDisrupted", ("TFJob ns/mnist: Worker 1's pod was disrupted (NodeDrained: deleted "
                 "on its cordoned node n1); it is replaced."))],
        recorded=[("Worker 1", "NodeDrained", "NodeDrain", T, None)],
        counted=(("NodeDrained", 1),), nodes={**HEALTHY, "n1": node("n1", cordoned=True, ready="Unknown",
                                                                     since="2026-11-21T09:59:58Z")}),
    "the reclaim notice on Worker 1's node: moved at once, gracefully, and the others with it": Row(
        job("OnFailure"), [on(make_pod("Worker", 0), "n0"), on(make_pod("Worker", 1), "n1"),
                           on(make_pod("Worker", 2), "n2")],
        deleted=[W0, W1, W2], restarts=0, failed=None,
        events=[("Normal", "ReplicaDisrupted", ("TFJob ns/mnist: Worker 1's node n1 has the reclaim notice "
                 "aws-node-termination-handler/spot-itn since 09:59:50 (ReclaimNotice); it is moved: stopped "
                 "gracefully, within its grace period to save a checkpoint, and made again on another node."))],
        recorded=[("Worker 1", "ReclaimNotice", "Node", T, "2026-11-21T10:01:20Z")], counted=(("ReclaimNotice", 1),),
        nodes={**HEALTHY, "n1": node("n1", taints=("aws-node-termination-handler/spot-itn",))}),
    "a reclaim taint tfop is not configured for: nothing happens": Row(
        job("OnFailure"), [on(make_pod("Worker", index), f"n{index}") for index in range(3)],
        deleted=[], restarts=0, failed=None, events=[], recorded=[],
        nodes={**HEALTHY, "n1": node("n1", taints=("example.com/going-away",))}),
    # Item 2: the window. The rule: a peer's failure in [T, peersUntil] is the disruption's unless it ended before
    # T or was OOMKilled.
    "ExitCode: Worker 0 exited 1 five seconds into the window: the disruption's, replaced uncounted": Row(
        job("ExitCode", recorded=True),
        [ended(0, 1, "2026-11-21T09:59:55Z"), on(evicted(make_pod("Worker", 1)), "n1"), make_pod("Worker", 2)],
        deleted=[W0, W2], restarts=0, failed=None,
        events=[("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 1.")], recorded=RECORDED),
    "ExitCode: Worker 0 OOMKilled in the window: its own failure, counted (past backoffLimit 0)": Row(
        job("ExitCode", recorded=True),
        [ended(0, 137, "2026-11-21T09:59:55Z", "OOMKilled"), on(evicted(make_pod("Worker", 1)), "n1"),
         make_pod("Worker", 2)],
        deleted=[W2], restarts=1, failed=PAST_BACKOFF,
        # The exit is told with the restart and again with the final tally (the recorder counts them as one).
        events=[("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 137."),
                ("Warning", "TFJobRestarting", ("TFJob ns/mnist is restarting Worker 0, which exited with code 137 "
                 "(OOMKilled).")),
                ("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 137."),
                ("Warning", "BackoffLimitExceeded", PAST_BACKOFF)], recorded=RECORDED),
    "ExitCode: Worker 0 exited 1 before the disruption began: its own, a permanent failure": Row(
        job("ExitCode", recorded=True),
        [ended(0, 1, "2026-11-21T09:59:49Z"), on(evicted(make_pod("Worker", 1)), "n1"), make_pod("Worker", 2)],
        deleted=[W2], restarts=0, failed=FAILED_1,
        events=[("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 1."),
                ("Warning", "TFJobFailed", FAILED_1)], recorded=RECORDED),
    "ExitCode: Worker 0 exited 1 after the window closed: its own": Row(
        job("ExitCode", recorded=True),
        [ended(0, 1, "2026-11-21T10:01:21Z"), on(evicted(make_pod("Worker", 1)), "n1"), make_pod("Worker", 2)],
        deleted=[W2], restarts=0, failed=FAILED_1,
        events=[("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 1."),
                ("Warning", "TFJobFailed", FAILED_1)], recorded=RECORDED),
    "ExitCode, restart scope Replica: no window, Worker 0's exit 1 is its own": Row(
        job("ExitCode", scope="Replica", recorded=True),
        [ended(0, 1, "2026-11-21T09:59:55Z"), on(evicted(make_pod("Worker", 1)), "n1"), make_pod("Worker", 2)],
        deleted=[W2], restarts=0, failed=FAILED_1,
        events=[("Normal", "ExitedWithCode", "TFJob ns/mnist: Worker 0 exited with code 1."),
                ("Warning", "TFJobFailed", FAILED_1)], recorded=RECORDED),
    "OnFailure: Worker 0 restarted in place in the window: that restart is uncounted": Row(
        job("OnFailure", recorded=True),
        [restarted(0, 1, "2026-11-21T09:59:55Z"), on(evicted(make_pod("Worker", 1)), "n1"), make_pod("Worker", 2)],
        deleted=[W0, W2], restarts=0, failed=None, events=[], recorded=RECORDED),
    "OnFailure: Worker 0 restarted in place after an OOM kill in the window: counted": Row(
        job("OnFailure", recorded=True),
        [restarted(0, 137, "2026-11-21T09:59:55Z", "OOMKilled"), on(evicted(make_pod("Worker", 1)), "n1"),
         make_pod("Worker", 2)],
        deleted=[W0, W2], restarts=1, failed=PAST_BACKOFF,
        events=[("Warning", "TFJobRestarting", ("TFJob ns/mnist: Worker containers restarted in place 1 more "
                 "time(s), 1 restart(s) of Worker replicas in all.")),
                ("Warning", "BackoffLimitExceeded", PAST_BACKOFF)], recorded=RECORDED),
    "OnFailure: Worker 1's node not Ready (not lost yet): Worker 0's restart since is uncounted": Row(
        job("OnFailure"), [on(restarted(0, 1, "2026-11-21T09:59:53Z"), "n0"), on(make_pod("Worker", 1), "n1"),
                           on(make_pod("Worker", 2), "n2")],
        deleted=[], restarts=0, failed=None, events=[], recorded=[],
        nodes={**HEALTHY, "n1": node("n1", ready="Unknown")}),
    "OnFailure: Worker 1's node unreachable; Worker 0 restarted 30 s before Ready turned Unknown: uncounted": Row(
        job("OnFailure"), [on(restarted(0, 1, "2026-11-21T09:59:20Z"), "n0"), on(make_pod("Worker", 1), "n1"),
                           on(make_pod("Worker", 2), "n2")],
        deleted=[], restarts=0, failed=None, events=[], recorded=[],
        nodes={**HEALTHY, "n1": node("n1", ready="Unknown")}),
    "OnFailure: the same restart 60 s before, longer than a kubelet's silence is waited out: its own": Row(
        job("OnFailure"), [on(restarted(0, 1, "2026-11-21T09:58:50Z"), "n0"), on(make_pod("Worker", 1), "n1"),
                           on(make_pod("Worker", 2), "n2")],
        deleted=[W0, W1, W2], restarts=1, failed=PAST_BACKOFF,
        events=[("Warning", "TFJobRestarting", ("TFJob ns/mnist: Worker containers restarted in place 1 more "
                 "time(s), 1 restart(s) of Worker replicas in all.")),
                ("Warning", "BackoffLimitExceeded", PAST_BACKOFF)], recorded=[],
        nodes={**HEALTHY, "n1": node("n1", ready="Unknown")}),
    "Worker 1's node lost past its grace: forced out, the others with it, recorded as NodeLost": Row(
        job("OnFailure"), [on(make_pod("Worker", 0), "n0"), on(make_pod("Worker", 1), "n1"),
                           on(make_pod("Worker", 2), "n2")],
        deleted=[W0, W1, W2], forced=[W1], restarts=0, failed=None,
        events=[("Warning", "NodeLost", ("TFJob ns/mnist: Worker 1's node n1 is unreachable since 09:59:00; "
                 "replacing it without waiting for its kubelet."))],
        # From when its kubelet went silent (50 s before Ready turned Unknown), until the node-loss grace (30 s)
        # and the window (60 s) past the transition.
        recorded=[("Worker 1", "NodeLost", "Node", "2026-11-21T09:58:10Z", "2026-11-21T10:00:30Z")],
        counted=(("NodeLost", 1),), nodes={**HEALTHY, "n1": node("n1", ready="Unknown", since="2026-11-21T09:59:00Z")}),
}


@pytest.mark.parametrize("row", list(ROWS.values()), ids=list(ROWS))
def test_disruptions_and_their_peers(row: Row) -> None:
    children: dict[str, list[dict[str, Any]]] = {POD: row.pods, SERVICE: services_for({"Worker": 3})}
    before = copy.deepcopy(children)
    result = plan(PlanContext(row.job, children, NOW, ControllerConfig(), nodes=row.nodes))
    assert children == before, "plan() must not mutate its input"
    assert sorted(ref.name for ref in result.delete if ref.kind == POD) == row.deleted
    assert sorted(ref.name for ref in result.delete if ref.kind == POD and ref.grace_period_seconds == 0) == row.forced
    assert not [creation.name for creation in result.create if creation.kind == POD], "none starts alone"
    assert [(e.type, e.reason, e.message) for e in result.events] == row.events
    assert result.counters.disruptions == row.counted
    status = result.status.to_json() if result.status is not None else row.job["status"]
    assert status["replicaStatuses"]["Worker"]["restarts"] == row.restarts
    failed = next((entry["message"] for entry in status["conditions"]
                   if entry["type"] == "Failed" and entry["status"] == "True"), None)
    assert failed == row.failed
    assert [(entry["replica"], entry["reason"], entry["source"], entry["time"], entry.get("peersUntil"))
            for entry in status.get("disruptions", [])] == row.recorded
