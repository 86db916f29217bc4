"""The disruption scenarios' rows (hack/bench/disruption_scenarios.py), as the docs' table prints them, written out;
and the waits of hack/bench/real_jobs.py, which cannot import test/support/waiting.py, giving what it gives."""

from __future__ import annotations

import pytest

from bench.disruption_scenarios import Row
from bench.real_jobs import KUBECTL_INTERVAL, STEP_DEADLINE, restart_count
from support import waiting


def test_the_benchs_waits_are_the_suites() -> None:
    assert (STEP_DEADLINE, KUBECTL_INTERVAL) == (waiting.DEADLINE, waiting.KUBECTL_INTERVAL)


def row(**changes: object) -> Row:
    fields: dict[str, object] = dict(
        scenario="kubectl drain", operator="tfop", created=1000.0, disrupted=1100.4, saved=(1097.2, 2),
        running_again=1140.0, resumed=(1150.9, 2), restarts=0, succeeded=1190.0, failed=None, watched_for=90.0,
        strategy="keras")
    fields.update(changes)
    return Row(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("changes", "cells"), [
    ({}, ["kubectl drain", "tfop", "100 s", "-3 s (epoch 2)", "+40 s", "+50 s, epoch 2", "0", "+90 s"]),
    # An operator that never brought the replicas back: what did not happen within the watch.
    ({"operator": "Go", "running_again": None, "resumed": None, "restarts": 1, "succeeded": None,
      "watched_for": 600.0},
     ["kubectl drain", "Go", "100 s", "-3 s (epoch 2)", "never", "never", "1", "not within 600 s"]),
    ({"succeeded": None, "failed": 1200.0, "saved": None},
     ["kubectl drain", "tfop", "100 s", "none", "+40 s", "+50 s, epoch 2", "0", "Failed +100 s"]),
    # A PS job keeps its variables on the PS: nothing to save; it trains on from a step.
    ({"strategy": "ps", "saved": None, "resumed": (1141.0, 12)},
     ["kubectl drain", "tfop", "100 s", "none (variables on the PS)", "+40 s", "+41 s, step 12", "0", "+90 s"]),
])
def test_a_row_is_seconds_after_the_disruption(changes: dict[str, object], cells: list[str]) -> None:
    assert row(**changes).cells() == cells
    assert row(**changes).line() == f"| {' | '.join(cells)} |"


@pytest.mark.parametrize(("pod", "count"), [
    ({"status": {"containerStatuses": [{"name": "tensorflow", "restartCount": 2}]}}, 2),
    # The count is the tensorflow container's, not a sidecar's.
    ({"status": {"containerStatuses": [{"name": "sidecar", "restartCount": 5},
                                        {"name": "tensorflow", "restartCount": 0}]}}, 0),
    ({"status": {}}, 0),  # not started: no container statuses yet
])
def test_a_pods_in_place_restarts_are_its_tensorflow_containers(pod: dict[str, object], count: int) -> None:
    assert restart_count(pod) == count
