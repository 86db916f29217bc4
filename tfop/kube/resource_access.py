"""Whether a user may read an API resource, decided by the apiserver as it would decide for the user's own
request: the bearer token is checked with a TokenReview, then the user it names with a SubjectAccessReview of the
resource attributes (verb, group, resource, subresource, namespace, name). A process that reads on a user's behalf
with its own identity asks this first, so its rights never stand in for the user's.

Callers may rely on: a token's user is reused for `ttl` seconds and a verdict per user and attributes for `ttl`
seconds too (a revoked grant takes up to `ttl` to bite); tokens are kept only as their SHA-256; a review that fails
raises ReviewError and is never cached; a SubjectAccessReview that does not say `allowed: true` is a denial.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from tfop.kube.access_review import (
    SUBJECT_ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    ask,
    reviewed_user,
    token_review,
)
from tfop.kube.client import KubeClient
from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.expiring_cache import ExpiringCache


@dataclass(frozen=True)
class Attributes:
    """What a request would touch, as RBAC names it. `namespace` "" is every namespace."""

    verb: str
    resource: str
    group: str = ""
    namespace: str = ""
    subresource: str = ""
    name: str = ""


@dataclass(frozen=True)
class User:
    """A user a TokenReview authenticated: what a SubjectAccessReview must repeat to ask about them."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def from_review(cls, user: dict[str, Any]) -> User:
        extra = tuple(sorted((key, tuple(values)) for key, values in (user.get("extra") or {}).items()))
        return cls(str(user["username"]), str(user.get("uid") or ""), tuple(user.get("groups") or ()), extra)


def resource_access_review(user: User, attributes: Attributes) -> dict[str, Any]:
    """A SubjectAccessReview asking whether `user` may do `attributes`."""
    resource_attributes = {"verb": attributes.verb, "group": attributes.group, "resource": attributes.resource}
    for field in ("namespace", "subresource", "name"):
        if getattr(attributes, field):
            resource_attributes[field] = getattr(attributes, field)
    spec: dict[str, Any] = {"user": user.name, "resourceAttributes": resource_attributes}
    if user.uid:
        spec["uid"] = user.uid
    if user.groups:
        spec["groups"] = list(user.groups)
    if user.extra:
        spec["extra"] = {key: list(values) for key, values in user.extra}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def allowed_by(review: Any) -> bool:
    """Only an explicit `allowed: true` allows; a missing status, an evaluation error or `denied` never do."""
    return ((review or {}).get("status") or {}).get("allowed") is True


class ResourceAccess:
    def __init__(self, client: KubeClient, *, ttl: float = 5.0, max_entries: int = 4096,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self._client = client
        self._users: ExpiringCache[bytes, User] = ExpiringCache(ttl, max_entries, clock)
        self._verdicts: ExpiringCache[tuple[User, Attributes], bool] = ExpiringCache(ttl, max_entries, clock)

    def authenticate(self, token: str) -> User | None:
        """The user the token belongs to, or None when the apiserver does not accept it."""
        key = hashlib.sha256(token.encode()).digest()
        known = self._users.get(key)
        if known is not None:
            return known
        user, _ = reviewed_user(ask(self._client, TOKEN_REVIEWS, token_review(token)))
        found = User.from_review(user) if user is not None else None
        if found is not None:  # an unknown token is asked about again: it may be new, not yet seen
            self._users.put(key, found)
        return found

    def allows(self, user: User, attributes: Attributes) -> bool:
        cached = self._verdicts.get((user, attributes))
        if cached is not None:
            return cached
        verdict = allowed_by(ask(self._client, SUBJECT_ACCESS_REVIEWS, resource_access_review(user, attributes)))
        self._verdicts.put((user, attributes), verdict)
        return verdict
