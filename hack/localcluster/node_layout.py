"""Where the local cluster's real nodes live: their addresses, names and paths. Pure data, so that the modules that
write configuration (node_config) and the ones that run processes (node, pod_network) share it without importing
each other.

Addresses, by the cluster's slot N (0-15, chosen when the cluster is created, recorded in its state.json):
  198.18.N.0/24      the pod network: one bridge, one L2 segment for every real node of the cluster, no NAT, no
                     route off the machine. 198.18.N.1 is the host's address on it: CoreDNS listens there, and it is
                     the pods' route to the `kubernetes` Service's address.
  198.18.N.(2+i)     real node i: its kubelet and its InternalIP
  198.18.N.(16+56i) .. +55
                     node i's pod addresses (host-local IPAM), so pods of every node share the segment and reach
                     each other directly
  198.19.16N.0/20    the Service CIDR; its first address, the `kubernetes` Service's ClusterIP, is also on the
                     bridge, where the relay serves the apiserver
  198.18.128.0/17    kwok's fake pod IPs (never on any interface); 198.18.255.254 the kwok nodes' IP
Names: bridge tfop-brN; nodes real-0, real-1, ... (Node objects are per cluster, so the names need no slot); cgroup
roots /tfop-node-N-i. Two clusters can run nodes at once if their slots differ; the bridge's alias names the
cluster directory that owns it, and a second cluster with a taken slot is refused with that directory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SLOTS = 16
# Pod ranges of 56 addresses fit four nodes in the /24; a 2-core machine runs three (kubelet and containerd each).
MAX_NODES = 4
PODS_PER_NODE = 56
CLUSTER_DOMAIN = "cluster.local"
NODE_LABEL = "tfop.local/real-node"  # label and taint key: pods select the real nodes and tolerate their taint
KWOK_POD_CIDR = "198.18.128.0/17"
KWOK_NODE_IP = "198.18.255.254"


class NodeError(RuntimeError):
    """A real node cannot start here; the message says what is missing and how to get it."""


def slot_for(directory: Path, taken: Callable[[int], bool]) -> int:
    """A stable first choice from the directory's path, then the next slot nobody else holds."""
    first = int(hashlib.sha256(str(directory).encode()).hexdigest(), 16) % SLOTS
    for i in range(SLOTS):
        slot = (first + i) % SLOTS
        if not taken(slot):
            return slot
    raise NodeError(f"all {SLOTS} address slots are held by other clusters (their claims are in /run/tfop-slots, "
                    f"their bridges tfop-br0..tfop-br{SLOTS - 1}); destroy one")


@dataclass(frozen=True)
class ClusterNetwork:
    """The addresses of a cluster's slot that all its real nodes share."""

    slot: int

    @property
    def bridge(self) -> str:
        return f"tfop-br{self.slot}"

    @property
    def prefix(self) -> str:
        return f"198.18.{self.slot}"

    @property
    def subnet(self) -> str:
        return f"{self.prefix}.0/24"

    @property
    def gateway(self) -> str:
        """The host's address on the bridge: CoreDNS, and the next hop to the apiserver's Service address."""
        return f"{self.prefix}.1"

    @property
    def service_cidr(self) -> str:
        return f"198.19.{16 * self.slot}.0/20"

    @property
    def api_service_ip(self) -> str:
        """The `kubernetes` Service's ClusterIP: the apiserver allocates the range's first address to it."""
        return f"198.19.{16 * self.slot}.1"

    def node(self, index: int) -> NodeNetwork:
        if not 0 <= index < MAX_NODES:
            raise NodeError(f"a local cluster has at most {MAX_NODES} real nodes (asked for node {index})")
        return NodeNetwork(self, index)


@dataclass(frozen=True)
class NodeNetwork:
    """One real node's name and addresses."""

    cluster: ClusterNetwork
    index: int

    @property
    def name(self) -> str:
        return f"real-{self.index}"

    @property
    def ip(self) -> str:
        return f"{self.cluster.prefix}.{2 + self.index}"

    @property
    def pod_range(self) -> tuple[str, str]:
        first = 16 + PODS_PER_NODE * self.index
        return f"{self.cluster.prefix}.{first}", f"{self.cluster.prefix}.{first + PODS_PER_NODE - 1}"

    @property
    def cgroup_root(self) -> str:
        return f"/tfop-node-{self.cluster.slot}-{self.index}"

    @property
    def cni_network(self) -> str:
        return f"tfop-pods-{self.cluster.slot}-{self.index}"


@dataclass(frozen=True)
class NodeLayout:
    """One node's files under the cluster's state directory, and what its configuration refers to."""

    directory: Path  # the cluster's state directory
    network: NodeNetwork
    apiserver_port: int
    kubelet_healthz_port: int
    pause_image: str  # the sandbox image's reference; imported before kubelet starts

    @property
    def name(self) -> str:
        return self.network.name

    @property
    def root(self) -> Path:
        return self.directory / "nodes" / self.name

    @property
    def pki(self) -> Path:
        return self.directory / "pki"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd" / "containerd.sock"

    @property
    def containerd_state(self) -> Path:
        """Volatile runtime state (tasks, shims' runc state, pod network namespaces, IPAM): gone after a node's
        power loss, as /run is after a reboot."""
        return self.root / "containerd" / "state"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"
