"""Who is asking, and what the apiserver lets them see: the bearer token of a request (the Authorization header,
else the cookie the login form set), its user by TokenReview, and each read by SubjectAccessReview as that user.
Any failure to ask is a denial (ReviewError propagates and the page answers 403)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tfop.api.constants import GROUP, PLURAL
from tfop.kube.access_review import bearer_token
from tfop.kube.resource_access import Attributes, ResourceAccess, User

TOKEN_COOKIE = "tfop-ui-token"


def request_token(headers: Mapping[str, str], cookies: Mapping[str, str]) -> str | None:
    """The Authorization header's bearer token wins over the cookie: a proxy that passes one means it."""
    header = headers.get("authorization")
    if header is not None:
        return bearer_token(header)
    cookie = cookies.get(TOKEN_COOKIE, "").strip()
    return cookie if cookie and " " not in cookie else None


@dataclass(frozen=True)
class Viewer:
    user: User
    access: ResourceAccess

    def may(self, verb: str, resource: str, namespace: str, *, group: str = "", subresource: str = "",
            name: str = "") -> bool:
        return self.access.allows(self.user, Attributes(verb, resource, group, namespace, subresource, name))

    def may_get_job(self, namespace: str, name: str) -> bool:
        return self.may("get", PLURAL, namespace, group=GROUP, name=name)

    def may_list_pods(self, namespace: str) -> bool:
        return self.may("list", "pods", namespace)

    def may_get_pod(self, namespace: str, name: str) -> bool:
        return self.may("get", "pods", namespace, name=name)

    def may_read_log(self, namespace: str, pod: str) -> bool:
        return self.may("get", "pods", namespace, subresource="log", name=pod)

    def may_list_events(self, namespace: str) -> bool:
        return self.may("list", "events", namespace)

    def job_namespaces(self, namespaces: Iterable[str]) -> set[str] | None:
        """Of `namespaces`, those whose TFJobs the user may list; None when they may list them everywhere."""
        if self.may("list", PLURAL, "", group=GROUP):
            return None
        return {namespace for namespace in set(namespaces) if self.may("list", PLURAL, namespace, group=GROUP)}

    def may_list_jobs_in_any(self, namespaces: Iterable[str]) -> bool:
        """Whether the user may list TFJobs in one of `namespaces` (asked in order, until one says yes)."""
        return any(self.may("list", PLURAL, namespace, group=GROUP) for namespace in namespaces)
