"""What a pod needs on nodes whose accelerator drivers live on the host (the seeds' controller config): for every
tensorflow container that asks for an accelerator resource, the configured environment variables and hostPath
mounts are added, so users write `nvidia.com/gpu: 1` and nothing else.

What the user wrote wins: a variable, volume or mount path the template already has is left alone.
"""

from __future__ import annotations

from typing import Any

from tfop.api.constants import DEFAULT_CONTAINER_NAME
from tfop.api.fields import items, mapping
from tfop.controller.plan.controller_config import Accelerator, Accelerators


def apply_accelerators(pod_spec: dict[str, Any], accelerators: Accelerators) -> None:
    """Changes `pod_spec` (a copy the caller owns) in place."""
    if not accelerators:
        return
    for container in items(pod_spec.get("containers")):
        if not isinstance(container, dict) or container.get("name") != DEFAULT_CONTAINER_NAME:
            continue
        for resource in _requested(container):
            accelerator = accelerators.get(resource)
            if accelerator is not None:
                _add(pod_spec, container, accelerator)


def _requested(container: dict[str, Any]) -> list[str]:
    resources = mapping(container.get("resources"))
    names = {**mapping(resources.get("requests")), **mapping(resources.get("limits"))}
    return sorted(name for name, quantity in names.items() if str(quantity) not in ("0", ""))


def _add(pod_spec: dict[str, Any], container: dict[str, Any], accelerator: Accelerator) -> None:
    env = [v for v in items(container.get("env")) if isinstance(v, dict)]
    env_names = {v.get("name") for v in env}
    env += [{"name": name, "value": value} for name, value in accelerator.env if name not in env_names]
    if env:
        container["env"] = env
    volumes = [v for v in items(pod_spec.get("volumes")) if isinstance(v, dict)]
    mounts = [m for m in items(container.get("volumeMounts")) if isinstance(m, dict)]
    volume_names = {v.get("name") for v in volumes}
    mount_paths = {m.get("mountPath") for m in mounts}
    for volume in accelerator.volumes:
        if volume.name in volume_names or volume.mount_path in mount_paths:
            continue
        volumes.append({"name": volume.name, "hostPath": {"path": volume.host_path}})
        mounts.append({"name": volume.name, "mountPath": volume.mount_path})
    if volumes:
        pod_spec["volumes"] = volumes
    if mounts:
        container["volumeMounts"] = mounts
