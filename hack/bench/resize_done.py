"""When a job's resize is done, for `bench.resize`: what a user would check, pure, on the pods and the TFJob as the
bench's watches keep them (bench/resize_watch.py).

Done is both halves at once:

- the pods: exactly one pod per desired replica (Chief 0, PS 0-1, Worker 0 to the new count - 1), every one
  Running and none being deleted, so no pod of the old size remains, a removed worker's included; by restart also
  every pod a new one (no uid from when the scale was sent) made for the new Worker count (its
  `tfop.kubeflow.org/tf-cluster` annotation). In place, the new count is not in that annotation (it holds the
  PS count only: the workers' sparse clusters name no other worker).
- the status, as `kubectl get tfjobs` shows it: STATE `Running` (`status.state`, from the Running condition that
  `kubectl wait --for=condition=Running` waits on: every replica pod runs), `Active-Workers` at the new count
  (`status.replicaStatuses.Worker.active`, also the scale subresource's `status.replicas` that `kubectl get
  --subresource=scale` and an HPA read; it counts a removed worker until its pod is gone), and
  `status.workerReplicas` at the new count. The last is what tells a Running of the new size from the Running the
  job had before tfop saw the scale: the state alone is True from the start.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tfop.api.constants import ANNOTATION_TF_CLUSTER, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, REPLICA_WORKER

Slot = tuple[str, int]  # (replica type as the pod's label spells it, lowercase; index)
STATE_RUNNING = "Running"


@dataclass(frozen=True)
class Target:
    """What one job is resized to."""

    replicas: Mapping[str, int]  # by replica type as the spec spells it, e.g. {"Chief": 1, "PS": 2, "Worker": 8}
    by_restart: bool
    before: frozenset[str] = frozenset()  # the uids of the job's pods when the scale was sent

    @property
    def workers(self) -> int:
        return self.replicas.get(REPLICA_WORKER, 0)

    def slots(self) -> list[Slot]:
        return sorted((replica_type.lower(), index) for replica_type, count in self.replicas.items()
                      for index in range(count))


def slot_of(pod: Mapping[str, Any]) -> Slot | None:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    replica_type, index = labels.get(LABEL_REPLICA_TYPE), labels.get(LABEL_REPLICA_INDEX)
    if not isinstance(replica_type, str) or not isinstance(index, str) or not index.isdigit():
        return None
    return replica_type.lower(), int(index)


def cluster_counts(pod: Mapping[str, Any]) -> dict[str, int]:
    """The replica counts a pod's TF_CONFIG was built from, e.g. {"Chief": 1, "PS": 2, "Worker": 8}."""
    annotation = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_TF_CLUSTER) or ""
    counts: dict[str, int] = {}
    for entry in str(annotation).split(","):
        replica_type, _, count = entry.partition("=")
        if count.isdigit():
            counts[replica_type] = int(count)
    return counts


def pods_done(pods: Iterable[Mapping[str, Any]], target: Target) -> bool:
    slots: list[Slot | None] = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        if metadata.get("deletionTimestamp") or (pod.get("status") or {}).get("phase") != "Running":
            return False
        if target.by_restart and (metadata.get("uid") in target.before
                                  or cluster_counts(pod).get(REPLICA_WORKER) != target.workers):
            return False
        slots.append(slot_of(pod))
    return None not in slots and sorted(slot for slot in slots if slot is not None) == target.slots()


def old_pods_gone(pods: Iterable[Mapping[str, Any]], target: Target) -> bool:
    """By restart, the stopping half is over: no pod from before the scale is left, not even terminating."""
    return target.by_restart and not any((pod.get("metadata") or {}).get("uid") in target.before for pod in pods)


def recorded(job: Mapping[str, Any], workers: int) -> bool:
    """The status records the new count: written by the first pass after the scale, or, when that pass creates
    pods (a status planned before its creates is dropped as stale), by the next one."""
    return (job.get("status") or {}).get("workerReplicas") == workers


def status_done(job: Mapping[str, Any], workers: int) -> bool:
    status = job.get("status") or {}
    worker_status = (status.get("replicaStatuses") or {}).get(REPLICA_WORKER) or {}
    return recorded(job, workers) and status.get("state") == STATE_RUNNING and worker_status.get("active") == workers


def resize_done(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], target: Target) -> bool:
    return status_done(job, target.workers) and pods_done(pods, target)
