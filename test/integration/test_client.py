"""The REST client against a real apiserver: typed errors, pagination, delete preconditions, patch types, the
status subresource, retries of requests that never left, and the request metrics."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from localcluster.etcd_compaction import compact_etcd
from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists, Conflict, Gone, Invalid, NotFound, TransportError
from tfop.kube.metrics import KubeMetrics
from tfop.kube.resource import CONFIGMAPS, EVENTS, PODS


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}},
            "data": data}


def counted_client(cluster: Any, **options: Any) -> tuple[KubeClient, CollectorRegistry]:
    """A client whose request metrics land in a registry of its own."""
    registry = CollectorRegistry()
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig), metrics=KubeMetrics.create(registry), **options)
    return client, registry


def requests_sent(registry: CollectorRegistry, code: str, method: str) -> float:
    return registry.get_sample_value("rest_client_requests_total", {"code": code, "method": method}) or 0.0


def test_each_typed_error(kube_client: KubeClient, namespace: str) -> None:
    with pytest.raises(NotFound) as not_found:
        kube_client.get(CONFIGMAPS, "missing", namespace)
    assert not_found.value.status == 404 and "missing" in not_found.value.message

    created = kube_client.create(CONFIGMAPS, configmap("cm", a="1"), namespace)
    with pytest.raises(AlreadyExists) as exists:
        kube_client.create(CONFIGMAPS, configmap("cm"), namespace)
    assert exists.value.status == 409 and exists.value.reason == "AlreadyExists"

    kube_client.patch(CONFIGMAPS, "cm", {"data": {"a": "2"}}, namespace)
    with pytest.raises(Conflict) as conflict:  # a PUT carrying a resourceVersion someone else moved on from
        kube_client.replace(CONFIGMAPS, "cm", created, namespace)
    assert conflict.value.status == 409 and conflict.value.body is not None

    with pytest.raises(Invalid) as invalid:
        kube_client.create(CONFIGMAPS, configmap("Not_A_Valid_Name"), namespace)
    assert invalid.value.status == 422 and "Not_A_Valid_Name" in invalid.value.message


def test_a_compacted_resource_version_is_gone(cluster: Any, kube_client: KubeClient, namespace: str) -> None:
    """A list at a revision etcd has compacted answers HTTP 410. Events are used because the apiserver keeps no
    watch cache for them (a cached resource would answer old revisions from memory); the in-stream 410 of a
    watch is covered by the informer tests, which restart the apiserver to empty its cache."""
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "probe.1"}, "type": "Normal",
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace}, "reason": "Probe", "message": "1"}
    old = kube_client.create(EVENTS, event, namespace)["metadata"]["resourceVersion"]
    kube_client.patch(EVENTS, "probe.1", {"message": "2"}, namespace)
    compact_etcd(cluster.etcd_url)
    with pytest.raises(Gone) as listed:
        kube_client.request("GET", EVENTS.path(namespace),
                            query=[("resourceVersion", old), ("resourceVersionMatch", "Exact")])
    assert listed.value.status == 410 and listed.value.reason == "Expired"


def test_list_pages_with_limit_and_continue(cluster: Any, kube_client: KubeClient, namespace: str) -> None:
    for i in range(5):
        kube_client.create(CONFIGMAPS, configmap(f"cm-{i}", {"set": "paged"}), namespace)
    kube_client.create(CONFIGMAPS, configmap("other"), namespace)
    client, registry = counted_client(cluster)
    items, resource_version = client.list(CONFIGMAPS, namespace, label_selector="set=paged", limit=2)
    assert requests_sent(registry, "200", "GET") == 3  # 2 + 2 + 1
    assert sorted(item["metadata"]["name"] for item in items) == [f"cm-{i}" for i in range(5)]
    assert all(item["kind"] == "ConfigMap" and item["apiVersion"] == "v1" for item in items)
    assert int(resource_version) >= max(int(item["metadata"]["resourceVersion"]) for item in items)
    selected, _ = kube_client.list(CONFIGMAPS, namespace, field_selector="metadata.name=other")
    assert [item["metadata"]["name"] for item in selected] == ["other"]


def test_delete_preconditions_and_propagation(kube_client: KubeClient, namespace: str) -> None:
    created = kube_client.create(CONFIGMAPS, configmap("cm"), namespace)
    meta = created["metadata"]
    with pytest.raises(Conflict):
        kube_client.delete(CONFIGMAPS, "cm", namespace, uid="00000000-0000-0000-0000-000000000000")
    with pytest.raises(Conflict):
        kube_client.delete(CONFIGMAPS, "cm", namespace, resource_version=str(int(meta["resourceVersion"]) - 1))
    kube_client.get(CONFIGMAPS, "cm", namespace)  # still there
    kube_client.delete(CONFIGMAPS, "cm", namespace, uid=meta["uid"], resource_version=meta["resourceVersion"],
                       propagation_policy="Background")
    with pytest.raises(NotFound):
        kube_client.get(CONFIGMAPS, "cm", namespace)
    with pytest.raises(NotFound):
        kube_client.delete(CONFIGMAPS, "cm", namespace)


def test_patch_types(kube_client: KubeClient, namespace: str) -> None:
    kube_client.create(CONFIGMAPS, configmap("cm", a="1"), namespace)
    merged = kube_client.patch(CONFIGMAPS, "cm", {"data": {"b": "2"}}, namespace)
    assert merged["data"] == {"a": "1", "b": "2"}
    patched = kube_client.patch(CONFIGMAPS, "cm", [{"op": "replace", "path": "/data/a", "value": "9"}], namespace,
                                patch_type="json")
    assert patched["data"] == {"a": "9", "b": "2"}
    with pytest.raises(Invalid):  # a failing JSON patch test op
        kube_client.patch(CONFIGMAPS, "cm", [{"op": "test", "path": "/data/a", "value": "1"}], namespace,
                          patch_type="json")
    strategic = kube_client.patch(CONFIGMAPS, "cm", {"metadata": {"labels": {"x": "y"}}}, namespace,
                                  patch_type="strategic")
    assert strategic["metadata"]["labels"] == {"x": "y"}
    applied = kube_client.patch(CONFIGMAPS, "cm", configmap("cm", c="3"), namespace, patch_type="apply",
                                field_manager="tfop-test", force=True)
    assert applied["data"]["c"] == "3"
    assert any(entry["manager"] == "tfop-test" for entry in applied["metadata"]["managedFields"])
    with pytest.raises(ValueError, match="needs a field_manager"):
        kube_client.patch(CONFIGMAPS, "cm", {}, namespace, patch_type="apply")


def test_status_patch_goes_to_the_status_subresource(kube_client: KubeClient, namespace: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"schedulerName": "tfop-test-no-scheduler",
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}
    kube_client.create(PODS, pod, namespace)
    # The main resource ignores status changes; the status subresource takes them.
    kube_client.patch(PODS, "p", {"status": {"message": "ignored"}}, namespace)
    assert kube_client.get(PODS, "p", namespace)["status"].get("message") is None
    result = kube_client.patch_status(PODS, "p", {"status": {"message": "from tfop"}}, namespace)
    assert result["status"]["message"] == "from tfop"
    assert kube_client.get(PODS, "p", namespace)["status"]["message"] == "from tfop"


def test_create_takes_the_namespace_from_the_body(kube_client: KubeClient, namespace: str) -> None:
    body = configmap("cm")
    body["metadata"]["namespace"] = namespace
    assert kube_client.create(CONFIGMAPS, body)["metadata"]["namespace"] == namespace


def test_requests_that_never_left_are_retried_then_fail_typed(cluster: Any) -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        dead_port = sock.getsockname()[1]  # nothing listens there once closed
    client, registry = counted_client(cluster, server=f"https://127.0.0.1:{dead_port}", max_retries=2)
    began = time.monotonic()
    with pytest.raises(TransportError):
        client.create(CONFIGMAPS, configmap("never"), "default")  # refused: surely not received, so retried
    assert requests_sent(registry, "<error>", "POST") == 3
    assert time.monotonic() - began >= 0.25 + 0.5  # two backoffs, at least the un-jittered delays


def test_watch_streams_events_line_by_line(kube_client: KubeClient, namespace: str) -> None:
    _, resource_version = kube_client.list(CONFIGMAPS, namespace)
    stream = kube_client.watch(CONFIGMAPS, namespace, resource_version=resource_version, timeout_seconds=30)
    try:
        kube_client.create(CONFIGMAPS, configmap("a"), namespace)
        kube_client.patch(CONFIGMAPS, "a", {"data": {"k": "v"}}, namespace)
        kube_client.delete(CONFIGMAPS, "a", namespace)
        seen = []
        for event in stream:
            if event["type"] != "BOOKMARK":
                seen.append((event["type"], event["object"]["metadata"]["name"]))
            if len(seen) == 3:
                break
    finally:
        stream.close()
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert list(stream) == []  # closed: iteration is over
