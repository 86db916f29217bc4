"""Validation of a TFJob, for what the CRD cannot express or what may slip past it.

The planner's parse step (controller/plan/job/parse.py) runs this on every defaulted job: an invalid job gets a
Failed condition naming the fields, never a crash. Every field the typed job holds is checked here, so the parse
builds it from a job that passed without checking again.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from tfop.api.constants import (
    CHIEF_REPLICA_TYPES,
    CLEAN_POD_POLICIES,
    DEFAULT_CONTAINER_NAME,
    MAX_CHILD_NAME_LENGTH,
    MAX_REPLICAS,
    REPLICA_PS,
    REPLICA_TYPES,
    REPLICA_WORKER,
    RESTART_POLICIES,
    SUCCESS_POLICIES,
    ReplicaType,
)
from tfop.api.defaults import canonical_replica_type
from tfop.api.errors import FieldError
from tfop.api.fields import integer, mapping
from tfop.api.runtime_id import RUNTIME_ID_LENGTH, child_name

_DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_MAX_PORT = 65535


def validate(job: object) -> list[FieldError]:
    """Every problem found, in a stable order; empty for a valid job."""
    errors: list[FieldError] = []
    if not isinstance(job, dict):
        return [FieldError("<root>", "must be an object")]
    metadata = _object(job, "metadata", "metadata", errors, required=True)
    if metadata is not None:
        for key in ("name", "namespace", "uid"):
            _string(metadata, key, f"metadata.{key}", errors, required=True, non_empty=True)
    spec = _object(job, "spec", "spec", errors, required=True)
    name = metadata.get("name") if metadata is not None else None
    job_name = name if isinstance(name, str) and name else None
    longest_child = _validate_replica_specs(spec, job_name, errors) if spec is not None else None
    if job_name is not None:
        _validate_job_name(job_name, longest_child, errors)
    if spec is None:
        return errors
    _validate_run_policy(spec, errors)
    success_policy = _string(spec, "successPolicy", "spec.successPolicy", errors)
    if success_policy is not None and success_policy not in SUCCESS_POLICIES:
        errors.append(FieldError("spec.successPolicy", f"must be one of {_quoted(SUCCESS_POLICIES)}"))
    _boolean(spec, "enableDynamicWorker", "spec.enableDynamicWorker", errors)
    _validate_elastic_policy(spec, errors)
    return errors


def _validate_replica_specs(spec: dict[str, Any], job_name: str | None, errors: list[FieldError]) -> str | None:
    """Returns the longest child name the replicas need, for the job name check."""
    replica_specs = _object(spec, "tfReplicaSpecs", "spec.tfReplicaSpecs", errors, required=True)
    if replica_specs is None:
        return None
    if not replica_specs:
        errors.append(FieldError("spec.tfReplicaSpecs", "must declare at least one replica type"))
        return None
    keys_by_type: dict[ReplicaType, list[str]] = defaultdict(list)
    total_replicas = 0
    longest_child: str | None = None
    for key, replica in replica_specs.items():
        path = f"spec.tfReplicaSpecs[{key}]"
        replica_type = canonical_replica_type(key)
        if replica_type is None:
            errors.append(FieldError(path, f"unknown replica type {key!r}; must be one of {', '.join(REPLICA_TYPES)}"))
        else:
            keys_by_type[replica_type].append(key)
        if not isinstance(replica, dict):
            errors.append(FieldError(path, "must be an object"))
            continue
        replicas = _count(replica, "replicas", f"{path}.replicas", errors)
        total_replicas += 1 if replicas is None else replicas  # absent means the default, 1
        policy = _string(replica, "restartPolicy", f"{path}.restartPolicy", errors)
        if policy is not None and policy not in RESTART_POLICIES:
            errors.append(FieldError(f"{path}.restartPolicy", f"must be one of {_quoted(RESTART_POLICIES)}"))
        _validate_template(replica, path, needs_tensorflow=replica_type != REPLICA_PS, errors=errors)
        if replica_type in CHIEF_REPLICA_TYPES and replicas is not None and replicas > 1:
            errors.append(FieldError(f"{path}.replicas", f"must be 0 or 1: a job has at most one {replica_type}"))
        if job_name and replica_type is not None:
            child = child_name(job_name, replica_type, "a" * RUNTIME_ID_LENGTH, max((replicas or 1) - 1, 0))
            longest_child = max(longest_child or "", child, key=len)
    for replica_type, keys in keys_by_type.items():
        if len(keys) > 1:
            errors.append(FieldError(f"spec.tfReplicaSpecs[{keys[1]}]",
                                     f"names replica type {replica_type} again (also given as {keys[0]!r})"))
    chiefs = [key for replica_type in CHIEF_REPLICA_TYPES for key in keys_by_type.get(replica_type, [])]
    if len(chiefs) > 1:
        errors.append(FieldError("spec.tfReplicaSpecs",
                                 f"may have a Chief or a Master, not both ({', '.join(chiefs)})"))
    if total_replicas > MAX_REPLICAS:  # the CRD refuses these; a job stored under an older CRD may not be
        errors.append(FieldError("spec.tfReplicaSpecs",
                                 f"asks for {total_replicas} replicas in all, more than {MAX_REPLICAS}: every pod's "
                                 "TF_CONFIG lists every replica and must fit in a pod object"))
    if total_replicas == 0 and not any(error.path.startswith("spec.tfReplicaSpecs") for error in errors):
        errors.append(FieldError("spec.tfReplicaSpecs", "must ask for at least one replica in total"))
    return longest_child


def _validate_template(replica: dict[str, Any], path: str, *, needs_tensorflow: bool,
                       errors: list[FieldError]) -> None:
    template = _object(replica, "template", f"{path}.template", errors, required=True)
    if template is None:
        return
    template_metadata = _object(template, "metadata", f"{path}.template.metadata", errors)
    if template_metadata is not None:
        for key in ("labels", "annotations"):
            _string_map(template_metadata, key, f"{path}.template.metadata.{key}", errors)
    pod_spec = _object(template, "spec", f"{path}.template.spec", errors, required=True)
    if pod_spec is None:
        return
    containers_path = f"{path}.template.spec.containers"
    containers = _array(pod_spec, "containers", containers_path, errors, required=True)
    if containers is None:
        return
    if not containers:
        errors.append(FieldError(containers_path, "must list at least one container"))
        return
    has_tensorflow = False
    for position, container in enumerate(containers):
        container_path = f"{containers_path}[{position}]"
        if not isinstance(container, dict):
            errors.append(FieldError(container_path, "must be an object"))
            continue
        name = _string(container, "name", f"{container_path}.name", errors, required=True, non_empty=True)
        if name == DEFAULT_CONTAINER_NAME:
            has_tensorflow = True
            _validate_container_env(container, container_path, errors)
            _validate_container_ports(container, container_path, errors)
    if needs_tensorflow and not has_tensorflow:
        errors.append(FieldError(containers_path, f"must include a container named {DEFAULT_CONTAINER_NAME!r}"))


def _validate_container_env(container: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    env = _array(container, "env", f"{path}.env", errors)
    for position, variable in enumerate(env or []):
        if not isinstance(variable, dict):
            errors.append(FieldError(f"{path}.env[{position}]", "must be an object"))
        else:
            _string(variable, "name", f"{path}.env[{position}].name", errors, required=True, non_empty=True)


def _validate_container_ports(container: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    ports = _array(container, "ports", f"{path}.ports", errors)
    seen_names: set[str] = set()
    for position, port in enumerate(ports or []):
        port_path = f"{path}.ports[{position}]"
        if not isinstance(port, dict):
            errors.append(FieldError(port_path, "must be an object"))
            continue
        number = _count(port, "containerPort", f"{port_path}.containerPort", errors, required=True)
        if number is not None and not 1 <= number <= _MAX_PORT:
            errors.append(FieldError(f"{port_path}.containerPort", f"must be between 1 and {_MAX_PORT}"))
        name = _string(port, "name", f"{port_path}.name", errors)
        if name is not None and name in seen_names:
            errors.append(FieldError(f"{port_path}.name", f"duplicates port name {name!r}"))
        if name is not None:
            seen_names.add(name)
        _string(port, "protocol", f"{port_path}.protocol", errors)


def _validate_job_name(job_name: str, longest_child: str | None, errors: list[FieldError]) -> None:
    """Children are Services too: their names must be DNS-1035 labels, so the job's name must be one and leave
    room for the longest `-{replica}-{runtimeId}-{index}` suffix."""
    if not _DNS_1035_LABEL.match(job_name):
        errors.append(FieldError("metadata.name", f"{job_name!r} must be a DNS-1035 label (lowercase letters, "
                                 "digits and '-', starting with a letter and ending with a letter or digit) "
                                 "because it names the job's services"))
    elif longest_child is not None and len(longest_child) > MAX_CHILD_NAME_LENGTH:
        errors.append(FieldError("metadata.name", f"is too long: child names such as {longest_child!r} must be at "
                                 f"most {MAX_CHILD_NAME_LENGTH} characters"))


def _validate_run_policy(spec: dict[str, Any], errors: list[FieldError]) -> None:
    run_policy = _object(spec, "runPolicy", "spec.runPolicy", errors)
    if run_policy is None:
        return
    clean_pod_policy = _string(run_policy, "cleanPodPolicy", "spec.runPolicy.cleanPodPolicy", errors)
    if clean_pod_policy is not None and clean_pod_policy not in CLEAN_POD_POLICIES:
        errors.append(FieldError("spec.runPolicy.cleanPodPolicy", f"must be one of {_quoted(CLEAN_POD_POLICIES)}"))
    _count(run_policy, "ttlSecondsAfterFinished", "spec.runPolicy.ttlSecondsAfterFinished", errors)
    _count(run_policy, "backoffLimit", "spec.runPolicy.backoffLimit", errors)
    deadline = _count(run_policy, "activeDeadlineSeconds", "spec.runPolicy.activeDeadlineSeconds", errors)
    if deadline == 0:
        errors.append(FieldError("spec.runPolicy.activeDeadlineSeconds", "must be at least 1"))
    _boolean(run_policy, "suspend", "spec.runPolicy.suspend", errors)
    scheduling = _object(run_policy, "schedulingPolicy", "spec.runPolicy.schedulingPolicy", errors)
    if scheduling is not None:
        path = "spec.runPolicy.schedulingPolicy"
        _count(scheduling, "minAvailable", f"{path}.minAvailable", errors)
        _count(scheduling, "scheduleTimeoutSeconds", f"{path}.scheduleTimeoutSeconds", errors)
        _string(scheduling, "queue", f"{path}.queue", errors)
        _string(scheduling, "priorityClass", f"{path}.priorityClass", errors)
        _object(scheduling, "minResources", f"{path}.minResources", errors)


def _validate_elastic_policy(spec: dict[str, Any], errors: list[FieldError]) -> None:
    """What the CRD's rules check of spec.elasticPolicy, in their words, for jobs that skipped them (an older
    version's, a cluster whose CRD predates the field). The metrics and behavior are the HPA's business: the
    apiserver checks them when tfop creates it, and a refusal is told as the job's event."""
    path = "spec.elasticPolicy"
    policy = _object(spec, "elasticPolicy", path, errors)
    if policy is None:
        return
    low = _count(policy, "minReplicas", f"{path}.minReplicas", errors)
    high = _count(policy, "maxReplicas", f"{path}.maxReplicas", errors, required=True)
    if low == 0:
        errors.append(FieldError(f"{path}.minReplicas", "must be at least 1"))
    if high is not None and not 1 <= high <= MAX_REPLICAS:
        errors.append(FieldError(f"{path}.maxReplicas", f"must be between 1 and {MAX_REPLICAS}"))
    low = 1 if low is None else low  # the default
    if high is not None and low > high:
        errors.append(FieldError(f"{path}.minReplicas", f"must not be greater than {path}.maxReplicas"))
    for position, metric in enumerate(_array(policy, "metrics", f"{path}.metrics", errors) or []):
        if not isinstance(metric, dict):
            errors.append(FieldError(f"{path}.metrics[{position}]", "must be an object"))
        else:
            _string(metric, "type", f"{path}.metrics[{position}].type", errors, required=True, non_empty=True)
    _object(policy, "behavior", f"{path}.behavior", errors)
    replica_specs = mapping(spec.get("tfReplicaSpecs"))
    workers = [key for key in replica_specs if canonical_replica_type(key) == REPLICA_WORKER]
    if not workers:
        errors.append(FieldError("spec.tfReplicaSpecs", f"{path} needs a Worker replica spec: it bounds the number "
                                 "of workers"))
        return
    replicas = integer(mapping(replica_specs[workers[0]]).get("replicas"))
    replicas = 1 if replicas is None else replicas  # the default
    if high is not None and low <= high and not low <= replicas <= high:
        errors.append(FieldError(f"spec.tfReplicaSpecs[{workers[0]}].replicas",
                                 f"{replicas} is not within {path}.minReplicas and maxReplicas ({low} to {high})"))


# Typed field checks. Each returns the value when it has the right type (None when absent or wrong) and records
# an error when it is wrong; JSON null counts as absent, as it does for the apiserver.

def _object(parent: dict[str, Any], key: str, path: str, errors: list[FieldError], *,
            required: bool = False) -> dict[str, Any] | None:
    value = _present(parent, key, path, errors, required)
    if value is None:
        return None
    if not isinstance(value, dict):
        errors.append(FieldError(path, "must be an object"))
        return None
    return value


def _array(parent: dict[str, Any], key: str, path: str, errors: list[FieldError], *,
           required: bool = False) -> list[Any] | None:
    value = _present(parent, key, path, errors, required)
    if value is None:
        return None
    if not isinstance(value, list):
        errors.append(FieldError(path, "must be a list"))
        return None
    return value


def _string(parent: dict[str, Any], key: str, path: str, errors: list[FieldError], *, required: bool = False,
            non_empty: bool = False) -> str | None:
    value = _present(parent, key, path, errors, required)
    if value is None:
        return None
    if not isinstance(value, str):
        errors.append(FieldError(path, "must be a string"))
        return None
    if non_empty and not value:
        errors.append(FieldError(path, "must not be empty"))
        return None
    return value


def _count(parent: dict[str, Any], key: str, path: str, errors: list[FieldError], *,
           required: bool = False) -> int | None:
    """A non-negative integer."""
    value = _present(parent, key, path, errors, required)
    if value is None:
        return None
    number = integer(value)
    if number is None:
        errors.append(FieldError(path, f"must be an integer, not {value!r}"))
        return None
    if number < 0:
        errors.append(FieldError(path, "must not be negative"))
        return None
    return number


def _boolean(parent: dict[str, Any], key: str, path: str, errors: list[FieldError]) -> None:
    value = parent.get(key)
    if value is not None and not isinstance(value, bool):
        errors.append(FieldError(path, "must be true or false"))


def _string_map(parent: dict[str, Any], key: str, path: str, errors: list[FieldError]) -> None:
    value = _object(parent, key, path, errors)
    if value is not None and not all(isinstance(entry, str) for entry in value.values()):
        errors.append(FieldError(path, "must map strings to strings"))


def _present(parent: dict[str, Any], key: str, path: str, errors: list[FieldError], required: bool) -> Any:
    value = parent.get(key)
    if value is None and required:
        errors.append(FieldError(path, "is required"))
    return value


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(repr(value) for value in values)
