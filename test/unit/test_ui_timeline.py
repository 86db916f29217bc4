"""The timeline's layout: where each pod's bars and exits and each condition land, written out."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tfop.ui.views.happenings import Happening
from tfop.ui.views.job_page import RecreatedExit
from tfop.ui.views.timeline import (
    AXIS_HEIGHT,
    HAPPENING_HEIGHT,
    LABEL_WIDTH,
    LANE_HEIGHT,
    PLOT_WIDTH,
    ROW_HEIGHT,
    Bar,
    Marker,
    Tick,
    label_lanes,
    layout,
    tick_step,
)

# 100 s of job on 760 px: 7.6 px a second, starting at x = 140.
START = "2026-03-01T12:00:00Z"
NOW = datetime(2026, 3, 1, 12, 1, 40, tzinfo=UTC)


def at(seconds: int) -> str:
    return f"2026-03-01T12:{seconds // 60:02d}:{seconds % 60:02d}Z"


def pod(name: str, replica_type: str, index: str, created: int, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": name, "creationTimestamp": at(created),
                         "labels": {"training.kubeflow.org/replica-type": replica_type,
                                    "training.kubeflow.org/replica-index": index}},
            "status": {"containerStatuses": [{"name": "tensorflow", **status}]}}


def test_the_layout_of_a_restart_in_place_a_replacement_and_the_conditions() -> None:
    assert (LABEL_WIDTH, PLOT_WIDTH, ROW_HEIGHT, AXIS_HEIGHT) == (140, 760, 22, 34)
    pods = [
        # worker 0 ran from 10 s, was OOM-killed at 40 s and restarted in place at 45 s; still running.
        pod("j-worker-0", "Worker", "0", 0, state={"running": {"startedAt": at(45)}},
            lastState={"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": at(10),
                                      "finishedAt": at(40)}}),
        # PS 0's first pod failed with 1 at 30 s (remembered after its deletion); its replacement waits.
        pod("j-ps-0", "PS", "0", 0, state={"terminated": {"exitCode": 1, "startedAt": at(5), "finishedAt": at(30)}}),
        pod("j-ps-0", "PS", "0", 50, state={"waiting": {"reason": "ContainerCreating"}}),
    ]
    conditions = [{"type": "Created", "status": "True", "lastTransitionTime": START},
                  {"type": "Running", "status": "True", "lastTransitionTime": at(10)},
                  {"type": "Restarting", "status": "False", "lastTransitionTime": at(40)}]
    timeline = layout(pods, conditions, NOW)
    assert (timeline.width, timeline.height) == (980, 34 + 2 * 22)
    assert timeline.rows == ((34 + 11 + 4, "worker-0"), (56 + 11 + 4, "ps-0"))
    assert timeline.bars == (
        Bar(140.0, 39.0, 76.0, "waiting", "j-worker-0 waiting from 12:00:00"),
        Bar(216.0, 39.0, 684.0, "running", "j-worker-0 running from 12:00:10"),
        Bar(140.0, 61.0, 38.0, "waiting", "j-ps-0 waiting from 12:00:00"),
        Bar(178.0, 61.0, 190.0, "running", "j-ps-0 running from 12:00:05"),
        Bar(520.0, 61.0, 380.0, "waiting", "j-ps-0 waiting from 12:00:50"),
    )
    assert timeline.markers == (
        Marker(444.0, 39.0, "137", "exit-retryable", "j-worker-0 exited 137 OOMKilled at 12:00:40"),
        Marker(368.0, 61.0, "1", "exit-permanent", "j-ps-0 exited 1 at 12:00:30"),
    )
    assert timeline.conditions == (Marker(140.0, 30, "Created", "condition", "Created at 12:00:00"),
                                   Marker(216.0, 30, "Running", "condition", "Running at 12:00:10"))
    assert timeline.ticks == tuple(Tick(140.0 + 15 * 7.6 * n, f"12:{15 * n // 60:02d}:{15 * n % 60:02d}")
                                   for n in range(1, 7))


def moment(seconds: int) -> datetime:
    return datetime(2026, 3, 1, 12, seconds // 60, seconds % 60, tzinfo=UTC)


def test_the_exit_of_a_recreated_pod_this_process_did_not_see_is_marked_from_the_status() -> None:
    # Worker 0's pod that exited 137 at 20 s is gone: its replacement, made at 30 s, runs since 35 s. Worker 1's
    # first pod is still remembered (it shows its exit 143 itself); the status's entry for worker 2 has no pod.
    pods = [pod("j-worker-0", "Worker", "0", 30, state={"running": {"startedAt": at(35)}}),
            pod("j-worker-1", "Worker", "1", 25, state={"terminated": {"exitCode": 143, "reason": "Error",
                                                                       "startedAt": at(26), "finishedAt": at(40)}}),
            pod("j-worker-1", "Worker", "1", 50, state={"running": {"startedAt": at(55)}})]
    recreated = {("worker", "0"): RecreatedExit("worker", "0", 137, "Error", moment(20)),
                 ("worker", "1"): RecreatedExit("worker", "1", 143, "Error", moment(40)),
                 ("worker", "2"): RecreatedExit("worker", "2", 1, "Error", moment(45)),
                 ("worker", "3"): RecreatedExit("worker", "3", 1, "Error", None)}
    # From the exit at 20 s, the earliest moment known, to now: 80 s on 760 px, 9.5 px a second.
    assert layout(pods, [], NOW, (), recreated).markers == (
        Marker(330.0, 61.0, "143", "exit-retryable", "j-worker-1 exited 143 Error at 12:00:40"),
        Marker(140.0, 39.0, "137", "exit-retryable", "worker-0 exited 137 Error at 12:00:20; tfop recreated its pod"),
    )


def test_a_job_without_pods_has_an_empty_row_and_ten_seconds_at_least() -> None:
    timeline = layout([], [], NOW)
    assert (timeline.rows, timeline.bars, timeline.markers, timeline.height) == ((), (), (), 34 + 22)
    assert timeline.ticks[0] == Tick(292.0, "12:01:42")  # 2 s apart: 10 s on 760 px


@pytest.mark.parametrize(("seconds", "step"), [
    (5, 1), (8, 1), (9, 2), (40, 5), (100, 15), (480, 60), (3600, 600), (86400 * 30, 86400),
])
def test_ticks_are_at_most_eight(seconds: float, step: int) -> None:
    assert tick_step(seconds) == step


def test_happenings_are_markers_below_the_rows_with_their_reason() -> None:
    pods = [pod("j-worker-0", "worker", "0", 0, state={"running": {"startedAt": at(10)}})]
    told = [Happening(datetime(2026, 3, 1, 12, 0, 50, tzinfo=UTC), "node-loss", "node lost", "n1 is unreachable"),
            Happening(datetime(2026, 3, 1, 12, 1, 0, tzinfo=UTC), "resize", "resized", "Worker 4 -> 2")]
    timeline = layout(pods, [], NOW, told)
    rows_bottom = AXIS_HEIGHT + ROW_HEIGHT
    assert timeline.happenings == (
        Marker(520.0, rows_bottom + 12, "node lost", "node-loss", "node lost at 12:00:50: n1 is unreachable"),
        Marker(596.0, rows_bottom + 12, "resized", "resize", "resized at 12:01:00: Worker 4 -> 2"),
    )
    assert timeline.height == rows_bottom + HAPPENING_HEIGHT
    assert layout(pods, [], NOW).height == rows_bottom


@pytest.mark.parametrize(("starts", "expected"), [
    ([], []),
    # "Created" is 7 characters: 2 + 45.5 px from its x, and 4 px apart from the next.
    ([(140.0, "Created"), (200.0, "Running")], [0, 0]),
    ([(140.0, "Created"), (190.0, "Running")], [0, 1]),
    ([(140.0, "Created"), (140.0, "Running"), (140.0, "Succeeded")], [0, 1, 2]),
    # A lane is taken again once its last label has ended.
    ([(140.0, "Created"), (150.0, "Running"), (192.0, "Restarting")], [0, 1, 0]),
])
def test_labels_go_on_lines_where_they_do_not_overlap(starts: list[tuple[float, str]], expected: list[int]) -> None:
    assert label_lanes(starts) == expected


def test_conditions_and_happenings_at_one_moment_get_a_line_each() -> None:
    conditions = [{"type": name, "status": "True", "lastTransitionTime": at(1)}
                  for name in ("Created", "Running", "Restarting")]
    told = [Happening(datetime(2026, 3, 1, 12, 0, 1, tzinfo=UTC), "node-loss", "node lost", "n1"),
            Happening(datetime(2026, 3, 1, 12, 0, 2, tzinfo=UTC), "resize", "resized", "Worker 2 -> 3")]
    timeline = layout([pod("j-worker-0", "worker", "0", 0)], conditions, NOW, told)
    top = AXIS_HEIGHT + 2 * LANE_HEIGHT  # the rows start below three lines of condition labels
    assert [(m.label, m.y) for m in timeline.conditions] == [
        ("Created", AXIS_HEIGHT - 4), ("Running", AXIS_HEIGHT - 4 + LANE_HEIGHT),
        ("Restarting", AXIS_HEIGHT - 4 + 2 * LANE_HEIGHT)]
    assert timeline.rows == ((top + ROW_HEIGHT / 2 + 4, "worker-0"),)
    bottom = top + ROW_HEIGHT
    assert [(m.label, m.y) for m in timeline.happenings] == [("node lost", bottom + 12),
                                                             ("resized", bottom + 12 + LANE_HEIGHT)]
    assert timeline.height == bottom + HAPPENING_HEIGHT + LANE_HEIGHT
