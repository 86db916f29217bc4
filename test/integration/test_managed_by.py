"""runPolicy.managedBy and spec.managedBy against the real apiserver: the CRD keeps them as set at creation, and a
job another controller runs (MultiKueue's copy on a manager cluster) is never touched by a running tfop: no
children, no status, no events, no TTL delete, while a job beside it runs and is cleaned up as usual."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, children, create_job, events_about, job_status, pods_by_name, replica, tfjob
from support.waiting import DEADLINE, consistently, wait_for, wait_for_count
from tfop.kube.client import KubeClient
from tfop.kube.errors import Invalid, NotFound
from tfop.kube.resource import PODS, SERVICES

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
IMMUTABLE = "spec.runPolicy.managedBy is immutable; it can only be set when the job is created"


def refused(action: Any) -> str:
    with pytest.raises(Invalid) as caught:
        action()
    return str(caught.value)


def test_managed_by_is_kept_as_created_and_must_name_a_controller(kube_client: KubeClient, namespace: str,
                                                                 tfjob_crd: Path) -> None:
    create_job(kube_client, namespace, "elsewhere", {"managedBy": MULTIKUEUE}, Worker=replica())
    change = {"spec": {"runPolicy": {"managedBy": "kubeflow.org/training-operator"}}}
    assert IMMUTABLE in refused(lambda: kube_client.patch(TFJOBS, "elsewhere", change, namespace))
    remove = [{"op": "remove", "path": "/spec/runPolicy/managedBy"}]
    assert IMMUTABLE in refused(lambda: kube_client.patch(TFJOBS, "elsewhere", remove, namespace, patch_type="json"))
    # The rest of the spec stays editable: Kueue suspends and resumes such jobs.
    kube_client.patch(TFJOBS, "elsewhere", {"spec": {"runPolicy": {"suspend": True}}}, namespace)
    assert kube_client.get(TFJOBS, "elsewhere", namespace)["spec"]["runPolicy"] == {
        "managedBy": MULTIKUEUE, "suspend": True}

    create_job(kube_client, namespace, "tfops", Worker=replica())
    hand_over = {"spec": {"runPolicy": {"managedBy": MULTIKUEUE}}}
    assert IMMUTABLE in refused(lambda: kube_client.patch(TFJOBS, "tfops", hand_over, namespace))

    bare_word = refused(lambda: create_job(kube_client, namespace, "typo", {"managedBy": "kueue"}, Worker=replica()))
    assert "spec.runPolicy.managedBy must be empty or a domain-prefixed path such as kueue.x-k8s.io/multikueue" in (
        bare_word)
    for value in ("", "kubeflow.org/training-operator", "example.com/my-controller"):
        name = f"ok-{len(value)}"
        created = create_job(kube_client, namespace, name, {"managedBy": value}, Worker=replica())
        assert created["spec"]["runPolicy"]["managedBy"] == value


def top_level(name: str, manager: str, run_policy: dict[str, Any] | None = None) -> dict[str, Any]:
    job = tfjob(name, run_policy, Worker=replica())
    job["spec"]["managedBy"] = manager
    return job


def test_spec_managed_by_is_kept_as_created_and_names_one_controller(kube_client: KubeClient, namespace: str,
                                                                     tfjob_crd: Path) -> None:
    """The top-level field Kueue's generic MultiKueue adapter reads: kept (not pruned), immutable, validated as
    runPolicy.managedBy is, and never naming another controller than runPolicy.managedBy does."""
    created = kube_client.create(TFJOBS, top_level("top", MULTIKUEUE), namespace)
    assert created["spec"]["managedBy"] == MULTIKUEUE
    top_immutable = "spec.managedBy is immutable; it can only be set when the job is created"
    change = {"spec": {"managedBy": "kubeflow.org/training-operator"}}
    assert top_immutable in refused(lambda: kube_client.patch(TFJOBS, "top", change, namespace))
    remove = [{"op": "remove", "path": "/spec/managedBy"}]
    assert top_immutable in refused(lambda: kube_client.patch(TFJOBS, "top", remove, namespace, patch_type="json"))
    assert "spec.managedBy must be empty or a domain-prefixed path such as kueue.x-k8s.io/multikueue" in refused(
        lambda: kube_client.create(TFJOBS, top_level("typo", "kueue"), namespace))
    assert "spec.managedBy and spec.runPolicy.managedBy name different controllers" in refused(
        lambda: kube_client.create(TFJOBS, top_level("two", MULTIKUEUE, {"managedBy": "example.com/mine"}),
                                   namespace))
    for name, run_policy in (("same", {"managedBy": MULTIKUEUE}), ("one-empty", {"managedBy": ""})):
        assert kube_client.create(TFJOBS, top_level(name, MULTIKUEUE, run_policy), namespace)["spec"]["managedBy"]


def test_a_job_managed_elsewhere_is_left_alone_while_its_neighbour_runs(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    create_job(kube_client, namespace, "elsewhere", {"managedBy": MULTIKUEUE, "ttlSecondsAfterFinished": 1},
               Worker=replica(2))
    # What MultiKueue copies from the worker cluster: a finished job whose TTL has long passed.
    copied = {"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:05:00Z",
              "replicaStatuses": {"Worker": {"active": 0, "succeeded": 2}},
              "conditions": [{"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded",
                              "message": "copied from the worker cluster",
                              "lastTransitionTime": "2026-01-01T00:05:00Z"}]}
    kube_client.patch_status(TFJOBS, "elsewhere", {"status": copy.deepcopy(copied)}, namespace)

    kube_client.create(TFJOBS, tfjob("neighbour", {"ttlSecondsAfterFinished": 1}, Worker=replica()), namespace)
    pod = next(iter(wait_for_count(lambda: pods_by_name(kube_client, namespace, "neighbour"), 1,
                                   message="the neighbour's pod")))
    exit_pod(kube_client, namespace, pod, 0)

    def neighbour_deleted() -> bool:
        try:
            kube_client.get(TFJOBS, "neighbour", namespace)
        except NotFound:
            return True
        return False

    wait_for(neighbour_deleted, DEADLINE, "tfop to delete the finished neighbour after its TTL")
    # Past the neighbour's TTL, the other job's is a year gone: it still stands, untouched.
    consistently(lambda: job_status(kube_client, namespace, "elsewhere") == copied, 1, "the other job's status kept")
    assert children(kube_client, PODS, namespace, "elsewhere") == []
    assert children(kube_client, SERVICES, namespace, "elsewhere") == []
    assert events_about(kube_client, namespace, "elsewhere") == []
