"""tfop's own Kueue integration, planned (plan/policies/kueue_admission.py): the Workload of a queued job written
out, the job held until Kueue admits it, the admission's flavor put on the pods tfop makes, an eviction stopping
the job and handing the quota back, the replicas ended for good reported
as reclaimable pods, and the Workload gone with a suspended, finished or unqueued job."""

from __future__ import annotations

from typing import Any

import pytest

from support.plan_builders import NOW, RID, UID, make_job, make_pod, parsed, running_pods, services_for
from tfop.config import ConfigError, parse_config
from tfop.controller.children import Scope, child_kinds
from tfop.controller.plan.children.desired import DesiredChildren
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.observed.workload import Eviction, QueuePosition, observe_workload
from tfop.controller.plan.planner import plan
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import POD, SERVICE, WORKLOAD, ChildPatch, ChildRef, Creation, Plan, PlanContext

OWN = ControllerConfig(kueue_integration="own")
WL = f"tfjob-mnist-{RID}"
GPU_FLAVOR = {"metadata": {"name": "gpu-a"},
              "spec": {"nodeLabels": {"cloud/gpu": "a100"},
                       "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}}
T1 = "2026-11-21T09:58:00Z"


def queued_job(**run_policy: Any) -> dict[str, Any]:
    job = make_job({"Worker": 2, "PS": 1}, run_policy=run_policy or None)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
    return job


def workload(*conditions: dict[str, Any], admission: dict[str, Any] | None = None, name: str = WL,
             counts: tuple[int, int] = (2, 1), active: bool | None = None, terminating: bool = False,
             queue: str = "team") -> dict[str, Any]:
    """A Workload as the cache keeps it (slim: pod sets' names and counts: Worker's, then PS's, in the job's
    order)."""
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": "wl-1", "resourceVersion": "7"}
    if terminating:
        metadata["deletionTimestamp"] = T1
    spec: dict[str, Any] = {"queueName": queue, "podSets": [{"name": "worker", "count": counts[0]},
                                                          {"name": "ps", "count": counts[1]}]}
    if active is not None:
        spec["active"] = active
    status: dict[str, Any] = {"conditions": list(conditions)}
    if admission is not None:
        status["admission"] = admission
    return {"metadata": metadata, "spec": spec, "status": status}


def kueue_condition(condition_type: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": condition_type, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": T1}


ADMISSION = {"clusterQueue": "team-cq", "podSetAssignments": [
    {"name": "ps", "flavors": {"cpu": "gpu-a"}, "count": 1},
    {"name": "worker", "flavors": {"cpu": "gpu-a", "nvidia.com/gpu": "gpu-a"}, "count": 2}]}
RESERVED = kueue_condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue team-cq")
ADMITTED = kueue_condition("Admitted", "True", "Admitted", "The workload is admitted")
WAITING = kueue_condition("QuotaReserved", "False", "Pending",
                          "couldn't assign flavors to pod set worker: insufficient quota for nvidia.com/gpu")
PREEMPTED = kueue_condition("Evicted", "True", "Preempted", "Preempted to accommodate a workload (UID: 9)")
DEACTIVATED = kueue_condition("Evicted", "True", "Deactivated", "The workload is deactivated")


def plan_with(job: dict[str, Any], workloads: list[dict[str, Any]], pods: list[dict[str, Any]] | None = None,
              flavors: dict[str, Any] | None = None, config: ControllerConfig = OWN) -> Plan:
    children = {POD: [] if pods is None else pods, SERVICE: services_for(), WORKLOAD: workloads}
    return plan(PlanContext(job, children, NOW, config, flavors={"gpu-a": GPU_FLAVOR} if flavors is None else flavors))


def suspended_as(result: Plan) -> tuple[str, str, str] | None:
    assert result.status is not None
    found = next((c for c in result.status.to_json()["conditions"] if c["type"] == "Suspended"), None)
    return None if found is None else (found["status"], found["reason"], found["message"])


def test_the_workload_is_written_out() -> None:
    job = queued_job()
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = {"labels": {"team": "vision"},
                                                                       "annotations": {"note": "x"}}
    body = DesiredChildren(parsed(job, OWN)).body(WORKLOAD, None)
    container = {"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1",
                 "ports": [{"name": "tfjob-port", "containerPort": 2222}]}
    assert body == {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": WL, "namespace": "ns",
                     "labels": {"training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/runtime-id": RID,
                                "training.kubeflow.org/operator-name": "tfjob-controller",
                                "app.kubernetes.io/managed-by": "tfop"},
                     "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                                          "uid": UID, "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"queueName": "team", "priority": 0, "podSets": [
            {"name": "worker", "count": 2, "template": {
                "metadata": {"labels": {"team": "vision", "training.kubeflow.org/job-name": "mnist",
                                        "training.kubeflow.org/replica-type": "worker"},
                             "annotations": {"note": "x"}},
                "spec": {"containers": [container], "restartPolicy": "Never"}},
             "topologyRequest": {"podIndexLabel": "training.kubeflow.org/replica-index"}},
            {"name": "ps", "count": 1, "template": {
                "metadata": {"labels": {"training.kubeflow.org/job-name": "mnist",
                                        "training.kubeflow.org/replica-type": "ps"}},
                "spec": {"containers": [container], "restartPolicy": "Never"}},
             "topologyRequest": {"podIndexLabel": "training.kubeflow.org/replica-index"}}]}}
    kinds = child_kinds(None, own_kueue=True)
    assert kinds[WORKLOAD].scope is Scope.JOB and DesiredChildren(parsed(job, OWN)).body(WORKLOAD, None) == body
    assert WORKLOAD not in child_kinds(None).by_name


def test_the_cache_keeps_the_spec_and_kueues_status() -> None:
    stored = {**workload(RESERVED, admission=ADMISSION), "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload"}
    stored["metadata"]["managedFields"] = [{"manager": "kueue"}]
    stored["metadata"]["labels"] = {"training.kubeflow.org/operator-name": "tfjob-controller"}
    kind = child_kinds(None, own_kueue=True)[WORKLOAD]
    slim = kind.transform(stored)
    assert (slim["spec"], slim["status"], "managedFields" in slim["metadata"]) == (
        stored["spec"], stored["status"], False)
    # Every Workload is watched (Kueue's adapter's for a job is a conflict), but of another's only its metadata.
    theirs = {**stored, "metadata": {**stored["metadata"], "labels": {"kueue.x-k8s.io/job-uid": "uid-1"}}}
    assert (kind.label_selector, sorted(kind.transform(theirs))) == (None, ["apiVersion", "kind", "metadata"])


VIEWS: dict[str, tuple[dict[str, Any], bool, Eviction | None, str | None, dict[str, tuple[str, ...]]]] = {
    "pending": (workload(WAITING), False, None, WAITING["message"], {}),
    "quota reserved, admission checks pending": (workload(RESERVED, admission=ADMISSION), False, None, None,
                                                 {"ps": ("gpu-a",), "worker": ("gpu-a",)}),
    "admitted": (workload(RESERVED, ADMITTED, admission=ADMISSION), True, None, None,
                 {"ps": ("gpu-a",), "worker": ("gpu-a",)}),
    "admitted, then deactivated": (workload(RESERVED, ADMITTED, admission=ADMISSION, active=False), False, None,
                                   None, {"ps": ("gpu-a",), "worker": ("gpu-a",)}),
    "admitted and evicted": (workload(RESERVED, ADMITTED, PREEMPTED, admission=ADMISSION), False,
                             Eviction("Preempted", PREEMPTED["message"]), None,
                             {"ps": ("gpu-a",), "worker": ("gpu-a",)}),
}


@pytest.mark.parametrize(("raw", "admitted", "eviction", "waiting", "flavors"), VIEWS.values(), ids=VIEWS.keys())
def test_the_observed_workload(raw: dict[str, Any], admitted: bool, eviction: Eviction | None, waiting: str | None,
                               flavors: dict[str, tuple[str, ...]]) -> None:
    view = observe_workload(raw)
    assert (view.admitted, view.eviction, view.waiting,
            {name: a.flavors for name, a in view.assignments.items()}) == (admitted, eviction, waiting, flavors)


HELD: dict[str, tuple[dict[str, Any], list[dict[str, Any]], list[Creation], list[ChildRef], tuple[str, str, str]]] = {
    "no Workload yet: made, and the job waits for it": (
        queued_job(), [], [Creation(WORKLOAD, None, WL)], [],
        ("True", "QueuedByKueue", f"TFJob ns/mnist waits for its Kueue Workload {WL} in LocalQueue team.")),
    "pending: held, with Kueue's reason": (
        queued_job(), [workload(WAITING)], [], [],
        ("True", "QueuedByKueue", ("TFJob ns/mnist is queued in Kueue LocalQueue team: couldn't assign flavors to "
                                   "pod set worker: insufficient quota for nvidia.com/gpu."))),
    "quota reserved, not admitted yet: held": (
        queued_job(), [workload(RESERVED, admission=ADMISSION)], [], [],
        ("True", "QueuedByKueue", "TFJob ns/mnist is queued in Kueue LocalQueue team.")),
    "deactivated before any admission: held": (
        queued_job(), [workload(WAITING, active=False)], [], [],
        ("True", "QueuedByKueue",
         f"TFJob ns/mnist waits: its Kueue Workload {WL} is deactivated (spec.active is false).")),
    "evicted by deactivation, the quota handed back: says it is deactivated": (
        queued_job(), [workload(kueue_condition("QuotaReserved", "False", "Pending"), DEACTIVATED, active=False)],
        [], [], ("True", "QueuedByKueue",
                 f"TFJob ns/mnist waits: its Kueue Workload {WL} is deactivated (spec.active is false).")),
    "preempted, the quota handed back: queued again": (
        queued_job(), [workload(kueue_condition("QuotaReserved", "False", "Pending"), PREEMPTED)], [], [],
        ("True", "QueuedByKueue",
         "TFJob ns/mnist is queued again in Kueue LocalQueue team after an eviction (Preempted).")),
    "admitted, its flavor not cached yet: held": (
        queued_job(), [workload(RESERVED, ADMITTED, admission={**ADMISSION, "podSetAssignments": [
            {"name": "ps", "flavors": {"cpu": "gpu-b"}}, {"name": "worker", "flavors": {"cpu": "gpu-b"}}]})],
        [], [], ("True", "QueuedByKueue",
                 "TFJob ns/mnist is admitted by Kueue but waits to see ResourceFlavor gpu-b.")),
    "another count (a resize): the old one deleted, the new one made once it is gone": (
        queued_job(), [workload(RESERVED, ADMITTED, admission=ADMISSION, counts=(3, 1))], [],
        [ChildRef(WORKLOAD, WL, "wl-1")],
        ("True", "QueuedByKueue", f"TFJob ns/mnist waits for its Kueue Workload {WL} in LocalQueue team.")),
    "another queue: replaced the same way": (
        queued_job(), [workload(WAITING, queue="other")], [], [ChildRef(WORKLOAD, WL, "wl-1")],
        ("True", "QueuedByKueue", f"TFJob ns/mnist waits for its Kueue Workload {WL} in LocalQueue team.")),
    "the old one still terminating: nothing made yet": (
        queued_job(), [workload(WAITING, counts=(3, 1), terminating=True)], [], [],
        ("True", "QueuedByKueue", f"TFJob ns/mnist waits for its Kueue Workload {WL} in LocalQueue team.")),
}


@pytest.mark.parametrize(("job", "workloads", "creates", "deletes", "suspended"), HELD.values(), ids=HELD.keys())
def test_a_queued_job_is_held_until_admitted(job: dict[str, Any], workloads: list[dict[str, Any]],
                                             creates: list[Creation], deletes: list[ChildRef],
                                             suspended: tuple[str, str, str]) -> None:
    result = plan_with(job, workloads)
    assert (result.create, result.deletes(WORKLOAD), result.patch, suspended_as(result)) == (
        creates, deletes, [], suspended)
    assert condition_reason(result, "Running") == ("False", suspended[1])


QUEUED_AT: dict[str, tuple[list[dict[str, Any]], QueuePosition | None, str]] = {
    "pending, its position read": (
        [workload(WAITING)], QueuePosition(2, 5, 100),
        ("TFJob ns/mnist is queued in Kueue LocalQueue team at position 2 (5 in its ClusterQueue): couldn't assign "
         "flavors to pod set worker: insufficient quota for nvidia.com/gpu.")),
    "pending, next in line, Kueue says nothing more": (
        [workload(kueue_condition("QuotaReserved", "False", "Pending"))], QueuePosition(1, 1, 100),
        "TFJob ns/mnist is queued in Kueue LocalQueue team at position 1 (1 in its ClusterQueue)."),
    "pending past the Workloads looked at": (
        [workload(WAITING)], QueuePosition(None, None, 100),
        ("TFJob ns/mnist is queued in Kueue LocalQueue team, behind at least 100 other Workloads: couldn't assign "
         "flavors to pod set worker: insufficient quota for nvidia.com/gpu.")),
    "queued again after a preemption, its position read": (
        [workload(kueue_condition("QuotaReserved", "False", "Pending"), PREEMPTED)], QueuePosition(3, 3, 100),
        ("TFJob ns/mnist is queued again in Kueue LocalQueue team at position 3 (3 in its ClusterQueue) after an "
         "eviction (Preempted).")),
    "pending, no position known (the visibility API not read)": (
        [workload(WAITING)], None,
        ("TFJob ns/mnist is queued in Kueue LocalQueue team: couldn't assign flavors to pod set worker: insufficient "
         "quota for nvidia.com/gpu.")),
    "admitted: a position left from before is not told": (
        [workload(RESERVED, ADMITTED, admission=ADMISSION)], QueuePosition(1, 1, 100), ""),
    "deactivated: the position is not told": (
        [workload(WAITING, active=False)], QueuePosition(1, 1, 100),
        f"TFJob ns/mnist waits: its Kueue Workload {WL} is deactivated (spec.active is false)."),
}


@pytest.mark.parametrize(("workloads", "position", "message"), QUEUED_AT.values(), ids=QUEUED_AT.keys())
def test_a_pending_job_says_where_it_stands_in_its_queue(workloads: list[dict[str, Any]],
                                                        position: QueuePosition | None, message: str) -> None:
    children = {POD: [], SERVICE: services_for(), WORKLOAD: workloads}
    result = plan(PlanContext(queued_job(), children, NOW, OWN, flavors={"gpu-a": GPU_FLAVOR},
                              queue_position=position))
    held = suspended_as(result)
    assert (held[2] if held is not None and held[0] == "True" else "") == message


def condition_reason(result: Plan, condition_type: str) -> tuple[str, str]:
    assert result.status is not None
    found = next(c for c in result.status.to_json()["conditions"] if c["type"] == condition_type)
    return found["status"], found["reason"]


def test_admitted_the_pods_get_the_flavor() -> None:
    result = plan_with(queued_job(), [workload(RESERVED, ADMITTED, admission=ADMISSION)])
    assert [(c.kind, c.slot.replica_type if c.slot else None) for c in result.creates(POD)] == [
        (POD, "Worker"), (POD, "Worker"), (POD, "PS")]
    assert result.desired is not None
    pod = result.desired.body(POD, ReplicaSlot("Worker", 1))
    # The flavor's toleration, then tfop's own for node loss (it replaces lost pods itself).
    assert (pod["spec"]["nodeSelector"], pod["spec"]["tolerations"]) == (
        {"cloud/gpu": "a100"}, [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
                                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
                                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}])
    assert suspended_as(result) is None  # never suspended: nothing to say


def test_an_admission_check_adds_to_the_pods_without_overriding_the_template() -> None:
    job = queued_job()
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    admitted = workload(RESERVED, ADMITTED, admission=ADMISSION)
    admitted["status"]["admissionChecks"] = [{"name": "prov", "state": "Ready", "podSetUpdates": [
        {"name": "worker", "labels": {"prov": "req-1"}, "annotations": {"prov/ok": "1"},
         "nodeSelector": {"zone": "b", "pool": "p1"}}]}]
    result = plan_with(job, [admitted])
    assert result.desired is not None
    pod = result.desired.body(POD, ReplicaSlot("Worker", 0))
    assert pod["spec"]["nodeSelector"] == {"cloud/gpu": "a100", "zone": "a", "pool": "p1"}
    assert (pod["metadata"]["labels"]["prov"], pod["metadata"]["annotations"]["prov/ok"]) == ("req-1", "1")
    assert "prov" not in result.desired.body(POD, ReplicaSlot("PS", 0))["metadata"]["labels"]


def test_evicted_the_running_job_is_stopped_without_a_restart_counted() -> None:
    job = queued_job(backoffLimit=0)
    result = plan_with(job, [workload(RESERVED, ADMITTED, PREEMPTED, admission=ADMISSION)], pods=running_pods())
    assert sorted(ref.name for ref in result.deletes(POD)) == sorted(p["metadata"]["name"] for p in running_pods())
    assert all(ref.grace_period_seconds is None for ref in result.deletes(POD))  # the pods' own grace: SIGTERM
    assert result.patch == []  # the quota is handed back once the pods are gone
    assert suspended_as(result) == ("True", "EvictedByKueue", (
        "TFJob ns/mnist was evicted by Kueue (Preempted: Preempted to accommodate a workload (UID: 9)) and is "
        "queued again in LocalQueue team."))
    assert result.counters.restarted == 0 and result.status is not None
    conditions = result.status.to_json()["conditions"]
    assert [c["type"] for c in conditions if c["status"] == "True"] == ["Created", "Suspended"]


def test_evicted_with_its_pods_gone_the_quota_is_handed_back() -> None:
    result = plan_with(queued_job(), [workload(RESERVED, ADMITTED, PREEMPTED, admission=ADMISSION)],
                       pods=[make_pod("Worker", 0, terminating=True)])
    assert result.patch == []  # a pod still terminating
    result = plan_with(queued_job(), [workload(RESERVED, ADMITTED, PREEMPTED, admission=ADMISSION)])
    message = "Preempted to accommodate a workload (UID: 9)"
    assert result.patch == [ChildPatch(WORKLOAD, WL, {
        "metadata": {"resourceVersion": "7"},
        "status": {"admission": None, "conditions": [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": message,
             "lastTransitionTime": "2026-11-21T10:00:00Z"},
            {"type": "Admitted", "status": "False", "reason": "NoReservation", "message": message,
             "lastTransitionTime": "2026-11-21T10:00:00Z"},
            PREEMPTED,
            {"type": "Requeued", "status": "True", "reason": "Preempted", "message": message,
             "lastTransitionTime": "2026-11-21T10:00:00Z"}]}}, subresource="status")]


def test_deactivated_the_quota_is_handed_back_without_requeueing() -> None:
    result = plan_with(queued_job(), [workload(RESERVED, ADMITTED, DEACTIVATED, admission=ADMISSION, active=False)])
    assert len(result.patch) == 1
    requeued = next(c for c in result.patch[0].patch["status"]["conditions"] if c["type"] == "Requeued")
    assert (requeued["status"], requeued["reason"]) == ("False", "Deactivated")


GONE: dict[str, tuple[dict[str, Any], ControllerConfig]] = {
    "suspended by its user": (queued_job(suspend=True), OWN),
    "its queue label removed": (make_job({"Worker": 2, "PS": 1}), OWN),
    "finished": ({**queued_job(cleanPodPolicy="None"), "status": {
        "conditions": [{"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded"}],
        "completionTime": "2026-11-21T09:59:00Z"}}, OWN),
}


@pytest.mark.parametrize(("job", "config"), GONE.values(), ids=GONE.keys())
def test_the_workload_goes_when_the_job_holds_no_quota(job: dict[str, Any], config: ControllerConfig) -> None:
    result = plan_with(job, [workload(RESERVED, ADMITTED, admission=ADMISSION)], config=config)
    assert (result.deletes(WORKLOAD), result.creates(WORKLOAD)) == ([ChildRef(WORKLOAD, WL, "wl-1")], [])


def test_with_kueues_adapter_tfop_makes_no_workload() -> None:
    result = plan_with(queued_job(), [], config=ControllerConfig(kueue_integration="kueue"))
    assert result.creates(WORKLOAD) == [] and len(result.creates(POD)) == 3


CONFIGS: dict[str, tuple[dict[str, Any], str, bool]] = {
    "left out: own, for the start to settle": ({}, "own", False),
    "no integration key: the same": ({"kueue": {}}, "own", False),
    "own": ({"kueue": {"integration": "own"}}, "own", True),
    "kueue": ({"kueue": {"integration": "kueue"}}, "kueue", True),
}


@pytest.mark.parametrize(("document", "integration", "chosen"), CONFIGS.values(), ids=CONFIGS.keys())
def test_the_config_chooses_the_integration(document: dict[str, Any], integration: str, chosen: bool) -> None:
    config = parse_config(document)
    assert (config.kueue_integration, config.kueue_integration_chosen) == (integration, chosen)


def test_an_unknown_integration_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"kueue\.integration 'mine' is not one of own, kueue"):
        parse_config({"kueue": {"integration": "mine"}})


def test_a_running_job_tells_kueue_its_pods_are_ready() -> None:
    job = queued_job()
    job["status"] = {"conditions": [{"type": "Running", "status": "True", "reason": "TFJobRunning",
                                     "message": "TFJob ns/mnist is running.", "lastTransitionTime": T1}]}
    result = plan_with(job, [workload(RESERVED, ADMITTED, admission=ADMISSION)], pods=running_pods())
    assert result.patch == [ChildPatch(WORKLOAD, WL, {
        "metadata": {"resourceVersion": "7"},
        "status": {"conditions": [RESERVED, ADMITTED, {
            "type": "PodsReady", "status": "True", "reason": "Started",
            "message": "All pods reached readiness and the workload is running",
            "lastTransitionTime": "2026-11-21T10:00:00Z"}]}}, subresource="status")]
    told = workload(RESERVED, ADMITTED, kueue_condition("PodsReady", "True", "Started"), admission=ADMISSION)
    assert plan_with(job, [told], pods=running_pods()).patch == []


def test_the_workload_carries_the_priority_class_the_job_names() -> None:
    job = queued_job()
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
    children: dict[str, list[dict[str, Any]]] = {POD: [], SERVICE: [], WORKLOAD: []}
    result = plan(PlanContext(job, children, NOW, OWN, priority_classes={"high": 1000}))
    assert result.creates(WORKLOAD) == [Creation(WORKLOAD, None, WL)] and result.desired is not None
    spec = result.desired.body(WORKLOAD, None)["spec"]
    assert (spec["priorityClassRef"], spec["priority"]) == (
        {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}, 1000)
    # Not cached (not applied yet, or a typo): no Workload yet, and the job says why it waits.
    result = plan(PlanContext(job, children, NOW, OWN))
    assert (result.create, result.requeue_after) == ([], 5.0)
    assert suspended_as(result) == ("True", "QueuedByKueue", (
        "TFJob ns/mnist waits for the Kueue WorkloadPriorityClass high it names (kueue.x-k8s.io/priority-class) "
        "to exist."))
    # A Workload of another class (the label edited) is replaced.
    other = workload(WAITING)
    other["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "low"}
    result = plan(PlanContext(job, {**children, WORKLOAD: [other]}, NOW, OWN, priority_classes={"high": 1000}))
    assert result.deletes(WORKLOAD) == [ChildRef(WORKLOAD, WL, "wl-1")]


def finished_worker(**worker_status: Any) -> dict[str, Any]:
    job = queued_job()
    job["status"] = {"replicaStatuses": {"Worker": {"active": 1, "succeeded": 1, **worker_status},
                                         "PS": {"active": 1}}}
    return job


PODS_ONE_DONE = [make_pod("Worker", 0), make_pod("Worker", 1, "Succeeded", exit_code=0), make_pod("PS", 0)]


def test_an_admitted_job_reports_its_succeeded_worker() -> None:
    result = plan_with(finished_worker(succeededIndexes="1"), [workload(RESERVED, ADMITTED, admission=ADMISSION)],
                       pods=PODS_ONE_DONE)
    assert result.patch == [ChildPatch(WORKLOAD, WL, {
        "metadata": {"resourceVersion": "7"},
        "status": {"reclaimablePods": [{"name": "worker", "count": 1}]}}, subresource="status")]
    assert result.creates(WORKLOAD) == [] and result.deletes(WORKLOAD) == []


def reclaiming(*entries: dict[str, Any], **given: Any) -> dict[str, Any]:
    stored = workload(RESERVED, ADMITTED, **given)
    stored["status"]["reclaimablePods"] = list(entries)
    return stored


PATCHES: dict[str, tuple[dict[str, Any], dict[str, Any], list[ChildPatch]]] = {
    "told already: nothing written": (
        finished_worker(succeededIndexes="1"), reclaiming({"name": "worker", "count": 1}, admission=ADMISSION), []),
    "not recorded yet (the pod just ended): nothing before the status says so": (
        finished_worker(), workload(RESERVED, ADMITTED, admission=ADMISSION), []),
    "a worker failed for good and one succeeded: both": (
        finished_worker(succeededIndexes="1", failedIndexes="0"), workload(RESERVED, ADMITTED, admission=ADMISSION),
        [ChildPatch(WORKLOAD, WL, {"metadata": {"resourceVersion": "7"},
                                   "status": {"reclaimablePods": [{"name": "worker", "count": 2}]}},
                    subresource="status")]),
    "quota reserved, not admitted yet: nothing written": (
        finished_worker(succeededIndexes="1"), workload(RESERVED, admission=ADMISSION), []),
}


@pytest.mark.parametrize(("job", "stored", "patches"), PATCHES.values(), ids=PATCHES.keys())
def test_the_reclaimable_pods_patch(job: dict[str, Any], stored: dict[str, Any], patches: list[ChildPatch]) -> None:
    assert plan_with(job, [stored], pods=PODS_ONE_DONE).patch == patches


def test_pods_ready_and_reclaimable_pods_go_in_one_patch() -> None:
    job = finished_worker(succeededIndexes="1")
    job["status"]["conditions"] = [{"type": "Running", "status": "True", "reason": "TFJobRunning",
                                    "message": "TFJob ns/mnist is running.",
                                    "lastTransitionTime": "2026-11-21T09:58:00Z"}]
    patches = plan_with(job, [workload(RESERVED, ADMITTED, admission=ADMISSION)], pods=PODS_ONE_DONE).patch
    assert [(p.name, sorted(p.patch["status"])) for p in patches] == [(WL, ["conditions", "reclaimablePods"])]


def test_the_observed_reclaimable_pods() -> None:
    stored = reclaiming({"name": "worker", "count": 1}, {"name": "ps", "count": 0}, admission=ADMISSION)
    assert observe_workload(stored).reclaimable == (("worker", 1), ("ps", 0))


def classed_job(label: str | None = None, scheduling: str | None = None, **templates: str) -> dict[str, Any]:
    """A queued job of a Worker (2) and a PS (1), with the WorkloadPriorityClass label, the schedulingPolicy's
    priorityClass and each named replica type's pod template priorityClassName given."""
    job = queued_job(**({"schedulingPolicy": {"priorityClass": scheduling}} if scheduling else {}))
    if label is not None:
        job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = label
    for replica_type, name in templates.items():
        job["spec"]["tfReplicaSpecs"][replica_type]["template"]["spec"]["priorityClassName"] = name
    return job


WPC = "kueue.x-k8s.io", "WorkloadPriorityClass"
PC = "scheduling.k8s.io", "PriorityClass"
POD_CLASSES = {"batch-low": 100, "training": 5000, "cluster-default": 10}
# (the job, the WorkloadPriorityClasses cached, the cluster's global default PriorityClass) -> the Workload's
# priorityClassRef (group, kind, name) and priority; None: a Workload of no class, priority 0; a text: no Workload yet,
# the job's Suspended message.
Expected = tuple[str, str, str, int] | str | None
PRIORITY_ROWS: dict[str, tuple[dict[str, Any], dict[str, int], str | None, Expected]] = {
    "the label's WorkloadPriorityClass, before the pods' class": (
        classed_job("high", Worker="training"), {"high": 1000}, "cluster-default", (*WPC, "high", 1000)),
    "the pods' PriorityClass without the label": (
        classed_job(Worker="training"), {}, "cluster-default", (*PC, "training", 5000)),
    "the PS's class before the Worker's (the adapter's order)": (
        classed_job(Worker="training", PS="batch-low"), {}, None, (*PC, "batch-low", 100)),
    "the schedulingPolicy's class before the templates'": (
        classed_job(scheduling="training", PS="batch-low"), {}, None, (*PC, "training", 5000)),
    "no class named: the cluster's global default": (
        classed_job(), {}, "cluster-default", (*PC, "cluster-default", 10)),
    "no class named, no default: priority 0, as Kueue's integrations write it": (classed_job(), {}, None, None),
    "a PriorityClass not cached: no Workload yet": (
        classed_job(Worker="missing"), {}, "cluster-default",
        ("TFJob ns/mnist waits for the PriorityClass missing its pods name to exist: its Kueue Workload's priority "
         "is that class's value.")),
}


@pytest.mark.parametrize(("job", "workload_classes", "default", "expected"), PRIORITY_ROWS.values(),
                         ids=PRIORITY_ROWS.keys())
def test_the_workloads_priority_comes_from_the_class_kueue_would_read(
        job: dict[str, Any], workload_classes: dict[str, int], default: str | None,
        expected: Expected) -> None:
    children: dict[str, list[dict[str, Any]]] = {POD: [], SERVICE: [], WORKLOAD: []}
    named = {name: value for name, value in POD_CLASSES.items() if default == name or name != "cluster-default"}
    result = plan(PlanContext(job, children, NOW, OWN, priority_classes=workload_classes,
                              pod_priority_classes=named, default_priority_class=default))
    if isinstance(expected, str):
        assert (result.create, result.requeue_after) == ([], 5.0)
        assert suspended_as(result) == ("True", "QueuedByKueue", expected)
        return
    assert result.creates(WORKLOAD) == [Creation(WORKLOAD, None, WL)] and result.desired is not None
    spec = result.desired.body(WORKLOAD, None)["spec"]
    if expected is None:
        assert "priorityClassRef" not in spec and spec["priority"] == 0
    else:
        group, kind, name, value = expected
        assert (spec["priorityClassRef"], spec["priority"]) == ({"group": group, "kind": kind, "name": name}, value)


def test_a_workload_of_a_priorityclass_is_kept_when_the_default_changes() -> None:
    """Kueue reads a PriorityClass once, when it makes the Workload (a class's value cannot change): a new global
    default, or the pods' class named later, does not replace a Workload, so the job is not stopped for it."""
    stored = workload(RESERVED, ADMITTED, admission=ADMISSION)
    stored["spec"]["priorityClassRef"] = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "old"}
    stored["spec"]["priority"] = 1
    job = classed_job()
    result = plan(PlanContext(job, {POD: running_pods(), SERVICE: services_for(), WORKLOAD: [stored]}, NOW, OWN,
                              pod_priority_classes={"cluster-default": 10}, default_priority_class="cluster-default",
                              flavors={"gpu-a": GPU_FLAVOR}))
    assert result.deletes(WORKLOAD) == [] and result.creates(WORKLOAD) == []


def held_job(reason: str, message: str) -> dict[str, Any]:
    job = queued_job()
    job["status"] = {"conditions": [{"type": "Suspended", "status": "True", "reason": reason, "message": message,
                                     "lastTransitionTime": T1}]}
    return job


def evicted_before(*evictions: tuple[str, int]) -> dict[str, Any]:
    admitted = workload(RESERVED, ADMITTED, admission=ADMISSION)
    admitted["status"]["schedulingStats"] = {"evictions": [
        {"reason": reason, "underlyingCause": "", "count": count} for reason, count in evictions]}
    return admitted


# (the job's Suspended condition, its Workload as admitted) -> the events of the pass that lets it run
ADMITTED_EVENTS: dict[str, tuple[dict[str, Any], dict[str, Any], list[tuple[str, str, str]]]] = {
    "first admission": (
        held_job("QueuedByKueue", "queued"), workload(RESERVED, ADMITTED, admission=ADMISSION),
        [("Normal", "AdmittedByKueue",
          "TFJob ns/mnist is admitted by Kueue in ClusterQueue team-cq, flavors ps: gpu-a; worker: gpu-a.")]),
    "admitted again after a preemption": (
        held_job("QueuedByKueue", "queued again"), evicted_before(("Preempted", 1)),
        [("Normal", "AdmittedByKueue", ("TFJob ns/mnist is admitted again after 1 eviction (Preempted) by Kueue in "
                                        "ClusterQueue team-cq, flavors ps: gpu-a; worker: gpu-a."))]),
    "admitted while still told evicted, after two": (
        held_job("EvictedByKueue", "evicted"), evicted_before(("Preempted", 1), ("Deactivated", 1)),
        [("Normal", "AdmittedByKueue", ("TFJob ns/mnist is admitted again after 2 evictions (Preempted, "
                                        "Deactivated) by Kueue in ClusterQueue team-cq, flavors ps: gpu-a; "
                                        "worker: gpu-a."))]),
    "already running: nothing said": (queued_job(), evicted_before(("Preempted", 1)), []),
}


@pytest.mark.parametrize(("job", "admitted", "events"), ADMITTED_EVENTS.values(), ids=ADMITTED_EVENTS.keys())
def test_an_admission_is_told_once_with_its_flavors(job: dict[str, Any], admitted: dict[str, Any],
                                                    events: list[tuple[str, str, str]]) -> None:
    result = plan_with(job, [admitted])
    assert [(e.type, e.reason, e.message) for e in result.events if e.reason == "AdmittedByKueue"] == events
    assert result.creates(POD) != []


def running_as(running: bool) -> dict[str, Any]:
    job = queued_job()
    job["status"] = {"conditions": [{"type": "Running", "status": "True" if running else "False",
                                     "reason": "TFJobRunning" if running else "TFJobRestarting", "message": "",
                                     "lastTransitionTime": T1}]}
    return job


def pods_ready(status: str, reason: str) -> dict[str, Any]:
    return kueue_condition("PodsReady", status, reason)


# (whether the job ran as of its last status, the Workload's PodsReady) -> the PodsReady tfop writes, if any
PODS_READY_ROWS: dict[str, tuple[bool, dict[str, Any] | None, tuple[str, str] | None]] = {
    "running, none yet: Started": (True, None, ("True", "Started")),
    "a replica restarts: waits for recovery": (False, pods_ready("True", "Started"), ("False", "WaitForRecovery")),
    "still restarting: left as it is": (False, pods_ready("False", "WaitForRecovery"), None),
    "running again: Recovered": (True, pods_ready("False", "WaitForRecovery"), ("True", "Recovered")),
    "running, told already: left": (True, pods_ready("True", "Recovered"), None),
    "not started yet: left to Kueue's wait": (False, None, None),
}


@pytest.mark.parametrize(("running", "stored", "written"), PODS_READY_ROWS.values(), ids=PODS_READY_ROWS.keys())
def test_pods_ready_follows_the_job_as_kueues_wait_for_pods_ready_expects(
        running: bool, stored: dict[str, Any] | None, written: tuple[str, str] | None) -> None:
    admitted = workload(*(c for c in (RESERVED, ADMITTED, stored) if c is not None), admission=ADMISSION)
    result = plan_with(running_as(running), [admitted], pods=running_pods())
    found = [(c["status"], c["reason"]) for patch in result.patch for c in patch.patch["status"].get("conditions", [])
             if c["type"] == "PodsReady"]
    assert found == ([] if written is None else [written])


def test_an_evicted_jobs_pods_ready_goes_false_with_its_quota() -> None:
    result = plan_with(queued_job(), [workload(RESERVED, ADMITTED, pods_ready("True", "Started"), PREEMPTED,
                                               admission=ADMISSION)])
    written = {c["type"]: (c["status"], c["reason"]) for c in result.patch[0].patch["status"]["conditions"]}
    assert written == {"QuotaReserved": ("False", "Pending"), "Admitted": ("False", "NoReservation"),
                       "PodsReady": ("False", "WaitForStart"), "Evicted": ("True", "Preempted"),
                       "Requeued": ("True", "Preempted")}


# A template's annotations -> its pod set's topology request (the first of required, preferred, unconstrained)
TOPOLOGY_REQUESTS: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "none asked": ({}, {"podIndexLabel": "training.kubeflow.org/replica-index"}),
    "required": ({"kueue.x-k8s.io/podset-required-topology": "cloud/rack",
                  "kueue.x-k8s.io/podset-preferred-topology": "cloud/block"},
                 {"podIndexLabel": "training.kubeflow.org/replica-index", "required": "cloud/rack"}),
    "preferred": ({"kueue.x-k8s.io/podset-preferred-topology": "cloud/block"},
                  {"podIndexLabel": "training.kubeflow.org/replica-index", "preferred": "cloud/block"}),
    "unconstrained": ({"kueue.x-k8s.io/podset-unconstrained-topology": "true"},
                      {"podIndexLabel": "training.kubeflow.org/replica-index", "unconstrained": True}),
}


@pytest.mark.parametrize(("annotations", "request_"), TOPOLOGY_REQUESTS.values(), ids=TOPOLOGY_REQUESTS.keys())
def test_a_pod_sets_topology_request_is_read_from_its_template(annotations: dict[str, str],
                                                               request_: dict[str, Any]) -> None:
    job = queued_job()
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = {"annotations": annotations}
    result = plan_with(job, [])
    assert result.desired is not None
    pod_sets = {s["name"]: s["topologyRequest"] for s in result.desired.body(WORKLOAD, None)["spec"]["podSets"]}
    assert pod_sets == {"worker": request_, "ps": {"podIndexLabel": "training.kubeflow.org/replica-index"}}


def test_a_topology_assignment_gates_the_pods_for_kueue_to_place() -> None:
    job = queued_job()
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": "cloud/rack"}}
    assignments: list[dict[str, Any]] = [
        {"name": "ps", "flavors": {"cpu": "gpu-a"}, "count": 1},
        {"name": "worker", "flavors": {"cpu": "gpu-a"}, "count": 2,
         "topologyAssignment": {"levels": ["kubernetes.io/hostname"], "slices": []}}]
    result = plan_with(job, [workload(RESERVED, ADMITTED, admission={**ADMISSION, "podSetAssignments": assignments})])
    assert result.desired is not None
    worker = result.desired.body(POD, ReplicaSlot("Worker", 1))
    assert worker["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
    assert worker["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "worker"
    assert {k: v for k, v in worker["metadata"]["annotations"].items() if k.startswith("kueue")} == {
        "kueue.x-k8s.io/podset-required-topology": "cloud/rack", "kueue.x-k8s.io/workload": WL}
    assert worker["spec"]["nodeSelector"] == {"cloud/gpu": "a100"}  # the flavor's; Kueue adds the domain's
    ps = result.desired.body(POD, ReplicaSlot("PS", 0))  # no topology assigned: scheduled at once
    assert "schedulingGates" not in ps["spec"] and "kueue.x-k8s.io/podset" not in ps["metadata"]["labels"]
    # A topology the job did not ask for (the flavor's): unconstrained, as Kueue's integrations mark it.
    result = plan_with(queued_job(), [workload(RESERVED, ADMITTED,
                                               admission={**ADMISSION, "podSetAssignments": assignments})])
    assert result.desired is not None
    annotations = result.desired.body(POD, ReplicaSlot("Worker", 0))["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"
