"""The operator's HTTP endpoints: /healthz (liveness), /readyz (readiness) and /metrics (Prometheus).

Checks are named callables returning None when healthy or a short reason when not; the endpoints list every
failing reason so `kubectl describe pod` shows why a probe failed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Check = Callable[[], str | None]


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


class EndpointServer:
    """Serves any of /healthz, /readyz and /metrics on one address (host:port; port 0 picks a free one)."""

    def __init__(self, address: str, *, liveness: Checks | None = None, readiness: Checks | None = None,
                 metrics: CollectorRegistry | None = None) -> None:
        host, _, port = address.rpartition(":")
        routes: dict[str, Callable[[], tuple[int, str, bytes]]] = {}
        if liveness is not None:
            routes["/healthz"] = lambda: _check_response(liveness)
        if readiness is not None:
            routes["/readyz"] = lambda: _check_response(readiness)
        if metrics is not None:
            routes["/metrics"] = lambda: (200, CONTENT_TYPE_LATEST, generate_latest(metrics))

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                route = routes.get(self.path.split("?", 1)[0])
                code, content_type, body = route() if route else (404, "text/plain", b"not found\n")
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # probes every few seconds would drown the operator's own log

        self._server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"http-{address}", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _check_response(checks: Checks) -> tuple[int, str, bytes]:
    failures = checks.failures()
    if failures:
        return 500, "text/plain", ("\n".join(failures) + "\n").encode()
    return 200, "text/plain", b"ok\n"
