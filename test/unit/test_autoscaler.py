"""The job's HorizontalPodAutoscaler, planned: made for a running job whose elasticPolicy has metrics, its body
written out, patched back only when it differs from the policy (not for the apiserver's defaults), and deleted when
the metrics go, while the job is suspended and once it finished."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from support.plan_builders import NOW, RID, UID, make_job, make_service, parsed, running_pods
from tfop.controller.children import Scope, child_kinds
from tfop.controller.plan.children.desired import DesiredChildren
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import AUTOSCALER, POD, SERVICE, ChildPatch, ChildRef, Creation, Plan, PlanContext

CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
# As the apiserver stores 1.5Gi.
MEMORY = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                         "averageValue": "1536Mi"}}}
ELASTIC = {"minReplicas": 1, "maxReplicas": 4, "metrics": [CPU]}
WANTED = {"scaleTargetRef": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist"},
          "minReplicas": 1, "maxReplicas": 4, "metrics": [CPU]}
# What the apiserver stores of a behavior tfop sent as {"scaleDown": {"stabilizationWindowSeconds": 600}}.
DEFAULTED_BEHAVIOR = {
    "scaleDown": {"stabilizationWindowSeconds": 600, "selectPolicy": "Max",
                  "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
    "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                             {"type": "Percent", "value": 100, "periodSeconds": 15}]}}


def job(elastic: dict[str, Any] | None = ELASTIC, **run_policy: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {} if elastic is None else {"elasticPolicy": elastic}
    return make_job({"Worker": 2, "PS": 1}, run_policy=run_policy or None, **spec)


def hpa(spec: dict[str, Any], name: str = "mnist", uid: str = "hpa-1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid}, "spec": spec}


def plan_with(raw: dict[str, Any], hpas: list[dict[str, Any]]) -> Plan:
    services = [make_service(t, i) for t, i in (("Worker", 0), ("Worker", 1), ("PS", 0))]
    return plan(PlanContext(raw, {POD: running_pods(), SERVICE: services, AUTOSCALER: hpas}, NOW, ControllerConfig()))


def test_the_body_is_written_out() -> None:
    raw = job({**ELASTIC, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}})
    body = DesiredChildren(parsed(raw)).body(AUTOSCALER, None)
    assert body == {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "mnist", "namespace": "ns",
                     "labels": {"training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/runtime-id": RID,
                                "training.kubeflow.org/operator-name": "tfjob-controller",
                                "app.kubernetes.io/managed-by": "tfop"},
                     "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                                          "uid": UID, "controller": True, "blockOwnerDeletion": True}]},
        "spec": {**WANTED, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}}}
    assert child_kinds(None)[AUTOSCALER].scope is Scope.JOB


ROWS: dict[str, tuple[dict[str, Any], list[dict[str, Any]], list[Creation], list[ChildPatch], list[ChildRef]]] = {
    "metrics and no HPA: made": (job(), [], [Creation(AUTOSCALER, None, "mnist")], [], []),
    "in line: left alone": (job(), [hpa(WANTED)], [], [], []),
    "the apiserver's defaults and canonical quantities are no difference": (
        job({**ELASTIC, "metrics": [{**MEMORY, "resource": {"name": "memory", "target": {
            "type": "AverageValue", "averageValue": "1.5Gi"}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}}),
        [hpa({**WANTED, "metrics": [MEMORY], "behavior": DEFAULTED_BEHAVIOR})], [], [], []),
    "the bounds edited: patched": (
        job({**ELASTIC, "maxReplicas": 6}), [hpa(WANTED)], [],
        [ChildPatch(AUTOSCALER, "mnist", {"spec": {**WANTED, "maxReplicas": 6, "behavior": None}})], []),
    "the HPA edited by hand: patched back": (
        job(), [hpa({**WANTED, "metrics": [MEMORY]})], [],
        [ChildPatch(AUTOSCALER, "mnist", {"spec": {**WANTED, "behavior": None}})], []),
    "the behavior removed from the policy: nulled": (
        job(), [hpa({**WANTED, "behavior": DEFAULTED_BEHAVIOR})], [],
        [ChildPatch(AUTOSCALER, "mnist", {"spec": {**WANTED, "behavior": None}})], []),
    "the metrics removed: deleted": (
        job({"minReplicas": 1, "maxReplicas": 4}), [hpa(WANTED)], [], [], [ChildRef(AUTOSCALER, "mnist", "hpa-1")]),
    "no elastic policy, a stray: deleted": (
        job(None), [hpa(WANTED, name="other", uid="hpa-2")], [], [], [ChildRef(AUTOSCALER, "other", "hpa-2")]),
    "suspended: deleted, and not made": (
        job(suspend=True), [hpa(WANTED)], [], [], [ChildRef(AUTOSCALER, "mnist", "hpa-1")]),
}


@pytest.mark.parametrize(("raw", "hpas", "creates", "patches", "deletes"), ROWS.values(), ids=ROWS.keys())
def test_the_hpa_follows_the_elastic_policy(raw: dict[str, Any], hpas: list[dict[str, Any]], creates: list[Creation],
                                            patches: list[ChildPatch], deletes: list[ChildRef]) -> None:
    before = copy.deepcopy(hpas)
    result = plan_with(raw, hpas)
    assert hpas == before
    assert (result.creates(AUTOSCALER), result.patch, result.deletes(AUTOSCALER)) == (creates, patches, deletes)
    if creates:
        assert result.desired is not None and result.desired.body(AUTOSCALER, None)["spec"] == WANTED


def test_a_finished_job_keeps_no_hpa_whatever_its_pod_policy() -> None:
    raw = job(cleanPodPolicy="None")
    raw["status"] = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded"}],
                     "completionTime": "2026-11-21T10:00:00Z"}
    result = plan_with(raw, [hpa(WANTED)])
    assert result.deletes(AUTOSCALER) == [ChildRef(AUTOSCALER, "mnist", "hpa-1")]
    assert result.deletes(POD) == [] and result.creates(AUTOSCALER) == []


def test_the_cache_keeps_the_spec_not_the_status() -> None:
    stored = {**hpa(WANTED), "status": {"currentReplicas": 2, "desiredReplicas": 2}}
    slim = child_kinds(None)[AUTOSCALER].transform(stored)
    assert (slim["metadata"], slim["spec"], "status" in slim) == (hpa(WANTED)["metadata"], WANTED, False)
