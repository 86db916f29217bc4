"""What the harness saw, as plain values the invariants read: each pod's life, each job's end, each job's state at
one moment. Built from raw objects by the functions here, so the invariants' tests need no cluster."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

TERMINAL_CONDITIONS = ("Succeeded", "Failed")
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"


def epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


@dataclass
class PodLife:
    """One pod (by uid) of a job: its task, when the apiserver created it, and when the harness saw it live (not
    ended, not being deleted), on the harness's clock."""

    uid: str
    name: str
    job_uid: str
    task: tuple[str, int]  # (replica type as labelled, index)
    created: float  # epoch seconds, the apiserver's creationTimestamp
    live_from: float | None = None
    live_to: float | None = None


@dataclass(frozen=True)
class JobEnd:
    """A job's terminal condition as first seen, and its restarts as last seen."""

    name: str
    uid: str
    condition: str
    reason: str
    finished_at: float  # epoch seconds: the condition's lastTransitionTime
    restarts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class JobView:
    """A job at one moment, for the convergence check."""

    name: str
    replicas: dict[str, int]
    running: bool  # its Running condition is True
    terminal: bool
    deleting: bool
    running_tasks: frozenset[tuple[str, int]]  # (replica type lowercased, index) with a Running, live pod


def pod_is_live(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and \
        (pod.get("status") or {}).get("phase") in (None, "Pending", "Running")


def pod_task(pod: dict[str, Any]) -> tuple[str, int] | None:
    labels = pod["metadata"].get("labels") or {}
    if REPLICA_TYPE_LABEL not in labels or REPLICA_INDEX_LABEL not in labels:
        return None
    return labels[REPLICA_TYPE_LABEL], int(labels[REPLICA_INDEX_LABEL])


def controller_uid(obj: dict[str, Any]) -> str:
    return next((ref["uid"] for ref in obj["metadata"].get("ownerReferences") or [] if ref.get("controller")), "")


def job_end(job: dict[str, Any]) -> JobEnd | None:
    status = job.get("status") or {}
    for entry in status.get("conditions") or []:
        if entry["type"] in TERMINAL_CONDITIONS and entry["status"] == "True":
            return JobEnd(job["metadata"]["name"], job["metadata"]["uid"], entry["type"], entry.get("reason", ""),
                          epoch(entry["lastTransitionTime"]), job_restarts(job))
    return None


def job_restarts(job: dict[str, Any]) -> dict[str, int]:
    statuses = (job.get("status") or {}).get("replicaStatuses") or {}
    return {kind: int(value.get("restarts") or 0) for kind, value in statuses.items()}


def job_view(job: dict[str, Any], pods: list[dict[str, Any]]) -> JobView:
    specs = (job.get("spec") or {}).get("tfReplicaSpecs") or {}
    conditions = {c["type"]: c["status"] == "True" for c in (job.get("status") or {}).get("conditions") or []}
    running = frozenset(task for pod in pods if pod_is_live(pod) and (pod.get("status") or {}).get("phase") ==
                        "Running" and (task := pod_task(pod)) is not None)
    return JobView(job["metadata"]["name"], {kind: int(spec.get("replicas", 1)) for kind, spec in specs.items()},
                   conditions.get("Running", False), any(conditions.get(c) for c in TERMINAL_CONDITIONS),
                   bool(job["metadata"].get("deletionTimestamp")), running)
