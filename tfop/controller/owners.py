"""Which TFJob a cached object belongs to, as the controller's watches and the cross-job loops (the capacity
auto-scaler, tfop's Kueue queue positions, the progress endpoint) read it: by its controller reference, or for a
pod a replica's Job made or one held by tfop's finalizer, by the job-name label."""

from __future__ import annotations

from tfop.api.constants import GROUP, KIND, LABEL_JOB_NAME
from tfop.controller.plan.children.batch_job import made_by_job
from tfop.controller.plan.status import holds_finalizer
from tfop.objects import Object


def owner_key(child: Object) -> str | None:
    """The key of the TFJob that controls `child`, if any; for a pod a replica's Job controls, that Job's TFJob,
    named by the job-name label the pod has from the Job's template; for a pod that holds tfop's finalizer with no
    controller left (its job deleted, orphaning it), the job its label names, whose pass releases it."""
    for ref in child["metadata"].get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == KIND and ref.get("apiVersion", "").startswith(GROUP + "/"):
            return f"{child['metadata']['namespace']}/{ref['name']}"
    job_name = (child["metadata"].get("labels") or {}).get(LABEL_JOB_NAME)
    if (made_by_job(child) or holds_finalizer(child)) and job_name:
        return f"{child['metadata']['namespace']}/{job_name}"
    return None


HELD_BY_JOB_NAME = "held-by-job-name"  # the pod cache's index of the pods holding tfop's finalizer, by job key


def held_by_job_name(pod: Object) -> list[str]:
    """Only pods that hold tfop's finalizer are indexed: those a job's pass must find even when no job of the
    name controls them (`TFJobController._release_strays`)."""
    job_name = (pod["metadata"].get("labels") or {}).get(LABEL_JOB_NAME)
    if not job_name or not holds_finalizer(pod):
        return []
    return [f"{pod['metadata'].get('namespace', '')}/{job_name}"]


def controller_uid(child: Object) -> str | None:
    return next((ref.get("uid") for ref in child["metadata"].get("ownerReferences") or () if ref.get("controller")),
                None)
