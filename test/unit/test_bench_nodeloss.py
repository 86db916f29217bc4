"""The node-loss bench's rounds (hack/bench/nodeloss.py): contenders as written on the command line, the order the
racks are lost in, and the medians the summary prints, written out."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.nodeloss import Contender, contender, parse_args, rounds_order
from bench.nodeloss_report import medians, summary
from bench.replicas import PodSeen, _seen, _slim

T8 = Contender("t8", ("--threads", "8"))
T32 = Contender("t32", ("--threads", "32"))
BASE = Contender("base")


@pytest.mark.parametrize(("text", "expected"), [
    ("tfop", Contender("tfop")),
    ("t32=--threads 32", Contender("t32", ("--threads", "32"))),
    ("t32=--threads 32 --qps 1000", Contender("t32", ("--threads", "32", "--qps", "1000"))),
    ("base@/work/old", Contender("base", (), Path("/work/old"))),
    ("base@/work/old=--threads 16", Contender("base", ("--threads", "16"), Path("/work/old"))),
])
def test_a_contender_is_a_name_its_flags_and_its_checkout(text: str, expected: Contender) -> None:
    assert contender(text) == expected


def test_a_contender_needs_a_name_of_letters_digits_and_dashes() -> None:
    with pytest.raises(Exception, match="letters, digits and dashes"):
        contender("=--threads 8")
    with pytest.raises(Exception, match="letters, digits and dashes"):
        contender("a b=--threads 8")


def test_each_round_turns_the_order() -> None:
    assert rounds_order([T8, T32], 3) == [T8, T32, T32, T8, T8, T32]
    assert rounds_order([T8, T32, BASE], 3) == [T8, T32, BASE, T32, BASE, T8, BASE, T8, T32]
    assert rounds_order([T8], 2) == [T8, T8]


def test_the_racks_must_fit_in_the_nodes() -> None:
    args = parse_args(["--nodes", "100", "--rack", "20", "--rounds", "2", "--contender", "a", "--contender", "b",
                       "--no-go"])
    assert [entry.name for entry in args.contenders] == ["a", "b"]
    with pytest.raises(SystemExit):  # 2 x 2 racks and the Go operator's: 100 nodes
        parse_args(["--nodes", "99", "--rack", "20", "--rounds", "2", "--contender", "a", "--contender", "b"])
    with pytest.raises(SystemExit):
        parse_args(["--contender", "a", "--contender", "a=--threads 4"])


def test_medians_are_per_contender_of_several_rounds() -> None:
    runs = [
        {"operator": "t8", "all_replaced_s": 139.5, "last_created_s": 121.4, "cpu_s": 19.6, "machine_busy": 0.97},
        {"operator": "t32", "all_replaced_s": 70.1, "last_created_s": 50.2, "cpu_s": 21.0, "machine_busy": 0.99},
        {"operator": "t32", "all_replaced_s": 60.3, "last_created_s": 48.0, "cpu_s": 20.0, "machine_busy": 0.97},
        {"operator": "t8", "all_replaced_s": 120.5, "last_created_s": 110.0, "cpu_s": 18.0, "machine_busy": 0.96},
        {"operator": "t8", "last_created_s": 115.0, "cpu_s": 18.5, "machine_busy": 0.95},  # not all replaced
        {"operator": "go", "cpu_s": 33.0},
    ]
    assert medians(runs) == [
        ("t8: medians of 3 rounds: all_replaced_s 130.0 (of 2: [139.5, 120.5]); last_created_s 115.0 "
        "(of 3: [121.4, 110.0, 115.0]); cpu_s 18.5 (of 3: [19.6, 18.0, 18.5]); machine_busy 0.96 "
        "(of 3: [0.97, 0.96, 0.95])"),
        ("t32: medians of 2 rounds: all_replaced_s 65.2 (of 2: [70.1, 60.3]); last_created_s 49.1 "
        "(of 2: [50.2, 48.0]); cpu_s 20.5 (of 2: [21.0, 20.0]); machine_busy 0.98 (of 2: [0.99, 0.97])"),
    ]


def test_the_linger_after_the_last_round_is_told() -> None:
    assert parse_args(["--no-go"]).linger == 0.0  # off unless asked: it adds minutes
    report = {"runs": [], "linger": {"seconds_after_loss": 330.0, "replicas": 14000, "unchanged": 13998,
                                     "touched": ["job-0007-worker-x-1", "job-0912-ps-y-0"], "evicted": 2}}
    assert summary(report) == (
        "330 s after the last loss: 13998/14000 replicas unchanged since the window's end, 2 deleted by the taint "
        "eviction controller; touched: ['job-0007-worker-x-1', 'job-0912-ps-y-0']")


def pod(conditions: list[dict[str, str]], deleting: bool = False) -> dict[str, object]:
    metadata = {"name": "job-0367-ps-4ykx-1", "namespace": "nodeloss-tfop", "uid": "u2", "resourceVersion": "9"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-28T02:44:10Z"
    return {"metadata": metadata, "spec": {"nodeName": "nodeloss-00412", "containers": []},
            "status": {"phase": "Running", "conditions": conditions}}


EVICTING = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint"}
READY = {"type": "Ready", "status": "True"}


def test_a_pod_the_taint_eviction_controller_deletes_is_told_apart() -> None:
    assert _seen(_slim(pod([READY, EVICTING], deleting=True))) == PodSeen(
        "u2", "nodeloss-00412", running=True, deleting=True, evicted=True)
    assert _seen(_slim(pod([READY], deleting=True))) == PodSeen(
        "u2", "nodeloss-00412", running=True, deleting=True, evicted=False)
    preempted = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    assert _seen(_slim(pod([preempted]))).evicted is False


def test_the_watch_keeps_only_the_disruption_condition() -> None:
    assert _slim(pod([READY, EVICTING]))["status"] == {"phase": "Running", "conditions": [EVICTING]}
