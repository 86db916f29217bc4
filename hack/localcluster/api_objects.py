"""The objects the local cluster keeps in its own apiserver (kwok's fake nodes, the real nodes' RBAC) and the reads it
makes of Nodes, through a minimal admin REST client: set-up runs before any Python Kubernetes client is installed."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .supervisor import ClusterError

FAKE_NODES = 4


@dataclass(frozen=True)
class AdminAPI:
    server: str
    pki: Path

    def tls(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return context

    def call(self, method: str, path: str, body: object = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.server}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=self.tls(), timeout=30) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]

    def wait_established(self, *crds: str, timeout: float = 60.0) -> None:
        """Waits until each CRD is served. Polls rather than `kubectl wait`, which fails at once while a new CRD
        has no status.conditions yet instead of waiting for them."""
        deadline = time.monotonic() + timeout
        for name in crds:
            while True:
                crd = self.call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                conditions = crd.get("status", {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    break
                if time.monotonic() > deadline:
                    raise ClusterError(f"CRD {name} is not Established after {timeout:.0f} s: {conditions}")
                time.sleep(0.2)

    def create(self, path: str, body: dict[str, Any], what: str) -> None:
        """Creates unless it exists."""
        try:
            self.call("POST", path, body)
        except urllib.error.HTTPError as error:
            if error.code != 409:
                raise ClusterError(f"creating {what} failed: {error.read().decode()}") from error

    def delete_node(self, name: str) -> None:
        try:
            self.call("DELETE", f"/api/v1/nodes/{name}")
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise ClusterError(f"deleting the node {name} failed: {error.read().decode()}") from error

    def ensure_fake_nodes(self, log_hint: Path, timeout: float = 60.0) -> None:
        """Fake nodes that kwok keeps Ready; big enough for the benchmark's thousands of pods."""
        for i in range(FAKE_NODES):
            self.create("/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {
                    "name": f"kwok-node-{i}",
                    "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                    "labels": {"type": "kwok", "kubernetes.io/hostname": f"kwok-node-{i}",
                               "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
                },
                "status": {
                    "allocatable": {"cpu": "256", "memory": "1Ti", "pods": "4000", "nvidia.com/gpu": "8"},
                    "capacity": {"cpu": "256", "memory": "1Ti", "pods": "4000", "nvidia.com/gpu": "8"},
                },
            }, f"fake node {i}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            nodes = self.call("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")["items"]
            if sum(_ready(node) == "Ready" for node in nodes) >= FAKE_NODES:
                return
            time.sleep(0.2)
        raise ClusterError(f"kwok did not make the fake nodes Ready within {timeout:.0f}s; see {log_hint}")

    def bind_system_node(self, node_name: str) -> None:
        """The apiserver authorizes by RBAC alone (no Node authorizer), so each node's user needs the system:node
        ClusterRole, which Kubernetes ships unbound."""
        self.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": f"tfop-real-node-{node_name}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                          "name": f"system:node:{node_name}"}],
        }, f"the system:node binding of {node_name}")

    def node_ready_text(self, name: str) -> str:
        try:
            return _ready(self.call("GET", f"/api/v1/nodes/{name}"))
        except urllib.error.HTTPError as error:
            return "not registered" if error.code == 404 else f"unknown ({error.code})"

    def wait_node_ready(self, name: str, log_hint: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        text = self.node_ready_text(name)
        while text != "Ready":
            if time.monotonic() > deadline:
                raise ClusterError(f"the real node {name} is not Ready after {timeout:.0f}s ({text}); see {log_hint}")
            time.sleep(0.1)
            text = self.node_ready_text(name)


def _ready(node: dict[str, Any]) -> str:
    ready = [c for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
    if ready and ready[0]["status"] == "True":
        return "Ready"
    return f"NotReady: {ready[0].get('message', '') if ready else 'no Ready condition yet'}"


def unverified_tls() -> ssl.SSLContext:
    """For a health check of a component serving its own self-signed certificate (controller-manager, scheduler)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def get_text(url: str, context: ssl.SSLContext | None) -> str:
    with urllib.request.urlopen(url, context=context, timeout=5) as response:
        return str(response.read().decode().strip())


def answers_ok(url: str, context: ssl.SSLContext) -> bool:
    """Whether a server's health endpoint at `url` answers "ok" (refused, or an HTTP error while it gets ready: not)."""
    try:
        return get_text(url, context) == "ok"
    except OSError:
        return False


def apiservice_available(api: Callable[[str, str], dict[str, Any]], name: str) -> str:
    """An APIService's Available condition, read with `api` (a cluster's admin call): its status, and the apiserver's
    reason when not True."""
    try:
        service = api("GET", f"/apis/apiregistration.k8s.io/v1/apiservices/{name}")
    except urllib.error.HTTPError as error:
        return "not registered" if error.code == 404 else f"unknown ({error.code})"
    except OSError as error:
        return f"unknown ({error})"
    for condition in service.get("status", {}).get("conditions", []):
        if condition["type"] == "Available":
            status = str(condition["status"])
            return status if status == "True" else f"{status}: {condition.get('message', '')}"
    return "no Available condition yet"
