"""The evaluator's final evaluation against the real control plane: when the chief succeeds, a running evaluator
is kept (the rest of the job cleaned up) until it ends or its grace runs out, and only then is the job Succeeded;
an evaluator that fails, or is cut short, is a Warning event, never a failed job. kwok's pods run no process, so the
evaluator "finishes" when the test ends its container (fake_kubelet.exit_pod); what the tests show is what a user
reads: `kubectl get tfjob`, the conditions and the events."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, children, condition, events_about, job_status, pods_by_name, replica, tfjob
from support.waiting import DEADLINE, consistently, wait_for
from tfop.api.timestamps import parse_time
from tfop.kube.client import KubeClient
from tfop.kube.resource import JOBS, SERVICES

GRACE = "tfop.kubeflow.org/evaluator-grace-seconds"


def create(client: KubeClient, namespace: str, name: str, annotations: dict[str, str]) -> dict[str, Any]:
    job = tfjob(name, Chief=replica(), Worker=replica(), Evaluator=replica())
    job["metadata"]["annotations"] = annotations
    return client.create(TFJOBS, job, namespace)


def pod_of(client: KubeClient, namespace: str, job: str, replica_type: str) -> dict[str, Any] | None:
    """The job's pod of `replica_type` (index 0), whatever made it, if it is there and not being deleted."""
    found = [pod for pod in pods_by_name(client, namespace, job).values()
             if pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] == replica_type]
    return found[0] if found else None


def all_running(client: KubeClient, namespace: str, job: str) -> bool:
    pods = pods_by_name(client, namespace, job).values()
    return len(pods) == 3 and all(pod.get("status", {}).get("phase") == "Running" for pod in pods)


def waiting(client: KubeClient, namespace: str, job: str) -> dict[str, Any] | None:
    """The Succeeded condition while the job waits for its evaluator."""
    return next((c for c in job_status(client, namespace, job).get("conditions", [])
                 if c["type"] == "Succeeded" and c["status"] == "False" and c["reason"] == "WaitingForEvaluator"),
                None)


def shown(cluster: LocalCluster, namespace: str, job: str, lines: list[str]) -> None:
    """What `kubectl get` shows of the job and its pods now, kept for the test's output."""
    lines.append(cluster.kubectl("get", "tfjob", job, "-n", namespace, "-o", "wide").stdout.rstrip())
    lines.append(cluster.kubectl("get", "pods", "-n", namespace, "-l", f"training.kubeflow.org/job-name={job}",
                                 "--no-headers", "-o", "custom-columns=POD:.metadata.name,PHASE:.status.phase,"
                                 "DELETING:.metadata.deletionTimestamp").stdout.rstrip())


def messages(client: KubeClient, namespace: str, job: str) -> list[str]:
    """The job's conditions as `kubectl describe` lists them."""
    return [f"{c['type']}={c['status']} {c['reason']}: {c['message']}"
            for c in job_status(client, namespace, job).get("conditions", [])]


def told(client: KubeClient, namespace: str, job: str) -> list[str]:
    """The job's events in the order they were first told, as `kubectl describe` lists them."""
    events = sorted(events_about(client, namespace, job), key=lambda e: (
        e.get("firstTimestamp") or e.get("eventTime") or "", e["metadata"]["creationTimestamp"]))
    return [f"{e['type']} {e['reason']}: {e['message']}" for e in events]


def test_a_running_evaluator_finishes_before_the_job_succeeds(
        cluster: LocalCluster, kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    create(kube_client, namespace, "eval", {GRACE: "120"})
    wait_for(lambda: all_running(kube_client, namespace, "eval"), DEADLINE, "3 pods running")
    chief = pod_of(kube_client, namespace, "eval", "chief")
    evaluator = pod_of(kube_client, namespace, "eval", "evaluator")
    assert chief is not None and evaluator is not None
    exit_pod(kube_client, namespace, chief["metadata"]["name"], 0)

    lines: list[str] = []
    wait_for(lambda: waiting(kube_client, namespace, "eval"), DEADLINE, "the job to wait for its evaluator")
    wait_for(lambda: pod_of(kube_client, namespace, "eval", "worker") is None, DEADLINE, "the worker cleaned up")
    shown(cluster, namespace, "eval", lines)
    lines += messages(kube_client, namespace, "eval")
    status = job_status(kube_client, namespace, "eval")
    assert (status["state"], status["reason"], status["replicaSummary"]) == (
        "Running", "WaitingForEvaluator", "1/3 succeeded, 1 evaluating")
    running = condition(kube_client, namespace, "eval", "Running")
    assert running is not None and running["reason"] == "WaitingForEvaluator"
    assert running["message"].startswith(f"TFJob {namespace}/eval: the training succeeded; waiting up to 120s, until ")
    assert running["message"].endswith(", for Evaluator 0's final evaluation.")
    # The evaluator, its service and nothing else of the job's are kept while it evaluates.
    consistently(lambda: (pod_of(kube_client, namespace, "eval", "evaluator") or {}).get("metadata", {}).get("uid")
                 == evaluator["metadata"]["uid"] and not condition(kube_client, namespace, "eval", "Succeeded"),
                 3, "the evaluator kept, the job not yet Succeeded")
    services = {s["metadata"]["labels"]["training.kubeflow.org/replica-type"]
                for s in children(kube_client, SERVICES, namespace, "eval")}
    assert services == {"chief", "evaluator"}

    exit_pod(kube_client, namespace, evaluator["metadata"]["name"], 0)
    succeeded = wait_for(lambda: condition(kube_client, namespace, "eval", "Succeeded"), DEADLINE, "Succeeded")
    assert succeeded["reason"] == "TFJobSucceeded"
    shown(cluster, namespace, "eval", lines)
    lines += messages(kube_client, namespace, "eval")
    print("\n".join(lines))
    # cleanPodPolicy Running keeps the evaluator that finished, as it keeps the chief.
    assert (pod_of(kube_client, namespace, "eval", "evaluator") or {}).get("status", {}).get("phase") == "Succeeded"
    assert job_status(kube_client, namespace, "eval")["replicaSummary"] == "2/3 succeeded"
    # Events are sent after the status that announces them is stored.
    reasons = wait_for(lambda: (found := {e["reason"] for e in events_about(kube_client, namespace, "eval")}) >= {
        "WaitingForEvaluator", "TFJobSucceeded"} and found, DEADLINE, "the wait and the success told by events")
    assert not {"EvaluatorFailed", "EvaluatorGraceExpired"} & reasons
    print("\n".join(told(kube_client, namespace, "eval")))


def test_a_failed_final_evaluation_is_a_warning_and_the_job_succeeds(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    create(kube_client, namespace, "evalfail", {GRACE: "120"})
    wait_for(lambda: all_running(kube_client, namespace, "evalfail"), DEADLINE, "3 pods running")
    chief = pod_of(kube_client, namespace, "evalfail", "chief")
    evaluator = pod_of(kube_client, namespace, "evalfail", "evaluator")
    assert chief is not None and evaluator is not None
    exit_pod(kube_client, namespace, chief["metadata"]["name"], 0)
    wait_for(lambda: waiting(kube_client, namespace, "evalfail"), DEADLINE, "the job to wait for its evaluator")
    exit_pod(kube_client, namespace, evaluator["metadata"]["name"], 1)
    wait_for(lambda: condition(kube_client, namespace, "evalfail", "Succeeded"), DEADLINE, "Succeeded")
    assert not condition(kube_client, namespace, "evalfail", "Failed")
    warning = wait_for(lambda: [e for e in events_about(kube_client, namespace, "evalfail")
                                if e["reason"] == "EvaluatorFailed"], DEADLINE, "an EvaluatorFailed event")[0]
    assert warning["type"] == "Warning"
    assert warning["message"] == (f"TFJob {namespace}/evalfail: the final evaluation failed: Evaluator 0, which "
                                  "exited with code 1 (Error). The job succeeded: its training did.")


@pytest.fixture
def jobs_operator(cluster: LocalCluster, tfjob_crd: Path, namespace: str,
                  tmp_path: Path) -> Iterator[OperatorProcess]:
    """`tfop run --replica-backend jobs`, watching the test's namespace."""
    process = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace,
                              "--replica-backend", "jobs").start()
    yield process
    process.terminate()
    print(f"--- operator log ---\n{process.log_tail(60)}")


def test_the_grace_running_out_succeeds_the_job_and_cleans_up_the_evaluator_with_the_job_backend(
        cluster: LocalCluster, kube_client: KubeClient, namespace: str, jobs_operator: OperatorProcess) -> None:
    create(kube_client, namespace, "evalslow", {GRACE: "5"})
    wait_for(lambda: all_running(kube_client, namespace, "evalslow"), DEADLINE, "3 pods of Jobs running")
    chief = pod_of(kube_client, namespace, "evalslow", "chief")
    assert chief is not None
    exit_pod(kube_client, namespace, chief["metadata"]["name"], 0)
    lines: list[str] = []
    waited = wait_for(lambda: waiting(kube_client, namespace, "evalslow"), message="the job to wait for its evaluator")
    wait_for(lambda: {j["metadata"]["labels"]["training.kubeflow.org/replica-type"]
                      for j in children(kube_client, JOBS, namespace, "evalslow")} == {"chief", "evaluator"}, DEADLINE,
             "the worker's Job cleaned up, the evaluator's kept")
    shown(cluster, namespace, "evalslow", lines)
    # Nothing changes after this: only the requeue at the grace's end can finish the job.
    succeeded = wait_for(lambda: condition(kube_client, namespace, "evalslow", "Succeeded"), DEADLINE, "Succeeded")
    # The grace was waited out: it runs from the waiting condition's stamp, and both stamps are whole seconds.
    assert waited is not None and succeeded is not None
    began, ended = parse_time(waited["lastTransitionTime"]), parse_time(succeeded["lastTransitionTime"])
    assert began and ended and ended - began >= timedelta(seconds=5), (waited, succeeded)
    assert succeeded["reason"] == "TFJobSucceeded"
    lines += messages(kube_client, namespace, "evalslow")
    wait_for(lambda: "evaluator" not in {j["metadata"]["labels"]["training.kubeflow.org/replica-type"]
                                         for j in children(kube_client, JOBS, namespace, "evalslow")}, DEADLINE,
             "the evaluator's Job deleted by cleanPodPolicy Running")
    shown(cluster, namespace, "evalslow", lines)
    print("\n".join(lines))
    warning = wait_for(lambda: [e for e in events_about(kube_client, namespace, "evalslow")
                                if e["reason"] == "EvaluatorGraceExpired"], DEADLINE,
                       "an EvaluatorGraceExpired event")[0]
    assert warning["type"] == "Warning"
    assert warning["message"] == (f"TFJob {namespace}/evalslow: Evaluator 0 was still evaluating when the wait for "
                                  "its final evaluation ended; it is cleaned up as cleanPodPolicy says.")
    print("\n".join(told(kube_client, namespace, "evalslow")))
