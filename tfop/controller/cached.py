"""What the informer caches keep of a TFJob's children: only what the planner and the wiring read.

A pod as the apiserver sends it carries its whole spec, and every replica's spec carries TF_CONFIG, which lists
every replica of the job: a job of n replicas caches n pods of O(n) bytes each. The planner reads a pod's
identity, labels, owner, deletion mark and how its containers ran, never its spec, so the cache keeps that and
nothing else (client-go's SetTransform, for the same reason). test_reconcile proves the planner decides the
same on slimmed children as on whole ones.
"""

from __future__ import annotations

from typing import Any

Object = dict[str, Any]

_METADATA = ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences", "deletionTimestamp",
             "creationTimestamp")
_POD_STATUS = ("phase", "reason", "message", "conditions")
_CONTAINER_STATUS = ("name", "restartCount", "state", "lastState")


def slim_metadata(obj: Object) -> Object:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return obj
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
            "metadata": {key: metadata[key] for key in _METADATA if key in metadata}}


def slim_pod(pod: Object) -> Object:
    slim = slim_metadata(pod)
    status = pod.get("status")
    if isinstance(status, dict):
        kept = {key: status[key] for key in _POD_STATUS if key in status}
        containers = status.get("containerStatuses")
        if isinstance(containers, list):
            kept["containerStatuses"] = [
                {key: entry[key] for key in _CONTAINER_STATUS if key in entry} if isinstance(entry, dict) else entry
                for entry in containers]
        slim["status"] = kept
    return slim


def slim_batch_job(batch_job: Object) -> Object:
    """A Job backend's Job: whether it is suspended, and its status (conditions and counts, small); never its pod
    template, which carries TF_CONFIG."""
    slim = slim_metadata(batch_job)
    spec = batch_job.get("spec")
    if isinstance(spec, dict) and "suspend" in spec:
        slim["spec"] = {"suspend": spec["suspend"]}
    if isinstance(batch_job.get("status"), dict):
        slim["status"] = batch_job["status"]
    return slim


def slim_pod_group(pod_group: Object) -> Object:
    """A PodGroup is small, and the planner reads its spec (to update it) and its status (phase, conditions)."""
    slim = slim_metadata(pod_group)
    for key in ("spec", "status"):
        if isinstance(pod_group.get(key), dict):
            slim[key] = pod_group[key]
    return slim
