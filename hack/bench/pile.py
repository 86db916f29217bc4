"""`bench.memory --pile N` (issue 53's "what piles up"): N finished TFJobs kept (no TTL), their children cleaned,
and what they cost the operator, the page and kubectl; each `--pile-namespaces` layout in turn (1: all in one
namespace; 50: spread evenly over 50).

How the finished jobs are made: one job of the bench's workload (1 Chief + 4 Workers + 2 PS, cleanPodPolicy All)
is run to Succeeded by tfop on kwok, its pods ended with exit 0 as a kubelet would write it, and tfop cleans its
children; that job, as tfop left it (its spec, the labels, annotations and finalizers tfop put on it, and its whole
status, with the template's name and runtime id, which tfop derives from the uid, replaced by each job's own), is
then written N times: a create, and a merge patch
of the status subresource, the write tfop's own status update is. So every piled job is byte for byte what tfop
leaves behind, without making and deleting 7 N pods (70,000 at N = 10,000, an hour on two cores). A fresh
operator over the pile reconciles each job once and writes nothing (the report counts its writes to prove it).

Then, for each layout, `rounds` rounds that alternate (the order turned each round) a fresh tfop watching every
namespace, the pile included ("pile"), and a fresh tfop watching only the burst's namespace ("empty": the pile is
invisible to it, on the same cluster at the same moment). Each one: start-up until ready (its informers have
listed everything: the relist) and until settled (its first pass over every job done, the queue empty, quiet), its
RSS then, and a burst of `burst` new jobs in a namespace of their own: each job's start latency (create to
Running), p50 and p99, and its peak RSS. Once before the pile is made, a tfop watching every namespace of the
still empty cluster runs the same burst: the reference that includes the apiserver's part (a pile in etcd).

After the rounds: `kubectl get tfjobs` (in the pile's namespace, and with -A) and the page's job list rendered
over the piled jobs as the apiserver returns them (bench/ui_render.py, the app's code path), medians of three.
"""

from __future__ import annotations

import copy
import json
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import ui_render
from bench.audit import AuditLog, by_kind
from bench.cluster import BenchCluster
from bench.operators import TfopProcess
from bench.runs import _latencies, _settle
from bench.targets import PILE_RSS_TARGET, PILE_TARGET, check, verdict
from bench.timeline import Timeline
from bench.workload import CHIEF_TYPES, CLIENT_CONCURRENCY, PODS_PER_JOB, create_jobs, tfjob
from fake_kubelet import exit_pod
from tfop.api.constants import LABEL_JOB_NAME, LABEL_REPLICA_TYPE, LABEL_RUNTIME_ID
from tfop.api.runtime_id import runtime_id
from tfop.controller.children import TFJOBS
from tfop.kube.errors import AlreadyExists, TransportError
from tfop.kube.informer import strip_managed_fields
from tfop.kube.resource import PODS, SERVICES

TEMPLATE_NAME = "job-template"
TEMPLATE_NAMESPACE = "pile-template"
# Metadata tfop's apiserver writes and each object has its own of; the rest of the template's metadata is copied.
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences")
WRITES = ("create", "update", "patch", "delete")
PILE_ATTEMPTS = 3  # a create whose answer timed out is sent again; once it exists, the one there is the job


def log(message: str) -> None:
    print(f"[bench-memory {time.strftime('%H:%M:%S')}] {message}", flush=True)


def pile_job(name: str) -> dict[str, Any]:
    """The bench's workload job, its children cleaned once it ends."""
    job = tfjob(name)
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "All"}
    return job


def spread(count: int, namespaces: int, prefix: str = "pile") -> list[tuple[str, int]]:
    """`count` jobs over `namespaces` namespaces as evenly as they go: (namespace, jobs in it), the first ones
    taking one more where they do not divide."""
    if namespaces < 1:
        raise ValueError("at least one namespace")
    each, more = divmod(count, namespaces)
    return [(f"{prefix}-{namespaces}-{index:02d}", each + (index < more)) for index in range(namespaces)]


def piled(template: dict[str, Any], name: str, namespace: str) -> dict[str, Any]:
    """The create body of one piled job: the finished template's metadata (less what the apiserver sets per
    object) and spec."""
    metadata = {key: copy.deepcopy(value) for key, value in template["metadata"].items()
                if key not in SERVER_METADATA}
    metadata.update(name=name, namespace=namespace)
    return {"apiVersion": template.get("apiVersion", TFJOBS.api_version), "kind": TFJOBS.kind,
            "metadata": metadata, "spec": copy.deepcopy(template["spec"])}


def piled_status(template: dict[str, Any], name: str, namespace: str, uid: str) -> dict[str, Any]:
    """The status patch of one piled job, made `uid`: the template's status with its namespace and name replaced
    by the job's own (conditions name their job as `namespace/name`, the replicas' selectors by name) and its
    runtime id, which tfop derives from the uid (the selectors and `runtimeId`), by the job's own; anything else
    would be a status tfop rewrites."""
    old, new = runtime_id(template["metadata"]["uid"]), runtime_id(uid)
    metadata = template["metadata"]
    text = json.dumps(template.get("status") or {}).replace(f"{metadata['namespace']}/{metadata['name']}",
                                                           f"{namespace}/{name}")
    status = json.loads(text.replace(metadata["name"], name))
    if status.get("runtimeId") == old:
        status["runtimeId"] = new
    for replica in (status.get("replicaStatuses") or {}).values():
        if isinstance(replica.get("selector"), str):
            replica["selector"] = replica["selector"].replace(f"{LABEL_RUNTIME_ID}={old}", f"{LABEL_RUNTIME_ID}={new}")
    return {"status": status}


def finished_template(cluster: BenchCluster, results: Path, code: Path | None, timeout: float) -> dict[str, Any]:
    """One workload job run to Succeeded by tfop on kwok, its children cleaned: returned as tfop left it."""
    admin = cluster.admin()
    cluster.create_namespace(TEMPLATE_NAMESPACE)
    operator = TfopProcess(cluster.operator_kubeconfig, results / "logs" / "pile-template.log",
                           ["--namespace", TEMPLATE_NAMESPACE], code=code)
    selector = f"{LABEL_JOB_NAME}={TEMPLATE_NAME}"
    try:
        operator.start()
        admin.create(TFJOBS, pile_job(TEMPLATE_NAME), TEMPLATE_NAMESPACE)
        _wait(lambda: sum((p.get("status") or {}).get("phase") == "Running"
                          for p in admin.list(PODS, TEMPLATE_NAMESPACE, label_selector=selector)[0]) == PODS_PER_JOB,
              timeout, "the template job's pods running")
        pods, _ = admin.list(PODS, TEMPLATE_NAMESPACE, label_selector=selector)
        chief_last = sorted(pods, key=lambda p: p["metadata"]["labels"].get(LABEL_REPLICA_TYPE, "") in CHIEF_TYPES)
        for pod in chief_last:
            exit_pod(admin, TEMPLATE_NAMESPACE, pod["metadata"]["name"], 0)
        _wait(lambda: _succeeded(admin.get(TFJOBS, TEMPLATE_NAME, TEMPLATE_NAMESPACE))
              and not admin.list(PODS, TEMPLATE_NAMESPACE, label_selector=selector)[0], timeout,
              "the template job Succeeded with its pods cleaned")
        _settle(operator, quiet=3.0, timeout=timeout)
        job = admin.get(TFJOBS, TEMPLATE_NAME, TEMPLATE_NAMESPACE)
        job["_services_left"] = len(admin.list(SERVICES, TEMPLATE_NAMESPACE, label_selector=selector)[0])
        return job
    finally:
        operator.stop()
        cluster.delete_namespaces([TEMPLATE_NAMESPACE])


def make_pile(cluster: BenchCluster, template: dict[str, Any], layout: list[tuple[str, int]]) -> float:
    """Every piled job created and its status written, CLIENT_CONCURRENCY at a time; returns seconds."""
    admin = cluster.admin()
    for namespace, _ in layout:
        cluster.create_namespace(namespace)
    names = [(namespace, f"job-{index:05d}") for namespace, count in layout for index in range(count)]
    began = time.monotonic()

    def write(entry: tuple[str, str]) -> None:
        namespace, name = entry
        for attempt in range(PILE_ATTEMPTS):
            try:
                made = admin.create(TFJOBS, piled(template, name, namespace), namespace)
                break
            except AlreadyExists:  # an earlier attempt's create landed after its answer timed out
                made = admin.get(TFJOBS, name, namespace)
                break
            except TransportError:  # a loaded apiserver's answer later than the client's 30 s
                if attempt == PILE_ATTEMPTS - 1:
                    raise
        admin.patch_status(TFJOBS, name, piled_status(template, name, namespace, made["metadata"]["uid"]), namespace)

    with ThreadPoolExecutor(CLIENT_CONCURRENCY, thread_name_prefix="pile") as pool:
        list(pool.map(write, names))
    return time.monotonic() - began


def burst_run(cluster: BenchCluster, results: Path, side: str, layout: str, index: int, jobs: int,
              code: Path | None, timeout: float) -> dict[str, Any]:
    """A fresh tfop (watching every namespace for "pile" and "before", only the burst's for "empty"): its
    start-up and settled RSS, then `jobs` new jobs' start latency. The burst's namespace is deleted after."""
    namespace = f"burst-{layout}-{side}-{index}"
    admin = cluster.admin()
    audit = AuditLog(cluster.audit_log)
    cluster.create_namespace(namespace)
    timeline = Timeline(admin, namespace, TFJOBS)
    timeline.start()
    args = ["--namespace", namespace] if side == "empty" else []
    operator = TfopProcess(cluster.operator_kubeconfig, results / "logs" / f"{namespace}.log", args, code=code)
    result: dict[str, Any] = {"layout": layout, "side": side, "round": index, "jobs": jobs,
                              "load_before": os.getloadavg()}
    try:
        audit_start = audit.offset()
        started = time.monotonic()
        operator.start(timeout=timeout)
        result["ready_s"] = time.monotonic() - started
        result["settle_s"] = _settle(operator, quiet=3.0, timeout=timeout)
        result["settled_s"] = result["ready_s"] + result["settle_s"]
        result["startup_cpu_s"] = operator.cpu_seconds()
        result["startup_reconciles"] = int(operator.metric_sum("controller_runtime_reconcile_total"))
        result["rss_settled_mb"] = operator.memory()["VmRSS"] / 2**20
        time.sleep(0.5)  # the last audit lines
        startup = audit.requests(audit_start)
        result["startup_requests"] = by_kind(startup)
        result["startup_writes"] = sum(count for kind, count in result["startup_requests"].items()
                                       if kind.split(" ")[0] in WRITES)
        began = time.monotonic()
        created = create_jobs(admin, namespace, jobs)
        timeline.wait(lambda: len(timeline.jobs_running) >= jobs, timeout, f"{jobs} Running jobs")
        result["jobs_running_s"] = max(timeline.jobs_running.values()) - began
        result.update(_latencies(sorted(timeline.jobs_running[uid] - at for uid, at in created.items())))
        result["peak_rss_mb"] = operator.memory()["VmHWM"] / 2**20
        result["cpu_s"] = operator.cpu_seconds()
    finally:
        operator.stop()
        timeline.stop()
        result["cleanup_s"] = cluster.delete_namespaces([namespace])
    result["load_after"] = os.getloadavg()
    return result


def rounds_order(sides: list[str], rounds: int) -> list[tuple[int, str]]:
    """Each side once a round, the order turned each round: (round, side)."""
    order = []
    for index in range(rounds):
        turn = index % len(sides)
        order += [(index, side) for side in sides[turn:] + sides[:turn]]
    return order


def kubectl_seconds(cluster: BenchCluster, args: list[str], repeat: int = 3) -> dict[str, Any]:
    """`kubectl get tfjobs ARGS` to /dev/null's equivalent (captured): median seconds of `repeat`, and rows."""
    times, rows = [], 0
    for _ in range(repeat):
        began = time.monotonic()
        done = cluster.local.kubectl("get", "tfjobs", *args, "--no-headers", timeout=600)
        times.append(time.monotonic() - began)
        rows = len(done.stdout.splitlines())
    return {"command": f"kubectl get tfjobs {' '.join(args)}", "median_s": statistics.median(times),
            "min_s": min(times), "max_s": max(times), "rows": rows}


def measure(cluster: BenchCluster, results: Path, *, pile: int, layouts: list[int], burst: int, rounds: int,
            code: Path | None, timeout: float = 1800.0) -> dict[str, Any]:
    report: dict[str, Any] = {"pile": pile, "burst": burst, "rounds": rounds, "layouts": [], "runs": []}
    path = results / "pile.json"

    def save() -> None:
        path.write_text(json.dumps(report, indent=1))

    log(f"a job of the workload run to Succeeded by tfop, its children cleaned: the template of {pile:,}")
    template = finished_template(cluster, results, code, timeout)
    report["template"] = {"services_left": template.pop("_services_left"), "status": template.get("status"),
                          "finalizers": template["metadata"].get("finalizers"),
                          "bytes": len(json.dumps(strip_managed_fields(template)))}
    log(f"burst of {burst} on the empty cluster (tfop watching every namespace)")
    report["runs"].append(burst_run(cluster, results, "before", "none", 0, burst, code, timeout))
    save()
    for namespaces in layouts:
        layout = spread(pile, namespaces)
        name = f"{namespaces}ns"
        log(f"piling {pile:,} finished jobs in {namespaces} namespace(s)")
        entry: dict[str, Any] = {"layout": name, "namespaces": namespaces,
                                 "pile_s": make_pile(cluster, template, layout)}
        log(f"  piled in {entry['pile_s']:.0f} s")
        for index, side in rounds_order(["pile", "empty"], rounds):
            log(f"{name}: tfop {'over the pile' if side == 'pile' else 'watching the burst only'}, "
                f"round {index + 1}/{rounds}")
            run = burst_run(cluster, results, side, name, index, burst, code, timeout)
            report["runs"].append(run)
            log("  " + ", ".join(f"{k}={v:.2f}" for k, v in run.items() if isinstance(v, float)))
            save()
        one = layout[0][0]
        entry["kubectl"] = [kubectl_seconds(cluster, ["-n", one]), kubectl_seconds(cluster, ["-A"])]
        listed = [strip_managed_fields(job) for job in cluster.admin().list(TFJOBS)[0]]
        entry["ui"] = ui_render.list_timings(listed, datetime.now(UTC), runs=3, echo=False)
        report["layouts"].append(entry)
        save()
        log(f"deleting the {namespaces} namespace(s) of the pile")
        entry["delete_s"] = cluster.delete_namespaces([namespace for namespace, _ in layout])
        save()
    return report


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(run[key] for run in runs))


def summary(report: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The tables: per layout and side, medians over rounds; the burst's p99 over the pile against beside it;
    kubectl and the page's list; and the targets."""
    pile = report["pile"]
    lines = [(f"What piles up: {pile:,} finished TFJobs (no TTL, children cleaned), a burst of {report['burst']} "
             f"new jobs; medians over rounds (each side once a round, alternating)"), "",
             ("| layout | tfop watches | rounds | ready s | settled s | writes at start-up | RSS settled MB "
             "| burst start p50 / p99 s | burst all Running s | peak RSS MB |"),
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    checks: list[dict[str, Any]] = []
    watches = {"before": "every namespace, no pile yet", "pile": "every namespace, the pile too",
               "empty": "the burst's namespace only"}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in report["runs"]:
        groups.setdefault((run["layout"], run["side"]), []).append(run)
    for (layout, side), runs in groups.items():
        lines.append(
            f"| {layout} | {watches[side]} | {len(runs)} | {_median(runs, 'ready_s'):.1f} | "
            f"{_median(runs, 'settled_s'):.1f} | {_median(runs, 'startup_writes'):.0f} | "
            f"{_median(runs, 'rss_settled_mb'):.1f} | {_median(runs, 'start_p50_s'):.2f} / "
            f"{_median(runs, 'start_p99_s'):.2f} | {_median(runs, 'jobs_running_s'):.1f} | "
            f"{_median(runs, 'peak_rss_mb'):.1f} |")
    ratios = []
    for entry in report["layouts"]:
        over, beside = groups.get((entry["layout"], "pile")), groups.get((entry["layout"], "empty"))
        if over and beside:
            ratio = _median(over, "start_p99_s") / _median(beside, "start_p99_s")
            ratios.append((entry["layout"], ratio))
            where = f", {entry['namespaces']} namespace{'s' if entry['namespaces'] > 1 else ''}"
            names = {"name": "tfop", "where": where, "pile": f"{pile:,}", "burst": str(report["burst"])}
            checks.append(check(PILE_TARGET, ratio, **names))
            checks.append(check(PILE_RSS_TARGET, _median(over, "rss_settled_mb"), **names))
    if ratios:
        lines += ["", "Burst start p99 over the pile / beside it: "
                  + ", ".join(f"{layout} {ratio:.2f}x" for layout, ratio in ratios)]
    if report["layouts"]:
        lines += ["", "| layout | piled in s | command | median s | min / max s | rows |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for entry in report["layouts"]:
            lines += [f"| {entry['layout']} | {entry['pile_s']:.0f} | `{k['command']}` | {k['median_s']:.2f} | "
                      f"{k['min_s']:.2f} / {k['max_s']:.2f} | {k['rows']:,} |" for k in entry["kubectl"]]
        lines += ["", "| layout | the page's job list (tfop/ui) | median ms | HTML MB |", "| --- | --- | --- | --- |"]
        for entry in report["layouts"]:
            lines += [f"| {entry['layout']} | {u['name']} | {u['median_s'] * 1000:.0f} | {u['html_mb']:.2f} |"
                      for u in entry["ui"]]
    lines += ["", "Targets (bench/targets.py):", *(verdict(entry) for entry in checks)]
    return "\n".join(lines), checks


def _succeeded(job: dict[str, Any]) -> bool:
    return any(c.get("type") == "Succeeded" and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _wait(condition: Any, timeout: float, what: str, every: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)

