"""The real nodes' shared pod network: the bridge every node's pods plug into, the cluster DNS (CoreDNS) and the relay
that lets pods reach the apiserver at the `kubernetes` Service's address. These belong to the cluster, not to a
node, so a node that fails takes none of them with it (as a real cluster's network and DNS outlive one machine).
"""

from __future__ import annotations

import socket
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from . import host
from .listeners import Address
from .node_config import HOST_TOOLS, corefile
from .node_layout import ClusterNetwork
from .pki import kubeconfig

COMPONENTS = ("coredns", "apiserver-relay")
BINARY_NAMES = {"apiserver-relay": "socat"}


@dataclass(frozen=True)
class PodNetwork:
    directory: Path  # the cluster's state directory
    network: ClusterNetwork
    apiserver_port: int
    coredns: Path  # the binary, from hack/build-node.sh

    @property
    def root(self) -> Path:
        return self.directory / "dns"

    def prepare(self) -> None:
        """The bridge with the host's addresses, made before any CNI plugin runs so that the plugin (isGateway false)
        never touches addresses or IP forwarding; CoreDNS's files. Idempotent."""
        net = self.network
        host.ensure_bridge(net.bridge, str(self.directory), [f"{net.gateway}/24", f"{net.api_service_ip}/32"])
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "kubeconfig"
        config.write_text(kubeconfig(f"https://127.0.0.1:{self.apiserver_port}", self.directory / "pki", "admin"))
        (self.root / "Corefile").write_text(corefile(net, config))

    def command(self, component: str) -> list[str]:
        if component == "coredns":
            return [str(self.coredns), "-conf", str(self.root / "Corefile")]
        if component == "apiserver-relay":
            # socat forks one child per connection; each carries TLS end to end between a pod and the apiserver.
            return [HOST_TOOLS["socat"], f"TCP-LISTEN:443,bind={self.network.api_service_ip},fork,reuseaddr",
                    f"TCP:127.0.0.1:{self.apiserver_port}"]
        raise ValueError(component)

    def addresses(self, component: str) -> list[Address]:
        """Where the component binds (the Corefile's and the relay's), checked free before it starts."""
        net = self.network
        if component == "coredns":
            return [Address("udp", net.gateway, 53), Address("tcp", net.gateway, 53),
                    Address("tcp", net.gateway, 8080), Address("tcp", net.gateway, 8181)]
        if component == "apiserver-relay":
            return [Address("tcp", net.api_service_ip, 443)]
        raise ValueError(component)

    def probe(self, component: str) -> bool:
        if component == "coredns":
            with urllib.request.urlopen(f"http://{self.network.gateway}:8181/ready", timeout=2) as response:
                return bool(response.read().decode().strip() == "OK")
        if component == "apiserver-relay":
            with socket.create_connection((self.network.api_service_ip, 443), timeout=2):
                return True
        raise ValueError(component)

    def teardown(self) -> None:
        """After every node is down: the bridge, and the machine-wide changes kubelet made if none runs any more."""
        host.delete_bridge(self.network.bridge, str(self.directory))
        if not host.running_binaries("kubelet"):  # the last node on the machine
            host.remove_kubelet_chains()
            host.restore_sysctls()

    def leftovers(self) -> list[str]:
        return [f"bridge {self.network.bridge}"] if host.bridge_owner(self.network.bridge) in (
            "", str(self.directory)) else []
