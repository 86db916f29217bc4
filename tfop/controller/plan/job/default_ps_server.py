"""The default PS server (seeds 002 and 003): a PS replica with no `tensorflow` container, or no template at all,
gets one that runs a standard TensorFlow gRPC server for its TF_CONFIG task.

The script ships with tfop (tfop/psserver/grpc_tensorflow_server.py) and reaches the pod through the ConfigMap
SCRIPT_CONFIGMAP that the operator keeps in the job's namespace (controller/ps_server_configmap.py), mounted at the
directory of the controller config's `grpcServerFilePath`. The image is the job's `tfop.kubeflow.org/tf-image`
annotation (v1alpha1's `tfImage`, carried through conversion), else the controller config's `tfImage`.

Pure: it rewrites a defaulted job before validation, so every later step sees a PS like any other.
"""

from __future__ import annotations

import copy
import posixpath
from typing import Any

from tfop.api.constants import DEFAULT_CONTAINER_NAME, DEFAULT_PORT, DEFAULT_PORT_NAME, REPLICA_PS
from tfop.api.conversion import TF_IMAGE_ANNOTATION
from tfop.api.fields import items, mapping, mapping_at
from tfop.controller.plan.controller_config import ControllerConfig

SCRIPT_CONFIGMAP = "tfop-grpc-server"
SCRIPT_KEY = "grpc_tensorflow_server.py"
SCRIPT_VOLUME = "tfop-grpc-server"


def with_default_ps_server(job: dict[str, Any], config: ControllerConfig) -> dict[str, Any]:
    """`job` (defaulted) with the default server added to a PS that has no tensorflow container; `job` itself
    when none needs it."""
    replica = mapping_at(job, "spec", "tfReplicaSpecs").get(REPLICA_PS)
    if not isinstance(replica, dict) or not needs_default_server(replica):
        return job
    job = copy.deepcopy(job)
    replica = job["spec"]["tfReplicaSpecs"][REPLICA_PS]
    template = replica.get("template")
    if not isinstance(template, dict):
        template = replica["template"] = {}
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        pod_spec = template["spec"] = {}
    path = config.grpc_server_file_path
    image = mapping_at(job, "metadata", "annotations").get(TF_IMAGE_ANNOTATION)
    pod_spec["containers"] = [*items(pod_spec.get("containers")), {
        "name": DEFAULT_CONTAINER_NAME,
        "image": image if isinstance(image, str) and image else config.tf_image,
        # `python`: what TensorFlow images have had on PATH from 1.x on; the script reads TF_CONFIG.
        "command": ["python", path],
        "ports": [{"name": DEFAULT_PORT_NAME, "containerPort": DEFAULT_PORT}],
        "volumeMounts": [{"name": SCRIPT_VOLUME, "mountPath": posixpath.dirname(path), "readOnly": True}],
    }]
    pod_spec["volumes"] = [*items(pod_spec.get("volumes")), {
        "name": SCRIPT_VOLUME,
        "configMap": {"name": SCRIPT_CONFIGMAP, "items": [{"key": SCRIPT_KEY, "path": posixpath.basename(path)}]},
    }]
    return job


def needs_default_server(replica: dict[str, Any]) -> bool:
    containers = items(mapping_at(replica, "template", "spec").get("containers"))
    return not any(mapping(container).get("name") == DEFAULT_CONTAINER_NAME for container in containers)


def uses_script(pod_spec: dict[str, Any]) -> bool:
    """Whether a pod mounts the server script (so its namespace needs the ConfigMap)."""
    return any(mapping(mapping(volume).get("configMap")).get("name") == SCRIPT_CONFIGMAP
               for volume in items(pod_spec.get("volumes")))
