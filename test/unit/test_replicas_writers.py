"""Who last wrote each replica count, as the job cache keeps it of managedFields (controller/cache_transforms.py):
the resize policy tells a user's `kubectl scale` from the HPA's by it. The entries are as the apiserver writes
them: a write through the scale subresource owns the replicas field of the spec and takes it from its owner."""

from __future__ import annotations

from typing import Any

import pytest

from tfop.controller.cache_transforms import replicas_writers

CREATED = {"manager": "kubectl-create", "operation": "Update", "apiVersion": "kubeflow.org/v1",
           "time": "2026-11-21T09:00:00Z", "fieldsType": "FieldsV1",
           "fieldsV1": {"f:spec": {".": {}, "f:tfReplicaSpecs": {
               ".": {}, "f:PS": {".": {}, "f:replicas": {}, "f:template": {}},
               "f:Worker": {".": {}, "f:replicas": {}, "f:template": {}}}}}}
# The creator's entry once a scale took the Worker count from it.
CREATED_BUT_WORKERS = {**CREATED, "fieldsV1": {"f:spec": {".": {}, "f:tfReplicaSpecs": {
    ".": {}, "f:PS": {".": {}, "f:replicas": {}, "f:template": {}}, "f:Worker": {".": {}, "f:template": {}}}}}}
STATUS = {"manager": "tfop", "operation": "Update", "apiVersion": "kubeflow.org/v1", "time": "2026-11-21T09:40:00Z",
          "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {".": {}, "f:workerReplicas": {}}},
          "subresource": "status"}


def scaled(manager: str, time: str) -> dict[str, Any]:
    return {"manager": manager, "operation": "Update", "apiVersion": "kubeflow.org/v1", "time": time,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:tfReplicaSpecs": {"f:Worker": {"f:replicas": {}}}}},
            "subresource": "scale"}


def applied(manager: str, time: str) -> dict[str, Any]:
    return {"manager": manager, "operation": "Apply", "apiVersion": "kubeflow.org/v1", "time": time,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:tfReplicaSpecs": {"f:Worker": {"f:replicas": {}}}}}}


KUBECTL_CREATE = {"manager": "kubectl-create", "operation": "Update"}
HPA = {"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale"}

ROWS: dict[str, tuple[object, dict[str, dict[str, str]]]] = {
    "as created: the creator wrote every count": (
        [CREATED, STATUS], {"PS": KUBECTL_CREATE, "Worker": KUBECTL_CREATE}),
    "the HPA scaled the workers": (
        [CREATED_BUT_WORKERS, scaled("kube-controller-manager", "2026-11-21T09:30:00Z"), STATUS],
        {"PS": KUBECTL_CREATE, "Worker": HPA}),
    "then a user's kubectl scale: the field is kubectl's, the HPA's entry gone with it": (
        [CREATED_BUT_WORKERS, STATUS, scaled("kubectl", "2026-11-21T09:50:00Z")],
        {"PS": KUBECTL_CREATE, "Worker": {"manager": "kubectl", "operation": "Update", "subresource": "scale"}}),
    "a patch of the spec by another client: no subresource": (
        [CREATED_BUT_WORKERS, {**CREATED, "manager": "sweeper", "time": "2026-11-21T09:55:00Z", "fieldsV1": {
            "f:spec": {"f:tfReplicaSpecs": {"f:Worker": {"f:replicas": {}}}}}}],
        {"PS": KUBECTL_CREATE, "Worker": {"manager": "sweeper", "operation": "Update"}}),
    "two appliers of one value share the field: the later one": (
        [applied("team-b", "2026-11-21T10:00:00Z"), applied("team-a", "2026-11-21T09:00:00Z")],
        {"Worker": {"manager": "team-b", "operation": "Apply"}}),
    "no managedFields": (None, {}),
    "entries without a manager, an operation or fields are passed over": (
        [{"operation": "Update", "fieldsV1": CREATED["fieldsV1"]}, {"manager": "kubectl"},
         {"manager": "kubectl", "fieldsV1": CREATED["fieldsV1"]}, "not an entry"], {}),
}


@pytest.mark.parametrize(("managed_fields", "writers"), list(ROWS.values()), ids=list(ROWS))
def test_who_wrote_each_replica_count(managed_fields: object, writers: dict[str, dict[str, str]]) -> None:
    assert replicas_writers(managed_fields) == writers
