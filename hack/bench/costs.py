"""`python -m bench.costs`: what one request of each kind an operator sends costs the apiserver and etcd in CPU, on
a bench cluster of its own. The limit contender only creates; an operator also watches its children and writes
status and events, and on the bench's 2 shared cores every CPU-second the apiserver spends on those is taken from
the creates. This says how much, request by request.

Each kind is sent `--requests` times, 16 at a time (as the creator pool does), and the CPU the apiserver and etcd
used meanwhile (user + system, from /proc) is divided by the count. Pods are bound to a node no kubelet serves, so
neither the scheduler nor kwok adds to them; the watchers are plain watches of the namespace's pods, as an
operator's informer opens one.

With `--crd` given more than once, each CRD is installed in turn on the same cluster and measured, `--rounds`
times alternating, and the medians are printed side by side with their ratio to the first CRD's: two CRDs
compared in one run, on a machine whose load drifts between runs. `--kinds` measures only some kinds (e.g.
`status` for a CRD's cost per status write).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from bench.cluster import BenchCluster
from bench.operators import process_cpu_seconds
from bench.runs import REPO_DIR
from bench.workload import CLIENT_CONCURRENCY, tfjob
from tfop.api.defaults import apply_defaults
from tfop.controller.children import TFJOBS
from tfop.controller.plan.children.desired import desired_pod
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.job.parse import parse_job
from tfop.kube.errors import Conflict, TransportError
from tfop.kube.resource import EVENTS, PODS
from tfop.kube.streams import WatchStream

SERVER_PROCESSES = ("kube-apiserver", "etcd")
KINDS = ("get", "status", "event", "pod")  # --kinds: what run() measures
# Observed once per node the apiserver's CRD rule validator visits (a node with x-kubernetes-validations rules, or on
# the way to one), whether or not that part of the object changed: a count the machine's load does not blur.
CEL_EVALUATIONS = "apiserver_cel_evaluation_duration_seconds"


def server_cpu_seconds(cluster: BenchCluster) -> float:
    """CPU of this cluster's apiserver and etcd only: other clusters on the machine (a test suite's) come and go,
    and counting them by name made a measurement of their CPU too (and a negative one when one exited)."""
    total = 0.0
    for name in SERVER_PROCESSES:
        pid = cluster.local.pid(name)
        if pid is not None:
            with suppress(OSError):  # gone meanwhile
                total += process_cpu_seconds(pid)
    return total


class Costs:
    def __init__(self, cluster: BenchCluster, requests: int, suffix: str = "") -> None:
        self.cluster = cluster
        self.admin = cluster.admin()
        self.requests = requests
        self.suffix = suffix  # namespaces are new on every pass over the CRDs
        self.figures: dict[str, float] = {}  # kind -> ms of apiserver+etcd CPU per request
        self.conflicts = 0  # status updates refused for a stale resourceVersion, each sent again
        self._lock = threading.Lock()

    def quiet(self, below: float = 0.15, longest: float = 20.0) -> float:
        """Wait until the apiserver and etcd spend under `below` of a core a second (what the last kind set off is
        over); returns that rate."""
        deadline = time.monotonic() + longest
        while True:
            before = server_cpu_seconds(self.cluster)
            time.sleep(1.0)
            rate = server_cpu_seconds(self.cluster) - before
            if rate < below or time.monotonic() > deadline:
                return rate

    def cel_evaluations(self) -> float:
        """How many times the apiserver has validated a node's CRD rules so far."""
        return sum(float(line.rsplit(" ", 1)[1]) for line in self.admin.request_text("/metrics").splitlines()
                   if line.startswith(f"{CEL_EVALUATIONS}_count"))

    def measure(self, name: str, send: Callable[[int], None]) -> None:
        idle = self.quiet()
        cel_before, conflicts_before = self.cel_evaluations(), self.conflicts
        before, began = server_cpu_seconds(self.cluster), time.monotonic()
        with ThreadPoolExecutor(CLIENT_CONCURRENCY) as pool:
            list(pool.map(send, range(self.requests)))
        elapsed = time.monotonic() - began
        time.sleep(0.5)  # what the writes set off (the watch fan-out) is counted too
        used = server_cpu_seconds(self.cluster) - before
        # Per write: a conflict's retry is one more validated update of the same request.
        writes = self.requests + self.conflicts - conflicts_before
        cel_count = self.cel_evaluations() - cel_before
        self.figures[name] = 1000 * used / self.requests
        self.figures[f"{name}: rule validator's visits per write"] = cel_count / writes
        # The histogram's sum is wall time, nested nodes counted in their parents too, and on a loaded machine
        # mostly waiting for a CPU: only the count is printed.
        print(f"{name:<44} {self.requests:>6} in {elapsed:5.2f} s  {1000 * used / self.requests:5.2f} ms of "
              f"apiserver+etcd CPU each (before: {idle:.2f} of a core); the CRD rule validator visited "
              f"{cel_count / writes:.1f} nodes per write ({writes} writes)", flush=True)

    def namespace(self, name: str) -> str:
        name += self.suffix
        self.cluster.create_namespace(name)
        return name

    def run(self, kinds: tuple[str, ...] = KINDS) -> dict[str, float]:
        namespace = self.namespace("costs")
        jobs = [self.admin.create(TFJOBS, tfjob(f"job-{index}"), namespace) for index in range(CLIENT_CONCURRENCY)]
        job = apply_defaults(jobs[0])

        def get_job(index: int) -> None:
            self.admin.get(TFJOBS, jobs[index % len(jobs)]["metadata"]["name"], namespace)

        def update_status(index: int) -> None:
            name = jobs[index % len(jobs)]["metadata"]["name"]
            while True:
                current = self.admin.get(TFJOBS, name, namespace)
                current["status"] = {"conditions": [{
                    "type": "Running", "status": "True", "reason": "TFJobRunning", "message": f"pass {index}",
                    "lastUpdateTime": "2026-11-25T00:00:00Z", "lastTransitionTime": "2026-11-25T00:00:00Z"}],
                    "replicaStatuses": {"Worker": {"active": index % 5}}, "startTime": "2026-11-25T00:00:00Z"}
                try:
                    self.admin.replace(TFJOBS, name, current, namespace, subresource="status")
                    return
                except Conflict:
                    with self._lock:
                        self.conflicts += 1
                    continue

        def create_event(index: int) -> None:
            self.admin.create(EVENTS, {
                "metadata": {"generateName": "costs-"}, "type": "Normal", "reason": "SuccessfulCreate",
                "involvedObject": {"apiVersion": TFJOBS.api_version, "kind": TFJOBS.kind, "namespace": namespace,
                                   "name": job["metadata"]["name"], "uid": job["metadata"]["uid"]},
                "message": "Created 7 pods and 7 services for Chief 0, PS 0-1, Worker 0-3",
                "source": {"component": "tfop"}, "count": 1,
                "firstTimestamp": "2026-11-25T00:00:00Z", "lastTimestamp": "2026-11-25T00:00:00Z"}, namespace)

        if "get" in kinds:
            self.measure("get a TFJob", get_job)
        if "status" in kinds:
            self.measure("TFJob status: get and update", update_status)
        if "event" in kinds:
            self.measure("create an event", create_event)
        for watchers in (0, 1, 3) if "pod" in kinds else ():
            pods_namespace = self.namespace(f"costs-pods-{watchers}")
            with self.watching(pods_namespace, watchers):
                self.measure(f"create a pod, {watchers} more watchers of pods", self.pod_creator(job, pods_namespace))
        return self.figures

    def pod_creator(self, job: dict[str, Any], namespace: str) -> Callable[[int], None]:
        model = parse_job(job, ControllerConfig())
        if not isinstance(model, TFJobModel):
            raise ValueError(f"the benchmark's job is invalid: {'; '.join(map(str, model.errors))}")

        def create(index: int) -> None:
            body = desired_pod(model, "Worker", 0)
            body["metadata"]["name"] = f"pod-{index}"
            body["metadata"]["namespace"] = namespace
            body["spec"]["nodeName"] = "no-kubelet"  # bound: no scheduler, no kubelet, only the write
            self.admin.create(PODS, body, namespace)
        return create

    @contextmanager
    def watching(self, namespace: str, watchers: int) -> Iterator[None]:
        """`watchers` open watches of the namespace's pods, each read as it comes, closed at the end (a watch left
        open would be served through the next kinds' measurements)."""
        _, version = self.admin.list(PODS, namespace)
        streams = [self.cluster.admin().watch(PODS, namespace, resource_version=version, timeout_seconds=300)
                   for _ in range(watchers)]

        def drain(stream: WatchStream) -> None:
            with suppress(TransportError):
                for _ in stream:
                    pass

        threads = [threading.Thread(target=drain, args=(stream,), daemon=True) for stream in streams]
        for thread in threads:
            thread.start()
        try:
            yield
        finally:
            for stream in streams:
                stream.close()
            for thread in threads:
                thread.join(timeout=5)


def compare(crds: list[Path], figures: dict[Path, list[dict[str, float]]]) -> None:
    """The median of each kind per CRD, and its ratio to the first CRD's."""
    print("\nmedians per request: ms of apiserver+etcd CPU, or nodes whose rules ran (ratio to the first CRD)")
    first = crds[0]
    for kind in figures[first][0]:
        base = statistics.median(run[kind] for run in figures[first])
        cells = []
        for crd in crds:
            median = statistics.median(run[kind] for run in figures[crd])
            cells.append(f"{crd}: {median:.2f}" + (f" ({median / base:.2f}x)" if base else ""))
        print(f"{kind:<44} " + "; ".join(cells), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.costs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=400, help="requests of each kind")
    parser.add_argument("--crd", type=Path, action="append",
                        help="a TFJob CRD to install (default ours; again for another, e.g. the Go operator's, "
                             "measured in turn on the same cluster)")
    parser.add_argument("--rounds", type=int, default=1, help="passes over the CRDs, alternating")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"what to measure, of {','.join(KINDS)}")
    parser.add_argument("--state-dir", type=Path, default=REPO_DIR / ".local" / "bench-costs-cluster")
    args = parser.parse_args(argv)
    crds: list[Path] = args.crd or [REPO_DIR / "crd" / "kubeflow.org_tfjobs.yaml"]
    kinds = tuple(kind for kind in args.kinds.split(",") if kind)
    if unknown := set(kinds) - set(KINDS):
        parser.error(f"unknown kinds {sorted(unknown)}: of {','.join(KINDS)}")
    figures: dict[Path, list[dict[str, float]]] = {crd: [] for crd in crds}
    cluster = BenchCluster(args.state_dir)
    cluster.up()
    try:
        for round_index in range(args.rounds):
            for crd_index, crd in enumerate(crds):
                cluster.install_crd(crd)
                print(f"CRD: {crd} (round {round_index + 1})")
                costs = Costs(cluster, args.requests, suffix=f"-{round_index}-{crd_index}")
                figures[crd].append(costs.run(kinds))
    finally:
        cluster.destroy()
    if len(crds) > 1 or args.rounds > 1:
        compare(crds, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
