"""Where a server's profiled CPU went (hack/bench/profiles.py), and how the report spreads a window's CPU over it."""

from __future__ import annotations

from typing import Any

import pytest

from bench.profiles import categorize, parse_traces
from bench.report import summarize, table

DASHES = "-----------+-------------------------------------------------------"
# What `go tool pprof -traces` prints, cut down: a header, then each stack with its seconds, leaf first.
TRACES = f"""File: kube-apiserver
Type: cpu
Duration: 15.51s, Total samples = 14.83s (95.63%)
{DASHES}
     260ms   runtime.scanObjectsSmall
             runtime.gcDrain
             runtime.gcBgMarkWorker
{DASHES}
     1.50s   sigs.k8s.io/structured-merge-diff/v6/value.unmarshal
             k8s.io/apiextensions-apiserver/pkg/apiserver.(*crdHandler).serveStatus.UpdateResource.func2.4
             k8s.io/apiserver/pkg/endpoints/handlers/finisher.finishRequest.func1
{DASHES}
      10us   encoding/json.Unmarshal
             k8s.io/apiserver/pkg/endpoints/handlers.(*patcher).patchResource.func2 (inline)
             k8s.io/apiserver/pkg/endpoints/handlers/finisher.finishRequest.func1
{DASHES}
      20ms   k8s.io/apiserver/pkg/storage/cacher.(*cachingObject).CacheEncode
             k8s.io/apiserver/pkg/endpoints/handlers.(*watchEncoder).Encode
             k8s.io/apiserver/pkg/endpoints/handlers.handleWatch
{DASHES}
      30ms   crypto/tls.(*Conn).write
             k8s.io/apiserver/pkg/server/filters.(*timeoutHandler).ServeHTTP.func1
{DASHES}
      40ms   runtime.futex
             runtime.mcall
"""


def test_each_stack_is_read_with_its_seconds_and_its_frames_leaf_first() -> None:
    assert parse_traces(TRACES) == [
        (0.26, ["runtime.scanObjectsSmall", "runtime.gcDrain", "runtime.gcBgMarkWorker"]),
        (1.5, ["sigs.k8s.io/structured-merge-diff/v6/value.unmarshal",
               "k8s.io/apiextensions-apiserver/pkg/apiserver.(*crdHandler).serveStatus.UpdateResource.func2.4",
               "k8s.io/apiserver/pkg/endpoints/handlers/finisher.finishRequest.func1"]),
        (10 * 1e-6, ["encoding/json.Unmarshal",
                     "k8s.io/apiserver/pkg/endpoints/handlers.(*patcher).patchResource.func2",
                     "k8s.io/apiserver/pkg/endpoints/handlers/finisher.finishRequest.func1"]),
        (0.02, ["k8s.io/apiserver/pkg/storage/cacher.(*cachingObject).CacheEncode",
                "k8s.io/apiserver/pkg/endpoints/handlers.(*watchEncoder).Encode",
                "k8s.io/apiserver/pkg/endpoints/handlers.handleWatch"]),
        (0.03, ["crypto/tls.(*Conn).write", "k8s.io/apiserver/pkg/server/filters.(*timeoutHandler).ServeHTTP.func1"]),
        (0.04, ["runtime.futex", "runtime.mcall"]),
    ]


@pytest.mark.parametrize(("category", "seconds"), [
    ("Go GC", 0.26),
    ("TFJob status writes", 1.5),  # a custom resource's status, not a core update: the first rule that names it
    ("patches", 1e-05),  # the patcher's goroutine under finishRequest: no PatchResource frame there
    ("serving watches", 0.02),  # the cacher's frame is on the stack too, below the watch's handler
    ("request path: TLS, HTTP/2, filters", 0.03),
    ("other", 0.04),
    ("creates", 0.0),
])
def test_a_sample_counts_once_under_the_first_category_that_names_a_frame_of_its_stack(
        category: str, seconds: float) -> None:
    spent = categorize("kube-apiserver", parse_traces(TRACES))
    assert spent[category] == pytest.approx(seconds)
    assert sum(spent.values()) == pytest.approx(1.85001)


def run(contender: str, index: int, apiserver_cpu_s: float, shares: dict[str, float]) -> dict[str, Any]:
    return {"contender": contender, "jobs": 500, "run": index, "apiserver_cpu_s": apiserver_cpu_s,
            "profiles": {"kube-apiserver": {"path": f"{contender}-{index}.pprof", "shares": shares}}}


RUNS = [
    run("limit", 0, 100.0, {"creates": 0.5, "patches": 0.5}),
    run("limit", 1, 120.0, {"creates": 0.4, "patches": 0.6}),
    run("limit", 2, 80.0, {"creates": 0.5, "patches": 0.5}),
    run("tfop", 0, 130.0, {"creates": 0.4, "patches": 0.4, "TFJob status writes": 0.2}),
    {"contender": "tfop", "jobs": 500, "run": 1, "apiserver_cpu_s": 150.0},  # not profiled: not in the median
]


def test_a_window_s_cpu_is_spread_by_the_profile_s_shares_median_of_the_profiled_runs() -> None:
    rows = {row["contender"]: row for row in summarize(RUNS, ["limit", "tfop"])}
    # creates 50, 48 and 40 s; patches 50, 72 and 40 s
    assert rows["limit"]["apiserver_cpu_s_by_category"] == pytest.approx({"creates": 48.0, "patches": 50.0})
    assert rows["tfop"]["apiserver_cpu_s_by_category"] == pytest.approx(
        {"creates": 52.0, "patches": 52.0, "TFJob status writes": 26.0})
    assert "controller_manager_cpu_s_by_category" not in rows["limit"]


def test_the_report_prints_a_column_per_profiled_contender() -> None:
    rows = summarize(RUNS, ["limit", "tfop"])
    lines = table(rows, [], [], {}).splitlines()
    start = next(i for i, line in enumerate(lines) if "where kube-apiserver's CPU seconds" in line)
    assert [line.split() for line in lines[start + 1:start + 6]] == [
        ["work", "limit", "tfop"],
        ["-" * 64],
        ["creates", "48.0", "52.0"],
        ["patches", "50.0", "52.0"],
        ["TFJob", "status", "writes", "-", "26.0"],
    ]
