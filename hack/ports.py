"""A free loopback port, for the servers the local cluster, the bench and the tests start: every one listens on
127.0.0.1 only. The port is free when asked; a server that loses the race to bind it fails loudly."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
