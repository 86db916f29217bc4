"""The operator's HTTP endpoints: /healthz (liveness), /readyz (readiness) and /metrics (Prometheus).

/metrics is prometheus_client's own WSGI app, so scrapers get what they negotiate: the OpenMetrics format when
they ask for it, gzip when they accept it, `name[]` filtering. HEAD is answered as GET without the body (load
balancers and `curl -I` probe with it). Checks are named callables returning None when healthy or a short reason
when not; the endpoints list every failing reason so `kubectl describe pod` shows why a probe failed.

A server may speak TLS and put a guard before /metrics (tfop/metrics_serving.py says who passes); the probes'
server stays plain HTTP, as the kubelet probes it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from tfop.startup import ListenAddress, parse_listen_address
from tfop.tls import ContextSource, TLSServerMixin

Check = Callable[[], str | None]
StartResponse = Callable[..., Any]
Environ = dict[str, Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]


@dataclass(frozen=True)
class Refusal:
    """The answer a guard gives instead of the endpoint, e.g. 401 with a WWW-Authenticate header."""

    status: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


# Looks at a request for /metrics: None lets it through, a Refusal is answered instead.
Guard = Callable[[Environ], Refusal | None]


class Checks:
    """A thread-safe set of named checks."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}
        self._lock = threading.Lock()

    def add(self, name: str, check: Check) -> None:
        with self._lock:
            self._checks[name] = check

    def failures(self) -> list[str]:
        with self._lock:
            checks = list(self._checks.items())
        failures = []
        for name, check in checks:
            try:
                reason = check()
            except Exception as error:  # noqa: BLE001 - a broken check is a failed check, never a crashed server
                reason = f"check raised {error!r}"
            if reason is not None:
                failures.append(f"{name}: {reason}")
        return failures


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass  # probes every few seconds would drown the operator's own log


class _IPv4Server(ThreadingWSGIServer):
    address_family = socket.AF_INET


class _IPv6Server(ThreadingWSGIServer):
    address_family = socket.AF_INET6


class _DualStackServer(_IPv6Server):
    """`:port`: one IPv6 socket that takes IPv4 connections too (as mapped addresses)."""

    def server_bind(self) -> None:
        with contextlib.suppress(OSError):
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def make_app(*, liveness: Checks | None = None, readiness: Checks | None = None,
             metrics: CollectorRegistry | None = None, guard: Guard | None = None) -> WSGIApp:
    """The endpoints as one WSGI app; paths not served answer 404."""
    metrics_app = make_wsgi_app(metrics) if metrics is not None else None
    checks = {path: c for path, c in (("/healthz", liveness), ("/readyz", readiness)) if c is not None}

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "GET")
        head = method == "HEAD"
        if head:
            environ = {**environ, "REQUEST_METHOD": "GET"}
        if path == "/metrics" and metrics_app is not None:
            refusal = guard(environ) if guard is not None else None
            if refusal is not None:
                return _answer(start_response, refusal.status, refusal.body, head, list(refusal.headers))
            answered: list[Any] = []
            body = b"".join(metrics_app(environ, lambda status, headers, *rest: answered.append((status, headers))))
            status, headers = answered[0]
            start_response(status, [*headers, ("Content-Length", str(len(body)))])
            return [] if head else [body]
        if path in checks:
            if method not in ("GET", "HEAD"):
                return _answer(start_response, "405 Method Not Allowed", b"use GET or HEAD\n", head,
                               [("Allow", "GET, HEAD")])
            failures = checks[path].failures()
            if failures:
                return _answer(start_response, "500 Internal Server Error", ("\n".join(failures) + "\n").encode(), head)
            return _answer(start_response, "200 OK", b"ok\n", head)
        return _answer(start_response, "404 Not Found", b"not found\n", head)

    return app


def _answer(start_response: StartResponse, status: str, body: bytes, head: bool,
            extra: list[tuple[str, str]] | None = None) -> list[bytes]:
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))),
                            *(extra or [])])
    return [] if head else [body]


class EndpointServer:
    """Serves any of /healthz, /readyz and /metrics on one address (port 0 picks a free one), over TLS when given
    `tls`. Binding happens here, so an address in use or not on this machine fails at construction with OSError."""

    def __init__(self, address: ListenAddress | str, *, liveness: Checks | None = None, readiness: Checks | None = None,
                 metrics: CollectorRegistry | None = None, guard: Guard | None = None,
                 tls: ContextSource | None = None) -> None:
        app = make_app(liveness=liveness, readiness=readiness, metrics=metrics, guard=guard)
        if isinstance(address, str):
            address = parse_listen_address(address, "address")
        self._server = _bind(address, tls)
        self._server.set_app(app)
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"http-{address}", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def address(self) -> str:
        host, port = str(self._server.server_address[0]), int(self._server.server_address[1])
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()


def _bind(address: ListenAddress, tls: ContextSource | None) -> WSGIServer:
    def server(cls: type[WSGIServer], host: str) -> WSGIServer:
        if tls is not None:
            # The handshake first, then the WSGI server's own handling, on each request's thread.
            cls = cast(type[WSGIServer], type(f"TLS{cls.__name__}", (TLSServerMixin, cls),
                                              {"contexts": staticmethod(tls)}))
        made = cls((host, address.port), _QuietHandler)
        made.daemon_threads = True  # type: ignore[attr-defined]
        return made

    if address.host:
        # A name (localhost) binds the first address it resolves to, of whichever family.
        family = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM,
                                    flags=socket.AI_PASSIVE)[0][0]
        return server(_IPv6Server if family == socket.AF_INET6 else _IPv4Server, address.host)
    if socket.has_ipv6:
        try:
            return server(_DualStackServer, "::")
        except OSError as error:
            if error.errno not in (97, 99):  # EAFNOSUPPORT, EADDRNOTAVAIL: no IPv6 on this machine
                raise
    return server(_IPv4Server, "0.0.0.0")
