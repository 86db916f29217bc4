"""The caches hold one copy of a text many objects repeat (cache_transforms: an owner's uid and name, a name a pod
and its Service share, a timestamp), and one copy of the parts that repeat whole (an owner reference, labels, a
node, a status, a job's spec), however many times the apiserver sent them; long texts are not interned."""

from __future__ import annotations

import json
import sys
from typing import Any

from tfop.controller.cache_transforms import slim_job, slim_metadata, slim_pod
from tfop.kube.shared_values import SHARED_TEXT_MAX

JOB_UID = "752a988e-99c5-41a0-a299-8bf33c8bebd7"


def child(kind: str, name: str, message: str = "") -> dict[str, Any]:
    """As json.loads gives it: every string a fresh object."""
    loaded: dict[str, Any] = json.loads(json.dumps({
        "apiVersion": "v1", "kind": kind,
        "metadata": {"name": name, "namespace": "team", "uid": f"{kind}-{name}", "resourceVersion": "7",
                     "creationTimestamp": "2026-11-25T00:57:28Z", "managedFields": [{"manager": "tfop"}],
                     "labels": {"training.kubeflow.org/job-name": "mnist"},
                     "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                                          "uid": JOB_UID, "controller": True}]},
        "status": {"phase": "Succeeded", "message": message, "containerStatuses": [
            {"name": "tensorflow", "restartCount": 0, "state": {"terminated": {
                "exitCode": 0, "reason": "Completed", "finishedAt": "2026-11-25T01:00:32Z"}}}]}}))
    return loaded


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
    assert first["ownerReferences"] is second["ownerReferences"] is service["metadata"]["ownerReferences"]
    assert pods[0]["metadata"]["labels"] is service["metadata"]["labels"]
    assert pods[0]["status"] is pods[1]["status"]
    assert first is not second and first["uid"] != second["uid"]


def test_parts_that_differ_are_not_shared() -> None:
    pod = slim_pod(child("Pod", "mnist-worker-x7k2-0"))
    failed = child("Pod", "mnist-worker-x7k2-1")
    failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = 1
    other = slim_pod(failed)
    assert other["status"] is not pod["status"]
    assert other["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


def test_true_is_not_shared_with_one() -> None:
    """Equal in Python, not in JSON: an owner reference with `"controller": 1` is not the one with `true`."""
    pod = slim_pod(child("Pod", "mnist-worker-x7k2-0"))
    odd = child("Pod", "mnist-worker-x7k2-1")
    odd["metadata"]["ownerReferences"][0]["controller"] = 1
    other = slim_pod(odd)
    assert json.dumps(other["metadata"]["ownerReferences"][0]["controller"]) == "1"
    assert json.dumps(pod["metadata"]["ownerReferences"][0]["controller"]) == "true"


def test_jobs_from_one_manifest_share_their_spec_and_long_texts_are_not_interned() -> None:
    long_message = "x" * (SHARED_TEXT_MAX + 1)

    def job() -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(json.dumps({
            "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "mnist", "uid": JOB_UID},
            "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0"}]}}}}},
            "status": {"conditions": [{"type": "Succeeded", "status": "True", "message": long_message}]}}))
        return loaded

    one, other = slim_job(job()), slim_job(job())
    image = [j["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
             for j in (one, other)]
    assert image[0] is image[1]
    assert one["metadata"]["uid"] is other["metadata"]["uid"]
    assert one["spec"] is other["spec"]
    assert one["status"] is other["status"]  # equal, so one object, long message and all
    assert one["metadata"] is not other["metadata"]
    assert sys.intern(long_message) is not one["status"]["conditions"][0]["message"]
    assert one == job()  # the same content


def test_of_a_pod_s_annotations_only_the_tf_cluster_key_is_kept_and_shared() -> None:
    pods = [child("Pod", f"mnist-worker-x7k2-{i}") for i in range(2)]
    for pod in pods:
        pod["metadata"]["annotations"] = {"tfop.kubeflow.org/tf-cluster": "Worker=2,PS=1", "team/notes": "x" * 500}
    first, second = (slim_pod(pod)["metadata"] for pod in pods)
    assert first["annotations"] == {"tfop.kubeflow.org/tf-cluster": "Worker=2,PS=1"}
    assert first["annotations"] is second["annotations"]
    assert "annotations" not in slim_pod(child("Pod", "made-by-an-earlier-tfop"))["metadata"]
