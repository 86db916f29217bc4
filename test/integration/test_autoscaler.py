"""A job's HorizontalPodAutoscaler against the real apiserver and kube-controller-manager: made for a job whose
elasticPolicy has metrics, owned by it, following edits of the policy, deleted when the metrics go and while the job
is suspended; the HPA controller resolves the TFJob's scale subresource (the selector tfop writes included); and a
scale through the subresource moves the workers, outside the policy's bounds refused with the field's message."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster import LocalCluster
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, condition, events_about, job_status, replica, tfjob
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError, Conflict, NotFound
from tfop.kube.resource import Resource

HPAS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}


def hpa(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return client.get(HPAS, name, namespace)
    except NotFound:
        return None


def elastic(client: KubeClient, namespace: str, name: str, policy: dict[str, Any] | None) -> None:
    client.patch(TFJOBS, name, {"spec": {"elasticPolicy": policy}}, namespace)


def test_the_hpa_follows_the_elastic_policy_and_reads_the_scale(backend: str, kube_client: KubeClient,
                                                                namespace: str) -> None:
    job = tfjob("auto", Worker=replica(2), PS=replica())
    job["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 3, "metrics": [CPU]}
    uid = kube_client.create(TFJOBS, job, namespace)["metadata"]["uid"]
    made = wait_for(lambda: hpa(kube_client, namespace, "auto"), DEADLINE, "the job's HPA")
    [owner] = made["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("TFJob", "auto", uid, True)
    assert (made["spec"]["scaleTargetRef"], made["spec"]["minReplicas"], made["spec"]["maxReplicas"],
            made["spec"]["metrics"]) == ({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "auto"}, 1, 3,
                                         [CPU])

    # tfop writes the selector; the scale subresource reports it with the active workers.
    wait_for(lambda: condition(kube_client, namespace, "auto", "Running"), DEADLINE, "auto Running")
    rid = job_status(kube_client, namespace, "auto")["runtimeId"]
    selector = ("training.kubeflow.org/job-name=auto,training.kubeflow.org/replica-type=worker,"
                f"training.kubeflow.org/runtime-id={rid}")
    scale = kube_client.request("GET", TFJOBS.path(namespace, "auto", subresource="scale"))
    assert (scale["spec"], scale["status"]) == ({"replicas": 2}, {"replicas": 2, "selector": selector})
    # The HPA controller resolved the TFJob's scale: it knows the current workers (no metrics server here, so
    # it cannot compute a new count, which is not what this proves).
    wait_for(lambda: (hpa(kube_client, namespace, "auto") or {}).get("status", {}).get("currentReplicas") == 2,
             DEADLINE, "the HPA controller reading the TFJob's scale")
    able = next(c for c in hpa(kube_client, namespace, "auto")["status"]["conditions"]  # type: ignore[index]
                if c["type"] == "AbleToScale")
    assert able["status"] == "True", able

    # A scale within the bounds moves the workers; outside them it is refused with the field's message.
    kube_client.patch(TFJOBS, "auto", {"spec": {"replicas": 3}}, namespace, subresource="scale")
    assert kube_client.get(TFJOBS, "auto", namespace)["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3
    with pytest.raises(ApiError, match=r"spec\.elasticPolicy\.minReplicas and maxReplicas"):
        kube_client.patch(TFJOBS, "auto", {"spec": {"replicas": 4}}, namespace, subresource="scale")

    # The policy edited: the HPA follows; the metrics removed: deleted; back: made again; suspended: deleted.
    elastic(kube_client, namespace, "auto", {"minReplicas": 2, "maxReplicas": 5, "metrics": [CPU]})
    wait_for(lambda: ((hpa(kube_client, namespace, "auto") or {}).get("spec", {}).get("minReplicas"),
                      (hpa(kube_client, namespace, "auto") or {}).get("spec", {}).get("maxReplicas")) == (2, 5),
             DEADLINE, "the HPA patched to the new bounds")
    elastic(kube_client, namespace, "auto", {"minReplicas": 2, "maxReplicas": 5, "metrics": None})
    wait_for(lambda: hpa(kube_client, namespace, "auto") is None, DEADLINE, "the HPA deleted with the metrics")
    elastic(kube_client, namespace, "auto", {"minReplicas": 2, "maxReplicas": 5, "metrics": [CPU]})
    wait_for(lambda: hpa(kube_client, namespace, "auto"), DEADLINE, "the HPA made again")
    kube_client.patch(TFJOBS, "auto", {"spec": {"runPolicy": {"suspend": True}}}, namespace)
    wait_for(lambda: hpa(kube_client, namespace, "auto") is None, DEADLINE, "the HPA deleted while suspended")


def workers_writer(client: KubeClient, namespace: str, name: str) -> list[tuple[str, str, str | None]]:
    """The managedFields entries the apiserver records as owning the job's Worker count: (manager, operation,
    subresource)."""
    entries = client.get(TFJOBS, name, namespace)["metadata"].get("managedFields") or []
    return [(entry["manager"], entry["operation"], entry.get("subresource")) for entry in entries
            if "f:replicas" in entry.get("fieldsV1", {}).get("f:spec", {}).get("f:tfReplicaSpecs", {})
            .get("f:Worker", {})]


# The user agent of kube-controller-manager's HPA client (client-go appends the controller's name), which writes
# the scale subresource with no fieldManager: the apiserver names the manager by the agent up to its first "/".
HPA_USER_AGENT = "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/0000000/horizontal-pod-autoscaler"


def test_who_resized_a_job_with_an_hpa_is_read_from_who_wrote_the_count(
        operator: OperatorProcess, cluster: LocalCluster, kube_client: KubeClient, namespace: str) -> None:
    """On a job that has an HPA: `kubectl scale` (the real kubectl) is told as kubectl's, a write of the scale
    subresource as the HPA controller sends it as the HPA's, and a patch of the spec by another client as that
    client's; each in the Resized event and status.lastResize."""
    job = tfjob("scaled", Worker=replica(2), PS=replica())
    job["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 5, "metrics": [CPU]}
    kube_client.create(TFJOBS, job, namespace)
    wait_for(lambda: hpa(kube_client, namespace, "scaled"), DEADLINE, "the job's HPA")
    wait_for(lambda: job_status(kube_client, namespace, "scaled").get("workerReplicas") == 2, DEADLINE,
             "tfop to plan for 2 workers")

    def resized_to(count: int) -> tuple[dict[str, Any], str]:
        told = wait_for(lambda: (last := job_status(kube_client, namespace, "scaled").get("lastResize") or {})
                        .get("to") == count and last, DEADLINE, f"the resize to {count} told")
        event = wait_for(lambda: next((e["message"] for e in events_about(kube_client, namespace, "scaled")
                                       if e["reason"] == "Resized" and f" -> {count}," in e["message"]), None),
                         DEADLINE, f"the Resized event of {count}")
        assert event == told["message"]
        return told, event

    cluster.kubectl("scale", "tfjob/scaled", "--replicas=3", "-n", namespace)
    [(manager, operation, subresource)] = workers_writer(kube_client, namespace, "scaled")
    assert (manager.startswith("kubectl"), operation, subresource) == (True, "Update", "scale"), manager
    told, _ = resized_to(3)
    assert (told["from"], told["cause"]) == (2, "User"), told
    assert f"Worker 2 -> 3, asked by {manager} (the scale subresource);" in told["message"]

    hpa_client = KubeClient.from_kubeconfig(str(cluster.kubeconfig), user_agent=HPA_USER_AGENT)
    path = TFJOBS.path(namespace, "scaled", subresource="scale")

    def put_scale() -> bool:
        """As the HPA controller writes: a read, then an update at that resourceVersion, again on its next pass
        if tfop's status write came in between (409)."""
        try:
            hpa_client.request("PUT", path, body={**hpa_client.request("GET", path), "spec": {"replicas": 4}})
        except Conflict:
            return False
        return True

    wait_for(put_scale, DEADLINE, "the HPA's write of the scale subresource")
    assert workers_writer(kube_client, namespace, "scaled") == [("kube-controller-manager", "Update", "scale")]
    told, _ = resized_to(4)
    assert (told["from"], told["cause"]) == (3, "HPA"), told
    assert "Worker 3 -> 4, asked by the job's HorizontalPodAutoscaler;" in told["message"]

    kube_client.request("PATCH", TFJOBS.path(namespace, "scaled"), query=[("fieldManager", "sweeper")],
                        body={"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 5}}}},
                        content_type="application/merge-patch+json")
    assert workers_writer(kube_client, namespace, "scaled") == [("sweeper", "Update", None)]
    told, _ = resized_to(5)
    assert (told["from"], told["cause"]) == (4, "User"), told
    assert "Worker 4 -> 5, asked by sweeper (an update of the spec);" in told["message"]
