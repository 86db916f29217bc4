"""What the chaos driver (hack/chaos/driver.py) lets a round's faults take: never one real node twice."""

from __future__ import annotations

import random
from typing import Any, cast

from chaos.driver import Driver

NODES = ["real-0", "real-1"]


def driver() -> Driver:
    # Claiming a node reads no cluster: neither the client nor the observer is used.
    return Driver(cast(Any, None), cast(Any, None), "chaos-7", random.Random(7), running_jobs=0)


def test_two_node_faults_of_one_round_take_two_nodes_and_a_third_none() -> None:
    d = driver()
    first, second = d.claim_node(NODES), d.claim_node(NODES)
    assert {first, second} == set(NODES)
    assert d.claim_node(NODES) is None


def test_the_next_round_may_take_a_node_again() -> None:
    d = driver()
    d.claim_node(NODES)
    d.claim_node(NODES)
    d.claimed.clear()  # as each round starts
    assert d.claim_node(NODES) in NODES
