"""A job's own HorizontalPodAutoscaler, for a job whose spec.elasticPolicy lists metrics: it scales the job's
workers through the TFJob's scale subresource (spec.tfReplicaSpecs.Worker.replicas), within the policy's bounds,
on the policy's metrics and with its behavior, which are passed through as given.

Named like the job, as users look for it (`kubectl get hpa mnist`), and owned by it. Kept only while the job
runs: a suspended job's would scale a job that has no pods, and a finished or rejected one has nothing left to
scale, whatever cleanPodPolicy keeps. One entry of the job's own children (children/job_child.py).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from tfop.api.constants import API_VERSION as TFJOB_API_VERSION
from tfop.api.constants import KIND as TFJOB_KIND
from tfop.controller.plan.children.job_child import JobChildKind, JobState
from tfop.controller.plan.job.model import ElasticPolicy, TFJobModel
from tfop.controller.plan.quantity import QuantityError, parse_quantity
from tfop.controller.plan.types import AUTOSCALER
from tfop.objects import Object


def autoscaler_spec(job_name: str, policy: ElasticPolicy) -> Object:
    """The HPA's spec as tfop writes it: behavior only when the policy has one (the apiserver fills in the rest
    of a behavior it is given, so a stored HPA holds more than this)."""
    spec: Object = {"scaleTargetRef": {"apiVersion": TFJOB_API_VERSION, "kind": TFJOB_KIND, "name": job_name},
                    "minReplicas": policy.min_replicas, "maxReplicas": policy.max_replicas,
                    "metrics": copy.deepcopy(list(policy.metrics))}
    if policy.behavior is not None:
        spec["behavior"] = copy.deepcopy(dict(policy.behavior))
    return spec


def wanted_autoscaler(job: TFJobModel) -> Object | None:
    policy = job.spec.elastic_policy
    if policy is None or not policy.metrics:
        return None
    return autoscaler_spec(job.metadata.name, policy)


def autoscaler_drift(stored: Mapping[str, Any], wanted: Object) -> Object | None:
    """A merge patch: the lists (metrics, policies) are replaced whole, and a behavior no longer asked for is
    removed by its null."""
    if _in_line(dict(stored), wanted):
        return None
    return {"spec": {**wanted, "behavior": wanted.get("behavior")}}


AUTOSCALER_KIND = JobChildKind(
    AUTOSCALER, "autoscaling", "v2", "horizontalpodautoscalers",
    # Never its status: the HPA controller writes its metrics every 15 s, which would wake the job each time.
    cached=("spec",),
    kept_in=frozenset({JobState.RUNNING}),
    name=lambda job: job.name, wanted=wanted_autoscaler, drift=autoscaler_drift)


def _in_line(stored: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether the stored spec says what tfop wrote: every field written holds the same value, and no behavior
    where none was asked for. The apiserver fills in the rest of a behavior (default policies and windows), so
    fields the stored spec has beyond what was written are its defaults, not changes; a field removed from the
    policy's behavior is not told from such a default, and stays until the behavior changes otherwise."""
    if "behavior" not in wanted and stored.get("behavior") is not None:
        return False
    return _covers(stored, wanted)


def _covers(stored: object, wanted: object) -> bool:
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(_covers(stored.get(key), value) for key, value in wanted.items())
    if isinstance(wanted, list):
        return (isinstance(stored, list) and len(stored) == len(wanted)
                and all(_covers(have, want) for have, want in zip(stored, wanted, strict=True)))
    if stored == wanted:
        return True
    # Quantities (a target's value or averageValue) are stored in their canonical form: 1000m reads back as 1.
    return _quantity(stored) is not None and _quantity(stored) == _quantity(wanted)


def _quantity(value: object) -> Fraction | None:
    if not isinstance(value, str | int) or isinstance(value, bool):
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None
