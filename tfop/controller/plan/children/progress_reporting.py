"""What a pod needs to report its training progress to tfop (docs/tfjob/progress.md): the environment Kubeflow
Trainer's status protocol names (KEP-2779), so the Kubeflow SDK's reporter and callbacks written for it work in a
TFJob unchanged, and one projected volume holding a ServiceAccount token for the job's own audience, the endpoint's
CA certificate and tfop's Keras callback (both from the ConfigMap PROGRESS_CONFIGMAP the operator keeps in the
namespace).

The token is bound to the pod by the kubelet: the apiserver's TokenReview names the pod, which is how the endpoint
knows which job a report may write. Its audience names the job, so it is good for nothing else, the apiserver
included. Every container of the pod gets the variables and the mount (the training may run in any of them);
tfop's values replace any the template gave, as Kubeflow Trainer's do, since they are only right when tfop's.
"""

from __future__ import annotations

from typing import Any

from tfop.api.fields import items
from tfop.controller.plan.controller_config import ProgressSettings

ENV_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
VOLUME = "tfop-progress"
MOUNT_PATH = "/var/run/secrets/tfop.kubeflow.org/progress"
PROGRESS_CONFIGMAP = "tfop-progress"
CA_KEY = "ca.crt"
CALLBACK_KEY = "tfop_progress.py"  # the Keras callback (tfop/progress/keras.py), importable from MOUNT_PATH
TOKEN_FILE = "token"
AUDIENCE_PREFIX = "tfop.kubeflow.org"


def status_path(namespace: str, name: str) -> str:
    """Where a job's reports are posted, below the endpoint's URL."""
    return f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}/status"


def token_audience(namespace: str, name: str) -> str:
    """The audience of the job's tokens: one job's token is refused for another's reports."""
    return f"{AUDIENCE_PREFIX}/namespaces/{namespace}/tfjobs/{name}/progress"


def report_progress(pod_spec: dict[str, Any], settings: ProgressSettings, namespace: str, name: str) -> None:
    """Changes `pod_spec` (a copy the caller owns) in place; nothing when the endpoint is off."""
    if not settings.enabled:
        return
    env = {ENV_URL: settings.url.rstrip("/") + status_path(namespace, name),
           ENV_CA_CERT: f"{MOUNT_PATH}/{CA_KEY}", ENV_TOKEN: f"{MOUNT_PATH}/{TOKEN_FILE}"}
    for container in items(pod_spec.get("containers")):
        if not isinstance(container, dict):
            continue
        kept = [v for v in items(container.get("env")) if isinstance(v, dict) and v.get("name") not in env]
        container["env"] = [*kept, *({"name": key, "value": value} for key, value in env.items())]
        mounts = [m for m in items(container.get("volumeMounts")) if isinstance(m, dict)
                  and m.get("name") != VOLUME and m.get("mountPath") != MOUNT_PATH]
        container["volumeMounts"] = [*mounts, {"name": VOLUME, "mountPath": MOUNT_PATH, "readOnly": True}]
    volumes = [v for v in items(pod_spec.get("volumes")) if isinstance(v, dict) and v.get("name") != VOLUME]
    pod_spec["volumes"] = [*volumes, {"name": VOLUME, "projected": {"sources": [
        {"serviceAccountToken": {"audience": token_audience(namespace, name),
                                 "expirationSeconds": settings.token_seconds, "path": TOKEN_FILE}},
        {"configMap": {"name": PROGRESS_CONFIGMAP,
                       "items": [{"key": CA_KEY, "path": CA_KEY}, {"key": CALLBACK_KEY, "path": CALLBACK_KEY}]}},
    ]}}]
