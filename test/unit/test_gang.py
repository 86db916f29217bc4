"""Gang scheduling, pure parts: the PodGroup spec for every replica mix, what a pod requests as the scheduler counts
it, quantities, what pods carry, and the planner's rows for the PodGroup kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
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
from tfop.config import ConfigError, parse_config
from tfop.controller.plan.children.pod_group import admission_wait, pod_group_spec, pod_requests, spec_drift
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.gang_schedulers import GANG_SCHEDULERS, GangSchedulerName
from tfop.controller.plan.observed.own_child import OwnedView
from tfop.controller.plan.planner import plan
from tfop.controller.plan.quantity import format_quantity, parse_quantity
from tfop.controller.plan.types import POD, POD_GROUP, SERVICE, Plan, PlanContext

PLUGINS = GANG_SCHEDULERS["scheduler-plugins"]
IN_ORDER = [name_of("Worker", 0), name_of("Worker", 1), name_of("PS", 0)]  # the order a plan creates them in
VOLCANO = GANG_SCHEDULERS["volcano"]


def res(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"resources": resources}


def tf(**extra: Any) -> dict[str, Any]:
    return {"name": "tensorflow", "image": "tf", **extra}


def gpu_job(replicas: dict[str, int], *, gpus: int = 1, cpu: str = "1", policy: dict[str, Any] | None = None,
            **template_spec: Any) -> dict[str, Any]:
    specs = {replica_type: {"replicas": count, "template": {"spec": {
        "containers": [tf(**res({"cpu": cpu}, {"nvidia.com/gpu": gpus}))], **template_spec}}}
        for replica_type, count in replicas.items()}
    job: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                           "metadata": {"name": "mnist", "namespace": "ns", "uid": "uid-1", "generation": 1},
                           "spec": {"tfReplicaSpecs": specs}}
    if policy is not None:
        job["spec"]["runPolicy"] = {"schedulingPolicy": policy}
    return apply_defaults(job)


# ---------------------------------------------------------------- configuration

@pytest.mark.parametrize(("document", "expected"), [
    ({}, "none"), ({"gangScheduler": "scheduler-plugins"}, "scheduler-plugins"),
    ({"gangScheduler": "volcano"}, "volcano"),
])
def test_the_config_names_the_gang_scheduler(document: dict[str, Any], expected: str) -> None:
    assert parse_config(document).gang_scheduler == expected


def test_an_unknown_gang_scheduler_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="gangScheduler 'kueue' is not one of none, scheduler-plugins, volcano"):
        parse_config({"gangScheduler": "kueue"})


def test_the_flag_names_the_gang_scheduler() -> None:
    assert build_parser().parse_args(["run", "--gang-scheduler-name", "volcano"]).gang_scheduler_name == "volcano"


# ---------------------------------------------------------------- quantities

@pytest.mark.parametrize(("text", "amount", "canonical"), [
    ("500m", Fraction(1, 2), "500m"), ("1.5", Fraction(3, 2), "1500m"), ("2", Fraction(2), "2"), (3, Fraction(3), "3"),
    ("4Gi", Fraction(4 * 1024**3), "4Gi"), ("1G", Fraction(10**9), "1G"), ("1e3", Fraction(1000), "1000"),
    ("100Mi", Fraction(100 * 1024**2), "100Mi"), ("1024", Fraction(1024), "1024"), ("0.1", Fraction(1, 10), "100m"),
    ("1500000", Fraction(1500000), "1500000"), ("0.0001", Fraction(1, 10000), "1m"), ("0", Fraction(0), "0"),
])
def test_quantities(text: Any, amount: Fraction, canonical: str) -> None:
    assert parse_quantity(text) == amount
    assert format_quantity(amount) == canonical


# ---------------------------------------------------------------- a pod's requests

@dataclass
class PodCase:
    spec: dict[str, Any]
    expected: dict[str, str]


POD_CASES = {
    "requests summed over containers": PodCase(
        {"containers": [tf(**res({"cpu": "1", "memory": "1Gi"})), {"name": "side", **res({"cpu": "500m"})}]},
        {"cpu": "1500m", "memory": "1Gi"}),
    "a limit stands in for a missing request": PodCase(
        {"containers": [tf(**res({"cpu": "1"}, {"cpu": "4", "nvidia.com/gpu": 2}))]},
        {"cpu": "1", "nvidia.com/gpu": "2"}),
    "the largest init container wins when it is larger": PodCase(
        {"initContainers": [{"name": "a", **res({"cpu": "3"})}, {"name": "b", **res({"cpu": "2", "memory": "4Gi"})}],
         "containers": [tf(**res({"cpu": "1", "memory": "1Gi"}))]},
        {"cpu": "3", "memory": "4Gi"}),
    "a sidecar runs beside the containers and the init containers after it": PodCase(
        {"initContainers": [{"name": "proxy", "restartPolicy": "Always", **res({"cpu": "1"})},
                            {"name": "setup", **res({"cpu": "2"})}],
         "containers": [tf(**res({"cpu": "500m"}))]},
        {"cpu": "3"}),
    "overhead is added": PodCase(
        {"containers": [tf(**res({"cpu": "1"}))], "overhead": {"cpu": "250m", "memory": "120Mi"}},
        {"cpu": "1250m", "memory": "120Mi"}),
    "no resources: nothing": PodCase({"containers": [tf()]}, {}),
    "an unparsable quantity is skipped": PodCase({"containers": [tf(**res({"cpu": "lots", "memory": "1Gi"}))]},
                                                 {"memory": "1Gi"}),
}


@pytest.mark.parametrize("case", POD_CASES.values(), ids=POD_CASES.keys())
def test_pod_requests(case: PodCase) -> None:
    assert {name: format_quantity(amount) for name, amount in pod_requests(case.spec).items()} == case.expected


# ---------------------------------------------------------------- the PodGroup spec

@dataclass
class SpecCase:
    job: dict[str, Any]
    expected: dict[str, Any]
    gang: Any = PLUGINS


SPEC_CASES = {
    "worker only: every replica, summed": SpecCase(
        gpu_job({"Worker": 3}, gpus=2),
        {"minMember": 3, "minResources": {"cpu": "3", "nvidia.com/gpu": "6"}}),
    "chief, workers and PS": SpecCase(
        gpu_job({"Chief": 1, "Worker": 4, "PS": 2}),
        {"minMember": 7, "minResources": {"cpu": "7", "nvidia.com/gpu": "7"}}),
    "master and evaluator": SpecCase(
        gpu_job({"Master": 1, "Evaluator": 1}, cpu="500m"),
        {"minMember": 2, "minResources": {"cpu": "1", "nvidia.com/gpu": "2"}}),
    "minAvailable counts the first pods, chief first": SpecCase(
        gpu_job({"Chief": 1, "Worker": 5}, gpus=1, policy={"minAvailable": 3}),
        {"minMember": 3, "minResources": {"cpu": "3", "nvidia.com/gpu": "3"}}),
    "minAvailable 0 means every replica": SpecCase(
        gpu_job({"Worker": 2}, policy={"minAvailable": 0}),
        {"minMember": 2, "minResources": {"cpu": "2", "nvidia.com/gpu": "2"}}),
    "the policy's minResources win, canonical": SpecCase(
        gpu_job({"Worker": 2}, policy={"minResources": {"cpu": "1.5", "nvidia.com/gpu": 4}}),
        {"minMember": 2, "minResources": {"cpu": "1500m", "nvidia.com/gpu": "4"}}),
    "scheduler-plugins: the timeout; its PodGroup has no queue or priority class": SpecCase(
        gpu_job({"Worker": 1}, policy={"queue": "team-a", "priorityClass": "high", "scheduleTimeoutSeconds": 120}),
        {"minMember": 1, "minResources": {"cpu": "1", "nvidia.com/gpu": "1"}, "scheduleTimeoutSeconds": 120}),
    "Volcano: queue and priority class; no scheduleTimeoutSeconds": SpecCase(
        gpu_job({"Worker": 1}, policy={"queue": "team-a", "priorityClass": "high", "scheduleTimeoutSeconds": 120}),
        {"minMember": 1, "minResources": {"cpu": "1", "nvidia.com/gpu": "1"}, "queue": "team-a",
         "priorityClassName": "high"}, VOLCANO),
    "Volcano: the template's priority class when the policy has none": SpecCase(
        gpu_job({"Worker": 2}, priorityClassName="batch"),
        {"minMember": 2, "minResources": {"cpu": "2", "nvidia.com/gpu": "2"}, "priorityClassName": "batch"}, VOLCANO),
    "replicas 0 count nothing": SpecCase(
        gpu_job({"Worker": 2, "PS": 0}),
        {"minMember": 2, "minResources": {"cpu": "2", "nvidia.com/gpu": "2"}}),
}


@pytest.mark.parametrize("case", SPEC_CASES.values(), ids=SPEC_CASES.keys())
def test_pod_group_spec(case: SpecCase) -> None:
    assert pod_group_spec(parsed(case.job).spec, case.gang) == case.expected


@pytest.mark.parametrize(("wanted", "current", "patch"), [
    ({"minMember": 2}, {"minMember": 2}, None),
    ({"minMember": 3}, {"minMember": 2}, {"spec": {"minMember": 3}}),
    ({"minMember": 2}, {"minMember": 2, "queue": "default"}, None),  # a scheduler's default is left alone
    ({"minMember": 2}, {"minMember": 2, "priorityClassName": "x"}, {"spec": {"priorityClassName": None}}),
    ({"minMember": 2, "minResources": {"cpu": "2"}}, {"minMember": 2, "minResources": {"cpu": "1", "memory": "1Gi"}},
     {"spec": {"minResources": {"cpu": "2", "memory": None}}}),
])
def test_spec_drift(wanted: dict[str, Any], current: dict[str, Any], patch: dict[str, Any] | None) -> None:
    assert spec_drift(wanted, current) == patch


@pytest.mark.parametrize(("group", "gang", "expected"), [
    (None, PLUGINS, None),
    (None, VOLCANO, "is not created yet"),
    ({"status": {}}, VOLCANO, "is Pending"),
    ({"status": {"phase": "Pending", "conditions": [{"type": "Unschedulable", "message": "3/3 tasks in gang "
                                                     "unschedulable: 3 Insufficient nvidia.com/gpu"}]}},
     VOLCANO, "is Pending (3/3 tasks in gang unschedulable: 3 Insufficient nvidia.com/gpu)"),
    ({"status": {"phase": "Inqueue"}}, VOLCANO, None),
    ({"status": {"phase": "Running"}}, VOLCANO, None),
])
def test_admission_wait(group: dict[str, Any] | None, gang: Any, expected: str | None) -> None:
    assert admission_wait(OwnedView.of(group) if group is not None else None, gang) == expected


# ---------------------------------------------------------------- pods join the gang

def build_pod(gang_name: GangSchedulerName, **template_spec: Any) -> dict[str, Any]:
    job = make_job({"Worker": 2})
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].update(template_spec)
    result = plan(PlanContext(job, {}, NOW, ControllerConfig(gang_scheduler=gang_name)))
    assert result.desired is not None
    return result.desired.body(POD, result.creates(POD)[0].slot)


def test_scheduler_plugins_pods_carry_the_group_label_and_scheduler_name() -> None:
    pod = build_pod("scheduler-plugins")
    assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "mnist"
    assert "scheduling.k8s.io/group-name" not in pod["metadata"]["annotations"]  # that is Volcano's


def test_volcano_pods_carry_the_group_and_task_annotations() -> None:
    job = make_job({"Worker": 2})
    inqueue = {"metadata": {"name": "mnist", "namespace": "ns", "uid": "pg-1"},
               "spec": pod_group_spec(parsed(apply_defaults(job)).spec, VOLCANO), "status": {"phase": "Inqueue"}}
    config = ControllerConfig(gang_scheduler="volcano")
    result = plan(PlanContext(job, {POD_GROUP: [inqueue]}, NOW, config))
    assert result.desired is not None
    pod = result.desired.body(POD, result.creates(POD)[0].slot)
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "mnist", "volcano.sh/task-spec": "worker",
                                              "tfop.kubeflow.org/tf-cluster": "Worker=2"}


def test_a_template_scheduler_name_is_kept() -> None:
    assert build_pod("scheduler-plugins", schedulerName="mine")["spec"]["schedulerName"] == "mine"


def test_the_pod_group_body() -> None:
    config = ControllerConfig(gang_scheduler="scheduler-plugins")
    result = plan(PlanContext(make_job({"Worker": 2}), {}, NOW, config))
    assert result.desired is not None
    body = result.desired.body(POD_GROUP, None)
    assert body == {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": "mnist", "namespace": "ns",
                     "labels": {"training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/runtime-id":
                                body["metadata"]["labels"]["training.kubeflow.org/runtime-id"],
                                "training.kubeflow.org/operator-name": "tfjob-controller",
                                "app.kubernetes.io/managed-by": "tfop"},
                     "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                                          "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"minMember": 2}}


# ---------------------------------------------------------------- the planner's rows for the PodGroup

def group(phase: str | None = None, *, spec: dict[str, Any] | None = None, terminating: bool = False,
          name: str = "mnist", uid: str = "pg-1") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid}
    if terminating:
        metadata["deletionTimestamp"] = T0
    obj: dict[str, Any] = {"metadata": metadata, "spec": spec if spec is not None else {"minMember": 3}}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def sized_pod(replica_type: str, index: int, size: str) -> dict[str, Any]:
    """A running pod (placed on a node) whose TF_CONFIG was built for the replica counts `size` (what a resize
    compares)."""
    made = make_pod(replica_type, index)
    made["metadata"]["annotations"] = {"tfop.kubeflow.org/tf-cluster": size}
    made["spec"] = {"nodeName": "node-a"}
    return made


def resized(workers: int, *, dynamic: bool) -> dict[str, Any]:
    """A running job of Worker 2 and PS 1 whose Worker count was just changed to `workers`."""
    job = running(make_job())
    job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = workers
    if dynamic:
        job["spec"]["enableDynamicWorker"] = True
    return job


@dataclass
class Row:
    job: dict[str, Any]
    gang: GangSchedulerName = "scheduler-plugins"
    groups: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    services: list[dict[str, Any]] | None = None
    gang_problem: str | None = None
    create: list[tuple[str, str]] = field(default_factory=list)  # (kind, name), in the order sent
    delete: list[tuple[str, str]] = field(default_factory=list)
    patch: list[dict[str, Any]] = field(default_factory=list)
    message: list[str] = field(default_factory=list)  # fragments of the Running condition's message
    phase: Any = KEEP  # status.podGroupPhase expected (None: absent)


ROWS = {
    "a fresh job creates its PodGroup before its pods and services": Row(
        make_job(), services=[],
        create=[(POD_GROUP, "mnist"), *[(POD, name) for name in IN_ORDER], *[(SERVICE, name) for name in IN_ORDER]]),
    "the group exists: nothing to do for it": Row(running(make_job()), groups=[group()], pods=running_pods()),
    "a changed minAvailable patches the group": Row(
        make_job(run_policy={"schedulingPolicy": {"minAvailable": 2}}), groups=[group()], pods=running_pods(),
        patch=[{"spec": {"minMember": 2}}]),
    "a group of another name is replaced": Row(
        running(make_job()), groups=[group(name="other", uid="pg-0")], pods=running_pods(),
        create=[(POD_GROUP, "mnist")], delete=[(POD_GROUP, "other")]),
    "a terminating group holds the new pods": Row(
        make_job(), groups=[group(terminating=True)], services=[],
        create=[(SERVICE, name) for name in IN_ORDER], message=["PodGroup ns/mnist is being deleted"]),
    "Volcano: a fresh job creates the group and services, no pods": Row(
        make_job(), gang="volcano", services=[], create=[(POD_GROUP, "mnist"), *[(SERVICE, name) for name in IN_ORDER]],
        message=["3 not created", "once the volcano scheduler admits PodGroup ns/mnist, which is not created yet"]),
    "Volcano: a Pending group holds the pods": Row(
        make_job(), gang="volcano", groups=[group("Pending")],
        message=["once the volcano scheduler admits PodGroup ns/mnist, which is Pending"]),
    "Volcano: an Inqueue group lets the pods be created": Row(
        make_job(), gang="volcano", groups=[group("Inqueue")], create=[(POD, name) for name in IN_ORDER],
        phase="Inqueue"),
    "the group's phase goes to the job's status": Row(
        running(make_job()), groups=[group("Running")], pods=running_pods(), phase="Running"),
    "a suspended job's status keeps no group phase": Row(
        {**make_job(run_policy={"suspend": True}), "status": {"podGroupPhase": "Running"}}, groups=[group()],
        pods=running_pods(), delete=[(POD_GROUP, "mnist"), *[(POD, name) for name in IN_ORDER],
                                     *[(SERVICE, name) for name in IN_ORDER]], phase=None),
    "scheduler-plugins: pending pods show what the scheduler says": Row(
        make_job(), groups=[group()],
        pods=[{**make_pod("Worker", 0, "Pending"), "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "pre-filter pod mnist-worker cannot find enough sibling pods"}]}},
              make_pod("Worker", 1, "Pending"), make_pod("PS", 0, "Pending")],
        message=["PodGroup ns/mnist has no phase yet (its scheduler's controller has not written one).",
                 "[Unschedulable]: pre-filter pod mnist-worker cannot find"]),
    "a suspended job deletes its group": Row(
        make_job(run_policy={"suspend": True}), groups=[group()], pods=running_pods(),
        delete=[(POD_GROUP, "mnist"), *[(POD, name) for name in IN_ORDER], *[(SERVICE, name) for name in IN_ORDER]]),
    "a resumed job creates its group again": Row(
        suspended(make_job()), services=[],
        create=[(POD_GROUP, "mnist"), *[(POD, name) for name in IN_ORDER], *[(SERVICE, name) for name in IN_ORDER]]),
    "a finished job deletes its group": Row(
        running(make_job()), groups=[group()],
        pods=[make_pod("Worker", 0, "Succeeded", exit_code=0), make_pod("Worker", 1, "Succeeded", exit_code=0),
              make_pod("PS", 0)],
        delete=[(POD_GROUP, "mnist"), (POD, name_of("PS", 0)), (SERVICE, name_of("PS", 0))]),
    "cleanPodPolicy None keeps the group with the pods": Row(
        running(make_job(run_policy={"cleanPodPolicy": "None"})), groups=[group()],
        pods=[make_pod("Worker", 0, "Succeeded", exit_code=0), make_pod("Worker", 1), make_pod("PS", 0)]),
    "without its CRD the job waits and says why": Row(
        make_job(), groups=[], services=[], gang_problem="gang scheduler volcano is configured but ...",
        create=[(SERVICE, name) for name in IN_ORDER], message=["3 not created; gang scheduler volcano is configured"]),
    # A resize: the group follows in the plan that deletes the old pods or makes the new ones (the applier sends
    # patches before creates), so no new pod waits on a group of the old size.
    "in place, 2 -> 3 workers: the group grows with the new worker": Row(
        resized(3, dynamic=True), groups=[group()], services=services_for(),
        pods=[sized_pod("Worker", 0, "PS=1"), sized_pod("Worker", 1, "PS=1"), sized_pod("PS", 0, "PS=1")],
        patch=[{"spec": {"minMember": 4}}], create=[(POD, name_of("Worker", 2)), (SERVICE, name_of("Worker", 2))]),
    "in place, 2 -> 1 workers: the group shrinks as the worker goes": Row(
        resized(1, dynamic=True), groups=[group()], services=services_for(),
        pods=[sized_pod("Worker", 0, "PS=1"), sized_pod("Worker", 1, "PS=1"), sized_pod("PS", 0, "PS=1")],
        patch=[{"spec": {"minMember": 2}}], delete=[(POD, name_of("Worker", 1)), (SERVICE, name_of("Worker", 1))]),
    "by restart, 2 -> 3 workers: the group grows as the old pods stop": Row(
        resized(3, dynamic=False), groups=[group()], services=services_for(),
        pods=[sized_pod("Worker", 0, "Worker=2,PS=1"), sized_pod("Worker", 1, "Worker=2,PS=1"),
              sized_pod("PS", 0, "Worker=2,PS=1")],
        patch=[{"spec": {"minMember": 4}}], create=[(SERVICE, name_of("Worker", 2))],
        delete=[(POD, name_of("Worker", 0)), (POD, name_of("Worker", 1)), (POD, name_of("PS", 0))]),
    "by restart, the old pods gone: all start together in the grown group": Row(
        resized(3, dynamic=False), groups=[group(spec={"minMember": 4})],
        services=services_for({"Worker": 3, "PS": 1}),
        create=[(POD, name_of("Worker", 0)), (POD, name_of("Worker", 1)), (POD, name_of("Worker", 2)),
                (POD, name_of("PS", 0))]),
    "no gang scheduler: no group": Row(
        make_job(), gang="none", services=[],
        create=[*[(POD, name) for name in IN_ORDER], *[(SERVICE, name) for name in IN_ORDER]]),
}


def plan_row(row: Row) -> Plan:
    children = {POD: row.pods, SERVICE: services_for() if row.services is None else row.services,
                POD_GROUP: row.groups}
    return plan(PlanContext(row.job, children, NOW, ControllerConfig(gang_scheduler=row.gang),
                            gang_problem=row.gang_problem))


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_pod_group_rows(row: Row) -> None:
    check_gang_row(plan_row(row), row)


# ---------------------------------------------------------------- a resize below an explicit minAvailable

def with_min_available(job: dict[str, Any], min_available: int) -> dict[str, Any]:
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": min_available}}
    return job


BELOW_3 = ("TFJob ns/mnist now has 2 pods, fewer than spec.runPolicy.schedulingPolicy.minAvailable (3), which "
           "stays its PodGroup's minMember: the scheduler-plugins scheduler places no pod of it (a pod started again "
           "for the resize or replaced after a failure) until minAvailable is lowered or the job has at least 2 "
           "workers.")
WARNING_ROWS: dict[str, tuple[dict[str, Any], GangSchedulerName, list[str]]] = {
    "2 -> 1 workers under minAvailable 3: warned": (with_min_available(resized(1, dynamic=False), 3),
                                                     "scheduler-plugins", [BELOW_3]),
    "in place too": (with_min_available(resized(1, dynamic=True), 3), "scheduler-plugins", [BELOW_3]),
    "no gang scheduler: minAvailable means nothing": (with_min_available(resized(1, dynamic=False), 3), "none", []),
    "down to minAvailable exactly: nothing to say": (with_min_available(resized(1, dynamic=False), 2),
                                                     "scheduler-plugins", []),
    "a job created asking for more than it has is not a resize": (
        with_min_available(make_job(), 10), "scheduler-plugins", []),
}


@pytest.mark.parametrize("row", WARNING_ROWS.values(), ids=WARNING_ROWS.keys())
def test_a_resize_below_min_available_is_warned_once(row: tuple[dict[str, Any], GangSchedulerName, list[str]]) -> None:
    job, gang, warnings = row
    result = plan(PlanContext(job, {POD: running_pods(), SERVICE: services_for(), POD_GROUP: [group()]}, NOW,
                              ControllerConfig(gang_scheduler=gang)))
    assert [event.message for event in result.events if event.reason == "ResizedBelowMinAvailable"] == warnings
    assert all(event.type == "Warning" for event in result.events if event.reason == "ResizedBelowMinAvailable")
