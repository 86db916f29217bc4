"""The planner's views of what it observes (plan/observed/): a slim object as the cache keeps it in, the view's
fields out, written out row by row."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tfop.controller.cache_transforms import node_health_transform, slim_pod
from tfop.controller.plan.observed.batch_job import BatchJobView, JobOutcome
from tfop.controller.plan.observed.child import Child, Owner
from tfop.controller.plan.observed.node import NodeCondition, NodeView, Taint
from tfop.controller.plan.observed.own_child import ChildCondition, OwnedView
from tfop.controller.plan.observed.pod import (
    ContainerRun,
    Disruption,
    PodCondition,
    PodView,
    Terminated,
    Termination,
    Waiting,
)
from tfop.controller.plan.slots import ReplicaSlot

T0 = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 21, 10, 1, 0, tzinfo=UTC)
OWNER = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist", "uid": "j1", "controller": True}
LABELS = {"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "1"}

# A pod as slim_pod keeps it: a failed worker whose tensorflow container was OOM-killed after one restart in place,
# on node n1, disrupted (DisruptionTarget), being deleted.
SLIM_FAILED: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "mnist-worker-1", "namespace": "ns", "uid": "p1", "resourceVersion": "42",
                 "labels": LABELS, "ownerReferences": [OWNER], "creationTimestamp": "2026-11-21T10:00:00Z",
                 "deletionTimestamp": "2026-11-21T10:01:00Z",
                 "annotations": {"tfop.kubeflow.org/tf-cluster": "PS=1,Worker=2"}},
    "spec": {"nodeName": "n1"},
    "status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on memory.",
               "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}],
               "containerStatuses": [
                   {"name": "sidecar", "restartCount": 2, "state": {"terminated": {"exitCode": 1}}},
                   {"name": "tensorflow", "restartCount": 1,
                    "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                             "finishedAt": "2026-11-21T10:00:50Z"}},
                    "lastState": {"terminated": {"exitCode": 143, "reason": "Error",
                                                 "finishedAt": "2026-11-21T10:00:20Z"}}}]},
}
SLIM_PENDING: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "mnist-worker-0", "uid": "p0"},
    "status": {"phase": "Pending",
               "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                               "message": "0/3 nodes are available."}],
               "containerStatuses": [{"name": "tensorflow", "restartCount": 0, "state": {
                   "waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}}]},
}

POD_ROWS: dict[str, tuple[dict[str, Any], PodView]] = {
    "failed, disrupted, being deleted": (SLIM_FAILED, PodView(
        name="mnist-worker-1", uid="p1", namespace="ns", resource_version="42", labels=LABELS,
        annotations={"tfop.kubeflow.org/tf-cluster": "PS=1,Worker=2"},
        controller=Owner("kubeflow.org/v1", "TFJob", "mnist", "j1"), created=T0, terminating=True,
        deletion_deadline=T1, slot=ReplicaSlot("Worker", 1), node_name="n1", phase="Failed", reason="Evicted",
        message="The node was low on memory.", scheduled=None, disruption=Disruption("TerminationByKubelet"),
        containers=(ContainerRun("sidecar", 2, Terminated(1)),
                    ContainerRun("tensorflow", 1, Terminated(137, "OOMKilled", "", "2026-11-21T10:00:50Z"), None,
                                 Terminated(143, "Error", "", "2026-11-21T10:00:20Z"))))),
    "pending, unschedulable, its image not pulled": (SLIM_PENDING, PodView(
        name="mnist-worker-0", uid="p0", phase="Pending", scheduled=PodCondition("False", "Unschedulable",
                                                                                 "0/3 nodes are available."),
        containers=(ContainerRun("tensorflow", 0, None, Waiting("ImagePullBackOff", "no such image")),))),
    "nothing but a name: Pending, no node, no containers": ({"metadata": {"name": "x"}}, PodView(name="x")),
    "fields of the wrong types read as left out": (
        {"metadata": {"name": 3, "labels": {"a": 1, "b": "c"}, "ownerReferences": "junk"},
         "spec": {"nodeName": ""}, "status": {"phase": 7, "containerStatuses": [{"restartCount": "2"}, "junk"]}},
        PodView(labels={"b": "c"}, containers=(ContainerRun(""), ContainerRun("")))),
}


@pytest.mark.parametrize(("slim", "expected"), POD_ROWS.values(), ids=POD_ROWS.keys())
def test_pod_view(slim: dict[str, Any], expected: PodView) -> None:
    assert PodView.of(slim) == expected


@pytest.mark.parametrize(("slim", "derived"), [
    (SLIM_FAILED, (True, 3, Termination(137, "OOMKilled"), 137, "retryable", "2026-11-21T10:00:50Z",
                   datetime(2026, 11, 21, 10, 0, 50, tzinfo=UTC), "2026-11-21T10:00:20Z")),
    (SLIM_PENDING, (False, 0, None, None, "unknown", "", None, "")),
], ids=["failed", "pending"])
def test_pod_view_reads(slim: dict[str, Any], derived: tuple[Any, ...]) -> None:
    """What the policies read of a pod: disrupted, restarts, the tensorflow container's exit and when it ended."""
    pod = PodView.of(slim)
    assert (pod.disrupted, pod.restart_count, pod.termination, pod.exit_code, pod.exit_class_name, pod.finished_at,
            pod.ended_at, pod.restarted_at) == derived


def test_a_whole_pod_and_its_slim_copy_read_the_same() -> None:
    """The cache keeps a slim pod; a view of the whole pod says the same (test_reconcile relies on it)."""
    whole = {**SLIM_FAILED, "spec": {"nodeName": "n1", "containers": [{"name": "tensorflow", "image": "tf"}]},
             "status": {**SLIM_FAILED["status"], "hostIP": "198.18.0.1",
                        "conditions": [*SLIM_FAILED["status"]["conditions"],
                                       {"type": "Ready", "status": "False", "lastProbeTime": None}]}}
    assert PodView.of(slim_pod(whole)) == PodView.of(whole) == POD_ROWS["failed, disrupted, being deleted"][1]


NODE_ROWS: dict[str, tuple[dict[str, Any], NodeView, tuple[bool, bool, datetime | None]]] = {
    "Ready": (
        {"metadata": {"name": "n1"}, "status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-21T10:00:00Z"}]}},
        NodeView("n1", (), (NodeCondition("Ready", "True", T0),)), (True, False, T0)),
    "unreachable: Ready Unknown, the taint added later": (
        {"metadata": {"name": "n2"}, "spec": {"unschedulable": True, "taints": [
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-11-21T10:01:00Z"}]},
         "status": {"conditions": [{"type": "Ready", "status": "Unknown",
                                    "lastTransitionTime": "2026-11-21T10:00:00Z"}]}},
        NodeView("n2", (Taint("node.kubernetes.io/unreachable", T1),), (NodeCondition("Ready", "Unknown", T0),),
                 unschedulable=True), (False, True, T0)),
    "not ready, said by its kubelet": (
        {"metadata": {"name": "n3"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}},
        NodeView("n3", (), (NodeCondition("Ready", "False"),)), (False, False, None)),
    "no conditions, only the unreachable taint: since the taint": (
        {"metadata": {"name": "n4"}, "spec": {"taints": [
            {"key": "node.kubernetes.io/unreachable", "timeAdded": "2026-11-21T10:01:00Z"}, {"effect": "junk"}]}},
        NodeView("n4", (Taint("node.kubernetes.io/unreachable", T1),)), (False, True, T1)),
}


@pytest.mark.parametrize(("slim", "expected", "health"), NODE_ROWS.values(), ids=NODE_ROWS.keys())
def test_node_view(slim: dict[str, Any], expected: NodeView, health: tuple[bool, bool, datetime | None]) -> None:
    node = NodeView.of(slim)
    assert node == expected
    assert (node.ready, node.unreachable, node.unready_since) == health


def test_a_node_and_its_slim_copy_read_the_same() -> None:
    whole = {"metadata": {"name": "n1", "labels": {"zone": "a"}}, "spec": {"podCIDR": "198.18.0.0/24"},
             "status": {"conditions": [
                 {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-21T10:00:00Z",
                  "lastHeartbeatTime": "2026-11-21T10:05:00Z"},
                 {"type": "GPUUnhealthy", "status": "True", "lastTransitionTime": "2026-11-21T10:01:00Z"},
                 {"type": "MemoryPressure", "status": "False"}]}}
    slim = node_health_transform(("GPUUnhealthy",))(whole)
    assert NodeView.of(slim) == NodeView("n1", (), (NodeCondition("Ready", "True", T0),
                                                    NodeCondition("GPUUnhealthy", "True", T1)))


JOB_ROWS: dict[str, tuple[dict[str, Any], BatchJobView]] = {
    "running": ({"metadata": {"name": "w0", "uid": "b0"}, "spec": {"suspend": False}, "status": {"failed": 2}},
                BatchJobView(name="w0", uid="b0", failed=2)),
    "suspended": ({"metadata": {"name": "w0", "uid": "b0"}, "spec": {"suspend": True}},
                  BatchJobView(name="w0", uid="b0", suspended=True)),
    "complete": ({"metadata": {"name": "w0"}, "status": {"conditions": [
        {"type": "Complete", "status": "True", "reason": "CompletionsReached"}]}},
        BatchJobView(name="w0", outcome=JobOutcome("Complete", "CompletionsReached"))),
    "FailureTarget counts as failed; a condition not True is not read": (
        {"metadata": {"name": "w0"}, "status": {"failed": -1, "conditions": [
            {"type": "Complete", "status": "False"},
            {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"}]}},
        BatchJobView(name="w0", outcome=JobOutcome("Failed", "BackoffLimitExceeded"))),
}


@pytest.mark.parametrize(("slim", "expected"), JOB_ROWS.values(), ids=JOB_ROWS.keys())
def test_batch_job_view(slim: dict[str, Any], expected: BatchJobView) -> None:
    assert BatchJobView.of(slim) == expected


def test_a_service_is_its_metadata() -> None:
    service = {"metadata": {"name": "mnist-worker-1", "uid": "s1", "labels": LABELS,
                            "ownerReferences": [{**OWNER, "controller": False}, OWNER]}, "spec": {"clusterIP": "None"}}
    assert Child.of(service) == Child(name="mnist-worker-1", uid="s1", labels=LABELS,
                                      controller=Owner("kubeflow.org/v1", "TFJob", "mnist", "j1"),
                                      slot=ReplicaSlot("Worker", 1))


OWN_ROWS: dict[str, tuple[dict[str, Any], OwnedView]] = {
    "a Volcano PodGroup, Inqueue, with the scheduler's words": (
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "mnist", "namespace": "ns", "uid": "g1", "ownerReferences": [OWNER]},
         "spec": {"minMember": 3, "queue": "default"},
         "status": {"phase": "Inqueue", "conditions": [
             {"type": "Unschedulable", "status": "True", "message": "3/3 tasks in gang unschedulable"},
             {"type": "Scheduled", "status": "False"}]}},
        OwnedView(name="mnist", namespace="ns", uid="g1", controller=Owner("kubeflow.org/v1", "TFJob", "mnist", "j1"),
                  spec={"minMember": 3, "queue": "default"}, phase="Inqueue",
                  conditions=(ChildCondition("Unschedulable", "True", "3/3 tasks in gang unschedulable"),
                              ChildCondition("Scheduled", "False")))),
    "an HPA as the cache keeps it: its spec, no status": (
        {"metadata": {"name": "mnist", "uid": "h1", "deletionTimestamp": "2026-11-21T10:01:00Z"},
         "spec": {"minReplicas": 1, "maxReplicas": 4}},
        OwnedView(name="mnist", uid="h1", terminating=True, deletion_deadline=T1,
                  spec={"minReplicas": 1, "maxReplicas": 4})),
}


@pytest.mark.parametrize(("slim", "expected"), OWN_ROWS.values(), ids=OWN_ROWS.keys())
def test_own_child_view(slim: dict[str, Any], expected: OwnedView) -> None:
    assert OwnedView.of(slim) == expected
