"""`tfop ui` against the real apiserver, as its own ServiceAccount with the shipped ClusterRole: two users, each
allowed to read TFJobs in one namespace, see on the page what kubectl would show them and nothing else (the job
list filtered, 403 for the other namespace's job and its pod's log), a request without a token the apiserver
accepts gets 401, and every answer carries the Content-Security-Policy; and what a job and its events say (its
queue, links and happenings) shows on its page."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster import LocalCluster
from support.tfjobs import TFJOBS, replica, tfjob
from support.ui import UiServer, can_i, reader_token, ui_identity
from support.waiting import wait_for
from tfop.kube.client import KubeClient
from tfop.kube.resource import EVENTS
from tfop.ui.security import CONTENT_SECURITY_POLICY


@pytest.fixture
def other_namespace(cluster: LocalCluster, namespace: str) -> Iterator[str]:
    name = f"other-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def listed_jobs(body: str) -> list[str]:
    return re.findall(r'<tr class="job" data-job="([^"]+)"', body)


def first_live_update(url: str, token: str) -> str:
    """The HTML of every piece the first `patch` event of a live stream sets."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        lines: list[str] = []
        for raw in response:
            line = raw.decode().rstrip("\n")
            if not line:
                break
            lines.append(line)
    assert lines[0] == "event: patch", lines[:2]
    return "\n".join(html for _, _, html in json.loads(lines[1].removeprefix("data: "))["set"])


def test_a_user_sees_on_the_page_what_kubectl_shows_them(cluster: LocalCluster, tfjob_crd: Path,
                                                         kube_client: KubeClient, namespace: str,
                                                         other_namespace: str, tmp_path: Path) -> None:
    kube_client.create(TFJOBS, tfjob("visible", Worker=replica()), namespace)
    kube_client.create(TFJOBS, tfjob("hidden", Worker=replica()), other_namespace)
    tokens = {"alice": reader_token(cluster, namespace, "alice"), "bob": reader_token(cluster, other_namespace, "bob")}
    cluster.kubectl("create", "serviceaccount", "nobody", "-n", namespace)
    nobody = cluster.kubectl("create", "token", "nobody", "-n", namespace, "--duration=30m").stdout.strip()
    empty_namespace = f"{other_namespace}-empty"
    cluster.kubectl("create", "namespace", empty_namespace)
    empty_reader = reader_token(cluster, empty_namespace, "dave")
    alice = f"system:serviceaccount:{namespace}:alice"
    # kubectl's answer for the same user, which the page must agree with.
    assert can_i(cluster, alice, "get", "tfjobs.kubeflow.org/visible", "-n", namespace)
    assert not can_i(cluster, alice, "get", "tfjobs.kubeflow.org/hidden", "-n", other_namespace)
    assert not can_i(cluster, alice, "get", "pods", "--subresource=log", "-n", other_namespace)

    with ui_identity(cluster, namespace, tmp_path) as kubeconfig:
        ui = UiServer(kubeconfig).start()
        try:
            wait_for(lambda: ui.cache.job(namespace, "visible") and ui.cache.job(other_namespace, "hidden"),
                     message="the ui's cache to hold both jobs")
            status, body = ui.get("/")
            assert status == 401 and 'id="token"' in body  # the login form
            assert ui.get("/", token="made-up")[0] == 401
            assert ui.get(f"/namespaces/{namespace}/tfjobs/visible")[0] == 401

            status, body = ui.get("/", token=tokens["alice"])
            assert status == 200, body
            assert listed_jobs(body) == [f"{namespace}/visible"]
            status, body = ui.get("/", token=tokens["bob"])
            assert listed_jobs(body) == [f"{other_namespace}/hidden"]
            # No rights at all is told apart from namespaces that have no job (the ui knows every namespace).
            status, body = ui.get("/", token=nobody)
            assert status == 403 and "You may not list TFJobs in any namespace." in body, body
            wait_for(lambda: empty_namespace in ui.cache.namespace_names(), message="the ui to see the namespace")
            status, body = ui.get("/", token=empty_reader)
            assert status == 200 and "There are no TFJobs in the namespaces you may list." in body, body
            assert listed_jobs(body) == []

            status, body = ui.get(f"/namespaces/{namespace}/tfjobs/visible", token=tokens["alice"])
            assert status == 200 and 'id="job-name">visible<' in body and 'id="timeline"' in body
            refused = {path: ui.get(path, token=tokens["alice"])[0] for path in (
                f"/namespaces/{other_namespace}/tfjobs/hidden",
                f"/namespaces/{other_namespace}/tfjobs/hidden/pods/hidden-worker-0",
                f"/live/namespaces/{other_namespace}/tfjobs/hidden",
                f"/?namespace={other_namespace}")}
            assert refused == dict.fromkeys(refused, 403)
            # A job that does not exist is 404 only to who may get it there; elsewhere it is 403 like any other.
            assert ui.get(f"/namespaces/{namespace}/tfjobs/nothing", token=tokens["alice"])[0] == 404
            assert ui.get(f"/namespaces/{other_namespace}/tfjobs/nothing", token=tokens["alice"])[0] == 403

            update = first_live_update(f"{ui.url}/live/jobs?namespace=&state=", tokens["alice"])
            assert listed_jobs(update) == [f"{namespace}/visible"]

            for path, token in (("/", tokens["alice"]), ("/", None),
                                (f"/namespaces/{other_namespace}/tfjobs/hidden", tokens["alice"])):
                request = urllib.request.Request(ui.url + path)
                if token:
                    request.add_header("Authorization", f"Bearer {token}")
                try:
                    headers = urllib.request.urlopen(request, timeout=30).headers
                except urllib.error.HTTPError as error:
                    headers = error.headers
                assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
                assert headers["X-Content-Type-Options"] == "nosniff"
        finally:
            ui.stop()
            cluster.kubectl("delete", "namespace", empty_namespace, "--wait=false", check=False)


def test_the_page_tells_a_jobs_queue_links_and_happenings(cluster: LocalCluster, tfjob_crd: Path,
                                                          kube_client: KubeClient, namespace: str,
                                                          other_namespace: str, tmp_path: Path) -> None:
    """What the job and its events say, as the apiserver stores them (no operator runs here, so the test writes
    the status and the events the operator would): the Kueue queue and the PodGroup phase in the list, the links
    its annotations name (a javascript: one as text), and a node loss and a resize listed under its timeline.
    A followed log of a pod in a namespace the user may not read is 403, as its tail is."""
    body = tfjob("queued", {"suspend": True}, Worker=replica(2))
    body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
    body["metadata"]["annotations"] = {"tfop.kubeflow.org/link-tensorboard": "https://tb.example/#run=queued",
                                       "tfop.kubeflow.org/link-grafana": "javascript:alert(1)"}
    job = kube_client.create(TFJOBS, body, namespace)
    kube_client.patch_status(TFJOBS, "queued", {"status": {
        "podGroupPhase": "Pending",
        "lastResize": {"from": 4, "to": 2, "cause": "User", "strategy": "Restart", "time": "2026-03-01T03:30:00Z",
                       "message": "queued: Worker 4 -> 2, asked by a User"}}}, namespace)
    lost = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "queued-node-lost", "namespace": namespace},
            "involvedObject": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "queued",
                               "namespace": namespace, "uid": job["metadata"]["uid"]},
            "type": "Warning", "reason": "NodeLost", "source": {"component": "tfop"},
            "message": "queued: Worker 1's node n1 is unreachable; replacing it without waiting for its kubelet.",
            "firstTimestamp": "2026-03-01T03:12:00Z", "lastTimestamp": "2026-03-01T03:12:00Z", "count": 1}
    kube_client.create(EVENTS, lost, namespace)
    kube_client.create(TFJOBS, tfjob("hidden", Worker=replica()), other_namespace)
    token = reader_token(cluster, namespace, "alice")

    with ui_identity(cluster, namespace, tmp_path) as kubeconfig:
        ui = UiServer(kubeconfig).start()
        try:
            wait_for(lambda: (ui.cache.job(namespace, "queued") or {}).get("status", {}).get("podGroupPhase")
                     and ui.cache.events_of(namespace, "TFJob", "queued"), message="the ui's cache to hold the job")
            status, page = ui.get("/", token=token)
            assert status == 200, page
            queue_cells = re.findall(r'<td class="queue col-queue">([^<]*)</td>', page)
            assert queue_cells == ["waiting for admission to queue team-a; PodGroup Pending"]

            status, page = ui.get(f"/namespaces/{namespace}/tfjobs/queued", token=token)
            assert status == 200, page
            assert ('<a href="https://tb.example/#run=queued" rel="noopener noreferrer" target="_blank">'
                    in page)
            assert '<span class="not-a-link">javascript:alert(1)</span>' in page
            assert 'href="javascript' not in page
            happened = re.findall(r'<tr class="happening ([a-z-]+)"><td>([^<]*)</td><td>([^<]*)</td>', page)
            assert happened == [("node-loss", "2026-03-01T03:12:00Z", "node lost"),
                                ("resize", "2026-03-01T03:30:00Z", "resized")]

            refused = ui.get(f"/live/namespaces/{other_namespace}/tfjobs/hidden/pods/hidden-worker-0/log",
                             token=token)[0]
            assert refused == 403
            assert ui.get(f"/live/namespaces/{namespace}/tfjobs/queued/pods/nothing/log", token=token)[0] == 404
        finally:
            ui.stop()
