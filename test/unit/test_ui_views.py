"""The page's view models, from raw objects as the apiserver sends them to what the templates show: tables whose
expected rows are written out."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from tfop.ui.views.clock_text import age_text, duration_html, relative_text, time_html
from tfop.ui.views.job_list import JobRow, Page, ReplicaCounts, SortKey, job_row, page_of, select_rows
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
from tfop.ui.views.list_query import ListQuery

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def job(namespace: str, name: str, conditions: Sequence[tuple[str, str, str]] = (),
        replica_statuses: dict[str, dict[str, Any]] | None = None, created: str = "2026-03-01T11:55:00Z",
        start: str | None = None, completion: str | None = None, failed_at: str = "") -> dict[str, Any]:
    times = {key: value for key, value in (("startTime", start), ("completionTime", completion)) if value}
    return {"metadata": {"namespace": namespace, "name": name, "creationTimestamp": created},
            "status": {"conditions": [{"type": t, "status": s, "message": m, "lastTransitionTime": failed_at}
                                      for t, s, m in conditions],
                       "replicaStatuses": replica_statuses or {}, **times}}


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


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2026-03-01T{clock}+00:00")


CREATED = datetime(2026, 3, 1, 11, 55, tzinfo=UTC)


@pytest.mark.parametrize(("obj", "expected"), [
    (job("a", "new"), JobRow("a", "new", "New", CREATED, None, None, (), 0, "")),
    (job("a", "running", [("Created", "True", "made"), ("Running", "True", "all 3 running")],
         {"Worker": {"active": 2, "restarts": 1}, "PS": {"active": 1}}, start="2026-03-01T11:56:00Z"),
     JobRow("a", "running", "Running", CREATED, at("11:56:00"), None,
            (ReplicaCounts("Worker", 2, 0, 0, 1), ReplicaCounts("PS", 1, 0, 0, 0)), 1, "all 3 running")),
    # The last True condition gives the state; a False one after it does not.
    (job("a", "done", [("Created", "True", ""), ("Running", "False", ""), ("Succeeded", "True", "done"),
                       ("Restarting", "False", "")],
         {"Chief": {"succeeded": 1}, "Worker": {"succeeded": 2, "failed": 1, "restarts": 2}},
         start="2026-03-01T11:56:00Z", completion="2026-03-01T11:58:30Z"),
     JobRow("a", "done", "Succeeded", CREATED, at("11:56:00"), at("11:58:30"),
            (ReplicaCounts("Chief", 0, 1, 0, 0), ReplicaCounts("Worker", 0, 2, 1, 2)), 2, "done")),
    # Failed without a completionTime: it finished when its Failed condition became True.
    (job("a", "failed", [("Failed", "True", "worker 0 exited 1")], {}, start="2026-03-01T11:56:00Z",
         failed_at="2026-03-01T11:57:00Z"),
     JobRow("a", "failed", "Failed", CREATED, at("11:56:00"), at("11:57:00"), (), 0, "worker 0 exited 1")),
    # Junk in the status is shown as nothing rather than breaking the row.
    (job("a", "junk", [("Created", "True", "")], {"Worker": {"active": "two", "failed": True}}, start="soon"),
     JobRow("a", "junk", "Created", CREATED, None, None, (ReplicaCounts("Worker", 0, 0, 0, 0),), 0, "")),
])
def test_job_rows(obj: dict[str, Any], expected: JobRow) -> None:
    assert job_row(obj) == expected


def listed(**fields: Any) -> JobRow:
    """A row of the list with only what the test sets."""
    defaults: dict[str, Any] = {"namespace": "a", "name": "j", "state": "Running", "created": None, "started": None,
                                "finished": None, "replicas": (), "restarts": 0, "message": "", "queue": ""}
    return JobRow(**{**defaults, **fields})


ROWS = [
    listed(namespace="b", name="x", created=at("11:00:00"), started=at("11:01:00"), finished=at("11:30:00"),
           state="Succeeded", message="done", restarts=2),
    listed(namespace="a", name="y", created=at("11:40:00"), started=at("11:41:00"), state="Running",
           message="3 of 3 running"),
    listed(namespace="a", name="x", created=at("11:20:00"), started=None, state="Created",
           message="waiting for admission", queue="waiting for admission to queue team-a"),
    listed(namespace="c", name="z", created=at("11:50:00"), started=at("11:50:10"), finished=at("11:51:00"),
           state="Failed", message="worker 0 exited 1 (permanent)", restarts=5),
]


def names(rows: list[JobRow]) -> list[str]:
    return [f"{row.namespace}/{row.name}" for row in rows]


@pytest.mark.parametrize(("options", "expected"), [
    # Newest first when nothing is asked.
    ({}, ["c/z", "a/y", "a/x", "b/x"]),
    ({"descending": False}, ["b/x", "a/x", "a/y", "c/z"]),
    ({"sort": "name", "descending": False}, ["a/x", "b/x", "a/y", "c/z"]),
    ({"sort": "namespace", "descending": False}, ["a/x", "a/y", "b/x", "c/z"]),
    ({"sort": "state", "descending": False}, ["a/x", "c/z", "a/y", "b/x"]),
    # Not started sorts last when the longest or latest come first.
    ({"sort": "started"}, ["c/z", "a/y", "b/x", "a/x"]),
    ({"sort": "finished"}, ["c/z", "b/x", "a/y", "a/x"]),
    # A running job's duration runs to now (12:00): a/y 19m, b/x 29m, c/z 50s.
    ({"sort": "duration"}, ["b/x", "a/y", "c/z", "a/x"]),
    ({"sort": "restarts"}, ["c/z", "b/x", "a/y", "a/x"]),
    # Filters, and words in the name, state, queue or message, in any case, all of them.
    ({"namespace": "a"}, ["a/y", "a/x"]),
    ({"state": "Failed"}, ["c/z"]),
    ({"words": "/X"}, ["a/x", "b/x"]),
    ({"words": "team-a"}, ["a/x"]),
    ({"words": "exited permanent"}, ["c/z"]),
    ({"words": "exited running"}, []),
    ({"words": "a/"}, ["a/y", "a/x"]),
    ({"namespace": "b", "state": "Failed"}, []),
])
def test_the_list_filters_searches_and_sorts(options: dict[str, Any], expected: list[str]) -> None:
    assert names(select_rows(ROWS, lambda row: row, NOW, **options)) == expected


@pytest.mark.parametrize(("total", "number", "size", "expected"), [
    (0, None, None, Page(1, 1, 50, 0)),
    (120, None, None, Page(1, 3, 50, 120)),
    (120, "3", None, Page(3, 3, 50, 120)),
    (120, "9", None, Page(3, 3, 50, 120)),  # past the last: the last
    (120, "0", None, Page(1, 3, 50, 120)),
    (120, "-2", "25", Page(1, 5, 25, 120)),
    (120, "2", "7", Page(2, 3, 50, 120)),  # a size not offered: the default
    (500, "1", "500", Page(1, 1, 500, 500)),
])
def test_pages(total: int, number: str | None, size: str | None, expected: Page) -> None:
    assert page_of(total, number, size) == expected


@pytest.mark.parametrize(("page", "first", "last"), [
    (Page(1, 1, 50, 0), 0, 0), (Page(1, 3, 50, 120), 0, 50), (Page(3, 3, 50, 120), 100, 120),
])
def test_a_pages_rows(page: Page, first: int, last: int) -> None:
    assert (page.first, page.last) == (first, last)


@pytest.mark.parametrize(("params", "expected", "url"), [
    ({}, ListQuery(), "/"),
    ({"sort": "name"}, ListQuery(sort="name", descending=False), "/?sort=name"),
    ({"sort": "name", "order": "desc"}, ListQuery(sort="name", descending=True), "/?sort=name&order=desc"),
    ({"sort": "bogus", "order": "sideways"}, ListQuery(), "/"),
    ({"order": "asc", "q": "  mnist ", "page": "2", "per": "25", "namespace": "a", "state": "Running"},
     ListQuery("a", "Running", "mnist", "created", False, "2", "25"),
     "/?namespace=a&state=Running&q=mnist&order=asc&page=2&per=25"),
])
def test_the_list_query_from_and_to_its_url(params: dict[str, str], expected: ListQuery, url: str) -> None:
    assert ListQuery.parse(params) == expected
    assert expected.url() == url


@pytest.mark.parametrize(("query", "key", "link", "aria"), [
    # The column sorted by flips its order; another starts at its own first order, on page 1.
    (ListQuery(), "created", "/?order=asc", "descending"),
    (ListQuery(descending=False), "created", "/", "ascending"),
    (ListQuery(page="3"), "name", "/?sort=name", "none"),
    (ListQuery(sort="name", descending=False, words="x"), "name", "/?q=x&sort=name&order=desc", "ascending"),
    (ListQuery(sort="name", descending=False), "duration", "/?sort=duration", "none"),
])
def test_the_column_headers_sort(query: ListQuery, key: SortKey, link: str, aria: str) -> None:
    assert (query.sorted_by(key), query.aria_sort(key)) == (link, aria)


@pytest.mark.parametrize(("moment", "expected"), [
    (at("11:55:00"), "5m ago"), (at("12:00:00"), "0s ago"), (at("12:03:00"), "in 3m"),
    (datetime(2026, 2, 27, 11, 0, tzinfo=UTC), "2d1h ago"),
])
def test_relative_times(moment: datetime, expected: str) -> None:
    assert relative_text(moment, NOW) == expected


def test_times_carry_the_moment_for_the_hover_and_the_browser() -> None:
    assert time_html(at("11:55:00"), NOW) == ('<time datetime="2026-03-01T11:55:00Z" title="2026-03-01T11:55:00Z" '
                                              'data-rel>5m ago</time>')
    assert time_html(None, NOW) == ""
    assert duration_html(at("11:50:00"), at("11:52:30"), NOW) == "2m30s"
    assert duration_html(at("11:50:00"), None, NOW) == '<span data-since="2026-03-01T11:50:00Z">10m</span>'
    assert duration_html(None, None, NOW) == ""


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
        # Recreated once, as the status counts it for the list, though this page never saw the pod before.
        ReplicaRow("worker", "1", "j-worker-1", "node-1", "Pending", 1,
                   LastExit(137, "Error", "Retryable", of_recreated_pod=True), recreated=1),
        ReplicaRow("worker", "2", "j-worker-2", "node-1", "Running", 2, LastExit(143, "Error", "Retryable"),
                   recreated=1),
        ReplicaRow("ps", "0", "j-ps-0", "node-1", "Running", 1,
                   LastExit(0, "OOMKilled", "Retryable", of_recreated_pod=True), recreated=1),
    ]


def test_a_replicas_restarts_count_its_earlier_pods_that_failed() -> None:
    """Restarts in place plus each earlier pod of the same slot that failed (the page saw them deleted)."""
    def earlier(uid: str, code: int) -> dict[str, Any]:
        gone = pod("j-worker-0", "worker", "0", phase="Failed", state=terminated(code))
        gone["metadata"]["uid"] = uid
        return gone

    now = pod("j-worker-0", "worker", "0", restarts=1, last_state=terminated(143))
    now["metadata"]["uid"] = "current"
    other = pod("j-worker-1", "worker", "1")
    rows = replica_rows([now, other], {}, [earlier("a", 137), earlier("b", 1), earlier("current", 143)])
    assert [(row.pod, row.restarts, row.recreated) for row in rows] == [("j-worker-0", 3, 2), ("j-worker-1", 0, 0)]


def test_events_of_the_job_and_its_pods_merge_in_time_order() -> None:
    events: list[dict[str, Any]] = [
        {"involvedObject": {"kind": "Pod", "name": "j-worker-0"}, "type": "Normal", "reason": "Started",
         "message": "Started container", "lastTimestamp": "2026-03-01T11:56:05Z", "count": 1,
         "metadata": {"uid": "u-1"}},
        {"involvedObject": {"kind": "TFJob", "name": "j"}, "type": "Normal", "reason": "SuccessfulCreatePod",
         "message": "Created pod: j-worker-0", "lastTimestamp": "2026-03-01T11:56:00Z"},
        {"involvedObject": {"kind": "Pod", "name": "j-worker-0"}, "type": "Warning", "reason": "BackOff",
         "message": "<b>restarting</b>", "eventTime": "2026-03-01T11:57:00.123456Z", "series": {"count": 4}},
        {"involvedObject": {"kind": "TFJob", "name": "j"}, "type": "Normal", "reason": "Undated", "message": ""},
    ]
    assert event_rows(events) == [
        EventRow("", "Normal", "Undated", "TFJob/j", "", 1, "at-0"),
        EventRow("2026-03-01T11:56:00Z", "Normal", "SuccessfulCreatePod", "TFJob/j", "Created pod: j-worker-0", 1,
                 "at-1"),
        EventRow("2026-03-01T11:56:05Z", "Normal", "Started", "Pod/j-worker-0", "Started container", 1, "u-1"),
        EventRow("2026-03-01T11:57:00Z", "Warning", "BackOff", "Pod/j-worker-0", "<b>restarting</b>", 4, "at-3"),
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
