"""TFJobs as a user writes them, and what the tests read back about one: its status, children and events."""

from __future__ import annotations

from typing import Any

from tfop.kube.client import KubeClient
from tfop.kube.resource import EVENTS, PODS, Resource

# Spelled out here rather than imported from tfop: the tests state the API they expect.
TFJOBS = Resource("kubeflow.org", "v1", "tfjobs", "TFJob")
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
IMAGE = "tensorflow/tensorflow:2.21.0"


def pod_template(name: str = "tensorflow", **container: Any) -> dict[str, Any]:
    """A pod template with one container, `name`, running IMAGE unless `container` says otherwise."""
    return {"spec": {"containers": [{"name": name, "image": IMAGE, **container}]}}


def replica(replicas: int = 1, restart_policy: str | None = None, **container: Any) -> dict[str, Any]:
    """A replica spec of `replicas` pods whose tensorflow container has the `container` fields."""
    spec: dict[str, Any] = {"replicas": replicas, "template": pod_template(**container)}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return spec


def tfjob(name: str, run_policy: dict[str, Any] | None = None, **replica_specs: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"tfReplicaSpecs": replica_specs}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": spec}


def create_job(client: KubeClient, namespace: str, name: str, run_policy: dict[str, Any] | None = None,
               **replica_specs: dict[str, Any]) -> dict[str, Any]:
    return client.create(TFJOBS, tfjob(name, run_policy, **replica_specs), namespace)


def job_status(client: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return client.get(TFJOBS, name, namespace).get("status") or {}


def condition(client: KubeClient, namespace: str, name: str, condition_type: str) -> dict[str, Any] | None:
    """The job's condition of `condition_type` if it is True, else None."""
    for entry in job_status(client, namespace, name).get("conditions", []):
        if entry["type"] == condition_type and entry["status"] == "True":
            return dict(entry)
    return None


def children(client: KubeClient, resource: Resource, namespace: str, job: str) -> list[dict[str, Any]]:
    """The job's children of `resource` (by its job-name label) that are not being deleted."""
    items, _ = client.list(resource, namespace, label_selector=f"{JOB_NAME_LABEL}={job}")
    return [item for item in items if not item["metadata"].get("deletionTimestamp")]


def pods_by_name(client: KubeClient, namespace: str, job: str) -> dict[str, dict[str, Any]]:
    return {pod["metadata"]["name"]: pod for pod in children(client, PODS, namespace, job)}


def events_about(client: KubeClient, namespace: str, name: str) -> list[dict[str, Any]]:
    """The Events whose involved object is called `name` in `namespace`."""
    items, _ = client.list(EVENTS, namespace, field_selector=f"involvedObject.name={name}")
    return items
