"""What the pods suffer, told on the TFJob, against the real scheduler and kwok: a request no node fits, an image
that cannot be pulled (kwok leaves such pods waiting: hack/localcluster/kwok-stages.yaml)."""

from __future__ import annotations

from typing import Any

from support.operator_process import OperatorProcess
from support.tfjobs import IMAGE, create_job, events_about, job_status
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
