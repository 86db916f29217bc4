"""Which REST collection a call addresses: group, version, plural and scope, and the URL path built from them."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    """A kind of API object as the apiserver serves it (one REST collection)."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """The `apiVersion` field of objects of this resource ("v1" or "group/version")."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path of the collection, of one object or of one object's subresource.

        A namespaced resource without a namespace addresses the collection across all namespaces (list and watch
        only). Passing a namespace for a cluster-scoped resource, or a name of a namespaced one without its
        namespace, is a caller bug and raises ValueError rather than silently addressing something else.
        """
        parts = [f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"]
        if self.namespaced:
            if namespace:
                parts.append(f"/namespaces/{quote(namespace, safe='')}")
            elif name is not None:
                raise ValueError(f"{self.kind} {name!r} is namespaced: a namespace is required")
        elif namespace:
            raise ValueError(f"{self.kind} is cluster-scoped: got namespace {namespace!r}")
        parts.append(f"/{self.plural}")
        if name is not None:
            if not name:
                raise ValueError(f"empty {self.kind} name")
            parts.append(f"/{quote(name, safe='')}")
            if subresource:
                parts.append(f"/{subresource}")
        elif subresource:
            raise ValueError(f"subresource {subresource!r} needs an object name")
        return "".join(parts)


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
JOBS = Resource("batch", "v1", "jobs", "Job")
EVENTS = Resource("", "v1", "events", "Event")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
RESOURCE_QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)
