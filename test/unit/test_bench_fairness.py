"""The fairness scenario's arithmetic (hack/bench/fairness.py): the big job's shape, and the table's medians and
ratio, written out."""

from __future__ import annotations

from typing import Any

from bench.fairness import Contender, big_job, table


def run(contender: str, big: int, p99: float, p50: float = 1.0, big_start: float | None = None,
        created_p99: float | None = None) -> dict[str, Any]:
    made: dict[str, Any] = {"contender": contender, "big_replicas": big, "run": 0,
                            "start": {"p50": p50, "p99": p99}, "pods_running": {"p50": p50, "p99": p99 - 0.5}}
    if created_p99 is not None:
        made["pods_created"] = {"p50": p50, "p99": created_p99}
    if big_start is not None:
        made["big_start_s"] = big_start
    return made


def test_the_big_job_has_the_replicas_asked_for() -> None:
    specs = big_job(2000)["spec"]["tfReplicaSpecs"]
    assert {name: spec["replicas"] for name, spec in specs.items()} == {"Chief": 1, "Worker": 1995, "PS": 4}


def test_the_table_divides_p99_with_the_big_job_by_p99_alone() -> None:
    # tfop-base's runs are from before the pods' creation was recorded: "-" in that column
    runs = [run("tfop-base", 0, 4.0), run("tfop", 0, 4.0, created_p99=2.0),
            run("tfop-base", 2000, 20.0, big_start=90.0),
            run("tfop", 2000, 4.6, big_start=80.0, created_p99=2.5), run("tfop", 2000, 5.0, big_start=82.0,
                                                                           created_p99=3.5),
            run("tfop", 0, 3.0, created_p99=1.0)]
    text, rows = table(runs, [Contender("tfop-base"), Contender("tfop")])
    assert rows == [{"contender": "tfop-base", "runs": 1, "ratio": 5.0, "met": False},
                    {"contender": "tfop", "runs": 2, "ratio": 4.8 / 3.5, "met": False}]
    assert text.splitlines()[-6:] == [
        "| tfop-base | 1 | 1.0 / 4.0 | 1.0 / 20.0 | 5.00x (missed) | - / - | 3.5 / 19.5 | 90.0 |",
        "| tfop | 2 | 1.0 / 3.5 | 1.0 / 4.8 | 1.37x (missed) | 1.5 / 3.0 | 3.0 / 4.3 | 81.0 |",
        "",
        "Targets (bench/targets.py):",
        ("  [MISS] tfop-base small jobs' start p99 beside the big job within 1.2x of alone: 5.00x, target <= 1.2x: "
        "missed by 3.80x"),
        ("  [MISS] tfop small jobs' start p99 beside the big job within 1.2x of alone: 1.37x, target <= 1.2x: "
        "missed by 0.17x")]


def test_a_ratio_within_the_target_is_met() -> None:
    _, rows = table([run("tfop", 0, 4.0), run("tfop", 2000, 4.8, big_start=60.0)], [Contender("tfop")])
    assert rows == [{"contender": "tfop", "runs": 1, "ratio": 1.2, "met": True}]
