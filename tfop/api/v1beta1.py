"""kubeflow.org/v1beta1 <-> v1: the seeds' MASTER/WORKER/PS keys are v1's too; the run policy sat on the spec,
and the status had no restart counts, runtime id or summary fields."""

from __future__ import annotations

import copy
from typing import Any

from tfop.api.errors import FieldError
from tfop.api.fields import mapping
from tfop.api.legacy import V1BETA1, Converted, finish, restore, start

_BETA_RUN_POLICY = ("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit")
_BETA_SPEC_KEYS = {"tfReplicaSpecs", *_BETA_RUN_POLICY}
_BETA_REPLICA_KEYS = {"replicas", "template", "restartPolicy"}
_BETA_STATUS_KEYS = ("conditions", "replicaStatuses", "startTime", "completionTime", "lastReconcileTime")
_BETA_REPLICA_STATUS_KEYS = ("active", "succeeded", "failed")


def from_v1(obj: dict[str, Any]) -> dict[str, Any]:
    out, spec, kept = start(obj, V1BETA1)
    run_policy = dict(mapping(spec.pop("runPolicy", None)))
    for key in _BETA_RUN_POLICY:
        if key in run_policy:
            spec[key] = run_policy.pop(key)
    if run_policy:
        kept["runPolicy"] = run_policy
    for key in [key for key in spec if key not in _BETA_SPEC_KEYS]:
        kept[key] = spec.pop(key)  # successPolicy, enableDynamicWorker, ...
    replica_fields: dict[str, Any] = {}
    for key, replica in mapping(spec.get("tfReplicaSpecs")).items():
        extra = {name: replica.pop(name) for name in list(mapping(replica)) if name not in _BETA_REPLICA_KEYS}
        if extra:
            replica_fields[key] = extra
    if replica_fields:
        kept["replicaFields"] = replica_fields
    status = obj.get("status")
    if isinstance(status, dict):
        beta_status = {key: copy.deepcopy(status[key]) for key in _BETA_STATUS_KEYS if key in status}
        if "replicaStatuses" in beta_status:
            beta_status["replicaStatuses"] = {
                key: {name: value for name, value in mapping(counts).items() if name in _BETA_REPLICA_STATUS_KEYS}
                for key, counts in mapping(beta_status["replicaStatuses"]).items()}
        if beta_status != status:
            kept["status"] = copy.deepcopy(status)
        out["status"] = beta_status
    return finish(out, kept)


def to_v1(obj: dict[str, Any]) -> Converted:
    out, spec, kept = restore(obj)
    problems = [FieldError(f"spec.{key}", "is not a v1beta1 TFJob field")
                for key in sorted(set(spec) - _BETA_SPEC_KEYS - set(kept))]
    run_policy = {key: spec.pop(key) for key in _BETA_RUN_POLICY if key in spec}
    run_policy.update(mapping(kept.pop("runPolicy", None)))
    replica_fields = mapping(kept.pop("replicaFields", None))
    for key, replica in mapping(spec.get("tfReplicaSpecs")).items():
        if isinstance(replica, dict):
            unknown = sorted(set(replica) - _BETA_REPLICA_KEYS - set(mapping(replica_fields.get(key))))
            problems.extend(FieldError(f"spec.tfReplicaSpecs.{key}.{name}", "is not a v1beta1 replica field")
                            for name in unknown)
            replica.update(copy.deepcopy(mapping(replica_fields.get(key))))
    new_spec: dict[str, Any] = {}
    for key, value in spec.items():
        new_spec[key] = value
        if key == "tfReplicaSpecs" and run_policy:
            new_spec["runPolicy"] = run_policy
    if run_policy and "runPolicy" not in new_spec:
        new_spec["runPolicy"] = run_policy
    stored_status = kept.pop("status", None)
    new_spec.update(kept)
    out["spec"] = new_spec
    if isinstance(stored_status, dict):
        out["status"] = stored_status
    return Converted(out, problems)

