"""The Job backend's desired batch/v1 Job for one replica, and reading what the Job controller made of one.

A replica's Job wraps the very pod the Pod backend would create (same labels, TF_CONFIG, gang fields) as its
template, with completions and parallelism 1. The replica's restartPolicy becomes the Job's rules:

- ExitCode: the pod's restartPolicy is Never, and a podFailurePolicy fails the Job when the tensorflow container
  exits with 1-127 (permanent), ignores pods disrupted (DisruptionTarget: evicted, preempted; they are replaced
  without counting) and counts every other failure (128-255, lost pods) against the Job's backoffLimit.
- OnFailure and Always: the kubelet restarts the container in place (a Job's pod template allows only Never and
  OnFailure, so Always runs as OnFailure; a container that exits 0 ends the replica either way). Such a Job can
  have no podFailurePolicy (Kubernetes allows one only with the pod restartPolicy Never), so its controller would
  count a disrupted pod against a backoffLimit of its own: it has none (the largest), and tfop alone holds the
  budget, leaving disruptions out, as the Pod backend's in-place restarts are held by tfop alone.
- Never: no retry at all, backoffLimit 0.

The TFJob's backoffLimit stays the budget of the whole job: the planner sums the restarts of all its Jobs. Under
ExitCode each Job's own limit is that budget, so that it cannot outlast it while tfop is away.
"""

from __future__ import annotations

from tfop.api.constants import (
    DEFAULT_CONTAINER_NAME,
    RESTART_POLICY_ALWAYS,
    RESTART_POLICY_EXIT_CODE,
    RESTART_POLICY_NEVER,
    RESTART_POLICY_ON_FAILURE,
)
from tfop.api.fields import items, mapping
from tfop.controller.plan.observed.child import Child
from tfop.controller.plan.observed.pod import DISRUPTION_TARGET
from tfop.objects import Object

BATCH_API_VERSION = "batch/v1"
JOB_KIND = "Job"
MAX_BACKOFF_LIMIT = 2**31 - 1  # int32: "no limit", as a TFJob without backoffLimit has
PERMANENT_EXIT_CODES = list(range(1, 128))
# The Job controller's reason for a Failed Job that matters here.
FAILED_BY_BACKOFF_LIMIT = "BackoffLimitExceeded"


def job_restart_policy(replica_policy: str) -> str:
    return RESTART_POLICY_ON_FAILURE if replica_policy in (RESTART_POLICY_ALWAYS, RESTART_POLICY_ON_FAILURE) \
        else RESTART_POLICY_NEVER


def job_backoff_limit(replica_policy: str, backoff_limit: int | None) -> int:
    if replica_policy == RESTART_POLICY_NEVER:
        return 0
    if backoff_limit is None or job_restart_policy(replica_policy) == RESTART_POLICY_ON_FAILURE:
        return MAX_BACKOFF_LIMIT  # no podFailurePolicy: its limit would count disruptions
    return backoff_limit


def pod_failure_policy(pod_spec: Object) -> Object:
    """ExitCode's rules. Disruptions come first: an evicted container may well have exited with 1."""
    rules: list[Object] = [{"action": "Ignore", "onPodConditions": [{"type": DISRUPTION_TARGET, "status": "True"}]}]
    if any(mapping(container).get("name") == DEFAULT_CONTAINER_NAME for container in items(pod_spec.get("containers"))):
        rules.append({"action": "FailJob", "onExitCodes": {"containerName": DEFAULT_CONTAINER_NAME, "operator": "In",
                                                           "values": PERMANENT_EXIT_CODES}})
    return {"rules": rules}


def replica_job(pod: Object, replica_policy: str, backoff_limit: int | None) -> Object:
    """The Job whose template is `pod` (the Pod backend's pod of the replica), named and labelled as it is."""
    metadata = pod["metadata"]
    spec = dict(pod["spec"])
    spec["restartPolicy"] = job_restart_policy(replica_policy)
    template_metadata: Object = {"labels": dict(metadata["labels"])}
    if metadata.get("annotations"):
        template_metadata["annotations"] = metadata["annotations"]
    job_spec: Object = {"completions": 1, "parallelism": 1,
                        "backoffLimit": job_backoff_limit(replica_policy, backoff_limit),
                        "template": {"metadata": template_metadata, "spec": spec}}
    if replica_policy == RESTART_POLICY_EXIT_CODE:
        job_spec["podFailurePolicy"] = pod_failure_policy(spec)
    return {"apiVersion": BATCH_API_VERSION, "kind": JOB_KIND,
            "metadata": {"name": metadata["name"], "namespace": metadata["namespace"],
                         "labels": dict(metadata["labels"]), "ownerReferences": metadata["ownerReferences"]},
            "spec": job_spec}


def made_by_job(child: Child | Object) -> bool:
    """Whether a Job controls the pod (the Job backend's pods), rather than the TFJob itself."""
    owner = (child if isinstance(child, Child) else Child.of(child)).controller
    return owner is not None and owner.kind == JOB_KIND and owner.api_version == BATCH_API_VERSION


def controller_uid(child: Child) -> str:
    return child.controller.uid if child.controller is not None else ""
