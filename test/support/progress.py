"""The progress endpoint from a test's side: an operator serving it, tokens the apiserver binds to a pod (the
TokenRequest API, as the kubelet asks for a pod's projected token), and the Kubeflow SDK's own reporter
(kubeflow.trainer.update_trainjob_status, in the virtualenv of hack/sdk-venv.sh trainer) run in a subprocess."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.builds import built
from support.waiting import wait_for
from tfop.kube.client import KubeClient
from tfop.kube.resource import CONFIGMAPS, Resource

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
PROGRESS_CONFIGMAP = "tfop-progress"
# Spelled out, not imported from tfop: the tests state the contract.
STATUS_PATH = "/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}/status"
AUDIENCE = "tfop.kubeflow.org/namespaces/{namespace}/tfjobs/{name}/progress"
SDK_TIMEOUT = 120.0  # importing the SDK (kubernetes client, pydantic) on a loaded 2-core machine


def trainer_sdk_python() -> Path:
    return built("sdk-venv.sh", "the Kubeflow SDK (kubeflow.trainer) virtualenv", timeout=900, args=("trainer",))


def progress_config(path: Path, port: int, host: str = "127.0.0.1", extra: str = "") -> Path:
    path.write_text(f"progress:\n  enabled: true\n  url: https://{host}:{port}\n  address: \"{host}:{port}\"\n"
                    f"{extra}")
    return path


def audience(namespace: str, name: str) -> str:
    return AUDIENCE.format(namespace=namespace, name=name)


def pod_token(client: KubeClient, namespace: str, pod: dict[str, Any], token_audience: str) -> str:
    """A token of the namespace's default ServiceAccount, bound to `pod`, for `token_audience`: what the kubelet
    mounts for the projected volume tfop adds."""
    wait_for(lambda: _exists(client, namespace), message=f"the default ServiceAccount of {namespace}")
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
        "audiences": [token_audience], "expirationSeconds": 600,
        "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": pod["metadata"]["name"],
                           "uid": pod["metadata"]["uid"]}}}
    answer = client.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/default/token", body=request)
    return str(answer["status"]["token"])


def _exists(client: KubeClient, namespace: str) -> bool:
    items, _ = client.list(SERVICE_ACCOUNTS, namespace)
    return any(item["metadata"]["name"] == "default" for item in items)


def forged_token(namespace: str, pod: dict[str, Any], token_audience: str) -> str:
    """A token with every claim a pod's has, signed by no key the apiserver knows."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"iss": "https://kubernetes.default.svc", "aud": [token_audience], "iat": now, "nbf": now,
              "exp": now + 600, "sub": f"system:serviceaccount:{namespace}:default",
              "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": "default", "uid": "x"},
                                "pod": {"name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}}}
    signature = base64.urlsafe_b64encode(os.urandom(256)).rstrip(b"=").decode()
    return f"{part({'alg': 'RS256', 'kid': 'made-up'})}.{part(claims)}.{signature}"


def endpoint_ca(client: KubeClient, namespace: str, directory: Path) -> Path:
    """The CA tfop keeps for the namespace's pods, as a file (what the pods' projected volume holds)."""
    data = wait_for(lambda: (client.get(CONFIGMAPS, PROGRESS_CONFIGMAP, namespace).get("data") or None),
                    message=f"ConfigMap {PROGRESS_CONFIGMAP} in {namespace}")
    path = directory / "ca.crt"
    path.write_text(data["ca.crt"])
    return path


@dataclass(frozen=True)
class Sent:
    returned: Any  # what the reporter returned: True when the endpoint took the report
    log: str  # what it logged (the SDK names the HTTP status of a refusal)


REPORT = """
import json, logging, os, sys
logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(message)s")
arguments = json.loads(sys.argv[1])
if os.environ.get("REPORTER") == "tfop":
    sys.path.insert(0, os.environ["TFOP_PROGRESS_DIR"])
    from tfop_progress import update_trainjob_status
else:
    from kubeflow.trainer import update_trainjob_status
print(json.dumps(update_trainjob_status(**arguments)))
"""


def report(python: Path, url: str, ca: Path, token: str, directory: Path, *, reporter: str = "kubeflow",
           module_dir: Path | None = None, **arguments: Any) -> Sent:
    """Runs a reporter once with the environment tfop gives a pod: the Kubeflow SDK's, or tfop's shipped module
    (from `module_dir`, where the ConfigMap's file was written)."""
    token_file = directory / "token"
    token_file.write_text(token)
    env = {**os.environ, "KUBEFLOW_TRAINER_SERVER_URL": url, "KUBEFLOW_TRAINER_SERVER_CA_CERT": str(ca),
           "KUBEFLOW_TRAINER_SERVER_TOKEN": str(token_file), "REPORTER": reporter,
           "TFOP_PROGRESS_DIR": str(module_dir or directory)}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(python), "-c", REPORT, json.dumps(arguments)], capture_output=True, text=True,
                          env=env, timeout=SDK_TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return Sent(json.loads(done.stdout.strip().splitlines()[-1]), done.stderr)
