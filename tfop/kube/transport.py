"""How a request reaches the apiserver: straight to urllib3's connection pool for its host, headers and body in one
write.

The kubernetes package's `RESTClientObject` builds the pool manager (TLS, client certificates, proxies as the
package sets them) and is used for nothing else. Its `request` cost the operator some 350 microseconds of CPU a call
on top of urllib3's own (`python -m bench.client_bench`): four content-type regular expressions, a second JSON
encoding path, the pool manager's URL parse and pool-key lookup for a host that never changes. Here the pool is
looked up once, and a body is encoded once, compact. Through an HTTP or SOCKS proxy the manager's `urlopen` is
kept, with the whole URL, since only it knows when a proxy needs the absolute form or its own headers.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection

from tfop.kube.headers import FastHeadersResponse


class _OneWrite:
    """A connection that sends a request's headers and body in one write: urllib3 sends them apart, two TLS records
    and two segments per request for the apiserver to read."""

    _held: list[bytes] | None = None

    def request(self, method: str, url: str, body: Any = None, headers: Any = None, **options: Any) -> None:
        if not isinstance(body, bytes):  # a stream or nothing: as urllib3 sends it
            super().request(method, url, body=body, headers=headers, **options)  # type: ignore[misc]
            return
        self._held = []
        try:
            super().request(method, url, body=body, headers=headers, **options)  # type: ignore[misc]
        finally:
            held, self._held = self._held, None
        super().send(b"".join(held))  # type: ignore[misc]

    def send(self, data: Any) -> None:
        if self._held is not None:
            self._held.append(data if isinstance(data, bytes) else bytes(data))
        else:
            super().send(data)  # type: ignore[misc]


class OneWriteHTTPSConnection(_OneWrite, HTTPSConnection):
    response_class = FastHeadersResponse


class OneWriteHTTPConnection(_OneWrite, HTTPConnection):
    response_class = FastHeadersResponse


class Transport:
    """Sends one request to the host and returns urllib3's response, its body not yet read; raises urllib3's errors.

    No retries, no redirects: the client decides both.
    """

    def __init__(self, manager: urllib3.PoolManager, host: str) -> None:
        self._manager = manager
        self._host = host.rstrip("/")
        self._direct = type(manager) is urllib3.PoolManager  # not through a proxy
        self._prefix = urlsplit(self._host).path  # a server URL may have a path (a proxying gateway's)
        self._pool: urllib3.HTTPConnectionPool | None = self._resolve() if self._direct else None
        self._timeouts: dict[tuple[float, float], urllib3.Timeout] = {}

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str],
             timeout: tuple[float, float]) -> urllib3.BaseHTTPResponse:
        limits = self._timeouts.get(timeout)
        if limits is None:
            limits = self._timeouts[timeout] = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        options: dict[str, Any] = {"body": body, "headers": headers, "timeout": limits, "retries": False,
                                   "redirect": False, "preload_content": False}
        if self._pool is not None:
            if self._pool.pool is None:  # closed (`close`, or the manager cleared): the manager makes a new one
                self._pool = self._resolve()
            return self._pool.urlopen(method, self._prefix + path, assert_same_host=False, release_conn=False,
                                      **options)
        return self._manager.urlopen(method, self._host + path, **options)

    def close(self) -> None:
        self._manager.clear()

    def _resolve(self) -> urllib3.HTTPConnectionPool:
        pool = self._manager.connection_from_url(self._host)
        pool.ConnectionCls = (OneWriteHTTPSConnection if isinstance(pool, urllib3.HTTPSConnectionPool)
                              else OneWriteHTTPConnection)
        return pool


def encode_body(body: Any) -> bytes | None:
    """A request's body as sent: None for none, bytes as they are, text in UTF-8, anything else as compact JSON
    (the apiserver reads JSON for every patch type, server-side apply's YAML included)."""
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, separators=(",", ":")).encode()
