"""`python -m bench.nodeloss` (`make bench-nodeloss`): a rack lost under thousands of running replicas.

On a fresh bench cluster: `--nodes` kwok nodes (1,000), `--jobs` TFJobs of 7 replicas each (2,000: 14,000 pods
spread over the nodes), every replica running; then `--rack` nodes (50) go Ready Unknown with the unreachable
taints at once (bench/rack.py says how). Measured for each operator, from that instant:

- the seconds until every replica that was on the lost nodes runs again elsewhere (the same name, a new uid),
  against the jobs' grace (`tfop.kubeflow.org/node-loss-grace-seconds`, `--grace`) plus 30 s;
- that no replica elsewhere was touched: each still has the uid it had at the loss;
- the operator's CPU seconds and peak RSS over the loss, and the apiserver requests it made (the audit log),
  per replaced replica.

tfop runs first, then (unless `--no-go`) the Kubeflow training operator on a rack of other nodes, its own CRD
installed: it replaces none, so its window ends at the grace plus 30 s. `--cache-nodes` also measures what tfop's
node cache holds for that many nodes (bench/node_cache.py).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import rack
from bench.audit import AuditLog, by_kind
from bench.cluster import BenchCluster, copy_logs
from bench.node_cache import node_cache_bytes
from bench.operators import GoOperatorProcess, OperatorProcess, TfopProcess, build_go_operator
from bench.replicas import ReplicaWatch
from bench.runs import REPO_DIR, TUNED_GO
from bench.workload import CLIENT_CONCURRENCY, PODS_PER_JOB, tfjob
from tfop import logs
from tfop.controller.children import TFJOBS
from tfop.kube.client import KubeClient
from tfop.kube.resource import NODES

OUR_CRD = REPO_DIR / "crd" / "kubeflow.org_tfjobs.yaml"
GRACE_ANNOTATION = "tfop.kubeflow.org/node-loss-grace-seconds"
TARGET_MARGIN_S = 30.0  # every replica replaced within the grace plus this


def log(message: str) -> None:
    print(f"[nodeloss {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def wait(condition: Callable[[], bool], timeout: float, what: str, every: float = 1.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def create_jobs(client: KubeClient, namespace: str, count: int, grace: int) -> None:
    def create(index: int) -> None:
        job = tfjob(f"job-{index:04d}")
        job["metadata"]["annotations"] = {GRACE_ANNOTATION: str(grace)}
        client.create(TFJOBS, job, namespace)

    with ThreadPoolExecutor(CLIENT_CONCURRENCY, thread_name_prefix="create-job") as pool:
        list(pool.map(create, range(count)))


class PeakMemory:
    """The operator's RSS sampled on a thread while the loss is measured (VmHWM would be the creates' peak)."""

    def __init__(self, operator: OperatorProcess, every: float = 0.25) -> None:
        self.operator = operator
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(every,), daemon=True)
        self._thread.start()

    def _sample(self, every: float) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.operator.memory().get("VmRSS", 0))
            self._stop.wait(every)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.peak, self.operator.memory().get("VmRSS", 0))


class NodeLossRun:
    def __init__(self, cluster: BenchCluster, args: argparse.Namespace, results: Path) -> None:
        self.cluster = cluster
        self.args = args
        self.results = results
        self.admin = cluster.admin()
        self.audit = AuditLog(cluster.audit_log)

    def run(self, name: str, operator: OperatorProcess, lost: list[str]) -> dict[str, Any]:
        args, admin = self.args, self.admin
        namespace = f"nodeloss-{name}"
        self.cluster.create_namespace(namespace)
        replicas = ReplicaWatch(admin, namespace)
        pods = args.jobs * PODS_PER_JOB
        result: dict[str, Any] = {"operator": name, "nodes": args.nodes, "jobs": args.jobs, "rack": len(lost),
                                  "grace_s": args.grace, "load_before": os.getloadavg()}
        try:
            operator.start()
            began = time.monotonic()
            create_jobs(admin, namespace, args.jobs, args.grace)
            wait(lambda: replicas.running() >= pods, args.ready_timeout, f"{pods} running pods", every=2.0)
            result["all_running_s"] = round(time.monotonic() - began, 1)
            time.sleep(args.settle)  # the operator's last status writes go out before the loss is measured
            log(f"{name}: {pods} replicas running; losing {len(lost)} nodes")

            rack.release_from_kwok(admin, lost)
            time.sleep(2.0)  # kwok has let go of them before they are marked, or its heartbeat would undo it
            since = rack.now_to_the_second()
            on_lost = replicas.lose(frozenset(lost))
            cpu_before, audit_start = operator.cpu_seconds(), self.audit.offset()
            memory = PeakMemory(operator)
            rack.mark_unreachable(admin, lost, since)
            result["replicas_on_lost_nodes"] = len(on_lost)

            target = args.grace + TARGET_MARGIN_S
            window = target if args.go_window and name == "go" else args.grace + args.timeout
            deadline = since.timestamp() + window
            while replicas.replaced() < len(on_lost) and time.time() < deadline:
                time.sleep(0.5)
            ended = time.time()
            result["peak_rss_mb"] = round(memory.stop() / 2**20, 1)
            result["cpu_s"] = round(operator.cpu_seconds() - cpu_before, 2)
            result["window_s"] = round(ended - since.timestamp(), 1)
            result["replaced"] = replicas.replaced()
            if replicas.replaced_at and replicas.replaced() == len(on_lost):
                result["all_replaced_s"] = round(max(replicas.replaced_at.values()) - since.timestamp(), 1)
                result["within_target"] = result["all_replaced_s"] <= target
            else:
                result["within_target"] = False
            if replicas.replaced_at:
                result["first_replaced_s"] = round(min(replicas.replaced_at.values()) - since.timestamp(), 1)
                result.update(quantiles("replaced", replicas.replaced_at.values(), since.timestamp()))
            if replicas.created_at:  # the operator's part of the replacement: its new pods exist
                result["first_created_s"] = round(min(replicas.created_at.values()) - since.timestamp(), 1)
                result["last_created_s"] = round(max(replicas.created_at.values()) - since.timestamp(), 1)
                result.update(quantiles("created", replicas.created_at.values(), since.timestamp()))
            same, others = replicas.unchanged_elsewhere()
            result.update({"replicas_elsewhere": others, "unchanged_elsewhere": same,
                           "touched_elsewhere": sorted(replicas.touched)[:20]})
            result["nodes_still_lost"] = rack.still_lost(admin, lost)
            time.sleep(0.5)  # the last requests' audit lines
            audited = [r for r in self.audit.requests(audit_start) if r.received <= ended]
            result["requests"] = len(audited)
            result["requests_by_kind"] = by_kind(audited)
            if result["replaced"]:
                result["requests_per_replaced"] = round(len(audited) / result["replaced"], 2)
        finally:
            operator.stop()
            replicas.close()
            result["load_after"] = os.getloadavg()
        log(f"{name}: {json.dumps({k: v for k, v in result.items() if k != 'requests_by_kind'})}")
        return result


def quantiles(what: str, moments: Iterable[float], since: float) -> dict[str, float]:
    """The median and 99th percentile, per replica, of the seconds from the loss to `moments` (nearest rank)."""
    seconds = sorted(moment - since for moment in moments)

    def rank(q: float) -> float:
        return seconds[min(len(seconds) - 1, max(0, math.ceil(q * len(seconds)) - 1))]

    return {f"{what}_p50_s": round(rank(0.5), 1), f"{what}_p99_s": round(rank(0.99), 1)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.nodeloss", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000, help="kwok nodes the replicas spread over")
    parser.add_argument("--jobs", type=int, default=2000, help="running TFJobs of 7 replicas each")
    parser.add_argument("--rack", type=int, default=50, help="nodes lost at once")
    parser.add_argument("--grace", type=int, default=30, help="each job's node-loss grace, seconds")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="how long past the grace to wait for tfop's replacements, seconds")
    parser.add_argument("--ready-timeout", type=float, default=3600.0,
                        help="seconds to wait for every replica to run before the loss")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds between all running and the loss")
    parser.add_argument("--no-go", action="store_true", help="tfop only, not the Go training operator")
    parser.add_argument("--go-window", action=argparse.BooleanOptionalAction, default=True,
                        help="end the Go operator's window at the grace plus 30 s (it replaces none)")
    parser.add_argument("--cache-nodes", type=int, default=5000, help="nodes for the node cache's size (0: none)")
    parser.add_argument("--state-dir", type=Path, default=REPO_DIR / ".local" / "bench-nodeloss-cluster")
    parser.add_argument("--results", type=Path, default=REPO_DIR / "bench-results")
    args = parser.parse_args(argv)
    if args.rack * (1 if args.no_go else 2) > args.nodes:
        parser.error("--rack too large: tfop's rack and the Go operator's are different nodes")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A background job ignores SIGINT: SIGTERM ends the bench through its clean-up (the cluster, the operator).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    logs.configure("console", "warning")
    results = (args.results / f"nodeloss-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    (results / "logs").mkdir(parents=True, exist_ok=True)
    go_built: tuple[Path, Path] | str | None = None
    if not args.no_go:
        go_built = build_go_operator()
    cluster = BenchCluster(args.state_dir)
    log(f"starting a fresh cluster in {args.state_dir}")
    cluster.up()
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "runs": []}
    try:
        admin = cluster.admin()
        names = rack.create_nodes(admin, args.nodes)
        rack.cordon_others(admin)
        wait(lambda: rack.ready_count(admin) >= args.nodes, 120 + args.nodes / 10, f"{args.nodes} Ready nodes")
        if args.cache_nodes:
            report["node_cache"] = node_cache_bytes(admin.get(NODES, names[0]), args.cache_nodes)
            log(f"node cache: {report['node_cache']}")
        runner = NodeLossRun(cluster, args, results)
        cluster.install_crd(OUR_CRD)
        tfop = TfopProcess(cluster.operator_kubeconfig, results / "logs" / "tfop.log",
                           ["--namespace", "nodeloss-tfop"])
        report["runs"].append(runner.run("tfop", tfop, names[:args.rack]))
        if isinstance(go_built, str):
            report["go_note"] = f"Go operator left out: {go_built}"
        elif go_built is not None:
            cluster.delete_namespaces(["nodeloss-tfop"])
            go_binary, go_crd = go_built
            cluster.install_crd(go_crd)
            go = GoOperatorProcess(go_binary, admin, cluster.operator_kubeconfig, results / "logs" / "go.log",
                                   [*TUNED_GO, "--namespace", "nodeloss-go"])
            report["runs"].append(runner.run("go", go, names[args.rack:2 * args.rack]))
    finally:
        copy_logs(cluster, results / "logs" / "cluster")
        cluster.destroy()
        (results / "nodeloss.json").write_text(json.dumps(report, indent=2))
    print(summary(report))
    print(f"\nresults: {results}/nodeloss.json")
    return 0


def summary(report: dict[str, Any]) -> str:
    lines = [run_line(run) for run in report["runs"]]
    if "node_cache" in report:
        lines.append(f"node cache: {report['node_cache']}")
    if "go_note" in report:
        lines.append(report["go_note"])
    return "\n".join(lines)


def run_line(run: dict[str, Any]) -> str:
    return (f"{run['operator']:<5} {run['nodes']} nodes, {run['jobs']} jobs, {run['rack']} lost: "
            f"{run['replaced']}/{run['replicas_on_lost_nodes']} replaced, all in "
            f"{run.get('all_replaced_s', '-')} s (grace {run['grace_s']} s + {TARGET_MARGIN_S:.0f}: "
            f"{'met' if run['within_target'] else 'missed'}; per replica p50 {run.get('replaced_p50_s', '-')} s, p99 "
            f"{run.get('replaced_p99_s', '-')} s; new pods created from {run.get('first_created_s', '-')} "
            f"to {run.get('last_created_s', '-')} s, p50 {run.get('created_p50_s', '-')} s); elsewhere "
            f"{run['unchanged_elsewhere']}/{run['replicas_elsewhere']} unchanged; CPU {run['cpu_s']} s, peak RSS "
            f"{run['peak_rss_mb']} MB "
            f"over {run['window_s']} s; {run['requests']} requests ({run.get('requests_per_replaced', '-')} per "
            f"replaced replica): {run['requests_by_kind']}")


if __name__ == "__main__":
    sys.exit(main())
