"""Defaulting of a TFJob: what the operator assumes for every field the user left out.

Defaulting never fails and never mutates its input: whatever it cannot make sense of it leaves in place for
validation to report.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from tfop.api.constants import (
    CLEAN_POD_POLICY_RUNNING,
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    REPLICA_TYPES,
    RESTART_POLICY_EXIT_CODE,
    ReplicaType,
)
from tfop.api.fields import items, mapping, mapping_at

_REPLICA_TYPES_BY_LOWER = {replica_type.lower(): replica_type for replica_type in REPLICA_TYPES}


def canonical_replica_type(name: object) -> ReplicaType | None:
    """`worker`, `WORKER` -> `Worker`; the seeds wrote MASTER/WORKER/PS. None for an unknown type."""
    if not isinstance(name, str):
        return None
    return _REPLICA_TYPES_BY_LOWER.get(name.lower())


def apply_defaults(job: dict[str, Any]) -> dict[str, Any]:
    """`job` with its spec defaulted: a new spec, and the rest (metadata, status) the input's own, which defaulting
    never writes; copying a running job's status each pass cost more than the spec's defaults."""
    defaulted = dict(job)
    spec = defaulted.get("spec")
    if not isinstance(spec, dict):
        return defaulted
    spec = defaulted["spec"] = copy.deepcopy(spec)
    replica_specs = spec.get("tfReplicaSpecs")
    if isinstance(replica_specs, dict):
        spec["tfReplicaSpecs"] = _with_canonical_keys(replica_specs)
        for replica in spec["tfReplicaSpecs"].values():
            if isinstance(replica, dict):
                _default_replica(replica)
    if spec.get("runPolicy") is None:
        spec["runPolicy"] = {}
    run_policy = spec["runPolicy"]
    if isinstance(run_policy, dict) and run_policy.get("cleanPodPolicy") is None:
        run_policy["cleanPodPolicy"] = CLEAN_POD_POLICY_RUNNING
    return defaulted


def _with_canonical_keys(replica_specs: dict[str, Any]) -> dict[str, Any]:
    """Renames keys to their canonical spelling, except where two keys name the same type (`Worker`, `worker`):
    merging them would silently drop one, so both stay for validation to reject."""
    canonical_counts = Counter(canonical_replica_type(key) for key in replica_specs)
    renamed: dict[str, Any] = {}
    for key, replica in replica_specs.items():
        canonical = canonical_replica_type(key)
        unique = canonical is not None and canonical_counts[canonical] == 1
        renamed[canonical if unique and canonical is not None else key] = replica
    return renamed


def _default_replica(replica: dict[str, Any]) -> None:
    if replica.get("replicas") is None:
        replica["replicas"] = 1
    if replica.get("restartPolicy") is None:
        # The seeds put the policy on the pod template; honour it rather than surprise their users.
        from_template = mapping_at(replica, "template", "spec").get("restartPolicy")
        has_template_policy = isinstance(from_template, str) and from_template
        replica["restartPolicy"] = from_template if has_template_policy else RESTART_POLICY_EXIT_CODE
    for container in items(mapping_at(replica, "template", "spec").get("containers")):
        if isinstance(container, dict) and container.get("name") == DEFAULT_CONTAINER_NAME:
            _default_port(container)


def _default_port(container: dict[str, Any]) -> None:
    if container.get("ports") is None:
        container["ports"] = []
    ports = container["ports"]
    if not isinstance(ports, list):
        return
    # A port already named for TensorFlow, or already on TensorFlow's default number under another name, is the
    # one TF_CONFIG uses: adding ours next to it would give the pod and its Service the same number twice.
    if not any(mapping(port).get("name") == DEFAULT_PORT_NAME or mapping(port).get("containerPort") == DEFAULT_PORT
               for port in ports):
        ports.append({"name": DEFAULT_PORT_NAME, "containerPort": DEFAULT_PORT})
