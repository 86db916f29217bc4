"""The same exit-code scenarios against both replica backends, with the real Job controller (kube-controller-
manager) replacing the Job backend's pods: what a replica's exit means for the job must not depend on whether a
Pod or a Job makes it."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod, restart_in_place, terminated_status
from localcluster import LocalCluster
from support.operator_process import OperatorProcess
from support.tfjobs import children, condition, create_job, events_about, job_status, pods_by_name, replica
from support.waiting import DEADLINE, wait_for, wait_for_count
from tfop.kube.client import KubeClient
from tfop.kube.resource import CONFIGMAPS, JOBS, PODS, SERVICES

# The Job controller waits 10 s before replacing a failed pod, and twice as long after each further failure: the
# one or two replacements a test waits for are well within the suite's deadline.
REPLACEMENT_TIMEOUT = DEADLINE




@dataclass(frozen=True)
class Scenario:
    """One Chief replica under `policy` whose container ends with `exit_code` (in place: restarted by the
    kubelet), and what becomes of the job: Succeeded, Failed (with `message`), or restarted once."""

    name: str
    policy: str
    exit_code: int
    outcome: str  # Succeeded | Failed | Restarted
    message: str = ""
    reason: str | None = None
    in_place: bool = False


SCENARIOS = [
    Scenario("exitcode-0", "ExitCode", 0, "Succeeded"),
    Scenario("exitcode-1", "ExitCode", 1, "Failed", "Chief 0, which exited with code 1 (Error)"),
    Scenario("exitcode-137", "ExitCode", 137, "Restarted", reason="OOMKilled"),
    Scenario("never-0", "Never", 0, "Succeeded"),
    Scenario("never-137", "Never", 137, "Failed", "Chief 0, which exited with code 137 (Error)"),
    Scenario("onfailure-0", "OnFailure", 0, "Succeeded"),
    Scenario("onfailure-1", "OnFailure", 1, "Restarted", in_place=True),
    Scenario("always-137", "Always", 137, "Restarted", in_place=True),
]


def the_pod(client: KubeClient, namespace: str, job: str) -> dict[str, Any] | None:
    """The job's one running pod, whatever made it (the Job backend's pods have generated names)."""
    running = [pod for pod in pods_by_name(client, namespace, job).values()
               if pod.get("status", {}).get("phase") == "Running"]
    return running[0] if len(running) == 1 else None


def test_exit_codes_per_restart_policy(backend: str, kube_client: KubeClient, namespace: str) -> None:
    for scenario in SCENARIOS:
        create_job(kube_client, namespace, scenario.name, Chief=replica(restart_policy=scenario.policy))
    first = {s.name: wait_for(lambda s=s: the_pod(kube_client, namespace, s.name), DEADLINE, f"{s.name} running")
             for s in SCENARIOS}
    for scenario in SCENARIOS:
        wait_for(lambda s=scenario: condition(kube_client, namespace, s.name, "Running"), DEADLINE,
                 f"{scenario.name} Running")
    assert job_status(kube_client, namespace, SCENARIOS[0].name)["replicaBackend"] == backend
    made = {pod["metadata"]["ownerReferences"][0]["kind"] for pod in first.values()}
    assert made == {"TFJob" if backend == "pods" else "Job"}
    if backend == "jobs":
        job = children(kube_client, JOBS, namespace, "never-0")[0]
        assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
        assert job["spec"]["backoffLimit"] == 0

    for scenario in SCENARIOS:
        name = first[scenario.name]["metadata"]["name"]
        if scenario.in_place:
            restart_in_place(kube_client, namespace, name, scenario.exit_code, restart_count=1)
        else:
            exit_pod(kube_client, namespace, name, scenario.exit_code, reason=scenario.reason)

    for scenario in SCENARIOS:
        if scenario.outcome == "Restarted":
            old = first[scenario.name]["metadata"]["uid"]
            if not scenario.in_place:
                wait_for(lambda s=scenario, old=old: (pod := the_pod(kube_client, namespace, s.name))
                         and pod["metadata"]["uid"] != old, REPLACEMENT_TIMEOUT, f"{scenario.name} replaced")
            wait_for(lambda s=scenario: job_status(kube_client, namespace, s.name).get("replicaStatuses", {})
                     .get("Chief", {}).get("restarts") == 1, DEADLINE, f"{scenario.name} restart counted")
            wait_for(lambda s=scenario: any(e["reason"] == "TFJobRestarting" for e in
                                            events_about(kube_client, namespace, s.name)),
                     message=f"{scenario.name} TFJobRestarting event")
            assert not condition(kube_client, namespace, scenario.name, "Failed")
        else:
            reached = wait_for(lambda s=scenario: condition(kube_client, namespace, s.name, s.outcome), DEADLINE,
                               f"{scenario.name} {scenario.outcome}")
            assert scenario.message in reached["message"], scenario.name
    # A restarted replica runs on to success.
    exit_pod(kube_client, namespace, wait_for(lambda: the_pod(kube_client, namespace, "exitcode-137"), DEADLINE,
                                              "exitcode-137 running")["metadata"]["name"], 0)
    wait_for(lambda: condition(kube_client, namespace, "exitcode-137", "Succeeded"), DEADLINE, "exitcode-137 Succeeded")


def test_backoff_limit_is_the_whole_jobs_budget(backend: str, kube_client: KubeClient, namespace: str) -> None:
    create_job(kube_client, namespace, "flaky", run_policy={"backoffLimit": 1}, Worker=replica(2))
    seen: set[str] = set()
    for worker in ("0", "1"):  # one retryable failure per worker: two restarts, one more than the budget
        pod = wait_for(lambda w=worker: next(
            (p for p in pods_by_name(kube_client, namespace, "flaky").values()
             if p["metadata"]["labels"]["training.kubeflow.org/replica-index"] == w
             and p.get("status", {}).get("phase") == "Running" and p["metadata"]["uid"] not in seen), None),
            REPLACEMENT_TIMEOUT, f"worker {worker} running")
        seen.add(pod["metadata"]["uid"])
        exit_pod(kube_client, namespace, pod["metadata"]["name"], 143)
    failed = wait_for(lambda: condition(kube_client, namespace, "flaky", "Failed"), REPLACEMENT_TIMEOUT, "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert "restarted 2 times, more than its backoffLimit of 1" in failed["message"]


def evict(client: KubeClient, namespace: str, name: str) -> None:
    """What the kubelet does to a pod it evicts for node pressure: Failed, reason Evicted, DisruptionTarget."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    client.patch_status(PODS, name, {"status": {
        "phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory.",
        "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                        "lastTransitionTime": now}]}}, namespace)


def test_an_eviction_is_replaced_and_not_counted(backend: str, kube_client: KubeClient, namespace: str) -> None:
    create_job(kube_client, namespace, "evicted", run_policy={"backoffLimit": 0}, Worker=replica())
    pod = wait_for(lambda: the_pod(kube_client, namespace, "evicted"), DEADLINE, "running")
    evict(kube_client, namespace, pod["metadata"]["name"])
    wait_for(lambda: (new := the_pod(kube_client, namespace, "evicted")) and new["metadata"]["uid"]
             != pod["metadata"]["uid"], REPLACEMENT_TIMEOUT, "the evicted replica replaced")
    wait_for(lambda: condition(kube_client, namespace, "evicted", "Running"), DEADLINE, "Running again")
    status = job_status(kube_client, namespace, "evicted")
    assert status["replicaStatuses"]["Worker"]["restarts"] == 0
    assert not condition(kube_client, namespace, "evicted", "Failed")


def disrupt(client: KubeClient, namespace: str, name: str, exit_code: int, reason: str, message: str) -> None:
    """What a drain or a preemption leaves of a pod: the condition saying who took it, and a container that
    exited with `exit_code` when it was stopped (a training program may well exit 1 on SIGTERM)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    client.patch_status(PODS, name, {"status": {
        "phase": "Failed", "containerStatuses": [terminated_status(exit_code, "Error")],
        "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": reason, "message": message,
                        "lastTransitionTime": now}]}}, namespace)


def test_a_disruption_that_exited_1_is_replaced_uncounted_and_told(backend: str, kube_client: KubeClient,
                                                                   namespace: str) -> None:
    create_job(kube_client, namespace, "drained", run_policy={"backoffLimit": 0}, Worker=replica())
    pod = wait_for(lambda: the_pod(kube_client, namespace, "drained"), DEADLINE, "running")
    disrupt(kube_client, namespace, pod["metadata"]["name"], 1, "EvictionByEvictionAPI", "Eviction API: evicting")
    wait_for(lambda: (new := the_pod(kube_client, namespace, "drained")) and new["metadata"]["uid"]
             != pod["metadata"]["uid"], REPLACEMENT_TIMEOUT, "the disrupted replica replaced")
    wait_for(lambda: condition(kube_client, namespace, "drained", "Running"), DEADLINE, "Running again")
    assert job_status(kube_client, namespace, "drained")["replicaStatuses"]["Worker"]["restarts"] == 0
    assert not condition(kube_client, namespace, "drained", "Failed")
    wait_for(lambda: any(event["reason"] == "ReplicaDisrupted"
                         for event in events_about(kube_client, namespace, "drained")), DEADLINE, "ReplicaDisrupted")
    events = events_about(kube_client, namespace, "drained")
    told = {(event["type"], event["message"]) for event in events if event["reason"] == "ReplicaDisrupted"}
    said = (f"TFJob {namespace}/drained: Worker 0's pod was disrupted (EvictionByEvictionAPI: Eviction API: evicting); "
            "it is replaced.")
    assert told == {("Normal", said)}
    assert not any(event["reason"] == "TFJobRestarting" for event in events)
    # The status says which disruption too, with either backend.
    records = job_status(kube_client, namespace, "drained")["disruptions"]
    assert [(r["replica"], r["podUID"], r["reason"], r["source"], r["message"]) for r in records] == [
        ("Worker 0", pod["metadata"]["uid"], "EvictionByEvictionAPI", "DisruptionTarget", "Eviction API: evicting")]


@pytest.mark.parametrize("policy", ["OnFailure", "Always"])
def test_disruptions_past_the_budget_fail_no_job_without_a_pod_failure_policy(
        backend: str, policy: str, kube_client: KubeClient, namespace: str) -> None:
    """Under OnFailure and Always a replica's Job can have no podFailurePolicy (Kubernetes allows one only with the
    pod restartPolicy Never), so its Job controller counts a disrupted pod as failed: the Job's own backoffLimit
    must not be what ends the job. Two drains of a backoffLimit 0 job: replaced each time, never failed."""
    name = f"drained-{policy.lower()}"
    create_job(kube_client, namespace, name, run_policy={"backoffLimit": 0}, Worker=replica(restart_policy=policy))
    seen: set[str] = set()
    for _ in range(2):
        pod = wait_for(lambda: (found := the_pod(kube_client, namespace, name)) and found["metadata"]["uid"]
                       not in seen and found, REPLACEMENT_TIMEOUT, "a new pod running")
        seen.add(pod["metadata"]["uid"])
        disrupt(kube_client, namespace, pod["metadata"]["name"], 1, "EvictionByEvictionAPI", "Eviction API: evicting")
    wait_for(lambda: (found := the_pod(kube_client, namespace, name)) and found["metadata"]["uid"] not in seen,
             REPLACEMENT_TIMEOUT, "the twice-disrupted replica replaced")
    wait_for(lambda: condition(kube_client, namespace, name, "Running"), DEADLINE, "Running again")
    assert not condition(kube_client, namespace, name, "Failed")
    assert job_status(kube_client, namespace, name)["replicaStatuses"]["Worker"]["restarts"] == 0
    if backend == "jobs":
        [job] = children(kube_client, JOBS, namespace, name)
        assert "Failed" not in {c["type"] for c in job.get("status", {}).get("conditions", [])
                                if c.get("status") == "True"}


def test_with_tfop_stopped_the_job_controller_replaces_a_killed_replica(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, tmp_path: Path) -> None:
    log = tmp_path / "operator.log"
    first = OperatorProcess(cluster.kubeconfig, log, "--namespace", namespace, "--replica-backend", "jobs").start()
    try:
        create_job(kube_client, namespace, "alone", Worker=replica(2))
        wait_for(lambda: condition(kube_client, namespace, "alone", "Running"), DEADLINE, "Running")
    finally:
        first.terminate()
    killed = wait_for(lambda: next((p for n, p in pods_by_name(kube_client, namespace, "alone").items()
                                    if p["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "1"),
                                   None), message="worker 1's pod")
    exit_pod(kube_client, namespace, killed["metadata"]["name"], 137)
    # No operator runs: the Job controller alone brings worker 1 back.
    wait_for(lambda: any(p["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "1"
                         and p["metadata"]["uid"] != killed["metadata"]["uid"]
                         and p.get("status", {}).get("phase") == "Running"
                         for p in pods_by_name(kube_client, namespace, "alone").values()),
             REPLACEMENT_TIMEOUT, "worker 1 replaced by its Job")
    assert job_status(kube_client, namespace, "alone")["replicaStatuses"]["Worker"]["restarts"] == 0

    second = OperatorProcess(cluster.kubeconfig, log, "--namespace", namespace, "--replica-backend", "pods").start()
    try:
        # The status catches up; the job stays on Jobs though the operator's default is now Pods.
        wait_for(lambda: job_status(kube_client, namespace, "alone").get("replicaStatuses", {}).get(
            "Worker", {}).get("restarts") == 1, DEADLINE, "the restart counted")
        wait_for(lambda: condition(kube_client, namespace, "alone", "Running"), DEADLINE, "Running")
        status = job_status(kube_client, namespace, "alone")
        assert status["replicaBackend"] == "jobs"
        assert all(p["metadata"]["ownerReferences"][0]["kind"] == "Job"
                   for p in pods_by_name(kube_client, namespace, "alone").values())
        assert len(children(kube_client, JOBS, namespace, "alone")) == 2
    finally:
        second.terminate()
        print(f"--- operator log ---\n{log.read_text()[-5000:]}")


def test_jobs_carry_tf_config_and_the_default_ps_server(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, tmp_path: Path) -> None:
    """A Job's template is the pod the Pods backend would make: TF_CONFIG names the Services, and a PS without a
    tensorflow container gets the default gRPC server, whose script's ConfigMap tfop keeps in the namespace."""
    process = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace,
                              "--replica-backend", "jobs").start()
    try:
        create_job(kube_client, namespace, "dist", Chief=replica(), Worker=replica(2), PS={"replicas": 1})
        rid = wait_for(lambda: job_status(kube_client, namespace, "dist").get("runtimeId"), message="runtimeId")
        made = wait_for_count(lambda: children(kube_client, JOBS, namespace, "dist"), 4, message="Jobs")
        jobs = {j["metadata"]["name"]: j for j in made}
        names = [f"dist-chief-{rid}-0", f"dist-worker-{rid}-0", f"dist-worker-{rid}-1", f"dist-ps-{rid}-0"]
        assert sorted(jobs) == sorted(names)
        address = f"{{}}.{namespace}.svc:2222".format
        for job in jobs.values():
            [owner] = job["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["name"], owner["controller"]) == ("TFJob", "dist", True)
            assert (job["spec"]["completions"], job["spec"]["parallelism"]) == (1, 1)
            container = next(c for c in job["spec"]["template"]["spec"]["containers"] if c["name"] == "tensorflow")
            tf_config = json.loads(next(e["value"] for e in container["env"] if e["name"] == "TF_CONFIG"))
            assert tf_config["cluster"] == {"chief": [address(names[0])], "worker": [address(names[1]),
                                                                                     address(names[2])],
                                            "ps": [address(names[3])]}
        assert kube_client.get(CONFIGMAPS, "tfop-grpc-server", namespace)["data"]["grpc_tensorflow_server.py"]
        ps_job = jobs[names[3]]
        assert any(v.get("configMap", {}).get("name") == "tfop-grpc-server"
                   for v in ps_job["spec"]["template"]["spec"]["volumes"])
        wait_for(lambda: condition(kube_client, namespace, "dist", "Running"), DEADLINE, "Running")
        # Each replica's pod is the one its Service selects.
        for pod in pods_by_name(kube_client, namespace, "dist").values():
            labels = pod["metadata"]["labels"]
            service = kube_client.get(SERVICES, pod["metadata"]["name"].rsplit("-", 1)[0], namespace)
            assert service["spec"]["selector"].items() <= labels.items()
    finally:
        process.terminate()
        print(f"--- operator log ---\n{process.log_tail(60)}")
