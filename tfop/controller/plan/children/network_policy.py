"""A job's own NetworkPolicy, for a job that asks for one: ingress to its pods only from its own pods, and from the
peers its annotation lists.

A TensorFlow server accepts any connection to its port and runs what it is sent, so in a shared namespace any pod
could talk to a job's PS or workers. With `tfop.kubeflow.org/network-policy: Isolated` tfop keeps one
NetworkPolicy per job, owned by it (the garbage collector deletes it with the job): it selects the job's pods by
their job-name and operator-name labels (those of pods from either replica backend, and of pods adopted from the
Kubeflow training operator) and lets in, on every port, the job's own pods and the NetworkPolicyPeers listed as
JSON in `tfop.kubeflow.org/network-policy-from` (a monitoring namespace, a TensorBoard pod). Only ingress: egress
(DNS, storage, the apiserver) is left alone.

The annotations are read by plan/job/annotations.py. It is one entry of the job's own children
(children/job_child.py): made before any replica's children (the applier creates a job's own children first and
stops at a refusal, so no pod of an isolated job is created before it), kept in line with the annotations while
the job runs, deleted when the switch is turned off, and kept whatever the job does otherwise. Whether it is
enforced is the cluster's network plugin's business: a plugin without NetworkPolicy support ignores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfop.api.constants import LABEL_JOB_NAME, LABEL_OPERATOR_NAME, LEGACY_OPERATOR_NAME, OPERATOR_NAME
from tfop.api.runtime_id import runtime_id
from tfop.controller.plan.children.job_child import EVERY_STATE, JobChildKind
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.types import NETWORK_POLICY
from tfop.objects import Object


def job_pods(job_name: str) -> Object:
    """The selector of the job's pods: by job name, and made by tfop or the Kubeflow training operator (other
    Kubeflow kinds' pods carry the job-name label too)."""
    return {"matchLabels": {LABEL_JOB_NAME: job_name},
            "matchExpressions": [{"key": LABEL_OPERATOR_NAME, "operator": "In",
                                  "values": [OPERATOR_NAME, LEGACY_OPERATOR_NAME]}]}


def network_policy_spec(job_name: str, peers: tuple[Object, ...]) -> Object:
    own = job_pods(job_name)
    return {"podSelector": own, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": own}, *peers]}]}


def network_policy_name(job_name: str, uid: str) -> str:
    """The job's name and runtime id: a job deleted and created again under its name never meets its predecessor's
    policy, which the garbage collector may not have removed yet."""
    return f"{job_name}-{runtime_id(uid)}"


def wanted_network_policy(job: TFJobModel) -> Object | None:
    isolation = job.options.isolation
    return network_policy_spec(job.metadata.name, isolation.peers) if isolation.isolated else None


def network_policy_drift(stored: Mapping[str, Any], wanted: Object) -> Object | None:
    return None if _without_empty(dict(stored)) == wanted else {"spec": wanted}


NETWORK_POLICY_KIND = JobChildKind(
    NETWORK_POLICY, "networking.k8s.io", "v1", "networkpolicies", cached=("spec",), kept_in=EVERY_STATE,
    name=lambda job: network_policy_name(job.name, job.uid), wanted=wanted_network_policy,
    drift=network_policy_drift)


def _without_empty(value: Any) -> Any:
    """`value` without empty maps and lists in it, as the wanted spec is written (the apiserver may keep an empty
    selector map where the wanted spec has none)."""
    if isinstance(value, dict):
        kept = {key: _without_empty(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in ({}, []) or key.endswith("Selector")}
    if isinstance(value, list):
        return [_without_empty(item) for item in value]
    return value
