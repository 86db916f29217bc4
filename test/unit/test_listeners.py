"""A component of the local cluster finds the address it is to bind already taken by a process that is not this
cluster's (a socat relay left over by an earlier cluster) and fails naming it (hack/localcluster/listeners.py,
Supervisor.start): with real listening processes, read back from /proc."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from localcluster.listeners import Address, holders
from localcluster.node_config import corefile
from localcluster.node_layout import ClusterNetwork
from localcluster.pod_network import PodNetwork
from localcluster.supervisor import ClusterError, Supervisor
from support.waiting import wait_for

# Listens on (host, port, protocol) until killed; prints "ready" once bound.
LISTENER = """
import socket, sys, time
host, port, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
s.bind((host, port))
if kind == "tcp":
    s.listen()
print("ready", flush=True)
time.sleep(3600)
"""


Listen = Callable[..., "subprocess.Popen[str]"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def listen(tmp_path: Path) -> Iterator[Listen]:
    started: list[subprocess.Popen[str]] = []
    script = tmp_path / "leftover_relay.py"
    script.write_text(LISTENER)

    def start(host: str, port: int, kind: str = "tcp") -> subprocess.Popen[str]:
        process = subprocess.Popen([sys.executable, str(script), host, str(port), kind], stdout=subprocess.PIPE,
                                   text=True)
        started.append(process)
        assert process.stdout and process.stdout.readline() == "ready\n"
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()


def test_a_listening_process_is_found_with_its_command_line(listen: Listen) -> None:
    port = free_port()
    process = listen("127.0.0.1", port)
    [holder] = holders([Address("tcp", "127.0.0.1", port)])
    assert holder.pid == process.pid
    assert "leftover_relay.py 127.0.0.1" in holder.command
    assert str(holder) == f"tcp 127.0.0.1:{port} is held by pid {process.pid} ({holder.command})"


def test_a_wildcard_listener_holds_every_address_of_its_port_and_udp_is_told_apart(listen: Listen) -> None:
    port = free_port()
    process = listen("0.0.0.0", port, "udp")
    [holder] = holders([Address("udp", "127.0.0.2", port)])
    assert (holder.address, holder.pid) == (Address("udp", "0.0.0.0", port), process.pid)
    assert holders([Address("tcp", "127.0.0.2", port)]) == []


def test_a_free_address_and_a_connection_from_it_are_not_held(listen: Listen) -> None:
    port, other = free_port(), free_port()
    listen("127.0.0.1", port)
    with socket.create_connection(("127.0.0.1", port)) as client:
        local_port = client.getsockname()[1]
        assert holders([Address("tcp", "127.0.0.1", other), Address("tcp", "127.0.0.1", local_port)]) == []


class OneComponent(Supervisor):
    """The supervisor's start with one component that binds a fixed address, as the pod network's do."""

    def __init__(self, directory: Path, script: Path, port: int) -> None:
        (directory / "logs").mkdir(parents=True)
        self.directory = directory
        self.script, self.port = script, port

    @property
    def components(self) -> tuple[str, ...]:
        return ("relay",)

    def _command(self, component: str) -> list[str]:
        return [sys.executable, str(self.script), "127.0.0.1", str(self.port), "tcp"]

    def _env(self, component: str) -> dict[str, str] | None:
        return None

    def _binary_name(self, component: str) -> str:
        return Path(sys.executable).name

    def _probe(self, component: str) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2):
            return True

    def _refresh(self) -> bool:
        return True

    def _addresses(self, component: str) -> list[Address]:
        return [Address("tcp", "127.0.0.1", self.port)]


def test_a_component_whose_address_a_leftover_holds_fails_naming_it_and_starts_once_it_is_gone(
        tmp_path: Path, listen: Listen) -> None:
    """The leftover answers the probe: without the check, start() would have called the component healthy."""
    port = free_port()
    leftover = listen("127.0.0.1", port)
    supervisor = OneComponent(tmp_path / "cluster", tmp_path / "leftover_relay.py", port)
    with pytest.raises(ClusterError) as error:
        supervisor.start("relay")
    assert str(error.value) == (
        f"relay cannot start: tcp 127.0.0.1:{port} is held by pid {leftover.pid} ({sys.executable} "
        f"{tmp_path / 'leftover_relay.py'} 127.0.0.1 {port} tcp), not this cluster's relay (left over by an earlier "
        "cluster?); stop it, then start again")
    assert supervisor.pid("relay") is None  # nothing was started beside it
    leftover.kill()
    leftover.wait()
    supervisor.start("relay")
    try:
        ours = supervisor.pid("relay")
        assert ours is not None
        wait_for(lambda: [holder.pid for holder in holders([Address("tcp", "127.0.0.1", port)])] == [ours],
                 message="the relay started to hold its address")
        # Running, it is ours: a second start neither checks nor starts another.
        supervisor.start("relay")
        assert supervisor.pid("relay") == ours
    finally:
        supervisor.stop("relay")


def test_the_pod_network_checks_the_addresses_its_corefile_and_relay_bind() -> None:
    network = PodNetwork(Path("/nonexistent"), ClusterNetwork(3), apiserver_port=6443, coredns=Path("coredns"))
    assert network.addresses("coredns") == [
        Address("udp", "198.18.3.1", 53), Address("tcp", "198.18.3.1", 53), Address("tcp", "198.18.3.1", 8080),
        Address("tcp", "198.18.3.1", 8181)]
    assert network.addresses("apiserver-relay") == [Address("tcp", "198.19.48.1", 443)]
    # The Corefile binds what is checked.
    config = corefile(ClusterNetwork(3), Path("kubeconfig"))
    assert {"bind 198.18.3.1", "health 198.18.3.1:8080", "ready 198.18.3.1:8181"} <= {
        line.strip() for line in config.splitlines()}, config
    assert ":53 " in config
