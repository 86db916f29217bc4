"""`bench.memory --big-job N` and `--restart-together M` (issue 53's "big jobs"), on the bench cluster's kwok
nodes (four of 4,000 pods each), tfop beside the limit client (bench/limit.py) in alternating rounds:

- one job of N replicas (`enableDynamicWorker`, so up to 10,000: `--big-ps` PS and workers for the rest, no
  chief, whose TF_CONFIG would list every replica): for tfop, seconds from the job's create until its Running
  condition, with its peak RSS (VmHWM) against the Deployment's memory limit; for the limit, fed the same job the
  moment it exists, until every one of its pods runs. Each run in a namespace of its own, deleted after;
- a restart together of one running job of M replicas (a Chief, 4 PS and workers, restart scope `Job`, restart
  policy ExitCode): for tfop, worker 0 exits with 137 and the clock starts at its decision, the first other
  replica's pod marked for deletion, until every replica runs again in a new pod (also given from the exit); for
  the limit (tfop stopped), it is fed the job and deletes every pod, waits until all are gone and creates them
  again, timed from the moment it is fed. One job for all the rounds: a fresh tfop is started and settled before
  each of its rounds, as `bench.nodeloss` does.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.cluster import BenchCluster
from bench.nodeloss import wait
from bench.operators import TfopProcess
from bench.replicas import ReplicaWatch
from bench.runs import SEARCH_PATH, _Feed
from bench.targets import BIG_JOB_RSS_TARGET, BIG_JOB_TARGET, RESTART_TARGET, Target, check, verdict
from bench.workload import CLIENT_CONCURRENCY, tfjob
from fake_kubelet import exit_pod
from tfop.api.constants import ANNOTATION_RESTART_SCOPE, RESTART_SCOPE_JOB
from tfop.api.runtime_id import child_name, runtime_id
from tfop.controller.children import TFJOBS

SIDES = ("limit", "tfop")


def log(message: str) -> None:
    print(f"[bench-memory {time.strftime('%H:%M:%S')}] {message}", flush=True)


def big_job(name: str, replicas: int, ps: int) -> dict[str, Any]:
    """`ps` PS and `replicas - ps` workers, each worker's TF_CONFIG listing only the PS and itself."""
    job = tfjob(name)
    specs = job["spec"]["tfReplicaSpecs"]
    del specs["Chief"]
    specs["PS"]["replicas"] = ps
    specs["Worker"]["replicas"] = replicas - ps
    job["spec"]["enableDynamicWorker"] = True
    return job


def restart_job(name: str, replicas: int) -> dict[str, Any]:
    """A Chief, 4 PS and workers for the rest, restarted together; exit codes from 128 are retryable."""
    job = tfjob(name)
    specs = job["spec"]["tfReplicaSpecs"]
    specs["PS"]["replicas"] = 4
    specs["Worker"]["replicas"] = replicas - 5
    for spec in specs.values():
        spec["restartPolicy"] = "ExitCode"
    job["metadata"]["annotations"] = {ANNOTATION_RESTART_SCOPE: RESTART_SCOPE_JOB}
    job["spec"]["runPolicy"] = {"backoffLimit": 100}
    return job


def order(rounds: int) -> list[tuple[int, str]]:
    """(round, side): each side once a round, the limit first in odd rounds and tfop first in even ones."""
    turns = []
    for index in range(rounds):
        sides = SIDES if index % 2 == 0 else SIDES[::-1]
        turns += [(index, side) for side in sides]
    return turns


def running(job: dict[str, Any]) -> bool:
    return any(c.get("type") == "Running" and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


class Limit:
    """bench/limit.py in its own process, as `make bench` runs it."""

    def __init__(self, cluster: BenchCluster, namespace: str, restart: bool = False) -> None:
        mode = ["--restart"] if restart else []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.limit", *mode, str(cluster.operator_kubeconfig), namespace,
             str(CLIENT_CONCURRENCY)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": SEARCH_PATH})
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("the limit client did not start")
        self.feed = _Feed(self.process)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def big_run(cluster: BenchCluster, results: Path, side: str, index: int, replicas: int, ps: int,
            code: Path | None, timeout: float) -> dict[str, Any]:
    namespace = f"big-{side}-{index}"
    admin = cluster.admin()
    cluster.create_namespace(namespace)
    watch = ReplicaWatch(admin, namespace)
    result: dict[str, Any] = {"scenario": "big job", "side": side, "round": index, "replicas": replicas,
                              "load_before": os.getloadavg()}
    operator = limit = None
    try:
        if side == "tfop":
            operator = TfopProcess(cluster.operator_kubeconfig, results / "logs" / f"{namespace}.log",
                                   ["--namespace", namespace], code=code)
            operator.start()
        else:
            limit = Limit(cluster, namespace)
        began = time.monotonic()
        job = admin.create(TFJOBS, big_job("big", replicas, ps), namespace)
        if limit is not None:
            limit.feed.send(job)
            result["limit"] = limit.feed.finish(timeout)
            result["created_s"] = time.monotonic() - began  # its creates answered
        wait(lambda: watch.running() >= replicas, timeout, f"{replicas} running pods", every=1.0)
        result["pods_running_s"] = time.monotonic() - began
        if operator is not None:
            wait(lambda: running(admin.get(TFJOBS, "big", namespace)), timeout, "the job Running", every=0.5)
            result["running_s"] = time.monotonic() - began
            result["peak_rss_mb"] = operator.memory()["VmHWM"] / 2**20
            result["cpu_s"] = operator.cpu_seconds()
        else:
            result["running_s"] = result["pods_running_s"]  # it writes no status: its job runs when its pods do
            result["cpu_s"] = result["limit"]["cpu_s"]
    finally:
        if operator is not None:
            operator.stop()
        if limit is not None:
            limit.kill()
        watch.close()
        result["cleanup_s"] = cluster.delete_namespaces([namespace])
    result["load_after"] = os.getloadavg()
    return result


class RestartBench:
    """One job of `replicas` replicas, made running by tfop once; then rounds of restarts together."""

    NAMESPACE = "restart"
    NAME = "sync"

    def __init__(self, cluster: BenchCluster, results: Path, replicas: int, code: Path | None,
                 timeout: float) -> None:
        self.cluster, self.results, self.replicas, self.code, self.timeout = cluster, results, replicas, code, timeout
        self.admin = cluster.admin()
        cluster.create_namespace(self.NAMESPACE)
        self.watch = ReplicaWatch(self.admin, self.NAMESPACE)

    def operator(self, log_name: str) -> TfopProcess:
        return TfopProcess(self.cluster.operator_kubeconfig, self.results / "logs" / f"{log_name}.log",
                           ["--namespace", self.NAMESPACE], code=self.code)

    def populate(self) -> float:
        maker = self.operator("restart-populate")
        try:
            maker.start()
            began = time.monotonic()
            self.admin.create(TFJOBS, restart_job(self.NAME, self.replicas), self.NAMESPACE)
            wait(lambda: self.watch.running() >= self.replicas, self.timeout, f"{self.replicas} running pods", 1.0)
            wait(lambda: running(self.admin.get(TFJOBS, self.NAME, self.NAMESPACE)), self.timeout, "the job Running",
                 every=0.5)
            return time.monotonic() - began
        finally:
            maker.stop()

    def settle(self, operator: TfopProcess) -> None:
        """Every replica running and the fresh operator idle, having looked at the job."""
        def idle() -> bool:
            return (self.watch.running() >= self.replicas
                    and operator.metric_sum("controller_runtime_reconcile_total") >= 1
                    and operator.metric_sum("workqueue_depth") == 0
                    and operator.metric_sum("controller_runtime_active_workers") == 0)

        wait(idle, self.timeout, "the operator idle with every replica running", every=1.0)
        time.sleep(3.0)  # a status write held back

    def worker_zero(self) -> str:
        uid = self.admin.get(TFJOBS, self.NAME, self.NAMESPACE)["metadata"]["uid"]
        return child_name(self.NAME, "worker", runtime_id(uid), 0)

    def round(self, side: str, index: int) -> dict[str, Any]:
        result: dict[str, Any] = {"scenario": "restart together", "side": side, "round": index,
                                  "replicas": self.replicas, "load_before": os.getloadavg()}
        wait(lambda: self.watch.running() >= self.replicas, self.timeout, "every replica running", 1.0)
        decided: float | None
        if side == "tfop":
            operator = self.operator(f"restart-{index}-tfop")
            try:
                operator.start()
                self.settle(operator)
                cpu_before = operator.cpu_seconds()
                failed = self.worker_zero()
                self.watch.restart_all()
                failed_at = time.time()
                exit_pod(self.admin, self.NAMESPACE, failed, 137)
                self._wait_replaced()
                result["cpu_s"] = operator.cpu_seconds() - cpu_before
                result["peak_rss_mb"] = operator.memory()["VmHWM"] / 2**20
            finally:
                operator.stop()
            marked = [at for name, at in self.watch.marked_at.items() if name != failed]
            decided = min(marked) if marked else None
            result["decision_s"] = None if decided is None else decided - failed_at
            result["from_exit_s"] = max(self.watch.replaced_at.values()) - failed_at
        else:
            limit = Limit(self.cluster, self.NAMESPACE, restart=True)
            try:
                job = self.admin.get(TFJOBS, self.NAME, self.NAMESPACE)
                self.watch.restart_all()
                decided = time.time()
                limit.feed.send(job)
                result["limit"] = limit.feed.finish(self.timeout)
                self._wait_replaced()
                result["cpu_s"] = result["limit"]["cpu_s"]
            finally:
                limit.kill()
        replaced = self.watch.replaced_at.values()
        if decided is not None:
            result["restart_s"] = max(replaced) - decided
            result["last_marked_s"] = max(self.watch.marked_at.values(), default=decided) - decided
            result["first_created_s"] = min(self.watch.created_at.values()) - decided
        result["replaced"] = len(self.watch.replaced_at)
        result["load_after"] = os.getloadavg()
        return result

    def _wait_replaced(self) -> None:
        wait(lambda: self.watch.replaced() >= self.replicas, self.timeout,
             f"all {self.replicas} replicas running again in new pods", every=0.5)

    def close(self) -> None:
        self.watch.close()
        self.cluster.delete_namespaces([self.NAMESPACE])


def measure(cluster: BenchCluster, results: Path, *, replicas: int, ps: int, restart: int, rounds: int,
            restart_rounds: int, code: Path | None, sides: tuple[str, ...] = SIDES,
            timeout: float = 3600.0) -> dict[str, Any]:
    """The restarts first (a few minutes), then the big job's rounds (each creates and deletes 20,000 children);
    of the big job only `sides` (one side each in two benches at once, on clusters of their own, is what a
    loaded machine leaves time for: both under the same moment's load; bigjob.json of each, merged, is one
    report)."""
    report: dict[str, Any] = {"big_replicas": replicas, "restart_replicas": restart, "rounds": rounds,
                              "restart_rounds": restart_rounds, "runs": []}
    path = results / "bigjob.json"

    def keep(run: dict[str, Any]) -> None:
        report["runs"].append(run)
        log("  " + json.dumps({k: v for k, v in run.items() if k != "limit"}))
        path.write_text(json.dumps(report, indent=1))

    if restart:
        bench = RestartBench(cluster, results, restart, code, timeout)
        try:
            log(f"one job of {restart:,} replicas made running by tfop for the restarts")
            report["restart_populate_s"] = bench.populate()
            for index, side in order(restart_rounds):
                log(f"{side}: restart together of {restart:,} pods, round {index + 1}/{restart_rounds}")
                keep(bench.round(side, index))
        finally:
            bench.close()
    for index, side in [(index, side) for index, side in order(rounds) if side in sides] if replicas else []:
        log(f"{side}: one job of {replicas:,} replicas, round {index + 1}/{rounds}")
        keep(big_run(cluster, results, side, index, replicas, ps, code, timeout))
    return report


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [run[key] for run in runs if run.get(key) is not None]
    return statistics.median(values) if values else None


def _cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _sides(runs: list[dict[str, Any]], columns: tuple[tuple[str, int], ...], key: str, told: str, target: Target,
           replicas: str) -> tuple[list[str], list[dict[str, Any]]]:
    """A table row for each side that ran (its rounds, then the median of each column, as (key, digits)), and where
    both ran, tfop's median `key` over the limit's, told as `told` and checked against `target`."""
    sides = {side: [run for run in runs if run["side"] == side] for side in SIDES}
    rows = [f"| {side} | {len(of)} | " + " | ".join(_cell(_median(of, column), digits) for column, digits in columns)
            + " |" for side, of in sides.items() if of]
    tfop, limit = _median(sides["tfop"], key), _median(sides["limit"], key)
    if tfop is None or limit is None:
        return rows, []
    return [*rows, "", f"{told}: {tfop / limit:.2f}x"], [check(target, tfop / limit, name="tfop", replicas=replicas)]


def summary(report: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """Medians over rounds for each side, tfop's over the limit's, and the targets."""
    checks: list[dict[str, Any]] = []
    lines: list[str] = []
    big = [run for run in report["runs"] if run["scenario"] == "big job"]
    if big:
        replicas = f"{report['big_replicas']:,}"
        lines += [(f"One job of {replicas} replicas (enableDynamicWorker) on kwok; medians over rounds; seconds from "
                  "the job's create"), "",
                  "| side | rounds | Running s (limit: its pods running) | pods running s | CPU s | peak RSS MB |",
                  "| --- | --- | --- | --- | --- | --- |"]
        rows, compared = _sides(big, (("running_s", 1), ("pods_running_s", 1), ("cpu_s", 1), ("peak_rss_mb", 1)),
                                "running_s", "tfop Running / the limit's pods running", BIG_JOB_TARGET, replicas)
        lines += rows
        checks += compared
        checks.append(check(BIG_JOB_RSS_TARGET, _median([run for run in big if run["side"] == "tfop"], "peak_rss_mb"),
                            name="tfop", replicas=replicas))
    restarts = [run for run in report["runs"] if run["scenario"] == "restart together"]
    if restarts:
        replicas = f"{report['restart_replicas']:,}"
        lines += [*([""] if lines else []), (f"A restart together of one job of {replicas} pods; medians over rounds; "
                  "seconds from the decision (tfop: the first other replica's pod marked for deletion after worker "
                  "0 exits 137; the limit: fed the job)"), "",
                  ("| side | rounds | decision to every pod running again s | to every old pod marked for "
                  "deletion s | to the first new pod s | tfop: exit to decision s | tfop: exit to all running s "
                  "| CPU s |"),
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        rows, compared = _sides(restarts, (("restart_s", 1), ("last_marked_s", 1), ("first_created_s", 1),
                                           ("decision_s", 2), ("from_exit_s", 1), ("cpu_s", 1)),
                                "restart_s", "tfop's restart / the limit's", RESTART_TARGET, replicas)
        lines += rows
        checks += compared
    lines += ["", "Targets (bench/targets.py):", *(verdict(entry) for entry in checks)]
    return "\n".join(lines), checks
