"""Secure /metrics without a cluster: the flags resolved (table rows), the guard's answers, and HTTPS for real on
loopback with a self-signed certificate and with certificate files that are rotated. The apiserver's verdicts are
test/integration/test_metrics_auth.py's."""

from __future__ import annotations

import hashlib
import http.client
import socket
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from prometheus_client import CollectorRegistry

from tfop.cli import build_parser
from tfop.health import EndpointServer, Refusal
from tfop.kube.access_review import Outcome, ReviewError, Verdict
from tfop.metrics import OperatorMetrics
from tfop.metrics_serving import MetricsServing, access_guard, metrics_serving, serving_certificate
from tfop.startup import ListenAddress, StartupError
from tfop.tls import CertificateFiles, self_signed_context, self_signed_hosts

HEALTH = ListenAddress("", 8081)


@pytest.mark.parametrize(("flags", "in_pod", "expected"), [
    # make run: plain HTTP on loopback.
    ({}, False, ("127.0.0.1:8080", False, None)),
    # In a pod: HTTPS on every address, a self-signed certificate.
    ({}, True, (":8443", True, None)),
    ({"secure": True}, False, (":8443", True, None)),
    ({"secure": False}, True, ("127.0.0.1:8080", False, None)),  # behind a sidecar proxy of one's own
    ({"cert_dir": "/run/tfop/metrics"}, False, (":8443", True, "/run/tfop/metrics")),  # a certificate means HTTPS
    ({"secure": True, "addr": "[::]:9443"}, True, ("[::]:9443", True, None)),
    ({"addr": ":8080"}, False, (":8080", False, None)),  # allowed, with a warning at start
    ({"secure": True, "addr": "127.0.0.1:0"}, False, ("127.0.0.1:0", True, None)),
])
def test_metrics_flags_resolve(flags: dict[str, object], in_pod: bool, expected: tuple[str, bool, str | None]) -> None:
    serving = metrics_serving(flags.get("addr"), flags.get("secure"), flags.get("cert_dir"),  # type: ignore[arg-type]
                              health=HEALTH, in_pod=in_pod)
    assert (str(serving.address), serving.secure, serving.cert_dir) == expected


@pytest.mark.parametrize(("address", "secure", "exposed"), [
    (":8080", False, True), ("0.0.0.0:8080", False, True), ("198.18.0.7:8080", False, True),
    ("127.0.0.1:8080", False, False), ("[::1]:8080", False, False), ("localhost:8080", False, False),
    (":8443", True, False)])
def test_plain_http_beyond_loopback_is_what_gets_a_warning(address: str, secure: bool, exposed: bool) -> None:
    assert metrics_serving(address, secure, None, health=HEALTH, in_pod=False).exposed_in_plain is exposed


@pytest.mark.parametrize(("addr", "secure", "cert_dir", "fragments"), [
    (None, False, "/certs", ["--metrics-cert-dir is for HTTPS", "--no-metrics-secure"]),
    (":8081", True, None, ["both :8081", "port of its own"]),
    ("8443", True, None, ["--metrics-addr '8443' is not host:port"]),
])
def test_metrics_flags_that_cannot_work_exit_2(addr: str | None, secure: bool, cert_dir: str | None,
                                               fragments: list[str]) -> None:
    with pytest.raises(StartupError) as raised:
        metrics_serving(addr, secure, cert_dir, health=HEALTH, in_pod=True)
    assert raised.value.exit_code == 2 and all(f in str(raised.value) for f in fragments), str(raised.value)


def test_the_secure_flag_has_a_negative_and_a_default_of_none() -> None:
    def parsed(*args: str) -> bool | None:
        secure: bool | None = build_parser().parse_args(["run", *args]).metrics_secure
        return secure

    assert (parsed(), parsed("--metrics-secure"), parsed("--no-metrics-secure")) == (None, True, False)
    assert build_parser().parse_args(["run"]).metrics_addr is None


# --- the guard -----------------------------------------------------------------------------------------------------
TOKENS = {"t-reader": Verdict(Outcome.ALLOWED, "reader"), "t-other": Verdict(Outcome.FORBIDDEN, "other"),
          "t-bad": Verdict(Outcome.UNAUTHENTICATED, reason="invalid bearer token")}


def review(token: str, verb: str, path: str) -> Verdict:
    if token == "t-down":
        raise ReviewError("TokenReview: connection refused")
    return TOKENS[token] if verb == "get" else Verdict(Outcome.FORBIDDEN, TOKENS[token].user)


def guarded(authorization: str | None, method: str = "GET") -> Refusal | None:
    environ = {"PATH_INFO": "/metrics", "REQUEST_METHOD": method, "REMOTE_ADDR": "198.18.0.9"}
    if authorization is not None:
        environ["HTTP_AUTHORIZATION"] = authorization
    return access_guard(review)(environ)


def test_the_guard_answers_401_403_or_lets_through() -> None:
    with structlog.testing.capture_logs() as logs:
        assert guarded("Bearer t-reader") is None
        assert guarded("Bearer t-reader", "HEAD") is None
        no_token, bad, other = guarded(None), guarded("Bearer t-bad"), guarded("Bearer t-other")
        post = guarded("Bearer t-reader", "POST")
        down = guarded("Bearer t-down")
    assert no_token == bad == Refusal("401 Unauthorized", b"Unauthorized: send a bearer token the apiserver accepts\n",
                                      (("WWW-Authenticate", "Bearer"),))
    assert other == Refusal("403 Forbidden", b"Forbidden: other may not get /metrics\n")
    assert post == Refusal("403 Forbidden", b"Forbidden: reader may not post /metrics\n")
    assert down is not None and down.status == "503 Service Unavailable"
    refused = [(e["log_level"], e.get("status"), e.get("reason")) for e in logs]
    assert refused == [("debug", 401, "no bearer token"), ("debug", 401, "invalid bearer token"),
                       ("debug", 403, ""), ("debug", 403, ""), ("warning", None, None)]


# --- HTTPS on loopback ---------------------------------------------------------------------------------------------
@pytest.fixture
def registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    OperatorMetrics.create(registry, namespaces=["team-a"])
    return registry


def https(port: int, method: str = "GET", token: str | None = None, cafile: Path | None = None,
          host: str = "127.0.0.1") -> tuple[int, dict[str, str], bytes, bytes]:
    """(status, headers, body, the server's certificate as DER)."""
    context = ssl.create_default_context(cafile=str(cafile)) if cafile else ssl._create_unverified_context()
    connection = http.client.HTTPSConnection(host, port, timeout=10, context=context)
    try:
        connection.request(method, "/metrics", headers={"Authorization": f"Bearer {token}"} if token else {})
        assert isinstance(connection.sock, ssl.SSLSocket)
        der = connection.sock.getpeercert(binary_form=True) or b""
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read(), der
    finally:
        connection.close()


@pytest.fixture
def self_signed() -> tuple[ssl.SSLContext, str]:
    return self_signed_context(["localhost", "127.0.0.1"], "tfop-metrics-test")


@pytest.fixture
def secure_server(registry: CollectorRegistry, self_signed: tuple[ssl.SSLContext, str]) -> Iterator[EndpointServer]:
    context = self_signed[0]
    server = EndpointServer("127.0.0.1:0", metrics=registry, guard=access_guard(review), tls=lambda: context)
    server.start()
    yield server
    server.stop()


def test_secure_metrics_over_https(secure_server: EndpointServer, self_signed: tuple[ssl.SSLContext, str]) -> None:
    status, headers, body, der = https(secure_server.port, token="t-reader")
    assert status == 200 and b"# TYPE training_operator_jobs_created_total counter" in body
    assert hashlib.sha256(der).hexdigest() == self_signed[1]  # the fingerprint tfop logs is the one it serves
    status, headers, body, _ = https(secure_server.port)
    assert (status, headers["www-authenticate"]) == (401, "Bearer")
    assert body == b"Unauthorized: send a bearer token the apiserver accepts\n"
    assert https(secure_server.port, token="t-other")[::2] == (403, b"Forbidden: other may not get /metrics\n")
    assert https(secure_server.port, "HEAD", token="t-other")[::2] == (403, b"")
    status, headers, body, _ = https(secure_server.port, "HEAD", token="t-reader")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 1000


def test_secure_metrics_on_every_address_take_ipv4_and_ipv6(registry: CollectorRegistry,
                                                            self_signed: tuple[ssl.SSLContext, str]) -> None:
    """The in-cluster default, :8443: one dual-stack socket, TLS on both families."""
    context = self_signed[0]
    server = EndpointServer(":0", metrics=registry, guard=access_guard(review), tls=lambda: context)
    server.start()
    try:
        for host in ("127.0.0.1", "::1"):
            assert https(server.port, token="t-reader", host=host)[0] == 200, host
    finally:
        server.stop()


def test_the_self_signed_certificate_names_this_host_and_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "tfop-7d9f8-x2x4k")
    assert self_signed_hosts() == ["tfop-7d9f8-x2x4k", "localhost", "127.0.0.1", "::1"]
    monkeypatch.setattr(socket, "gethostname", lambda: "odd_name,with=commas")  # not a DNS name: left out
    assert self_signed_hosts() == ["localhost", "127.0.0.1", "::1"]


def test_secure_metrics_give_nothing_to_plain_http(secure_server: EndpointServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", secure_server.port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
            connection.getresponse()
    finally:
        connection.close()
    assert https(secure_server.port, token="t-reader")[0] == 200  # and the server is none the worse for it


def openssl_certificate(directory: Path, common_name: str) -> None:
    """A self-signed tls.crt/tls.key for 127.0.0.1, as cert-manager's selfSigned issuer would write."""
    directory.mkdir(exist_ok=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "1", "-subj", f"/CN={common_name}", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(directory / "tls.key.new"), "-out", str(directory / "tls.crt.new")],
                   check=True, capture_output=True)
    for name in ("tls.key", "tls.crt"):  # renamed into place, as the kubelet swaps a Secret's files
        (directory / f"{name}.new").rename(directory / name)


def test_mounted_certificate_files_are_served_verified_and_reloaded_when_rotated(
        registry: CollectorRegistry, tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    openssl_certificate(certs, "first")
    files = CertificateFiles(certs, "metrics")
    server = EndpointServer("127.0.0.1:0", metrics=registry, guard=access_guard(review), tls=files.context)
    server.start()
    try:
        first = (certs / "tls.crt").read_bytes()
        trusted = tmp_path / "first.crt"
        trusted.write_bytes(first)
        assert https(server.port, token="t-reader", cafile=trusted)[0] == 200  # verified against the file
        openssl_certificate(certs, "second")
        der = https(server.port, token="t-reader")[3]
        assert der == ssl.PEM_cert_to_DER_cert((certs / "tls.crt").read_text())
        with pytest.raises(ssl.SSLCertVerificationError):
            https(server.port, token="t-reader", cafile=trusted)
    finally:
        server.stop()


def test_no_openssl_and_no_certificate_is_a_startup_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(StartupError) as raised:
        serving_certificate(MetricsServing(ListenAddress("", 8443), True, None))
    assert raised.value.exit_code == 2 and "openssl" in raised.value.problem
    assert "--metrics-cert-dir" in raised.value.fix
    with pytest.raises(StartupError, match=r"tls\.crt"):
        serving_certificate(MetricsServing(ListenAddress("", 8443), True, str(tmp_path / "missing")))
