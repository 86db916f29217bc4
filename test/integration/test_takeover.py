"""Moving from the Kubeflow training operator: the real Go operator (v1.9.3, built by hack/) runs a mix of jobs,
is stopped, and tfop takes them over as docs/install/from-go-operator.md tells users to, without a pod or service
made or removed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.operators import GoOperatorProcess
from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.crds import replace_crd
from support.operator_process import OperatorProcess
from support.tfjobs import children, condition, create_job, events_about, job_status, pods_by_name, replica
from support.waiting import DEADLINE, consistently, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.resource import PODS, SERVICES

REPO = Path(__file__).resolve().parents[2]
CRD_FILE = REPO / "crd" / "kubeflow.org_tfjobs.yaml"
# The jobs the Go operator starts: name -> (replica specs, pods).
JOBS: dict[str, tuple[dict[str, dict[str, Any]], int]] = {
    "mixed": ({"Chief": replica(), "Worker": replica(2), "PS": replica()}, 4),
    "workers": ({"Worker": replica(3)}, 3),
    # The Go operator recreates a replica on a retryable exit code only under ExitCode (its default is Never).
    "restarted": ({"Worker": replica(2, restart_policy="ExitCode"), "PS": replica()}, 3),
}


def uids(client: KubeClient, namespace: str, job: str) -> dict[str, str]:
    """kind/name -> uid of the job's pods and services."""
    return {f"{resource.kind}/{child['metadata']['name']}": child["metadata"]["uid"]
            for resource in (PODS, SERVICES) for child in children(client, resource, namespace, job)}


def all_running(client: KubeClient, namespace: str, job: str, count: int) -> dict[str, dict[str, Any]] | None:
    pods = pods_by_name(client, namespace, job)
    ok = len(pods) == count and all(pod.get("status", {}).get("phase") == "Running" for pod in pods.values())
    return pods if ok else None


def tf_config(pod: dict[str, Any]) -> dict[str, Any]:
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
    return dict(json.loads(next(e["value"] for e in container["env"] if e["name"] == "TF_CONFIG")))


def test_tfop_takes_over_the_go_operators_running_jobs(
        cluster: LocalCluster, kube_client: KubeClient, namespace: str, go_crd: Path,
        training_operator: tuple[Path, Path], tmp_path: Path) -> None:
    # 1. The Go operator runs the jobs; one of them has had a replica recreated (exit 137).
    go = GoOperatorProcess(training_operator[0], kube_client, cluster.kubeconfig, tmp_path / "go-operator.log",
                           [f"--namespace={namespace}"])
    go.start(timeout=300)
    try:
        for name, (specs, _) in JOBS.items():
            create_job(kube_client, namespace, name, **specs)
        for name, (_, count) in JOBS.items():
            wait_for(lambda n=name, c=count: all_running(kube_client, namespace, n, c), message=f"{name}'s pods to run")
        old = pods_by_name(kube_client, namespace, "restarted")["restarted-worker-1"]["metadata"]["uid"]
        exit_pod(kube_client, namespace, "restarted-worker-1", 137)
        wait_for(lambda: (pod := all_running(kube_client, namespace, "restarted", 3)) is not None
                 and pod["restarted-worker-1"]["metadata"]["uid"] != old,
                 message="the Go operator to recreate a replica")
        for name in JOBS:
            wait_for(lambda n=name: condition(kube_client, namespace, n, "Running"), DEADLINE, f"{name} Running (Go)")
    finally:
        go.stop()
    before = {name: uids(kube_client, namespace, name) for name in JOBS}
    go_status = {name: job_status(kube_client, namespace, name) for name in JOBS}

    # 2. The switch, as the docs say: tfop's CRD replaces the Go operator's, then tfop starts.
    replace_crd(cluster, CRD_FILE)
    started = time.monotonic()
    tfop = OperatorProcess(cluster.kubeconfig, tmp_path / "tfop.log", "--namespace", namespace).start()
    ready = time.monotonic() - started
    try:
        first_write: dict[str, float] = {}
        for name in JOBS:
            wait_for(lambda n=name: job_status(kube_client, namespace, n).get("childNaming"), DEADLINE,
                     f"tfop's first status write for {name}")
            first_write[name] = time.monotonic() - started
        for name in JOBS:  # written, and settled: nothing more to do
            wait_for(lambda n=name: job_status(kube_client, namespace, n).get("replicaSummary")
                     == f"{JOBS[n][1]}/{JOBS[n][1]}", DEADLINE, f"{name} to settle")
        settled_uids = {name: uids(kube_client, namespace, name) for name in JOBS}
        # A late, wrong create or delete would show within this.
        consistently(lambda: {name: uids(kube_client, namespace, name) for name in JOBS} == settled_uids, 2,
                     "the settled jobs' children unchanged")
        after = settled_uids
        recreated = sum(len(set(before[name].items()) ^ set(after[name].items())) for name in JOBS) // 2
        print(f"takeover: {len(JOBS)} jobs taken over, {recreated} pods/services recreated, first status write "
              + ", ".join(f"{name} {seconds:.2f}s" for name, seconds in first_write.items())
              + f" after tfop's start (ready after {ready:.2f}s)")
        assert after == before, "tfop must adopt the Go operator's children, not replace them"
        for name in JOBS:
            status = job_status(kube_client, namespace, name)
            assert status["childNaming"] == "TypeIndex"
            assert status["startTime"] == go_status[name]["startTime"]
            created = next(c for c in status["conditions"] if c["type"] == "Created")
            assert created == next(c for c in go_status[name]["conditions"] if c["type"] == "Created")
            running = next(c for c in status["conditions"] if c["type"] == "Running")
            assert (running["status"], running["reason"]) == ("True", "TFJobRunning")
            ours = [e for e in events_about(kube_client, namespace, name)
                    if e.get("reportingComponent") == "tfop" or e.get("source", {}).get("component") == "tfop"]
            assert ours == [], f"tfop announced something about {name} on taking it over: {ours}"

        # 3. A replica exiting 137 under tfop comes back under its Go name, found by the Go operator's Service.
        old_pod = pods_by_name(kube_client, namespace, "workers")["workers-worker-1"]
        exit_pod(kube_client, namespace, "workers-worker-1", 137)
        new_pod = wait_for(lambda: (pods := all_running(kube_client, namespace, "workers", 3)) is not None
                           and pods["workers-worker-1"]["metadata"]["uid"] != old_pod["metadata"]["uid"]
                           and pods["workers-worker-1"], DEADLINE, "worker 1 recreated by tfop")
        labels = new_pod["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "tfop"
        service = kube_client.get(SERVICES, "workers-worker-1", namespace)
        assert service["metadata"]["uid"] == before["workers"]["Service/workers-worker-1"]
        assert service["spec"]["selector"].items() <= labels.items(), "the Go operator's Service must select it"
        assert tf_config(new_pod)["cluster"] == tf_config(old_pod)["cluster"]
        assert tf_config(new_pod)["task"] == {"type": "worker", "index": 1}

        # 4. Each job finishes under tfop when its pods exit.
        for pod in ("mixed-chief-0", "workers-worker-0", "restarted-worker-0"):
            exit_pod(kube_client, namespace, pod, 0)
        for name in JOBS:
            wait_for(lambda n=name: condition(kube_client, namespace, n, "Succeeded"), DEADLINE, f"{name} to succeed")
    finally:
        tfop.terminate()
        print(f"--- tfop log ---\n{tfop.log_tail(60)}")
