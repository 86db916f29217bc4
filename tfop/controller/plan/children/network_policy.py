"""A job's own NetworkPolicy, for a job that asks for one: ingress to its pods only from its own pods, and from the
peers its annotation lists.

A TensorFlow server accepts any connection to its port and runs what it is sent, so in a shared namespace any pod
could talk to a job's PS or workers. With `tfop.kubeflow.org/network-policy: Isolated` tfop keeps one
NetworkPolicy per job, owned by it (the garbage collector deletes it with the job): it selects the job's pods by
their job-name and operator-name labels (those of pods from either replica backend, and of pods adopted from the
Kubeflow training operator) and lets in, on every port, the job's own pods and the NetworkPolicyPeers listed as
JSON in `tfop.kubeflow.org/network-policy-from` (a monitoring namespace, a TensorBoard pod). Only ingress: egress
(DNS, storage, the apiserver) is left alone.

The annotations are read by plan/job/annotations.py; the planner's part (create it, keep it in line, delete
it) is in plan/policies/network_isolation.py. Whether it is enforced
is the cluster's network plugin's business: a plugin without NetworkPolicy support ignores it.
"""

from __future__ import annotations

from tfop.api.constants import (
    LABEL_JOB_NAME,
    LABEL_MANAGED_BY,
    LABEL_OPERATOR_NAME,
    LABEL_RUNTIME_ID,
    LEGACY_OPERATOR_NAME,
    MANAGED_BY,
    OPERATOR_NAME,
)
from tfop.api.runtime_id import runtime_id
from tfop.controller.plan.job.model import TFJobModel
from tfop.objects import Object

API_VERSION = "networking.k8s.io/v1"
KIND = "NetworkPolicy"


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


def network_policy(job: TFJobModel, owner: Object) -> Object:
    """The body of the job's NetworkPolicy, for a job that asks for isolation."""
    metadata = job.metadata
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": network_policy_name(metadata.name, metadata.uid), "namespace": metadata.namespace,
                         "labels": {LABEL_JOB_NAME: metadata.name, LABEL_RUNTIME_ID: runtime_id(metadata.uid),
                                    LABEL_OPERATOR_NAME: OPERATOR_NAME, LABEL_MANAGED_BY: MANAGED_BY},
                         "ownerReferences": [dict(owner)]},
            "spec": network_policy_spec(metadata.name, job.options.isolation.peers)}
