"""The page's proxy of a job's TensorBoard, pure (tfop/ui/tensorboard_proxy.py): which Service, which apiserver
path, which redirects pass, what is undone in HTML, and the headers a confined answer carries
(tfop/ui/security.py). The proxy itself, on the real apiserver: test/integration/test_tensorboard.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tfop.api.runtime_id import runtime_id
from tfop.ui.security import CONFINED, CONTENT_SECURITY_POLICY, SecurityHeaders
from tfop.ui.tensorboard_proxy import (
    answered,
    confining_policy,
    forwarded,
    service_name,
    stays_under,
    upstream_path,
    without_proxy_links,
)

PREFIX = "/namespaces/ns/tfjobs/mnist/tensorboard"
ORIGIN = "http://ui.example:8080"


def test_the_service_of_a_job_that_asks() -> None:
    job = {"metadata": {"name": "mnist", "uid": "u-1", "annotations": {"tfop.kubeflow.org/tensorboard": "/logs"}}}
    assert service_name(job) == f"mnist-tb-{runtime_id('u-1')}"
    assert service_name({"metadata": {"name": "mnist", "uid": "u-1"}}) is None


def test_the_apiserver_path_keeps_the_tensorboard_prefix() -> None:
    assert upstream_path("ns", "mnist-tb-abcd", "mnist", "data/plugin/scalars/tags") == (
        "/api/v1/namespaces/ns/services/mnist-tb-abcd:http/proxy/namespaces/ns/tfjobs/mnist/tensorboard/"
        "data/plugin/scalars/tags")
    assert upstream_path("ns", "s", "mnist", "a b/../c").endswith("/tensorboard/a%20b/../c")


@pytest.mark.parametrize(("location", "stays"), [
    (f"{PREFIX}/", True),
    (f"{PREFIX}/#scalars", True),
    ("data/logdir", True),
    ("./index.js", True),
    (f"{ORIGIN}{PREFIX}/x", True),
    (PREFIX, True),
    ("../../other/tensorboard/", False),
    ("/namespaces/ns/tfjobs/mnist/pods/mnist-worker-0", False),
    (f"{PREFIX}x/", False),
    ("http://evil.example/namespaces/ns/tfjobs/mnist/tensorboard/", False),
    ("//evil.example/", False),
])
def test_a_redirect_passes_only_within_the_jobs_tensorboard(location: str, stays: bool) -> None:
    assert stays_under(location, ORIGIN, PREFIX) is stays


def test_the_confining_policy() -> None:
    here = f"{ORIGIN}{PREFIX}/"
    assert confining_policy(ORIGIN, PREFIX) == (
        f"default-src {here}; script-src {here} 'unsafe-inline' 'unsafe-eval'; style-src {here} 'unsafe-inline'; "
        f"img-src {here} data: blob:; font-src {here} data:; connect-src {here}; frame-src {here}; "
        f"worker-src {here}; object-src 'none'; base-uri 'none'; form-action {here}; frame-ancestors 'self'; "
        "sandbox allow-scripts allow-same-origin allow-forms allow-downloads")


def test_only_what_tensorboard_reads_and_the_browser_needs_passes() -> None:
    assert forwarded({"accept": "*/*", "cookie": "tfop-ui-token=secret", "authorization": "Bearer t",
                      "x-xsrf-protected": "1", "accept-encoding": "gzip"}) == {"accept": "*/*",
                                                                               "x-xsrf-protected": "1"}
    assert answered([("Content-Type", "text/html"), ("Set-Cookie", "a=b"), ("Content-Encoding", "gzip"),
                     ("Content-Security-Policy", "default-src 'self'"), ("ETag", "x")]) == [
        ("Content-Type", "text/html"), ("Content-Security-Policy", "default-src 'self'"), ("ETag", "x")]


def test_the_apiservers_rewritten_links_are_undone_in_html_only() -> None:
    rewritten = b'<a href="/api/v1/namespaces/ns/services/s:http/proxy/namespaces/ns/tfjobs/mnist/tensorboard/x">'
    assert without_proxy_links(rewritten, "text/html; charset=utf-8", "ns", "s") == (
        b'<a href="/namespaces/ns/tfjobs/mnist/tensorboard/x">')
    assert without_proxy_links(rewritten, "application/json", "ns", "s") == rewritten


def headers_sent(app_headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": app_headers})

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(SecurityHeaders(app)({"type": "http"}, None, send))  # type: ignore[arg-type]
    return list(sent[0]["headers"])


def test_a_confined_answer_keeps_its_own_policy_beside_the_confining_one() -> None:
    headers = headers_sent([(b"content-type", b"text/html"), (b"content-security-policy", b"default-src 'self'"),
                            (CONFINED, b"default-src http://ui/p/")])
    assert [value for name, value in headers if name == b"content-security-policy"] == [
        b"default-src 'self'", b"default-src http://ui/p/"]
    assert (b"x-frame-options", b"SAMEORIGIN") in headers and (b"cache-control", b"no-store") in headers
    assert all(name != CONFINED for name, _ in headers)


def test_any_other_answer_gets_the_pages_policy_alone() -> None:
    headers = headers_sent([(b"content-security-policy", b"default-src *")])
    assert [value for name, value in headers if name == b"content-security-policy"] == [
        CONTENT_SECURITY_POLICY.encode()]
    assert (b"x-frame-options", b"DENY") in headers
