"""Which address slot (node_layout's N) a cluster holds. Every cluster claims its slot the moment it picks it,
under the machine's slot lock, with a claim file naming its directory; a cluster with real nodes also holds it by
its bridge. A cluster that starts without real nodes and gets them later (the e2e lanes' shared clusters) would
otherwise find its slot taken by another lane's cluster that picked it in between; and two clusters with real
nodes on one slot would, the second tearing down, remove the first's node cgroups.

A claim whose directory is gone (its cluster destroyed, or its run killed before it could destroy it) is free."""

from __future__ import annotations

import contextlib
from pathlib import Path

from .host import HostError, bridge_owner, claim_bridge, slot_lock
from .node_layout import ClusterNetwork, NodeError, slot_for
from .supervisor import ClusterError

# On tmpfs, like the bridges and the slot lock: a reboot frees every slot.
CLAIMS = Path("/run/tfop-slots")


def claimant(slot: int) -> str | None:
    """The directory of the live cluster whose claim file holds the slot, or None."""
    try:
        owner = (CLAIMS / str(slot)).read_text().strip()
    except FileNotFoundError:
        return None
    return owner if owner and Path(owner).is_dir() else None


def claim_slot(directory: Path, slot: int | None, real_nodes: bool) -> int:
    """The cluster's slot: the one it has, else a free one; claimed by a file, and with real nodes by its bridge."""
    me = str(directory)
    with slot_lock():
        if slot is None:
            try:
                slot = slot_for(directory, lambda taken: claimant(taken) not in (None, me)
                                or bridge_owner(ClusterNetwork(taken).bridge) not in (None, me))
            except NodeError as error:
                raise ClusterError(str(error)) from error
        holder = claimant(slot)
        if holder not in (None, me):
            raise ClusterError(f"the address slot {slot} is held by the cluster in {holder}; stop and destroy that "
                               f"cluster first (two clusters cannot share one address slot)")
        CLAIMS.mkdir(parents=True, exist_ok=True)
        (CLAIMS / str(slot)).write_text(me)
        if real_nodes:
            try:
                claim_bridge(ClusterNetwork(slot).bridge, me)
            except HostError as error:
                raise ClusterError(str(error)) from error
    return slot


def release_slot(directory: Path, slot: int | None) -> None:
    """Gives the slot back, if this cluster's claim file holds it (destroy, once the host objects are gone)."""
    if slot is None:
        return
    with slot_lock():
        path = CLAIMS / str(slot)
        with contextlib.suppress(FileNotFoundError):
            if path.read_text().strip() == str(directory):
                path.unlink()


def owns_slot(directory: Path, network: ClusterNetwork) -> bool:
    """Whether the host objects named by the slot (cgroup roots, node addresses) are the cluster's own: they are
    not when another cluster's bridge holds the slot."""
    return bridge_owner(network.bridge) in (None, "", str(directory))
