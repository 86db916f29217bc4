"""`python -m bench.resize` (`make bench-resize`): elastic jobs resized all at once, and the time to every resize done.

On a fresh bench cluster: `--nodes` kwok nodes (100), and per mode (`--modes`, both by default) a round in a
namespace of its own with tfop started for it: `--jobs` TFJobs (500) of 1 Chief, 2 PS and `--workers` Workers (4),
each with an elasticPolicy from 1 to the larger Worker count, every replica running. Then every job is scaled
at once through its scale subresource, as `kubectl scale` does (a merge PATCH of tfjobs/scale, 16 at a time), to
`--to` workers (8), and with `--down` back to `--workers` in a second step. The modes:

- restart: the default resize, every replica stopped and started again together with the new TF_CONFIG (kwok
  deletes a pod as soon as it is deleted with a grace period, as a kubelet whose container exits on SIGTERM);
- inplace: `enableDynamicWorker: true`, workers added or removed while the others run on.

Measured for each step from the instant the scales are sent: per job, the seconds until its resize is done as a
user would check it (bench/resize_done.py: the pods of the new size all Running, none of the old left, and the
status saying so), first, p50, p99 and last; how many were done within `--timeout`; the operator's CPU seconds and
peak RSS over the window; its apiserver requests (the audit log) by verb and resource, per resized job; and its
passes per job (controller_runtime_reconcile_total).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import rack
from bench.audit import AuditLog, by_kind, failed
from bench.cluster import BenchCluster, destroy_keeping_logs, end_on_sigterm
from bench.nodeloss import OUR_CRD, PeakMemory, wait
from bench.nodeloss_report import quantiles
from bench.operators import TfopProcess
from bench.resize_report import summary
from bench.resize_watch import ResizeWatch
from bench.runs import REPO_DIR
from bench.workload import CLIENT_CONCURRENCY, tfjob
from tfop import logs
from tfop.api.constants import REPLICA_WORKER
from tfop.controller.children import TFJOBS
from tfop.kube.client import KubeClient

MODES = ("restart", "inplace")
PODS_PER_NODE = int(rack.CAPACITY["pods"])
PASSES = "controller_runtime_reconcile_total"
STRATEGIES = {"restart": "Restart", "inplace": "InPlace"}  # status.lastResize.strategy


def log(message: str) -> None:
    print(f"[resize {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def elastic_job(name: str, workers: int, most: int, in_place: bool) -> dict[str, Any]:
    """The bench's usual job with `workers` Workers. The CRD does not require an elasticPolicy for the scale
    subresource, but an elastic job has one, and its bounds are checked at every scale (a CEL rule)."""
    job = tfjob(name)
    job["spec"]["tfReplicaSpecs"][REPLICA_WORKER]["replicas"] = workers
    job["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": most}
    if in_place:
        job["spec"]["enableDynamicWorker"] = True
    return job


def replicas_of(workers: int) -> dict[str, int]:
    counts = {replica_type: spec["replicas"] for replica_type, spec in tfjob("x")["spec"]["tfReplicaSpecs"].items()}
    return {**counts, REPLICA_WORKER: workers}


def job_name(index: int) -> str:
    return f"job-{index:04d}"


def in_pool(count: int, action: Callable[[int], object], prefix: str) -> None:
    with ThreadPoolExecutor(CLIENT_CONCURRENCY, thread_name_prefix=prefix) as pool:
        list(pool.map(action, range(count)))


class ResizeRound:
    """One mode: its namespace, its tfop, its jobs; then a step up and perhaps one down."""

    def __init__(self, cluster: BenchCluster, args: argparse.Namespace, results: Path, mode: str,
                 code: Path | None = None) -> None:
        self.cluster, self.args, self.mode = cluster, args, mode
        self.admin: KubeClient = cluster.admin()
        self.audit = AuditLog(cluster.audit_log)
        self.label = f"{mode}-base" if code else mode  # the round's name in the report, its namespace's too
        self.namespace = f"resize-{self.label}"
        self.operator = TfopProcess(cluster.operator_kubeconfig, results / "logs" / f"tfop-{self.label}.log",
                                    ["--namespace", self.namespace, *shlex.split(args.tfop_args)], code=code)

    def run(self) -> dict[str, Any]:
        args = self.args
        result: dict[str, Any] = {"mode": self.label, "jobs": args.jobs, "nodes": args.nodes, "steps": [],
                                  "load_before": os.getloadavg()}
        self.cluster.create_namespace(self.namespace)
        watch = ResizeWatch(self.admin, self.namespace)
        try:
            self.operator.start()
            began = time.monotonic()
            most = max(args.workers, args.to)
            in_pool(args.jobs, lambda index: self.admin.create(
                TFJOBS, elastic_job(job_name(index), args.workers, most, self.mode == "inplace"), self.namespace),
                "create-job")
            self._wait_steady(watch, args.workers)
            result["all_running_s"] = round(time.monotonic() - began, 1)
            steps = [(args.workers, args.to)] + ([(args.to, args.workers)] if args.down else [])
            for before, after in steps:
                time.sleep(args.settle)  # the last held-back status writes go out before a step is measured
                step = self._step(watch, before, after)
                result["steps"].append(step)
                if step["done"] < args.jobs:
                    log(f"{self.label}: {args.jobs - step['done']} jobs not done: no further step")
                    break
        finally:
            self.operator.stop()
            watch.close()
            result["load_after"] = os.getloadavg()
        return result

    def _wait_steady(self, watch: ResizeWatch, workers: int) -> None:
        jobs, replicas = self.args.jobs, replicas_of(workers)
        wait(lambda: watch.steady(replicas) >= jobs, self.args.ready_timeout,
             f"{jobs} jobs running with {workers} workers", every=2.0)
        log(f"{self.label}: {jobs} jobs running with {workers} workers")

    def _step(self, watch: ResizeWatch, before: int, after: int) -> dict[str, Any]:
        args, operator = self.args, self.operator
        uids_before = watch.uids()
        watch.begin(replicas_of(after), by_restart=self.mode == "restart")
        cpu_before, audit_start = operator.cpu_seconds(), self.audit.offset()
        passes_before = operator.metric_sum(PASSES)
        failed_before = operator.metric_sum(PASSES, result="error")  # a conflict is retried with backoff
        memory = PeakMemory(operator)
        since = time.time()
        in_pool(args.jobs, lambda index: self.admin.patch(
            TFJOBS, job_name(index), {"spec": {"replicas": after}}, self.namespace, subresource="scale"),
            "scale-job")
        step: dict[str, Any] = {"mode": self.label, "from": before, "to": after, "jobs": args.jobs,
                                "sent_s": round(time.time() - since, 1)}
        while watch.done() < args.jobs and time.time() < since + args.timeout:
            time.sleep(0.5)
        ended, times = time.time(), watch.finish()
        step["peak_rss_mb"] = round(memory.stop() / 2**20, 1)
        step["cpu_s"] = round(operator.cpu_seconds() - cpu_before, 2)
        step["passes_per_job"] = round((operator.metric_sum(PASSES) - passes_before) / args.jobs, 2)
        step["passes_failed"] = int(operator.metric_sum(PASSES, result="error") - failed_before)
        step["window_s"] = round(ended - since, 1)
        step["done"] = len(times.done)
        for what, moments in (("done", times.done), ("recorded", times.recorded),
                              ("old_pods_gone", times.old_pods_gone), ("pods", times.pods), ("status", times.status)):
            if moments:
                step[f"{what}_first_s"] = round(min(moments.values()) - since, 1)
                step[f"{what}_last_s"] = round(max(moments.values()) - since, 1)
                step.update(quantiles(what, moments.values(), since))
        # Pods seen terminating before they went: kwok's pod-delete stage ends a pod deleted with a grace period,
        # as a kubelet does once its container exits on SIGTERM; one deleted at once is never seen terminating.
        step["pods_seen_terminating"] = len(times.terminating)
        step["not_done"] = sorted(watch.job_names() - set(times.done))[:20]
        strategy = STRATEGIES[self.mode]
        step["last_resize_told"] = sum(entry.get("to") == after and entry.get("from") == before
                                       and entry.get("strategy") == strategy for entry in watch.last_resizes())
        uids_after = watch.uids()
        step["pods_kept"] = sum(uids_after.get(name) == uid for name, uid in uids_before.items())
        # In place the chief, the PS and the workers of both sizes run on; by restart every pod is replaced.
        kept_per_job = 0 if self.mode == "restart" else sum(replicas_of(min(before, after)).values())
        step["pods_to_keep"] = args.jobs * kept_per_job
        time.sleep(0.5)  # the last requests' audit lines
        audited = [r for r in self.audit.requests(audit_start) if r.received <= ended]
        step["requests"] = len(audited)
        step["requests_per_job"] = round(len(audited) / args.jobs, 2)
        step["requests_by_kind"] = by_kind(audited)
        step["requests_failed"] = failed(audited)
        log(f"{self.label} {before}->{after}: "
            f"{json.dumps({k: v for k, v in step.items() if k not in ('requests_by_kind', 'requests_failed')})}")
        return step


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.resize", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=500, help="elastic TFJobs, all resized at once")
    parser.add_argument("--nodes", type=int, default=100, help=f"kwok nodes ({PODS_PER_NODE} pods each)")
    parser.add_argument("--workers", type=int, default=4, help="each job's Workers at the start")
    parser.add_argument("--to", type=int, default=8, help="the Workers every job is scaled to")
    parser.add_argument("--down", action=argparse.BooleanOptionalAction, default=True,
                        help="then scale every job back to --workers, a second step")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="the rounds, comma-separated: restart (the default resize), inplace (enableDynamicWorker)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a step waits for every job")
    parser.add_argument("--ready-timeout", type=float, default=3600.0,
                        help="seconds to wait for every job to run before the first step")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds before each step")
    parser.add_argument("--tfop-args", default="",
                        help='more flags for tfop run, e.g. --tfop-args="--threads 16" (its defaults otherwise)')
    parser.add_argument("--baseline", type=Path,
                        help="another checkout (e.g. `git worktree add DIR main`): each mode's round again, after "
                             "this one's, with tfop from there (the report's MODE-base)")
    parser.add_argument("--state-dir", type=Path, default=REPO_DIR / ".local" / "bench-resize-cluster")
    parser.add_argument("--results", type=Path, default=REPO_DIR / "bench-results")
    args = parser.parse_args(argv)
    if args.baseline is not None and not (args.baseline / "tfop" / "__main__.py").is_file():
        parser.error(f"--baseline {args.baseline}: no tfop package there")
    args.modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    if not args.modes or set(args.modes) - set(MODES):
        parser.error(f"--modes takes {' and '.join(MODES)}, comma-separated")
    if args.to == args.workers or min(args.to, args.workers) < 1:
        parser.error("--to must differ from --workers, and both be at least 1")
    pods = args.jobs * (3 + max(args.workers, args.to))
    if pods > args.nodes * PODS_PER_NODE:
        parser.error(f"{pods} pods do not fit on {args.nodes} nodes of {PODS_PER_NODE} pods: more --nodes")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    end_on_sigterm()
    logs.configure("console", "warning")
    results = (args.results / f"resize-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    (results / "logs").mkdir(parents=True, exist_ok=True)
    cluster = BenchCluster(args.state_dir)
    log(f"starting a fresh cluster in {args.state_dir}")
    cluster.up()
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "rounds": []}
    try:
        admin = cluster.admin()
        rack.create_nodes(admin, args.nodes)
        rack.cordon_others(admin)
        wait(lambda: rack.ready_count(admin) >= args.nodes, 120 + args.nodes / 10, f"{args.nodes} Ready nodes")
        cluster.install_crd(OUR_CRD)
        codes = [None] if args.baseline is None else [None, args.baseline.resolve()]
        previous: str | None = None
        for mode in args.modes:
            for code in codes:
                if previous:  # the last round's pods would weigh on this one's
                    cluster.delete_namespaces([previous])
                round_ = ResizeRound(cluster, args, results, mode, code)
                report["rounds"].append(round_.run())
                previous = round_.namespace
    finally:
        destroy_keeping_logs(cluster, results)
        (results / "resize.json").write_text(json.dumps(report, indent=2))
    print(summary(report))
    print(f"\nresults: {results}/resize.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
