"""A local cluster claims its address slot when it picks it, with or without real nodes (hack/localcluster/
slots.py). A CI run's e2e lane started its shared cluster without real nodes, the e2e-long lane's cluster took the
same slot for its real nodes, and when the e2e cluster then added its own it found the slot another cluster's: 25
errors. The claim files live in a temporary directory here, so no real cluster's claims are touched."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import localcluster.host
import localcluster.slots
from localcluster.node_layout import SLOTS
from localcluster.slots import claim_slot, claimant, release_slot
from localcluster.supervisor import ClusterError


@pytest.fixture(autouse=True)
def private_claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(localcluster.slots, "CLAIMS", tmp_path / "claims")
    monkeypatch.setattr(localcluster.host, "SLOT_LOCK", tmp_path / "slots.lock")


def same_first_choice(root: Path) -> tuple[Path, Path]:
    """Two cluster directories whose paths hash to one first slot (pigeonhole: two of SLOTS + 1 do)."""
    seen: dict[int, Path] = {}
    for index in range(SLOTS + 1):
        directory = root / f"c{index}"
        directory.mkdir()
        first = int(hashlib.sha256(str(directory).encode()).hexdigest(), 16) % SLOTS
        if first in seen:
            return seen[first], directory
        seen[first] = directory
    raise AssertionError("unreachable: more directories than slots")


def test_a_cluster_without_real_nodes_holds_its_slot_against_a_later_one(tmp_path: Path) -> None:
    first, second = same_first_choice(tmp_path)
    slot = claim_slot(first, None, real_nodes=False)
    assert claimant(slot) == str(first)
    assert claim_slot(second, None, real_nodes=False) != slot
    with pytest.raises(ClusterError, match=f"the address slot {slot} is held by the cluster in {first}"):
        claim_slot(second, slot, real_nodes=False)
    assert claim_slot(first, slot, real_nodes=False) == slot  # its own claim, again: idempotent


def test_a_claim_whose_directory_is_gone_is_free(tmp_path: Path) -> None:
    first, second = same_first_choice(tmp_path)
    slot = claim_slot(first, None, real_nodes=False)
    first.rmdir()  # its run was killed before destroy() could give the slot back
    assert claimant(slot) is None
    assert claim_slot(second, slot, real_nodes=False) == slot
    assert claimant(slot) == str(second)


def test_only_the_claimant_gives_a_slot_back(tmp_path: Path) -> None:
    first, second = same_first_choice(tmp_path)
    slot = claim_slot(first, None, real_nodes=False)
    release_slot(second, slot)
    assert claimant(slot) == str(first)
    release_slot(first, slot)
    assert claimant(slot) is None
    release_slot(first, None)  # a cluster that never picked a slot has nothing to give back
