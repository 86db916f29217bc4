"""Which address slot (node_layout's N) a cluster holds. A cluster with real nodes holds its slot by its bridge,
claimed the moment it picks the slot, under the machine's slot lock: two clusters starting at once (two test lanes)
could otherwise pick one slot, and the one whose bridge came second would, tearing down, remove the other's node
cgroups. A cluster without real nodes puts nothing on the host, so its pick claims nothing."""

from __future__ import annotations

from pathlib import Path

from .host import HostError, bridge_owner, claim_bridge, slot_lock
from .node_layout import ClusterNetwork, slot_for
from .supervisor import ClusterError


def claim_slot(directory: Path, slot: int | None, real_nodes: bool) -> int:
    """The cluster's slot: the one it has, else a free one; with real nodes, claimed by its bridge."""
    with slot_lock():
        if slot is None:
            slot = slot_for(directory, lambda taken: bridge_owner(ClusterNetwork(taken).bridge) is not None)
        if real_nodes:
            try:
                claim_bridge(ClusterNetwork(slot).bridge, str(directory))
            except HostError as error:
                raise ClusterError(str(error)) from error
    return slot


def owns_slot(directory: Path, network: ClusterNetwork) -> bool:
    """Whether the host objects named by the slot (cgroup roots, node addresses) are the cluster's own: they are
    not when another cluster's bridge holds the slot."""
    return bridge_owner(network.bridge) in (None, "", str(directory))
