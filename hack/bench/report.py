"""Medians, ratios, the table, the targets, the JSON and the chart of children created over time."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Run = dict[str, Any]
FIGURES = ("children_s", "pods_running_s", "jobs_running_s", "exit_patches_s", "succeeded_s", "cpu_s",
           "peak_rss_mb", "requests_own", "requests_audit", "start_p50_s", "start_p99_s", "startup_s")


def summarize(runs: Sequence[Run], order: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (jobs, contender), contenders in `order`: the median of each figure over its runs, and the
    ratios that matter."""
    rows: list[dict[str, Any]] = []
    keys = sorted({(run["jobs"], run["contender"]) for run in runs}, key=lambda k: (k[0], order.index(k[1])))
    for jobs, contender in keys:
        mine = [run for run in runs if run["jobs"] == jobs and run["contender"] == contender]
        row: dict[str, Any] = {"jobs": jobs, "contender": contender, "runs": len(mine)}
        for figure in FIGURES:
            values = [run[figure] for run in mine if run.get(figure) is not None]
            if values:
                row[figure] = statistics.median(values)
        rows.append(row)
    for row in rows:
        peers = {other["contender"]: other for other in rows if other["jobs"] == row["jobs"]}
        for reference in ("limit", "go", "go-tuned"):
            other = peers.get(reference)
            if other and other.get("children_s") and row.get("children_s") is not None:
                row[f"children_vs_{reference}"] = row["children_s"] / other["children_s"]
            if other and other.get("pods_running_s") and row.get("pods_running_s") is not None:
                row[f"running_vs_{reference}"] = row["pods_running_s"] / other["pods_running_s"]
    return rows


def targets(rows: Sequence[dict[str, Any]], idle: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The goals the brief sets for tfop, each with the figure that decides it (None: not measured)."""
    checks: list[dict[str, Any]] = []

    def check(goal: str, value: float | None, limit: float, unit: str = "") -> None:
        checks.append({"goal": goal, "value": value, "threshold": limit, "unit": unit,
                       "met": None if value is None else value <= limit})

    by = {(row["jobs"], row["contender"]): row for row in rows}
    for jobs, name in by:
        if not name.startswith("tfop"):
            continue
        row = by[(jobs, name)]
        if (jobs, "limit") in by:
            check(f"{name} time to all children within 1.3x of the limit, N={jobs}", row.get("children_vs_limit"),
                  1.3, "x")
        go = name.replace("tfop", "go")  # like for like: defaults against defaults, tuned against tuned
        if (jobs, go) in by:
            check(f"{name} faster to all children than {go}, N={jobs}", row.get(f"children_vs_{go}"), 1.0, "x")
        if jobs >= 500:
            check(f"{name} peak RSS with {jobs} jobs' children cached under 200 MB", row.get("peak_rss_mb"),
                  200.0, "MB")
    for entry in idle:
        if entry["contender"].startswith("tfop"):
            check(f"{entry['contender']} idle CPU with {entry['finished_jobs']} finished jobs under 1% of a core",
                  entry["cpu_percent"], 1.0, "%")
    return checks


def table(rows: Sequence[dict[str, Any]], idle: Sequence[dict[str, Any]], checks: Sequence[dict[str, Any]],
          commands: dict[str, str]) -> str:
    lines: list[str] = []
    header = (f"{'contender':<11} {'runs':>4} {'children':>9} {'/limit':>6} {'/go':>6} {'/go-t':>6} {'pods run':>9} "
              f"{'jobs run':>9} {'exits':>7} {'succeed':>8} {'start p50':>9} {'p99':>7} {'CPU s':>7} "
              f"{'peak RSS':>9} {'req own':>8} {'req apisv':>9}")
    for jobs in sorted({row["jobs"] for row in rows}):
        lines += ["", (f"N = {jobs} TFJobs (1 Chief + 4 Workers + 2 PS: {jobs * 14} children); medians; "
                       "times in seconds from the first create (succeed: from the first exit)"), header,
                  "-" * len(header)]
        for row in (r for r in rows if r["jobs"] == jobs):
            lines.append(
                f"{row['contender']:<11} {row['runs']:>4} {_f(row.get('children_s'), 9)} "
                f"{_f(row.get('children_vs_limit'), 6, 2)} {_f(row.get('children_vs_go'), 6, 2)} "
                f"{_f(row.get('children_vs_go-tuned'), 6, 2)} {_f(row.get('pods_running_s'), 9)} "
                f"{_f(row.get('jobs_running_s'), 9)} {_f(row.get('exit_patches_s'), 7)} "
                f"{_f(row.get('succeeded_s'), 8)} {_f(row.get('start_p50_s'), 9)} {_f(row.get('start_p99_s'), 7)} "
                f"{_f(row.get('cpu_s'), 7)} {_f(row.get('peak_rss_mb'), 6, 0)} MB "
                f"{_f(row.get('requests_own'), 8, 0)} {_f(row.get('requests_audit'), 9, 0)}")
    if idle:
        lines += ["", "Idle: a fresh operator over finished jobs, after its start-up pass",
                  (f"{'contender':<11} {'jobs':>5} {'ready s':>8} {'settle s':>9} {'CPU % of a core':>16} "
                   f"{'RSS MB':>7} {'reconciles':>11} {'requests':>9}")]
        for entry in idle:
            lines.append(f"{entry['contender']:<11} {entry['finished_jobs']:>5} {entry['startup_s']:>8.1f} "
                         f"{entry['settle_s']:>9.1f} {entry['cpu_percent']:>16.2f} {entry['rss_mb']:>7.0f} "
                         f"{entry['reconciles']:>11} {entry['requests']:>9} (over {entry['seconds']:.0f} s)")
    lines += ["", "Contenders:"] + [f"  {name:<11} {command}" for name, command in commands.items()]
    if checks:
        lines += ["", "Targets:"]
        for entry in checks:
            mark = {True: "MET ", False: "MISS", None: "n/a "}[entry["met"]]
            value = "not measured" if entry["value"] is None else f"{entry['value']:.2f}{entry['unit']}"
            lines.append(f"  [{mark}] {entry['goal']}: {value} (threshold {entry['threshold']}{entry['unit']})")
    return "\n".join(lines)


def _f(value: float | None, width: int, digits: int = 1) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


COLORS = {"limit": "black", "tfop": "tab:blue", "tfop-tuned": "tab:cyan", "go": "tab:red", "go-tuned": "tab:orange"}


def chart(runs: Sequence[Run], path: Path) -> Path:
    """Children created over time, one line per contender (its median run): for each N a panel with every
    contender, and one zoomed in on the fastest (up to three times the limit's time)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({run["jobs"] for run in runs if run.get("curve")})
    figure, axes = plt.subplots(len(sizes), 2, figsize=(14, 5 * len(sizes)), squeeze=False)
    for (full, zoomed), jobs in zip(axes, sizes, strict=True):
        medians: dict[str, Run] = {}
        for run in runs:
            if run["jobs"] == jobs and run.get("curve"):
                medians.setdefault(run["contender"], run)
        medians = dict(sorted(medians.items(), key=lambda item: list(COLORS).index(item[0])
                              if item[0] in COLORS else len(COLORS)))
        for contender in medians:
            mine = sorted((run for run in runs if run["jobs"] == jobs and run["contender"] == contender
                           and run.get("curve")), key=lambda run: run["children_s"])
            medians[contender] = mine[(len(mine) - 1) // 2]
        for axis in (full, zoomed):
            for contender, run in medians.items():
                curve = run["curve"]
                axis.step([0.0, *curve], range(len(curve) + 1), where="post", color=COLORS.get(contender),
                          label=f"{contender} ({run['children_s']:.1f} s)")
            axis.set_xlabel("seconds since the first TFJob create")
            axis.set_ylabel("children created (seen by a watch)")
            axis.grid(True, alpha=0.3)
            axis.legend(loc="lower right")
        full.set_title(f"{jobs} TFJobs created at once: {jobs * 14} Pods and Services")
        zoomed.set_title("the same, zoomed in")
        fastest = medians.get("limit") or min(medians.values(), key=lambda run: run["children_s"])
        zoomed.set_xlim(0, min(3 * fastest["children_s"], max(run["children_s"] for run in medians.values())) * 1.02)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
