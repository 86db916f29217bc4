"""ConfigMaps tfop keeps in each namespace where a job's pods mount one: the default PS server's script
(tfop/psserver/, SCRIPT_CONFIGMAP) and, with the progress endpoint on, its CA certificate and tfop's Keras callback
(PROGRESS_CONFIGMAP).

Kept simply: before the first pod that mounts one is created in a namespace, the ConfigMap is created, or replaced
if it holds other data (an older tfop's script, a rotated certificate); what each namespace was given is
remembered for the life of the process, so each costs one or two requests per operator start or change of data. It
has no owner (all jobs of the namespace share it) and goes with the namespace. A pod created before it exists just
waits in ContainerCreating until it does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

import structlog

from tfop.controller.plan.job.default_ps_server import SCRIPT_CONFIGMAP, SCRIPT_KEY
from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists
from tfop.kube.resource import CONFIGMAPS

log = structlog.get_logger("tfop.controller")

ConfigMapData = Callable[[], Mapping[str, str]]  # a ConfigMap's data, asked for each time it is ensured


def server_script() -> str:
    return resources.files("tfop.psserver").joinpath("grpc_tensorflow_server.py").read_text()


class ConfigMapKeeper:
    def __init__(self, client: KubeClient, name: str, data: ConfigMapData, what: str) -> None:
        """`data()` is asked at each ensure, so a change (a certificate rotated) reaches the namespaces."""
        self._client = client
        self.name = name
        self._data = data
        self.what = what
        self._done: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def ensure(self, namespace: str) -> None:
        """Raises the API's error when the ConfigMap can be neither created nor brought up to date."""
        data = dict(self._data())
        with self._lock:
            if self._done.get(namespace) == data:
                return
            body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": self.name, "namespace": namespace,
                                 "labels": {"app.kubernetes.io/managed-by": "tfop"}},
                    "data": data}
            try:
                self._client.create(CONFIGMAPS, body, namespace)
                log.info(f"created {self.what}", namespace=namespace, configmap=self.name)
            except AlreadyExists:
                current = self._client.get(CONFIGMAPS, self.name, namespace)
                if (current.get("data") or {}) != data:
                    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    self._client.replace(CONFIGMAPS, self.name, body, namespace)
                    log.info(f"updated {self.what}", namespace=namespace, configmap=self.name)
            self._done[namespace] = data


def server_script_keeper(client: KubeClient) -> ConfigMapKeeper:
    script = server_script()
    return ConfigMapKeeper(client, SCRIPT_CONFIGMAP, lambda: {SCRIPT_KEY: script}, "the default PS server's script")
