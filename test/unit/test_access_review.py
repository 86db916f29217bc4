"""Who may read /metrics, the pure parts: the bearer token of a header, the reviews sent and how their answers
become a verdict (table rows), and the verdict cache: reused for its TTL, bounded, never holding a failed review.
The apiserver's side is test/integration/test_metrics_auth.py."""

from __future__ import annotations

from typing import Any

import pytest

from tfop.kube.access_review import (
    SUBJECT_ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    AccessReviewer,
    Outcome,
    ReviewError,
    Verdict,
    access_review,
    access_verdict,
    bearer_token,
    reviewed_user,
    verb_of,
)
from tfop.kube.clock import FakeClock
from tfop.kube.errors import ApiError, TransportError
from tfop.kube.expiring_cache import ExpiringCache


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer abc.def", "abc.def"),
    ("bearer abc", "abc"),  # the scheme is case-insensitive (RFC 9110)
    ("BEARER   abc  ", "abc"),
    ("Bearer", None),
    ("Bearer ", None),
    ("Basic dXNlcjpwYXNz", None),
    ("Bearer two words", None),
    ("", None),
    (None, None),
])
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


@pytest.mark.parametrize(("method", "verb"), [("GET", "get"), ("HEAD", "get"), ("head", "get"), ("POST", "post"),
                                              ("DELETE", "delete")])
def test_verb_of_a_method(method: str, verb: str) -> None:
    assert verb_of(method) == verb


PROMETHEUS = {"username": "system:serviceaccount:monitoring:prometheus-k8s", "uid": "u-1",
              "groups": ["system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"],
              "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-k8s-0"]}}


@pytest.mark.parametrize(("answer", "user", "reason"), [
    ({"status": {"authenticated": True, "user": PROMETHEUS}}, PROMETHEUS, ""),
    ({"status": {"authenticated": False, "error": "token has expired"}}, None, "token has expired"),
    ({"status": {"authenticated": False}}, None, "token not authenticated"),
    ({"status": {"authenticated": True, "user": {}}}, None, "token not authenticated"),  # no username: no one
    ({"status": {"authenticated": "true", "user": PROMETHEUS}}, None, "token not authenticated"),  # only True counts
    ({}, None, "token not authenticated"),
    (None, None, "token not authenticated"),
])
def test_what_a_token_review_answer_authenticates(answer: Any, user: dict[str, Any] | None, reason: str) -> None:
    assert reviewed_user(answer) == (user, reason)


def test_the_access_review_asks_for_the_non_resource_url_as_the_whole_user() -> None:
    assert access_review(PROMETHEUS, "get", "/metrics") == {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": PROMETHEUS["username"], "uid": "u-1", "groups": PROMETHEUS["groups"],
                 "extra": PROMETHEUS["extra"], "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}}
    assert access_review({"username": "alice"}, "get", "/metrics")["spec"] == {
        "user": "alice", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}


@pytest.mark.parametrize(("status", "verdict"), [
    ({"allowed": True, "reason": "RBAC: allowed by ClusterRoleBinding \"prom\""},
     Verdict(Outcome.ALLOWED, "alice", "RBAC: allowed by ClusterRoleBinding \"prom\"")),
    ({"allowed": False}, Verdict(Outcome.FORBIDDEN, "alice")),
    ({"allowed": False, "denied": True, "reason": "webhook says no"}, Verdict(Outcome.FORBIDDEN, "alice",
                                                                               "webhook says no")),
    # An authorizer that failed is not a yes.
    ({"allowed": False, "evaluationError": "webhook timed out"}, Verdict(Outcome.FORBIDDEN, "alice",
                                                                          "webhook timed out")),
    ({"allowed": "yes"}, Verdict(Outcome.FORBIDDEN, "alice")),
    ({}, Verdict(Outcome.FORBIDDEN, "alice")),
])
def test_what_an_access_review_answer_allows(status: dict[str, Any], verdict: Verdict) -> None:
    assert access_verdict({"username": "alice"}, {"status": status}) == verdict


# --- the cache -----------------------------------------------------------------------------------------------------
def test_cache_entries_expire_after_their_ttl() -> None:
    clock = FakeClock()
    cache: ExpiringCache[str, int] = ExpiringCache(60.0, 10, clock)
    cache.put("a", 1)
    clock.step(59.5)
    assert cache.get("a") == 1
    clock.step(0.5)
    assert cache.get("a") is None and len(cache) == 0
    cache.put("a", 2)  # a put starts the entry's time again
    clock.step(30)
    cache.put("a", 3)
    clock.step(59)
    assert cache.get("a") == 3


def test_cache_keeps_at_most_its_bound_dropping_the_least_recently_used() -> None:
    cache: ExpiringCache[str, int] = ExpiringCache(60.0, 3, FakeClock())
    for key in "abc":
        cache.put(key, ord(key))
    assert cache.get("a") == ord("a")  # "a" used: "b" is now the oldest
    cache.put("d", 4)
    assert len(cache) == 3 and cache.get("b") is None
    assert [cache.get(k) for k in "acd"] == [ord("a"), ord("c"), 4]


def test_cache_refuses_settings_that_would_keep_nothing() -> None:
    with pytest.raises(ValueError, match="ttl"):
        ExpiringCache(0, 10)
    with pytest.raises(ValueError, match="max_entries"):
        ExpiringCache(60, 0)


# --- the reviewer ----------------------------------------------------------------------------------------------------
class RecordingApiserver:
    """Answers the two reviews from a table of tokens and grants; counts the requests. A stand-in for the unit
    tests of caching only: the integration test asks the real apiserver."""

    def __init__(self, users: dict[str, str], allowed: set[str]) -> None:
        self.users, self.allowed = users, allowed
        self.requests: list[str] = []
        self.failure: ApiError | None = None

    def request(self, method: str, path: str, *, body: Any, **kw: Any) -> Any:
        self.requests.append(path)
        if self.failure is not None:
            raise self.failure
        if path == TOKEN_REVIEWS:
            name = self.users.get(body["spec"]["token"])
            return {"status": {"authenticated": name is not None, **({"user": {"username": name}} if name else {})}}
        assert path == SUBJECT_ACCESS_REVIEWS and method == "POST"
        return {"status": {"allowed": body["spec"]["user"] in self.allowed}}


@pytest.fixture
def apiserver() -> RecordingApiserver:
    return RecordingApiserver({"t-reader": "reader", "t-other": "other"}, {"reader"})


def reviewer(apiserver: RecordingApiserver, clock: FakeClock, **kw: Any) -> AccessReviewer:
    return AccessReviewer(apiserver, clock=clock, **kw)  # type: ignore[arg-type]


def test_a_verdict_costs_two_requests_once_per_ttl(apiserver: RecordingApiserver) -> None:
    clock = FakeClock()
    access = reviewer(apiserver, clock)
    assert access.review("t-reader", "get", "/metrics").outcome is Outcome.ALLOWED
    assert apiserver.requests == [TOKEN_REVIEWS, SUBJECT_ACCESS_REVIEWS]
    for _ in range(10):  # a scrape every 5 s for 50 s
        clock.step(5)
        assert access.review("t-reader", "get", "/metrics").outcome is Outcome.ALLOWED
    assert len(apiserver.requests) == 2
    clock.step(10)
    assert access.review("t-reader", "get", "/metrics").outcome is Outcome.ALLOWED
    assert len(apiserver.requests) == 4


def test_refusals_are_cached_too_and_each_verb_and_path_on_its_own(apiserver: RecordingApiserver) -> None:
    access = reviewer(apiserver, FakeClock())
    assert access.review("t-other", "get", "/metrics") == Verdict(Outcome.FORBIDDEN, "other")
    assert access.review("nonsense", "get", "/metrics") == Verdict(Outcome.UNAUTHENTICATED,
                                                                   reason="token not authenticated")
    assert len(apiserver.requests) == 3  # an unknown token needs no access review
    access.review("t-other", "get", "/metrics")
    access.review("nonsense", "get", "/metrics")
    assert len(apiserver.requests) == 3
    access.review("t-reader", "post", "/metrics")
    access.review("t-reader", "get", "/other")
    assert len(apiserver.requests) == 7


def test_a_failed_review_raises_and_is_not_cached(apiserver: RecordingApiserver) -> None:
    access = reviewer(apiserver, FakeClock())
    apiserver.failure = ApiError(403, "Forbidden", 'cannot create resource "tokenreviews"')
    with pytest.raises(ReviewError, match="TokenReview: 403 Forbidden"):
        access.review("t-reader", "get", "/metrics")
    apiserver.failure = TransportError("connection refused")
    with pytest.raises(ReviewError, match="connection refused"):
        access.review("t-reader", "get", "/metrics")
    apiserver.failure = None
    assert access.review("t-reader", "get", "/metrics").outcome is Outcome.ALLOWED


def test_the_cache_is_bounded_and_keeps_no_token(apiserver: RecordingApiserver) -> None:
    access = reviewer(apiserver, FakeClock(), max_entries=4)
    for index in range(10):
        access.review(f"random-{index}", "get", "/metrics")
    cache = access._verdicts
    assert len(cache) == 4
    assert not any(isinstance(part, str) and part.startswith("random") for key in cache._entries for part in key)
