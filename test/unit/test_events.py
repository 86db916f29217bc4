from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from tfop.kube.clock import FakeClock
from tfop.kube.errors import ApiError, NotFound
from tfop.kube.events import NORMAL, WARNING, EventRecorder, truncate_message
from tfop.kube.metrics import KubeMetrics
from tfop.kube.resource import EVENTS, Resource


class RecordingSink:
    """Stands in for KubeClient: keeps written Events by (namespace, name) and every call made."""

    def __init__(self) -> None:
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail_next: ApiError | None = None

    def _maybe_fail(self) -> None:
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error

    def create(self, resource: Resource, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        assert resource == EVENTS and namespace is not None and namespace == body["metadata"]["namespace"]
        self.calls.append(("create", body["metadata"]["name"]))
        self._maybe_fail()
        self.events[(namespace, body["metadata"]["name"])] = copy.deepcopy(body)
        return body

    def patch(
        self, resource: Resource, name: str, patch: Any, namespace: str | None = None, *, patch_type: str = "merge"
    ) -> dict[str, Any]:
        assert resource == EVENTS and patch_type == "merge" and namespace is not None
        self.calls.append(("patch", name))
        self._maybe_fail()
        if (namespace, name) not in self.events:
            raise NotFound(404, "NotFound", f'events "{name}" not found')
        self.events[(namespace, name)].update(patch)
        return self.events[(namespace, name)]

    def only_event(self) -> dict[str, Any]:
        assert len(self.events) == 1
        return next(iter(self.events.values()))


def job(name: str = "mnist", uid: str = "uid-1", namespace: str | None = "team-a") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": uid, "resourceVersion": "7"}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": metadata}


REGISTRY = CollectorRegistry()  # this module's own: what it reads is what its recorders did
METRICS = KubeMetrics.create(REGISTRY)


def dropped(reason: str) -> float:
    return REGISTRY.get_sample_value("tfop_events_dropped_total", {"reason": reason}) or 0.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=100.0, wall_start=1_700_000_000.0)  # 2023-11-14T22:13:20Z


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


def make_recorder(sink: RecordingSink, clock: FakeClock, **options: Any) -> EventRecorder:
    return EventRecorder(sink, "tfop", clock=clock, host="tfop-0", metrics=METRICS, **options)


def test_event_describes_the_object_and_the_component(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock)
    recorder.record(job(), WARNING, "FailedCreatePod", "quota exceeded")
    assert recorder.flush()
    event = sink.only_event()
    assert re.fullmatch(r"mnist\.[0-9a-f]+", event["metadata"]["name"])
    assert event["metadata"]["namespace"] == "team-a"
    assert event["involvedObject"] == {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist", "namespace": "team-a",
        "uid": "uid-1", "resourceVersion": "7",
    }
    assert (event["type"], event["reason"], event["message"]) == (WARNING, "FailedCreatePod", "quota exceeded")
    assert event["source"] == {"component": "tfop", "host": "tfop-0"}
    assert (event["reportingComponent"], event["reportingInstance"]) == ("tfop", "tfop-0")
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2023-11-14T22:13:20Z"
    assert event["count"] == 1


def test_events_about_cluster_scoped_objects_go_to_default(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock)
    recorder.record(job(namespace=None), NORMAL, "Seen", "hello")
    recorder.flush()
    event = sink.only_event()
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]


def test_identical_events_become_one_event_with_a_count(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock)
    for _ in range(100):
        recorder.record(job(), WARNING, "BackOff", "pod mnist-worker-0 restarting")
    recorder.flush()
    assert sink.calls == [("create", sink.only_event()["metadata"]["name"])]
    assert sink.only_event()["count"] == 100
    clock.step(60.0)
    for _ in range(5):
        recorder.record(job(), WARNING, "BackOff", "pod mnist-worker-0 restarting")
    recorder.flush()
    event = sink.only_event()
    assert sink.calls[-1] == ("patch", event["metadata"]["name"])
    assert event["count"] == 105
    assert event["firstTimestamp"] == "2023-11-14T22:13:20Z"
    assert event["lastTimestamp"] == "2023-11-14T22:14:20Z"


def test_aggregation_key_is_object_type_reason_and_message(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock)
    recorder.record(job(), NORMAL, "Created", "pod 0")
    later_version = job()
    later_version["metadata"]["resourceVersion"] = "8"
    recorder.record(later_version, NORMAL, "Created", "pod 0")  # same object: aggregates
    recorder.record(job(), NORMAL, "Created", "pod 1")
    recorder.record(job(), NORMAL, "Deleted", "pod 0")
    recorder.record(job(), WARNING, "Created", "pod 0")
    recorder.record(job(uid="uid-2"), NORMAL, "Created", "pod 0")  # same name, new incarnation
    recorder.flush()
    assert sorted(event["count"] for event in sink.events.values()) == [1, 1, 1, 1, 2]
    names = [event["metadata"]["name"] for event in sink.events.values()]
    assert len(set(names)) == 5  # unique even with a clock that did not move


def test_expired_event_is_written_again_with_its_count(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock)
    recorder.record(job(), WARNING, "BackOff", "restarting")
    recorder.flush()
    name = sink.only_event()["metadata"]["name"]
    sink.events.clear()  # the apiserver's TTL removed it
    recorder.record(job(), WARNING, "BackOff", "restarting")
    recorder.flush()
    assert sink.calls == [("create", name), ("patch", name), ("create", name)]
    assert sink.only_event()["count"] == 2


def test_spam_filter_limits_new_events_per_object(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock, burst=25, refill_seconds=300.0)
    before = dropped("spam_filter")
    for i in range(30):
        recorder.record(job(), WARNING, "Failed", f"attempt {i}")
    recorder.record(job(name="other", uid="uid-2"), WARNING, "Failed", "attempt 0")
    recorder.flush()
    assert len(sink.events) == 26  # 25 for the noisy job, 1 for the other
    assert dropped("spam_filter") - before == 5
    clock.step(299.0)
    recorder.record(job(), WARNING, "Failed", "attempt 30")
    recorder.flush()
    assert len(sink.events) == 26
    clock.step(1.0)  # one token refilled
    recorder.record(job(), WARNING, "Failed", "attempt 31")
    recorder.flush()
    assert len(sink.events) == 27


def test_spam_filter_does_not_freeze_counts_of_existing_events(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock, burst=2)
    for i in range(3):
        recorder.record(job(), WARNING, "Failed", f"reason {i}")
        recorder.flush()
    assert len(sink.events) == 2
    for _ in range(40):  # one write per record: the sender never gets to merge them
        recorder.record(job(), WARNING, "Failed", "reason 0")
        recorder.flush()
    counts = sorted(event["count"] for event in sink.events.values())
    assert counts == [1, 41]


def test_long_messages_are_truncated_to_one_kib() -> None:
    assert truncate_message("short") == "short"
    exact = "x" * 1024
    assert truncate_message(exact) == exact
    cut = truncate_message("x" * 5000)
    assert len(cut.encode()) == 1024 and cut.endswith("...")
    # Never a broken UTF-8 sequence: 3-byte characters are cut whole.
    cut = truncate_message("€" * 1000)
    assert len(cut.encode()) <= 1024 and cut == "€" * 340 + "..."


def test_recorded_messages_are_truncated_and_aggregate(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock)
    recorder.record(job(), WARNING, "Failed", "a" * 2000 + "tail one")
    recorder.record(job(), WARNING, "Failed", "a" * 2000 + "tail two")
    recorder.flush()
    event = sink.only_event()
    assert len(event["message"].encode()) == 1024
    assert event["count"] == 2


def test_full_queue_drops_new_events_but_still_merges_repeats(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock, queue_size=3)
    before = dropped("queue_full")
    for i in range(5):
        recorder.record(job(), NORMAL, "Step", f"step {i}")
    recorder.record(job(), NORMAL, "Step", "step 0")  # merges into the pending one: no drop
    assert dropped("queue_full") - before == 2
    recorder.flush()
    assert sorted(event["message"] for event in sink.events.values()) == ["step 0", "step 1", "step 2"]
    assert max(event["count"] for event in sink.events.values()) == 2


def test_api_errors_drop_the_event_and_the_sender_carries_on(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock)
    before = dropped("api_error")
    sink.fail_next = ApiError(500, "InternalError", "etcd is sad")
    recorder.record(job(), NORMAL, "First", "lost")
    recorder.record(job(), NORMAL, "Second", "kept")
    assert recorder.flush()
    assert dropped("api_error") - before == 1
    assert sink.only_event()["reason"] == "Second"


def test_sender_thread_writes_and_stop_flushes(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock)
    recorder.start()
    recorder.record(job(), NORMAL, "Started", "go")
    assert recorder.flush(timeout=10.0)
    assert sink.only_event()["reason"] == "Started"
    for _ in range(10):
        recorder.record(job(), NORMAL, "Started", "go")
    assert recorder.stop(timeout=10.0)
    assert sink.only_event()["count"] == 11
    before = dropped("stopped")
    recorder.record(job(), NORMAL, "Late", "too late")
    assert dropped("stopped") - before == 1
    with pytest.raises(RuntimeError):
        recorder.start()


def test_stop_without_a_thread_writes_inline(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock)
    recorder.record(job(), NORMAL, "Done", "bye")
    assert recorder.stop()
    assert sink.only_event()["reason"] == "Done"


def test_bad_input_is_refused(sink: RecordingSink, clock: FakeClock) -> None:
    recorder = make_recorder(sink, clock)
    with pytest.raises(ValueError, match="event type must be"):
        recorder.record(job(), "Error", "Oops", "not a valid type")
    with pytest.raises(ValueError, match="needs an object with kind"):
        recorder.record({"kind": "TFJob", "metadata": {}}, NORMAL, "NoName", "x")
    with pytest.raises(ValueError, match="needs a component name"):
        EventRecorder(sink, "")
