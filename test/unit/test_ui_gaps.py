"""The page's queue and gang column, the links a job names, its happenings, the rows kept per resourceVersion,
and a followed log: tables whose expected rows are written out."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from markupsafe import Markup

from tfop.kube.errors import NotFound
from tfop.ui import log_follow
from tfop.ui.log_follow import Lines, follow_log
from tfop.ui.row_cache import RowCache
from tfop.ui.views.happenings import Happening, happenings
from tfop.ui.views.job_list import JobRow, queue_state
from tfop.ui.views.links import JobLink, job_links, link_url

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2026-03-01T{clock}+00:00")


def job(labels: dict[str, str] | None = None, suspend: bool | None = None, **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {} if suspend is None else {"runPolicy": {"suspend": suspend}}
    return {"metadata": {"namespace": "a", "name": "j", "labels": labels or {}}, "spec": spec, "status": status}


QUEUED = {"kueue.x-k8s.io/queue-name": "team-a"}


@pytest.mark.parametrize(("obj", "state", "expected"), [
    (job(), "Running", ""),
    (job(QUEUED, suspend=True), "Suspended", "waiting for admission to queue team-a"),
    (job(QUEUED, suspend=False), "Running", "admitted to queue team-a"),
    (job(QUEUED), "Succeeded", ""),
    (job(podGroupPhase="Scheduling"), "Created", "PodGroup Scheduling"),
    (job(QUEUED, suspend=False, podGroupPhase="Inqueue", conditions=[
        {"type": "Running", "status": "False", "message": "j waits. [GangUnschedulable] 2 of 4 pods fit"}]),
     "Created", "admitted to queue team-a; PodGroup Inqueue (cannot be placed)"),
    (job(podGroupPhase=""), "Running", ""),
])
def test_the_queue_and_gang_state_comes_from_the_job(obj: dict[str, Any], state: str, expected: str) -> None:
    assert queue_state(obj, state) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("https://tb.example/#run=j", "https://tb.example/#run=j"),
    ("HTTP://grafana.example:3000/d/x?var-job=j", "HTTP://grafana.example:3000/d/x?var-job=j"),
    ("javascript:alert(1)", None),
    ("data:text/html,<script>", None),
    ("//tb.example/", None),
    ("/relative", None),
    ("https://", None),
    ("https://tb.example/ x", None),
    ("https://tb.example/\u0000", None),
    ("https://[::1/", None),
])
def test_only_absolute_http_urls_are_links(value: str, expected: str | None) -> None:
    assert link_url(value) == expected


def test_the_links_a_job_names() -> None:
    obj = {"metadata": {"annotations": {
        "tfop.kubeflow.org/link-tensorboard": " https://tb.example/j ",
        "tfop.kubeflow.org/link-grafana": "javascript:alert(1)",
        "tfop.kubeflow.org/link-runbook": "https://wiki.example/<b>",
        "tfop.kubeflow.org/link-": "https://nameless.example/",
        "tfop.kubeflow.org/link-empty": "",
        "tfop.kubeflow.org/restart-scope": "Job",
    }}}
    assert job_links(obj) == [
        JobLink("Grafana", "javascript:alert(1)", None),
        JobLink("runbook", "https://wiki.example/<b>", "https://wiki.example/<b>"),
        JobLink("TensorBoard", "https://tb.example/j", "https://tb.example/j"),
    ]


def event(reason: str, time: str, message: str, kind: str = "TFJob") -> dict[str, Any]:
    return {"involvedObject": {"kind": kind, "name": "j"}, "reason": reason, "message": message,
            "lastTimestamp": f"2026-03-01T{time}Z"}


def deleted_pod(name: str, deletion: str, grace: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "deletionTimestamp": f"2026-03-01T{deletion}Z",
                         "deletionGracePeriodSeconds": grace}}


def test_the_happenings_of_a_job() -> None:
    pods = [
        # Restarted together at 03:12:00 (deletions asked for within a second; the node-lost one forced).
        deleted_pod("j-worker-0", "03:12:30", 30), deleted_pod("j-worker-1", "03:12:31", 30),
        deleted_pod("j-ps-0", "03:12:00", 0),
        # Alone: a replica's own restart, not a restart together.
        deleted_pod("j-worker-2", "03:20:30", 30),
        # Deleted by the cleanup once the job succeeded: not a restart.
        deleted_pod("j-chief-0", "03:40:30", 30), deleted_pod("j-worker-0b", "03:40:30", 30),
        {"metadata": {"name": "j-worker-3"}},
    ]
    events = [
        event("NodeLost", "03:11:58", "j: PS 0's node n1 is unreachable; replacing it without waiting."),
        event("Resized", "03:30:00", "j: Worker 4 -> 2, asked by a User; every replica restarts together."),
        event("Started", "03:12:40", "Started container tensorflow", kind="Pod"),
        event("TFJobRestarting", "03:05:00", "long before"),
    ]
    status = {"conditions": [{"type": "Succeeded", "status": "True", "lastTransitionTime": "2026-03-01T03:40:00Z"}],
              # Told by its event already (same moment): not twice.
              "lastResize": {"from": 4, "to": 2, "time": "2026-03-01T03:30:01Z", "message": "the same"}}
    assert happenings(pods, events, {"status": status}) == [
        Happening(at("03:11:58"), "node-loss", "node lost",
                  "j: PS 0's node n1 is unreachable; replacing it without waiting."),
        Happening(at("03:12:00"), "restart-together", "3 restarted together",
                  "j-ps-0, j-worker-0, j-worker-1: j: PS 0's node n1 is unreachable; replacing it without waiting."),
        Happening(at("03:30:00"), "resize", "resized",
                  "j: Worker 4 -> 2, asked by a User; every replica restarts together."),
    ]


def test_a_resize_whose_event_expired_comes_from_the_status() -> None:
    status = {"lastResize": {"from": 2, "to": 3, "time": "2026-03-01T04:00:00Z", "message": ""},
              "conditions": [{"type": "Restarting", "status": "True", "lastTransitionTime": "2026-03-01T04:00:01Z",
                              "message": "j is restarting all 2 live replicas together"}]}
    pods = [deleted_pod("j-worker-0", "04:00:31", 30), deleted_pod("j-worker-1", "04:00:31", 30)]
    assert happenings(pods, [], {"status": status}) == [
        Happening(at("04:00:00"), "resize", "resized", "Worker 2 -> 3"),
        Happening(at("04:00:01"), "restart-together", "2 restarted together",
                  "j-worker-0, j-worker-1: j is restarting all 2 live replicas together"),
    ]


def test_a_row_is_rendered_once_per_resource_version_and_its_times_move() -> None:
    rendered: list[str] = []

    def render(row: JobRow) -> tuple[Markup, Markup]:
        rendered.append(f"{row.name}@{row.state}")
        return Markup(f"<{row.name}>"), Markup(f"</{row.name}>")

    cache = RowCache(render)
    first = {"metadata": {"namespace": "a", "name": "j", "resourceVersion": "7",
                          "creationTimestamp": "2026-03-01T11:55:00Z"}, "status": {"startTime": "2026-03-01T11:56:00Z"}}
    created = ('<td class="time col-created"><time datetime="2026-03-01T11:55:00Z" title="2026-03-01T11:55:00Z" '
               'data-rel>{}</time></td>')
    started = ('<td class="time col-started"><time datetime="2026-03-01T11:56:00Z" title="2026-03-01T11:56:00Z" '
               'data-rel>{}</time></td>')
    unfinished = '<td class="time col-finished"></td>'
    running = '<td class="time col-duration"><span data-since="2026-03-01T11:56:00Z">{}</span></td>'
    assert cache.row(first).html(NOW) == ("<j>" + created.format("5m ago") + started.format("4m ago") + unfinished
                                          + running.format("4m") + "</j>")
    later = datetime(2026, 3, 1, 12, 1, 3, tzinfo=UTC)
    assert cache.row(first).html(later) == ("<j>" + created.format("6m3s ago") + started.format("5m3s ago")
                                            + unfinished + running.format("5m3s") + "</j>")
    # Without a moment, the row's HTML is the same whenever it is asked: the browser writes its times.
    assert cache.row(first).html(None) == ("<j>" + created.format("") + started.format("") + unfinished
                                           + running.format("") + "</j>")
    assert rendered == ["j@New"]
    changed = {**first, "metadata": {**first["metadata"], "resourceVersion": "8"},
               "status": {"conditions": [{"type": "Running", "status": "True"}]}}
    row = cache.row(changed)
    assert (row.row.state, str(row.head), str(row.tail)) == ("Running", "<j>", "</j>")
    assert rendered == ["j@New", "j@Running"]
    unversioned = {"metadata": {"namespace": "a", "name": "k"}, "status": {}}
    cache.row(unversioned)
    cache.row(unversioned)
    assert rendered == ["j@New", "j@Running", "k@New", "k@New"]
    assert len(cache) == 1
    cache.forget(changed)
    assert len(cache) == 0


class LogOf(Iterator[bytes]):
    """A log stream: gives its lines, then waits until closed when `follow`."""

    def __init__(self, lines: list[bytes], follow: bool) -> None:
        self.lines = list(lines)
        self.follow = follow
        self.closed = threading.Event()

    def __next__(self) -> bytes:
        if self.lines:
            return self.lines.pop(0)
        if self.follow:
            self.closed.wait()
        raise StopIteration

    def close(self) -> None:
        self.closed.set()


def collect(lines: LogOf, allowed: list[bool], until: int) -> list[str]:
    async def run() -> list[str]:
        got = []
        stream = follow_log(lambda: lines, lambda: allowed.pop(0) if allowed else True, recheck_seconds=0.05)
        async for message in stream:
            got.append(message)
            if len(got) >= until:
                break
        await stream.aclose()
        return got
    return asyncio.run(run())


def merged(messages: list[str]) -> list[tuple[str, list[str]]]:
    """(event, its data lines), consecutive `lines` events as one: how the reader thread's lines are batched
    depends on when it runs."""
    events: list[tuple[str, list[str]]] = []
    for message in messages:
        fields = message.rstrip("\n").split("\n")
        name, data = fields[0].removeprefix("event: "), [field.removeprefix("data: ") for field in fields[1:]]
        if events and name == "lines" and events[-1][0] == "lines":
            events[-1][1].extend(data)
        else:
            events.append((name, data))
    return events


def test_a_followed_log_is_sent_as_lines_then_its_end() -> None:
    lines = LogOf([b"step 1", b"<script>x</script>", b"\xff bad byte"], follow=False)
    assert merged(collect(lines, [], until=10)) == [
        ("started", [""]), ("lines", ["step 1", "<script>x</script>", "\ufffd bad byte"]), ("end", [""])]
    assert lines.closed.is_set()


def test_a_followed_log_ends_when_access_is_revoked_and_closes_the_stream() -> None:
    lines = LogOf([b"one"], follow=True)
    got = collect(lines, [False], until=10)
    assert got[0] == "event: started\ndata: \n\n"
    assert got[-1] == "event: denied\ndata: \n\n"
    assert "".join(got).count("data: one") == 1
    assert lines.closed.is_set()


def test_a_client_that_goes_closes_the_stream() -> None:
    lines = LogOf([b"one"], follow=True)
    collect(lines, [], until=1)
    assert lines.closed.is_set()


def test_a_log_the_apiserver_refuses_ends_with_why() -> None:
    def refuse() -> Lines:
        raise NotFound(404, "NotFound", 'pods "p" not found')

    async def run() -> list[str]:
        return [message async for message in follow_log(refuse, lambda: True)]
    assert asyncio.run(run()) == ['event: end\ndata: The apiserver gave no log: 404 NotFound: pods "p" not found\n\n']


def test_a_slow_reader_bounds_the_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader thread waits for room rather than holding the whole log."""
    monkeypatch.setattr(log_follow, "BUFFER_LINES", 3)
    lines = LogOf([str(i).encode() for i in range(50)], follow=False)
    assert merged(collect(lines, [], until=100)) == [
        ("started", [""]), ("lines", [str(i) for i in range(50)]), ("end", [""])]
