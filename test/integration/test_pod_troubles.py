"""What the pods suffer, told on the TFJob, against the real scheduler and kwok: a request no node fits, an image
that cannot be pulled (kwok leaves such pods waiting: hack/localcluster/kwok-stages.yaml); and the bound on
waiting for a PriorityClass or a scheduler the cluster lacks."""

from __future__ import annotations

from typing import Any

from support.operator_process import OperatorProcess
from support.tfjobs import IMAGE, TFJOBS, condition, create_job, events_about, job_status, pods_by_name, tfjob
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient


def running_message(client: KubeClient, namespace: str, name: str) -> str:
    for entry in job_status(client, namespace, name).get("conditions", []):
        if entry["type"] == "Running":
            return str(entry.get("message", ""))
    return ""


def workers(count: int, **template: Any) -> dict[str, Any]:
    container = {"name": "tensorflow", "image": IMAGE, **template.pop("container", {})}
    return {"replicas": count, "template": {**template, "spec": {"containers": [container]}}}


def told(client: KubeClient, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
    return [event for event in events_about(client, namespace, name) if event["reason"] == reason]


def test_unschedulable_replicas_are_told_once_with_the_schedulers_words(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    create_job(kube_client, namespace, "nogpu", Worker=workers(
        5, container={"resources": {"limits": {"nvidia.com/gpu": 16}}}))  # kwok nodes have 8 each
    wait_for(lambda: "Worker 0-4 [Unschedulable]" in running_message(kube_client, namespace, "nogpu"), DEADLINE,
             "the five unschedulable workers in the Running condition")
    message = running_message(kube_client, namespace, "nogpu")
    assert "Insufficient nvidia.com/gpu" in message, message
    [event] = wait_for(lambda: told(kube_client, namespace, "nogpu", "Unschedulable"), DEADLINE, "the event")
    assert event["type"] == "Warning" and "Insufficient nvidia.com/gpu" in event["message"]
    assert event.get("count", 1) == 1, "one event for all the workers"


def test_an_image_that_cannot_be_pulled_is_told_on_the_job(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    create_job(kube_client, namespace, "nopull", Worker=workers(
        3, metadata={"annotations": {"tfop.test/waiting-reason": "ImagePullBackOff"}}))
    wait_for(lambda: "Worker 0-2 [ImagePullBackOff]" in running_message(kube_client, namespace, "nopull"), DEADLINE,
             "the workers' image pull failure in the Running condition")
    assert f'Back-off pulling image "{IMAGE}"' in running_message(kube_client, namespace, "nopull")
    [event] = wait_for(lambda: told(kube_client, namespace, "nopull", "ImagePullBackOff"), DEADLINE, "the event")
    assert event["type"] == "Warning" and event.get("count", 1) == 1


def waits_then_fails(client: KubeClient, namespace: str, name: str, missing: str, reason: str) -> None:
    """The job says what it lacks and when it gives up, then fails with `reason`, naming it."""
    wait_for(lambda: missing in running_message(client, namespace, name) and "the job fails at" in
             running_message(client, namespace, name), DEADLINE, f"the Running condition telling {missing}")
    failed = wait_for(lambda: condition(client, namespace, name, "Failed"), DEADLINE, "the job to fail")
    assert failed["reason"] == reason, failed
    assert missing.lower() in failed["message"].lower(), failed["message"]
    assert "longer than its unknown-scheduling grace of 30s" in failed["message"], failed["message"]


def with_grace(job: dict[str, Any], seconds: int) -> dict[str, Any]:
    job["metadata"]["annotations"] = {"tfop.kubeflow.org/unknown-scheduling-grace-seconds": str(seconds)}
    return job


def test_a_missing_priority_class_fails_the_job_after_its_grace(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    """Admission refuses every pod (403, `no PriorityClass with name ...`): without a bound the job would wait
    for ever."""
    job = tfjob("noclass", Worker=workers(2))
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "tfop-test-missing"
    kube_client.create(TFJOBS, with_grace(job, 30), namespace)
    waits_then_fails(kube_client, namespace, "noclass", 'The PriorityClass "tfop-test-missing"',
                     "PriorityClassNotFound")
    assert pods_by_name(kube_client, namespace, "noclass") == {}


def test_a_scheduler_that_never_takes_the_pods_fails_the_job_after_its_grace(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    """No scheduler runs under the name the template gives, so the pods stay Pending with no node and no
    PodScheduled condition; the failed job's pending pods are cleaned up (cleanPodPolicy Running). The grace is
    well over the 10 s a pod waits before its wait is told and the 5 s a status write that only moves a message
    may be held back, so the Running condition is seen saying it."""
    job = tfjob("nosched", Worker=workers(2))
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "tfop-test-no-scheduler"
    kube_client.create(TFJOBS, with_grace(job, 30), namespace)
    wait_for(lambda: len(pods_by_name(kube_client, namespace, "nosched")) == 2, DEADLINE, "the two pods")
    waits_then_fails(kube_client, namespace, "nosched", 'No scheduler named "tfop-test-no-scheduler"',
                     "SchedulerNotFound")
    wait_for(lambda: pods_by_name(kube_client, namespace, "nosched") == {}, DEADLINE, "the pending pods deleted")
