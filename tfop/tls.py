"""TLS for the servers tfop runs (the conversion webhook, a secure /metrics): their certificate, and the handshake.

A certificate comes from files (tls.crt and tls.key, the layout of a kubernetes.io/tls Secret that cert-manager
keeps), read again when they change so a rotated one is used without a restart; or, where none is mounted, it is
made at start, self-signed, with the `openssl` command: the standard library cannot make keys, and tfop adds no
dependency for it. The made key never leaves memory for longer than loading it takes.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from socketserver import BaseServer
from typing import Any

import structlog

log = structlog.get_logger("tfop.tls")

ContextSource = Callable[[], ssl.SSLContext]
SELF_SIGNED_DAYS = 365
HANDSHAKE_TIMEOUT = 10.0


class CertificateError(OSError):
    """No certificate to serve with: files missing or unreadable, or openssl absent or failing."""


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


class CertificateFiles:
    """An SSL context from tls.crt/tls.key in a directory, rebuilt when either file changes."""

    def __init__(self, directory: str | Path, purpose: str = "webhook") -> None:
        self.cert = Path(directory) / "tls.crt"
        self.key = Path(directory) / "tls.key"
        self.purpose = purpose
        self._lock = threading.Lock()
        self._stamp: tuple[float, float] | None = None
        self._context: ssl.SSLContext | None = None
        self.context()  # fail at start, naming the files, rather than at the first request

    def context(self) -> ssl.SSLContext:
        with self._lock:
            stamp = (os.stat(self.cert).st_mtime, os.stat(self.key).st_mtime)
            if self._context is None or stamp != self._stamp:
                context = server_context(self.cert, self.key)
                if self._context is not None:
                    log.info(f"{self.purpose} certificate reloaded", cert=str(self.cert))
                self._context, self._stamp = context, stamp
            return self._context


def self_signed_hosts() -> list[str]:
    """The names a client may use for this process: its hostname (a pod's name) if it is a DNS name, and
    loopback."""
    hostname = socket.gethostname().lower()
    names = [hostname] if re.fullmatch(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?", hostname) else []
    return list(dict.fromkeys([*names, "localhost", "127.0.0.1", "::1"]))


def self_signed_context(hosts: Sequence[str], common_name: str) -> tuple[ssl.SSLContext, str]:
    """(a server context with a new self-signed certificate for `hosts`, its SHA-256 fingerprint)."""
    context, fingerprint, _ = self_signed_certificate(hosts, common_name)
    return context, fingerprint


def self_signed_certificate(hosts: Sequence[str], common_name: str) -> tuple[ssl.SSLContext, str, str]:
    """(a server context with a new self-signed certificate for `hosts`, its SHA-256 fingerprint, the certificate
    as PEM, which clients trust as their CA)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise CertificateError("the openssl command is not installed, so no self-signed certificate can be made")
    names = ",".join(f"IP:{h}" if _is_ip(h) else f"DNS:{h}" for h in hosts)
    with tempfile.TemporaryDirectory(prefix="tfop-tls-") as directory:
        cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        # P-256: made in milliseconds where RSA takes a noticeable fraction of a second, and every TLS client has it.
        made = subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                               "-nodes", "-days", str(SELF_SIGNED_DAYS), "-subj", f"/CN={common_name}",
                               "-addext", f"subjectAltName={names}", "-keyout", str(key), "-out", str(cert)],
                              capture_output=True, text=True, timeout=30, check=False)
        if made.returncode != 0:
            raise CertificateError(f"openssl could not make a certificate: {made.stderr.strip()[-300:]}")
        pem = cert.read_text()
        der = ssl.PEM_cert_to_DER_cert(pem)
        return server_context(cert, key), hashlib.sha256(der).hexdigest(), pem


def _is_ip(host: str) -> bool:
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
    except OSError:
        return False
    return True


class TLSServerMixin(BaseServer):
    """Put before a socketserver server class: every accepted connection is served over TLS with the context
    `contexts()` gives at that moment (so reloaded certificate files take effect for the next connection)."""

    contexts: ContextSource

    def get_request(self) -> tuple[Any, Any]:
        connection, address = super().get_request()
        connection.settimeout(HANDSHAKE_TIMEOUT)
        # The handshake happens on the request's own thread (finish_request), so a slow client holds up no other.
        return self.contexts().wrap_socket(connection, server_side=True, do_handshake_on_connect=False), address

    def finish_request(self, request: Any, client_address: Any) -> None:
        try:
            request.do_handshake()
        except OSError:
            return  # a client that does not trust us, plain HTTP on this port, or a port scan
        super().finish_request(request, client_address)


class _ThreadingTLSServer(TLSServerMixin, ThreadingHTTPServer):
    daemon_threads = True


class HTTPSServing:
    """An HTTP handler served over TLS on a thread of its own (the conversion webhook, the progress endpoint)."""

    def __init__(self, address: str, handler: type[BaseHTTPRequestHandler], contexts: ContextSource,
                 name: str) -> None:
        host, _, port = address.rpartition(":")
        self._server = _ThreadingTLSServer((host or "0.0.0.0", int(port)), handler)
        self._server.contexts = contexts
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
