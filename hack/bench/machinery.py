#!/usr/bin/env python3
"""Benchmarks the generic machinery against a running apiserver and prints a small table:

- time to list and sync N pods (default 10,000) into an informer, median of --repeat runs;
- resident memory per cached pod (RSS delta / count), with the default transform (managedFields stripped) and,
  for comparison, without it;
- single-threaded work queue throughput (add + get + done per item).

Each informer measurement runs in a fresh child process, so memory freed by an earlier run cannot hide in the
allocator and make a later one look smaller.

    PYTHONPATH=hack .venv/bin/python -m bench.machinery .local/cluster/kubeconfig [--pods 10000] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tfop.kube.client import KubeClient
from tfop.kube.errors import AlreadyExists, NotFound
from tfop.kube.informer import Informer, strip_managed_fields
from tfop.kube.resource import NAMESPACES, PODS, SERVICE_ACCOUNTS
from tfop.kube.workqueue import RateLimitingQueue

CREATE_THREADS = 16


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def pod_body(name: str) -> dict[str, Any]:
    # No scheduler serves this name, so the pods stay Pending and unbound: nothing else writes to them while we
    # measure, and the pod garbage collector leaves unbound pods alone.
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "tfop-bench"}},
            "spec": {"schedulerName": "tfop-bench-no-scheduler", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}


def ensure_namespace(client: KubeClient, namespace: str) -> None:
    with contextlib.suppress(AlreadyExists):
        client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    deadline = time.monotonic() + 60
    while True:  # the ServiceAccount admission plugin rejects pods until the default account exists
        try:
            client.get(SERVICE_ACCOUNTS, "default", namespace)
            return
        except NotFound:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def create_pods(client: KubeClient, namespace: str, count: int) -> tuple[int, float]:
    """Create bench-00000.. up to `count` pods (existing ones are kept); returns (created, seconds)."""
    existing = {item["metadata"]["name"] for item in client.list(PODS, namespace, label_selector="app=tfop-bench")[0]}
    missing = [name for name in (f"bench-{i:05d}" for i in range(count)) if name not in existing]

    def create(name: str) -> None:
        with contextlib.suppress(AlreadyExists):
            client.create(PODS, pod_body(name), namespace)

    began = time.monotonic()
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        list(pool.map(create, missing))
    return len(missing), time.monotonic() - began


def measure_informer(kubeconfig: str, namespace: str, transform: bool) -> dict[str, float]:
    """One informer sync in this process: seconds from start to synced, and RSS growth."""
    client = KubeClient.from_kubeconfig(kubeconfig)
    gc.collect()
    before = rss_bytes()
    informer = Informer(client, PODS, namespace=namespace, transform=strip_managed_fields if transform else None)
    began = time.monotonic()
    informer.start()
    if not informer.wait_for_sync(600):
        raise RuntimeError("informer did not sync within 600 s")
    seconds = time.monotonic() - began
    gc.collect()
    grown = rss_bytes() - before
    count = len(informer.store)
    informer.stop()
    return {"seconds": seconds, "count": count, "rss_bytes": grown}


def informer_in_child(kubeconfig: str, namespace: str, transform: bool) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, __file__, kubeconfig, "--child-informer", namespace, "--transform",
         "on" if transform else "off"], capture_output=True, text=True, check=True)
    parsed: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return parsed


def queue_throughput(items: int) -> float:
    """Items per second through add + get + done on one thread, in batches as a controller sees them."""
    queue: RateLimitingQueue[int] = RateLimitingQueue(f"bench-{uuid.uuid4().hex[:6]}")
    began = time.perf_counter()
    batch = 1000
    for start in range(0, items, batch):
        for item in range(start, start + batch):
            queue.add(item)
        for _ in range(batch):
            taken, _shutdown = queue.get()
            assert taken is not None
            queue.done(taken)
    elapsed = time.perf_counter() - began
    queue.shutdown()
    return items / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kubeconfig")
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--namespace", default="", help="reuse this namespace (default: a new one)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queue-items", type=int, default=200_000)
    parser.add_argument("--keep", action="store_true", help="keep the namespace and its pods afterwards")
    parser.add_argument("--child-informer", metavar="NAMESPACE", help=argparse.SUPPRESS)
    parser.add_argument("--transform", choices=("on", "off"), default="on", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child_informer:
        print(json.dumps(measure_informer(args.kubeconfig, args.child_informer, args.transform == "on")))
        return 0

    client = KubeClient.from_kubeconfig(args.kubeconfig, qps=0)  # creating pods as fast as the server takes them
    namespace = args.namespace or f"tfop-bench-{uuid.uuid4().hex[:6]}"
    ensure_namespace(client, namespace)
    rows: list[tuple[str, str]] = []
    try:
        created, create_seconds = create_pods(client, namespace, args.pods)
        if created:
            rows.append((f"create {created} pods ({CREATE_THREADS} threads)",
                         f"{create_seconds:.1f} s ({created / create_seconds:.0f} pods/s)"))
        for transform in (True, False):
            runs = [informer_in_child(args.kubeconfig, namespace, transform) for _ in range(args.repeat)]
            count = int(runs[0]["count"])
            label = "managedFields stripped" if transform else "no transform"
            seconds = statistics.median(run["seconds"] for run in runs)
            per_pod = statistics.median(run["rss_bytes"] for run in runs) / max(1, count)
            rows.append((f"list+sync {count} pods, {label}",
                         f"{seconds:.2f} s median of {len(runs)} ({count / seconds:.0f} pods/s)"))
            rows.append((f"RSS per cached pod, {label}", f"{per_pod / 1024:.1f} KiB"))
        rates = [queue_throughput(args.queue_items) for _ in range(args.repeat)]
        rate = statistics.median(rates)
        rows.append((f"work queue add+get+done, 1 thread, {args.queue_items} items",
                     f"{rate:,.0f} items/s ({3 * rate:,.0f} ops/s)"))
    finally:
        if not args.keep:
            client.delete(NAMESPACES, namespace)

    width = max(len(name) for name, _ in rows)
    print(f"{'measure':<{width}}  result")
    print(f"{'-' * width}  {'-' * 40}")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
