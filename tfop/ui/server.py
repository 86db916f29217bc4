"""`tfop ui`: the caches started and synced, then the page served by uvicorn until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import structlog
import uvicorn

from tfop import logs
from tfop.kube.client import KubeClient
from tfop.kube.resource_access import ResourceAccess
from tfop.startup import EXIT_USAGE, StartupError, parse_listen_address, report_startup_error
from tfop.ui.app import UiApp
from tfop.ui.cache import UiCache

log = structlog.get_logger("tfop.ui")
SYNC_SECONDS = 120.0
# Open live streams end on shutdown; waiting longer for them only delays the exit.
SHUTDOWN_SECONDS = 3


def listening_socket(addr: str) -> socket.socket:
    """Bound before uvicorn starts, so that port 0 works and the address is known for the log line."""
    address = parse_listen_address(addr, "--addr")
    family = socket.AF_INET6 if address.is_ipv6 or not address.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6 and not address.host:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind((address.host or "::", address.port))
    sock.listen(128)
    return sock


def ui_server(app: UiApp, *, cert_dir: str | None = None) -> uvicorn.Server:
    ssl: dict[str, str] = {}
    if cert_dir:
        ssl = {"ssl_certfile": str(Path(cert_dir) / "tls.crt"), "ssl_keyfile": str(Path(cert_dir) / "tls.key")}
    config = uvicorn.Config(app.starlette(), log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=SHUTDOWN_SECONDS, **ssl)  # type: ignore[arg-type]
    return uvicorn.Server(config)


def run_ui(args: argparse.Namespace) -> int:
    logs.configure(args.log_format, "info")
    try:
        sock = listening_socket(args.addr)
    except StartupError as error:
        report_startup_error(error)
        return EXIT_USAGE
    client = KubeClient.auto(args.kubeconfig)
    cache = UiCache(client)
    cache.start()
    if not cache.wait_for_sync(SYNC_SECONDS):
        log.error("the caches did not sync; may this ServiceAccount list and watch tfjobs, pods, events, namespaces?")
        cache.stop()
        return 1
    host, port = sock.getsockname()[:2]
    scheme = "https" if args.cert_dir else "http"
    log.info("serving the TFJob page", url=f"{scheme}://{'[' + host + ']' if ':' in host else host}:{port}/")
    server = ui_server(UiApp(cache, ResourceAccess(client), client), cert_dir=args.cert_dir)
    try:
        server.run(sockets=[sock])
    finally:
        cache.stop()
    return 0
