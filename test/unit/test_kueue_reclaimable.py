"""The reclaimable pods an admitted Workload should carry (plan/policies/kueue_reclaimable.py), from the replicas
ended for good and what is stored; the status patch a plan makes of them is in test_kueue_own.py."""

from __future__ import annotations

import pytest

from tfop.controller.plan.policies.kueue_reclaimable import ReclaimablePods, wanted_reclaimable

PODS = (("chief", 1), ("worker", 2))

WANTED: dict[str, tuple[dict[str, int], ReclaimablePods, ReclaimablePods]] = {
    "nothing ended: no list": ({}, (), ()),
    "one worker ended": ({"worker": 1}, (), (("worker", 1),)),
    "a second one: raised": ({"worker": 2}, (("worker", 1),), (("worker", 2),)),
    "already told: the same": ({"worker": 1}, (("worker", 1),), (("worker", 1),)),
    "the record lower than stored: never lowered": ({"worker": 0}, (("worker", 2),), (("worker", 2),)),
    "a zero entry stored: kept, entries never go": ({}, (("chief", 0),), (("chief", 0),)),
    "more ended than the pod set holds: capped": ({"worker": 3}, (), (("worker", 2),)),
    "two pod sets, in the Workload's order": ({"worker": 1, "chief": 1}, (), (("chief", 1), ("worker", 1))),
    "an unknown stored entry: kept as it is": ({}, (("ps", 1),), (("ps", 1),)),
    "a replica type without a pod set: ignored": ({"evaluator": 1}, (), ()),
}


@pytest.mark.parametrize(("ended", "stored", "wanted"), WANTED.values(), ids=WANTED.keys())
def test_the_wanted_reclaimable_pods(ended: dict[str, int], stored: ReclaimablePods,
                                     wanted: ReclaimablePods) -> None:
    assert wanted_reclaimable(PODS, ended, stored) == wanted

