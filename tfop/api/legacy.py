"""What the conversions between TFJob versions share: how a problem is reported, and how what an older version
cannot hold rides along in an annotation while the object is seen in that version."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from tfop.api.constants import API_VERSION, DEFAULT_CONTAINER_NAME, DEFAULT_PORT_NAME, GROUP
from tfop.api.errors import FieldError
from tfop.api.fields import integer, items, mapping

V1ALPHA1: str = f"{GROUP}/v1alpha1"
V1BETA1: str = f"{GROUP}/v1beta1"
TF_GROUP_V1ALPHA1 = "tensorflow.org/v1alpha1"  # seed 003's TfJob
TF_GROUP_KIND = "TfJob"
SERVED_VERSIONS = (API_VERSION, V1BETA1, V1ALPHA1)

# What an older version cannot hold, as JSON, on the object while it is seen in that version.
FIELDS_ANNOTATION = "tfop.kubeflow.org/v1-fields"
# v1alpha1's tfImage: the image of the default PS server (read by the operator, see
# controller/plan/job/default_ps_server.py).
TF_IMAGE_ANNOTATION = "tfop.kubeflow.org/tf-image"


@dataclass
class Converted:
    obj: dict[str, Any]
    problems: list[FieldError] = field(default_factory=list)



def start(obj: dict[str, Any], api_version: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A copy of v1 `obj` in `api_version`, its spec (to be rewritten in place) and an empty record of what the
    older version will not hold."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = api_version
    out.pop("status", None)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        spec = out["spec"] = {}
    return out, spec, {}


def finish(out: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    metadata = out.setdefault("metadata", {})
    annotations = metadata.get("annotations")
    if kept:
        if not isinstance(annotations, dict):
            annotations = metadata["annotations"] = {}
        annotations[FIELDS_ANNOTATION] = json.dumps(kept, sort_keys=True, separators=(",", ":"))
    elif annotations == {}:
        del metadata["annotations"]  # it held only the tfImage annotation
    return out


def restore(obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A v1 copy of older `obj` without the annotation, its spec, and what the annotation kept."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = API_VERSION
    metadata = mapping(out.get("metadata"))
    annotations = mapping(metadata.get("annotations"))
    raw = annotations.pop(FIELDS_ANNOTATION, None)
    if "annotations" in metadata and not annotations:
        del metadata["annotations"]
    kept: dict[str, Any] = {}
    if isinstance(raw, str):
        try:
            kept = mapping(json.loads(raw))
        except ValueError:
            kept = {}
    spec = out.get("spec")
    if not isinstance(spec, dict):
        spec = out["spec"] = {}
    return out, spec, kept



def tensorflow_container(template: dict[str, Any]) -> dict[str, Any] | None:
    for container in items(mapping(template.get("spec")).get("containers")):
        if mapping(container).get("name") == DEFAULT_CONTAINER_NAME:
            return mapping(container)
    return None


def named_tf_port(template: dict[str, Any]) -> int | None:
    container = tensorflow_container(template)
    for port in items(mapping(container).get("ports")):
        if mapping(port).get("name") == DEFAULT_PORT_NAME:
            return integer(port.get("containerPort"))
    return None


def set_tf_port(replica: dict[str, Any], port: object, path: str, problems: list[FieldError]) -> None:
    """v1alpha1's tfPort is v1's port named tfjob-port on the tensorflow container."""
    number = integer(port)
    if number is None or not 1 <= number <= 65535:
        problems.append(FieldError(path, f"{port!r} must be a port number"))
        return
    container = tensorflow_container(mapping(replica.get("template")))
    if container is None:
        if number != 2222:
            problems.append(FieldError(path, f"{number} needs a tensorflow container to carry it; the default PS "
                                          "server listens on 2222"))
        return
    ports = container.setdefault("ports", [])
    named = next((p for p in items(ports) if mapping(p).get("name") == DEFAULT_PORT_NAME), None)
    if named is None:
        ports.append({"name": DEFAULT_PORT_NAME, "containerPort": number})
    elif named.get("containerPort") != number:
        problems.append(FieldError(path, f"{number} differs from the container's {DEFAULT_PORT_NAME} port "
                                      f"{named.get('containerPort')}"))
