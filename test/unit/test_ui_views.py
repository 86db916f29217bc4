"""The page's view models, from raw objects as the apiserver sends them to what the templates show: tables whose
expected rows are written out."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from tfop.ui.views.clock_text import age_text
from tfop.ui.views.job_list import JobRow, ReplicaCounts, job_row, select_rows
from tfop.ui.views.job_page import (
    EventRow,
    LastExit,
    RecreatedExit,
    ReplicaRow,
    event_rows,
    last_exit,
    recreated_exits,
    replica_rows,
    tf_config_text,
)

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def job(namespace: str, name: str, conditions: Sequence[tuple[str, str, str]] = (),
        replica_statuses: dict[str, dict[str, Any]] | None = None,
        created: str = "2026-03-01T11:55:00Z") -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name, "creationTimestamp": created},
            "status": {"conditions": [{"type": t, "status": s, "message": m} for t, s, m in conditions],
                       "replicaStatuses": replica_statuses or {}}}


def pod(name: str, replica_type: str, index: str, *, phase: str = "Running", node: str = "node-1",
        state: dict[str, Any] | None = None, last_state: dict[str, Any] | None = None,
        restarts: int = 0) -> dict[str, Any]:
    status = {"name": "tensorflow", "restartCount": restarts, "state": state or {}, "lastState": last_state or {}}
    return {"metadata": {"name": name, "labels": {"training.kubeflow.org/replica-type": replica_type,
                                                  "training.kubeflow.org/replica-index": index}},
            "spec": {"nodeName": node}, "status": {"phase": phase, "containerStatuses": [status]}}


def terminated(code: int, reason: str = "Error") -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": reason}}


@pytest.mark.parametrize(("seconds", "expected"), [
    (-3, "0s"), (0, "0s"), (45, "45s"), (60, "1m"), (303, "5m3s"), (3600, "1h"), (7500, "2h5m"),
    (86400, "1d"), (3 * 86400 + 4 * 3600 + 59, "3d4h"),
])
def test_ages_are_written_as_kubectl_writes_them(seconds: float, expected: str) -> None:
    assert age_text(seconds) == expected


@pytest.mark.parametrize(("obj", "expected"), [
    (job("a", "new"), JobRow("a", "new", "New", "5m", (), 0, "")),
    (job("a", "running", [("Created", "True", "made"), ("Running", "True", "all 3 running")],
         {"Worker": {"active": 2, "restarts": 1}, "PS": {"active": 1}}),
     JobRow("a", "running", "Running", "5m", (ReplicaCounts("Worker", 2, 0, 0, 1), ReplicaCounts("PS", 1, 0, 0, 0)),
            1, "all 3 running")),
    # The last True condition gives the state; a False one after it does not.
    (job("a", "done", [("Created", "True", ""), ("Running", "False", ""), ("Succeeded", "True", "done"),
                       ("Restarting", "False", "")],
         {"Chief": {"succeeded": 1}, "Worker": {"succeeded": 2, "failed": 1, "restarts": 2}}),
     JobRow("a", "done", "Succeeded", "5m", (ReplicaCounts("Chief", 0, 1, 0, 0), ReplicaCounts("Worker", 0, 2, 1, 2)),
            2, "done")),
    # Junk in the status is shown as nothing rather than breaking the row.
    (job("a", "junk", [("Created", "True", "")], {"Worker": {"active": "two", "failed": True}}),
     JobRow("a", "junk", "Created", "5m", (ReplicaCounts("Worker", 0, 0, 0, 0),), 0, "")),
])
def test_job_rows(obj: dict[str, Any], expected: JobRow) -> None:
    assert job_row(obj, NOW) == expected


def test_the_list_filters_by_namespace_and_state_and_sorts_by_namespace_then_name() -> None:
    jobs = [job("b", "x", [("Running", "True", "")]), job("a", "y", [("Failed", "True", "")]),
            job("a", "x", [("Running", "True", "")]), job("c", "z")]
    rows = [job_row(obj, NOW) for obj in jobs]

    def same(row: JobRow) -> JobRow:
        return row

    assert [(r.namespace, r.name) for r in select_rows(rows, same)] == [("a", "x"), ("a", "y"), ("b", "x"), ("c", "z")]
    assert [(r.namespace, r.name) for r in select_rows(rows, same, namespace="a")] == [("a", "x"), ("a", "y")]
    assert [(r.namespace, r.name) for r in select_rows(rows, same, state="Running")] == [("a", "x"), ("b", "x")]
    assert [(r.namespace, r.name) for r in select_rows(rows, same, namespace="b", state="Failed")] == []


@pytest.mark.parametrize(("state", "last_state", "expected"), [
    ({"running": {}}, {}, None),
    (terminated(0, "Completed"), {}, LastExit(0, "Completed", "Succeeded")),
    (terminated(1), {}, LastExit(1, "Error", "Permanent")),
    (terminated(127), {}, LastExit(127, "Error", "Permanent")),
    (terminated(128), {}, LastExit(128, "Error", "Retryable")),
    (terminated(137, "OOMKilled"), {}, LastExit(137, "OOMKilled", "Retryable")),
    (terminated(255), {}, LastExit(255, "Error", "Retryable")),
    (terminated(256), {}, LastExit(256, "Error", "Permanent")),
    # OOMKilled is retryable whatever the code, as the planner decides.
    (terminated(0, "OOMKilled"), {}, LastExit(0, "OOMKilled", "Retryable")),
    # Restarted in place: the exit before the restart.
    ({"running": {}}, terminated(143), LastExit(143, "Error", "Retryable")),
])
def test_the_last_exit_and_its_class(state: dict[str, Any], last_state: dict[str, Any],
                                     expected: LastExit | None) -> None:
    assert last_exit(pod("p", "worker", "0", state=state, last_state=last_state)) == expected


def test_replica_rows_go_by_type_then_index() -> None:
    pods = [pod("j-worker-10", "worker", "10"), pod("j-ps-0", "ps", "0", node=""),
            pod("j-worker-2", "worker", "2", restarts=3, last_state=terminated(137)),
            pod("j-chief-0", "chief", "0", phase="Succeeded", state=terminated(0, "Completed"))]
    pods[1]["metadata"]["deletionTimestamp"] = "2026-03-01T11:59:00Z"
    assert replica_rows(pods) == [
        ReplicaRow("chief", "0", "j-chief-0", "node-1", "Succeeded", 0, LastExit(0, "Completed", "Succeeded")),
        ReplicaRow("worker", "2", "j-worker-2", "node-1", "Running", 3, LastExit(137, "Error", "Retryable")),
        ReplicaRow("worker", "10", "j-worker-10", "node-1", "Running", 0, None),
        ReplicaRow("ps", "0", "j-ps-0", "", "Running (terminating)", 0, None),
    ]


RECREATED = job("ns", "j", replica_statuses={
    "Worker": {"active": 2, "recreatedExits": [
        {"index": 1, "exitCode": 137, "reason": "Error", "finishedAt": "2026-03-01T11:58:00Z"},
        {"index": 2, "exitCode": 1, "reason": "Error"},
        {"index": 3, "exitCode": "137"},  # not as tfop writes it
    ]},
    "PS": {"active": 1, "recreatedExits": [{"index": 0, "exitCode": 0, "reason": "OOMKilled"}]},
    "Chief": {"active": 1},
})


def test_the_exits_of_recreated_pods_are_read_from_the_jobs_status() -> None:
    assert recreated_exits(RECREATED) == {
        ("worker", "1"): RecreatedExit("worker", "1", 137, "Error", datetime(2026, 3, 1, 11, 58, tzinfo=UTC)),
        ("worker", "2"): RecreatedExit("worker", "2", 1, "Error", None),
        ("ps", "0"): RecreatedExit("ps", "0", 0, "OOMKilled", None),
    }
    assert recreated_exits(job("ns", "j")) == {}
    assert recreated_exits({"metadata": {"name": "j"}}) == {}
    assert recreated_exits({"status": {"replicaStatuses": {"Worker": {"recreatedExits": {"1": 137}}}}}) == {}


def test_a_recreated_replica_shows_the_exit_of_its_pod_before_until_its_new_pod_has_one() -> None:
    pods = [pod("j-worker-0", "worker", "0"),
            pod("j-worker-1", "worker", "1", phase="Pending"),  # recreated after its exit 137
            pod("j-worker-2", "worker", "2", restarts=1, last_state=terminated(143)),  # its own exit is newer
            pod("j-ps-0", "ps", "0")]
    assert replica_rows(pods, recreated_exits(RECREATED)) == [
        ReplicaRow("worker", "0", "j-worker-0", "node-1", "Running", 0, None),
        ReplicaRow("worker", "1", "j-worker-1", "node-1", "Pending", 0,
                   LastExit(137, "Error", "Retryable", of_recreated_pod=True)),
        ReplicaRow("worker", "2", "j-worker-2", "node-1", "Running", 1, LastExit(143, "Error", "Retryable")),
        ReplicaRow("ps", "0", "j-ps-0", "node-1", "Running", 0,
                   LastExit(0, "OOMKilled", "Retryable", of_recreated_pod=True)),
    ]


def test_events_of_the_job_and_its_pods_merge_in_time_order() -> None:
    events: list[dict[str, Any]] = [
        {"involvedObject": {"kind": "Pod", "name": "j-worker-0"}, "type": "Normal", "reason": "Started",
         "message": "Started container", "lastTimestamp": "2026-03-01T11:56:05Z", "count": 1},
        {"involvedObject": {"kind": "TFJob", "name": "j"}, "type": "Normal", "reason": "SuccessfulCreatePod",
         "message": "Created pod: j-worker-0", "lastTimestamp": "2026-03-01T11:56:00Z"},
        {"involvedObject": {"kind": "Pod", "name": "j-worker-0"}, "type": "Warning", "reason": "BackOff",
         "message": "<b>restarting</b>", "eventTime": "2026-03-01T11:57:00.123456Z", "series": {"count": 4}},
        {"involvedObject": {"kind": "TFJob", "name": "j"}, "type": "Normal", "reason": "Undated", "message": ""},
    ]
    assert event_rows(events) == [
        EventRow("", "Normal", "Undated", "TFJob/j", "", 1),
        EventRow("2026-03-01T11:56:00Z", "Normal", "SuccessfulCreatePod", "TFJob/j", "Created pod: j-worker-0", 1),
        EventRow("2026-03-01T11:56:05Z", "Normal", "Started", "Pod/j-worker-0", "Started container", 1),
        EventRow("2026-03-01T11:57:00Z", "Warning", "BackOff", "Pod/j-worker-0", "<b>restarting</b>", 4),
    ]


@pytest.mark.parametrize(("raw", "expected"), [
    ("", ""),
    ('{"task":{"type":"worker","index":0},"cluster":{"worker":["w:2222"]}}',
     ('{\n  "cluster": {\n    "worker": [\n      "w:2222"\n    ]\n  },\n  "task": {\n    "index": 0,\n'
      '    "type": "worker"\n  }\n}')),
    ("not json", "not json"),
])
def test_tf_config_is_shown_indented(raw: str, expected: str) -> None:
    sidecar = {"name": "sidecar", "env": [{"name": "TF_CONFIG", "value": "the sidecar's"}]}
    main = {"name": "tensorflow", "env": [{"name": "OTHER", "value": "x"}, {"name": "TF_CONFIG", "value": raw}]}
    assert tf_config_text({"spec": {"containers": [sidecar, main] if raw else [main]}}) == expected
