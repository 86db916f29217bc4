"""A job's own PodDisruptionBudget, for a job that asks for one: how many of its pods a drain (or anything else
using the Eviction API: the cluster autoscaler, Karpenter, a node upgrade) may take at a time.

With `tfop.kubeflow.org/disruption-budget: OneAtATime` the budget is `minAvailable: <replicas> - 1`: a drain evicts
one of the job's pods, and the next only once every replica runs (is Ready) again, so a synchronous job restarted
together after the first eviction (restart scope Job) loses one restart per eviction, never two at once; and while
the job is starting (some replica not Ready yet) it evicts none. With `NoEviction` the budget is `minAvailable:
<replicas>`: no eviction while every replica runs, so a drain waits for the job to end (or fails its eviction
requests until its own timeout); nodes then cannot be drained under a running job, which is the point and the cost.

minAvailable is a count, not a percentage or maxUnavailable: with those the disruption controller asks the pods'
controller for its scale, and a TFJob's scale subresource counts only its Workers. Pods are selected as the job's
NetworkPolicy selects them (the job-name and operator-name labels, either replica backend). The budget counts
the replicas the spec asks for; replicas that finished are no longer Ready, so once one has, OneAtATime lets no
eviction through either.

Kept only while the job runs: a suspended or queued job has no pods, a finished one nothing to protect. Named for
the job and its runtime id, owned by it. One entry of the job's own children (children/job_child.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfop.api.constants import DISRUPTION_BUDGET_NO_EVICTION, DISRUPTION_BUDGET_ONE_AT_A_TIME
from tfop.controller.plan.children.job_child import JobChildKind, JobState
from tfop.controller.plan.children.network_policy import job_pods, network_policy_name
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.types import DISRUPTION_BUDGET
from tfop.objects import Object


def wanted_disruption_budget(job: TFJobModel) -> Object | None:
    policy = job.options.disruption_budget
    if policy not in (DISRUPTION_BUDGET_ONE_AT_A_TIME, DISRUPTION_BUDGET_NO_EVICTION):
        return None
    replicas = sum(job.spec.replicas(replica_type) for replica_type in job.spec.replica_specs)
    kept = replicas if policy == DISRUPTION_BUDGET_NO_EVICTION else max(replicas - 1, 0)
    return {"minAvailable": kept, "selector": job_pods(job.metadata.name)}


def disruption_budget_drift(stored: Mapping[str, Any], wanted: Object) -> Object | None:
    """A merge patch of the two fields tfop writes; the apiserver's defaults (unhealthyPodEvictionPolicy left
    out) are no difference."""
    in_line = all(stored.get(key) == value for key, value in wanted.items())
    return None if in_line else {"spec": wanted}


DISRUPTION_BUDGET_KIND = JobChildKind(
    DISRUPTION_BUDGET, "policy", "v1", "poddisruptionbudgets", cached=("spec",),
    # Never its status: the disruption controller rewrites it as the job's pods come and go.
    kept_in=frozenset({JobState.RUNNING}),
    name=lambda job: network_policy_name(job.name, job.uid), wanted=wanted_disruption_budget,
    drift=disruption_budget_drift)
