"""The cluster as the capacity auto-scaler sees it, read from informer caches into the values `decide` takes.

It watches Nodes and Pods of every namespace itself: a node's room depends on every pod bound to it, whoever made
it, and the operator's own pod cache holds only its jobs' pods and never a pod's spec. What its caches keep is
slim: of a node its labels, taints, whether it is cordoned and Ready, and its allocatable; of a pod its identity,
node, phase, what it requests (summed as the scheduler sums it) and, while the scheduler finds no node for it,
since when and which resources it said were short; labels and owner only of a TFJob's pods. Equal values are
shared (pods of one template on one node hold one), as in the controller's caches. The TFJobs are the
controller's own cache.

Scope: nodes count when Ready and not cordoned; a pod holds room on its node until it Succeeded or Failed; the
pods that wait are those of the TFJobs this operator runs that are Pending with PodScheduled False, reason
Unschedulable. Only those whose scheduler message names resources ("Insufficient cpu") wait for resources.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from tfop.api.constants import (
    CONDITION_FAILED,
    CONDITION_SUCCEEDED,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    REPLICA_WORKER,
)
from tfop.api.kueue import managed_elsewhere, queue_name
from tfop.api.timestamps import parse_time
from tfop.controller.cache_transforms import SHARED, slim_metadata
from tfop.controller.capacity.model import ElasticJob, NodeRoom, Placement, Taint, WaitingPod, pod_request, quantities
from tfop.controller.owners import owner_key
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.job.parse import parse_job
from tfop.controller.plan.status import condition_is_true, conditions_of, is_terminating
from tfop.kube.shared_values import SharedValues, shared_text
from tfop.objects import Object

ENDED = ("Succeeded", "Failed")
_FOREIGN_POD_METADATA = ("name", "namespace", "resourceVersion", "deletionTimestamp")  # what the cache needs
_SHORT_OF = re.compile(r"Insufficient (\S+)")


def slim_node(node: Object) -> Object:
    slim = slim_metadata(node)
    spec, status = node.get("spec") or {}, node.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
                if isinstance(c, dict))
    slim["capacity"] = SHARED.share({"ready": ready, "unschedulable": bool(spec.get("unschedulable")),
                                     "taints": [t for t in spec.get("taints") or () if isinstance(t, dict)],
                                     "allocatable": quantities(status.get("allocatable"))})
    return slim


def slim_pod(pod: Object, shared: SharedValues = SHARED) -> Object:
    """What the cache keeps of a pod; `shared`: the table its capacity part is shared through (a test's own)."""
    # Not a TFJob's: only its node, phase and requests count, never who made it.
    slim = _foreign_pod(pod) if owner_key(pod) is None else slim_metadata(pod)
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    unscheduled = next((c for c in status.get("conditions") or () if isinstance(c, dict)
                        and c.get("type") == "PodScheduled" and c.get("status") == "False"
                        and c.get("reason") == "Unschedulable"), None)
    # The scheduler's message names every node's reasons ("0/5000 nodes are available: ..."): only the resources
    # it says are short are kept. Pods of one template on one node share one value.
    slim["capacity"] = shared.share({
        "node": spec.get("nodeName"), "phase": status.get("phase"), "request": pod_request(spec),
        "unscheduled": None if unscheduled is None else {
            "since": unscheduled.get("lastTransitionTime"),
            "short_of": sorted({name.rstrip(",.;") for name in _SHORT_OF.findall(unscheduled.get("message") or "")})}})
    return slim


def _foreign_pod(pod: Object) -> Object:
    """Another workload's pod: its identity for the cache, nothing shared or interned that is its own. Its name and
    resourceVersion are unique, so interning them would only add to the interpreter's table, and its labels and
    owner references, dropped, would stay in the shared table until its next sweep."""
    metadata = pod.get("metadata") or {}
    kept = {sys.intern(key): metadata[key] for key in _FOREIGN_POD_METADATA if key in metadata}
    if "namespace" in kept:
        kept["namespace"] = shared_text(kept["namespace"])
    return {"apiVersion": shared_text(pod.get("apiVersion")), "kind": shared_text(pod.get("kind")), "metadata": kept}


def pod_node(pod: Object) -> list[str]:
    node = pod["capacity"]["node"]
    return [node] if node else []


BY_NODE = "node"


def node_rooms(nodes: Iterable[Object], pods_on: Any) -> list[NodeRoom]:
    """`pods_on(name)`: the cached pods bound to the node."""
    rooms = []
    for node in nodes:
        seen = node["capacity"]
        if not seen["ready"] or seen["unschedulable"]:
            continue
        room = dict(seen["allocatable"])
        for pod in pods_on(node["metadata"]["name"]):
            if pod["capacity"]["phase"] not in ENDED:
                for name, amount in pod["capacity"]["request"].items():
                    room[name] = room.get(name, 0) - amount
        taints = tuple(Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
                       for t in seen["taints"])
        rooms.append(NodeRoom(node["metadata"]["name"], room, dict(node["metadata"].get("labels") or {}), taints))
    return sorted(rooms, key=lambda room: room.name)


def waiting_pods(pods: Iterable[Object], jobs: Mapping[str, Object]) -> list[WaitingPod]:
    """The pods of the TFJobs `jobs` (by key) the scheduler found no node for."""
    waiting = []
    for pod in pods:
        unscheduled = pod["capacity"]["unscheduled"]
        key = owner_key(pod)
        if unscheduled is None or key not in jobs or pod["capacity"]["phase"] != "Pending" or is_terminating(pod):
            continue
        labels = pod["metadata"].get("labels") or {}
        since = parse_time(unscheduled["since"])
        index = str(labels.get(LABEL_REPLICA_INDEX, ""))
        if since is None or not index.isdigit():
            continue
        waiting.append(WaitingPod(str(key), str(labels.get(LABEL_REPLICA_TYPE, "")), int(index),
                                  pod["capacity"]["request"], since, tuple(unscheduled["short_of"])))
    return waiting


def elastic_job(raw: Object, config: ControllerConfig, pods: Iterable[Object]) -> ElasticJob | None:
    """The job as an ElasticJob if it is one that may run: it has an elasticPolicy and Workers, is neither finished
    nor suspended, and no other controller (Kueue, managedBy) decides when it runs; not only while `Running`, which
    is False while any pod is Pending, as an extra worker that finds no node is. `pods`: its pods."""
    if not (raw.get("spec") or {}).get("elasticPolicy"):
        return None  # most jobs: not parsed at all, every look reads every job the operator runs
    model = parse_job(raw, config)
    if not isinstance(model, TFJobModel) or model.spec.elastic_policy is None:
        return None
    worker = model.spec.replica_specs.get(REPLICA_WORKER)
    conditions = conditions_of(raw.get("status"))
    if (worker is None or model.spec.run_policy.suspend or managed_elsewhere(raw)
            or queue_name(raw) is not None
            or condition_is_true(conditions, CONDITION_SUCCEEDED) or condition_is_true(conditions, CONDITION_FAILED)):
        return None
    created = parse_time(raw["metadata"].get("creationTimestamp")) or datetime.min
    workers = [pod for pod in pods if (pod["metadata"].get("labels") or {}).get(LABEL_REPLICA_TYPE) == "worker"]
    live = {str((pod["metadata"].get("labels") or {}).get(LABEL_REPLICA_INDEX)) for pod in workers
            if not is_terminating(pod) and pod["capacity"]["phase"] not in ENDED}
    steady = live == {str(index) for index in range(worker.replicas)} and not any(map(is_terminating, workers))
    policy = model.spec.elastic_policy
    return ElasticJob(f"{model.metadata.namespace}/{model.metadata.name}", created, policy.min_replicas,
                      policy.max_replicas, worker.replicas, pod_request(worker.template.get("spec")),
                      Placement.of(worker.template.get("spec")), has_hpa=bool(policy.metrics), steady=steady)


def worker_key(raw: Object) -> str | None:
    """The key of spec.tfReplicaSpecs the Workers are under, as the job spells it (worker, WORKER, ...)."""
    specs = (raw.get("spec") or {}).get("tfReplicaSpecs") or {}
    return next((key for key in specs if str(key).lower() == "worker"), None)
