"""hack/ports.py: a server's port comes from below the range outgoing connections take theirs from."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

import ports


def test_a_port_is_free_and_below_the_ephemeral_range() -> None:
    first_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(50):
        port = ports.free_port()
        assert ports.LOWEST <= port < min(first_ephemeral, ports.HIGHEST)
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))


def test_without_room_below_the_range_the_kernel_chooses(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    narrow = tmp_path / "ip_local_port_range"
    narrow.write_text("10500\t60999\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", narrow)
    port = ports.free_port()
    assert port >= 10500  # from the kernel's own range, whatever it is on this machine
