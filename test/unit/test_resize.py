"""Table tests of resizing a job (tfop/controller/plan/policies/resize.py): by restart, every live replica whose
TF_CONFIG was built for another size stops and all start again together; in place (enableDynamicWorker), workers
are only added or removed. Either way the resize is told once, and counts as no restart."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from support.plan_builders import NOW, make_job, make_pod, plan_of, running, services_for
from tfop.controller.cache_transforms import slim_job
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.gang_schedulers import GangSchedulerName
from tfop.controller.plan.job_status import ResizeCause, ResizeStrategy
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import AUTOSCALER, POD, POD_GROUP, SERVICE, PlanContext
from tfop.metrics import RESIZES

KEY = "tfop.kubeflow.org/tf-cluster"


def pod(replica_type: str, index: int, key: str | None, *, node: str | None = None, **state: Any) -> dict[str, Any]:
    """A pod whose TF_CONFIG was built for the replica counts `key` (None: made by a tfop before the key), bound to
    `node` if given."""
    made = make_pod(replica_type, index, **state)
    if key is not None:
        made["metadata"]["annotations"] = {KEY: key}
    if node is not None:
        made["spec"] = {"nodeName": node}
    return made


def pod_group(min_member: int) -> dict[str, Any]:
    """The job's PodGroup of scheduler-plugins as the cache shows it."""
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "mnist", "namespace": "ns", "uid": "pg-1"}, "spec": {"minMember": min_member}}


def job(replicas: dict[str, int], *, planned: int | None, dynamic: bool = False,
        resize_reason: str | None = None, workers_by: str | None = None, operation: str = "Update",
        subresource: str | None = "scale") -> dict[str, Any]:
    """A running job that asks for `replicas` now; its status says its pods were planned for `planned` workers;
    `resize_reason`: the capacity auto-scaler's note on it; `workers_by`: the field manager whose write (`operation`,
    through `subresource`) set the Worker count, as the job cache keeps it of managedFields."""
    made = running(make_job(replicas, policy="ExitCode"))
    if workers_by is not None:
        made["metadata"]["managedFields"] = [{
            "manager": workers_by, "operation": operation, "apiVersion": "kubeflow.org/v1",
            "time": "2026-11-21T09:59:00Z", "fieldsType": "FieldsV1",
            **({"subresource": subresource} if subresource else {}),
            "fieldsV1": {"f:spec": {"f:tfReplicaSpecs": {"f:Worker": {"f:replicas": {}}}}}}]
        made = slim_job(made)
    if dynamic:
        made["spec"]["enableDynamicWorker"] = True
    if resize_reason is not None:
        made["metadata"].setdefault("annotations", {})["tfop.kubeflow.org/resize-reason"] = resize_reason
    made["status"].pop("workerReplicas", None)
    if planned is not None:
        made["status"]["workerReplicas"] = planned
    return made


@dataclass(frozen=True)
class Row:
    job: dict[str, Any]
    pods: list[dict[str, Any]]
    deleted: list[str]
    created: list[str]
    event: str | None  # the Resized event's message, if one is told
    restarting: str | None = None  # the Restarting condition's reason, when it is True
    children: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    gang: GangSchedulerName = "none"  # the gang scheduler the operator runs with


OLD = "Worker=2,PS=1"
NEW = "Worker=3,PS=1"
RESTART_2_3 = ("TFJob ns/mnist: Worker 2 -> 3, asked by a user (the scale subresource or an edit of the spec); "
               "every replica stops gracefully and starts again together with the new TF_CONFIG.")
ROWS = {
    "by restart, 2 -> 3: every live replica stops; none starts before the old ones are gone": Row(
        job({"Worker": 3, "PS": 1}, planned=2),
        [pod("Worker", 0, OLD), pod("Worker", 1, OLD), pod("PS", 0, OLD)],
        deleted=["mnist-worker-jje2-0", "mnist-worker-jje2-1", "mnist-ps-jje2-0"], created=[],
        event=RESTART_2_3, restarting="Resizing"),
    "by restart, under way: old pods terminating, nothing is created": Row(
        job({"Worker": 3, "PS": 1}, planned=3),
        [pod("Worker", 0, OLD, terminating=True), pod("PS", 0, OLD, terminating=True)],
        deleted=[], created=[], event=None),
    "by restart, the old pods gone: all start together": Row(
        job({"Worker": 3, "PS": 1}, planned=3), [],
        deleted=[], created=["mnist-worker-jje2-0", "mnist-worker-jje2-1", "mnist-worker-jje2-2", "mnist-ps-jje2-0"],
        event=None),
    "by restart, 3 -> 2: the surplus worker goes with the rest": Row(
        job({"Worker": 2, "PS": 1}, planned=3),
        [pod("Worker", 0, NEW), pod("Worker", 1, NEW), pod("Worker", 2, NEW), pod("PS", 0, NEW)],
        deleted=["mnist-worker-jje2-2", "mnist-worker-jje2-0", "mnist-worker-jje2-1", "mnist-ps-jje2-0"],
        created=[],
        event=("TFJob ns/mnist: Worker 3 -> 2, asked by a user (the scale subresource or an edit of the spec); "
               "every replica stops gracefully and starts again together with the new TF_CONFIG."),
        restarting="Resizing"),
    "pods made for the current size are left alone": Row(
        job({"Worker": 3, "PS": 1}, planned=3),
        [pod("Worker", 0, NEW), pod("Worker", 1, NEW), pod("Worker", 2, NEW), pod("PS", 0, NEW)],
        deleted=[], created=[], event=None),
    "a finished pod of the old size is not restarted": Row(
        job({"Worker": 3, "PS": 1}, planned=3),
        [pod("Worker", 0, NEW), pod("Worker", 1, NEW), pod("Worker", 2, OLD, phase="Succeeded", exit_code=0),
         pod("PS", 0, NEW)],
        deleted=[], created=[], event=None),
    "pods of an earlier tfop (no key) are not restarted; the new worker is added": Row(
        job({"Worker": 3, "PS": 1}, planned=3),
        [pod("Worker", 0, None), pod("Worker", 1, None), pod("PS", 0, None)],
        deleted=[], created=["mnist-worker-jje2-2"], event=None),
    "the first plan records the size and tells nothing": Row(
        job({"Worker": 2, "PS": 1}, planned=None),
        [pod("Worker", 0, OLD), pod("Worker", 1, OLD), pod("PS", 0, OLD)],
        deleted=[], created=[], event=None),
    "in place, 2 -> 4: workers 2 and 3 are created; the chief and PS run on": Row(
        job({"Chief": 1, "Worker": 4, "PS": 1}, planned=2, dynamic=True),
        [pod("Chief", 0, "PS=1"), pod("Worker", 0, "PS=1"), pod("Worker", 1, "PS=1"), pod("PS", 0, "PS=1")],
        deleted=[], created=["mnist-worker-jje2-2", "mnist-worker-jje2-3"],
        event=("TFJob ns/mnist: Worker 2 -> 4, asked by a user (the scale subresource or an edit of the spec); "
               "workers 2-3 join in place; the other replicas run on.")),
    "in place, 4 -> 1: workers 1-3 stop gracefully; the chief and PS run on": Row(
        job({"Chief": 1, "Worker": 1, "PS": 1}, planned=4, dynamic=True),
        [pod("Chief", 0, "PS=1"), *(pod("Worker", i, "PS=1") for i in range(4)), pod("PS", 0, "PS=1")],
        deleted=["mnist-worker-jje2-1", "mnist-worker-jje2-2", "mnist-worker-jje2-3"], created=[],
        event=("TFJob ns/mnist: Worker 4 -> 1, asked by a user (the scale subresource or an edit of the spec); "
               "workers 1-3 stop gracefully; the other replicas run on.")),
    "in place, a gang 4 -> 2 before any pod of it was placed: workers 2-3 go, the others are made again": Row(
        job({"Worker": 2}, planned=4, dynamic=True),
        [pod("Worker", i, "", phase="Pending") for i in range(4)],
        deleted=["mnist-worker-jje2-2", "mnist-worker-jje2-3", "mnist-worker-jje2-0", "mnist-worker-jje2-1"],
        created=[],
        event=("TFJob ns/mnist: Worker 4 -> 2, asked by a user (the scale subresource or an edit of the spec); "
               "workers 2-3 go; no pod of the gang was placed yet, so the others are made again, for the "
               "scheduler to try the smaller gang at once."),
        children={POD_GROUP: [pod_group(4)]}, gang="scheduler-plugins"),
    "in place, the unplaced gang's pods gone: made again at the new size": Row(
        job({"Worker": 2}, planned=2, dynamic=True), [],
        deleted=[], created=["mnist-worker-jje2-0", "mnist-worker-jje2-1"], event=None,
        children={POD_GROUP: [pod_group(2)]}, gang="scheduler-plugins"),
    "in place, a gang 4 -> 2 once placed: workers 2-3 stop gracefully; the others run on": Row(
        job({"Worker": 2}, planned=4, dynamic=True),
        [pod("Worker", i, "", node="node-a") for i in range(4)],
        deleted=["mnist-worker-jje2-2", "mnist-worker-jje2-3"], created=[],
        event=("TFJob ns/mnist: Worker 4 -> 2, asked by a user (the scale subresource or an edit of the spec); "
               "workers 2-3 stop gracefully; the other replicas run on."),
        children={POD_GROUP: [pod_group(4)]}, gang="scheduler-plugins"),
    "in place, 4 -> 2 of unplaced pods without a gang: only workers 2-3 go": Row(
        job({"Worker": 2}, planned=4, dynamic=True),
        [pod("Worker", i, "", phase="Pending") for i in range(4)],
        deleted=["mnist-worker-jje2-2", "mnist-worker-jje2-3"], created=[],
        event=("TFJob ns/mnist: Worker 4 -> 2, asked by a user (the scale subresource or an edit of the spec); "
               "workers 2-3 stop gracefully; the other replicas run on.")),
    "in place, the PS count changed: every replica restarts together": Row(
        job({"Worker": 2, "PS": 2}, planned=2, dynamic=True),
        [pod("Worker", 0, "PS=1"), pod("Worker", 1, "PS=1"), pod("PS", 0, "PS=1")],
        deleted=["mnist-worker-jje2-0", "mnist-worker-jje2-1", "mnist-ps-jje2-0"], created=[],
        event=None, restarting="Resizing"),
    "the capacity auto-scaler asked, in place: its reason is told": Row(
        job({"Chief": 1, "Worker": 2, "PS": 1}, planned=4, dynamic=True,
            resize_reason="Worker 4 -> 2: ns/b's pods waited 30 s for cpu"),
        [pod("Chief", 0, "PS=1"), *(pod("Worker", i, "PS=1") for i in range(4)), pod("PS", 0, "PS=1")],
        deleted=["mnist-worker-jje2-2", "mnist-worker-jje2-3"], created=[],
        event=("TFJob ns/mnist: Worker 4 -> 2, asked by the capacity auto-scaler (Worker 4 -> 2: ns/b's pods "
               "waited 30 s for cpu); workers 2-3 stop gracefully; the other replicas run on.")),
    "a count other than the auto-scaler's note names is a user's": Row(
        job({"Chief": 1, "Worker": 3, "PS": 1}, planned=2, dynamic=True,
            resize_reason="Worker 4 -> 2: ns/b's pods waited 30 s for cpu"),
        [pod("Chief", 0, "PS=1"), pod("Worker", 0, "PS=1"), pod("Worker", 1, "PS=1"), pod("PS", 0, "PS=1")],
        deleted=[], created=["mnist-worker-jje2-2"],
        event=("TFJob ns/mnist: Worker 2 -> 3, asked by a user (the scale subresource or an edit of the spec); "
               "worker 2 joins in place; the other replicas run on.")),
    "a note that does not read as the auto-scaler writes them is ignored": Row(
        job({"Chief": 1, "Worker": 3, "PS": 1}, planned=2, dynamic=True, resize_reason="3 because I said so"),
        [pod("Chief", 0, "PS=1"), pod("Worker", 0, "PS=1"), pod("Worker", 1, "PS=1"), pod("PS", 0, "PS=1")],
        deleted=[], created=["mnist-worker-jje2-2"],
        event=("TFJob ns/mnist: Worker 2 -> 3, asked by a user (the scale subresource or an edit of the spec); "
               "worker 2 joins in place; the other replicas run on.")),
    "the job's HPA asked (the HPA controller wrote the count)": Row(
        job({"Worker": 3, "PS": 1}, planned=2, workers_by="kube-controller-manager"),
        [pod("Worker", 0, OLD), pod("Worker", 1, OLD), pod("PS", 0, OLD)],
        deleted=["mnist-worker-jje2-0", "mnist-worker-jje2-1", "mnist-ps-jje2-0"], created=[],
        event=("TFJob ns/mnist: Worker 2 -> 3, asked by the job's HorizontalPodAutoscaler; every replica stops "
               "gracefully and starts again together with the new TF_CONFIG."),
        restarting="Resizing",
        children={AUTOSCALER: [{
            "metadata": {"name": "mnist", "namespace": "ns", "uid": "hpa-1"},
            "spec": {"scaleTargetRef": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist"}}}]}),
    "a user's kubectl scale on a job with an HPA is the user's, named": Row(
        job({"Worker": 3, "PS": 1}, planned=2, workers_by="kubectl"),
        [pod("Worker", 0, OLD), pod("Worker", 1, OLD), pod("PS", 0, OLD)],
        deleted=["mnist-worker-jje2-0", "mnist-worker-jje2-1", "mnist-ps-jje2-0"], created=[],
        event=("TFJob ns/mnist: Worker 2 -> 3, asked by kubectl (the scale subresource); every replica stops "
               "gracefully and starts again together with the new TF_CONFIG."), restarting="Resizing",
        children={AUTOSCALER: [{
            "metadata": {"name": "mnist", "namespace": "ns", "uid": "hpa-1"},
            "spec": {"scaleTargetRef": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist"}}}]}),
    "kube-controller-manager writing the spec itself is not the HPA, which writes through the scale": Row(
        job({"Worker": 3, "PS": 1}, planned=2, workers_by="kube-controller-manager", subresource=None),
        [pod("Worker", 0, OLD), pod("Worker", 1, OLD), pod("PS", 0, OLD)],
        deleted=["mnist-worker-jje2-0", "mnist-worker-jje2-1", "mnist-ps-jje2-0"], created=[],
        event=("TFJob ns/mnist: Worker 2 -> 3, asked by kube-controller-manager (an update of the spec); every "
               "replica stops gracefully and starts again together with the new TF_CONFIG."), restarting="Resizing",
        children={AUTOSCALER: [{
            "metadata": {"name": "mnist", "namespace": "ns", "uid": "hpa-1"},
            "spec": {"scaleTargetRef": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist"}}}]}),
    "a server-side apply by another manager is told as that manager's": Row(
        job({"Worker": 3, "PS": 1}, planned=2, workers_by="argocd-controller", operation="Apply", subresource=None),
        [pod("Worker", 0, OLD), pod("Worker", 1, OLD), pod("PS", 0, OLD)],
        deleted=["mnist-worker-jje2-0", "mnist-worker-jje2-1", "mnist-ps-jje2-0"], created=[],
        event=("TFJob ns/mnist: Worker 2 -> 3, asked by argocd-controller (a server-side apply of the spec); every "
               "replica stops gracefully and starts again together with the new TF_CONFIG."), restarting="Resizing",
        children={AUTOSCALER: [{
            "metadata": {"name": "mnist", "namespace": "ns", "uid": "hpa-1"},
            "spec": {"scaleTargetRef": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist"}}}]}),
    "an HPA the user made, not tfop, is an HPA all the same": Row(
        job({"Worker": 3, "PS": 1}, planned=2, workers_by="kube-controller-manager"),
        [pod("Worker", 0, OLD), pod("Worker", 1, OLD), pod("PS", 0, OLD)],
        deleted=["mnist-worker-jje2-0", "mnist-worker-jje2-1", "mnist-ps-jje2-0"], created=[],
        event=("TFJob ns/mnist: Worker 2 -> 3, asked by the job's HorizontalPodAutoscaler; every replica stops "
               "gracefully and starts again together with the new TF_CONFIG."),
        restarting="Resizing"),
}


@pytest.mark.parametrize("row", list(ROWS.values()), ids=list(ROWS))
def test_a_resize(row: Row) -> None:
    replicas = {name: spec["replicas"] for name, spec in row.job["spec"]["tfReplicaSpecs"].items()}
    children = {POD: row.pods, SERVICE: services_for(replicas), **row.children}
    result = plan(PlanContext(row.job, children, NOW, ControllerConfig(gang_scheduler=row.gang)))
    assert [ref.name for ref in result.delete if ref.kind == POD] == row.deleted
    assert all(ref.grace_period_seconds is None for ref in result.delete)  # gracefully: SIGTERM, then the grace
    assert [creation.name for creation in result.creates(POD)] == row.created
    assert [event.message for event in result.events if event.reason == "Resized"] == (
        [row.event] if row.event else [])
    status = result.status.to_json() if result.status is not None else row.job["status"]
    assert status["workerReplicas"] == replicas["Worker"]
    restarting = next((c for c in status.get("conditions", []) if c["type"] == "Restarting"), None)
    assert (restarting["reason"] if restarting and restarting["status"] == "True" else None) == row.restarting
    # A resize is not a restart: nothing counts against backoffLimit.
    assert result.counters.restarted == 0 and not result.restarts
    assert all(entry.get("restarts", 0) == 0 for entry in status["replicaStatuses"].values())


def test_a_resize_is_counted_once_by_cause_and_strategy() -> None:
    resized = job({"Worker": 3, "PS": 1}, planned=2)
    pods = [pod("Worker", 0, OLD), pod("Worker", 1, OLD), pod("PS", 0, OLD)]
    first = plan_of(resized, pods, services_for({"Worker": 3, "PS": 1}))
    assert first.counters.resizes == ((("User", "Restart"), 1),)
    assert first.status is not None and first.status.to_json()["lastResize"] == {
        "from": 2, "to": 3, "cause": "User", "strategy": "Restart", "time": "2026-11-21T10:00:00Z",
        "message": RESTART_2_3}
    again = plan_of({**resized, "status": first.status.to_json()}, pods, services_for({"Worker": 3, "PS": 1}))
    assert again.counters.resizes == () and not [e for e in again.events if e.reason == "Resized"]


def test_a_capacity_resize_records_its_cause_and_reason() -> None:
    resized = job({"Chief": 1, "Worker": 3, "PS": 1}, planned=1, dynamic=True,
                  resize_reason="Worker 1 -> 3: 2 workers fit in capacity idle for 60 s")
    pods = [pod("Chief", 0, "PS=1"), pod("Worker", 0, "PS=1"), pod("PS", 0, "PS=1")]
    result = plan_of(resized, pods, services_for({"Chief": 1, "Worker": 3, "PS": 1}))
    assert result.counters.resizes == ((("Capacity", "InPlace"), 1),)
    assert result.status is not None and result.status.to_json()["lastResize"] == {
        "from": 1, "to": 3, "cause": "Capacity", "strategy": "InPlace", "time": "2026-11-21T10:00:00Z",
        "message": ("TFJob ns/mnist: Worker 1 -> 3, asked by the capacity auto-scaler (Worker 1 -> 3: 2 workers fit "
                    "in capacity idle for 60 s); workers 1-2 join in place; the other replicas run on.")}


def test_every_cause_and_strategy_has_its_series_from_the_start() -> None:
    """The metrics make each resize series at 0 when a namespace is known, from their own list of the names."""
    assert set(RESIZES) == {(cause.value, strategy.value) for cause in ResizeCause for strategy in ResizeStrategy}
