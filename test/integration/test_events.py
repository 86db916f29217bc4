"""The event recorder against the real apiserver: aggregation and the spam filter."""

from __future__ import annotations

from typing import Any

from tfop.kube.client import KubeClient
from tfop.kube.events import EventRecorder
from tfop.kube.resource import CONFIGMAPS, EVENTS


def involved(client: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}},
                         namespace)


def events_of(client: KubeClient, namespace: str, uid: str) -> list[dict[str, Any]]:
    items, _ = client.list(EVENTS, namespace, field_selector=f"involvedObject.uid={uid}")
    return items


def test_identical_events_become_one_event_with_their_count(kube_client: KubeClient, namespace: str) -> None:
    obj = involved(kube_client, namespace, "noisy")
    recorder = EventRecorder(kube_client, "tfop-test")
    recorder.start()
    for _ in range(100):
        recorder.record(obj, "Warning", "TFJobRestarting", "worker 1 exited with code 137 (OOMKilled)")
    assert recorder.stop(timeout=30)
    [event] = events_of(kube_client, namespace, obj["metadata"]["uid"])
    assert (event["count"], event["reason"], event["type"]) == (100, "TFJobRestarting", "Warning")
    assert event["source"]["component"] == "tfop-test"
    assert event["involvedObject"]["name"] == "noisy" and event["lastTimestamp"] >= event["firstTimestamp"]


def test_a_burst_of_distinct_events_from_one_object_is_capped(kube_client: KubeClient, namespace: str) -> None:
    obj = involved(kube_client, namespace, "bursty")
    recorder = EventRecorder(kube_client, "tfop-test", burst=25)
    recorder.start()
    for attempt in range(60):
        recorder.record(obj, "Warning", "FailedCreatePod", f"attempt {attempt}: quota exceeded")
    assert recorder.stop(timeout=30)
    assert len(events_of(kube_client, namespace, obj["metadata"]["uid"])) == 25
