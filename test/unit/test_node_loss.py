"""Table tests of node loss (tfop/controller/plan/policies/node_loss.py): which replica's node is lost, suspect or
unhealthy, and what the plan does about it. The clock is 10:00:00; every expected row is written out."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from support.plan_builders import NOW, make_job, make_pod, message, running, services_for
from tfop.controller.plan.controller_config import ControllerConfig, NodeLossSettings
from tfop.controller.plan.job.annotations import node_policy
from tfop.controller.plan.job.model import JobNodePolicy
from tfop.controller.plan.observed.node import NodeView
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.planner import plan
from tfop.controller.plan.policies.node_loss import Verdict, replicas_on_bad_nodes
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import POD, SERVICE, ChildRef, Creation, PlanContext

GPU = NodeLossSettings(unhealthy_conditions=("GPUUnhealthy",), unhealthy_taints=("example.com/gpu-unhealthy",))
REPLACE_30 = JobNodePolicy("Replace", timedelta(seconds=30))
WAIT = JobNodePolicy("WaitForProof", timedelta(seconds=30))


def at(clock: str) -> str:
    return f"2026-11-21T{clock}Z"


def node(name: str = "real-1", ready: str = "True", since: str = "09:00:00", *,
         taints: tuple[tuple[str, str], ...] = (), conditions: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    """A node as the cache keeps it: its Ready condition, and `taints` / other `conditions` with their times."""
    return {"metadata": {"name": name},
            "spec": {"taints": [{"key": key, "effect": "NoExecute", "timeAdded": at(added)} for key, added in taints]},
            "status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": at(since)},
                                      *({"type": kind, "status": "True", "lastTransitionTime": at(changed)}
                                        for kind, changed in conditions)]}}


def pod_on(node_name: str | None, phase: str = "Running", *, created: str = "09:00:00",
           deleted: str | None = None) -> dict[str, Any]:
    pod = make_pod("Worker", 1, phase)
    pod["metadata"]["creationTimestamp"] = at(created)
    if deleted:
        pod["metadata"]["deletionTimestamp"] = at(deleted)
    if node_name:
        pod["spec"] = {"nodeName": node_name}
    return pod


def t(clock: str) -> datetime:
    return datetime.fromisoformat(f"2026-11-21T{clock}+00:00").astimezone(UTC)


UNREACHABLE = ("node.kubernetes.io/unreachable", "09:59:00")
OUT_OF_SERVICE = ("node.kubernetes.io/out-of-service", "09:59:58")
SPOT = "aws-node-termination-handler/spot-itn"

# (pod, nodes by name, settings, policy) -> [(verdict, cause, replace at)], or [] when the replica is left alone
ROWS: dict[str, tuple[dict[str, Any], dict[str, dict[str, Any]], NodeLossSettings, JobNodePolicy,
                      list[tuple[Verdict, str, datetime | None]]]] = {
    "a Ready node is healthy": (pod_on("real-1"), {"real-1": node()}, GPU, REPLACE_30, []),
    "an unscheduled pod has no node to lose": (pod_on(None, "Pending"), {}, GPU, REPLACE_30, []),
    "a pod that ended is not replaced for its node": (
        pod_on("real-1", "Failed"), {"real-1": node(ready="Unknown", since="09:50:00")}, GPU, REPLACE_30, []),
    "unreachable within the grace: suspect, replaced when it ends": (
        pod_on("real-1"), {"real-1": node(ready="Unknown", since="09:59:50")}, GPU, REPLACE_30,
        [(Verdict.SUSPECT, "is unreachable since 09:59:50", t("10:00:20"))]),
    "unreachable past the grace: lost": (
        pod_on("real-1"), {"real-1": node(ready="Unknown", since="09:59:00", taints=(UNREACHABLE,))}, GPU,
        REPLACE_30, [(Verdict.LOST, "is unreachable since 09:59:00", None)]),
    "not ready past the grace: lost": (
        pod_on("real-1"), {"real-1": node(ready="False", since="09:59:00")}, GPU, REPLACE_30,
        [(Verdict.LOST, "is not ready since 09:59:00", None)]),
    "a job grace of 5 s replaces sooner": (
        pod_on("real-1"), {"real-1": node(ready="Unknown", since="09:59:50")}, GPU,
        JobNodePolicy("Replace", timedelta(seconds=5)), [(Verdict.LOST, "is unreachable since 09:59:50", None)]),
    "WaitForProof waits on an unreachable node however long": (
        pod_on("real-1"), {"real-1": node(ready="Unknown", since="09:00:00", taints=(UNREACHABLE,))}, GPU, WAIT,
        [(Verdict.SUSPECT, "is unreachable since 09:00:00; waiting for proof its processes are gone", None)]),
    "out of service is proof at once, whatever the policy": (
        pod_on("real-1"), {"real-1": node(ready="Unknown", since="09:59:58", taints=(OUT_OF_SERVICE,))}, GPU, WAIT,
        [(Verdict.LOST, "is out of service (node.kubernetes.io/out-of-service)", None)]),
    "a deleted node: lost once the pod is older than the grace": (
        pod_on("real-1", created="09:50:00"), {}, GPU, WAIT, [(Verdict.LOST, "no longer exists", None)]),
    "a node the cache has yet to see: suspect until the grace from the pod's creation": (
        pod_on("real-1", "Pending", created="09:59:55"), {}, GPU, REPLACE_30,
        [(Verdict.SUSPECT, "no longer exists", t("10:00:25"))]),
    "an unhealthy condition past the grace: moved off, gracefully": (
        pod_on("real-1"), {"real-1": node(conditions=(("GPUUnhealthy", "09:59:00"),))}, GPU, REPLACE_30,
        [(Verdict.MOVE, "has condition GPUUnhealthy since 09:59:00", None)]),
    "an unhealthy taint within the grace: suspect": (
        pod_on("real-1"), {"real-1": node(taints=(("example.com/gpu-unhealthy", "09:59:55"),))}, GPU, REPLACE_30,
        [(Verdict.SUSPECT, "has taint example.com/gpu-unhealthy since 09:59:55", t("10:00:25"))]),
    "a condition the config does not name is ignored": (
        pod_on("real-1"), {"real-1": node(conditions=(("GPUUnhealthy", "09:59:00"),))}, NodeLossSettings(),
        REPLACE_30, []),
    "terminating past its deadline and the margin on an unreachable node: lost before the grace": (
        pod_on("real-1", deleted="09:59:00"), {"real-1": node(ready="Unknown", since="09:59:50")}, GPU, REPLACE_30,
        [(Verdict.LOST, "is unreachable since 09:59:50, and its pod has been terminating since 09:59:30", None)]),
    "Ready again with the unreachable taint not yet lifted: healthy (the taint lags a monitor pass)": (
        pod_on("real-1"), {"real-1": node(since="09:59:00", taints=(UNREACHABLE,))}, GPU, REPLACE_30, []),
    "terminating on a Ready node is the kubelet's to finish": (
        pod_on("real-1", deleted="09:50:00"), {"real-1": node()}, GPU, REPLACE_30, []),
    "a spot reclaim notice on a Ready node: moved at once, gracefully, no grace waited": (
        pod_on("real-1"), {"real-1": node(taints=((SPOT, "09:59:58"),))}, GPU, REPLACE_30,
        [(Verdict.MOVE, f"has the reclaim notice {SPOT} since 09:59:58", None)]),
    "a reclaim notice on a node already unreachable: node loss's to judge": (
        pod_on("real-1"), {"real-1": node(ready="Unknown", since="09:59:50", taints=((SPOT, "09:59:40"),))}, GPU,
        REPLACE_30, [(Verdict.SUSPECT, "is unreachable since 09:59:50", t("10:00:20"))]),
    "a pod bound to a reclaimed node but not yet running is moved too": (
        pod_on("real-1", "Pending"), {"real-1": node(taints=((SPOT, "09:59:58"),))}, GPU, REPLACE_30,
        [(Verdict.MOVE, f"has the reclaim notice {SPOT} since 09:59:58", None)]),
}


@pytest.mark.parametrize("row", list(ROWS.values()), ids=list(ROWS))
def test_node_loss(row: tuple[Any, ...]) -> None:
    pod, nodes, settings, policy, expected = row
    views = {name: NodeView.of(entry) for name, entry in nodes.items()}
    found = replicas_on_bad_nodes([PodView.of(pod)], views, NOW, settings, policy, (SPOT,))
    assert [(replica.verdict, replica.cause, replica.replace_at) for replica in found] == expected


@pytest.mark.parametrize(("annotations", "expected", "errors"), [
    ({}, JobNodePolicy("Replace", timedelta(seconds=30)), []),
    ({"tfop.kubeflow.org/node-loss-policy": "WaitForProof", "tfop.kubeflow.org/node-loss-grace-seconds": "90"},
     JobNodePolicy("WaitForProof", timedelta(seconds=90)), []),
    ({"tfop.kubeflow.org/node-loss-policy": "Sometimes", "tfop.kubeflow.org/node-loss-grace-seconds": "-1"},
     JobNodePolicy("Replace", timedelta(seconds=30)),
     [("metadata.annotations[tfop.kubeflow.org/node-loss-policy]: must be one of Replace, WaitForProof, not "
       "'Sometimes'"),
      ("metadata.annotations[tfop.kubeflow.org/node-loss-grace-seconds]: must be a number of seconds from 0 to "
       "86400, not '-1'")]),
])
def test_a_jobs_annotations_set_its_policy(annotations: dict[str, str], expected: JobNodePolicy,
                                           errors: list[str]) -> None:
    policy, found = node_policy(annotations, NodeLossSettings())
    assert (policy, [str(error) for error in found]) == (expected, errors)


# --- the plan: what tfop does about it ---------------------------------------------------------------------------
def plan_with_nodes(job: dict[str, Any], pods: list[dict[str, Any]], nodes: dict[str, Any] | None) -> Any:
    return plan(PlanContext(job, {POD: pods, SERVICE: services_for()}, NOW, ControllerConfig(), nodes=nodes))


def job_with_worker_1_on(node_name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    job = running(make_job())
    pods = [make_pod("Worker", 0), make_pod("PS", 0), pod_on(node_name)]
    for pod in pods[:2]:
        pod["spec"] = {"nodeName": "real-0"}
    return job, pods


def test_a_replica_on_a_lost_node_is_force_deleted_told_and_not_counted_as_a_restart() -> None:
    job, pods = job_with_worker_1_on("real-1")
    result = plan_with_nodes(job, pods, {"real-0": node("real-0"),
                                         "real-1": node(ready="Unknown", since="09:59:00", taints=(UNREACHABLE,))})
    assert result.delete == [ChildRef(POD, "mnist-worker-jje2-1", "pod-mnist-worker-jje2-1", 0)]
    assert [(event.reason, event.message) for event in result.events if event.reason == "NodeLost"] == [
        ("NodeLost", ("TFJob ns/mnist: Worker 1's node real-1 is unreachable since 09:59:00; replacing it without "
                      "waiting for its kubelet."))]
    assert result.restarts == ()


LOST_NODE = node(ready="Unknown", since="09:59:00", taints=(UNREACHABLE,))
WORKER_1 = "mnist-worker-jje2-1"
# (the node Worker 1 is on, the job's annotations) -> (the plan's deletes, its pod creates). A forced delete's
# replacement rides in the same plan, to be sent only if the apiserver answers that the old pod is removed.
REPLACEMENTS: dict[str, tuple[dict[str, Any], dict[str, str], list[ChildRef], list[Creation]]] = {
    "lost: force-deleted, its replacement planned with it": (
        LOST_NODE, {}, [ChildRef(POD, WORKER_1, f"pod-{WORKER_1}", 0)],
        [Creation(POD, ReplicaSlot("Worker", 1), WORKER_1, replaces=f"pod-{WORKER_1}")]),
    "out of service under WaitForProof: the same, at once": (
        node(ready="Unknown", since="09:59:58", taints=(OUT_OF_SERVICE,)),
        {"tfop.kubeflow.org/node-loss-policy": "WaitForProof"}, [ChildRef(POD, WORKER_1, f"pod-{WORKER_1}", 0)],
        [Creation(POD, ReplicaSlot("Worker", 1), WORKER_1, replaces=f"pod-{WORKER_1}")]),
    "an unhealthy node: deleted gracefully, replaced once its kubelet confirms": (
        node(conditions=(("GPUUnhealthy", "09:59:00"),)), {}, [ChildRef(POD, WORKER_1, f"pod-{WORKER_1}", None)],
        []),
    "suspect: nothing yet": (node(ready="Unknown", since="09:59:50"), {}, [], []),
    "restart scope Job: every replica deleted, none made until all are gone": (
        LOST_NODE, {"tfop.kubeflow.org/restart-scope": "Job"},
        [ChildRef(POD, "mnist-worker-jje2-0", "pod-mnist-worker-jje2-0", None),
         ChildRef(POD, "mnist-ps-jje2-0", "pod-mnist-ps-jje2-0", None),
         ChildRef(POD, WORKER_1, f"pod-{WORKER_1}", 0)], []),
}


@pytest.mark.parametrize("row", list(REPLACEMENTS.values()), ids=list(REPLACEMENTS))
def test_what_a_plan_deletes_and_creates_for_a_replica_on_a_bad_node(row: tuple[Any, ...]) -> None:
    bad_node, annotations, deletes, creates = row
    job, pods = job_with_worker_1_on("real-1")
    job["metadata"]["annotations"] = annotations
    settings = ControllerConfig(node_loss=GPU)
    result = plan(PlanContext(job, {POD: pods, SERVICE: services_for()}, NOW, settings,
                              nodes={"real-0": node("real-0"), "real-1": bad_node}))
    assert (result.delete, result.creates(POD)) == (deletes, creates)


def test_a_suspect_replica_is_told_in_the_running_message_and_looked_at_when_its_grace_ends() -> None:
    job, pods = job_with_worker_1_on("real-1")
    result = plan_with_nodes(job, pods, {"real-0": node("real-0"), "real-1": node(ready="Unknown", since="09:59:50")})
    assert result.delete == []
    assert result.requeue_after == 20.0
    assert message(result, "Running") == (
        "TFJob ns/mnist is running. Worker 1's node real-1 is unreachable since 09:59:50; replacing it at "
        "10:00:20 unless the node recovers.")


def test_without_node_health_nothing_is_decided_about_nodes() -> None:
    job, pods = job_with_worker_1_on("real-1")
    assert plan_with_nodes(job, pods, None).delete == []


def test_bad_node_loss_annotations_fail_the_job_with_the_field_named() -> None:
    job, pods = job_with_worker_1_on("real-1")
    job["metadata"]["annotations"] = {"tfop.kubeflow.org/node-loss-policy": "Sometimes"}
    result = plan_with_nodes(job, pods, {})
    assert "metadata.annotations[tfop.kubeflow.org/node-loss-policy]: must be one of Replace, WaitForProof" in (
        message(result, "Failed"))


def test_the_operator_default_policy_applies_without_annotations() -> None:
    settings = replace(NodeLossSettings(), policy="WaitForProof", grace_seconds=10)
    assert node_policy({}, settings) == (JobNodePolicy("WaitForProof", timedelta(seconds=10)), [])
