"""The page's request-level rules, pure: which token a request carries, which form posts are taken, how a
SubjectAccessReview is asked and read, and the server-sent event framing."""

from __future__ import annotations

import pytest

from tfop.kube.resource_access import Attributes, User, allowed_by, resource_access_review
from tfop.ui.live import sse_message
from tfop.ui.security import same_origin
from tfop.ui.viewer import TOKEN_COOKIE, request_token


@pytest.mark.parametrize(("headers", "cookies", "expected"), [
    ({}, {}, None),
    ({"authorization": "Bearer abc"}, {}, "abc"),
    ({"authorization": "bearer abc"}, {TOKEN_COOKIE: "from-cookie"}, "abc"),  # the header wins
    ({"authorization": "Basic abc"}, {TOKEN_COOKIE: "from-cookie"}, None),  # a header that says no token: none
    ({}, {TOKEN_COOKIE: "from-cookie"}, "from-cookie"),
    ({}, {TOKEN_COOKIE: "two words"}, None),
    ({}, {TOKEN_COOKIE: "  "}, None),
])
def test_the_token_of_a_request(headers: dict[str, str], cookies: dict[str, str], expected: str | None) -> None:
    assert request_token(headers, cookies) == expected


@pytest.mark.parametrize(("origin", "scheme", "host", "expected"), [
    ("http://127.0.0.1:8080", "http", "127.0.0.1:8080", True),
    ("https://ui.example", "https", "ui.example", True),
    (None, "http", "127.0.0.1:8080", False),
    ("null", "http", "127.0.0.1:8080", False),
    ("http://evil.example", "http", "127.0.0.1:8080", False),
    ("http://ui.example", "https", "ui.example", False),
])
def test_a_login_is_taken_from_the_page_itself_only(origin: str | None, scheme: str, host: str,
                                                     expected: bool) -> None:
    assert same_origin(origin, scheme, host) is expected


def test_a_review_asks_as_the_user_with_their_groups_and_extra() -> None:
    user = User.from_review({"username": "system:serviceaccount:a:alice", "uid": "u1",
                             "groups": ["system:serviceaccounts", "system:authenticated"],
                             "extra": {"authentication.kubernetes.io/pod-name": ["p"]}})
    assert resource_access_review(user, Attributes("get", "pods", "", "a", "log", "p-0")) == {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "system:serviceaccount:a:alice", "uid": "u1",
                 "groups": ["system:serviceaccounts", "system:authenticated"],
                 "extra": {"authentication.kubernetes.io/pod-name": ["p"]},
                 "resourceAttributes": {"verb": "get", "group": "", "resource": "pods", "namespace": "a",
                                        "subresource": "log", "name": "p-0"}}}
    assert resource_access_review(User("bob"), Attributes("list", "tfjobs", "kubeflow.org"))["spec"] == {
        "user": "bob", "resourceAttributes": {"verb": "list", "group": "kubeflow.org", "resource": "tfjobs"}}


@pytest.mark.parametrize(("answer", "allowed"), [
    ({"status": {"allowed": True}}, True),
    ({"status": {"allowed": False, "denied": True}}, False),
    ({"status": {"allowed": "true"}}, False),
    ({"status": {"evaluationError": "webhook down"}}, False),
    ({}, False),
    (None, False),
])
def test_only_an_explicit_allowed_allows(answer: object, allowed: bool) -> None:
    assert allowed_by(answer) is allowed


def test_every_line_of_an_event_is_a_data_field() -> None:
    assert sse_message("update", "<p>a</p>\n<p>b</p>") == "event: update\ndata: <p>a</p>\ndata: <p>b</p>\n\n"
    assert sse_message("denied", "") == "event: denied\ndata: \n\n"
