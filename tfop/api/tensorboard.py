"""A job's TensorBoard as the operator makes it and the page reaches it: the annotations that ask for one, the port
it serves on, and the path under which both the page and TensorBoard itself (`--path_prefix`) serve it, so the
page's proxy forwards a path unchanged (docs/tfjob/tensorboard.md)."""

from __future__ import annotations

from typing import Final
from urllib.parse import quote

from tfop.api.fields import items, mapping, mapping_at
from tfop.objects import Object

# On a TFJob: the absolute log directory its replicas write, on a volume their template mounts; the job gets a
# TensorBoard on it while it runs and for a while after it finishes.
ANNOTATION_TENSORBOARD: Final = "tfop.kubeflow.org/tensorboard"
# Seconds the TensorBoard is kept after the job finishes (default: the operator config's tensorboard.ttlSeconds).
ANNOTATION_TENSORBOARD_TTL: Final = "tfop.kubeflow.org/tensorboard-ttl-seconds"
# On the TensorBoard's Service, Deployment and pods, with the job's name: tells them from the replicas' own.
LABEL_TENSORBOARD: Final = "tfop.kubeflow.org/tensorboard-of"
TENSORBOARD_PORT: Final = 6006
TENSORBOARD_PORT_NAME: Final = "http"
MAX_TTL_SECONDS: Final = 30 * 86400
DEFAULT_TTL_SECONDS: Final = 3600


def tensorboard_path(namespace: str, name: str) -> str:
    """Where the page serves the job's TensorBoard, and the `--path_prefix` it runs with (no trailing slash)."""
    return f"/namespaces/{quote(namespace, safe='')}/tfjobs/{quote(name, safe='')}/tensorboard"


def tensorboard_name(name: str, runtime_id: str) -> str:
    """The Deployment's and the Service's name: short, since a job's name and a replica's suffix share 63."""
    return f"{name}-tb-{runtime_id}"


def claim_names(job: Object) -> set[str]:
    """The claims a job that asks for a TensorBoard names in its templates' volumes (none for any other job)."""
    if ANNOTATION_TENSORBOARD not in mapping_at(job, "metadata", "annotations"):
        return set()
    return {str(claim["claimName"]) for replica in mapping_at(job, "spec", "tfReplicaSpecs").values()
            for volume in items(mapping_at(replica, "template", "spec").get("volumes"))
            if "claimName" in (claim := mapping(mapping(volume).get("persistentVolumeClaim")))}
