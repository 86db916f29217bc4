"""The exit kept in the status for each replica whose pod tfop recreated (plan/replicas/recreated_exits.py)."""

from __future__ import annotations

from typing import Any

import pytest

from support.plan_builders import make_pod
from tfop.controller.plan.job_status import ReplicaStatus
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.replicas.recreated_exits import recreated_exits

pytestmark = pytest.mark.unit

FINISHED = "2026-11-21T09:59:58Z"


def finished(pod: dict[str, Any], at: str = FINISHED) -> dict[str, Any]:
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = at
    return pod


def restarted_in_place_then_evicted(index: int) -> dict[str, Any]:
    """A pod whose container the kubelet restarted after an exit 143, then evicted with the container running."""
    pod = make_pod("Worker", index, "Failed", restarts=1, pod_reason="Evicted")
    pod["status"]["containerStatuses"][0]["state"] = {"running": {"startedAt": FINISHED}}
    pod["status"]["containerStatuses"][0]["lastState"] = {
        "terminated": {"exitCode": 143, "reason": "Error", "finishedAt": "2026-11-21T09:58:00Z"}}
    return pod


KEPT_137 = {"index": 1, "exitCode": 137, "reason": "Error", "finishedAt": "2026-11-21T09:00:00Z"}

CASES: dict[str, tuple[Any, list[dict[str, Any]], int, list[dict[str, Any]]]] = {
    "nothing recreated, nothing kept": ({"active": 2}, [], 2, []),
    "a recreated pod's exit, with when it ended": (
        {}, [finished(make_pod("Worker", 1, "Failed", exit_code=137, reason="Error"))], 2,
        [{"index": 1, "exitCode": 137, "reason": "Error", "finishedAt": FINISHED}]),
    "the kubelet gave no end time: the exit without one": (
        None, [make_pod("Worker", 0, "Failed", exit_code=0, reason="OOMKilled")], 1,
        [{"index": 0, "exitCode": 0, "reason": "OOMKilled"}]),
    "kept across plans, by index": (
        {"recreatedExits": [KEPT_137]}, [finished(make_pod("Worker", 0, "Failed", exit_code=139, reason="Error"))],
        2, [{"index": 0, "exitCode": 139, "reason": "Error", "finishedAt": FINISHED}, KEPT_137]),
    "a later recreation of the same replica replaces its entry": (
        {"recreatedExits": [KEPT_137]}, [finished(make_pod("Worker", 1, "Failed", exit_code=143, reason="Error"))],
        2, [{"index": 1, "exitCode": 143, "reason": "Error", "finishedAt": FINISHED}]),
    "a pod evicted before any exit leaves the replica's earlier entry": (
        {"recreatedExits": [KEPT_137]}, [make_pod("Worker", 1, "Failed", pod_reason="Evicted")], 2, [KEPT_137]),
    "a pod evicted after a restart in place: its container's last exit": (
        {}, [restarted_in_place_then_evicted(0)], 1,
        [{"index": 0, "exitCode": 143, "reason": "Error", "finishedAt": "2026-11-21T09:58:00Z"}]),
    "an index the job no longer has (scaled down) is dropped": ({"recreatedExits": [KEPT_137]}, [], 1, []),
    "entries not as tfop writes them are dropped": (
        {"recreatedExits": [{"exitCode": 1}, "137", {"index": "1", "exitCode": 1}]}, [], 2, []),
    "a recreatedExits that is not a list is ignored": ({"recreatedExits": {"1": 137}}, [], 2, []),
}


@pytest.mark.parametrize(("replica_status", "recreated", "replicas", "expected"), CASES.values(), ids=CASES.keys())
def test_recreated_exits(replica_status: Any, recreated: list[dict[str, Any]], replicas: int,
                         expected: list[dict[str, Any]]) -> None:
    before = ReplicaStatus.from_json(replica_status) if isinstance(replica_status, dict) else None
    exits = recreated_exits(before, [PodView.of(pod) for pod in recreated], replicas)
    assert [entry.to_json() for entry in exits] == expected


def test_none_kept_for_a_job_that_never_recreated_a_pod() -> None:
    assert recreated_exits(ReplicaStatus.from_json({"active": 1}), [], 1) == []
    assert recreated_exits(None, [], 1) == []
