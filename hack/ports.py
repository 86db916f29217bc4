"""A free loopback port, for the servers the local cluster, the bench and the tests start: every one listens on
127.0.0.1 only.

The port is taken below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), where outgoing connections
get their local ports: a port from that range (what binding port 0 gives) is free when asked, but seconds later,
when the server starts, any client's connection may hold it, and the server fails with "address already in use"
(seen once in seven loaded runs of a test whose cluster starts beside busy clients). Below the range, only another
server picking at the same moment could take it. A server that loses that race still fails loudly."""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10_000  # above the well-known and most registered services' ports
HIGHEST = 30_000  # below Kubernetes' NodePort range (30000-32767), which a real node's kube-proxy may hold
ATTEMPTS = 200


def free_port() -> int:
    below = min(_first_ephemeral_port(), HIGHEST)
    if below - LOWEST >= 1_000:
        for _ in range(ATTEMPTS):
            port = random.randrange(LOWEST, below)
            if _bindable(port):
                return port
    with socket.socket() as probe:  # no room below the range (or all taken): the kernel's choice
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _first_ephemeral_port() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
