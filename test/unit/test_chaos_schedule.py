"""The chaos schedule is the seed's alone, and keeps its rules (hack/chaos/schedule.py)."""

from __future__ import annotations

from itertools import islice

import pytest

from chaos import schedule


def first(seed: int, count: int = 50, **kw: object) -> list[schedule.Round]:
    return list(islice(schedule.rounds(seed, **kw), count))  # type: ignore[arg-type]


def test_a_seed_replays_its_schedule_and_another_differs() -> None:
    assert first(7) == first(7)
    assert first(7) != first(8)


@pytest.mark.parametrize("seed", [1, 2, 3, 11])
def test_rounds_overlap_faults_and_never_one_component_twice(seed: int) -> None:
    rounds = first(seed, 200)
    assert any(r.overlapping for r in rounds) and any(not r.overlapping for r in rounds)
    for each in rounds:
        exclusive = [f.kind for f in each.faults if f.kind in schedule.EXCLUSIVE_KINDS]
        assert len(exclusive) == len(set(exclusive)), each
        assert all(0 <= f.offset <= 3 and 1 <= f.hold <= 8 for f in each.faults)
    assert {f.kind for r in rounds for f in r.faults} == set(schedule.KWOK_KINDS)


def test_real_node_kinds_only_when_asked_and_a_schedule_of_exclusive_kinds_ends() -> None:
    assert not {f.kind for r in first(1, 200) for f in r.faults} & set(schedule.REAL_NODE_KINDS)
    rounds = first(1, 100, kinds=schedule.REAL_NODE_KINDS, max_faults=5, overlap_probability=1.0)
    assert all(len(r.faults) <= len(schedule.REAL_NODE_KINDS) for r in rounds)
