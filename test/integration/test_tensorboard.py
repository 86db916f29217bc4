"""A job's TensorBoard on the real apiserver: the operator makes its Deployment and Service, keeps them while the
job runs (the replicas' Service informer never takes the TensorBoard's for a stray), deletes them once the TTL
after the job's end has passed and with the job, and tells a log directory no shareable volume holds; reads the
claim the logs are on, putting the TensorBoard beside the job's pods for a claim one node holds (also once the
claim appears after the job) and making none for a claim one pod holds. And the
page serves it through the apiserver's proxy of its Service: a stand-in TensorBoard (an HTTP server on this
host's address, the Service's endpoint) answers the page's users who may get the job, and only them."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.operator_process import OperatorProcess
from support.tfjobs import IMAGE, TFJOBS, condition, events_about, job_status, pods_by_name, tfjob
from support.ui import UiServer, reader_token, ui_identity
from support.waiting import DEADLINE, wait_for
from tfop.api.runtime_id import runtime_id
from tfop.api.timestamps import parse_time
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound
from tfop.kube.resource import PERSISTENT_VOLUME_CLAIMS, PODS, SERVICES, Resource

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints")
LOGS = {"name": "logs", "persistentVolumeClaim": {"claimName": "logs"}}


def job_with_logs(name: str, annotations: dict[str, str], volume: dict[str, Any] = LOGS) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "tensorflow", "image": IMAGE,
                                         "volumeMounts": [{"name": "logs", "mountPath": "/logs"}]}],
                         "volumes": [volume]}}
    body = tfjob(name, Worker={"replicas": 1, "restartPolicy": "Never", "template": template})
    body["metadata"]["annotations"] = annotations
    return body


def get_or_none(client: KubeClient, resource: Resource, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        found = client.get(resource, name, namespace)
    except NotFound:
        return None
    return None if found["metadata"].get("deletionTimestamp") else found


def test_made_while_the_job_runs_kept_for_its_ttl_and_deleted_with_it(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    made = kube_client.create(TFJOBS, job_with_logs("kept", {"tfop.kubeflow.org/tensorboard": "/logs/run",
                                                             "tfop.kubeflow.org/tensorboard-ttl-seconds": "20"}),
                              namespace)
    gone = kube_client.create(TFJOBS, job_with_logs("gone", {"tfop.kubeflow.org/tensorboard": "/logs"}), namespace)
    kept_name = f"kept-tb-{runtime_id(made['metadata']['uid'])}"
    gone_name = f"gone-tb-{runtime_id(gone['metadata']['uid'])}"
    deployment = wait_for(lambda: get_or_none(kube_client, DEPLOYMENTS, kept_name, namespace), DEADLINE,
                          "kept's TensorBoard Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"][:2] == ["python", "-c"] and container["command"][3:] == [
        "--logdir", "/logs/run", "--bind_all", "--port", "6006", "--path_prefix",
        f"/namespaces/{namespace}/tfjobs/kept/tensorboard"]
    assert container["volumeMounts"] == [{"name": "logs", "mountPath": "/logs", "readOnly": True}]
    assert deployment["spec"]["template"]["spec"]["volumes"] == [LOGS]
    assert deployment["metadata"]["ownerReferences"][0]["uid"] == made["metadata"]["uid"]
    service = wait_for(lambda: get_or_none(kube_client, SERVICES, kept_name, namespace), DEADLINE,
                       "kept's TensorBoard Service")
    assert service["spec"]["type"] == "ClusterIP" and service["spec"]["ports"][0]["port"] == 6006

    wait_for(lambda: len(pods_by_name(kube_client, namespace, "kept")) == 1, DEADLINE, "kept's worker pod")
    [worker] = pods_by_name(kube_client, namespace, "kept")
    exit_pod(kube_client, namespace, worker, 0)
    wait_for(lambda: condition(kube_client, namespace, "kept", "Succeeded"), DEADLINE, "kept Succeeded")
    completed = parse_time(job_status(kube_client, namespace, "kept")["completionTime"])
    assert completed is not None
    # The same Service all along: the replicas' own informer never saw it as a stray to delete.
    assert kube_client.get(SERVICES, kept_name, namespace)["metadata"]["uid"] == service["metadata"]["uid"]

    wait_for(lambda: get_or_none(kube_client, DEPLOYMENTS, kept_name, namespace) is None, DEADLINE,
             "kept's TensorBoard deleted once its TTL passed")
    deleted_at = datetime.now(completed.tzinfo)
    assert (deleted_at - completed).total_seconds() >= 20, "deleted before its TTL had passed"
    wait_for(lambda: get_or_none(kube_client, SERVICES, kept_name, namespace) is None, DEADLINE,
             "kept's TensorBoard Service deleted with its Deployment")

    wait_for(lambda: get_or_none(kube_client, SERVICES, gone_name, namespace), DEADLINE, "gone's TensorBoard")
    kube_client.delete(TFJOBS, "gone", namespace)
    wait_for(lambda: get_or_none(kube_client, DEPLOYMENTS, gone_name, namespace) is None
             and get_or_none(kube_client, SERVICES, gone_name, namespace) is None, DEADLINE,
             "gone's TensorBoard deleted with the job (the garbage collector, by its owner reference)")


def test_a_log_directory_no_other_pod_can_see_is_told_and_nothing_made(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    made = kube_client.create(TFJOBS, job_with_logs("scratch", {"tfop.kubeflow.org/tensorboard": "/logs"},
                                                    {"name": "logs", "emptyDir": {}}), namespace)

    def told() -> dict[str, Any] | None:
        return next((entry for entry in job_status(kube_client, namespace, "scratch").get("conditions", [])
                     if entry["type"] == "TensorBoard"), None)

    entry = wait_for(told, DEADLINE, "scratch's TensorBoard condition")
    assert (entry["status"], entry["reason"]) == ("False", "TensorBoardLogDirNotShared")
    assert "an emptyDir, which only its own pod sees" in entry["message"]
    warnings = wait_for(lambda: [e for e in events_about(kube_client, namespace, "scratch")
                                 if e["reason"] == "TensorBoardLogDirNotShared"], DEADLINE, "the Warning event")
    assert warnings[0]["type"] == "Warning" and warnings[0]["message"] == entry["message"]
    wait_for(lambda: len(pods_by_name(kube_client, namespace, "scratch")) == 1, DEADLINE, "the job runs as it would")
    assert get_or_none(kube_client, DEPLOYMENTS, f"scratch-tb-{runtime_id(made['metadata']['uid'])}",
                       namespace) is None


def claim(name: str, *modes: str) -> dict[str, Any]:
    """A claim no volume binds (the cluster has no provisioner): its asked access modes are what tfop reads."""
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": "1Gi"}}}}


BESIDE = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
    "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {
        "training.kubeflow.org/job-name": "late"}}}]}}


def test_a_claim_one_node_or_one_pod_holds_is_read_for_its_access_modes(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    kube_client.create(PERSISTENT_VOLUME_CLAIMS, claim("one-pod", "ReadWriteOncePod"), namespace)
    held = kube_client.create(TFJOBS, job_with_logs("held", {"tfop.kubeflow.org/tensorboard": "/logs"}, {
        "name": "logs", "persistentVolumeClaim": {"claimName": "one-pod"}}), namespace)

    def told() -> dict[str, Any] | None:
        return next((entry for entry in job_status(kube_client, namespace, "held").get("conditions", [])
                     if entry["type"] == "TensorBoard"), None)

    entry = wait_for(told, DEADLINE, "held's TensorBoard condition")
    assert (entry["status"], entry["reason"]) == ("False", "TensorBoardLogDirNotShared")
    assert "claim 'one-pod', ReadWriteOncePod, which only one pod may mount at a time" in entry["message"]
    assert get_or_none(kube_client, DEPLOYMENTS, f"held-tb-{runtime_id(held['metadata']['uid'])}", namespace) is None

    # The claim made after the job: the TensorBoard is made where the config puts it, then, once the claim is
    # cached, moved beside the job's pods.
    late = kube_client.create(TFJOBS, job_with_logs("late", {"tfop.kubeflow.org/tensorboard": "/logs"}, {
        "name": "logs", "persistentVolumeClaim": {"claimName": "one-node"}}), namespace)
    name = f"late-tb-{runtime_id(late['metadata']['uid'])}"
    made = wait_for(lambda: get_or_none(kube_client, DEPLOYMENTS, name, namespace), DEADLINE,
                    "late's TensorBoard Deployment")
    assert "affinity" not in made["spec"]["template"]["spec"]
    kube_client.create(PERSISTENT_VOLUME_CLAIMS, claim("one-node", "ReadWriteOnce"), namespace)
    moved = wait_for(lambda: (d := get_or_none(kube_client, DEPLOYMENTS, name, namespace)) is not None
                     and d["spec"]["template"]["spec"].get("affinity") == BESIDE and d, DEADLINE,
                     "late's TensorBoard beside the job's pods", explain=lambda: str(
                         get_or_none(kube_client, DEPLOYMENTS, name, namespace)))
    assert moved["spec"]["template"]["spec"]["volumes"] == [
        {"name": "logs", "persistentVolumeClaim": {"claimName": "one-node"}}]


def host_address() -> str:
    """This host's address that is not loopback: the apiserver proxies to no loopback endpoint."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # nothing is sent: the route picks the source address
        address: str = probe.getsockname()[0]
    assert not address.startswith("127."), address
    return address


class StandIn(http.server.BaseHTTPRequestHandler):
    """What the page needs of TensorBoard: its index (an absolute link, which the apiserver's proxy rewrites),
    a scalar series, a POST echoed, and a redirect out of its own pages."""

    prefix = ""

    def do_GET(self) -> None:
        if self.path == f"{self.prefix}/":
            self._answer(200, "text/html", f'<a href="{self.prefix}/data/runs">runs</a>'.encode(),
                         ("Content-Security-Policy", "default-src 'self'"))
        elif self.path.startswith(f"{self.prefix}/data/plugin/scalars/scalars?"):
            self._answer(200, "application/json", json.dumps([[1.0, 1, 0.5], [2.0, 2, 0.25]]).encode())
        elif self.path == f"{self.prefix}/away":
            self._answer(302, "text/plain", b"", ("Location", "/namespaces/elsewhere/tfjobs/x"))
        else:
            self._answer(404, "text/plain", b"no such page")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(200, "application/json", json.dumps({"got": body.decode(),
                                                          "xsrf": self.headers.get("X-XSRF-Protected")}).encode())

    def _answer(self, status: int, content_type: str, body: bytes, *headers: tuple[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def stand_in(namespace: str) -> Iterator[tuple[str, int]]:
    handler = type("Handler", (StandIn,), {"prefix": f"/namespaces/{namespace}/tfjobs/board/tensorboard"})
    server = http.server.ThreadingHTTPServer((host_address(), 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield str(server.server_address[0]), int(server.server_address[1])
    server.shutdown()


def request(ui: UiServer, path: str, token: str, *, data: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, Any, bytes]:
    sent = urllib.request.Request(ui.url + path, data=data, headers={"Authorization": f"Bearer {token}",
                                                                      **(headers or {})})
    try:
        with urllib.request.urlopen(sent, timeout=60) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_the_page_serves_the_tensorboard_to_who_may_get_the_job(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, tmp_path: Path,
        stand_in: tuple[str, int]) -> None:
    """No operator: the job, and its Service as tfop makes it but with the stand-in for its endpoint."""
    made = kube_client.create(TFJOBS, job_with_logs("board", {"tfop.kubeflow.org/tensorboard": "/logs"}), namespace)
    service = f"board-tb-{runtime_id(made['metadata']['uid'])}"
    address, port = stand_in
    kube_client.create(SERVICES, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": service}, "spec": {
        "ports": [{"name": "http", "port": 6006, "targetPort": port}]}}, namespace)
    # The apiserver proxies only to an endpoint that is a pod with that address: one bound to no node's kubelet,
    # its address written as a kubelet would.
    kube_client.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stand-in"}, "spec": {
        "nodeName": "no-such-node", "containers": [{"name": "tensorboard", "image": IMAGE}]}}, namespace)
    kube_client.patch_status(PODS, "stand-in", {"status": {"phase": "Running", "podIP": address,
                                                           "podIPs": [{"ip": address}]}}, namespace)
    kube_client.create(ENDPOINTS, {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": service},
                                   "subsets": [{"addresses": [{"ip": address, "targetRef": {
                                       "kind": "Pod", "namespace": namespace, "name": "stand-in"}}],
                                                "ports": [{"name": "http", "port": port}]}]}, namespace)
    alice = reader_token(cluster, namespace, "alice")
    other = f"other-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", other)
    try:
        bob = reader_token(cluster, other, "bob")
        with ui_identity(cluster, namespace, tmp_path) as kubeconfig:
            ui = UiServer(kubeconfig).start()
            try:
                wait_for(lambda: ui.cache.job(namespace, "board"), DEADLINE, "the ui's cache to hold the job")
                base = f"/namespaces/{namespace}/tfjobs/board/tensorboard"
                status, page = ui.get(f"/namespaces/{namespace}/tfjobs/board", token=alice)
                assert status == 200 and f'<a href="{base}/"' in page

                status, headers, body = request(ui, f"{base}/data/plugin/scalars/scalars?run=train&tag=loss", alice)
                assert status == 200, body
                assert json.loads(body) == [[1.0, 1, 0.5], [2.0, 2, 0.25]]
                status, headers, body = request(ui, f"{base}/", alice)
                # Whatever the apiserver's proxy rewrote of the absolute link is undone: it is the page's path.
                assert status == 200 and f'href="{base}/data/runs"'.encode() in body and b"/api/v1" not in body
                assert headers.get_all("Content-Security-Policy")[0] == "default-src 'self'"
                assert headers.get_all("Content-Security-Policy")[1].startswith(
                    f"default-src {ui.url}{base}/; ")
                assert "Set-Cookie" not in headers

                assert request(ui, f"{base}/away", alice)[0] == 502
                post = {"Content-Type": "application/x-www-form-urlencoded", "X-XSRF-Protected": "1"}
                assert request(ui, f"{base}/data/q", alice, data=b"tags=loss", headers=post)[0] == 403
                status, _, body = request(ui, f"{base}/data/q", alice, data=b"tags=loss",
                                          headers={**post, "Origin": ui.url})
                assert (status, json.loads(body)) == (200, {"got": "tags=loss", "xsrf": "1"})

                assert request(ui, f"{base}/data/plugin/scalars/scalars?run=train&tag=loss", bob)[0] == 403
                assert request(ui, f"/namespaces/{other}/tfjobs/board/tensorboard/", bob)[0] == 404
                assert request(ui, f"{base}/", "made-up")[0] == 401
            finally:
                ui.stop()
    finally:
        cluster.kubectl("delete", "namespace", other, "--wait=false", check=False)
