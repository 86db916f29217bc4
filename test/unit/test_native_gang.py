"""Kubernetes' own gang scheduling (gangScheduler: kubernetes, scheduling.k8s.io/v1beta1 PodGroups): the group's
spec, its in-line check, what a pod carries, the phase told from the scheduler's condition, and the planner's rows
for a job's whole life (made, resized, suspended, restarted together, a lost node's pod replaced, finished)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from support.plan_builders import (
    KEEP,
    NOW,
    T0,
    check_gang_row,
    make_job,
    make_pod,
    name_of,
    parsed,
    running,
    running_pods,
    services_for,
    suspended,
)
from tfop.api.defaults import apply_defaults
from tfop.cli import build_parser
from tfop.config import parse_config
from tfop.controller.plan.children.native_gang import native_drift, native_phase, native_replaced
from tfop.controller.plan.children.pod_group import pod_group_spec
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.gang_schedulers import GANG_SCHEDULERS
from tfop.controller.plan.observed.own_child import OwnedView
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import POD, POD_GROUP, SERVICE, Plan, PlanContext

NATIVE = GANG_SCHEDULERS["kubernetes"]
IN_ORDER = [name_of("Worker", 0), name_of("Worker", 1), name_of("PS", 0)]
CONFIG = ControllerConfig(gang_scheduler="kubernetes")


def gang(count: int, **extra: Any) -> dict[str, Any]:
    return {"schedulingPolicy": {"gang": {"minCount": count}}, **extra}


def job_of(replicas: dict[str, int], *, policy: dict[str, Any] | None = None, **template_spec: Any) -> dict[str, Any]:
    specs = {replica_type: {"replicas": count, "template": {"spec": {
        "containers": [{"name": "tensorflow", "image": "tf"}], **template_spec}}}
        for replica_type, count in replicas.items()}
    job: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                           "metadata": {"name": "mnist", "namespace": "ns", "uid": "uid-1", "generation": 1},
                           "spec": {"tfReplicaSpecs": specs}}
    if policy is not None:
        job["spec"]["runPolicy"] = {"schedulingPolicy": policy}
    return apply_defaults(job)


# ---------------------------------------------------------------- choosing it

def test_the_config_and_the_flag_name_it() -> None:
    assert parse_config({"gangScheduler": "kubernetes"}).gang_scheduler == "kubernetes"
    assert build_parser().parse_args(["run", "--gang-scheduler-name", "kubernetes"]).gang_scheduler_name == "kubernetes"


def test_what_a_cluster_without_the_api_lacks() -> None:
    assert NATIVE.api_version == "scheduling.k8s.io/v1beta1"
    assert NATIVE.missing == ("Kubernetes 1.37 or later with the GenericWorkload feature gate on the apiserver, "
                              "scheduler and controller-manager, and --runtime-config=scheduling.k8s.io/v1beta1=true "
                              "on the apiserver")
    assert GANG_SCHEDULERS["volcano"].missing == "CRD podgroups.scheduling.volcano.sh is not installed"


# ---------------------------------------------------------------- the group's spec

SPECS = {
    "every replica": (job_of({"Chief": 1, "Worker": 4, "PS": 2}), gang(7)),
    "minAvailable": (job_of({"Worker": 5}, policy={"minAvailable": 3}), gang(3)),
    "minAvailable 0 means every replica": (job_of({"Worker": 2}, policy={"minAvailable": 0}), gang(2)),
    "the pods' priority class, which the scheduler wants the group to share": (
        job_of({"Worker": 2}, priorityClassName="batch"), gang(2, priorityClassName="batch")),
    "not the policy's priority class, which the pods never get": (
        job_of({"Worker": 2}, policy={"priorityClass": "high", "queue": "q", "scheduleTimeoutSeconds": 9}), gang(2)),
    "no minResources: kube-scheduler sums nothing": (
        job_of({"Worker": 1}, policy={"minResources": {"cpu": "4"}}), gang(1)),
}


@pytest.mark.parametrize(("job", "expected"), SPECS.values(), ids=SPECS.keys())
def test_the_group_spec(job: dict[str, Any], expected: dict[str, Any]) -> None:
    assert pod_group_spec(parsed(job).spec, NATIVE) == expected


DRIFT = {
    "as wanted": (gang(3), gang(3), None),
    "minCount followed, the only field that may change": (
        gang(3, priorityClassName="p"), gang(4, priorityClassName="p"),
        {"spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}}),
    "what the apiserver defaulted is left alone": (gang(3, priority=0, preemptionPolicy="PreemptLowerPriority"),
                                                   gang(3), None),
}


@pytest.mark.parametrize(("stored", "wanted", "patch"), DRIFT.values(), ids=DRIFT.keys())
def test_the_in_line_check(stored: dict[str, Any], wanted: dict[str, Any], patch: dict[str, Any] | None) -> None:
    assert native_drift(stored, wanted) == patch


REPLACED = {
    "same priority class": (gang(3, priorityClassName="p"), gang(5, priorityClassName="p"), False),
    "none on either side": (gang(3), gang(2), False),
    "another priority class: fixed once made": (gang(3, priorityClassName="p"), gang(3, priorityClassName="q"), True),
    "a class added": (gang(3), gang(3, priorityClassName="q"), True),
    "a basic group under the job's name: its policy cannot become a gang": (
        {"schedulingPolicy": {"basic": {}}}, gang(3), True),
}


@pytest.mark.parametrize(("stored", "wanted", "replaced"), REPLACED.values(), ids=REPLACED.keys())
def test_what_is_made_again(stored: dict[str, Any], wanted: dict[str, Any], replaced: bool) -> None:
    assert native_replaced(stored, wanted) is replaced


PHASES = {
    "not tried yet": ([], ""),
    "placed": ([{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled"}], "Scheduled"),
    "no room": ([{"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
                  "message": "0/2 nodes are available"}], "Unschedulable"),
    "another condition only": ([{"type": "DisruptionTarget", "status": "True"}], ""),
}


@pytest.mark.parametrize(("conditions", "phase"), PHASES.values(), ids=PHASES.keys())
def test_the_phase_told_from_the_schedulers_condition(conditions: list[dict[str, Any]], phase: str) -> None:
    assert native_phase(OwnedView.of({"metadata": {"name": "mnist"}, "status": {"conditions": conditions}})) == phase


# ---------------------------------------------------------------- bodies

def test_the_group_body_is_owned_by_the_job() -> None:
    result = plan(PlanContext(make_job({"Worker": 2}), {}, NOW, CONFIG))
    assert result.desired is not None
    body = result.desired.body(POD_GROUP, None)
    assert body == {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "mnist", "namespace": "ns",
                     "labels": {"training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/runtime-id":
                                body["metadata"]["labels"]["training.kubeflow.org/runtime-id"],
                                "training.kubeflow.org/operator-name": "tfjob-controller",
                                "app.kubernetes.io/managed-by": "tfop"},
                     "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                                          "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}


def pod_body(job: dict[str, Any], backend_kind: str = POD) -> dict[str, Any]:
    result = plan(PlanContext(job, {}, NOW, CONFIG))
    assert result.desired is not None
    return result.desired.body(backend_kind, result.creates(backend_kind)[0].slot)


def test_a_pod_names_its_group_in_its_scheduling_group() -> None:
    pod = pod_body(make_job({"Worker": 2}))
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "mnist"}
    assert pod["spec"]["schedulerName"] == "default-scheduler"
    assert "scheduling.x-k8s.io/pod-group" not in pod["metadata"]["labels"]  # scheduler-plugins' way
    assert "scheduling.k8s.io/group-name" not in pod["metadata"]["annotations"]  # Volcano's


def test_a_replica_job_template_names_the_group_too() -> None:
    job = make_job({"Worker": 2})
    job["metadata"]["annotations"] = {"tfop.kubeflow.org/replica-backend": "jobs"}
    template = pod_body(job, "Job")["spec"]["template"]
    assert template["spec"]["schedulingGroup"] == {"podGroupName": "mnist"}


def test_a_template_scheduler_profile_is_kept() -> None:
    job = make_job({"Worker": 2})
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "gpu-profile"
    pod = pod_body(job)
    assert pod["spec"]["schedulerName"] == "gpu-profile"
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "mnist"}


# ---------------------------------------------------------------- the planner's rows

def group(count: int = 3, *, conditions: list[dict[str, Any]] | None = None, terminating: bool = False,
          name: str = "mnist", uid: str = "pg-1", **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid}
    if terminating:
        metadata["deletionTimestamp"] = T0
    return {"metadata": metadata, "spec": gang(count, **spec), "status": {"conditions": conditions or []}}


SCHEDULED = [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled", "message": ""}]
NO_ROOM = [{"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}]


def sized_pod(replica_type: str, index: int, size: str) -> dict[str, Any]:
    made = make_pod(replica_type, index)
    made["metadata"]["annotations"] = {"tfop.kubeflow.org/tf-cluster": size}
    made["spec"] = {"nodeName": "node-a"}
    return made


def resized(workers: int, *, dynamic: bool) -> dict[str, Any]:
    job = running(make_job())
    job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = workers
    if dynamic:
        job["spec"]["enableDynamicWorker"] = True
    return job


def annotated(job: dict[str, Any], **annotations: str) -> dict[str, Any]:
    job["metadata"]["annotations"] = {f"tfop.kubeflow.org/{key.replace('_', '-')}": value
                                      for key, value in annotations.items()}
    return job


def with_priority_class(job: dict[str, Any], name: str) -> dict[str, Any]:
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["template"]["spec"]["priorityClassName"] = name
    return job


def placed(*pods: dict[str, Any], on: str = "real-0") -> list[dict[str, Any]]:
    for pod in pods:
        pod["spec"] = {"nodeName": on}
    return list(pods)


def node(name: str, ready: str = "True") -> dict[str, Any]:
    """Ready, or (ready Unknown) unreachable since 09:59:00 with the taint the node lifecycle controller sets."""
    taints = [] if ready == "True" else [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                                         "timeAdded": "2026-11-21T09:59:00Z"}]
    return {"metadata": {"name": name}, "spec": {"taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": ready,
                                       "lastTransitionTime": "2026-11-21T09:59:00Z"}]}}


def grow(count: int) -> dict[str, Any]:
    return {"spec": {"schedulingPolicy": {"gang": {"minCount": count}}}}


@dataclass
class Row:
    job: dict[str, Any]
    groups: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    services: list[dict[str, Any]] | None = None
    gang_problem: str | None = None
    nodes: dict[str, dict[str, Any]] | None = None
    create: list[tuple[str, str]] = field(default_factory=list)  # (kind, name), in the order sent
    delete: list[tuple[str, str]] = field(default_factory=list)
    patch: list[dict[str, Any]] = field(default_factory=list)
    message: list[str] = field(default_factory=list)  # fragments of the Running condition's message
    phase: Any = KEEP  # status.podGroupPhase expected (None: absent)


ROWS = {
    "a fresh job: the group, then every pod at once (none waits for an admission)": Row(
        make_job(), services=[],
        create=[(POD_GROUP, "mnist"), *[(POD, name) for name in IN_ORDER], *[(SERVICE, name) for name in IN_ORDER]]),
    "the group as wanted: nothing to do": Row(running(make_job()), groups=[group(conditions=SCHEDULED)],
                                              pods=running_pods(), phase="Scheduled"),
    "pods waiting: the message says what kube-scheduler says of the group": Row(
        make_job(), groups=[group(conditions=NO_ROOM)],
        pods=[make_pod("Worker", 0, "Pending"), make_pod("Worker", 1, "Pending"), make_pod("PS", 0, "Pending")],
        phase="Unschedulable",
        message=[("PodGroup ns/mnist is Unschedulable (kube-scheduler cannot place the whole gang yet, so it "
                  "binds none of its pods; 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.)")]),
    "before the scheduler tried": Row(
        make_job(), groups=[group()],
        pods=[make_pod("Worker", 0, "Pending"), make_pod("Worker", 1, "Pending"), make_pod("PS", 0, "Pending")],
        phase=None, message=["PodGroup ns/mnist has no phase yet (kube-scheduler has not tried the whole gang yet)"]),
    "a changed minAvailable patches minCount": Row(
        make_job(run_policy={"schedulingPolicy": {"minAvailable": 2}}), groups=[group()], pods=running_pods(),
        patch=[grow(2)]),
    "a changed priority class: the group is made again once the old one is gone": Row(
        running(with_priority_class(make_job(), "high")), groups=[group()], pods=running_pods(),
        delete=[(POD_GROUP, "mnist")]),
    "a terminating group (the protection finalizer holds it for its pods) holds the new pods": Row(
        make_job(), groups=[group(terminating=True)], services=[],
        create=[(SERVICE, name) for name in IN_ORDER], message=["PodGroup ns/mnist is being deleted"]),
    "in place, 2 -> 3 workers: minCount grows with the new worker": Row(
        resized(3, dynamic=True), groups=[group()], services=services_for(),
        pods=[sized_pod("Worker", 0, "PS=1"), sized_pod("Worker", 1, "PS=1"), sized_pod("PS", 0, "PS=1")],
        patch=[grow(4)], create=[(POD, name_of("Worker", 2)), (SERVICE, name_of("Worker", 2))]),
    "in place, 2 -> 1 workers: minCount shrinks as the worker goes": Row(
        resized(1, dynamic=True), groups=[group()], services=services_for(),
        pods=[sized_pod("Worker", 0, "PS=1"), sized_pod("Worker", 1, "PS=1"), sized_pod("PS", 0, "PS=1")],
        patch=[grow(2)], delete=[(POD, name_of("Worker", 1)), (SERVICE, name_of("Worker", 1))]),
    "by restart, 2 -> 3 workers: minCount grows as the old pods stop": Row(
        resized(3, dynamic=False), groups=[group()], services=services_for(),
        pods=[sized_pod("Worker", 0, "Worker=2,PS=1"), sized_pod("Worker", 1, "Worker=2,PS=1"),
              sized_pod("PS", 0, "Worker=2,PS=1")],
        patch=[grow(4)], create=[(SERVICE, name_of("Worker", 2))],
        delete=[(POD, name_of("Worker", 0)), (POD, name_of("Worker", 1)), (POD, name_of("PS", 0))]),
    "by restart, the old pods gone: all start together in the grown group": Row(
        resized(3, dynamic=False), groups=[group(4, conditions=SCHEDULED)],
        services=services_for({"Worker": 3, "PS": 1}),
        create=[(POD, name_of("Worker", 0)), (POD, name_of("Worker", 1)), (POD, name_of("Worker", 2)),
                (POD, name_of("PS", 0))]),
    # Restart scope Job: the failed replica and every other go, the group stays, and the new pods join it at once.
    "restarted together: every pod stops, the group stays": Row(
        annotated(running(make_job(policy="ExitCode")), restart_scope="Job"), groups=[group(conditions=SCHEDULED)],
        pods=[make_pod("Worker", 0), make_pod("PS", 0), make_pod("Worker", 1, "Failed", exit_code=137)],
        delete=[(POD, name_of("Worker", 1)), (POD, name_of("Worker", 0)), (POD, name_of("PS", 0))]),
    "restarted together, the old pods gone: all made at once in the same group": Row(
        annotated(running(make_job(policy="ExitCode")), restart_scope="Job"), groups=[group(conditions=SCHEDULED)],
        create=[(POD, name) for name in IN_ORDER]),
    # A lost node: its pod is force-deleted and replaced in the same pass; the group's minCount counts the
    # replacement with the placed pods, so kube-scheduler places it alone.
    "a lost node's pod is replaced, the group untouched": Row(
        running(make_job()), groups=[group(conditions=SCHEDULED)],
        pods=[*placed(make_pod("Worker", 0), make_pod("PS", 0)), *placed(make_pod("Worker", 1), on="real-1")],
        nodes={"real-0": node("real-0"), "real-1": node("real-1", ready="Unknown")},
        delete=[(POD, name_of("Worker", 1))], create=[(POD, name_of("Worker", 1))]),
    "suspended: the group goes with the pods": Row(
        {**make_job(run_policy={"suspend": True}), "status": {"podGroupPhase": "Scheduled"}},
        groups=[group(conditions=SCHEDULED)], pods=running_pods(),
        delete=[(POD_GROUP, "mnist"), *[(POD, name) for name in IN_ORDER], *[(SERVICE, name) for name in IN_ORDER]],
        phase=None),
    "resumed: the group is made again before the pods": Row(
        suspended(make_job()), services=[],
        create=[(POD_GROUP, "mnist"), *[(POD, name) for name in IN_ORDER], *[(SERVICE, name) for name in IN_ORDER]]),
    "finished: the group is deleted with what runs": Row(
        running(make_job()), groups=[group(conditions=SCHEDULED)],
        pods=[make_pod("Worker", 0, "Succeeded", exit_code=0), make_pod("Worker", 1, "Succeeded", exit_code=0),
              make_pod("PS", 0)],
        delete=[(POD_GROUP, "mnist"), (POD, name_of("PS", 0)), (SERVICE, name_of("PS", 0))]),
    "the API not served: the job waits and says why": Row(
        make_job(), services=[], gang_problem=f"gang scheduler kubernetes is configured but ... ({NATIVE.missing})",
        create=[(SERVICE, name) for name in IN_ORDER],
        message=["3 not created; gang scheduler kubernetes is configured but ... (Kubernetes 1.37 or later"]),
}


def plan_row(row: Row) -> Plan:
    children = {POD: row.pods, SERVICE: services_for() if row.services is None else row.services,
                POD_GROUP: row.groups}
    return plan(PlanContext(row.job, children, NOW, CONFIG, gang_problem=row.gang_problem, nodes=row.nodes))


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_the_planners_rows(row: Row) -> None:
    check_gang_row(plan_row(row), row)
