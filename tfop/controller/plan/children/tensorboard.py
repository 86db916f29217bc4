"""A job's TensorBoard: a Deployment of one pod running TensorBoard on the job's log directory, and a ClusterIP
Service in front of it, for jobs that ask (`tfop.kubeflow.org/tensorboard`, read by plan/job/tensorboard.py).
TensorBoard runs as tfop/psserver/tensorboard_server.py starts it (the image's `python -c` on that file's text),
which keeps its index page readable through the apiserver's proxy.

TensorBoard serves under the page's own path for the job (`--path_prefix`, api/tensorboard.py), so the page's
proxy forwards each path unchanged. It mounts the job's volume read-only at the replicas' own path, runs without a
ServiceAccount token (it reads files, never the API), and its pods carry neither the job-name nor the
operator-name label: they are no replica's, so no informer of the job's pods, no NetworkPolicy of the job and
no PodDisruptionBudget counts them. The Service carries the operator's labels like every child, and a marker
label the replicas' Service informer excludes.

Kept while the job runs and, once it finished, for its TTL after its completionTime (then deleted; with the job
in any case, its owner); deleted while the job is suspended or queued, made again when it runs. Named
`{job}-tb-{runtimeId}`, both. Two entries of the job's own children (children/job_child.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

from tfop.api.constants import LABEL_RUNTIME_ID
from tfop.api.runtime_id import runtime_id
from tfop.api.tensorboard import (
    LABEL_TENSORBOARD,
    TENSORBOARD_PORT,
    TENSORBOARD_PORT_NAME,
    tensorboard_name,
    tensorboard_path,
)
from tfop.controller.plan.children.job_child import JobChildKind, JobState
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.model import JobMeta, TFJobModel
from tfop.controller.plan.job.tensorboard import tensorboard_ttl
from tfop.controller.plan.types import TENSORBOARD, TENSORBOARD_SERVICE
from tfop.objects import Object

CONTAINER_NAME = "tensorboard"
# TensorBoard's main with its answers filtered (the file says why), run from its text: nothing to mount.
SERVER_SOURCE = resources.files("tfop.psserver").joinpath("tensorboard_server.py").read_text()
# Enough for TensorBoard's server on a few runs' scalars; no limit, since what it needs grows with the logs.
REQUESTS = {"cpu": "100m", "memory": "256Mi"}


def name_of(job: JobMeta) -> str:
    return tensorboard_name(job.name, runtime_id(job.uid))


def pod_labels(job: JobMeta) -> dict[str, str]:
    return {LABEL_TENSORBOARD: job.name, LABEL_RUNTIME_ID: runtime_id(job.uid)}


def wanted_deployment(job: TFJobModel) -> Object | None:
    ask = job.options.tensorboard
    if ask is None or ask.problem or ask.volume is None or ask.mount is None:
        return None
    meta = job.metadata
    prefix = tensorboard_path(meta.namespace, meta.name)
    container = {
        "name": CONTAINER_NAME, "image": ask.image,
        "command": ["python", "-c", SERVER_SOURCE, "--logdir", ask.log_dir, "--bind_all", "--port",
                    str(TENSORBOARD_PORT), "--path_prefix", prefix],
        "ports": [{"name": TENSORBOARD_PORT_NAME, "containerPort": TENSORBOARD_PORT}],
        "readinessProbe": {"httpGet": {"path": f"{prefix}/", "port": TENSORBOARD_PORT_NAME}},
        "resources": {"requests": dict(REQUESTS)},
        "volumeMounts": [dict(ask.mount)],
    }
    spec: Object = {**dict(ask.pod_fields or {}), "automountServiceAccountToken": False,
                    "enableServiceLinks": False, "containers": [container], "volumes": [dict(ask.volume)]}
    labels = pod_labels(meta)
    return {"replicas": 1, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec}}


def wanted_service(job: TFJobModel) -> Object | None:
    if wanted_deployment(job) is None:
        return None
    return {"type": "ClusterIP", "selector": pod_labels(job.metadata),
            "ports": [{"name": TENSORBOARD_PORT_NAME, "port": TENSORBOARD_PORT, "targetPort": TENSORBOARD_PORT_NAME}]}


def contains(stored: object, wanted: object) -> bool:
    """Whether the stored value has every field of the wanted one as written: what the apiserver adds (defaults,
    a Service's clusterIP) is no difference, and lists match item by item."""
    if isinstance(wanted, Mapping):
        return isinstance(stored, Mapping) and all(key in stored and contains(stored[key], value)
                                                   for key, value in wanted.items())
    if isinstance(wanted, list):
        return isinstance(stored, list) and len(stored) == len(wanted) and all(
            contains(s, w) for s, w in zip(stored, wanted, strict=True))
    return stored == wanted


def drift(stored: Mapping[str, Any], wanted: Object) -> Object | None:
    """A merge patch of the whole wanted spec: lists are replaced whole, so a patched container is tfop's again."""
    return None if contains(stored, wanted) else {"spec": wanted}


def _ttl(job: Object, config: ControllerConfig) -> int:
    return tensorboard_ttl(job, config.tensorboard)


_KEPT = frozenset({JobState.RUNNING, JobState.FINISHED, JobState.FINISHED_PODS_KEPT})

TENSORBOARD_KIND = JobChildKind(
    TENSORBOARD, "apps", "v1", "deployments", cached=("spec",), kept_in=_KEPT, name=name_of,
    # Never its status, which the Deployment controller rewrites as its pod comes and goes.
    wanted=wanted_deployment, drift=drift, object_kind="Deployment", finished_ttl=_ttl,
    replicas_wait=False)

TENSORBOARD_SERVICE_KIND = JobChildKind(
    TENSORBOARD_SERVICE, "", "v1", "services", cached=("spec",), kept_in=_KEPT, name=name_of,
    wanted=wanted_service, drift=drift, object_kind="Service", marker_label=LABEL_TENSORBOARD, finished_ttl=_ttl,
    replicas_wait=False)
