"""A job's own HorizontalPodAutoscaler, for a job whose spec.elasticPolicy lists metrics: it scales the job's
workers through the TFJob's scale subresource (spec.tfReplicaSpecs.Worker.replicas), within the policy's bounds,
on the policy's metrics and with its behavior, which are passed through as given.

Named like the job, as users look for it (`kubectl get hpa mnist`), and owned by it: the garbage collector deletes
it with the job. The planner's part (create it, keep it in line, delete it while the job does not run) is in
plan/policies/autoscaling.py.
"""

from __future__ import annotations

import copy

from tfop.api.constants import API_VERSION as TFJOB_API_VERSION
from tfop.api.constants import KIND as TFJOB_KIND
from tfop.api.constants import (
    LABEL_JOB_NAME,
    LABEL_MANAGED_BY,
    LABEL_OPERATOR_NAME,
    LABEL_RUNTIME_ID,
    MANAGED_BY,
    OPERATOR_NAME,
)
from tfop.api.runtime_id import runtime_id
from tfop.controller.plan.job.model import ElasticPolicy, TFJobModel
from tfop.objects import Object

API_VERSION = "autoscaling/v2"
KIND = "HorizontalPodAutoscaler"


def autoscaler_spec(job_name: str, policy: ElasticPolicy) -> Object:
    """The HPA's spec as tfop writes it: behavior only when the policy has one (the apiserver fills in the rest
    of a behavior it is given, so a stored HPA holds more than this)."""
    spec: Object = {"scaleTargetRef": {"apiVersion": TFJOB_API_VERSION, "kind": TFJOB_KIND, "name": job_name},
                    "minReplicas": policy.min_replicas, "maxReplicas": policy.max_replicas,
                    "metrics": copy.deepcopy(list(policy.metrics))}
    if policy.behavior is not None:
        spec["behavior"] = copy.deepcopy(dict(policy.behavior))
    return spec


def autoscaler(job: TFJobModel, owner: Object) -> Object:
    """The body of the job's HPA, for a job whose elastic policy has metrics."""
    policy = job.spec.elastic_policy
    if policy is None or not policy.metrics:
        raise ValueError("an HPA needs an elastic policy with metrics")
    metadata = job.metadata
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": metadata.name, "namespace": metadata.namespace,
                         "labels": {LABEL_JOB_NAME: metadata.name, LABEL_RUNTIME_ID: runtime_id(metadata.uid),
                                    LABEL_OPERATOR_NAME: OPERATOR_NAME, LABEL_MANAGED_BY: MANAGED_BY},
                         "ownerReferences": [dict(owner)]},
            "spec": autoscaler_spec(metadata.name, policy)}
