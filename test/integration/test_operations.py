"""Running tfop the way a cluster runs it: two replicas with leader election, probes, metrics."""

from __future__ import annotations

import re
from pathlib import Path

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.http import http_get
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, condition, events_about, pods_by_name, replica, tfjob
from support.waiting import DEADLINE, wait_for, wait_for_count
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.reconciler import TFJobController
from tfop.health import Checks, EndpointServer
from tfop.kube.client import KubeClient
from tfop.kube.events import EventRecorder
from tfop.kueue_startup import settle_kueue_integration


def metric(process: OperatorProcess, metric_name: str, **labels: str) -> float | None:
    """The value of one sample on the process's /metrics, or None if it is not there."""
    status, text = process.get("/metrics")
    if status != 200:
        return None
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        sample, _, value = line.rpartition(" ")
        sample_name, _, sample_labels = sample.partition("{")
        present = dict(re.findall(r'(\w+)="([^"]*)"', sample_labels))
        if sample_name == metric_name and all(present.get(k) == v for k, v in labels.items()):
            return float(value)
    return None


def job_pods(client: KubeClient, namespace: str, job: str) -> dict[str, str]:
    """name -> uid of the job's pods that are not being deleted."""
    return {name: pod["metadata"]["uid"] for name, pod in pods_by_name(client, namespace, job).items()}


def test_two_replicas_one_leads_and_a_sigterm_hands_over_without_duplicates(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, tmp_path: Path) -> None:
    args = ("--namespace", namespace, "--leader-elect", "--leader-elect-namespace", namespace)
    first = OperatorProcess(cluster.kubeconfig, tmp_path / "first.log", *args).start()
    second = OperatorProcess(cluster.kubeconfig, tmp_path / "second.log", *args).start()
    try:
        leader, standby = wait_for(lambda: next(((a, b) for a, b in ((first, second), (second, first))
                                                 if metric(a, "tf_operator_is_leader") == 1), None),
                                   message="a leader")
        assert metric(standby, "tf_operator_is_leader") == 0
        assert standby.get("/readyz")[0] == 200, "a standby with synced caches is ready"

        kube_client.create(TFJOBS, tfjob("ha", Worker=replica(3, image="tf")), namespace)
        pods = wait_for_count(lambda: job_pods(kube_client, namespace, "ha"), 3, message="pods")

        assert leader.terminate() == 0
        wait_for(lambda: metric(standby, "tf_operator_is_leader") == 1, timeout=DEADLINE,
                 message="the standby to lead (the lease is released on SIGTERM)")
        # A retryable exit (SIGKILL) is restarted by the new leader; then worker 0 decides the job (without a
        # chief), and the other workers' pods are cleaned up.
        killed = next(name for name in pods if name.endswith("-1"))
        exit_pod(kube_client, namespace, killed, 137)
        wait_for(lambda: job_pods(kube_client, namespace, "ha").get(killed, pods[killed]) != pods[killed],
                 message="the killed worker to be recreated")
        exit_pod(kube_client, namespace, next(name for name in pods if name.endswith("-0")), 0)
        wait_for(lambda: condition(kube_client, namespace, "ha", "Succeeded"),
                 message="the new leader to finish the job")
        # Nothing created twice: what is left (cleanPodPolicy removed the rest) is the first leader's worker 0.
        assert list(job_pods(kube_client, namespace, "ha").items()) == [
            (name, uid) for name, uid in pods.items() if name.endswith("-0")]
        assert not [e for e in events_about(kube_client, namespace, "ha") if e["reason"].startswith("FailedCreate")]

        # /metrics of the leader after a job ran: the names dashboards know, with values that add up.
        tensorflow = {"job_namespace": namespace, "framework": "tensorflow"}  # the training operator's labels
        for name, labels, expected in (
                ("training_operator_jobs_successful_total", tensorflow, 1.0),
                ("tf_operator_is_leader", {}, 1.0),
                ("leader_election_master_status", {"name": "tfop-leader"}, 1.0),
                ("tf_operator_job_duration_seconds_count", {"outcome": "succeeded"}, 1.0),
                ("tf_operator_restarts_total", {"job_namespace": namespace, "exit_class": "retryable"}, 1.0),
                ("training_operator_jobs_restarted_total", tensorflow, 1.0),
                ("tf_operator_pods_created_total", {"job_namespace": namespace}, 1.0)):  # the recreated one
            # Counted once the status that announces it is stored, so just after the condition is seen.
            wait_for(lambda n=name, ls=labels, e=expected: metric(standby, n, **ls) == e, timeout=DEADLINE,
                     message=f"{name}{labels} to be {expected}")
        for name, labels in (("workqueue_adds_total", {"name": "tfjob"}),
                             ("controller_runtime_reconcile_total", {"controller": "tfjob", "result": "success"}),
                             ("rest_client_requests_total", {"method": "PUT"}),
                             ("controller_runtime_reconcile_time_seconds_count", {"controller": "tfjob"}),
                             ("workqueue_work_duration_seconds_count", {"name": "tfjob"}),
                             ("rest_client_request_duration_seconds_count", {"verb": "POST"}),
                             ("tf_operator_pods_deleted_total", {"job_namespace": namespace}),
                             ("process_cpu_seconds_total", {}), ("process_resident_memory_bytes", {})):
            value = metric(standby, name, **labels)
            assert value is not None and value > 0, name
    finally:
        for process in (first, second):
            process.terminate()
        print(f"--- first ---\n{first.log_tail(30)}\n--- second ---\n{second.log_tail(30)}")


def test_healthz_fails_when_an_informer_dies_and_readyz_follows_the_caches(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str) -> None:
    recorder = EventRecorder(kube_client, "tfop-test")
    # Settled as the operator settles it at start: this cluster has no Kueue, so no Workload informer waits on it.
    config = settle_kueue_integration(kube_client, ControllerConfig(), [namespace])
    controller = TFJobController(kube_client, recorder, config=config, namespaces=[namespace])
    liveness, readiness = Checks(), Checks()
    liveness.add("controller", controller.health_problem)
    readiness.add("caches", controller.readiness_problem)
    server = EndpointServer("127.0.0.1:0", liveness=liveness, readiness=readiness)
    server.start()

    def get(path: str) -> tuple[int, str]:
        return http_get(f"http://127.0.0.1:{server.port}{path}")

    try:
        status, body = get("/readyz")
        assert status == 500 and "caches not synced" in body
        assert get("/healthz") == (200, "ok\n")  # starting, not dead: the endpoints answer before the informers run
        controller.start_informers()
        controller.start_workers()
        assert controller.wait_for_sync(timeout=DEADLINE)
        assert get("/readyz") == (200, "ok\n") and get("/healthz") == (200, "ok\n")

        next(i for i in controller.runtime.informers if i.resource.plural == "services").stop()  # as if it died
        status, body = get("/healthz")
        assert status == 500 and f"informer services ({namespace}) is not running" in body
    finally:
        controller.stop(drain_timeout=5)
        server.stop()
