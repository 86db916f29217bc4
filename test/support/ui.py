"""The TFJob page (`tfop ui`) in a test: served on loopback from a thread, as the ui's own ServiceAccount with the
kustomize component's ClusterRole (so the test proves those rules suffice), and users with tokens bound to read
TFJobs in one namespace each."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from support.waiting import DEADLINE, wait_for
from tfop import yamlio
from tfop.kube.client import KubeClient
from tfop.kube.resource_access import ResourceAccess
from tfop.ui.app import UiApp
from tfop.ui.cache import UiCache
from tfop.ui.server import ui_server

if TYPE_CHECKING:
    from localcluster import LocalCluster

REPO = Path(__file__).resolve().parents[2]
UI_MANIFESTS = REPO / "deploy" / "components" / "ui" / "ui.yaml"
# What a user of the page needs in a namespace: kubectl's own verbs for the same reads.
READER_RULES = [
    {"apiGroups": ["kubeflow.org"], "resources": ["tfjobs"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods", "events"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
]


def shipped_ui_role() -> dict[str, Any]:
    return next(doc for doc in yamlio.load_all(UI_MANIFESTS.read_text())
                if doc["kind"] == "ClusterRole")


def token_kubeconfig(cluster: LocalCluster, token: str, path: Path) -> Path:
    """The cluster's kubeconfig with a bearer token instead of the admin's certificate."""
    config = yamlio.load(cluster.kubeconfig.read_text())
    config["users"] = [{"name": "token", "user": {"token": token}}]
    config["contexts"][0]["context"]["user"] = "token"
    path.write_text(yaml.safe_dump(config))
    return path


def can_i(cluster: LocalCluster, user: str, *args: str) -> bool:
    return cluster.kubectl("auth", "can-i", *args, "--as", user, check=False).stdout.strip() == "yes"


@contextmanager
def ui_identity(cluster: LocalCluster, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig for the ServiceAccount tfop-ui in `namespace`, bound to the shipped ClusterRole's rules (made
    under a name of the test's own, so the cluster-wide name stays free)."""
    role = {**shipped_ui_role(), "metadata": {"name": f"{namespace}-tfop-ui"}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(role))
    cluster.kubectl("create", "serviceaccount", "tfop-ui", "-n", namespace)
    name = role["metadata"]["name"]
    cluster.kubectl("create", "clusterrolebinding", name, f"--clusterrole={name}",
                    f"--serviceaccount={namespace}:tfop-ui")
    try:
        user = f"system:serviceaccount:{namespace}:tfop-ui"
        wait_for(lambda: can_i(cluster, user, "create", "subjectaccessreviews.authorization.k8s.io"), DEADLINE,
                 "the authorizer to see the ui's binding")
        token = cluster.kubectl("create", "token", "tfop-ui", "-n", namespace, "--duration=30m").stdout.strip()
        yield token_kubeconfig(cluster, token, tmp_path / "ui.kubeconfig")
    finally:
        cluster.kubectl("delete", "clusterrolebinding", role["metadata"]["name"], check=False)
        cluster.kubectl("delete", "clusterrole", role["metadata"]["name"], check=False)


def reader_token(cluster: LocalCluster, namespace: str, account: str) -> str:
    """A ServiceAccount `account` in `namespace` that may read TFJobs, pods, logs and events there only."""
    cluster.kubectl("create", "serviceaccount", account, "-n", namespace)
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "tfjob-reader", "namespace": namespace}, "rules": READER_RULES}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(role))
    cluster.kubectl("create", "rolebinding", f"{account}-reads", "--role=tfjob-reader",
                    f"--serviceaccount={namespace}:{account}", "-n", namespace)
    user = f"system:serviceaccount:{namespace}:{account}"
    wait_for(lambda: can_i(cluster, user, "list", "tfjobs.kubeflow.org", "-n", namespace), DEADLINE,
             f"the authorizer to see {account}'s binding")
    return cluster.kubectl("create", "token", account, "-n", namespace, "--duration=30m").stdout.strip()


class UiServer:
    """The page served from a thread on 127.0.0.1 (a free port), its caches synced before `start` returns."""

    def __init__(self, kubeconfig: Path) -> None:
        self.client = KubeClient.from_kubeconfig(str(kubeconfig))
        self.cache = UiCache(self.client)
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._server = ui_server(UiApp(self.cache, ResourceAccess(self.client), self.client))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name="tfop-ui", daemon=True)

    def start(self) -> UiServer:
        self.cache.start()
        assert self.cache.wait_for_sync(DEADLINE), "the ui's caches did not sync"
        self._thread.start()
        wait_for(lambda: self._server.started, DEADLINE, "uvicorn to start")
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(DEADLINE)
        self.cache.stop()
        self._socket.close()

    def get(self, path: str, token: str | None = None, headers: Sequence[tuple[str, str]] = ()) -> tuple[int, str]:
        request = urllib.request.Request(self.url + path, headers=dict(headers))
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()
