"""kubeflow.org/v1alpha1 (and tensorflow.org/v1alpha1 TfJob) <-> v1: a list of replica specs typed
MASTER/WORKER/PS with tfPort and isDefaultPS, tfImage for the default PS server, terminationPolicy.chief and the
RuntimeId on the spec; a status of phase, state and per-state pod counts per replica type."""

from __future__ import annotations

import copy
from typing import Any

from tfop.api.constants import (
    API_VERSION,
    CHIEF_REPLICA_TYPES,
    KIND,
    REPLICA_CHIEF,
    REPLICA_MASTER,
    REPLICA_PS,
    REPLICA_WORKER,
)
from tfop.api.defaults import canonical_replica_type
from tfop.api.errors import FieldError
from tfop.api.fields import integer, items, mapping, text
from tfop.api.legacy import (
    TF_IMAGE_ANNOTATION,
    V1ALPHA1,
    Converted,
    finish,
    named_tf_port,
    restore,
    set_tf_port,
    start,
    tensorflow_container,
)
from tfop.api.runtime_id import runtime_id

# v1alpha1 spelled replica types in upper case and had no Chief or Evaluator.
_ALPHA_TYPES = {"MASTER": REPLICA_MASTER, "WORKER": REPLICA_WORKER, "PS": REPLICA_PS}
_ALPHA_NAMES = {v1: alpha for alpha, v1 in _ALPHA_TYPES.items()}
_ALPHA_REPLICA_KEYS = {"replicas", "template", "tfPort", "tfReplicaType", "isDefaultPS", "IsDefaultPS"}
_ALPHA_SPEC_KEYS = {"RuntimeId", "replicaSpecs", "tfImage", "terminationPolicy"}
# Pod states v1alpha1 counted per replica type, from v1's counters.
_ALPHA_COUNTS = (("Running", "active"), ("Succeeded", "succeeded"), ("Failed", "failed"))


def from_v1(obj: dict[str, Any]) -> dict[str, Any]:
    out, spec, kept = start(obj, V1ALPHA1)
    annotations = mapping(mapping(out.get("metadata")).get("annotations"))
    alpha: dict[str, Any] = {}
    uid = text(mapping(obj.get("metadata")).get("uid"))
    if uid:
        alpha["RuntimeId"] = runtime_id(uid)
    replicas = mapping(spec.pop("tfReplicaSpecs", None))
    replica_list: list[dict[str, Any]] = []
    kept_replicas: dict[str, Any] = {}
    replica_fields: dict[str, Any] = {}
    spellings: dict[str, str] = {}
    chief_type: str | None = None
    for key, replica in replicas.items():
        replica_type = canonical_replica_type(key)
        alpha_type = _ALPHA_NAMES.get(REPLICA_MASTER if replica_type == REPLICA_CHIEF else replica_type or "")
        if alpha_type is None or not isinstance(replica, dict) or alpha_type in spellings:
            kept_replicas[key] = replica  # an Evaluator (or anything else v1alpha1 has no type for)
            continue
        spellings[alpha_type] = key
        if replica_type in CHIEF_REPLICA_TYPES:
            chief_type = alpha_type
        entry: dict[str, Any] = {"tfReplicaType": alpha_type}
        extra = {}
        for name, value in replica.items():
            if name in ("replicas", "template"):
                entry[name] = value
            else:
                extra[name] = value  # restartPolicy lives on the template in v1alpha1
        port = named_tf_port(mapping(entry.get("template")))
        if port is not None:
            entry["tfPort"] = port
        if replica_type == REPLICA_PS and tensorflow_container(mapping(entry.get("template"))) is None:
            entry["isDefaultPS"] = True
        if extra:
            replica_fields[alpha_type] = extra
        replica_list.append(entry)
    # The apiserver keeps v1's map sorted by key; v1alpha1 users listed MASTER, WORKER, PS.
    alpha["replicaSpecs"] = sorted(replica_list, key=lambda entry: list(_ALPHA_TYPES).index(entry["tfReplicaType"]))
    renamed = {alpha_type: key for alpha_type, key in spellings.items() if key != _ALPHA_TYPES[alpha_type]}
    if renamed:
        kept["keys"] = renamed
    if kept_replicas:
        kept["replicas"] = kept_replicas
    if replica_fields:
        kept["replicaFields"] = replica_fields
    image = annotations.pop(TF_IMAGE_ANNOTATION, None)
    if image is not None:
        alpha["tfImage"] = image
    has_worker = any(entry["tfReplicaType"] == "WORKER" for entry in replica_list)
    if chief_type is not None or has_worker:
        alpha["terminationPolicy"] = {"chief": {"replicaName": chief_type or "WORKER", "replicaIndex": 0}}
    if spec.get("runPolicy") == {}:
        del spec["runPolicy"]  # the CRD's default, which the apiserver fills in again: nothing to carry
    kept.update(spec)  # runPolicy, successPolicy, enableDynamicWorker: nothing in v1alpha1 holds them
    out["spec"] = alpha
    status = obj.get("status")
    if isinstance(status, dict):
        out["status"] = _alpha_status(status, spellings)
        kept["status"] = copy.deepcopy(status)
    return finish(out, kept)


_ALPHA_STATES = ("Running", "Succeeded", "Failed", "Unknown")


def _alpha_status(status: dict[str, Any], spellings: dict[str, str]) -> dict[str, Any]:
    alpha: dict[str, Any] = {key: status[key] for key in ("phase", "state", "reason") if key in status}
    if "state" in alpha and alpha["state"] not in _ALPHA_STATES:
        # v1alpha1 knew only Running, Succeeded, Failed and Unknown: v1's Created, Pending, Restarting and
        # Suspended are all "not finished" there. The v1 status itself travels whole in the annotation.
        alpha["state"] = "Running"
    statuses = mapping(status.get("replicaStatuses"))
    replica_statuses = []
    for alpha_type, key in sorted(spellings.items(), key=lambda item: list(_ALPHA_TYPES).index(item[0])):
        counts = mapping(statuses.get(key) or statuses.get(canonical_replica_type(key) or ""))
        states = {state: integer(counts.get(name)) or 0 for state, name in _ALPHA_COUNTS}
        if states["Failed"]:
            state = "Failed"
        elif states["Running"]:
            state = "Running"
        elif states["Succeeded"]:
            state = "Succeeded"
        else:
            state = "Unknown"
        replica_statuses.append({"tf_replica_type": alpha_type, "state": state,
                                 "ReplicasStates": {name: count for name, count in states.items() if count}})
    alpha["replicaStatuses"] = replica_statuses
    return alpha


def to_v1(obj: dict[str, Any]) -> Converted:
    out, spec, kept = restore(obj)
    out["apiVersion"], out["kind"] = API_VERSION, KIND
    metadata = out.setdefault("metadata", {})
    problems = [FieldError(f"spec.{key}", "is not a v1alpha1 TFJob field")
                for key in sorted(set(spec) - _ALPHA_SPEC_KEYS)]
    uid = text(metadata.get("uid"))
    given_id = spec.get("RuntimeId")
    if given_id not in (None, "") and (uid is None or given_id != runtime_id(uid)):
        problems.append(FieldError("spec.RuntimeId", f"{given_id!r} cannot be kept: tfop derives the runtime id from "
                                                  "metadata.uid (status.runtimeId); leave it out"))
    spellings = mapping(kept.pop("keys", None))
    kept_replicas = mapping(kept.pop("replicas", None))
    replica_fields = mapping(kept.pop("replicaFields", None))
    replicas: dict[str, Any] = {}
    for position, entry in enumerate(items(spec.get("replicaSpecs"))):
        path = f"spec.replicaSpecs[{position}]"
        if not isinstance(entry, dict):
            problems.append(FieldError(path, "must be an object"))
            continue
        problems.extend(FieldError(f"{path}.{name}", "is not a v1alpha1 replica field")
                        for name in sorted(set(entry) - _ALPHA_REPLICA_KEYS))
        alpha_type = entry.get("tfReplicaType") or "MASTER"  # v1alpha1's default
        replica_type = _ALPHA_TYPES.get(str(alpha_type).upper()) if isinstance(alpha_type, str) else None
        if replica_type is None:
            problems.append(FieldError(f"{path}.tfReplicaType", f"{alpha_type!r} must be MASTER, WORKER or PS"))
            continue
        alpha_type = _ALPHA_NAMES[replica_type]
        key = str(spellings.get(alpha_type, replica_type))
        if key in replicas:
            problems.append(FieldError(f"{path}.tfReplicaType", f"{alpha_type} is listed twice; v1 holds one spec "
                                                             "per replica type"))
            continue
        replica: dict[str, Any] = {}
        if "replicas" in entry:
            replica["replicas"] = entry["replicas"]
        template = copy.deepcopy(entry.get("template"))
        default_ps = entry.get("isDefaultPS", entry.get("IsDefaultPS"))
        if template is not None:
            replica["template"] = template
        container = tensorflow_container(mapping(template))
        if default_ps is True and container is not None:
            problems.append(FieldError(f"{path}.isDefaultPS", "is true but the template has a tensorflow container; "
                                                           "v1 starts the default PS server only for a PS without "
                                                           "one: remove either"))
        if default_ps is True and replica_type != REPLICA_PS:
            problems.append(FieldError(f"{path}.isDefaultPS", "only a PS replica can be the default PS server"))
        port = entry.get("tfPort")
        if port is not None:
            set_tf_port(replica, port, f"{path}.tfPort", problems)
        replica.update(copy.deepcopy(mapping(replica_fields.get(alpha_type))))
        replicas[key] = replica
    for key, replica in kept_replicas.items():
        replicas[key] = copy.deepcopy(replica)
    _check_termination_policy(spec, replicas, problems)
    new_spec: dict[str, Any] = {"tfReplicaSpecs": replicas}
    image = spec.get("tfImage")
    if isinstance(image, str) and image:
        metadata.setdefault("annotations", {})[TF_IMAGE_ANNOTATION] = image
    stored_status = kept.pop("status", None)
    new_spec.update(kept)
    out["spec"] = new_spec
    if isinstance(stored_status, dict):
        out["status"] = stored_status
    elif isinstance(out.get("status"), dict):
        out["status"] = _status_from_alpha(out["status"])
    return Converted(out, problems)


def _check_termination_policy(spec: dict[str, Any], replicas: dict[str, Any], problems: list[FieldError]) -> None:
    """v1's chief is the Chief/Master, else worker 0; a v1alpha1 job that named another replica cannot say so in
    v1."""
    chief = mapping(spec.get("terminationPolicy")).get("chief")
    if chief is None:
        return
    chief = mapping(chief)
    types = {canonical_replica_type(key) for key in replicas}
    expected = "MASTER" if types & set(CHIEF_REPLICA_TYPES) else "WORKER"
    name, index = chief.get("replicaName"), chief.get("replicaIndex", 0)
    if str(name).upper() != expected or index not in (0, None):
        problems.append(FieldError("spec.terminationPolicy.chief",
                                f"names {name} {index}; in v1 the job ends with the master, or worker 0 without "
                                f"one, so only {{replicaName: {expected}, replicaIndex: 0}} can be kept"))


def _status_from_alpha(status: dict[str, Any]) -> dict[str, Any]:
    v1: dict[str, Any] = {key: status[key] for key in ("phase", "state", "reason") if status.get(key)}
    counts: dict[str, Any] = {}
    for entry in items(status.get("replicaStatuses")):
        replica_type = _ALPHA_TYPES.get(str(mapping(entry).get("tf_replica_type")).upper())
        if replica_type is None:
            continue
        states = mapping(entry.get("ReplicasStates"))
        counts[replica_type] = {name: integer(states.get(state)) or 0 for state, name in _ALPHA_COUNTS}
    if counts:
        v1["replicaStatuses"] = counts
    return v1

