"""The timeline charts: for each N, one panel per contender (its median run by time to all pods running) with
pods created, scheduled and running over time, the operator's children created, and jobs Running.

matplotlib draws them (a bench-only extra, installed by `make bench`), imported here only, so the rest of the
bench runs without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Run = dict[str, Any]
STAGES = (("created", "pods created", "tab:blue"), ("scheduled", "pods scheduled", "tab:orange"),
          ("running", "pods running", "tab:green"))


def median_runs(runs: Sequence[Run], jobs: int, order: Sequence[str]) -> dict[str, Run]:
    """contender -> its median run at N=jobs (by time to all pods running), contenders in `order`."""
    chosen: dict[str, Run] = {}
    for contender in order:
        mine = sorted((run for run in runs if run["jobs"] == jobs and run["contender"] == contender
                       and run.get("pod_curves")), key=lambda run: run["pods_running_s"])
        if mine:
            chosen[contender] = mine[(len(mine) - 1) // 2]
    return chosen


def timelines(runs: Sequence[Run], order: Sequence[str], directory: Path) -> list[Path]:
    """One PNG per N, timeline-n<N>.png; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    for jobs in sorted({run["jobs"] for run in runs if run.get("pod_curves")}):
        medians = median_runs(runs, jobs, order)
        limit = medians.get("limit")
        # A common time axis, except for contenders far slower than the limit (the Go operator at 20 QPS), which
        # would squash everyone else's curves: those get their own.
        common = [run["pods_running_s"] for run in medians.values()
                  if limit is None or run["pods_running_s"] <= 3 * limit["pods_running_s"]]
        right = 1.05 * max(common)
        columns = 2 if len(medians) > 1 else 1
        rows = math.ceil(len(medians) / columns)
        figure, axes = plt.subplots(rows, columns, figsize=(6.4 * columns, 2.9 * rows), squeeze=False)
        for axis in axes.flat[len(medians):]:
            axis.set_visible(False)
        for axis, (contender, run) in zip(axes.flat, medians.items(), strict=False):
            curves = run["pod_curves"]
            for stage, label, color in STAGES:
                axis.step([0.0, *curves[stage]], range(len(curves[stage]) + 1), where="post", color=color,
                          label=label)
            axis.step([0.0, *run["curve"]], [i / 2 for i in range(len(run["curve"]) + 1)], where="post",
                      color="grey", linestyle=":", label="children created / 2")
            if run.get("jobs_running_at"):
                axis.step([0.0, *run["jobs_running_at"]],
                          [i * 7 for i in range(len(run["jobs_running_at"]) + 1)], where="post", color="black",
                          linestyle="--", label="jobs Running x 7")
            title = (f"{contender}: pods running {run['pods_running_s']:.1f} s"
                     + (f", jobs Running {run['jobs_running_s']:.1f} s" if run.get("jobs_running_s") else ""))
            axis.set_title(title, fontsize=10)
            if run["pods_running_s"] <= right:
                axis.set_xlim(0, right)
            axis.set_ylim(0, jobs * 7 * 1.03)
            axis.grid(True, alpha=0.3)
            axis.tick_params(labelsize=8)
            axis.set_xlabel("seconds since the first TFJob create", fontsize=8)
            axis.set_ylabel("pods", fontsize=8)
        with_jobs = [axis for axis, run in zip(axes.flat, medians.values(), strict=False) if run.get("jobs_running_at")]
        (with_jobs or [axes.flat[0]])[0].legend(loc="lower right", fontsize=7)
        figure.suptitle(f"{jobs} TFJobs created at once ({jobs * 7} pods): median run of each contender",
                        fontsize=11)
        figure.tight_layout()
        path = directory / f"timeline-n{jobs}.png"
        figure.savefig(path, dpi=72)
        plt.close(figure)
        written.append(path)
    return written
