"""The operator as a process against the real control plane (apiserver, controller-manager, scheduler, kwok):
children, TF_CONFIG, exit codes, garbage collection, crash recovery and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.operator_process import OperatorProcess
from support.tfjobs import (
    TFJOBS,
    children,
    condition,
    create_job,
    events_about,
    job_status,
    pods_by_name,
    replica,
)
from support.waiting import DEADLINE, wait_for, wait_for_count
from tfop.kube.client import KubeClient
from tfop.kube.resource import PODS, RESOURCE_QUOTAS, SERVICES


def test_distributed_job_gets_named_labelled_owned_children_with_tf_config(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    job = create_job(kube_client, namespace, "dist", Chief=replica(), Worker=replica(2), PS=replica(),
                     Evaluator=replica())
    rid = wait_for(lambda: job_status(kube_client, namespace, "dist").get("runtimeId"), message="runtimeId")
    pods = wait_for_count(lambda: pods_by_name(kube_client, namespace, "dist"), 5, message="pods")
    services = {s["metadata"]["name"]: s for s in wait_for_count(
        lambda: children(kube_client, SERVICES, namespace, "dist"), 5, message="services")}
    expected = [f"dist-chief-{rid}-0", f"dist-worker-{rid}-0", f"dist-worker-{rid}-1", f"dist-ps-{rid}-0",
                f"dist-evaluator-{rid}-0"]
    assert sorted(pods) == sorted(expected) == sorted(services)

    address = f"{{}}.{namespace}.svc:2222".format
    cluster_spec = {"chief": [address(f"dist-chief-{rid}-0")],
                    "worker": [address(f"dist-worker-{rid}-0"), address(f"dist-worker-{rid}-1")],
                    "ps": [address(f"dist-ps-{rid}-0")], "evaluator": [address(f"dist-evaluator-{rid}-0")]}
    for name, pod in pods.items():
        replica_type, index = name.split("-")[1], int(name.split("-")[-1])
        labels = pod["metadata"]["labels"]
        assert labels["training.kubeflow.org/job-name"] == "dist"
        assert labels["training.kubeflow.org/replica-type"] == replica_type
        assert labels["training.kubeflow.org/replica-index"] == str(index)
        assert labels["training.kubeflow.org/runtime-id"] == rid
        assert labels["training.kubeflow.org/operator-name"] == "tfjob-controller"
        assert labels["app.kubernetes.io/managed-by"] == "tfop"
        assert (labels.get("training.kubeflow.org/job-role") == "master") == (replica_type == "chief")
        [owner] = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "TFJob", "dist", job["metadata"]["uid"], True)
        assert pod["spec"]["restartPolicy"] == "Never"  # ExitCode: the operator decides about restarts
        container = pod["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        assert json.loads(env["TF_CONFIG"]) == {"cluster": cluster_spec, "environment": "cloud",
                                                "task": {"type": replica_type, "index": index}}
        assert {"name": "tfjob-port", "containerPort": 2222} .items() <= container["ports"][0].items()
        service = services[name]
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["selector"] == {k: v for k, v in labels.items() if k in (
            "training.kubeflow.org/job-name", "training.kubeflow.org/replica-type",
            "training.kubeflow.org/replica-index", "training.kubeflow.org/runtime-id")}
        assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("tfjob-port", 2222)]
    wait_for(lambda: condition(kube_client, namespace, "dist", "Running"), message="Running once kwok runs pods")
    # One event tells what was created; Created and Running are told by the conditions (and the log) only.
    created = wait_for(lambda: [e["message"] for e in events_about(kube_client, namespace, "dist")
                                if e["reason"] == "SuccessfulCreate"], message="the creation event")
    assert created == ["Created 5 pods and 5 services for Chief 0, Evaluator 0, PS 0, Worker 0-1"]
    assert not {"TFJobCreated", "TFJobRunning"} & {e["reason"] for e in events_about(kube_client, namespace, "dist")}


def test_exit_codes_succeed_fail_or_restart(kube_client: KubeClient, namespace: str,
                                            operator: OperatorProcess) -> None:
    for name in ("ok", "broken", "killed"):
        create_job(kube_client, namespace, name, Chief=replica())
    pods = {name: wait_for(lambda n=name: list(pods_by_name(kube_client, namespace, n)), message=f"{name} pod")[0]
            for name in ("ok", "broken", "killed")}
    wait_for(lambda: all(condition(kube_client, namespace, n, "Running") for n in pods), message="all Running")

    old_uid = kube_client.get(PODS, pods["killed"], namespace)["metadata"]["uid"]
    exit_pod(kube_client, namespace, pods["ok"], 0)
    exit_pod(kube_client, namespace, pods["broken"], 1)
    exit_pod(kube_client, namespace, pods["killed"], 137, reason="OOMKilled")

    wait_for(lambda: condition(kube_client, namespace, "ok", "Succeeded"), message="ok Succeeded")
    failed = wait_for(lambda: condition(kube_client, namespace, "broken", "Failed"), message="broken Failed")
    assert "Chief 0, which exited with code 1 (Error)" in failed["message"]
    # Events are sent asynchronously, after the status is written.
    wait_for(lambda: any(e["type"] == "Warning" and e["reason"] == failed["reason"]
                         for e in events_about(kube_client, namespace, "broken")), message="a Warning event for broken")

    recreated = wait_for(lambda: (p := pods_by_name(kube_client, namespace, "killed").get(pods["killed"]))
                         and p["metadata"]["uid"] != old_uid and p.get("status", {}).get("phase") == "Running"
                         and p, message="killed pod recreated and running")
    status = job_status(kube_client, namespace, "killed")
    assert status["replicaStatuses"]["Chief"]["restarts"] == 1
    assert not condition(kube_client, namespace, "killed", "Failed")
    wait_for(lambda: any(e["reason"] == "TFJobRestarting" and "137" in e["message"]
                         for e in events_about(kube_client, namespace, "killed")), message="a TFJobRestarting event")
    exit_pod(kube_client, namespace, recreated["metadata"]["name"], 0)
    wait_for(lambda: condition(kube_client, namespace, "killed", "Succeeded"), message="killed Succeeded at last")


def test_backoff_limit_counts_the_operators_recreations(kube_client: KubeClient, namespace: str,
                                                        operator: OperatorProcess) -> None:
    """The Go operator counts only in-place restarts, so an ExitCode job can restart forever."""
    create_job(kube_client, namespace, "flaky", run_policy={"backoffLimit": 1}, Worker=replica())
    for attempt in range(2):
        # The running pod, not the first listed: the one the last attempt ended may still be going.
        uid, name = wait_for(lambda: [(p["metadata"]["uid"], name) for name, p in
                                      pods_by_name(kube_client, namespace, "flaky").items()
                                      if p.get("status", {}).get("phase") == "Running"],
                             message=f"attempt {attempt}")[0]
        exit_pod(kube_client, namespace, name, 143)
        if attempt == 0:
            wait_for(lambda uid=uid: all(p["metadata"]["uid"] != uid for p in
                                         pods_by_name(kube_client, namespace, "flaky").values()),
                     message="recreation")
    failed = wait_for(lambda: condition(kube_client, namespace, "flaky", "Failed"), message="Failed")
    assert failed["reason"] == "BackoffLimitExceeded"


def test_deleting_the_job_removes_its_children_through_the_garbage_collector(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    create_job(kube_client, namespace, "gone", Worker=replica(3))
    wait_for(lambda: len(pods_by_name(kube_client, namespace, "gone")) == 3, message="3 pods")
    wait_for(lambda: len(children(kube_client, SERVICES, namespace, "gone")) == 3, message="3 services")
    kube_client.delete(TFJOBS, "gone", namespace)
    wait_for(lambda: not children(kube_client, PODS, namespace, "gone")
             and not children(kube_client, SERVICES, namespace, "gone"), timeout=180,
             message="children collected")  # the garbage collector's pace, slow when the machine is loaded


def test_killed_mid_creation_the_operator_resumes_without_duplicates(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, tmp_path: Path) -> None:
    log = tmp_path / "operator.log"
    # A slow client makes the kill land in the middle of creating the 50 replicas: 2 requests a second, a pod and a
    # Service each, leave some 40 s after the first pods for the kill, however slow the machine is to see them.
    slow = OperatorProcess(cluster.kubeconfig, log, "--namespace", namespace, "--qps", "2", "--burst", "1").start()
    create_job(kube_client, namespace, "big", Worker=replica(50))
    wait_for(lambda: len(pods_by_name(kube_client, namespace, "big")) >= 4, DEADLINE, "the first pods")
    slow.kill()
    created_before = len(pods_by_name(kube_client, namespace, "big"))
    assert created_before < 50, "the operator finished before it was killed; slow it down further"

    resumed = OperatorProcess(cluster.kubeconfig, log, "--namespace", namespace).start()
    try:
        pods = wait_for_count(lambda: pods_by_name(kube_client, namespace, "big"), 50, DEADLINE, "pods")
        wait_for(lambda: len(children(kube_client, SERVICES, namespace, "big")) == 50, message="50 services")
        rid = wait_for(lambda: job_status(kube_client, namespace, "big").get("runtimeId"), message="runtimeId")
        assert sorted(pods) == sorted(f"big-worker-{rid}-{i}" for i in range(50))
        assert not any(e["reason"].startswith("FailedCreate") for e in events_about(kube_client, namespace, "big"))
        wait_for(lambda: condition(kube_client, namespace, "big", "Running"), message="Running")
        # Without a chief, worker 0 decides; cleanPodPolicy Running then deletes the 49 still running.
        exit_pod(kube_client, namespace, f"big-worker-{rid}-0", 0)
        wait_for(lambda: condition(kube_client, namespace, "big", "Succeeded"), message="Succeeded")
        wait_for(lambda: list(pods_by_name(kube_client, namespace, "big")) == [f"big-worker-{rid}-0"],
                 message="only the finished worker left")
    finally:
        resumed.terminate()
        print(f"--- operator log ---\n{log.read_text()[-5000:]}")


def test_a_spec_that_slips_past_the_crd_fails_alone(kube_client: KubeClient, namespace: str,
                                                    operator: OperatorProcess) -> None:
    # The CRD's pod schema has no range for containerPort; the operator's validation does.
    create_job(kube_client, namespace, "bad", Worker=replica(2, ports=[{"name": "tfjob-port",
                                                                         "containerPort": 70000}]))
    create_job(kube_client, namespace, "good", Worker=replica(2))
    failed = wait_for(lambda: condition(kube_client, namespace, "bad", "Failed"), message="bad Failed")
    assert failed["reason"] == "InvalidSpec" and "containerPort" in failed["message"]
    wait_for(lambda: any(e["type"] == "Warning" and e["reason"] == "InvalidSpec" and "containerPort" in e["message"]
                         for e in events_about(kube_client, namespace, "bad")), message="an InvalidSpec Warning event")
    assert not pods_by_name(kube_client, namespace, "bad")
    wait_for(lambda: condition(kube_client, namespace, "good", "Running"), message="good Running")
    assert operator.process is not None and operator.process.poll() is None


def test_a_template_the_apiserver_refuses_fails_the_job_and_a_quota_only_delays_it(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    """The refusal rules: 422 from the apiserver is the template's fault, final until the spec is edited;
    `exceeded quota` is the cluster's "not now", retried and told in the Running condition."""
    create_job(kube_client, namespace, "refused", Chief=replica(), Worker=replica(2, env=[{"name": "1=BAD",
                                                                                          "value": "x"}]))
    failed = wait_for(lambda: condition(kube_client, namespace, "refused", "Failed"), message="refused Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "the apiserver refused the pod of Worker 0" in failed["message"] and "env[0].name" in failed["message"]
    wait_for(lambda: not pods_by_name(kube_client, namespace, "refused"),
             message="the chief's pod, made before the refusal, cleaned up")

    kube_client.create(RESOURCE_QUOTAS, {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "1"}}}, namespace)
    wait_for(lambda: kube_client.get(RESOURCE_QUOTAS, "pods", namespace).get("status", {}).get("hard"),
             message="the quota controller to take up the quota")
    create_job(kube_client, namespace, "quota", Worker=replica(2))

    def running_condition() -> dict[str, Any]:
        return next((c for c in job_status(kube_client, namespace, "quota").get("conditions", [])
                     if c["type"] == "Running"), {})

    running = wait_for(lambda: "exceeded quota" in running_condition().get("message", "") and running_condition(),
                       message="the quota named in Running")
    # Worker 1 is refused, or worker 0 too while the quota still counts the refused job's deleted chief.
    assert running["status"] == "False" and "the apiserver refused the pod of Worker" in running["message"]
    assert condition(kube_client, namespace, "quota", "Failed") is None
    kube_client.delete(RESOURCE_QUOTAS, "pods", namespace)
    wait_for(lambda: condition(kube_client, namespace, "quota", "Running"), timeout=DEADLINE,
             message="quota Running once the quota is gone (retried with backoff)")
