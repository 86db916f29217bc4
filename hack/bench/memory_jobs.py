"""The operator's memory over the bench's own workload (TFJobs of 1 Chief + 4 Workers + 2 PS, every pod ending
with exit 0), for one or more checkouts side by side on one bench cluster (hack/bench/cluster.py):

- idle: `finished` jobs are run to Succeeded once (by the first checkout's operator); then each checkout's fresh
  operator, watching every namespace, settles over them and its VmRSS is read after `idle_seconds` of quiet;
  checkouts alternate for `rounds` rounds;
- peak: each checkout's operator runs `peak_jobs` jobs from creation to Succeeded in a namespace of its own; its
  VmHWM is read at the end; the namespace is deleted (and waited for) before the next one.

The finished jobs' namespace is deleted before the peak runs, so the idle figures and the peak figures do not
weigh on each other.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cluster import BenchCluster
from bench.runs import Contender, Runner

CRD = Path(__file__).resolve().parents[2] / "crd" / "kubeflow.org_tfjobs.yaml"


@dataclass(frozen=True)
class Checkout:
    label: str
    path: Path


def checkout(path: Path) -> Checkout:
    """A checkout labelled with its commit (a plain directory, e.g. `git archive` output: its directory name)."""
    commit = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            check=False)
    inside = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True,
                            text=True, check=False).stdout.strip()
    label = commit.stdout.strip() if inside and Path(inside).resolve() == path.resolve() else path.name
    return Checkout(label, path.resolve())


def log(message: str) -> None:
    print(f"[bench-memory {time.strftime('%H:%M:%S')}] {message}", flush=True)


def measure(checkouts: list[Checkout], *, finished: int, peak_jobs: int, idle_seconds: float, rounds: int,
            state_dir: Path, results: Path) -> list[dict[str, Any]]:
    contenders = [Contender("tfop", "tfop", code=c.path) for c in checkouts]
    cluster = BenchCluster(state_dir)
    log(f"starting a fresh bench cluster in {state_dir}")
    cluster.up()
    rows: list[dict[str, Any]] = []
    try:
        cluster.install_crd(CRD)
        runner = Runner(cluster, None, results)
        if finished:
            log(f"{checkouts[0].label}: running {finished} jobs to Succeeded for the idle measurement")
            made = runner.run(contenders[0], finished, 0)
            rows.append({"scenario": "finished jobs made", "checkout": checkouts[0].label, "jobs": finished,
                         "peak_rss_mb": made["peak_rss_mb"], "succeeded_s": made.get("succeeded_s")})
            for index in range(rounds):
                for contender, where in zip(contenders, checkouts, strict=True):
                    log(f"{where.label}: idle over {finished} finished jobs, round {index + 1}/{rounds}")
                    idle = runner.idle(contender, finished, idle_seconds)
                    rows.append({"scenario": f"idle over {finished} finished jobs", "checkout": where.label,
                                 "round": index + 1, "rss_mb": idle["rss_mb"], "startup_s": idle["startup_s"],
                                 "settle_s": idle["settle_s"], "cpu_percent": idle["cpu_percent"]})
                    log(f"  RSS {idle['rss_mb']:.1f} MB")
            cluster.delete_namespaces([made["namespace"]])
        if peak_jobs:
            for index, (contender, where) in enumerate(zip(contenders, checkouts, strict=True)):
                log(f"{where.label}: {peak_jobs} jobs from creation to Succeeded")
                run = runner.run(contender, peak_jobs, 100 + index)
                rows.append({"scenario": f"peak at N={peak_jobs}", "checkout": where.label,
                             "peak_rss_mb": run["peak_rss_mb"], "jobs_running_s": run.get("jobs_running_s"),
                             "succeeded_s": run.get("succeeded_s")})
                log(f"  peak {run['peak_rss_mb']:.1f} MB")
                cluster.delete_namespaces([run["namespace"]])
    finally:
        (results / "memory-jobs.json").write_text(json.dumps(rows, indent=1))
        cluster.destroy()
    return rows


def table(rows: list[dict[str, Any]], checkouts: list[Checkout]) -> str:
    lines = ["checkouts: " + ", ".join(f"{c.label} = {c.path}" for c in checkouts),
             f"{'scenario':<34} {'checkout':<22} {'RSS MB':>7} {'peak RSS MB':>12}", "-" * 78]
    for row in rows:
        rss = f"{row['rss_mb']:.1f}" if "rss_mb" in row else ""
        peak = f"{row['peak_rss_mb']:.1f}" if row.get("peak_rss_mb") is not None else ""
        lines.append(f"{row['scenario']:<34} {row['checkout']:<22} {rss:>7} {peak:>12}")
    return "\n".join(lines)
