"""The job's own PodDisruptionBudget (plan/children/disruption_budget.py): the spec each policy wants, its in-line
check, and the annotation's parse, as rows written out. Which states keep it is test_job_children's table."""

from __future__ import annotations

from typing import Any

import pytest

from support.plan_builders import make_job, parsed
from tfop.controller.plan.children.disruption_budget import (
    DISRUPTION_BUDGET_KIND,
    disruption_budget_drift,
    wanted_disruption_budget,
)
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.parse import InvalidJob, parse_job

JOB_PODS = {"matchLabels": {"training.kubeflow.org/job-name": "mnist"},
            "matchExpressions": [{"key": "training.kubeflow.org/operator-name", "operator": "In",
                                  "values": ["tfjob-controller", "tfop"]}]}


def annotated(policy: str | None, replicas: dict[str, int] | None = None) -> dict[str, Any]:
    job = make_job(replicas or {"Chief": 1, "Worker": 3})
    if policy is not None:
        job["metadata"]["annotations"] = {"tfop.kubeflow.org/disruption-budget": policy}
    return job


WANTED = {
    "no annotation: none": (annotated(None), None),
    "None: none": (annotated("None"), None),
    "OneAtATime, 4 replicas: 3 must stay available": (
        annotated("OneAtATime"), {"minAvailable": 3, "selector": JOB_PODS}),
    "NoEviction, 4 replicas: all 4": (annotated("NoEviction"), {"minAvailable": 4, "selector": JOB_PODS}),
    "OneAtATime, a lone worker: 0, its one pod may go": (
        annotated("OneAtATime", {"Worker": 1}), {"minAvailable": 0, "selector": JOB_PODS}),
}


@pytest.mark.parametrize(("job", "spec"), WANTED.values(), ids=WANTED.keys())
def test_the_spec_each_policy_wants(job: dict[str, Any], spec: dict[str, Any] | None) -> None:
    assert wanted_disruption_budget(parsed(job)) == spec


WANT = {"minAvailable": 3, "selector": JOB_PODS}
DRIFT = {
    "as written: in line": ({"minAvailable": 3, "selector": JOB_PODS}, None),
    "with the apiserver's defaults beside it: in line": (
        {"minAvailable": 3, "selector": JOB_PODS, "unhealthyPodEvictionPolicy": "IfHealthyBudget"}, None),
    "the job resized since: patched": ({"minAvailable": 2, "selector": JOB_PODS}, {"spec": WANT}),
    "edited to a percentage: patched back": ({"minAvailable": "50%", "selector": JOB_PODS}, {"spec": WANT}),
}


@pytest.mark.parametrize(("stored", "patch"), DRIFT.values(), ids=DRIFT.keys())
def test_the_in_line_check(stored: dict[str, Any], patch: dict[str, Any] | None) -> None:
    assert disruption_budget_drift(stored, WANT) == patch


def test_its_body_is_owned_by_the_job_and_named_with_its_runtime_id() -> None:
    body = DISRUPTION_BUDGET_KIND.body(parsed(annotated("OneAtATime")))
    assert (body["apiVersion"], body["kind"], body["metadata"]["name"], body["spec"]) == (
        "policy/v1", "PodDisruptionBudget", "mnist-jje2", {"minAvailable": 3, "selector": JOB_PODS})
    assert [(ref["kind"], ref["controller"]) for ref in body["metadata"]["ownerReferences"]] == [("TFJob", True)]


def test_a_policy_it_does_not_know_fails_the_job() -> None:
    result = parse_job(annotated("Sometimes"), ControllerConfig())
    assert isinstance(result, InvalidJob)
    assert [str(error) for error in result.errors] == [
        ("metadata.annotations[tfop.kubeflow.org/disruption-budget]: must be one of None, OneAtATime, NoEviction, "
        "not 'Sometimes'")]
