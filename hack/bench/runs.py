"""One timed run of one contender, and the idle measurement; each returns a plain dict for the JSON report."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.audit import AuditLog, by_kind, failed
from bench.cluster import BenchCluster
from bench.cpu_window import CpuWindow
from bench.operators import GoOperatorProcess, OperatorProcess, TfopProcess
from bench.pinning import Pinning
from bench.profiles import ServerProfiles
from bench.timeline import Timeline
from bench.workload import CHILDREN_PER_JOB, CLIENT_CONCURRENCY, PODS_PER_JOB, create_jobs, exit_all
from tfop.controller.children import TFJOBS

HACK_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = HACK_DIR.parent
SEARCH_PATH = os.pathsep.join(str(p) for p in (HACK_DIR, REPO_DIR / "test", REPO_DIR))


@dataclass(frozen=True)
class Contender:
    name: str
    kind: str  # "limit", "tfop" or "go"
    args: tuple[str, ...] = ()
    code: Path | None = None  # tfop from another checkout (--baseline, bench-memory's --code), not this one
    go_group: bool = False  # runs in the Go operator's group, its CRD installed: the limit beside go and go-tuned

    @property
    def uses_go_crd(self) -> bool:
        return self.kind == "go" or self.go_group

    @property
    def batch_jobs(self) -> bool:
        """Whether its replicas are batch Jobs (the Job controller makes their pods)."""
        return "--replica-backend" in self.args and self.args[self.args.index("--replica-backend") + 1] == "jobs"

    @property
    def command(self) -> str:
        """How to run it, for the report."""
        if self.kind == "limit":
            return f"plain client, {CLIENT_CONCURRENCY} concurrent creates, no QPS limit"
        program = "tfop run" if self.kind == "tfop" else "training-operator.v1"
        where = f" from {self.code}" if self.code is not None else ""
        return " ".join((program, *self.args)) + ("" if self.args else " (defaults)") + where


# More workers and client headroom than either operator's defaults; the same for both.
TUNED_TFOP = ("--threads", "16", "--qps", "1000", "--burst", "2000")
TUNED_GO = ("--controller-threads", "16", "--kube-api-qps", "1000", "--kube-api-burst", "2000")
CONTENDERS = (
    Contender("limit", "limit"),
    # The same limit, alternating run by run with go and go-tuned, as `limit` does with tfop: the Go operator's
    # figures against a limit measured beside them, not minutes earlier or later on a machine that changed.
    Contender("limit-go", "limit", go_group=True),
    Contender("tfop-base", "tfop"),  # tfop (defaults) from the checkout --baseline names: before, beside after
    Contender("tfop", "tfop"),
    Contender("tfop-jobs", "tfop", ("--replica-backend", "jobs")),
    Contender("tfop-tuned", "tfop", TUNED_TFOP),
    Contender("go", "go"),
    Contender("go-tuned", "go", TUNED_GO),
)


class Runner:
    def __init__(self, cluster: BenchCluster, go_binary: Path | None, results: Path, exits: bool = True,
                 pinning: Pinning | None = None, profile: bool = False, operator_profile: bool = False) -> None:
        self.pinning = pinning
        # tfop's own CPU by where it goes (bench.cpu_sampler): <results>/profiles/<namespace>-tfop.txt
        self.operator_profile = operator_profile
        self.exits = exits  # end the pods and wait for the jobs to succeed
        self.profile = profile  # the apiserver's and controller-manager's CPU profiles over each run's window
        # Each contender's command, pinned to a CPU of its own with --pin-operator.
        self._wrap: Callable[[list[str]], list[str]] = pinning.operator_command if pinning is not None else list
        self.cluster = cluster
        self.go_binary = go_binary
        self.results = results
        self.audit = AuditLog(cluster.audit_log)
        (results / "logs").mkdir(parents=True, exist_ok=True)

    def operator(self, contender: Contender, log_name: str, namespace: str | None = None) -> OperatorProcess:
        """The contender's process; with `namespace` it watches only that one (both operators' --namespace)."""
        log_path = self.results / "logs" / f"{log_name}.log"
        args = [*contender.args, *(("--namespace", namespace) if namespace else ())]
        process: OperatorProcess
        if contender.kind == "tfop":
            profile = self.results / "profiles" / f"{log_name}-tfop.txt" if self.operator_profile else None
            if profile is not None:
                profile.parent.mkdir(parents=True, exist_ok=True)
            process = TfopProcess(self.cluster.operator_kubeconfig, log_path, args, code=contender.code,
                                  cpu_profile=profile)
        else:
            assert self.go_binary is not None, "the Go operator was not built"
            process = GoOperatorProcess(self.go_binary, self.cluster.admin(), self.cluster.operator_kubeconfig,
                                        log_path, args)
        process.wrap = self._wrap
        return process

    def run(self, contender: Contender, jobs: int, index: int) -> dict[str, Any]:
        """Create the jobs, wait for every child, running pod and Running job; end every pod; wait for every
        job to succeed. The namespace stays (the caller deletes namespaces in bulk, or keeps the finished jobs
        for the idle measurement) unless the run failed."""
        namespace = f"{contender.name}-n{jobs}-{index}"
        timeout = 120.0 + 1.5 * jobs
        admin = self.cluster.admin()
        self.cluster.create_namespace(namespace)
        timeline = Timeline(admin, namespace, TFJOBS, batch_jobs=contender.batch_jobs)
        timeline.start()
        audit_start = self.audit.offset()
        operator = None if contender.kind == "limit" else self.operator(contender, namespace, namespace)
        limit = None
        result: dict[str, Any] = {"contender": contender.name, "jobs": jobs, "run": index, "namespace": namespace,
                                  "load_before": os.getloadavg()}
        finished = False
        profiles: ServerProfiles | None = None
        try:
            if operator is not None:
                started = time.monotonic()
                operator.start()
                result["startup_s"] = time.monotonic() - started
                cpu_before = operator.cpu_seconds()
            else:
                limit = subprocess.Popen(
                    self._wrap([sys.executable, "-m", "bench.limit", str(self.cluster.operator_kubeconfig), namespace,
                                str(CLIENT_CONCURRENCY)]), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                    env={**os.environ, "PYTHONPATH": SEARCH_PATH})
                assert limit.stdout is not None
                if limit.stdout.readline().strip() != "ready":
                    raise RuntimeError("the limit client did not start")
            feed = _Feed(limit)
            servers = CpuWindow(self.cluster)
            if self.profile:
                profiles = ServerProfiles(self.cluster, self.results / "profiles", namespace)
            began, began_epoch = time.monotonic(), time.time()
            created = create_jobs(admin, namespace, jobs, feed.send if limit is not None else None)
            if limit is not None:
                result["limit"] = feed.finish()
                result["cpu_s"] = result["limit"]["cpu_s"]

            children = jobs * CHILDREN_PER_JOB
            timeline.wait(lambda: len(timeline.children_created) >= children, timeout, f"{children} children")
            result["children_s"] = timeline.nth_created(children) - began
            children_epoch = began_epoch + result["children_s"]
            result["curve"] = [round(t - began, 3) for t in timeline.created_curve()]
            pods = jobs * PODS_PER_JOB
            timeline.wait(lambda: timeline.running_pods() >= pods, timeout, f"{pods} running pods")
            by_job = timeline.pods_of_job()
            last_running = {uid: max(p.running_at or 0.0 for p in job_pods) for uid, job_pods in by_job.items()}
            result["pods_running_s"] = max(last_running.values()) - began
            result["pod_curves"] = timeline.pod_curves(began)
            for stage in ("created", "scheduled"):
                result[f"pods_{stage}_s"] = result["pod_curves"][stage][-1]
            pods_latency = _latencies(sorted(last_running[uid] - at for uid, at in created.items()))
            result.update({f"pods_{key}": value for key, value in pods_latency.items()})

            if operator is None:  # no Running condition: a job starts when all its pods run
                result.update(pods_latency)
                result.update(_close_window(servers, profiles))
                result["contender_cpu_window_s"] = result["cpu_s"]  # its creates were done before its pods ran
            else:
                timeline.wait(lambda: len(timeline.jobs_running) >= jobs, timeout, f"{jobs} Running jobs")
                result.update(_close_window(servers, profiles))
                result["contender_cpu_window_s"] = round(operator.cpu_seconds() - cpu_before, 1)
                result["jobs_running_s"] = max(timeline.jobs_running.values()) - began
                result["jobs_running_at"] = sorted(round(at - began, 3) for at in timeline.jobs_running.values())
                # Passes until every job runs: what the operator spends its CPU on besides requests.
                result["reconciles_to_running"] = int(operator.metric_sum("controller_runtime_reconcile_total"))
                result.update(_latencies(sorted(timeline.jobs_running[uid] - at for uid, at in created.items())))
                # What the operator adds once the pods run: its watch, its queue and its status write.
                lag = _latencies(sorted(timeline.jobs_running[uid] - last_running[uid] for uid in created))
                result.update({"lag_p50_s": lag["start_p50_s"], "lag_p99_s": lag["start_p99_s"]})
                if self.exits:
                    exits_began = time.monotonic()
                    result["pods_gone_before_exit"] = exit_all(admin, namespace, by_job)
                    result["exit_patches_s"] = time.monotonic() - exits_began
                    timeline.wait(lambda: len(timeline.jobs_succeeded) >= jobs, timeout, f"{jobs} Succeeded jobs")
                    result["succeeded_s"] = max(timeline.jobs_succeeded.values()) - exits_began
                try:  # the last status writes and events go out (the Go operator's event backlog can take
                    _settle(operator, quiet=1.0, timeout=5.0)  # minutes at 20 QPS: those are cut off)
                except TimeoutError:
                    result["note"] = "still sending requests 5 s after the last job succeeded"
                result["cpu_s"] = operator.cpu_seconds() - cpu_before
                result["peak_rss_mb"] = operator.memory()["VmHWM"] / 2**20
                result["requests_own"] = int(operator.metric_sum("rest_client_requests_total"))
            finished = True
        finally:
            if profiles is not None and not finished:
                with contextlib.suppress(Exception):  # the run's own failure is the one to report
                    profiles.close()
            if operator is not None:
                operator.stop()
            if limit is not None and limit.poll() is None:
                limit.kill()
                limit.wait()
            timeline.stop()
            if not finished:  # a failed run's jobs must not count as finished ones
                self.cluster.delete_namespaces([namespace])
        time.sleep(0.5)  # the last watches' closing lines
        result["load_after"] = os.getloadavg()
        audited = self.audit.requests(audit_start)
        result["requests_audit"] = len(audited)
        result["requests_audit_by_kind"] = by_kind(audited)
        result["requests_until_children"] = by_kind(audited, until=children_epoch)
        result["requests_failed"] = failed(audited)
        job_controller = self.audit.requests(audit_start, job_controller=True)
        result["requests_job_controller"] = len(job_controller)
        result["requests_job_controller_by_kind"] = by_kind(job_controller)
        return result

    def idle(self, contender: Contender, finished_jobs: int, seconds: float) -> dict[str, Any]:
        """A fresh operator over `finished_jobs` finished jobs: once its start-up work is done, its CPU use,
        reconciles and requests over `seconds` of nothing happening, and its RSS."""
        operator = self.operator(contender, f"{contender.name}-idle")
        started = time.monotonic()
        try:
            operator.start(timeout=600)
            ready = time.monotonic() - started
            settled = _settle(operator)
            cpu, reconciles = operator.cpu_seconds(), operator.metric_sum("controller_runtime_reconcile_total")
            audit_start = self.audit.offset()
            time.sleep(seconds)
            cpu = operator.cpu_seconds() - cpu
            reconciles = operator.metric_sum("controller_runtime_reconcile_total") - reconciles
            audited = self.audit.requests(audit_start, self.audit.offset())
            return {"contender": contender.name, "finished_jobs": finished_jobs, "seconds": seconds,
                    "startup_s": ready, "settle_s": settled, "cpu_percent": 100.0 * cpu / seconds,
                    "rss_mb": operator.memory()["VmRSS"] / 2**20, "reconciles": int(reconciles),
                    "requests": len(audited), "requests_by_kind": by_kind(audited)}
        finally:
            operator.stop()


class _Feed:
    """Hands each created job to the limit process the moment its create returns (from many threads)."""

    def __init__(self, process: subprocess.Popen[str] | None) -> None:
        self.process = process
        self._lock = threading.Lock()

    def send(self, job: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        line = json.dumps(job) + "\n"
        with self._lock:
            self.process.stdin.write(line)
            self.process.stdin.flush()

    def finish(self, timeout: float = 600.0) -> dict[str, Any]:
        assert self.process is not None
        output, _ = self.process.communicate(timeout=timeout)  # closes its stdin: no more jobs
        summary: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
        if self.process.returncode != 0:
            raise RuntimeError(f"the limit client failed: {summary}")
        return summary


# A cluster process -> its figure in a run's result.
WINDOW_COMPONENTS = {"kube-apiserver": "apiserver_cpu_s", "etcd": "etcd_cpu_s",
                     "kube-controller-manager": "controller_manager_cpu_s", "kube-scheduler": "scheduler_cpu_s",
                     "kwok": "kwok_cpu_s"}


def _close_window(window: CpuWindow, profiles: ServerProfiles | None) -> dict[str, Any]:
    """The window's CPU per process and, with `--profile`, the servers' profiles over it."""
    return {**_window_cpu(window), "profiles": profiles.close() if profiles is not None else {}}


def _window_cpu(window: CpuWindow) -> dict[str, float]:
    """What each cluster process and the whole machine spent from the first create until every job ran (the
    limit: every pod), and how busy the machine was: with both cores busy, the window's length is its CPU over
    the cores, so these say where a contender's extra seconds went."""
    spent = window.close()
    figures = {figure: spent.get(f"{component}_cpu_s", 0.0) for component, figure in WINDOW_COMPONENTS.items()}
    return {**figures, "machine_cpu_s": spent["machine_cpu_s"], "machine_busy": spent["machine_busy"]}


def _latencies(values: list[float]) -> dict[str, float]:
    """Per-job start latency (job created -> its Running condition, or all its pods Running): p50 and p99."""
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    return {"start_p50_s": statistics.median(values), "start_p99_s": cuts[98]}


def _settle(operator: OperatorProcess, quiet: float = 5.0, timeout: float = 600.0) -> float:
    """Wait until the operator's queue is empty and it has neither reconciled nor sent a request for `quiet`
    seconds (its work is done: a start-up pass over existing jobs, or the last events). Returns the seconds
    waited for that, the quiet time not included."""
    started = time.monotonic()
    last: tuple[tuple[float, float], float] = ((-1.0, -1.0), started)
    while time.monotonic() - started < timeout:
        counts = (operator.metric_sum("controller_runtime_reconcile_total"),
                  operator.metric_sum("rest_client_requests_total"))
        depth = operator.metric_sum("workqueue_depth")
        now = time.monotonic()
        if counts != last[0] or depth > 0:
            last = (counts, now)
        elif now - last[1] >= quiet:
            return now - started - quiet
        time.sleep(0.5)
    raise TimeoutError(f"the operator did not go quiet within {timeout:.0f}s")
