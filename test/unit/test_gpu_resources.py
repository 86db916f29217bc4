"""The legacy GPU resource name (plan/job/legacy_gpu.py): rewritten in every template, in conversions and in the pods
and PodGroups the planner makes, with a Warning event for v1 jobs. Rows of expected values are written out."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from support.plan_builders import NOW, container, make_job, make_pod, make_service, name_of, plan_of
from tfop.api.errors import FieldError
from tfop.controller.plan.controller_config import Accelerator, ControllerConfig, HostVolume
from tfop.controller.plan.job.legacy_gpu import GpuRename, gpu_resource_problem, rewrite_legacy_gpu
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import JOB, POD, POD_GROUP, SERVICE, PlanContext, StatusWait

LEGACY = "alpha.kubernetes.io/nvidia-gpu"


def gpu_job(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None,
            replica_type: str = "Worker") -> dict[str, Any]:
    job = make_job({replica_type: 1})
    spec = job["spec"]["tfReplicaSpecs"][replica_type]["template"]["spec"]
    spec["containers"] = list(containers)
    if init is not None:
        spec["initContainers"] = init
    return job


@dataclass(frozen=True)
class Row:
    job: dict[str, Any]
    gpu_resource: str
    resources: list[dict[str, Any]]  # each container's resources after the rewrite, init containers last
    renamed: tuple[GpuRename, ...] = ()
    problems: tuple[FieldError, ...] = field(default=())


ROWS = {
    "limit renamed": Row(
        gpu_job(container(resources={"limits": {LEGACY: 1}})), "nvidia.com/gpu",
        [{"limits": {"nvidia.com/gpu": 1}}],
        (GpuRename("Worker", "tensorflow", "limits", "1"),)),
    "request and limit, other resources kept": Row(
        gpu_job(container(resources={"requests": {"cpu": "2", LEGACY: "2"}, "limits": {LEGACY: "2", "memory": "1Gi"}})),
        "nvidia.com/gpu",
        [{"requests": {"cpu": "2", "nvidia.com/gpu": "2"}, "limits": {"memory": "1Gi", "nvidia.com/gpu": "2"}}],
        (GpuRename("Worker", "tensorflow", "limits", "2"), GpuRename("Worker", "tensorflow", "requests", "2"))),
    "configured resource": Row(
        gpu_job(container(resources={"limits": {LEGACY: 1}})), "amd.com/gpu",
        [{"limits": {"amd.com/gpu": 1}}],
        (GpuRename("Worker", "tensorflow", "limits", "1"),)),
    "every container and init container": Row(
        gpu_job(container(resources={"limits": {LEGACY: 1}}), container("sidecar", resources={"limits": {LEGACY: 1}}),
                init=[container("warmup", resources={"limits": {LEGACY: 1}})]),
        "nvidia.com/gpu",
        [{"limits": {"nvidia.com/gpu": 1}}, {"limits": {"nvidia.com/gpu": 1}}, {"limits": {"nvidia.com/gpu": 1}}],
        (GpuRename("Worker", "tensorflow", "limits", "1"), GpuRename("Worker", "sidecar", "limits", "1"),
         GpuRename("Worker", "warmup", "limits", "1"))),
    "both names, same amount": Row(
        gpu_job(container(resources={"limits": {LEGACY: "1", "nvidia.com/gpu": 1}})), "nvidia.com/gpu",
        [{"limits": {"nvidia.com/gpu": 1}}],
        (GpuRename("Worker", "tensorflow", "limits", "1"),)),
    "both names, different amounts": Row(
        gpu_job(container(resources={"limits": {LEGACY: 1, "nvidia.com/gpu": 2}})), "nvidia.com/gpu",
        [{"limits": {"nvidia.com/gpu": 2}}],
        (GpuRename("Worker", "tensorflow", "limits", "1"),),
        (FieldError("spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources.limits",
                    "asks for alpha.kubernetes.io/nvidia-gpu: 1 and nvidia.com/gpu: 2, which tfop takes as one "
                    "resource; keep only nvidia.com/gpu"),)),
    "current name only: untouched": Row(
        gpu_job(container(resources={"limits": {"nvidia.com/gpu": 1}})), "nvidia.com/gpu",
        [{"limits": {"nvidia.com/gpu": 1}}]),
    "no resources: untouched": Row(gpu_job(container()), "nvidia.com/gpu", [{}]),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_rewrite(row: Row) -> None:
    before = copy.deepcopy(row.job)
    result = rewrite_legacy_gpu(row.job, row.gpu_resource)
    spec = result.job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    assert [c.get("resources", {}) for c in [*spec["containers"], *spec.get("initContainers", [])]] == row.resources
    assert (result.renamed, result.problems) == (row.renamed, row.problems)
    assert row.job == before  # the job given (a cached object) is never changed
    assert (result.job is row.job) == (not row.renamed)


@pytest.mark.parametrize(("name", "problem"), [
    ("nvidia.com/gpu", None),
    ("amd.com/gpu", None),
    ("gpu.intel.com/i915", None),
    ("gpu", "'gpu' is not an extended resource name: a domain, '/' and a name, such as nvidia.com/gpu or amd.com/gpu"),
    ("Nvidia.com/gpu", ("'Nvidia.com/gpu' is not an extended resource name: a domain, '/' and a name, such as "
                        "nvidia.com/gpu or amd.com/gpu")),
    (LEGACY, ("'alpha.kubernetes.io/nvidia-gpu' is in the kubernetes.io domain, which no device plugin offers; use "
              "e.g. nvidia.com/gpu")),
    ("kubernetes.io/gpu", ("'kubernetes.io/gpu' is in the kubernetes.io domain, which no device plugin offers; use "
                           "e.g. nvidia.com/gpu")),
    (7, "7 is not an extended resource name: a domain, '/' and a name, such as nvidia.com/gpu or amd.com/gpu"),
])
def test_gpu_resource_names(name: object, problem: str | None) -> None:
    assert gpu_resource_problem(name) == problem


# --- the planner: v1 jobs written with the legacy name ----------------------------------------------------------

SEED_003_ACCELERATOR = Accelerator(env=(("LD_LIBRARY_PATH", "/usr/lib/nvidia:/usr/lib/x86_64-linux-gnu"),),
                                   volumes=(HostVolume("lib", "/usr/lib/nvidia", "/usr/lib/nvidia-384"),))
RENAMED_MESSAGE = (
    "TFJob ns/mnist: pods ask for {gpu} where the template asks for alpha.kubernetes.io/nvidia-gpu, which no node "
    "offers since Kubernetes 1.10: Worker (container tensorflow, limits 1). Write {gpu} in the template (or `tfop "
    "convert` the manifest) to silence this.")


@pytest.mark.parametrize("gpu", ["nvidia.com/gpu", "amd.com/gpu"])
def test_pods_ask_for_the_current_resource_with_the_accelerators_of_seed_003_and_a_warning(gpu: str) -> None:
    job = gpu_job(container(resources={"limits": {LEGACY: 1}}))
    config = ControllerConfig(gpu_resource=gpu, accelerators={gpu: SEED_003_ACCELERATOR})
    result = plan_of(job, [], [], config=config)
    assert [(c.kind, c.name) for c in result.create] == [(POD, name_of("Worker", 0)), (SERVICE, name_of("Worker", 0))]
    assert result.desired is not None
    pod = result.desired.body(POD, result.create[0].slot)
    [tensorflow] = pod["spec"]["containers"]
    assert tensorflow["resources"] == {"limits": {gpu: 1}}
    assert {"name": "LD_LIBRARY_PATH", "value": "/usr/lib/nvidia:/usr/lib/x86_64-linux-gnu"} in tensorflow["env"]
    assert pod["spec"]["volumes"] == [{"name": "lib", "hostPath": {"path": "/usr/lib/nvidia-384"}}]
    warning = ("Warning", "GPUResourceRenamed", RENAMED_MESSAGE.format(gpu=gpu))
    assert warning in [(e.type, e.reason, e.message) for e in result.events]
    assert job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {LEGACY: 1}}  # the job itself is the user's: tfop does not write it


@pytest.mark.parametrize(("limits", "waits"), [({LEGACY: 1}, StatusWait.NO),
                                               ({"nvidia.com/gpu": 1}, StatusWait.FOR_CREATES)])
def test_the_plan_that_creates_and_warns_does_not_hold_its_status_back(limits: dict[str, Any],
                                                                       waits: StatusWait) -> None:
    """A status held back for the plan that sees the creates drops this plan's events; the warning is this plan's
    alone (the next plan creates nothing), so its status is written with it."""
    result = plan_of(gpu_job(container(resources={"limits": limits})), [], [])
    assert result.create and result.status_waits is waits


def test_no_warning_when_nothing_is_created() -> None:
    job = gpu_job(container(resources={"limits": {LEGACY: 1}}))
    first = plan_of(job, [], [])
    assert first.status is not None
    job["status"] = first.status.to_json()
    again = plan_of(job, [make_pod("Worker", 0, "Pending")], [make_service("Worker", 0)])
    assert again.create == [] and all(e.reason != "GPUResourceRenamed" for e in again.events)


def test_the_jobs_backend_and_the_pod_group_ask_for_the_current_resource() -> None:
    job = gpu_job(container(resources={"limits": {LEGACY: 2}}))
    job["metadata"]["annotations"] = {"tfop.kubeflow.org/replica-backend": "jobs"}
    config = ControllerConfig(gang_scheduler="scheduler-plugins")
    result = plan(PlanContext(job, {}, NOW, config))
    creations = {c.kind: c for c in result.create}
    assert result.desired is not None and set(creations) >= {JOB, POD_GROUP}
    batch_job = result.desired.body(JOB, creations[JOB].slot)
    [tensorflow] = batch_job["spec"]["template"]["spec"]["containers"]
    assert tensorflow["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    pod_group = result.desired.body(POD_GROUP, None)
    assert pod_group["spec"]["minResources"] == {"nvidia.com/gpu": "2"}
    assert "GPUResourceRenamed" in [e.reason for e in result.events]


def test_both_names_with_different_amounts_fail_the_job_naming_the_field() -> None:
    job = gpu_job(container(resources={"limits": {LEGACY: 1, "nvidia.com/gpu": 2}}))
    result = plan_of(job, [], [])
    assert result.create == [] and result.status is not None
    failed = next(c for c in result.status.to_json()["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert failed["message"] == (
        "TFJob ns/mnist has an invalid spec: spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources.limits: "
        "asks for alpha.kubernetes.io/nvidia-gpu: 1 and nvidia.com/gpu: 2, which tfop takes as one resource; keep "
        "only nvidia.com/gpu.")
