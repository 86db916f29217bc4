"""`make bench-fairness`: issue 25's fairness scenario. One TFJob of 2,000 replicas is submitted together with 100
small jobs (1 Chief + 4 Workers + 2 PS each); the small jobs' start latency (create -> Running condition) is
compared with what it is when they are submitted alone. The target: p99 with the big job within 1.2x of p99
without it.

Each run has a namespace of its own and a fresh operator watching only it, on the bench's own cluster (as
`make bench`); the big job is created first, then the small ones at once, with the bench's 16 writers. The
small jobs' pods-running latency (create -> all its pods Running) is reported beside it: the big job's 2,000 pods
also load the apiserver, the scheduler and kwok, which no operator can help. Contenders alternate run by run.

    PYTHONPATH=hack:test .venv/bin/python -m bench.fairness [--runs 1] [--baseline DIR] [--big-replicas 2000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cluster import BenchCluster, destroy_keeping_logs, end_on_sigterm
from bench.operators import TfopProcess
from bench.runs import REPO_DIR
from bench.targets import FAIRNESS_TARGET, check, verdict
from bench.timeline import Timeline
from bench.workload import PODS_PER_JOB, create_jobs, tfjob
from tfop import logs
from tfop.controller.children import TFJOBS

SMALL_JOBS = 100
TARGET_RATIO = FAIRNESS_TARGET.bound


@dataclass(frozen=True)
class Contender:
    name: str
    code: Path | None = None  # tfop from another checkout (--baseline), not this one


def log(message: str) -> None:
    print(f"[fairness {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def big_job(replicas: int) -> dict[str, Any]:
    """One Chief, 4 PS, and workers for the rest: a synchronous job as large as the scenario asks."""
    body = tfjob("big")
    specs = body["spec"]["tfReplicaSpecs"]
    specs["PS"]["replicas"] = 4
    specs["Worker"]["replicas"] = replicas - 5
    return body


def quantiles(values: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    return {"p50": statistics.median(values), "p99": cuts[98]}


def run(cluster: BenchCluster, contender: Contender, big_replicas: int, index: int, results: Path,
        timeout: float) -> dict[str, Any]:
    """One run: the small jobs, with the big job before them if `big_replicas`; the namespace is deleted after."""
    namespace = f"{contender.name}-{'big' if big_replicas else 'alone'}-{index}"
    admin = cluster.admin()
    cluster.create_namespace(namespace)
    timeline = Timeline(admin, namespace, TFJOBS)
    timeline.start()
    operator = TfopProcess(cluster.operator_kubeconfig, results / "logs" / f"{namespace}.log",
                           ["--namespace", namespace], code=contender.code)
    result: dict[str, Any] = {"contender": contender.name, "big_replicas": big_replicas, "run": index}
    try:
        operator.start()
        began = time.monotonic()
        big: tuple[str, float] | None = None
        if big_replicas:
            made = admin.create(TFJOBS, big_job(big_replicas), namespace)
            big = (made["metadata"]["uid"], time.monotonic())
        small = create_jobs(admin, namespace, SMALL_JOBS)
        timeline.wait(lambda: all(uid in timeline.jobs_running for uid in small), timeout,
                      f"{SMALL_JOBS} small jobs Running")
        result["small_running_s"] = max(timeline.jobs_running[uid] for uid in small) - began
        timeline.wait(lambda: _running_pods(timeline, small) >= SMALL_JOBS * PODS_PER_JOB, timeout,
                      "the small jobs' pods Running")
        pods = timeline.pods_of_job()
        result["start"] = quantiles(sorted(timeline.jobs_running[uid] - at for uid, at in small.items()))
        result["pods_running"] = quantiles(sorted(
            max(pod.running_at or 0.0 for pod in pods[uid]) - at for uid, at in small.items()))
        # The operator's part: when the last of a job's pods was made; what follows (scheduling, kwok starting
        # it) is the cluster's, which the big job's 2,000 pods of 130 KB each load whatever the operator.
        result["pods_created"] = quantiles(sorted(
            max(pod.created_at for pod in pods[uid]) - at for uid, at in small.items()))
        if big is not None:
            uid, created = big
            timeline.wait(lambda: uid in timeline.jobs_running, timeout, "the big job Running")
            result["big_start_s"] = timeline.jobs_running[uid] - created
        result["cpu_s"] = operator.cpu_seconds()
        result["peak_rss_mb"] = operator.memory()["VmHWM"] / 2**20
    finally:
        operator.stop()
        timeline.stop()
        result["cleanup_s"] = cluster.delete_namespaces([namespace])
    return result


def _running_pods(timeline: Timeline, jobs: dict[str, float]) -> int:
    return sum(1 for job_pods in timeline.pods_of_job().items() if job_pods[0] in jobs
               for pod in job_pods[1] if pod.running_at is not None)


def table(runs: list[dict[str, Any]], contenders: list[Contender]) -> tuple[str, list[dict[str, Any]]]:
    """Medians over runs per contender: the small jobs' start latency alone and with the big job, and the ratio."""
    big = max(r["big_replicas"] for r in runs)
    lines = [(f"Fairness: {SMALL_JOBS} small TFJobs (7 pods each) alone, and submitted right after one TFJob of "
             f"{big} replicas; medians over runs; seconds from each job's create"),
             "",
             ("| contender | runs | start p50 / p99 alone | start p50 / p99 with the big job | p99 ratio "
             f"(target <= {TARGET_RATIO}x) | pods created p99 alone / with | pods running p99 alone / with "
             "| big job Running after |"),
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    rows: list[dict[str, Any]] = []
    for contender in contenders:
        alone = [r for r in runs if r["contender"] == contender.name and not r["big_replicas"]]
        mixed = [r for r in runs if r["contender"] == contender.name and r["big_replicas"]]
        if not alone or not mixed:
            continue

        def med(group: list[dict[str, Any]], *path: str) -> float:
            values = []
            for r in group:
                value: Any = r
                for step in path:
                    value = value[step]
                values.append(float(value))
            return statistics.median(values)

        def created(group: list[dict[str, Any]]) -> str:  # runs from before this figure was recorded: "-"
            return f"{med(group, 'pods_created', 'p99'):.1f}" if all("pods_created" in r for r in group) else "-"

        ratio = med(mixed, "start", "p99") / med(alone, "start", "p99")
        row = {"contender": contender.name, "runs": min(len(alone), len(mixed)), "ratio": ratio,
               "met": ratio <= TARGET_RATIO}
        rows.append(row)
        lines.append(
            f"| {contender.name} | {row['runs']} | {med(alone, 'start', 'p50'):.1f} / {med(alone, 'start', 'p99'):.1f} "
            f"| {med(mixed, 'start', 'p50'):.1f} / {med(mixed, 'start', 'p99'):.1f} | {ratio:.2f}x "
            f"({'met' if row['met'] else 'missed'}) | {created(alone)} / {created(mixed)} "
            f"| {med(alone, 'pods_running', 'p99'):.1f} / "
            f"{med(mixed, 'pods_running', 'p99'):.1f} | {med(mixed, 'big_start_s'):.1f} |")
    lines += ["", "Targets (bench/targets.py):", *(
        verdict(check(FAIRNESS_TARGET, row["ratio"], name=row["contender"])) for row in rows)]
    return "\n".join(lines), rows


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.fairness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1, help="runs of each scenario per contender (median)")
    parser.add_argument("--big-replicas", type=int, default=2000, help="replicas of the big job (6-5000)")
    parser.add_argument("--baseline", type=Path,
                        help="a checkout of another commit: contender tfop-base runs tfop from it, alternating")
    parser.add_argument("--state-dir", type=Path, default=REPO_DIR / ".local" / "bench-cluster")
    parser.add_argument("--results", type=Path, default=REPO_DIR / "bench-results")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds each wait of a run may take")
    args = parser.parse_args(argv)
    if not 6 <= args.big_replicas <= 5000:
        parser.error("--big-replicas must be from 6 to 5000")
    if args.baseline is not None and not (args.baseline / "tfop" / "__main__.py").is_file():
        parser.error(f"--baseline {args.baseline}: no tfop package there")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    end_on_sigterm()
    logs.configure("console", "warning")
    results = (args.results / time.strftime("fairness-%Y%m%d-%H%M%S")).resolve()
    (results / "logs").mkdir(parents=True, exist_ok=True)
    contenders = ([Contender("tfop-base", args.baseline.resolve())] if args.baseline else []) + [Contender("tfop")]
    cluster = BenchCluster(args.state_dir)
    log(f"starting a fresh cluster in {args.state_dir}")
    cluster.up()
    cluster.install_crd(REPO_DIR / "crd" / "kubeflow.org_tfjobs.yaml")
    runs: list[dict[str, Any]] = []
    failures: list[str] = []
    try:
        for index in range(args.runs):
            for big in (0, args.big_replicas):
                for contender in contenders:
                    what = f"{contender.name}: {SMALL_JOBS} small jobs{f' with {big} replicas' if big else ''}"
                    log(f"{what}, run {index + 1}/{args.runs}")
                    try:
                        runs.append(run(cluster, contender, big, index, results, args.timeout))
                    except Exception as error:  # noqa: BLE001 - one failed run is reported, the others count
                        failures.append(f"{what}, run {index + 1}: {error}")
                        log(f"FAILED {failures[-1]}")
                        continue
                    log(f"  {json.dumps({k: v for k, v in runs[-1].items() if k != 'contender'})}")
                    (results / "fairness.json").write_text(json.dumps({"runs": runs, "failures": failures},
                                                                      indent=1))
    finally:
        destroy_keeping_logs(cluster, results)
    text, rows = table(runs, contenders) if runs else ("no run finished", [])
    (results / "fairness.json").write_text(json.dumps({"runs": runs, "rows": rows, "failures": failures}, indent=1))
    (results / "fairness.txt").write_text(text + "\n")
    print(text)
    for failure in failures:
        print(f"NOTE: {failure}")
    print(f"\nresults: {results}/ fairness.json, fairness.txt")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

