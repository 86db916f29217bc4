"""/metrics, /healthz and /readyz over real sockets: prometheus_client's negotiation (OpenMetrics, gzip), HEAD,
IPv6 and dual-stack binds, and a port in use refused at construction."""

from __future__ import annotations

import gzip
import http.client
import socket
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from tfop.health import Checks, EndpointServer
from tfop.metrics import OperatorMetrics


@pytest.fixture
def registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    OperatorMetrics.create(registry, namespaces=["team-a"])
    return registry


@pytest.fixture
def server(registry: CollectorRegistry) -> Iterator[EndpointServer]:
    failing = Checks()
    failing.add("caches", lambda: "caches not synced: pods")
    endpoints = EndpointServer("127.0.0.1:0", liveness=Checks(), readiness=failing, metrics=registry)
    endpoints.start()
    yield endpoints
    endpoints.stop()


def request(host: str, port: int, method: str, path: str,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_metrics_in_the_text_format_by_default(server: EndpointServer) -> None:
    status, headers, body = request("127.0.0.1", server.port, "GET", "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    assert b"# TYPE training_operator_jobs_created_total counter" in body


def test_metrics_in_openmetrics_when_asked(server: EndpointServer) -> None:
    status, headers, body = request("127.0.0.1", server.port, "GET", "/metrics",
                                    {"Accept": "application/openmetrics-text; version=1.0.0"})
    assert status == 200 and headers["content-type"].startswith("application/openmetrics-text")
    assert body.endswith(b"# EOF\n")


def test_metrics_gzipped_when_accepted(server: EndpointServer) -> None:
    status, headers, body = request("127.0.0.1", server.port, "GET", "/metrics", {"Accept-Encoding": "gzip"})
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert b"training_operator_jobs_created_total" in gzip.decompress(body)


def test_head_answers_like_get_without_a_body(server: EndpointServer) -> None:
    _, get_headers, get_body = request("127.0.0.1", server.port, "GET", "/metrics")
    status, headers, body = request("127.0.0.1", server.port, "HEAD", "/metrics")
    assert status == 200 and body == b""
    assert headers["content-type"] == get_headers["content-type"]
    assert abs(int(headers["content-length"]) - len(get_body)) < 200  # the process metrics move between scrapes
    assert request("127.0.0.1", server.port, "HEAD", "/healthz")[:3:2] == (200, b"")
    assert request("127.0.0.1", server.port, "HEAD", "/readyz")[0] == 500


def test_checks_name_what_fails(server: EndpointServer) -> None:
    assert request("127.0.0.1", server.port, "GET", "/healthz")[::2] == (200, b"ok\n")
    assert request("127.0.0.1", server.port, "GET", "/readyz")[::2] == (500, b"caches: caches not synced: pods\n")
    assert request("127.0.0.1", server.port, "GET", "/nothing")[0] == 404
    assert request("127.0.0.1", server.port, "POST", "/healthz")[0] == 405


def test_ipv6_loopback(registry: CollectorRegistry) -> None:
    endpoints = EndpointServer("[::1]:0", metrics=registry)
    endpoints.start()
    try:
        assert endpoints.address == f"[::1]:{endpoints.port}"
        assert request("::1", endpoints.port, "GET", "/metrics")[0] == 200
    finally:
        endpoints.stop()


def test_every_address_takes_ipv4_and_ipv6(registry: CollectorRegistry) -> None:
    endpoints = EndpointServer(":0", metrics=registry)
    endpoints.start()
    try:
        assert request("127.0.0.1", endpoints.port, "GET", "/metrics")[0] == 200
        assert request("::1", endpoints.port, "GET", "/metrics")[0] == 200
    finally:
        endpoints.stop()


def test_a_port_in_use_fails_at_construction(registry: CollectorRegistry) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError, match="in use"):
            EndpointServer(f"127.0.0.1:{taken.getsockname()[1]}", metrics=registry)


def test_job_counters_start_at_zero_for_the_namespaces_known_at_start(registry: CollectorRegistry) -> None:
    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    for family in ("created", "successful", "failed", "restarted", "deleted"):
        assert value(f"training_operator_jobs_{family}_total", job_namespace="team-a",
                     framework="tensorflow") == 0.0, family
    for exit_class in ("retryable", "permanent", "succeeded", "unknown"):
        assert value("tf_operator_restarts_total", job_namespace="team-a", exit_class=exit_class) == 0.0
    assert value("tf_operator_pods_created_total", job_namespace="team-a") == 0.0


def test_the_metrics_docstrings_name_only_families_that_exist(registry: CollectorRegistry) -> None:
    import re

    import tfop.kube.metrics
    import tfop.metrics

    exported = {metric.name for metric in registry.collect()}
    exported |= {f"{name}_total" for name in exported}
    named = set(re.findall(r"\b(training_operator_\w+|tf_operator_\w+|tfop_\w+|rest_client_\w+|controller_runtime_\w+"
                           r"|leader_election_\w+)",
                           f"{tfop.metrics.__doc__}{tfop.kube.metrics.__doc__}"))
    # "tf_operator_jobs_created, _deleted, ..." names a family by its prefix; "rest_client_*" a group.
    assert {name for name in named if not name.endswith("_") and name not in exported} == set()
