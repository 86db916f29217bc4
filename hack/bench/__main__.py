"""`make bench`: tfop against the apiserver's own limit and against the Kubeflow Go operator, side by side on a
fresh local cluster (its own state directory, destroyed afterwards).

Contenders run one at a time, each run in a namespace of its own; within a pass the contenders alternate run by
run, so background noise spreads over all of them. A timed operator run watches only its own namespace
(--namespace), so what earlier runs left behind cannot weigh on it, and operator runs are not cleaned up one by
one (waiting for that would cost as much as the runs): their finished jobs stay for the idle measurement, and
namespaces are deleted in bulk, and waited for, before the CRD changes. The limit's jobs never finish (it writes
no status), so its namespace is deleted, and waited for, after each run; so are tfop-jobs' (the idle measurement is
over Pod-backed jobs).

The Go operator goes first, under its own TFJob CRD (from its module in the Go module cache); then that CRD is
deleted, waited for, and tfop's installed under the same name for the limit, tfop and tfop-tuned. After the large
pass's operator runs, a fresh tfop with default settings is measured idle over the finished jobs tfop's runs left
(at least --idle-jobs). Each pass's limit runs first, on a cluster that holds no more finished jobs than the
operators' runs of that pass will see.

    PYTHONPATH=hack:test .venv/bin/python -m bench [--jobs 100] [--runs 3] [--big-jobs 500] ...
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from bench.chart import timelines
from bench.cluster import BenchCluster, copy_logs, end_on_sigterm
from bench.operators import build_go_operator
from bench.pinning import Pinning
from bench.report import noise, summarize, table, targets
from bench.runs import CONTENDERS, REPO_DIR, Contender, Runner
from tfop import logs

OUR_CRD = REPO_DIR / "crd" / "kubeflow.org_tfjobs.yaml"
# The large pass defaults to what the targets need (tfop against the limit and go-tuned at N=500, its RSS with 500
# jobs' children cached, finished jobs for the idle measurement, the Jobs backend's cost at scale), so that
# `make bench` stays near 30 minutes on
# 2 cores. The Go operator at its defaults would take 13 minutes there (16,000 requests at 20/s); each tuned
# contender adds about 2 minutes (--big-contenders).
BIG_CONTENDERS = "limit,tfop,tfop-jobs,go-tuned"


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    names = ", ".join(c.name for c in CONTENDERS)
    parser.add_argument("--jobs", type=int, default=100, help="TFJobs per run of the main pass")
    parser.add_argument("--runs", type=int, default=3, help="runs per contender in the main pass (median)")
    parser.add_argument("--contenders", default=",".join(c.name for c in CONTENDERS),
                        help=f"the main pass's contenders, comma-separated, of: {names}")
    parser.add_argument("--big-jobs", type=int, default=500, help="TFJobs per run of the large pass (0: none)")
    parser.add_argument("--big-runs", type=int, default=1, help="runs per contender in the large pass")
    parser.add_argument("--big-contenders", default=BIG_CONTENDERS, help="the large pass's contenders")
    parser.add_argument("--idle-jobs", type=int, default=1000,
                        help="at least this many finished jobs for the idle measurement (0: none)")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--go-idle", action="store_true", help="measure the Go operator idle too (tfop always)")
    parser.add_argument("--state-dir", type=Path, default=REPO_DIR / ".local" / "bench-cluster")
    parser.add_argument("--results", type=Path, default=REPO_DIR / "bench-results")
    parser.add_argument("--keep-cluster", action="store_true", help="leave the cluster running afterwards")
    parser.add_argument("--no-exits", action="store_true",
                        help="stop each run once every job runs (no exit patches, no Succeeded): for short runs")
    parser.add_argument("--baseline", type=Path,
                        help="a checkout of another commit (e.g. `git worktree add DIR main`, or `git archive main` "
                             "unpacked): contender tfop-base runs tfop from it, alternating with this one's")
    parser.add_argument("--report", type=Path, help="only print the tables and draw the charts of this bench.json")
    parser.add_argument("--delete-each-run", action="store_true",
                        help="delete every run's namespace once it is measured (make bench-large: 2,000 finished "
                             "jobs' 28,000 children left behind would weigh on the next contender)")
    parser.add_argument("--fresh-cluster", action="store_true",
                        help="a new cluster for every run, so that no run inherits what the one before left in "
                             "etcd, the controllers' caches or kwok's queue: independent samples")
    parser.add_argument("--profile", action="store_true",
                        help="CPU profiles of the apiserver and the controller-manager over each run's window, "
                             "merged per run into <results>/profiles (bench/profiles.py)")
    parser.add_argument("--operator-profile", action="store_true",
                        help="run tfop under bench.cpu_sampler: where its own CPU goes, by component and function, "
                             "in <results>/profiles/<namespace>-tfop.txt (and .folded)")
    parser.add_argument("--pin-operator", action="store_true",
                        help="run each contender on the last CPU and the cluster and the bench on the others, as an "
                             "operator runs on a node apart from the control plane (bench/pinning.py)")
    args = parser.parse_args(argv)
    for option in ("contenders", "big_contenders"):
        chosen = [name for name in getattr(args, option).split(",") if name]
        unknown = set(chosen) - {c.name for c in CONTENDERS}
        if unknown:
            parser.error(f"unknown contender(s) in --{option.replace('_', '-')}: {', '.join(sorted(unknown))}")
        with_go = any(c.kind == "go" for c in CONTENDERS if c.name in chosen)
        if with_go and "limit" in chosen:
            chosen.append("limit-go")  # the Go operator's runs alternate with a limit of their own
        setattr(args, option, [c for c in CONTENDERS if c.name in chosen])
    if args.fresh_cluster and args.idle_jobs:
        parser.error("--fresh-cluster keeps no finished jobs for the idle measurement: add --idle-jobs 0")
    based = [c for c in args.contenders + args.big_contenders if c.name == "tfop-base"]
    if based and args.baseline is None:
        parser.error("contender tfop-base runs tfop from --baseline DIR, which is missing")
    if args.baseline is not None:
        if not (args.baseline / "tfop" / "__main__.py").is_file():
            parser.error(f"--baseline {args.baseline}: no tfop package there")
        code = args.baseline.resolve()
        for option in ("contenders", "big_contenders"):
            setattr(args, option, [replace(c, code=code) if c.name == "tfop-base" else c
                                   for c in getattr(args, option)])
    return args


class Bench:
    def __init__(self, args: argparse.Namespace, runner: Runner, notes: list[str]) -> None:
        self.args = args
        self.runner = runner
        self.notes = notes
        self.runs: list[dict[str, Any]] = []
        self.idle: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.began = time.monotonic()
        self.clusters = 1  # started so far; the first by main()

    def save(self, charts: bool = False) -> str:
        """bench.json and bench.txt (and the charts) from the runs so far: a bench cut short keeps what it
        measured. Returns the tables."""
        args, results = self.args, self.runner.results
        order = [c.name for c in CONTENDERS]
        rows = summarize(self.runs, order)
        checks = targets(rows, self.idle)
        commands = {c.name: c.command for c in args.contenders + args.big_contenders}
        text = table(rows, self.idle, checks, commands)
        report = {
            "started": results.name, "seconds": time.monotonic() - self.began,
            "arguments": {k: [c.name for c in v] if k.endswith("contenders") else str(v)
                          for k, v in vars(args).items()},
            "machine": {"cpus": len(os.sched_getaffinity(0)), "load_average_at_end": os.getloadavg(),
                        "python": platform.python_version(), "platform": platform.platform(), "noise": noise(rows)},
            "contenders": commands, "summary": rows, "idle": self.idle, "targets": checks, "runs": self.runs,
            "failures": self.failures, "notes": self.notes,
        }
        (results / "bench.json").write_text(json.dumps(report, indent=1))
        (results / "bench.txt").write_text(text + "\n")
        if charts:
            timelines(self.runs, order, results)
        return text

    def attempt(self, what: str, action: Callable[[], dict[str, Any]], into: list[dict[str, Any]]) -> bool:
        log(what)
        try:
            result = action()
        except Exception as error:  # noqa: BLE001 - one failed run is reported, the others still count
            self.failures.append(f"{what}: {error}")
            log(f"FAILED {what}: {error}\n{traceback.format_exc()}")
            return False
        into.append(result)
        self.save()
        log("  " + ", ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()
                             if isinstance(v, (int, float, str))))
        return True

    def group(self, crd: Path, main: list[Contender], big: list[Contender], idle: bool) -> list[str]:
        """All passes of the contenders that share one CRD; returns the namespaces left behind.

        The limit's jobs never finish (it writes no status), so its namespace is deleted after each of its runs."""
        cluster = self.runner.cluster
        log(f"installing the TFJob CRD from {crd}")
        cluster.install_crd(crd)
        left: list[str] = []

        def run(contender: Contender, jobs: int, index: int, count: int) -> None:
            if self.args.fresh_cluster and (self.runs or self.failures):
                self.fresh_cluster(crd)
            if self.attempt(f"{contender.name}: {jobs} jobs, run {index + 1}/{count}",
                            partial(self.runner.run, contender, jobs, index), self.runs):
                left.append(self.runs[-1]["namespace"])
                if self.args.fresh_cluster:
                    return  # the next run's cluster is a new one: nothing to wait for
                # The idle measurement is over finished jobs of the default (Pods) backend only.
                if contender.kind == "limit" or contender.batch_jobs or self.args.delete_each_run:
                    self.runs[-1]["cleanup_s"] = cluster.delete_namespaces([left.pop()])

        for index in range(self.args.runs if self.args.jobs else 0):
            for contender in main:
                run(contender, self.args.jobs, index, self.args.runs)
        big_runs = self.args.big_runs if self.args.big_jobs else 0
        # The limit first: after the operators' runs the cluster holds their finished jobs, which slow it down.
        for index in range(big_runs):
            for contender in sorted(big, key=lambda c: c.kind != "limit"):
                run(contender, self.args.big_jobs, index, big_runs)
        operators = [c for c in main + (big if big_runs else []) if c.kind != "limit"]
        if idle and self.args.idle_jobs and operators:
            finished = sum(run["jobs"] for run in self.runs if run["namespace"] in left)
            default = next((c for c in operators if not c.args and c.code is None), operators[0])
            finished += self.fill(default, self.args.idle_jobs - finished, left)
            self.attempt(f"{default.name}: idle over {finished} finished jobs for {self.args.idle_seconds:.0f}s",
                         partial(self.runner.idle, default, finished, self.args.idle_seconds), self.idle)
        return left

    def fresh_cluster(self, crd: Path) -> None:
        """The last run's cluster destroyed (its logs kept) and a new one up, with the CRD installed."""
        cluster = self.runner.cluster
        self.keep_cluster_logs()
        self.clusters += 1
        log(f"starting cluster {self.clusters} in {cluster.directory}")
        cluster.up()
        if self.runner.pinning is not None:
            self.runner.pinning.pin_cluster()
        cluster.install_crd(crd)

    def keep_cluster_logs(self) -> None:
        """The current cluster's component logs into the results: `logs/cluster`, or with --fresh-cluster
        `logs/cluster-<n>` for the n-th cluster."""
        name = f"cluster-{self.clusters}" if self.args.fresh_cluster else "cluster"
        copy_logs(self.runner.cluster, self.runner.results / "logs" / name)

    def fill(self, contender: Contender, missing: int, names: list[str]) -> int:
        """More finished jobs for the idle measurement, from runs that are not reported; returns how many."""
        made = 0
        while made < missing:
            jobs = min(self.args.big_jobs or self.args.jobs, missing - made)
            log(f"{contender.name}: {jobs} more finished jobs for the idle measurement")
            names.append(self.runner.run(contender, jobs, 1000 + made)["namespace"])
            made += jobs
        return made


def report_again(path: Path) -> int:
    """Tables and charts again from a bench.json (one written as the runs went, by a bench cut short)."""
    saved = json.loads(path.read_text())
    order = [c.name for c in CONTENDERS]
    rows = summarize(saved["runs"], order)
    print(table(rows, saved["idle"], targets(rows, saved["idle"]), saved["contenders"]))
    for chart in timelines(saved["runs"], order, path.parent):
        print(f"wrote {chart}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:
        return report_again(args.report)
    end_on_sigterm()
    logs.configure("console", "warning")  # the bench watches through tfop's informers, which log with structlog
    results = (args.results / time.strftime("%Y%m%d-%H%M%S")).resolve()
    results.mkdir(parents=True, exist_ok=True)
    latest = args.results / "latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(results.name)

    notes: list[str] = []
    go_binary: Path | None = None
    go_crd: Path | None = None
    if any(c.uses_go_crd for c in args.contenders + args.big_contenders):
        log("building (or reusing) the Kubeflow training operator")
        built = build_go_operator()
        if isinstance(built, str):
            notes.append(f"Go operator left out: {built}")
            log(notes[-1])
            args.contenders = [c for c in args.contenders if not c.uses_go_crd]
            args.big_contenders = [c for c in args.big_contenders if not c.uses_go_crd]
        else:
            go_binary, go_crd = built

    pinning = Pinning.split() if args.pin_operator else None
    if pinning is not None:  # before the cluster starts: its processes inherit the bench's CPUs
        pinning.pin_bench()
        notes.append(f"pinned: each contender on CPU {sorted(pinning.operator)}, the cluster and the bench on "
                     f"CPU {sorted(pinning.rest)}")
    cluster = BenchCluster(args.state_dir)
    log(f"starting a fresh cluster in {args.state_dir}")
    cluster.up()
    if pinning is not None:
        log(f"cluster processes pinned to CPU {sorted(pinning.rest)}: {len(pinning.pin_cluster())}")
    bench = Bench(args, Runner(cluster, go_binary, results, exits=not args.no_exits, pinning=pinning,
                                profile=args.profile, operator_profile=args.operator_profile), notes)
    try:
        go_main = [c for c in args.contenders if c.uses_go_crd]
        go_big = [c for c in args.big_contenders if c.uses_go_crd]
        if go_crd is not None and go_main + go_big:
            left = bench.group(go_crd, go_main, go_big, idle=args.go_idle)
            log(f"deleting the Go operator's {len(left)} namespaces before the CRD changes back")
            cluster.delete_namespaces(left)
        ours_main = [c for c in args.contenders if not c.uses_go_crd]
        ours_big = [c for c in args.big_contenders if not c.uses_go_crd]
        if ours_main + ours_big:
            bench.group(OUR_CRD, ours_main, ours_big, idle=True)
    finally:
        bench.keep_cluster_logs()
        if not args.keep_cluster:
            cluster.destroy()

    text = bench.save(charts=bool(bench.runs))
    print(text)
    for note in [*notes, *bench.failures]:
        print(f"NOTE: {note}")
    charts = "".join(f", {path.name}" for path in sorted(results.glob("timeline-*.png")))
    minutes = (time.monotonic() - bench.began) / 60
    print(f"\nresults: {results}/ bench.json, bench.txt{charts} (whole bench {minutes:.1f} min)")
    return 1 if bench.failures else 0


if __name__ == "__main__":
    sys.exit(main())
