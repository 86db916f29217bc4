"""Who may read an endpoint this process serves, decided by the apiserver as it decides for its own /metrics:
the caller's bearer token is checked with a TokenReview, then the user it names with a SubjectAccessReview of the
non-resource URL (path and verb), so RBAC's `nonResourceURLs` rules grant it.

Callers may rely on: a verdict for one token, verb and path, allowed or not, is reused for `ttl` seconds, so a
scraper costs the apiserver two requests per token and minute, not two per scrape (a revoked grant therefore takes
up to `ttl` to bite); at most `max_entries` verdicts are kept; a review that fails (apiserver unreachable, or this
process lacking `create` on tokenreviews or subjectaccessreviews) raises ReviewError and is never cached.
Tokens are kept only as their SHA-256.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from typing import Any

from tfop.kube.client import KubeClient
from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.errors import ApiError
from tfop.kube.expiring_cache import ExpiringCache

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
# A scrape times out after 10 s by default; an answer must come well before that, and once retried at most.
REVIEW_TIMEOUT = (3.0, 4.0)
REVIEW_RETRIES = 1


class Outcome(enum.Enum):
    ALLOWED = "allowed"
    UNAUTHENTICATED = "unauthenticated"  # no token the apiserver accepts: HTTP 401
    FORBIDDEN = "forbidden"  # a known user without the grant: HTTP 403


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    user: str = ""  # the authenticated username, "" when there is none
    reason: str = ""  # what the apiserver said, for a debug log line


class ReviewError(Exception):
    """The apiserver could not be asked, or refused to answer; nothing is known about the caller."""


def ask(client: KubeClient, path: str, body: dict[str, Any]) -> Any:
    """POST a review (TokenReview or SubjectAccessReview) with a short timeout and one retry: the caller waits."""
    try:
        return client.request("POST", path, body=body, timeout=REVIEW_TIMEOUT, max_retries=REVIEW_RETRIES)
    except ApiError as error:
        raise ReviewError(f"{body['kind']}: {error}") from None


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (the scheme in any case), or None."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        return None
    return token


def verb_of(method: str) -> str:
    """The RBAC verb of an HTTP method on a non-resource URL. HEAD is a GET without its body, so it needs `get`."""
    return "get" if method.upper() in ("GET", "HEAD") else method.lower()


def token_review(token: str) -> dict[str, Any]:
    # No audiences: the apiserver checks its own, which is what a ServiceAccount's mounted token carries.
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}


def reviewed_user(review: Any) -> tuple[dict[str, Any] | None, str]:
    """(the user a TokenReview's answer authenticated, or None; the apiserver's reason when it did not)."""
    status = (review or {}).get("status") or {}
    user = status.get("user") or {}
    if status.get("authenticated") is not True or not user.get("username"):
        return None, str(status.get("error") or "token not authenticated")
    return user, ""


def access_review(user: dict[str, Any], verb: str, path: str) -> dict[str, Any]:
    """A SubjectAccessReview asking whether `user` (a TokenReview's status.user) may `verb` the URL `path`."""
    spec: dict[str, Any] = {"user": user["username"], "nonResourceAttributes": {"path": path, "verb": verb}}
    for field in ("uid", "groups", "extra"):
        if user.get(field):
            spec[field] = user[field]
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def access_verdict(user: dict[str, Any], review: Any) -> Verdict:
    """The verdict a SubjectAccessReview's answer gives: allowed only when it says so, never on an error."""
    status = (review or {}).get("status") or {}
    reason = str(status.get("reason") or status.get("evaluationError") or "")
    outcome = Outcome.ALLOWED if status.get("allowed") is True else Outcome.FORBIDDEN
    return Verdict(outcome, str(user["username"]), reason)


class AccessReviewer:
    def __init__(self, client: KubeClient, *, ttl: float = 60.0, max_entries: int = 1024,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self._client = client
        self._verdicts: ExpiringCache[tuple[bytes, str, str], Verdict] = ExpiringCache(ttl, max_entries, clock)

    def review(self, token: str, verb: str, path: str) -> Verdict:
        key = (hashlib.sha256(token.encode()).digest(), verb, path)
        cached = self._verdicts.get(key)
        if cached is not None:
            return cached
        user, reason = reviewed_user(ask(self._client, TOKEN_REVIEWS, token_review(token)))
        if user is None:
            verdict = Verdict(Outcome.UNAUTHENTICATED, reason=reason)
        else:
            verdict = access_verdict(user, ask(self._client, SUBJECT_ACCESS_REVIEWS, access_review(user, verb, path)))
        self._verdicts.put(key, verdict)
        return verdict
