"""GPU resource names: the seeds' `alpha.kubernetes.io/nvidia-gpu` becomes the resource GPUs are offered as today.

Kubernetes 1.10 dropped the alpha resource: the apiserver still accepts it in a pod (it is in the kubernetes.io
domain, so it is not checked as an extended resource), but no node offers it, so such a pod stays Pending for
good. Device plugins offer `nvidia.com/gpu` (or `amd.com/gpu`, ...), the operator's `gpuResource`. The rewrite is
applied to jobs converted from the older versions (the webhook, `tfop convert`) and, for v1 jobs written with the
old name, to the pods and PodGroups the planner makes, with a Warning event saying so.

Callers may rely on: the job given is never changed (a rewritten copy is returned); every container and init
container of every replica template is rewritten, in `limits` and `requests`; a container that names both
resources with the same amount keeps the current name only; with different amounts it is a problem naming the
field, and the current name's amount is kept.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tfop.api.errors import FieldError
from tfop.api.fields import items, mapping, mapping_at, text
from tfop.controller.plan.controller_config import DEFAULT_GPU_RESOURCE
from tfop.controller.plan.quantity import QuantityError, parse_quantity

LEGACY_GPU_RESOURCE = "alpha.kubernetes.io/nvidia-gpu"
REASON_GPU_RESOURCE_RENAMED = "GPUResourceRenamed"

# An extended resource name as the apiserver accepts one: a DNS subdomain prefix, '/', a qualified name part.
_EXTENDED_NAME = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_CONTAINER_LISTS = ("containers", "initContainers")
_RESOURCE_LISTS = ("limits", "requests")


@dataclass(frozen=True)
class GpuRename:
    """One resource list whose legacy GPU entry was renamed."""

    replica_type: str
    container: str
    resource_list: str  # limits or requests
    quantity: str


@dataclass(frozen=True)
class GpuRewrite:
    job: dict[str, Any]  # the job given when nothing was renamed, else a rewritten copy
    renamed: tuple[GpuRename, ...] = ()
    problems: tuple[FieldError, ...] = field(default=())


def gpu_resource_problem(name: object) -> str | None:
    """Why `name` cannot be the resource GPUs are requested as, or None when it can."""
    if not isinstance(name, str) or not _EXTENDED_NAME.match(name) or len(name) > 253:
        return (f"{name!r} is not an extended resource name: a domain, '/' and a name, such as "
                f"{DEFAULT_GPU_RESOURCE} or amd.com/gpu")
    domain = name.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return (f"{name!r} is in the kubernetes.io domain, which no device plugin offers; use e.g. "
                f"{DEFAULT_GPU_RESOURCE}")
    return None


def rewrite_legacy_gpu(job: dict[str, Any], gpu_resource: str) -> GpuRewrite:
    """`job` with every legacy GPU request named `gpu_resource` instead."""
    replicas = mapping_at(job, "spec", "tfReplicaSpecs")
    if not any(_names_legacy(mapping_at(replica, "template", "spec")) for replica in replicas.values()):
        return GpuRewrite(job)
    out = copy.deepcopy(job)
    renamed: list[GpuRename] = []
    problems: list[FieldError] = []
    for replica_type, replica in mapping_at(out, "spec", "tfReplicaSpecs").items():
        pod_spec = mapping_at(replica, "template", "spec")
        path = f"spec.tfReplicaSpecs.{replica_type}.template.spec"
        for list_name in _CONTAINER_LISTS:
            for position, container in enumerate(items(pod_spec.get(list_name))):
                resources = mapping(mapping(container).get("resources"))
                for resource_list in _RESOURCE_LISTS:
                    where = f"{path}.{list_name}[{position}].resources.{resource_list}"
                    quantity, problem = _rename(resources.get(resource_list), gpu_resource, where)
                    if quantity is not None:
                        renamed.append(GpuRename(replica_type, text(container.get("name")) or f"#{position}",
                                                 resource_list, quantity))
                    if problem:
                        problems.append(problem)
    return GpuRewrite(out, tuple(renamed), tuple(problems))


def describe_renames(renamed: Sequence[GpuRename]) -> str:
    """e.g. `Worker (container tensorflow, limits 1)`, joined for an event's message."""
    return "; ".join(f"{r.replica_type} (container {r.container}, {r.resource_list} {r.quantity})" for r in renamed)


def renamed_message(job_ref: str, renamed: Sequence[GpuRename], gpu_resource: str) -> str:
    return (f"{job_ref}: pods ask for {gpu_resource} where the template asks for {LEGACY_GPU_RESOURCE}, which no "
            f"node offers since Kubernetes 1.10: {describe_renames(renamed)}. Write {gpu_resource} "
            "in the template (or `tfop convert` the manifest) to silence this.")


def _names_legacy(pod_spec: dict[str, Any]) -> bool:
    return any(LEGACY_GPU_RESOURCE in mapping(mapping(mapping(container).get("resources")).get(resource_list))
               for list_name in _CONTAINER_LISTS for container in items(pod_spec.get(list_name))
               for resource_list in _RESOURCE_LISTS)


def _rename(resource_list: object, gpu_resource: str, where: str) -> tuple[str | None, FieldError | None]:
    """Renames the legacy entry of one resource list in place: (its quantity if there was one, a problem)."""
    if not isinstance(resource_list, dict) or LEGACY_GPU_RESOURCE not in resource_list:
        return None, None
    legacy = resource_list.pop(LEGACY_GPU_RESOURCE)
    if gpu_resource not in resource_list:
        resource_list[gpu_resource] = legacy
        return str(legacy), None
    current = resource_list[gpu_resource]
    if _same_amount(legacy, current):
        return str(legacy), None
    return str(legacy), FieldError(where, f"asks for {LEGACY_GPU_RESOURCE}: {legacy} and {gpu_resource}: {current}, "
                                          f"which tfop takes as one resource; keep only {gpu_resource}")


def _same_amount(left: object, right: object) -> bool:
    try:
        return parse_quantity(left) == parse_quantity(right)
    except QuantityError:
        return str(left) == str(right)
