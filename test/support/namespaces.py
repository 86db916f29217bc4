"""Namespaces for tests, made through the API (a kubectl process costs about 0.13 s of CPU each time)."""

from __future__ import annotations

from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError, NotFound, TransportError
from tfop.kube.resource import NAMESPACES, PODS, SERVICE_ACCOUNTS, Resource

TRACKING_FINALIZER = "tfop.kubeflow.org/replica-tracking"  # spelled out: the tests state the API they expect


def exists(client: KubeClient, resource: Resource, name: str, namespace: str | None = None) -> bool:
    try:
        client.get(resource, name, namespace)
    except NotFound:
        return False
    return True


def make_namespace(client: KubeClient, name: str) -> None:
    """Creates the namespace and returns once pods can be made in it: the ServiceAccount admission plugin rejects
    them until the controller-manager has made the default account."""
    client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_for(lambda: _has_default_account(client, name), DEADLINE, f"the default ServiceAccount in namespace {name}")


def _has_default_account(client: KubeClient, namespace: str) -> bool:
    try:
        return exists(client, SERVICE_ACCOUNTS, "default", namespace)
    except TransportError:
        return False  # a starved apiserver's timeout, after the client's retries: ask again


def release_tracked_pods(client: KubeClient, namespace: str) -> int:
    """Removes tfop's finalizer from every pod of the namespace that still holds it, as the reference's downgrade
    command does; returns how many. For a test's namespace once its operator is stopped: the namespace's deletion
    would otherwise wait on them for ever (and kwok would keep them, taking room on its nodes)."""
    released = 0
    pods, _ = client.list(PODS, namespace)
    for pod in pods:
        if TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ()):
            patch = {"metadata": {"uid": pod["metadata"]["uid"],
                                  "$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}
            try:
                client.patch(PODS, pod["metadata"]["name"], patch, namespace, patch_type="strategic")
            except ApiError:
                continue  # gone, or released meanwhile
            released += 1
    return released
