"""Namespaces for tests, made through the API (a kubectl process costs about 0.13 s of CPU each time)."""

from __future__ import annotations

from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound, TransportError
from tfop.kube.resource import NAMESPACES, SERVICE_ACCOUNTS, Resource


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
