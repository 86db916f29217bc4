#!/usr/bin/env python3
"""Measures the operator's peak memory: `tfop run` as a process against the local cluster (kwok nodes), one
scenario at a time, each in a namespace of its own that the operator alone watches.

Scenarios: one TFJob of N workers (`--replicas 1000,5000`: 5000 is the CRD's bound), and M ordinary jobs of a
Chief, 2 Workers and a PS (`--jobs 500`). Pods are really created and kwok runs them: the figure includes the
informer caches holding every child, which is where an operator's memory grows with a job (with a quota of 0
pods nothing would be cached and a refused create stops the slow start after one pod body). A scenario ends once
every job is Running (every replica pod runs); the peak is VmHWM from /proc/PID/status, read then, with the RSS at
that moment and the seconds it took.

`--code DIR` runs the operator from another checkout (e.g. a worktree of an older commit) to compare.

    PYTHONPATH=hack .venv/bin/python -m bench.memory [--kubeconfig FILE] [--code DIR] [--replicas 1000,5000] \
        [--jobs 500]

With `--finished` or `--peak-jobs` it measures instead over `make bench`'s workload on a bench cluster of its own
(bench/memory_jobs.py): the idle RSS over that many finished jobs and the peak RSS of a run of that many jobs,
for each `--code` (repeat it) side by side:

    PYTHONPATH=hack .venv/bin/python -m bench.memory --finished 1000 --peak-jobs 2000 --code ../old --code .

Without --kubeconfig it starts a cluster of its own in .local/bench-memory-cluster and destroys it afterwards.

Issue 53's scale, each on a bench cluster of its own (bench/cluster.py), tfop beside a reference in alternating
rounds (`--rounds`), every figure printed beside its target (bench/targets.py):

    # 10,000 finished jobs kept: a burst of 100 over them and beside them, RSS, relist, kubectl, the page's list
    PYTHONPATH=hack .venv/bin/python -m bench.memory --pile 10000 --pile-namespaces 1,50 --burst 100 --rounds 3
    # one job of 10,000 replicas, and a restart together of 1,000 pods, beside the limit client
    PYTHONPATH=hack .venv/bin/python -m bench.memory --big-job 10000 --restart-together 1000 --rounds 1

(bench/pile.py and bench/bigjob.py say what each measures and how.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import bigjob, memory_jobs, pile
from bench.cluster import BenchCluster, destroy_keeping_logs, end_on_sigterm
from localcluster import LocalCluster
from tfop import logs
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound
from tfop.kube.resource import NAMESPACES, SERVICE_ACCOUNTS, Resource

REPO = Path(__file__).resolve().parents[2]
TFJOBS = Resource("kubeflow.org", "v1", "tfjobs", "TFJob")
CRD_FILE = REPO / "crd" / "kubeflow.org_tfjobs.yaml"


@dataclass
class Result:
    scenario: str
    replicas: int  # pods in all
    seconds: float  # from the first create until every job ran
    peak_mb: float  # VmHWM
    rss_mb: float  # VmRSS at the end


def proc_status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def template(container: str = "tensorflow") -> dict[str, Any]:
    return {"spec": {"terminationGracePeriodSeconds": 0,
                     "containers": [{"name": container, "image": "tensorflow/tensorflow:2.21.0"}]}}


def tfjob(name: str, replica_specs: dict[str, int]) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"tfReplicaSpecs": {kind: {"replicas": count, "template": template()}
                                        for kind, count in replica_specs.items()},
                     "runPolicy": {"cleanPodPolicy": "All"}}}


def running(job: dict[str, Any]) -> bool:
    return any(c.get("type") == "Running" and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions", []))


class Operator:
    """`python -m tfop run` from `code`, watching one namespace."""

    def __init__(self, code: Path, kubeconfig: Path, namespace: str, log_path: Path) -> None:
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tfop", "run", "--kubeconfig", str(kubeconfig), "--namespace", namespace,
                 "--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0", "--log-format", "json"],
                cwd=code, stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": str(code), "PYTHONUNBUFFERED": "1"})

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            tail = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-20:])
            raise RuntimeError(f"the operator exited with {self.process.returncode}:\n{tail}")

    def memory_mb(self) -> tuple[float, float]:
        pid = self.process.pid
        return proc_status_kb(pid, "VmHWM") / 1024, proc_status_kb(pid, "VmRSS") / 1024

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(40)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def wait(check: Callable[[], bool], timeout: float, what: str, alive: Callable[[], None]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(1.0)


@contextlib.contextmanager
def scratch_namespace(client: KubeClient, prefix: str) -> Iterator[str]:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    deadline = time.monotonic() + 60
    while True:  # the ServiceAccount admission plugin refuses pods until the default account exists
        try:
            client.get(SERVICE_ACCOUNTS, "default", name)
            break
        except NotFound:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    try:
        yield name
    finally:
        # Not waited for: the namespace controller takes minutes over thousands of pods, and the next scenario's
        # operator watches only its own namespace, so what is still going here cannot weigh on its memory.
        client.delete(NAMESPACES, name)


def run_scenario(client: KubeClient, kubeconfig: Path, code: Path, logs: Path, scenario: str,
                 jobs: list[dict[str, Any]], timeout: float) -> Result:
    pods = sum(sum(r["replicas"] for r in job["spec"]["tfReplicaSpecs"].values()) for job in jobs)
    with scratch_namespace(client, "bench-mem") as namespace:
        operator = Operator(code, kubeconfig, namespace, logs / f"{scenario}.log")
        try:
            time.sleep(3)  # start-up: imports and the first (empty) lists
            operator.check_alive()
            began = time.monotonic()
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda job: client.create(TFJOBS, job, namespace), jobs))

            def all_running() -> bool:
                items, _ = client.list(TFJOBS, namespace)
                return sum(running(item) for item in items) == len(jobs)

            wait(all_running, timeout, f"{len(jobs)} job(s) of {pods} pods to run", operator.check_alive)
            seconds = time.monotonic() - began
            time.sleep(5)  # what the last status writes and watch events still bring
            operator.check_alive()
            peak, rss = operator.memory_mb()
        finally:
            operator.stop()
        print(f"[bench-memory]   {seconds:.0f}s to running, peak {peak:.0f} MB (cleaning up)", file=sys.stderr,
              flush=True)
    return Result(scenario, pods, seconds, peak, rss)


def scale_benches(args: argparse.Namespace) -> int:
    """--pile, then --big-job and --restart-together, each on a fresh bench cluster."""
    end_on_sigterm()
    logs.configure("console", "warning")
    code = args.code[0].resolve() if args.code else None
    results = (args.results / time.strftime("scale-%Y%m%d-%H%M%S")).resolve()
    (results / "logs").mkdir(parents=True, exist_ok=True)
    texts: list[str] = [f"load average at the start: {os.getloadavg()}"]
    benches: list[tuple[str, Callable[[BenchCluster], dict[str, Any]],
                        Callable[[dict[str, Any]], tuple[str, list[dict[str, Any]]]]]] = []
    if args.pile:
        layouts = [int(n) for n in args.pile_namespaces.split(",") if n.strip()]
        benches.append(("pile", lambda cluster: pile.measure(
            cluster, results, pile=args.pile, layouts=layouts, burst=args.burst, rounds=args.rounds, code=code),
            pile.summary))
    if args.big_job or args.restart_together:
        benches.append(("bigjob", lambda cluster: bigjob.measure(
            cluster, results, replicas=args.big_job, ps=args.big_ps, restart=args.restart_together,
            rounds=args.rounds, restart_rounds=args.restart_rounds or args.rounds, code=code,
            sides=tuple(args.big_sides.split(","))), bigjob.summary))
    failed = False
    for name, run, summarize in benches:
        cluster = BenchCluster(args.state_dir)
        print(f"[bench-memory] {name}: a fresh bench cluster", file=sys.stderr, flush=True)
        cluster.up()
        try:
            cluster.install_crd(CRD_FILE)
            report = run(cluster)
        except Exception as error:  # noqa: BLE001 - the next bench still runs; this one's partial JSON is kept
            failed = True
            texts.append(f"{name} FAILED: {error}")
            print(f"[bench-memory] {name} FAILED: {error}", file=sys.stderr, flush=True)
            continue
        finally:
            destroy_keeping_logs(cluster, results / name)
        report["load_average_at_end"] = os.getloadavg()
        (results / f"{name}.json").write_text(json.dumps(report, indent=1))
        text, _ = summarize(report)
        texts.append(text)
        (results / f"{name}.txt").write_text(text + "\n")
    texts.append(f"load average at the end: {os.getloadavg()}")
    print("\n\n".join(texts))
    print(f"\nresults: {results}/")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", type=Path, help="a running cluster (default: start one of our own)")
    parser.add_argument("--code", type=Path, action="append",
                        help="the checkout whose operator runs (default: this); repeat it with --finished/--peak-jobs")
    parser.add_argument("--finished", type=int, default=0, help="idle RSS over this many finished bench jobs")
    parser.add_argument("--peak-jobs", type=int, default=0, help="peak RSS of a run of this many bench jobs")
    parser.add_argument("--idle-seconds", type=float, default=30.0, help="quiet seconds before the idle RSS is read")
    parser.add_argument("--rounds", type=int, default=2, help="idle measurements of each checkout, alternating")
    parser.add_argument("--replicas", default="1000,5000", help="sizes of the single big job, comma-separated")
    parser.add_argument("--jobs", type=int, default=500, help="ordinary jobs (Chief + 2 Workers + PS); 0: none")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for each scenario to run")
    parser.add_argument("--results", type=Path, default=REPO / "bench-results" / "memory")
    scale = parser.add_argument_group("issue 53's scale (each on a bench cluster of its own; --rounds alternates)")
    scale.add_argument("--pile", type=int, default=0, help="this many finished TFJobs kept (bench/pile.py)")
    scale.add_argument("--pile-namespaces", default="1,50",
                       help="the pile's layouts, one after the other: namespaces it is spread over")
    scale.add_argument("--burst", type=int, default=100, help="new jobs started over the pile and beside it")
    scale.add_argument("--big-job", type=int, default=0,
                       help="one job of this many replicas (enableDynamicWorker: up to 10000) beside the limit")
    scale.add_argument("--big-ps", type=int, default=10, help="the big job's PS; workers for the rest")
    scale.add_argument("--restart-together", type=int, default=0,
                       help="a restart together of one job of this many replicas beside the limit's")
    scale.add_argument("--big-sides", default="limit,tfop",
                       help="the big job's sides this bench runs (one each in two benches at once: --state-dir)")
    scale.add_argument("--restart-rounds", type=int, help="rounds of the restart (default: --rounds)")
    scale.add_argument("--state-dir", type=Path, default=REPO / ".local" / "bench-memory-cluster",
                       help="the bench cluster's directory (another one lets two benches run at once)")
    args = parser.parse_args(argv)
    if args.pile or args.big_job or args.restart_together:
        return scale_benches(args)

    args.results.mkdir(parents=True, exist_ok=True)
    if args.finished or args.peak_jobs:
        logs.configure("console", "warning")  # the bench watches through tfop's informers, which log with structlog
        checkouts = [memory_jobs.checkout(path) for path in args.code or [REPO]]
        rows = memory_jobs.measure(checkouts, finished=args.finished, peak_jobs=args.peak_jobs,
                                   idle_seconds=args.idle_seconds, rounds=args.rounds,
                                   state_dir=REPO / ".local" / "bench-memory-cluster", results=args.results)
        print(memory_jobs.table(rows, checkouts))
        return 0
    if args.code and len(args.code) > 1:
        parser.error("more than one --code only with --finished or --peak-jobs")
    args.code = args.code[0] if args.code else REPO
    cluster: LocalCluster | None = None
    kubeconfig = args.kubeconfig.resolve() if args.kubeconfig else None
    if kubeconfig is None:
        cluster = LocalCluster(REPO / ".local" / "bench-memory-cluster")
        cluster.up()
        kubeconfig = cluster.kubeconfig
        cluster.kubectl("apply", "-f", str(CRD_FILE))
        time.sleep(3)  # Established
    client = KubeClient.from_kubeconfig(str(kubeconfig), qps=0)
    code = args.code.resolve()
    commit = subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip() or "?"
    scenarios: list[tuple[str, list[dict[str, Any]]]] = [
        (f"1 job x {n} workers", [tfjob("big", {"Worker": int(n)})])
        for n in args.replicas.split(",") if n.strip()]
    if args.jobs:
        scenarios.append((f"{args.jobs} jobs x (chief+2 workers+ps)",
                          [tfjob(f"job-{i}", {"Chief": 1, "Worker": 2, "PS": 1}) for i in range(args.jobs)]))
    results: list[Result] = []
    try:
        for scenario, jobs in scenarios:
            print(f"[bench-memory] {scenario} (operator from {code} at {commit})", file=sys.stderr, flush=True)
            result = run_scenario(client, kubeconfig, code, args.results, scenario.replace(" ", "_"), jobs,
                                  args.timeout)
            results.append(result)
    finally:
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.destroy()
    lines = [f"operator from {code} at {commit}; pods really created, kwok runs them; peak = VmHWM",
             f"{'scenario':<40} {'pods':>6} {'to running s':>13} {'peak RSS MB':>12} {'RSS MB':>8}",
             "-" * 83]
    lines += [f"{r.scenario:<40} {r.replicas:>6} {r.seconds:>13.0f} {r.peak_mb:>12.0f} {r.rss_mb:>8.0f}"
              for r in results]
    print("\n".join(lines))
    (args.results / f"memory-{commit}.json").write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
