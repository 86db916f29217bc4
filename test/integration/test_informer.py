"""The informer against a real apiserver: events, cache == server after random churn, selectors, prompt stop, and
recovery from apiserver restarts and expired resource versions (re-list with stale deletes)."""

from __future__ import annotations

import contextlib
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

from support.proxy import TcpProxy
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists, NotFound
from tfop.kube.informer import Informer
from tfop.kube.resource import CONFIGMAPS, CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES, PODS, Resource
from tfop.kube.store import by_label, object_key

WIDGETS = Resource("tfop-tests.example.com", "v1", "widgets", "Widget")
STOP_JOIN = 60.0  # how long stop() may take to end an informer whose watch is open; a generous deadline
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{WIDGETS.plural}.{WIDGETS.group}"},
    "spec": {
        "group": WIDGETS.group,
        "scope": "Namespaced",
        "names": {"plural": WIDGETS.plural, "singular": "widget", "kind": WIDGETS.kind, "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            "subresources": {"status": {}},
        }],
    },
}


# -- helpers -----------------------------------------------------------------------------------------------------

def body_for(resource: Resource, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": resource.api_version, "kind": resource.kind,
                           "metadata": {"name": name, "labels": labels or {}}}
    if resource == PODS:
        # No scheduler picks this up, so the pod stays unbound and is deleted at once, with no kubelet involved.
        obj["spec"] = {"schedulerName": "tfop-test-no-scheduler", "terminationGracePeriodSeconds": 0,
                       "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
    else:
        obj["spec"] = {"size": 1}
    return obj


def server_state(client: KubeClient, resource: Resource, namespace: str) -> dict[str, str]:
    items, _ = client.list(resource, namespace)
    return {object_key(item): item["metadata"]["resourceVersion"] for item in items}


def cache_state(informer: Informer) -> dict[str, str]:
    return {object_key(obj): obj["metadata"]["resourceVersion"] for obj in informer.store.list()}


def cache_matches_server(informer: Informer, client: KubeClient, recorder: Recorder | None = None) -> bool:
    server = server_state(client, informer.resource, str(informer.namespace))
    return cache_state(informer) == server and (recorder is None or recorder.snapshot() == server)


class Recorder:
    """Handlers that rebuild the server state from events alone, so a missed event shows up as a difference."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.state: dict[str, str] = {}
        self.events: list[tuple[str, str, bool]] = []  # (type, key, stale)

    def attach(self, informer: Informer) -> Recorder:
        informer.add_event_handler(self.on_add, self.on_update, self.on_delete)
        return self

    def on_add(self, obj: dict[str, Any]) -> None:
        with self._lock:
            self.state[object_key(obj)] = obj["metadata"]["resourceVersion"]
            self.events.append(("add", object_key(obj), False))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        assert object_key(old) == object_key(new)
        with self._lock:
            self.state[object_key(new)] = new["metadata"]["resourceVersion"]
            self.events.append(("update", object_key(new), False))

    def on_delete(self, obj: dict[str, Any], stale: bool) -> None:
        with self._lock:
            self.state.pop(object_key(obj), None)
            self.events.append(("delete", object_key(obj), stale))

    def snapshot(self) -> dict[str, str]:
        with self._lock:
            return dict(self.state)

    def of(self, key: str) -> list[tuple[str, bool]]:
        with self._lock:
            return [(kind, stale) for kind, k, stale in self.events if k == key]


def restart_apiserver(cluster: Any) -> None:
    """SIGKILL the apiserver (a crash) and start it again; `start` returns once it is healthy."""
    try:
        cluster.kill("kube-apiserver")
        # `kill` returns when the process looks gone, which can be a few ms before the kernel frees its listening
        # port; starting at once then fails with "address already in use".
        port = urlparse(cluster.server).port
        wait_for(lambda: port_is_free(port), DEADLINE, "the apiserver's port to be released")
    finally:
        cluster.start("kube-apiserver")


def port_is_free(port: int | None) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port or 0))
        except OSError:
            return False
        return True


# -- fixtures ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def widgets_crd(cluster: Any) -> Iterator[Resource]:
    """A tiny CRD of our own, so the informer is tested on a custom resource independent of the TFJob CRD."""
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    with contextlib.suppress(AlreadyExists):
        client.create(CUSTOM_RESOURCE_DEFINITIONS, WIDGET_CRD)

    def served() -> bool:
        crd = client.get(CUSTOM_RESOURCE_DEFINITIONS, WIDGET_CRD["metadata"]["name"])
        conditions = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
        if conditions.get("Established") != "True":
            return False
        try:
            client.list(WIDGETS, "default", limit=1)
        except NotFound:  # established, but not yet in this apiserver's handler chain
            return False
        return True

    wait_for(served, DEADLINE, "the widgets CRD to be served")
    yield WIDGETS
    with contextlib.suppress(NotFound):
        client.delete(CUSTOM_RESOURCE_DEFINITIONS, WIDGET_CRD["metadata"]["name"])


@pytest.fixture
def started() -> Iterator[Callable[[Informer], Informer]]:
    """Starts informers and always stops them, so no thread outlives its test."""
    informers: list[Informer] = []

    def start(informer: Informer) -> Informer:
        informers.append(informer)
        informer.start()
        assert informer.wait_for_sync(DEADLINE), "informer did not sync"
        return informer

    yield start
    for informer in informers:
        informer.stop()


# -- tests -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["pods", "widgets"])
def test_informer_sees_create_update_and_delete(kind: str, kube_client: KubeClient, namespace: str,
                                                widgets_crd: Resource,
                                                started: Callable[[Informer], Informer]) -> None:
    resource = PODS if kind == "pods" else widgets_crd
    informer = Informer(kube_client, resource, namespace=namespace, indexers={"app": by_label("app")})
    recorder = Recorder().attach(informer)
    started(informer)
    assert informer.has_synced() and informer.is_alive() and len(informer.store) == 0
    key = f"{namespace}/one"

    created = kube_client.create(resource, body_for(resource, "one", {"app": "a"}), namespace)
    assert "managedFields" in created["metadata"]
    wait_for(lambda: key in informer.store, DEADLINE, "the add")
    cached = informer.store.get(key)
    assert cached is not None and "managedFields" not in cached["metadata"]  # the default transform
    assert cached["kind"] == resource.kind
    assert [obj["metadata"]["name"] for obj in informer.store.by_index("app", "a")] == ["one"]

    updated = kube_client.patch(resource, "one", {"metadata": {"labels": {"app": "b"}}}, namespace)
    wait_for(lambda: cache_state(informer).get(key) == updated["metadata"]["resourceVersion"], DEADLINE, "the update")
    assert informer.store.by_index("app", "a") == []
    assert [obj["metadata"]["name"] for obj in informer.store.by_index("app", "b")] == ["one"]

    kube_client.delete(resource, "one", namespace, grace_period_seconds=0)
    wait_for(lambda: key not in informer.store, DEADLINE, "the delete")
    events = recorder.of(key)
    # A pod's graceful deletion may show as an update (deletionTimestamp set) just before the delete.
    assert events[0] == ("add", False) and events[-1] == ("delete", False)
    assert set(events[1:-1]) == {("update", False)}
    assert informer.last_progress is not None and informer.last_progress <= time.monotonic()


@pytest.mark.parametrize("kind", ["pods", "widgets"])
def test_cache_equals_server_after_500_random_operations(kind: str, kube_client: KubeClient, namespace: str,
                                                         widgets_crd: Resource,
                                                         started: Callable[[Informer], Informer]) -> None:
    resource = PODS if kind == "pods" else widgets_crd
    rng = random.Random(20240601)
    for i in range(10):  # some objects exist before the informer lists
        kube_client.create(resource, body_for(resource, f"pre-{i}"), namespace)
    informer = started(Informer(kube_client, resource, namespace=namespace, page_size=7))
    recorder = Recorder().attach(informer)  # added after sync: gets the cached objects as adds
    existing = {f"pre-{i}" for i in range(10)}
    for step in range(500):
        name = f"obj-{rng.randrange(40)}"
        if name not in existing:
            kube_client.create(resource, body_for(resource, name), namespace)
            existing.add(name)
        elif rng.random() < 0.6:
            kube_client.patch(resource, name, {"metadata": {"labels": {"step": str(step)}}}, namespace)
        else:
            kube_client.delete(resource, name, namespace, grace_period_seconds=0)
            existing.discard(name)
    wait_for(lambda: cache_matches_server(informer, kube_client, recorder), DEADLINE,
               "the cache and the handlers' view to equal the server's state")
    assert set(cache_state(informer)) == {f"{namespace}/{name}" for name in existing}


def test_label_selector_and_namespace_scope(kube_client: KubeClient, namespace: str, widgets_crd: Resource,
                                            started: Callable[[Informer], Informer]) -> None:
    other = f"{namespace[:50]}-other"
    kube_client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        informer = Informer(kube_client, widgets_crd, namespace=namespace, label_selector="team=ml")
        recorder = Recorder().attach(informer)
        started(informer)
        kube_client.create(widgets_crd, body_for(widgets_crd, "in", {"team": "ml"}), namespace)
        kube_client.create(widgets_crd, body_for(widgets_crd, "unlabelled"), namespace)
        kube_client.create(widgets_crd, body_for(widgets_crd, "elsewhere", {"team": "ml"}), other)
        wait_for(lambda: f"{namespace}/in" in informer.store, DEADLINE, "the matching object")
        # Leaving the selector looks like a delete to the informer.
        kube_client.patch(widgets_crd, "in", {"metadata": {"labels": {"team": "web"}}}, namespace)
        wait_for(lambda: len(informer.store) == 0, DEADLINE, "the object to leave the selection")
        assert recorder.of(f"{namespace}/in") == [("add", False), ("delete", False)]
        assert recorder.of(f"{namespace}/unlabelled") == [] and recorder.of(f"{other}/elsewhere") == []
    finally:
        kube_client.delete(NAMESPACES, other)


def test_stop_closes_the_open_watch_promptly(kube_client: KubeClient, namespace: str,
                                              widgets_crd: Resource) -> None:
    informer = Informer(kube_client, widgets_crd, namespace=namespace, watch_timeout_range=(600, 600))
    informer.start()
    assert informer.wait_for_sync(DEADLINE)
    # An object created after the sync reaches the cache only through the watch, so once it is there the watch
    # is open (it would otherwise stay open 300-600 s).
    kube_client.create(widgets_crd, body_for(widgets_crd, "probe"), namespace)
    wait_for(lambda: f"{namespace}/probe" in informer.store, DEADLINE, "the watch to deliver an object")
    # Only the close can end it within the join: the server would end the watch after 600 s, the client's read
    # timeout later still.
    informer.stop(timeout=STOP_JOIN)
    assert not informer.is_alive(), f"the informer still runs {STOP_JOIN:g} s after stop()"


def test_a_failing_handler_does_not_stop_the_informer(kube_client: KubeClient, namespace: str,
                                                      widgets_crd: Resource,
                                                      started: Callable[[Informer], Informer]) -> None:
    informer = Informer(kube_client, widgets_crd, namespace=namespace)

    def explode(obj: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    informer.add_event_handler(on_add=explode)
    recorder = Recorder().attach(informer)
    started(informer)
    for name in ("a", "b"):
        kube_client.create(widgets_crd, body_for(widgets_crd, name), namespace)
    wait_for(lambda: len(recorder.snapshot()) == 2, DEADLINE, "both adds past the failing handler")
    assert informer.is_alive()


def test_informer_recovers_after_the_apiserver_is_killed(cluster: Any, kube_client: KubeClient, namespace: str,
                                                          widgets_crd: Resource,
                                                          started: Callable[[Informer], Informer]) -> None:
    for i in range(5):
        kube_client.create(widgets_crd, body_for(widgets_crd, f"w-{i}"), namespace)
    informer = started(Informer(kube_client, widgets_crd, namespace=namespace, backoff_cap=5.0))
    recorder = Recorder().attach(informer)
    wait_for(lambda: len(informer.store) == 5, DEADLINE, "the initial objects")
    restart_apiserver(cluster)  # SIGKILL mid-watch
    writer = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    writer.delete(widgets_crd, "w-0", namespace)
    writer.patch(widgets_crd, "w-1", {"spec": {"size": 2}}, namespace)
    writer.create(widgets_crd, body_for(widgets_crd, "w-new"), namespace)
    wait_for(lambda: cache_matches_server(informer, writer, recorder), DEADLINE, "the cache to catch up after restart")
    assert informer.is_alive()
    assert f"{namespace}/w-0" not in informer.store and f"{namespace}/w-new" in informer.store


def test_deletes_during_an_outage_are_learnt_through_a_relist(cluster: Any, kube_client: KubeClient,
                                                              namespace: str, widgets_crd: Resource,
                                                              started: Callable[[Informer], Informer]) -> None:
    """The informer's own connection stays cut while the apiserver restarts and objects change. When it comes
    back, its resourceVersion predates the new apiserver's watch cache, so the watch answers 410 (an ERROR event
    in the stream): it must list again and report the vanished objects as stale deletes."""
    server = urlparse(cluster.server)
    proxy = TcpProxy((server.hostname or "127.0.0.1", server.port or 443))
    try:
        for i in range(8):
            kube_client.create(widgets_crd, body_for(widgets_crd, f"w-{i}"), namespace)
        through_proxy = KubeClient.from_kubeconfig(str(cluster.kubeconfig), server=f"https://127.0.0.1:{proxy.port}")
        informer = Informer(through_proxy, widgets_crd, namespace=namespace, backoff_initial=0.2, backoff_cap=1.0)
        recorder = Recorder().attach(informer)
        started(informer)
        wait_for(lambda: len(informer.store) == 8, DEADLINE, "the initial objects")
        assert informer.list_count == 1
        proxy.cut()  # from here on the informer cannot see anything, bookmarks included
        # A write the informer does not watch moves the revision past its resourceVersion, so the restarted
        # apiserver's watch cache starts after it.
        kube_client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bump"}},
                           namespace)
        restart_apiserver(cluster)
        writer = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
        for i in range(3):
            writer.delete(widgets_crd, f"w-{i}", namespace)
        writer.patch(widgets_crd, "w-3", {"spec": {"size": 3}}, namespace)
        writer.create(widgets_crd, body_for(widgets_crd, "w-new"), namespace)
        assert cache_state(informer) != server_state(writer, widgets_crd, namespace)  # still disconnected
        proxy.resume()
        wait_for(lambda: cache_matches_server(informer, writer, recorder), DEADLINE, "the cache to catch up")
    finally:
        proxy.close()
    assert informer.list_count >= 2, "the informer should have re-listed"
    for i in range(3):
        assert recorder.of(f"{namespace}/w-{i}")[-1] == ("delete", True)  # stale: learnt from the re-list
    assert recorder.of(f"{namespace}/w-3")[-1] == ("update", False)
    assert recorder.of(f"{namespace}/w-new") == [("add", False)]
    assert recorder.of(f"{namespace}/w-4") == [("add", False)]  # unchanged objects are not re-announced


class RecordingInformer(Informer):
    """The real informer, noting each delay its reflector chose after a failed turn, and when."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.delays: list[tuple[float, float]] = []  # (time.monotonic() at the failure, the delay chosen)

    def list_and_watch_once(self) -> float:
        delay = super().list_and_watch_once()
        if delay:
            self.delays.append((time.monotonic(), delay))
        return delay


def test_an_outage_after_a_healthy_spell_is_retried_from_the_first_delay(cluster: Any, kube_client: KubeClient,
                                                                         namespace: str, widgets_crd: Resource,
                                                                         started: Callable[[Informer], Informer]
                                                                         ) -> None:
    """A long outage grows the backoff (2 s doubling, jittered up to twice); once the watch has been healthy for
    longer than the reset window (5 s here, 2 minutes in production), the next outage's first delay is the first
    one again (2-4 s), where without the reset it would be the 16 s or more the long outage grew it to. Judged by
    the delays the reflector chose, not by how long anything took."""
    server = urlparse(cluster.server)
    proxy = TcpProxy((server.hostname or "127.0.0.1", server.port or 443))
    try:
        through_proxy = KubeClient.from_kubeconfig(str(cluster.kubeconfig), server=f"https://127.0.0.1:{proxy.port}")
        informer = RecordingInformer(through_proxy, widgets_crd, namespace=namespace, backoff_initial=2.0,
                                     backoff_cap=60.0, backoff_reset_after=5.0)
        started(informer)

        def outage(name: str, until: Callable[[], bool], what: str) -> None:
            """Cut the informer off while `name` is created, until `until` holds; then wait for it to see `name`."""
            proxy.cut()
            kube_client.create(widgets_crd, body_for(widgets_crd, name), namespace)
            wait_for(until, DEADLINE, what)
            proxy.resume()
            wait_for(lambda: f"{namespace}/{name}" in informer.store, DEADLINE, f"{name} seen after the outage")

        # Long enough for three delays to be spent: the next one is 16 s or more.
        outage("during-the-long-outage", lambda: len(informer.delays) >= 3, "three failed turns in the outage")
        grown = informer.delays[-1][1]
        assert grown >= 8.0, informer.delays
        # Healthy, with no failure, for longer than the reset window after the last delay ended.
        wait_for(lambda: time.monotonic() - sum(informer.delays[-1]) > 6.0, DEADLINE,
                 "a healthy spell past the reset window")
        before = len(informer.delays)
        outage("during-the-short-outage", lambda: len(informer.delays) > before, "a failed turn in the short outage")
        assert informer.delays[before][1] <= 4.0, (grown, informer.delays)
    finally:
        proxy.close()
