"""What `bench.nodeloss` prints: a line per rack lost, the medians of a contender's rounds, and the per-replica
quantiles its report keeps."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

from bench.targets import NODE_LOSS_MARGIN_S, NODE_LOSS_TARGET, check, verdict

TARGET_MARGIN_S = NODE_LOSS_MARGIN_S  # every replica replaced within the grace plus this


def quantiles(what: str, moments: Iterable[float], since: float) -> dict[str, float]:
    """The median and 99th percentile, per replica, of the seconds from the loss to `moments` (nearest rank)."""
    seconds = sorted(moment - since for moment in moments)

    def rank(q: float) -> float:
        return seconds[min(len(seconds) - 1, max(0, math.ceil(q * len(seconds)) - 1))]

    return {f"{what}_p50_s": round(rank(0.5), 1), f"{what}_p99_s": round(rank(0.99), 1)}


def summary(report: dict[str, Any]) -> str:
    lines = [run_line(run) for run in report["runs"]]
    lines.extend(medians(report["runs"]))
    if report["runs"]:
        lines += ["Targets (bench/targets.py):", *(verdict(rack_check(run)) for run in report["runs"])]
    if "linger" in report:
        linger = report["linger"]
        lines.append(f"{linger['seconds_after_loss']:.0f} s after the last loss: {linger['unchanged']}/"
                     f"{linger['replicas']} replicas unchanged since the window's end, {linger['evicted']} deleted by "
                     f"the taint eviction controller; touched: {linger['touched']}")
    if "node_cache" in report:
        lines.append(f"node cache: {report['node_cache']}")
    if "go_note" in report:
        lines.append(report["go_note"])
    return "\n".join(lines)


def medians(runs: list[dict[str, Any]]) -> list[str]:
    """For a contender of several rounds: the medians of its rounds' last replacement and last create."""
    lines = []
    for name in dict.fromkeys(run["operator"] for run in runs):
        own = [run for run in runs if run["operator"] == name]
        if len(own) < 2:
            continue
        figures = []
        for key in ("all_replaced_s", "last_created_s", "replaced_p50_s", "cpu_s", "machine_busy"):
            values = [run[key] for run in own if key in run]
            if values:
                figures.append(f"{key} {round(statistics.median(values), 2)} (of {len(values)}: {values})")
        lines.append(f"{name}: medians of {len(own)} rounds: " + "; ".join(figures))
    return lines


def run_line(run: dict[str, Any]) -> str:
    return (f"{run['operator']:<5} {run['nodes']} nodes, {run['jobs']} jobs, {run['rack']} lost: "
            f"{run['replaced']}/{run['replicas_on_lost_nodes']} replaced, all in "
            f"{run.get('all_replaced_s', '-')} s (grace {run['grace_s']} s + {TARGET_MARGIN_S:.0f}: "
            f"{'met' if run['within_target'] else 'missed'}; per replica p50 {run.get('replaced_p50_s', '-')} s, p99 "
            f"{run.get('replaced_p99_s', '-')} s; new pods created from {run.get('first_created_s', '-')} "
            f"to {run.get('last_created_s', '-')} s, p50 {run.get('created_p50_s', '-')} s); elsewhere "
            f"{run['unchanged_elsewhere']}/{run['replicas_elsewhere']} unchanged "
            f"({run.get('evicted_elsewhere', '-')} deleted by the taint eviction controller); CPU {run['cpu_s']} s, "
            f"peak RSS {run['peak_rss_mb']} MB over {run['window_s']} s; machine busy {run.get('machine_busy', '-')}, "
            f"apiserver CPU {run.get('kube-apiserver_cpu_s', '-')} s; {run['requests']} requests "
            f"({run.get('requests_per_replaced', '-')} per replaced replica): {run['requests_by_kind']}")


def rack_check(run: dict[str, Any]) -> dict[str, Any]:
    """The rack's target for one run: its last replacement's seconds past the grace (none: not all replaced)."""
    replaced = run.get("all_replaced_s")
    entry = check(NODE_LOSS_TARGET, None if replaced is None else replaced - run["grace_s"], name=run["operator"])
    if replaced is None:  # not every replica was replaced within the window
        entry["met"] = False
    return entry
