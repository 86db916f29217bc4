"""`python -m bench.nodeloss` (`make bench-nodeloss`): a rack lost under thousands of running replicas.

On a fresh bench cluster: `--nodes` kwok nodes (1,000), `--jobs` TFJobs of 7 replicas each (2,000: 14,000 pods
spread over the nodes), every replica running; then `--rack` nodes (50) go Ready Unknown with the unreachable
taints at once (bench/rack.py says how). Measured for each operator, from that instant:

- the seconds until every replica that was on the lost nodes runs again elsewhere (the same name, a new uid),
  against the jobs' grace (`tfop.kubeflow.org/node-loss-grace-seconds`, `--grace`) plus 30 s;
- that no replica elsewhere was touched: each still has the uid it had at the loss (those the controller-manager's
  taint eviction controller deleted are counted apart: 300 s after an earlier rack's loss it can delete, by name,
  the replacement of a pod it had meant to evict; see docs/tfjob/node-loss.md);
- the operator's CPU seconds and peak RSS over the loss, and the apiserver requests it made (the audit log),
  per replaced replica.

- the CPU seconds each of the cluster's processes and the whole machine spent over the window: where the time of
  a slow replacement goes.

tfop runs first: the jobs are made with the first `--contender` running, then each round starts one contender
afresh (each its own flags, or with `@DIR` another checkout's code), waits until it has looked at every job, and
loses the next rack, the contenders alternating round by round (`--rounds`): side by side on one cluster, without
building 14,000 pods again for each. Then (unless `--no-go`) the Kubeflow training operator, on a rack of other
nodes, its own CRD installed: it replaces none, so its window ends at the grace plus 30 s. `--cache-nodes` also
measures what tfop's node cache holds for that many nodes (bench/node_cache.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import rack
from bench.audit import AuditLog, by_kind
from bench.cluster import BenchCluster, destroy_keeping_logs, end_on_sigterm
from bench.cpu_window import CpuWindow
from bench.node_cache import node_cache_bytes
from bench.nodeloss_report import TARGET_MARGIN_S, quantiles, summary
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
TFOP_NAMESPACE = "nodeloss-tfop"
GO_NAMESPACE = "nodeloss-go"


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


@dataclass(frozen=True)
class Contender:
    """A tfop to measure: its name in the report, its flags, and the checkout it runs from (None: this one)."""

    name: str
    args: tuple[str, ...] = ()
    code: Path | None = None


def contender(text: str) -> Contender:
    """`NAME[@DIR][=FLAGS]`, e.g. `t32=--threads 32`, or `base@../main` for another checkout's tfop."""
    head, _, flags = text.partition("=")
    name, _, code = head.partition("@")
    if not name.replace("-", "").isalnum():
        raise argparse.ArgumentTypeError(f"a contender's name is letters, digits and dashes: {name!r}")
    return Contender(name, tuple(shlex.split(flags)), Path(code).resolve() if code else None)


def rounds_order(contenders: list[Contender], rounds: int) -> list[Contender]:
    """Every contender once a round, the order turned each round: none always goes first, on the freshest
    cluster, or always after the same one."""
    order: list[Contender] = []
    for index in range(rounds):
        turn = index % len(contenders)
        order.extend(contenders[turn:] + contenders[:turn])
    return order


class NodeLossRun:
    def __init__(self, cluster: BenchCluster, args: argparse.Namespace, results: Path) -> None:
        self.cluster = cluster
        self.args = args
        self.results = results
        self.admin = cluster.admin()
        self.audit = AuditLog(cluster.audit_log)
        self.lingered: dict[str, Any] | None = None  # what `--linger` saw after the last round

    def populate(self, namespace: str, operator: OperatorProcess) -> tuple[ReplicaWatch, float]:
        """The jobs made and every replica running, `operator` started (and left running) to make their pods;
        returns the namespace's pods, watched, and the seconds it took."""
        args = self.args
        self.cluster.create_namespace(namespace)
        replicas = ReplicaWatch(self.admin, namespace)
        pods = args.jobs * PODS_PER_JOB
        operator.start()
        began = time.monotonic()
        create_jobs(self.admin, namespace, args.jobs, args.grace)
        wait(lambda: replicas.running() >= pods, args.ready_timeout, f"{pods} running pods", every=2.0)
        return replicas, round(time.monotonic() - began, 1)

    def settle(self, operator: OperatorProcess, replicas: ReplicaWatch) -> None:
        """Every replica running and the operator idle: a fresh one has looked at every job (its first list
        queues them all), its queue is empty and nothing is being reconciled; then `--settle` seconds, for a status
        write held back, before the loss is measured."""
        pods = self.args.jobs * PODS_PER_JOB

        def idle() -> bool:
            return (replicas.running() >= pods
                    and operator.metric_sum("controller_runtime_reconcile_total") >= self.args.jobs
                    and operator.metric_sum("workqueue_depth") == 0
                    and operator.metric_sum("controller_runtime_active_workers") == 0)

        wait(idle, self.args.ready_timeout, "the operator idle with every replica running", every=2.0)
        time.sleep(self.args.settle)

    def lose(self, name: str, operator: OperatorProcess, replicas: ReplicaWatch, lost: list[str]) -> dict[str, Any]:
        """The rack lost under the running `operator`, measured until every replica on it runs elsewhere or the
        window ends."""
        args, admin = self.args, self.admin
        result: dict[str, Any] = {"operator": name, "nodes": args.nodes, "jobs": args.jobs, "rack": len(lost),
                                  "grace_s": args.grace, "load_before": os.getloadavg()}
        log(f"{name}: {args.jobs * PODS_PER_JOB} replicas running; losing {len(lost)} nodes")
        rack.release_from_kwok(admin, lost)
        time.sleep(2.0)  # kwok has let go of them before they are marked, or its heartbeat would undo it
        since = rack.now_to_the_second()
        on_lost = replicas.lose(frozenset(lost))
        cpu_before, audit_start = operator.cpu_seconds(), self.audit.offset()
        memory = PeakMemory(operator)
        cpu = CpuWindow(self.cluster)
        rack.mark_unreachable(admin, lost, since)
        result["replicas_on_lost_nodes"] = len(on_lost)
        result["lost_at"] = since.timestamp()

        target = args.grace + TARGET_MARGIN_S
        window = target if args.go_window and name == "go" else args.grace + args.timeout
        deadline = since.timestamp() + window
        while replicas.replaced() < len(on_lost) and time.time() < deadline:
            time.sleep(0.5)
        ended = time.time()
        result["peak_rss_mb"] = round(memory.stop() / 2**20, 1)
        result["cpu_s"] = round(operator.cpu_seconds() - cpu_before, 2)
        result.update(cpu.close())
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
                       "touched_elsewhere": sorted(replicas.touched)[:20],
                       "evicted_elsewhere": len(replicas.evicted)})
        result["nodes_still_lost"] = rack.still_lost(admin, lost)
        time.sleep(0.5)  # the last requests' audit lines
        audited = [r for r in self.audit.requests(audit_start) if r.received <= ended]
        result["requests"] = len(audited)
        result["requests_by_kind"] = by_kind(audited)
        if result["replaced"]:
            result["requests_per_replaced"] = round(len(audited) / result["replaced"], 2)
        result["load_after"] = os.getloadavg()
        log(f"{name}: {json.dumps({k: v for k, v in result.items() if k != 'requests_by_kind'})}")
        return result

    def tfop_rounds(self, contenders: list[Contender], racks: list[list[str]]) -> list[dict[str, Any]]:
        """The jobs made under the first contender; then, round after round, a fresh operator of each contender,
        each losing the next of `racks` (one per contender and round)."""
        order = rounds_order(contenders, len(racks) // len(contenders))
        logs_dir = self.results / "logs"

        def process(entry: Contender, log_name: str) -> TfopProcess:
            return TfopProcess(self.cluster.operator_kubeconfig, logs_dir / f"{log_name}.log",
                               ["--namespace", TFOP_NAMESPACE, *entry.args], code=entry.code)

        maker = process(order[0], "tfop-populate")
        try:
            replicas, all_running_s = self.populate(TFOP_NAMESPACE, maker)
        finally:
            maker.stop()
        runs = []
        try:
            for index, (entry, lost) in enumerate(zip(order, racks, strict=True)):
                operator = process(entry, f"tfop-{index + 1}-{entry.name}")
                try:
                    operator.start()
                    self.settle(operator, replicas)
                    result = self.lose(entry.name, operator, replicas, lost)
                finally:
                    operator.stop()
                result.update({"round": index // len(contenders) + 1, "all_running_s": all_running_s,
                               "flags": " ".join(entry.args), "code": str(entry.code or "")})
                runs.append(result)
            if self.args.linger and runs:
                self.lingered = self.linger(replicas, runs[-1]["lost_at"])
        finally:
            replicas.close()
        return runs

    def linger(self, replicas: ReplicaWatch, lost_at: float) -> dict[str, Any]:
        """Every replica, the last rack's replacements too, watched until `--linger` seconds after that loss with
        no operator running: the taint eviction controller's timers (300 s by default) fire inside it, and any
        replica deleted or marked for deletion is counted."""
        replicas.lose(frozenset())  # a new baseline: every replica is one "elsewhere"
        until = lost_at + self.args.linger
        log(f"watching every replica until {self.args.linger:.0f} s after the last loss "
            f"({max(0.0, until - time.time()):.0f} s from now)")
        while time.time() < until:
            time.sleep(1.0)
        same, others = replicas.unchanged_elsewhere()
        return {"seconds_after_loss": self.args.linger, "replicas": others, "unchanged": same,
                "touched": sorted(replicas.touched)[:20], "evicted": len(replicas.evicted)}

    def go_run(self, operator: OperatorProcess, lost: list[str]) -> dict[str, Any]:
        """The Go operator makes its own jobs' pods, then loses its rack."""
        try:
            replicas, all_running_s = self.populate(GO_NAMESPACE, operator)
            try:
                time.sleep(self.args.settle)  # its last status writes go out before the loss is measured
                result = self.lose("go", operator, replicas, lost)
            finally:
                replicas.close()
        finally:
            operator.stop()
        return {**result, "all_running_s": all_running_s}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench.nodeloss", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000, help="kwok nodes the replicas spread over")
    parser.add_argument("--jobs", type=int, default=2000, help="running TFJobs of 7 replicas each")
    parser.add_argument("--rack", type=int, default=50, help="nodes lost at once")
    parser.add_argument("--grace", type=int, default=30, help="each job's node-loss grace, seconds")
    parser.add_argument("--contender", dest="contenders", type=contender, action="append", default=[],
                        metavar="NAME[@DIR][=FLAGS]",
                        help="a tfop to measure, repeated for several: its flags to `tfop run` and, with @DIR, "
                             "another checkout's code (default: tfop, this checkout's, its default flags)")
    parser.add_argument("--rounds", type=int, default=1, help="racks lost by each contender, in alternation")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds after the grace before a tfop round gives up on the replacements")
    parser.add_argument("--ready-timeout", type=float, default=3600.0,
                        help="seconds for every replica to run before the loss")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds between all running and the loss")
    parser.add_argument("--linger", type=float, default=0.0,
                        help="after the last round, watch every replica until this many seconds after its loss "
                             "(330: past the taint eviction controller's 300 s) and count any deleted")
    parser.add_argument("--no-go", action="store_true", help="tfop only, not the Go training operator")
    parser.add_argument("--go-window", action=argparse.BooleanOptionalAction, default=True,
                        help="end the Go operator's window at the grace plus 30 s (it replaces nothing)")
    parser.add_argument("--cache-nodes", type=int, default=5000, help="nodes for the node cache's size (0: none)")
    parser.add_argument("--state-dir", type=Path, default=REPO_DIR / ".local" / "bench-nodeloss-cluster")
    parser.add_argument("--results", type=Path, default=REPO_DIR / "bench-results")
    args = parser.parse_args(argv)
    args.contenders = args.contenders or [Contender("tfop")]
    if len({entry.name for entry in args.contenders}) < len(args.contenders):
        parser.error("two contenders share a name")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.rack * racks_needed(args) > args.nodes:
        parser.error(f"--rack too large: {racks_needed(args)} racks of {args.rack} nodes are lost, each other nodes")
    return args


def racks_needed(args: argparse.Namespace) -> int:
    """One per contender and round, and the Go operator's."""
    return int(len(args.contenders) * args.rounds + (0 if args.no_go else 1))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    end_on_sigterm()
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
        racks = [names[index * args.rack:(index + 1) * args.rack] for index in range(racks_needed(args))]
        runner = NodeLossRun(cluster, args, results)
        cluster.install_crd(OUR_CRD)
        tfop_racks = racks[:len(args.contenders) * args.rounds]
        report["runs"].extend(runner.tfop_rounds(args.contenders, tfop_racks))
        if runner.lingered is not None:
            report["linger"] = runner.lingered
        if isinstance(go_built, str):
            report["go_note"] = f"Go operator left out: {go_built}"
        elif go_built is not None:
            cluster.delete_namespaces([TFOP_NAMESPACE])
            go_binary, go_crd = go_built
            cluster.install_crd(go_crd)
            go = GoOperatorProcess(go_binary, admin, cluster.operator_kubeconfig, results / "logs" / "go.log",
                                   [*TUNED_GO, "--namespace", GO_NAMESPACE])
            report["runs"].append(runner.go_run(go, racks[-1]))
    finally:
        destroy_keeping_logs(cluster, results)
        (results / "nodeloss.json").write_text(json.dumps(report, indent=2))
    print(summary(report))
    print(f"\nresults: {results}/nodeloss.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
