"""MultiKueue with tfop's own Kueue integration, planned (plan/policies/multikueue.py): on the manager a job whose
spec.managedBy is kueue.x-k8s.io/multikueue gets its Workload and nothing else (no pods, no status, no event); on a
worker the copy MultiKueue made adopts the Workload MultiKueue made for it, runs once it is admitted, and marks it
Finished once its stored status says it ended, never deleting it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from support.plan_builders import NOW, UID, make_job, make_pod, services_for
from tfop.api.conversion import FIELDS_ANNOTATION, V1ALPHA1, V1BETA1, from_v1
from tfop.api.kueue import managed_elsewhere
from tfop.controller.plan.children.workload import workload_name
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.job.parse import parse_job
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import POD, SERVICE, WORKLOAD, ChildPatch, ChildRef, Creation, Plan, PlanContext

OWN = ControllerConfig(kueue_integration="own")
ADAPTER = ControllerConfig(kueue_integration="kueue")
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
MANAGER_WL = "tfjob-mnist-abcd"  # the manager's Workload: the name MultiKueue gives the worker's too
T1 = "2026-11-21T09:58:00Z"
OWNER = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist", "uid": UID, "controller": True,
         "blockOwnerDeletion": True}
SUCCEEDED = {"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded",
             "message": "TFJob ns/mnist successfully completed.", "lastTransitionTime": T1}
FAILED = {"type": "Failed", "status": "True", "reason": "TFJobFailed",
          "message": "TFJob ns/mnist has failed because 1 Worker replica(s) failed.", "lastTransitionTime": T1}
ADMISSION = {"clusterQueue": "team", "podSetAssignments": [
    {"name": "worker", "flavors": {"cpu": "default"}, "count": 2},
    {"name": "ps", "flavors": {"cpu": "default"}, "count": 1}]}
RESERVED = {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
            "lastTransitionTime": T1}
ADMITTED = {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "", "lastTransitionTime": T1}
FINISHED = {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done", "lastTransitionTime": T1}


def queued(*, top: str | None = MULTIKUEUE, run_policy: dict[str, Any] | None = None,
           status: dict[str, Any] | None = None, prebuilt: str | None = None, as_label: bool = False,
           workers: int = 2) -> dict[str, Any]:
    job = make_job({"Worker": workers, "PS": 1}, run_policy=run_policy, status=status)
    if top is not None:
        job["spec"]["managedBy"] = top
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
    if prebuilt is not None:
        where = "labels" if as_label else "annotations"
        job["metadata"].setdefault(where, {})[PREBUILT] = prebuilt
    return job


def workload(name: str, *conditions: dict[str, Any], owned: bool = True, counts: tuple[int, int] = (2, 1),
             admission: dict[str, Any] | None = None, controller: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": "wl-1", "resourceVersion": "7",
                                "labels": {"training.kubeflow.org/operator-name": "tfjob-controller"}}
    if owned:
        metadata["ownerReferences"] = [OWNER]
    elif controller is not None:
        metadata["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": controller, "uid": "x",
                                        "controller": True}]
    status: dict[str, Any] = {"conditions": list(conditions)}
    if admission is not None:
        status["admission"] = admission
    return {"metadata": metadata, "status": status,
            "spec": {"queueName": "team", "podSets": [{"name": "worker", "count": counts[0]},
                                                       {"name": "ps", "count": counts[1]}]}}


def plan_with(job: dict[str, Any], workloads: list[dict[str, Any]], *, config: ControllerConfig = OWN,
              prebuilt: dict[str, Any] | None = None, pods: list[dict[str, Any]] | None = None) -> Plan:
    children = {POD: pods or [], SERVICE: services_for() if pods else [], WORKLOAD: workloads}
    return plan(PlanContext(job, children, NOW, config, flavors={"default": {"metadata": {"name": "default"}}},
                            prebuilt_workload=prebuilt))


def wl_name(job: dict[str, Any]) -> str:
    parsed = parse_job(job, OWN)
    assert isinstance(parsed, TFJobModel)
    return workload_name(parsed.metadata)


OWN_WL = wl_name(queued())

# On the manager: (job, its Workloads, config) -> (creates, deletes, events' reasons); the status is never written.
MANAGER: dict[str, tuple[dict[str, Any], list[dict[str, Any]], ControllerConfig,
                         tuple[list[Creation], list[ChildRef], list[str]]]] = {
    "queued: its Workload made, nothing else": (
        queued(), [], OWN, ([Creation(WORKLOAD, None, OWN_WL)], [], [])),
    "its Workload waits for quota: nothing to do": (
        queued(), [workload(OWN_WL)], OWN, ([], [], [])),
    "admitted (MultiKueue sent it): still no pods": (
        queued(), [workload(OWN_WL, RESERVED, ADMITTED, admission=ADMISSION)], OWN, ([], [], [])),
    "the worker's Succeeded copied back: the Workload is Kueue's to finish": (
        queued(status={"conditions": [SUCCEEDED]}), [workload(OWN_WL, RESERVED, ADMITTED, admission=ADMISSION)],
        OWN, ([], [], [])),
    "finished, its Workload gone: none made again (it would run again)": (
        queued(status={"conditions": [FAILED]}), [], OWN, ([], [], [])),
    "suspended: its Workload goes, so MultiKueue deletes the worker's copy": (
        queued(run_policy={"suspend": True}), [workload(OWN_WL)], OWN,
        ([], [ChildRef(WORKLOAD, OWN_WL, "wl-1")], [])),
    "its Worker count changed: the old Workload goes first": (
        queued(workers=3), [workload(OWN_WL)], OWN, ([], [ChildRef(WORKLOAD, OWN_WL, "wl-1")], [])),
    "invalid: no Workload, and a Warning says why": (
        {**queued(), "spec": {**queued()["spec"], "tfReplicaSpecs": {"Worker": {"replicas": -1}}}}, [], OWN,
        ([], [], ["InvalidSpec"])),
    "Kueue's TFJob adapter chosen: the job is left alone": (
        queued(), [], ADAPTER, ([], [], [])),
    "runPolicy.managedBy only (the adapter's field): left alone": (
        queued(top=None, run_policy={"managedBy": MULTIKUEUE}), [], OWN, ([], [], [])),
    "another controller at the top: left alone": (
        queued(top="example.com/mine"), [], OWN, ([], [], [])),
}


@pytest.mark.parametrize(("job", "workloads", "config", "expected"), MANAGER.values(), ids=MANAGER.keys())
def test_on_the_manager_only_the_workload_is_kept(job: dict[str, Any], workloads: list[dict[str, Any]],
                                                  config: ControllerConfig,
                                                  expected: tuple[list[Creation], list[ChildRef], list[str]]) -> None:
    result = plan_with(job, workloads, config=config)
    assert (result.create, result.delete, [event.reason for event in result.events]) == expected
    assert (result.status, result.patch, result.release) == (None, [], [])


ADOPT = {"metadata": {"resourceVersion": "7", "ownerReferences": [OWNER]}}
HELD_REASON = "QueuedByKueue"

# On a worker, the copy held: (its prebuilt Workload as cached, unowned) -> (patches, the Suspended message,
# requeue).
WAITING: dict[str, tuple[dict[str, Any] | None, list[ChildPatch], str, float | None]] = {
    "not cached yet: waits, and looks again": (
        None, [],
        f"TFJob ns/mnist waits for its Kueue Workload {MANAGER_WL}, which MultiKueue makes for it ({PREBUILT}).", 1.0),
    "there, owned by nobody, waiting for quota: adopted, and queued as Kueue says": (
        workload(MANAGER_WL, owned=False), [ChildPatch(WORKLOAD, MANAGER_WL, ADOPT)],
        "TFJob ns/mnist is queued in Kueue LocalQueue team.", None),
    "controlled by another object: waits": (
        workload(MANAGER_WL, owned=False, controller="other"), [],
        (f"TFJob ns/mnist waits: its Kueue Workload {MANAGER_WL} ({PREBUILT}) is controlled by Job other, not by "
         "the job."), None),
}


@pytest.mark.parametrize(("prebuilt", "patches", "message", "requeue"), WAITING.values(), ids=WAITING.keys())
def test_on_a_worker_the_copy_adopts_the_workload_multikueue_made(
        prebuilt: dict[str, Any] | None, patches: list[ChildPatch], message: str, requeue: float | None) -> None:
    result = plan_with(queued(top=None, prebuilt=MANAGER_WL), [], prebuilt=prebuilt)
    assert result.status is not None
    suspended = next(c for c in result.status.to_json()["conditions"] if c["type"] == "Suspended")
    assert (result.create, result.delete, result.patch, (suspended["status"], suspended["reason"],
                                                         suspended["message"]), result.requeue_after) == (
        [], [], patches, ("True", HELD_REASON, message), requeue)


def test_an_admitted_prebuilt_workload_is_adopted_and_the_pods_made_in_one_pass() -> None:
    """The adoption is patched before any create: MultiKueue made the copy only once the Workload was admitted."""
    admitted = workload(MANAGER_WL, RESERVED, ADMITTED, owned=False, admission=ADMISSION)
    result = plan_with(queued(top=None, prebuilt=MANAGER_WL), [], prebuilt=admitted)
    assert (result.patch, len(result.creates(POD)), result.creates(WORKLOAD)) == (
        [ChildPatch(WORKLOAD, MANAGER_WL, ADOPT)], 3, [])


def test_the_prebuilt_workload_is_named_by_the_annotation_or_the_label() -> None:
    for job in (queued(top=None, prebuilt=MANAGER_WL), queued(top=None, prebuilt=MANAGER_WL, as_label=True)):
        assert wl_name(job) == MANAGER_WL
    assert wl_name(queued(top=None)) == OWN_WL


def test_on_a_worker_the_adopted_workload_once_admitted_runs_the_copy() -> None:
    admitted = workload(MANAGER_WL, RESERVED, ADMITTED, admission=ADMISSION)
    result = plan_with(queued(top=None, prebuilt=MANAGER_WL), [admitted, workload(OWN_WL) | {
        "metadata": {**workload(OWN_WL)["metadata"], "uid": "wl-2"}}])
    assert (len(result.creates(POD)), result.creates(WORKLOAD), result.deletes(WORKLOAD)) == (
        3, [], [ChildRef(WORKLOAD, OWN_WL, "wl-2")])


def finished_patch(reason: str, message: str) -> ChildPatch:
    return ChildPatch(WORKLOAD, MANAGER_WL, {"metadata": {"resourceVersion": "7"}, "status": {"conditions": [
        RESERVED, ADMITTED, {"type": "Finished", "status": "True", "reason": reason, "message": message,
                             "lastTransitionTime": "2026-11-21T10:00:00Z"}]}}, subresource="status")


# On a worker, the copy ended: (stored conditions, the Workload's) -> the patches (never a delete of it).
ENDED: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], list[ChildPatch]]] = {
    "Succeeded stored: the Workload says Finished, Succeeded": (
        [SUCCEEDED], [RESERVED, ADMITTED], [finished_patch("Succeeded", SUCCEEDED["message"])]),
    "Failed stored: Finished, Failed": (
        [FAILED], [RESERVED, ADMITTED], [finished_patch("Failed", FAILED["message"])]),
    "Finished already: nothing more": (
        [SUCCEEDED], [RESERVED, ADMITTED, FINISHED], []),
}


@pytest.mark.parametrize(("conditions", "workload_conditions", "patches"), ENDED.values(), ids=ENDED.keys())
def test_on_a_worker_a_finished_copy_marks_its_workload_finished(
        conditions: list[dict[str, Any]], workload_conditions: list[dict[str, Any]],
        patches: list[ChildPatch]) -> None:
    stored = workload(MANAGER_WL, *workload_conditions, admission=ADMISSION)
    result = plan_with(queued(top=None, prebuilt=MANAGER_WL, status={"conditions": conditions}), [stored])
    assert (result.patch, result.deletes(WORKLOAD), result.creates(WORKLOAD)) == (patches, [], [])


def test_the_pass_that_finds_the_end_writes_it_before_the_workload_says_so() -> None:
    """MultiKueue copies the job's status as it reads Finished: the end must be stored first."""
    stored = workload(MANAGER_WL, RESERVED, ADMITTED, admission=ADMISSION)
    pods = [make_pod("Worker", 0, "Succeeded", exit_code=0), make_pod("Worker", 1, "Succeeded", exit_code=0),
            make_pod("PS", 0, "Succeeded", exit_code=0)]
    result = plan_with(queued(top=None, prebuilt=MANAGER_WL), [stored], pods=pods)
    assert result.status is not None and any(c["type"] == "Succeeded" and c["status"] == "True"
                                             for c in result.status.to_json()["conditions"])
    assert "Finished" not in json.dumps([patch.patch for patch in result.patch])


MANAGED: dict[str, tuple[dict[str, Any], str | None]] = {
    "spec.managedBy": ({"managedBy": MULTIKUEUE}, MULTIKUEUE),
    "runPolicy.managedBy": ({"runPolicy": {"managedBy": MULTIKUEUE}}, MULTIKUEUE),
    "both, the same": ({"managedBy": MULTIKUEUE, "runPolicy": {"managedBy": MULTIKUEUE}}, MULTIKUEUE),
    "the training operator's: tfop": ({"managedBy": "kubeflow.org/training-operator"}, None),
    "empty: tfop": ({"managedBy": ""}, None),
    "neither: tfop": ({}, None),
}


@pytest.mark.parametrize(("spec", "manager"), MANAGED.values(), ids=MANAGED.keys())
def test_who_runs_a_job(spec: dict[str, Any], manager: str | None) -> None:
    assert managed_elsewhere({"spec": spec}) == manager


def test_the_model_parses_spec_managed_by() -> None:
    parsed = parse_job(queued(), OWN)
    assert isinstance(parsed, TFJobModel) and parsed.spec.managed_by == MULTIKUEUE


@pytest.mark.parametrize("version", [V1ALPHA1, V1BETA1])
def test_older_versions_carry_spec_managed_by_in_the_annotation(version: str) -> None:
    old = from_v1(queued(), version)
    assert "managedBy" not in json.dumps(old["spec"])
    assert '"managedBy":"kueue.x-k8s.io/multikueue"' in old["metadata"]["annotations"][FIELDS_ANNOTATION]
