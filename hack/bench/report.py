"""Medians, ratios, the tables and the targets of issue 13; the charts are in bench.chart."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from bench.targets import IDLE_TARGETS, RUN_TARGETS, check, verdict

Run = dict[str, Any]
FIGURES = ("children_s", "pods_created_s", "pods_scheduled_s", "pods_running_s", "jobs_running_s",
           "exit_patches_s", "succeeded_s", "cpu_s", "peak_rss_mb", "requests_own", "requests_audit",
           "requests_job_controller", "start_p50_s", "start_p99_s", "pods_start_p50_s", "pods_start_p99_s",
           "lag_p50_s", "lag_p99_s", "startup_s", "reconciles_to_running", "apiserver_cpu_s", "etcd_cpu_s",
           "controller_manager_cpu_s", "scheduler_cpu_s", "kwok_cpu_s", "contender_cpu_window_s", "machine_cpu_s",
           "machine_busy")
REFERENCES = ("limit", "go", "go-tuned")
# The servers `--profile` profiles, with the window CPU figure their profile's shares divide.
PROFILED = {"kube-apiserver": "apiserver_cpu_s", "kube-controller-manager": "controller_manager_cpu_s"}
GO_GROUP = ("go", "go-tuned")  # measured beside limit-go, the limit run in their group (bench.runs.CONTENDERS)


def summarize(runs: Sequence[Run], order: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (jobs, contender), contenders in `order`: the median of each figure over its runs, the
    median requests by verb and resource, the load average, and the ratios that matter."""
    rows: list[dict[str, Any]] = []
    keys = sorted({(run["jobs"], run["contender"]) for run in runs}, key=lambda k: (k[0], order.index(k[1])))
    for jobs, contender in keys:
        mine = [run for run in runs if run["jobs"] == jobs and run["contender"] == contender]
        row: dict[str, Any] = {"jobs": jobs, "contender": contender, "runs": len(mine)}
        for figure in FIGURES:
            values = [run[figure] for run in mine if run.get(figure) is not None]
            if values:
                row[figure] = statistics.median(values)
        row["requests_by_kind"] = _median_counts(mine, "requests_audit_by_kind")
        if row.get("requests_job_controller"):
            row["job_controller_by_kind"] = _median_counts(mine, "requests_job_controller_by_kind")
        row["load_1m"] = [run["load_before"][0] for run in mine if run.get("load_before")]
        for component, figure in PROFILED.items():
            spent = _profile_seconds(mine, component, figure)
            if spent:
                row[f"{figure}_by_category"] = spent
        if "requests_audit" in row:
            row["requests_per_job"] = row["requests_audit"] / jobs
        if row.get("reconciles_to_running") is not None:
            row["passes_per_job"] = row["reconciles_to_running"] / jobs
        spread = [run["pods_running_s"] for run in mine if run.get("pods_running_s") is not None]
        if len(spread) > 1:
            row["pods_running_spread"] = (max(spread) - min(spread)) / statistics.median(spread)
        rows.append(row)
    for row in rows:
        peers = {other["contender"]: other for other in rows if other["jobs"] == row["jobs"]}
        for reference in REFERENCES:
            # The Go operator against the limit that alternated with it, when it ran; that limit against ours
            # (how much the machine moved between the groups).
            peer = "limit-go" if reference == "limit" and row["contender"] in GO_GROUP else reference
            other = peers.get(peer) or peers.get(reference)
            if other is None:
                continue
            for figure, against in (("children_s", "children_s"), ("pods_running_s", "pods_running_s"),
                                    ("requests_per_job", "requests_per_job"), ("start_p99_s", "start_p99_s"),
                                    ("apiserver_cpu_s", "apiserver_cpu_s"), ("machine_cpu_s", "machine_cpu_s"),
                                    ("contender_cpu_window_s", "contender_cpu_window_s"),
                                    # a job runs when its pods do: against the limit's pods, else like for like
                                    ("jobs_running_s", "pods_running_s" if reference == "limit" else
                                     "jobs_running_s")):
                if other.get(against) and row.get(figure) is not None:
                    row[f"{figure}_vs_{reference}"] = row[figure] / other[against]
        ours, theirs, go_tuned = peers.get("limit"), peers.get("limit-go"), peers.get("go-tuned")
        if ours and theirs and go_tuned and row["contender"].startswith("tfop") and all(
                side.get("start_p99_s") for side in (row, ours, theirs, go_tuned)):
            # Each over the limit that alternated with it: what is left when the machine moved between the groups.
            row["start_p99_over_limits_vs_go-tuned"] = ((row["start_p99_s"] / ours["start_p99_s"])
                                                        / (go_tuned["start_p99_s"] / theirs["start_p99_s"]))
    return rows


def _profile_seconds(runs: Sequence[Run], component: str, figure: str) -> dict[str, float]:
    """A server's window CPU (`figure`) spread over its profile's categories by their shares, median of the runs
    that were profiled (`--profile`)."""
    spent = [{name: share * run[figure] for name, share in run["profiles"][component]["shares"].items()}
             for run in runs if component in (run.get("profiles") or {}) and run.get(figure) is not None]
    names = dict.fromkeys(name for each in spent for name in each)  # in the categories' order
    return {name: statistics.median(each.get(name, 0.0) for each in spent) for name in names}


def _median_counts(runs: Sequence[Run], field: str) -> dict[str, float]:
    kinds = {kind for run in runs for kind in run.get(field, {})}
    return {kind: statistics.median(run.get(field, {}).get(kind, 0) for run in runs) for kind in kinds}


def targets(rows: Sequence[dict[str, Any]], idle: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target of bench/targets.py against the figure that decides it, for every tfop row it applies to."""
    checks: list[dict[str, Any]] = []
    contenders: dict[int, set[str]] = {}
    for row in rows:
        contenders.setdefault(row["jobs"], set()).add(row["contender"])
    for row in rows:
        name, jobs = row["contender"], row["jobs"]
        if not name.startswith("tfop"):
            continue
        checks += [check(target, row.get(target.figure), name=name, jobs=jobs) for target in RUN_TARGETS
                   if target.applies(jobs, contenders[jobs]) and (target.figure in row or not target.optional)]
    for entry in idle:
        if entry["contender"].startswith("tfop"):
            checks += [check(target, entry.get(target.figure), name=entry["contender"], jobs=entry["finished_jobs"])
                       for target in IDLE_TARGETS]
    return checks


TIMES = (  # (header, width, key, digits)
    ("children", 8, "children_s", 1), ("/limit", 6, "children_s_vs_limit", 2), ("pods made", 9, "pods_created_s", 1),
    ("sched", 6, "pods_scheduled_s", 1), ("pods run", 8, "pods_running_s", 1), ("jobs run", 8, "jobs_running_s", 1),
    ("/limit", 6, "jobs_running_s_vs_limit", 2), ("/go-t", 5, "jobs_running_s_vs_go-tuned", 2),
    ("start p50", 9, "start_p50_s", 1), ("p99", 5, "start_p99_s", 1), ("/go-t", 5, "start_p99_s_vs_go-tuned", 2),
    ("lag p50", 7, "lag_p50_s", 1), ("p99", 5, "lag_p99_s", 1),
    ("exits", 5, "exit_patches_s", 1), ("succeed", 7, "succeeded_s", 1))
COSTS = (
    ("CPU s", 6, "cpu_s", 1), ("peak RSS MB", 11, "peak_rss_mb", 0), ("req own", 7, "requests_own", 0),
    ("req apisv", 9, "requests_audit", 0), ("per job", 7, "requests_per_job", 1),
    ("/limit", 6, "requests_per_job_vs_limit", 2), ("job ctl req", 11, "requests_job_controller", 0),
    ("passes to Running", 17, "reconciles_to_running", 0))
PROCESSES = ("apiserver_cpu_s", "etcd_cpu_s", "controller_manager_cpu_s", "scheduler_cpu_s", "kwok_cpu_s",
             "contender_cpu_window_s")
WINDOW_CPU = (  # core-seconds from the first create until every job Running (the limit: every pod running)
    ("apiserver", 9, "apiserver_cpu_s", 1), ("/limit", 6, "apiserver_cpu_s_vs_limit", 2), ("etcd", 5, "etcd_cpu_s", 1),
    ("ctl-mgr", 7, "controller_manager_cpu_s", 1), ("sched", 5, "scheduler_cpu_s", 1), ("kwok", 5, "kwok_cpu_s", 1),
    ("contender", 9, "contender_cpu_window_s", 1), ("rest", 5, "rest_cpu_s", 1), ("machine", 7, "machine_cpu_s", 1),
    ("/limit", 6, "machine_cpu_s_vs_limit", 2), ("busy", 4, "machine_busy", 2))


def table(rows: Sequence[dict[str, Any]], idle: Sequence[dict[str, Any]], checks: Sequence[dict[str, Any]],
          commands: dict[str, str]) -> str:
    lines: list[str] = []
    for jobs in sorted({row["jobs"] for row in rows}):
        mine = [r for r in rows if r["jobs"] == jobs]
        lines += ["", (f"N = {jobs} TFJobs (1 Chief + 4 Workers + 2 PS: {jobs * 14} children, {jobs * 7} pods); "
                       "medians; seconds from the first TFJob create (succeed: from the first exit)")]
        lines += _columns(mine, TIMES)
        lines += ["", (f"N = {jobs}: costs (CPU and RSS of the operator process; requests as the apiserver's "
                       "audit log counts them)")]
        lines += _columns(mine, COSTS, lambda row: "  load " + "/".join(f"{v:.1f}" for v in row["load_1m"]))
        lines += ["", (f"N = {jobs}: CPU seconds from the first create until every job Running (the limit: every pod), "
                       "per process; rest: the bench's own clients and anything else on the machine")]
        lines += _columns([{**row, "rest_cpu_s": rest_cpu(row)} for row in mine], WINDOW_CPU)
        for component, figure in PROFILED.items():
            if any(f"{figure}_by_category" in row for row in mine):
                lines += ["", (f"N = {jobs}: where {component}'s CPU seconds in that window went: its CPU profile's "
                               "share of each kind of work, times the seconds (median of the runs; bench/profiles.py)")]
                lines += _spread(mine, f"{figure}_by_category")
        lines += ["", (f"N = {jobs}: requests by verb and resource (audit log, median of the runs; <name>:jc is the "
                       "Job controller's for that contender)")]
        lines += _by_kind(mine)
    if idle:
        lines += ["", "Idle: a fresh operator over finished jobs, after its start-up pass",
                  (f"{'contender':<11} {'jobs':>5} {'ready s':>8} {'settle s':>9} {'CPU % of a core':>16} "
                   f"{'RSS MB':>7} {'reconciles':>11} {'requests':>9}")]
        for entry in idle:
            lines.append(f"{entry['contender']:<11} {entry['finished_jobs']:>5} {entry['startup_s']:>8.1f} "
                         f"{entry['settle_s']:>9.1f} {entry['cpu_percent']:>16.2f} {entry['rss_mb']:>7.0f} "
                         f"{entry['reconciles']:>11} {entry['requests']:>9} (over {entry['seconds']:.0f} s)")
    lines += ["", "Noise: " + noise(rows)]
    lines += ["", "Contenders:"] + [f"  {name:<11} {command}" for name, command in commands.items()]
    if checks:
        lines += ["", "Targets (bench/targets.py):", *(verdict(entry) for entry in checks)]
    return "\n".join(lines)


def rest_cpu(row: dict[str, Any]) -> float | None:
    """The machine's CPU in the window that no cluster process nor the contender spent: the bench's watchers and
    creates (the same for every contender), and whatever else ran."""
    if row.get("machine_cpu_s") is None:
        return None
    return float(row["machine_cpu_s"]) - sum(row.get(key) or 0.0 for key in PROCESSES)


def noise(rows: Sequence[dict[str, Any]]) -> str:
    """How much the machine moved the figures: the limit's spread over its repeats, and the load average."""
    parts = [f"the limit's pods-running time varied by {100 * row['pods_running_spread']:.0f}% of its median "
             f"over {row['runs']} runs at N={row['jobs']}"
             for row in rows if row["contender"] == "limit" and "pods_running_spread" in row]
    loads = [load for row in rows for load in row["load_1m"]]
    if loads:
        parts.append(f"1-minute load average at the start of a run {min(loads):.1f} to {max(loads):.1f} "
                     f"(median {statistics.median(loads):.1f})")
    return "; ".join(parts) or "not measured"


def _columns(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, int, str, int]],
             extra: Any = None) -> list[str]:
    header = f"{'contender':<11} {'runs':>4} " + " ".join(f"{title:>{width}}" for title, width, _, _ in columns)
    lines = [header, "-" * len(header)]
    for row in rows:
        cells = " ".join(_f(row.get(key), width, digits) for _, width, key, digits in columns)
        lines.append(f"{row['contender']:<11} {row['runs']:>4} {cells}{extra(row) if extra else ''}")
    return lines


def _by_kind(rows: Sequence[dict[str, Any]]) -> list[str]:
    """A column per contender, and one for the Job controller's requests made for a contender (tfop-jobs)."""
    columns = [(row["contender"], row["requests_by_kind"]) for row in rows] + [
        (f"{row['contender']}:jc", row["job_controller_by_kind"]) for row in rows if "job_controller_by_kind" in row]
    kinds = sorted({kind for _, counts in columns for kind in counts},
                   key=lambda kind: -max(counts.get(kind, 0) for _, counts in columns))
    header = f"{'verb resource':<38} " + " ".join(f"{name:>12}" for name, _ in columns)
    return [header, "-" * len(header)] + [
        f"{kind:<38} " + " ".join(_f(counts.get(kind), 12, 0) for _, counts in columns) for kind in kinds]


def _spread(rows: Sequence[dict[str, Any]], field: str) -> list[str]:
    """A column per profiled contender, rows in the profile categories' order."""
    columns = [(row["contender"], row[field]) for row in rows if field in row]
    kinds = list(dict.fromkeys(kind for _, spent in columns for kind in spent))
    header = f"{'work':<38} " + " ".join(f"{name:>12}" for name, _ in columns)
    return [header, "-" * len(header)] + [
        f"{kind:<38} " + " ".join(_f(spent.get(kind), 12) for _, spent in columns) for kind in kinds]


def _f(value: float | None, width: int, digits: int = 1) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"
