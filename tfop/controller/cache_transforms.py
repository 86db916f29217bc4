"""What the informer caches keep of a TFJob's children (only what the planner and the wiring read), and of a TFJob.

A pod as the apiserver sends it carries its whole spec, and every replica's spec carries TF_CONFIG, which lists
every replica of the job: a job of n replicas caches n pods of O(n) bytes each. The planner reads a pod's
identity, labels, owner, deletion mark and how its containers ran, never its spec, so the cache keeps that and
nothing else (client-go's SetTransform, for the same reason): of a container's states only how it waits or
ended, of the owners only the controller, of the pod conditions an unscheduled PodScheduled and a
DisruptionTarget. test_reconcile proves the planner decides the same on slimmed children as on whole ones.

Each watch event is decoded on its own, so every cached object would hold its own copies of the same key names
and values; the names and every short value are interned, one string for all, and the parts that repeat whole (a
child's owner reference and labels, a pod's node and status, a job's spec) are one object for all equal ones
(tfop/kube/shared_values.py). Values repeat more than one would think: the 14 children of a job carry the same
owner reference, a pod and its Service the same name and labels, children made or ended in the same second the
same timestamp, and jobs made from one manifest the same spec (docs/benchmarks/index.md, "Memory"). Of a TFJob
the cache keeps all but kubectl's last-applied copy and managedFields, of which it keeps who last wrote each
replica count.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tfop.api.constants import ANNOTATION_LAST_CHECKPOINT_TIME, ANNOTATION_TF_CLUSTER, FINALIZER_REPLICA_TRACKING
from tfop.controller.plan.job.model import REPLICAS_WRITERS
from tfop.kube.shared_values import SharedValues, shared_text
from tfop.objects import Object

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_METADATA = ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences", "deletionTimestamp",
             "deletionGracePeriodSeconds", "creationTimestamp")
# The only annotations of a child read: a pod's cluster (resizes) and the checkpoint time tfop wrote on it.
_READ_ANNOTATIONS = (ANNOTATION_TF_CLUSTER, ANNOTATION_LAST_CHECKPOINT_TIME)
# Of the finalizers only tfop's is read (whether a pod still holds it): one list for every object that has it.
_TRACKED = [FINALIZER_REPLICA_TRACKING]
_OWNER_REFERENCE = ("apiVersion", "kind", "name", "uid", "controller")
_POD_STATUS = ("phase", "reason", "message")
_POD_CONDITION = ("type", "status", "reason", "message")
# A disruption's time bounds the window in which its peers' failures are its own (plan/policies/disruptions.py).
_DISRUPTION_CONDITION = (*_POD_CONDITION, "lastTransitionTime")
_NODE_CONDITION = ("type", "status", "reason", "lastTransitionTime")
_SCHEDULED = "PodScheduled"  # read while false: why a pod is not scheduled
_DISRUPTED = "DisruptionTarget"  # read by the Job backend: the pod was evicted, preempted or drained
_CONTAINER_STATUS = ("name", "restartCount")
_CONTAINER_STATES = ("state", "lastState")
_STATE_DETAILS = {"terminated": ("exitCode", "reason", "message", "finishedAt"), "waiting": ("reason", "message")}

# One table for every cache: a pod and its Service share labels and owner reference.
SHARED = SharedValues()


def _kept(entry: Any, keys: tuple[str, ...]) -> Any:
    """The `keys` of a dict, their names and short text values shared by every cached object (one string each,
    not one per object: thousands of cached children repeat the same few dozen names); anything else as it is."""
    if not isinstance(entry, dict):
        return entry
    return {sys.intern(key): shared_text(entry[key]) for key in keys if key in entry}


def slim_metadata(obj: Object) -> Object:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return obj
    kept = _kept(metadata, _METADATA)
    if "namespace" in kept:
        kept["namespace"] = shared_text(kept["namespace"])
    if isinstance(kept.get("labels"), dict):
        kept["labels"] = SHARED.share(kept["labels"])
    annotations = metadata.get("annotations")
    read = {key: shared_text(annotations[key]) for key in _READ_ANNOTATIONS
            if key in annotations} if isinstance(annotations, dict) else None
    if read:
        kept["annotations"] = SHARED.share(read)
    finalizers = metadata.get("finalizers")
    if isinstance(finalizers, list) and FINALIZER_REPLICA_TRACKING in finalizers:
        kept["finalizers"] = _TRACKED
    if isinstance(kept.get("ownerReferences"), list):  # only the controller's is read
        kept["ownerReferences"] = SHARED.share([_kept(ref, _OWNER_REFERENCE) for ref in kept["ownerReferences"]
                                                if isinstance(ref, dict) and ref.get("controller")])
    return {"apiVersion": shared_text(obj.get("apiVersion")), "kind": shared_text(obj.get("kind")),
            "metadata": kept}


def slim_pod(pod: Object) -> Object:
    slim = slim_metadata(pod)
    node_name = (pod.get("spec") or {}).get("nodeName")
    if node_name:  # where it runs: node loss is judged by its node's health
        slim["spec"] = SHARED.share({"nodeName": node_name})
    status = pod.get("status")
    if isinstance(status, dict):
        kept = _kept(status, _POD_STATUS)
        conditions = status.get("conditions")
        read = [_kept(condition, _DISRUPTION_CONDITION if condition.get("type") == _DISRUPTED else _POD_CONDITION)
                for condition in conditions if _is_read(condition)] if isinstance(conditions, list) else []
        if read:
            kept["conditions"] = read
        containers = status.get("containerStatuses")
        if isinstance(containers, list):
            kept["containerStatuses"] = [_slim_container(entry) for entry in containers]
        slim["status"] = SHARED.share(kept)
    return slim


def _is_read(condition: Any) -> bool:
    if not isinstance(condition, dict):
        return False
    return condition.get("type") == _DISRUPTED or (condition.get("type") == _SCHEDULED
                                                   and condition.get("status") != "True")


def _slim_container(entry: Any) -> Any:
    """A container's name, restarts, and of each state only why it waits or how it ended."""
    kept = _kept(entry, _CONTAINER_STATUS)
    if not isinstance(entry, dict):
        return kept
    for state_key in _CONTAINER_STATES:
        state = entry.get(state_key)
        if isinstance(state, dict) and state.keys() & _STATE_DETAILS.keys():
            kept[sys.intern(state_key)] = {sys.intern(name): _kept(details, _STATE_DETAILS[name])
                                           for name, details in state.items() if name in _STATE_DETAILS}
    return kept


def replicas_writers(managed_fields: object) -> dict[str, dict[str, str]]:
    """Of a TFJob's managedFields, the entry that last wrote each replica type's `replicas`, by replica type: its
    manager, operation and subresource (ReplicasWriter). `kubectl scale` writes through the scale subresource as
    `kubectl`, an HPA as `kube-controller-manager` (the apiserver names a manager by the client's user agent when
    it gives none), the capacity auto-scaler a patch of the spec as `tfop`. The latest entry when several own it
    (a shared apply)."""
    latest: dict[str, tuple[str, dict[str, str]]] = {}  # replica type: (time, writer)
    for entry in managed_fields if isinstance(managed_fields, list) else []:
        if not (isinstance(entry, dict) and isinstance(entry.get("manager"), str)
                and isinstance(entry.get("operation"), str)):
            continue
        specs = ((entry.get("fieldsV1") or {}).get("f:spec") or {}).get("f:tfReplicaSpecs")
        for key, fields in (specs.items() if isinstance(specs, dict) else ()):
            if key.startswith("f:") and isinstance(fields, dict) and "f:replicas" in fields:
                writer = {"manager": entry["manager"], "operation": entry["operation"],
                          **({"subresource": entry["subresource"]} if isinstance(entry.get("subresource"), str)
                             else {})}
                written = (str(entry.get("time") or ""), writer)
                if key[2:] not in latest or written[0] > latest[key[2:]][0]:
                    latest[key[2:]] = written
    return {replica_type: SHARED.share(writer) for replica_type, (_, writer) in latest.items()}


def slim_job(job: Object) -> Object:
    """A TFJob whole (the planner reads its spec and status), but for what no controller reads: kubectl's copy of
    the last applied manifest (as large as the spec again) and managedFields, of which only who last wrote each
    replica type's count is kept (REPLICAS_WRITERS: a resize's cause); its keys shared, and its spec and status
    one object with every equal one."""
    metadata = job.get("metadata")
    if isinstance(metadata, dict):
        writers = replicas_writers(metadata.pop("managedFields", None))
        if writers:
            metadata[REPLICAS_WRITERS] = writers
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
            if not annotations:
                del metadata["annotations"]
    slim: Object = {}
    for key, value in job.items():
        if key == "metadata" and isinstance(value, dict):  # unique to the job: its parts shared, not itself
            slim[sys.intern(key)] = {sys.intern(name): SHARED.share(item) for name, item in value.items()}
        else:
            slim[sys.intern(key)] = SHARED.share(value)
    return slim


def slim_batch_job(batch_job: Object) -> Object:
    """A Job backend's Job: whether it is suspended, its backoffLimit, and its status (conditions and counts,
    small); never its pod template, which carries TF_CONFIG."""
    slim = slim_metadata(batch_job)
    spec = batch_job.get("spec")
    kept = _kept(spec, ("suspend", "backoffLimit")) if isinstance(spec, dict) else None
    if kept:
        slim["spec"] = SHARED.share(kept)
    if isinstance(batch_job.get("status"), dict):
        slim["status"] = SHARED.share(batch_job["status"])
    return slim


GLOBAL_DEFAULT = "global-default"  # the PriorityClass cache's index of the classes marked globalDefault


def slim_priority_class(priority_class: Object) -> Object:
    """A Kueue WorkloadPriorityClass: its value is all tfop reads."""
    slim = slim_metadata(priority_class)
    slim["value"] = priority_class.get("value")
    return slim


def slim_pod_priority_class(priority_class: Object) -> Object:
    """A scheduling.k8s.io PriorityClass: its value, and whether it is the global default, are all tfop reads."""
    slim = slim_metadata(priority_class)
    slim["value"] = priority_class.get("value")
    if priority_class.get("globalDefault") is True:
        slim["globalDefault"] = True
    return slim


def global_default(priority_class: Object) -> list[str]:
    """The index of the PriorityClasses marked globalDefault (normally one, or none)."""
    return ["true"] if priority_class.get("globalDefault") is True else []


def slim_flavor(flavor: Object) -> Object:
    """A Kueue ResourceFlavor: what its pods get (node labels, tolerations) is all tfop reads."""
    slim = slim_metadata(flavor)
    spec = flavor.get("spec")
    if isinstance(spec, dict):
        slim["spec"] = {key: spec[key] for key in ("nodeLabels", "tolerations") if key in spec}
    return slim


def slim_claim(claim: Object) -> Object:
    """A PersistentVolumeClaim: its access modes, asked and bound, are all tfop reads (where a job's TensorBoard
    may mount it, plan/job/tensorboard.py)."""
    slim = slim_metadata(claim)
    for part in ("spec", "status"):
        modes = (claim.get(part) or {}).get("accessModes")
        if isinstance(modes, list):
            slim[part] = {"accessModes": modes}
    return slim


def slim_keeping(fields: tuple[str, ...], only_if: Callable[[Object], bool] | None = None
                 ) -> Callable[[Object], Object]:
    """A job's own child (its PodGroup, NetworkPolicy, HPA) is small: the metadata and the fields its entry names
    (plan/children/job_child.py's `cached`), which the planner compares with what the job wants. `only_if`: the
    fields are kept only of the objects it accepts, the metadata of the others (another controller's)."""
    def slim(child: Object) -> Object:
        kept = slim_metadata(child)
        if only_if is not None and not only_if(child):
            return kept
        for key in fields:
            if isinstance(child.get(key), dict):
                kept[key] = child[key]
        return kept

    return slim


BY_NODE = "node-name"  # the pod cache's index by the node a pod is bound to


def pod_node(pod: Object) -> list[str]:
    """The pod cache's index by node: which pods a node's change concerns."""
    node_name = (pod.get("spec") or {}).get("nodeName")
    return [node_name] if node_name else []


def node_health_transform(conditions: tuple[str, ...]) -> Callable[[Object], Object]:
    """What the node cache keeps: the node's name, whether it is unschedulable, its taints, and of its conditions
    Ready and those named (`conditions`) with when they last changed; never heartbeat times, so the kubelet's
    regular status updates leave the cached node unchanged and wake no job."""
    read = {"Ready", *conditions}

    def slim_node(node: Object) -> Object:
        slim = slim_metadata(node)
        spec = node.get("spec")
        if isinstance(spec, dict):
            slim["spec"] = {key: spec[key] for key in ("taints", "unschedulable") if key in spec}
        status = node.get("status")
        if isinstance(status, dict) and isinstance(status.get("conditions"), list):
            slim["status"] = {"conditions": [_kept(entry, _NODE_CONDITION) for entry in status["conditions"]
                                             if isinstance(entry, dict) and entry.get("type") in read]}
        return slim

    return slim_node
