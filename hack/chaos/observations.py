"""What the harness saw, as plain values the invariants read: each pod's life, each job's end, each job's state at
one moment. Built from raw objects by the functions here, so the invariants' tests need no cluster."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

TERMINAL_CONDITIONS = ("Succeeded", "Failed")
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
# What examples/train_*.py print: which task a process is, once TensorFlow read its TF_CONFIG; then the lines of its
# work as that task (a training step or epoch, a checkpoint evaluated, a server up).
CLAIM = re.compile(r"^tfop-example: task=(\w+:\d+) ")
WORK = re.compile(r"^(step \d+ loss|epoch \d+ loss|evaluated checkpoint|final evaluation|serving \w+:\d+ at)")


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


@dataclass(frozen=True)
class ProcessClaim:
    """One real TensorFlow process (a container attempt of a pod) and the task it said it was, from its log file:
    it held the task from the line that says so to its last line of work (the same moment if it did none)."""

    pod: str
    uid: str
    attempt: str  # the log file, one per container attempt
    job: str  # the TFJob's name and RuntimeId, from the pod's name: one run of one job
    task: str | None  # e.g. "worker:0"; None while (or if) it never said
    held_from: float | None = None
    held_to: float | None = None


def process_claim(pod_dir: str, attempt: str, lines: list[str]) -> ProcessClaim:
    """The claim in one attempt's log lines (`<time> <stream> <tag> <text>`) of the pod directory
    `<namespace>_<pod>_<uid>`; pods are named `<job>-<replica>-<runtime id>-<index>`."""
    _, pod, uid = pod_dir.split("_")
    job, _, runtime_id, _ = pod.rsplit("-", 3)
    task, held_from, held_to = None, None, None
    for raw in lines:
        when, _, rest = raw.partition(" ")
        text = rest.split(" ", 2)[-1]
        if task is None and (claim := CLAIM.match(text)):
            task, held_from = claim.group(1), epoch(when)
            held_to = held_from
        elif task is not None and WORK.match(text):
            held_to = epoch(when)
    return ProcessClaim(pod, uid, attempt, f"{job} ({runtime_id})", task, held_from, held_to)
