"""The caches hold one copy of a text many objects repeat (cache_transforms: an owner's uid and name, a name a pod
and its Service share, a timestamp), however many times the apiserver sent it; long texts stay as they came."""

from __future__ import annotations

import json
from typing import Any

from tfop.controller.cache_transforms import SHARED_MAX, slim_job, slim_metadata, slim_pod

JOB_UID = "752a988e-99c5-41a0-a299-8bf33c8bebd7"


def child(kind: str, name: str, message: str = "") -> dict[str, Any]:
    """As json.loads gives it: every string a fresh object."""
    return json.loads(json.dumps({
        "apiVersion": "v1", "kind": kind,
        "metadata": {"name": name, "namespace": "team", "uid": f"{kind}-{name}", "resourceVersion": "7",
                     "creationTimestamp": "2026-11-25T00:57:28Z", "managedFields": [{"manager": "tfop"}],
                     "labels": {"training.kubeflow.org/job-name": "mnist"},
                     "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                                          "uid": JOB_UID, "controller": True}]},
        "status": {"phase": "Succeeded", "message": message, "containerStatuses": [
            {"name": "tensorflow", "restartCount": 0, "state": {"terminated": {
                "exitCode": 0, "reason": "Completed", "finishedAt": "2026-11-25T01:00:32Z"}}}]}}))


def test_children_share_their_owner_their_timestamps_and_a_pod_its_name_with_its_service() -> None:
    pods = [slim_pod(child("Pod", f"mnist-worker-x7k2-{i}")) for i in range(2)]
    service = slim_metadata(child("Service", "mnist-worker-x7k2-0"))
    first, second = (pod["metadata"] for pod in pods)
    assert first["ownerReferences"][0]["uid"] is second["ownerReferences"][0]["uid"] is \
        service["metadata"]["ownerReferences"][0]["uid"]
    assert first["ownerReferences"][0]["name"] is service["metadata"]["ownerReferences"][0]["name"]
    assert first["creationTimestamp"] is second["creationTimestamp"]
    assert first["name"] is service["metadata"]["name"]
    finished = [pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] for pod in pods]
    assert finished[0] is finished[1]
    assert "managedFields" not in first


def test_a_job_shares_its_texts_but_not_long_ones() -> None:
    long_message = "x" * (SHARED_MAX + 1)

    def job() -> dict[str, Any]:
        return json.loads(json.dumps({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "mnist", "uid": JOB_UID},
            "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0"}]}}}}},
            "status": {"conditions": [{"type": "Succeeded", "status": "True", "message": long_message}]}}))

    one, other = slim_job(job()), slim_job(job())
    image = [j["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
             for j in (one, other)]
    assert image[0] is image[1]
    assert one["metadata"]["uid"] is other["metadata"]["uid"]
    messages = [j["status"]["conditions"][0]["message"] for j in (one, other)]
    assert messages[0] == messages[1] and messages[0] is not messages[1]
    assert one == job()  # the same content
