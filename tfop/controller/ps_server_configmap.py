"""Keeps the default PS server's script (tfop/psserver/) as the ConfigMap SCRIPT_CONFIGMAP in each namespace where
a job needs it.

Kept simply: before the first pod that mounts it is created in a namespace, the ConfigMap is created, or replaced
if an older tfop left another script; the namespaces done are remembered for the life of the process, so each
costs one or two requests per operator start. It has no owner (all jobs of the namespace share it) and goes with
the namespace. A pod created before it exists just waits in ContainerCreating until it does.
"""

from __future__ import annotations

import threading
from importlib import resources
from typing import Any

import structlog

from tfop.controller.plan.job.default_ps_server import SCRIPT_CONFIGMAP, SCRIPT_KEY
from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists
from tfop.kube.resource import CONFIGMAPS

log = structlog.get_logger("tfop.controller")


def server_script() -> str:
    return resources.files("tfop.psserver").joinpath("grpc_tensorflow_server.py").read_text()


class ServerScriptKeeper:
    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._script = server_script()
        self._done: set[str] = set()
        self._lock = threading.Lock()

    def ensure(self, namespace: str) -> None:
        """Raises the API's error when the ConfigMap can be neither created nor brought up to date."""
        with self._lock:
            if namespace in self._done:
                return
            body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": SCRIPT_CONFIGMAP, "namespace": namespace,
                                 "labels": {"app.kubernetes.io/managed-by": "tfop"}},
                    "data": {SCRIPT_KEY: self._script}}
            try:
                self._client.create(CONFIGMAPS, body, namespace)
                log.info("created the default PS server's script", namespace=namespace, configmap=SCRIPT_CONFIGMAP)
            except AlreadyExists:
                current = self._client.get(CONFIGMAPS, SCRIPT_CONFIGMAP, namespace)
                if (current.get("data") or {}).get(SCRIPT_KEY) != self._script:
                    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    self._client.replace(CONFIGMAPS, SCRIPT_CONFIGMAP, body, namespace)
                    log.info("updated the default PS server's script", namespace=namespace)
            self._done.add(namespace)
