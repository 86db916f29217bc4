"""Where tfop's pending Workloads stand in their queues (tfop/controller/kueue_positions.py): which Workloads are
asked about, what a pendingworkloads answer of Kueue's visibility API makes of them, and which jobs are told when
positions move. The look itself runs against a real Kueue in test/integration/test_kueue_own.py."""

from __future__ import annotations

from typing import Any

import pytest

from tfop.api.constants import LABEL_OPERATOR_NAME, OPERATOR_NAME
from tfop.controller.kueue_positions import Pending, jobs_to_tell, pending_workloads, positions_in
from tfop.controller.plan.observed.workload import QueuePosition

MADE_BY_TFOP = {LABEL_OPERATOR_NAME: OPERATOR_NAME}


def workload(name: str, *, queue: str | None = "team", labels: dict[str, str] | None = None, active: bool = True,
             reserved: bool = False, admitted: bool = False, terminating: bool = False, job: str | None = "mnist",
             ) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                                "labels": MADE_BY_TFOP if labels is None else labels}
    if job is not None:
        metadata["ownerReferences"] = [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": job,
                                        "controller": True}]
    if terminating:
        metadata["deletionTimestamp"] = "2026-12-04T10:00:00Z"
    spec: dict[str, Any] = {"active": active, "podSets": [{"name": "worker", "count": 2}]}
    if queue is not None:
        spec["queueName"] = queue
    conditions = []
    if reserved:
        conditions.append({"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"})
    if admitted:
        conditions.append({"type": "Admitted", "status": "True", "reason": "Admitted"})
    status: dict[str, Any] = {"conditions": conditions}
    if reserved or admitted:
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": [{"name": "worker", "count": 2}]}
    return {"metadata": metadata, "spec": spec, "status": status}


def job_of(obj: dict[str, Any]) -> str | None:
    refs = obj["metadata"].get("ownerReferences") or []
    return f"{obj['metadata']['namespace']}/{refs[0]['name']}" if refs else None


PENDING: dict[str, tuple[dict[str, Any], list[Pending]]] = {
    "waits for quota: asked about": (workload("wl-a"), [Pending(("ns", "wl-a"), ("ns", "team"), "ns/mnist")]),
    "another controller's (Kueue's adapter)": (workload("wl-a", labels={}), []),
    "no queue": (workload("wl-a", queue=None), []),
    "deactivated": (workload("wl-a", active=False), []),
    "quota reserved, not admitted yet": (workload("wl-a", reserved=True), []),
    "admitted": (workload("wl-a", reserved=True, admitted=True), []),
    "being deleted": (workload("wl-a", terminating=True), []),
    "no job controls it": (workload("wl-a", job=None), []),
}


@pytest.mark.parametrize(("cached", "expected"), PENDING.values(), ids=PENDING.keys())
def test_which_workloads_are_asked_about(cached: dict[str, Any], expected: list[Pending]) -> None:
    assert pending_workloads([cached], job_of) == expected


def pending(*names: str) -> list[Pending]:
    return [Pending(("ns", name), ("ns", "team"), f"ns/job-{name}") for name in names]


def listed(*entries: tuple[str, int, int]) -> dict[str, Any]:
    """A pendingworkloads answer: (name, positionInLocalQueue, positionInClusterQueue), Kueue's 0-based counts."""
    return {"kind": "PendingWorkloadsSummary", "apiVersion": "visibility.kueue.x-k8s.io/v1beta2",
            "items": [{"metadata": {"name": name, "namespace": "ns"}, "localQueueName": "team", "priority": 0,
                       "positionInLocalQueue": local, "positionInClusterQueue": cluster}
                      for name, local, cluster in entries]}


ANSWERS: dict[str, tuple[dict[str, Any], list[Pending], int, dict[tuple[str, str], QueuePosition]]] = {
    "counted from 1, in the LocalQueue and its ClusterQueue": (
        listed(("other", 0, 0), ("wl-b", 1, 3)), pending("wl-b"), 100,
        {("ns", "wl-b"): QueuePosition(2, 4, 100)}),
    "next in line": (listed(("wl-a", 0, 0)), pending("wl-a"), 100, {("ns", "wl-a"): QueuePosition(1, 1, 100)}),
    "not listed, the list full: past those looked at": (
        listed(("x", 0, 0), ("y", 1, 1)), pending("wl-c"), 2, {("ns", "wl-c"): QueuePosition(None, None, 2)}),
    "not listed, the list not full: not in Kueue's queue yet, no position": (
        listed(("x", 0, 0)), pending("wl-c"), 100, {}),
    "an empty answer": ({"items": None}, pending("wl-a"), 100, {}),
    "not an answer at all": ({"kind": "Status"}, pending("wl-a"), 100, {}),
    "an item without positions is left out": (
        {"items": [{"metadata": {"name": "wl-a"}}]}, pending("wl-a"), 100, {}),
    "two of tfop's in one queue, others between": (
        listed(("wl-a", 0, 2), ("other", 1, 3), ("wl-b", 2, 4)), pending("wl-a", "wl-b"), 100,
        {("ns", "wl-a"): QueuePosition(1, 3, 100), ("ns", "wl-b"): QueuePosition(3, 5, 100)}),
}


@pytest.mark.parametrize(("answer", "asked", "looked_at", "expected"), ANSWERS.values(), ids=ANSWERS.keys())
def test_what_an_answer_says_of_each_pending_workload(answer: dict[str, Any], asked: list[Pending], looked_at: int,
                                                      expected: dict[tuple[str, str], QueuePosition]) -> None:
    assert positions_in(answer, asked, looked_at) == expected


A, B = ("ns", "wl-a"), ("ns", "wl-b")
JOBS = {A: "ns/a", B: "ns/b"}
TOLD: dict[str, tuple[dict[Any, QueuePosition], dict[Any, QueuePosition], dict[Any, str], list[str]]] = {
    "nothing moved: nobody": ({A: QueuePosition(1, 1, 100)}, {A: QueuePosition(1, 1, 100)}, JOBS, []),
    "the one ahead admitted: the next moves up": (
        {A: QueuePosition(1, 1, 100), B: QueuePosition(2, 2, 100)}, {B: QueuePosition(1, 1, 100)}, {B: "ns/b"},
        ["ns/a", "ns/b"]),
    "a new one queued: told its place": ({}, {A: QueuePosition(1, 1, 100)}, JOBS, ["ns/a"]),
    "the API stopped answering: every position goes, every job told": (
        {A: QueuePosition(1, 1, 100), B: QueuePosition(None, None, 100)}, {}, JOBS, ["ns/a", "ns/b"]),
    "still past those looked at: not told again": (
        {B: QueuePosition(None, None, 100)}, {B: QueuePosition(None, None, 100)}, JOBS, []),
}


@pytest.mark.parametrize(("before", "now", "jobs", "expected"), TOLD.values(), ids=TOLD.keys())
def test_which_jobs_are_told(before: dict[Any, QueuePosition], now: dict[Any, QueuePosition], jobs: dict[Any, str],
                             expected: list[str]) -> None:
    assert jobs_to_tell(before, JOBS, now, jobs) == expected
