"""Conversion between the TFJob versions the seeds wrote and kubeflow.org/v1, the version tfop stores and runs.

    kubeflow.org/v1alpha1 TFJob     spec.replicaSpecs list (tfReplicaType MASTER/WORKER/PS, tfPort, template,
                                    isDefaultPS), tfImage, terminationPolicy.chief, RuntimeId; status phase,
                                    state, reason and a replicaStatuses list of per-state counts
    tensorflow.org/v1alpha1 TfJob   the same fields under the project's first group (only `tfop convert` reads it)
    kubeflow.org/v1beta1 TFJob      tfReplicaSpecs keyed MASTER/WORKER/PS/...; cleanPodPolicy,
                                    ttlSecondsAfterFinished, activeDeadlineSeconds, backoffLimit on the spec

Pure functions of JSON dicts. From v1 to an older version nothing is refused: what the older version cannot hold
goes into the annotation FIELDS_ANNOTATION, and the way back restores it, so v1 -> old -> v1 gives back the same
object. From an older version to v1, a field v1 has no meaning for is a FieldError naming it: the webhook refuses the
request, `tfop convert` warns.
"""

from __future__ import annotations

import copy
from typing import Any

from tfop.api import v1alpha1, v1beta1
from tfop.api.constants import API_VERSION
from tfop.api.legacy import (
    FIELDS_ANNOTATION,
    SERVED_VERSIONS,
    TF_GROUP_KIND,
    TF_GROUP_V1ALPHA1,
    TF_IMAGE_ANNOTATION,
    V1ALPHA1,
    V1BETA1,
    Converted,
)

__all__ = [
    "FIELDS_ANNOTATION", "SERVED_VERSIONS", "TF_GROUP_KIND", "TF_GROUP_V1ALPHA1", "TF_IMAGE_ANNOTATION", "V1ALPHA1",
    "V1BETA1", "ConversionError", "Converted", "convert", "from_v1", "to_v1",
]


class ConversionError(ValueError):
    """An object that cannot be converted; the message names every field."""


def convert(obj: dict[str, Any], to_api_version: str) -> Converted:
    """`obj` in `to_api_version` (one of SERVED_VERSIONS), with the problems met on the way to v1."""
    if to_api_version not in SERVED_VERSIONS:
        raise ConversionError(f"cannot convert to {to_api_version}; served versions: {', '.join(SERVED_VERSIONS)}")
    source = obj.get("apiVersion")
    if source == to_api_version:
        return Converted(copy.deepcopy(obj))
    hub = to_v1(obj)
    if to_api_version == API_VERSION:
        return hub
    return Converted(from_v1(hub.obj, to_api_version), hub.problems)


def to_v1(obj: dict[str, Any]) -> Converted:
    source = obj.get("apiVersion")
    if source == API_VERSION:
        return Converted(copy.deepcopy(obj))
    if source == V1BETA1:
        return v1beta1.to_v1(obj)
    if source in (V1ALPHA1, TF_GROUP_V1ALPHA1):
        return v1alpha1.to_v1(obj)
    raise ConversionError(f"apiVersion {source!r} is not a TFJob version tfop knows "
                          f"({', '.join((*SERVED_VERSIONS, TF_GROUP_V1ALPHA1))})")


def from_v1(obj: dict[str, Any], to_api_version: str) -> dict[str, Any]:
    if to_api_version == API_VERSION:
        return copy.deepcopy(obj)
    if to_api_version == V1BETA1:
        return v1beta1.from_v1(obj)
    if to_api_version == V1ALPHA1:
        return v1alpha1.from_v1(obj)
    raise ConversionError(f"cannot convert to {to_api_version}")

