"""The bench's arithmetic (hack/bench/report.py): which figure each ratio divides by, and which targets hold."""

from __future__ import annotations

from typing import Any

import pytest

from bench.report import noise, rest_cpu, summarize, table, targets

ORDER = ["limit", "limit-go", "tfop", "go-tuned"]


def run(contender: str, index: int, **figures: float) -> dict[str, Any]:
    return {"contender": contender, "jobs": 100, "run": index, "load_before": (2.0 + index, 1.0, 1.0),
            "requests_audit_by_kind": {"create pods": 700, "create services": 700}, **figures}


RUNS = [
    run("limit", 0, pods_running_s=10.0, children_s=8.0, requests_audit=1400, start_p99_s=9.0, apiserver_cpu_s=20.0),
    run("limit", 1, pods_running_s=12.0, children_s=9.0, requests_audit=1400, start_p99_s=9.0, apiserver_cpu_s=22.0),
    run("limit", 2, pods_running_s=11.0, children_s=7.0, requests_audit=1400, start_p99_s=9.0, apiserver_cpu_s=21.0),
    run("limit-go", 0, pods_running_s=12.5, children_s=9.0, requests_audit=1400, start_p99_s=10.0),
    run("tfop", 0, pods_running_s=11.5, jobs_running_s=11.5, children_s=8.8, requests_audit=1610, start_p99_s=9.5,
        lag_p50_s=0.4, lag_p99_s=3.5, apiserver_cpu_s=26.0),
    run("go-tuned", 0, pods_running_s=11.0, jobs_running_s=12.0, children_s=9.6, requests_audit=3300,
        start_p99_s=10.0),
]


def by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["contender"]: row for row in rows}


@pytest.mark.parametrize(("contender", "figure", "expected"), [
    ("limit", "pods_running_s", 11.0),  # the median of 10, 12, 11
    ("limit", "children_s", 8.0),
    ("limit", "requests_per_job", 14.0),
    ("tfop", "jobs_running_s_vs_limit", 11.5 / 11.0),  # jobs Running against the limit's pods running
    ("tfop", "jobs_running_s_vs_go-tuned", 11.5 / 12.0),  # like for like against an operator
    ("tfop", "start_p99_s_vs_go-tuned", 0.95),
    ("tfop", "requests_per_job_vs_limit", 1.15),
    ("tfop", "children_s_vs_limit", 1.1),
    ("tfop", "apiserver_cpu_s_vs_limit", 26.0 / 21.0),  # the median of the limit's 20, 22, 21
    ("go-tuned", "requests_per_job_vs_limit", 3300 / 1400),
    ("go-tuned", "jobs_running_s_vs_limit", 12.0 / 12.5),  # against the limit of its own group
    ("go-tuned", "children_s_vs_limit", 9.6 / 9.0),
    ("limit-go", "pods_running_s_vs_limit", 12.5 / 11.0),  # how the machine moved between the groups
])
def test_summarize(contender: str, figure: str, expected: float) -> None:
    assert by_name(summarize(RUNS, ORDER))[contender][figure] == pytest.approx(expected)


def test_requests_by_kind_and_spread() -> None:
    limit = by_name(summarize(RUNS, ORDER))["limit"]
    assert limit["requests_by_kind"] == {"create pods": 700, "create services": 700}
    assert limit["pods_running_spread"] == pytest.approx(2.0 / 11.0)
    assert limit["load_1m"] == [2.0, 3.0, 4.0]


def test_targets() -> None:
    checks = targets(summarize(RUNS, ORDER), [{"contender": "tfop", "finished_jobs": 1100, "cpu_percent": 0.05,
                                               "rss_mb": 130.0}])
    assert [(check["goal"], check["met"]) for check in checks] == [
        ("tfop time to all children within 1.3x of the limit, N=100", True),
        ("tfop requests per job within 1.3x of the limit's, N=100", True),
        ("tfop time to every job Running within 1.1x of the limit's pods running, N=100", True),
        ("tfop apiserver CPU until every job Running within 1.2x of the limit's, N=100", False),  # 1.24x
        ("tfop own CPU until every job Running within 1.3x of the limit client's, N=100", None),  # not in RUNS
        ("tfop passes per job until every job Running at most 4, N=100", None),
        ("tfop lag from pods running to Running p50 under 1 s, N=100", True),
        ("tfop lag from pods running to Running p99 under 3 s, N=100", False),
        ("tfop time to every job Running below go-tuned's, N=100", True),
        ("tfop start latency p99 below go-tuned's, N=100", True),
        # 9.5 / 9.0 over 10.0 / 10.0: below go-tuned's, but not against the limits measured beside each
        ("tfop start latency p99 over its limit's below go-tuned's over its own, N=100", False),
        ("tfop idle CPU with 1100 finished jobs under 1% of a core", True),
        ("tfop idle RSS with 1100 finished jobs under 70 MB", False),
    ]


def test_noise() -> None:
    assert noise(summarize(RUNS, ORDER)) == (
        "the limit's pods-running time varied by 18% of its median over 3 runs at N=100; "
        "1-minute load average at the start of a run 2.0 to 4.0 (median 2.0)")


def test_window_cpu_rows_and_the_rest() -> None:
    """The machine's CPU over the window: its ratio to the limit's, and what no cluster process nor the contender
    spent (the bench's own clients)."""
    figures = {"apiserver_cpu_s": 10.0, "etcd_cpu_s": 2.0, "controller_manager_cpu_s": 3.0, "scheduler_cpu_s": 1.0,
               "kwok_cpu_s": 0.5}
    rows = by_name(summarize([
        run("limit", 0, pods_running_s=10.0, machine_cpu_s=20.0, contender_cpu_window_s=0.5, **figures),
        run("tfop", 0, jobs_running_s=11.0, machine_cpu_s=23.0, contender_cpu_window_s=3.0, **figures),
    ], ORDER))
    assert rows["tfop"]["machine_cpu_s_vs_limit"] == pytest.approx(1.15)
    assert rest_cpu(rows["limit"]) == pytest.approx(3.0)  # 20 - (10 + 2 + 3 + 1 + 0.5 + 0.5)
    assert rest_cpu(rows["tfop"]) == pytest.approx(3.5)   # 23 - (10 + 2 + 3 + 1 + 0.5 + 3)
    assert rest_cpu({"contender": "limit"}) is None


def test_each_figure_is_printed_beside_its_target() -> None:
    runs = [run("limit", 0, pods_running_s=10.0, contender_cpu_window_s=2.0),
            run("tfop", 0, jobs_running_s=11.5, contender_cpu_window_s=2.4, reconciles_to_running=450)]
    rows = summarize(runs, ORDER)
    assert by_name(rows)["tfop"]["passes_per_job"] == pytest.approx(4.5)
    text = table(rows, [], targets(rows, []), {})
    assert ("  [MET ] tfop own CPU until every job Running within 1.3x of the limit client's, N=100: 1.20x, "
            "target <= 1.3x: met with 0.10x to spare") in text.splitlines()
    assert ("  [MISS] tfop time to every job Running within 1.1x of the limit's pods running, N=100: 1.15x, "
            "target <= 1.1x: missed by 0.05x") in text.splitlines()
    assert ("  [MISS] tfop passes per job until every job Running at most 4, N=100: 4.50, target <= 4: "
            "missed by 0.50") in text.splitlines()
    assert ("  [n/a ] tfop time to all children within 1.3x of the limit, N=100: not measured (target <= 1.3x)"
            in text.splitlines())
