"""The client's transport against a real HTTP server on the loopback: a request's headers and body go out in one
write, a server URL's path is kept, a closed transport opens its pool again, and how bodies are encoded."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
import urllib3
from urllib3.connection import HTTPConnection

from tfop.kube import transport
from tfop.kube.transport import Transport, encode_body

TIMEOUT = (5.0, 30.0)


class Echo(BaseHTTPRequestHandler):
    """Answers every request with what it received: method, path, body (keep-alive, as the apiserver)."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        answer = json.dumps({"method": self.command, "path": self.path, "body": body.decode()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_PUT(self) -> None:
        self._answer()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def answer(response: urllib3.BaseHTTPResponse) -> Any:
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()


class Sent(HTTPConnection):
    """Below the one-write connection: records each write that reaches the socket."""

    writes: ClassVar[list[bytes]] = []

    def send(self, data: Any) -> None:
        Sent.writes.append(bytes(data))
        super().send(data)


class Recorded(transport._OneWrite, Sent):  # the mixin under test, over a recording connection
    pass


def test_headers_and_body_go_out_in_one_write(server: str) -> None:
    sender = Transport(urllib3.PoolManager(), server)
    assert sender._pool is not None
    sender._pool.ConnectionCls = Recorded
    Sent.writes = []
    got = answer(sender.send("POST", "/api/v1/pods", b'{"a":1}', {"Content-Type": "application/json"}, TIMEOUT))
    assert got == {"method": "POST", "path": "/api/v1/pods", "body": '{"a":1}'}
    assert len(Sent.writes) == 1
    assert Sent.writes[0].startswith(b"POST /api/v1/pods HTTP/1.1\r\n") and Sent.writes[0].endswith(b'\r\n\r\n{"a":1}')
    Sent.writes = []
    assert answer(sender.send("GET", "/api/v1/pods", None, {}, TIMEOUT))["method"] == "GET"
    assert len(Sent.writes) == 1, "a request without a body is its headers alone"


def test_requests_reuse_one_connection(server: str) -> None:
    sender = Transport(urllib3.PoolManager(), server)
    for _ in range(3):
        answer(sender.send("GET", "/", None, {}, TIMEOUT))
    assert sender._pool is not None and sender._pool.num_connections == 1


def test_the_server_urls_path_prefixes_every_request(server: str) -> None:
    sender = Transport(urllib3.PoolManager(), server + "/k8s/clusters/c-1/")
    assert answer(sender.send("GET", "/api/v1/pods?limit=1", None, {}, TIMEOUT))["path"] == (
        "/k8s/clusters/c-1/api/v1/pods?limit=1")


def test_a_closed_transport_opens_its_pool_again(server: str) -> None:
    sender = Transport(urllib3.PoolManager(), server)
    answer(sender.send("GET", "/", None, {}, TIMEOUT))
    sender.close()
    assert answer(sender.send("PUT", "/x", b"{}", {}, TIMEOUT)) == {"method": "PUT", "path": "/x", "body": "{}"}


def test_through_a_proxy_the_managers_urlopen_is_kept(server: str) -> None:
    # The echo server as the proxy: a plain-HTTP request through a proxy carries the whole URL as its target.
    sender = Transport(urllib3.ProxyManager(server), "http://198.18.0.1:8080")
    assert answer(sender.send("GET", "/api", None, {}, TIMEOUT))["path"] == "http://198.18.0.1:8080/api"


@pytest.mark.parametrize(("body", "sent"), [
    (None, None),
    (b'{"raw":true}', b'{"raw":true}'),
    ("kind: ConfigMap\n", b"kind: ConfigMap\n"),
    ({"metadata": {"name": "a"}, "data": {"k": "\u00e9"}}, b'{"metadata":{"name":"a"},"data":{"k":"\\u00e9"}}'),
    ([{"op": "remove", "path": "/spec/x"}], b'[{"op":"remove","path":"/spec/x"}]'),
    ({}, b"{}"),
])
def test_bodies_are_sent_as_compact_json_unless_already_encoded(body: Any, sent: bytes | None) -> None:
    assert encode_body(body) == sent
