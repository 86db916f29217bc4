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
        assert all(0 <= f.offset <= 3 and schedule.BLIP_HOLD[0] <= f.hold <= schedule.BLIP_HOLD[1]
                   for f in each.faults)
    assert {f.kind for r in rounds for f in r.faults} == set(schedule.KWOK_KINDS)


def test_real_node_kinds_only_when_asked_and_a_schedule_of_exclusive_kinds_ends() -> None:
    assert not {f.kind for r in first(1, 200) for f in r.faults} & set(schedule.REAL_NODE_KINDS)
    rounds = first(1, 100, kinds=schedule.REAL_NODE_KINDS, max_faults=5, overlap_probability=1.0)
    assert all(len(r.faults) <= len(schedule.REAL_NODE_KINDS) for r in rounds)


def test_kwok_schedules_are_those_the_short_form_seeds_were_kept_with() -> None:
    """Written out: the drawing of node losses must not move a kwok-only schedule (seed 11, the short form's)."""
    assert first(11, 3) == [
        schedule.Round(0, (schedule.Fault("job-delete-mid-restart", 1.76, 2.29),
                           schedule.Fault("spec-edit", 1.54, 5.41), schedule.Fault("pod-permanent", 2.38, 1.66))),
        schedule.Round(1, (schedule.Fault("spec-edit", 2.67, 5.44), schedule.Fault("pod-permanent", 1.79, 3.77))),
        schedule.Round(2, (schedule.Fault("spec-edit", 2.5, 1.44), schedule.Fault("operator-kill", 0.11, 7.16))),
    ]


def test_half_the_node_faults_last_past_the_nodes_loss_and_the_others_are_blips() -> None:
    kinds = schedule.KWOK_KINDS + schedule.REAL_NODE_KINDS
    faults = [f for r in first(7, 400, kinds=kinds) for f in r.faults]
    node = [f.hold for f in faults if f.kind in schedule.NODE_LOSS_KINDS]
    lost = [h for h in node if h >= schedule.LOSS_HOLD[0]]
    # Past the node lifecycle controller's 50 s and tfop's default 30 s grace, with margin for a loaded machine.
    assert schedule.LOSS_HOLD[0] > 50 + 30
    assert all(h <= schedule.LOSS_HOLD[1] for h in lost)
    assert all(schedule.BLIP_HOLD[0] <= h <= schedule.BLIP_HOLD[1] for h in node if h not in lost)
    assert 0.35 < len(lost) / len(node) < 0.65, (len(lost), len(node))
    assert all(f.hold <= schedule.BLIP_HOLD[1] for f in faults if f.kind not in schedule.NODE_LOSS_KINDS)
