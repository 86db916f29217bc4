"""A child of which a job has at most one (its PodGroup, NetworkPolicy, HPA), as one entry: a `JobChildKind`.

An entry says everything that differs between such kinds: where the API serves them and what the cache keeps, the
name, the spec the job should have (a pure function of the job model: None when it wants none), the job states
it is kept in, and its in-line check (the merge patch that brings a stored one back in line). Everything else is
shared: the body (its apiVersion and kind, the name, the job's labels and owner reference, the wanted spec),
plan/policies/job_children.py's create-patch-delete policy, the wiring's informer and writer
(controller/children.py), the operator's RBAC rule (`make rbac`: hack/gen_rbac.py). The table of entries is
children/job_children.py; docs/development/adding-a-child-kind.md adds one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tfop.api.constants import (
    API_VERSION,
    KIND,
    LABEL_JOB_NAME,
    LABEL_MANAGED_BY,
    LABEL_OPERATOR_NAME,
    LABEL_RUNTIME_ID,
    MANAGED_BY,
    OPERATOR_NAME,
)
from tfop.api.runtime_id import runtime_id
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.job.model import JobMeta, TFJobModel
from tfop.objects import Object


class JobState(enum.Enum):
    """What a job is doing, as far as its own children go."""

    RUNNING = "running"  # its children are made and kept in line
    QUEUED = "queued"  # held by Kueue (tfop's own integration: its Workload not admitted): no pods
    SUSPENDED = "suspended"  # runPolicy.suspend: nothing of it runs
    FINISHED = "finished"  # succeeded, failed or rejected, cleanPodPolicy All or Running: its pods go
    FINISHED_PODS_KEPT = "finished, pods kept"  # the same with cleanPodPolicy None: its pods stay as they ended


EVERY_STATE = frozenset(JobState)


@dataclass(frozen=True)
class JobChildKind:
    kind: str  # the objects' kind, and the plan's name for them (plan/types.py)
    group: str  # where the API serves them: group ("" for the core API), version, resource
    version: str
    plural: str
    # What the cache keeps beside the metadata: only what `drift` and the policies read.
    cached: tuple[str, ...]
    # In a state outside these, the job keeps none (the policy deletes them). In the others but RUNNING, what
    # there is stays as it is: nothing is made or patched for a job that does not run.
    kept_in: frozenset[JobState]
    name: Callable[[JobMeta], str]
    wanted: Callable[[TFJobModel], Object | None]  # the spec it should have; None: the job wants none
    # (stored spec, wanted spec) -> the merge patch that brings it in line, None when it is: the in-line check.
    drift: Callable[[Mapping[str, Any], Object], Object | None]
    # (stored spec, wanted spec) -> whether it differs where it cannot change (a Kueue Workload's pod sets): it
    # is deleted and made again under its name once it is gone. None: every kind of drift can be patched.
    replaced: Callable[[Mapping[str, Any], Object], bool] | None = None
    # Whether the informer sees the objects of this kind other controllers made too (tfop's cached whole, the
    # others' metadata only): one controlled by the job that tfop did not make is a conflict (Kueue's adapter's
    # Workload), which the planner is told of (PlanContext.foreign), never a stray it deletes.
    others_seen: bool = False
    # The objects' kind where the plan's name differs (the TensorBoard's Deployment and Service).
    object_kind: str = ""
    # A label, with the job's name, that tells these children from others of the same resource (the TensorBoard's
    # Service from the replicas' Services): the wiring's informer selects on it, the replicas' exclude it.
    marker_label: str = ""
    # Kept in a finished state for this many seconds after the job's completionTime (read from the raw job and
    # the config), then deleted. None: kept there as long as the job.
    finished_ttl: Callable[[Object, ControllerConfig], int] | None = None
    # Whether the replicas' children wait while one of these waits for its name (a child being deleted holds it):
    # those the training depends on (a PodGroup), not those beside it (the TensorBoard).
    replicas_wait: bool = True
    # Whether a rule of its own keeps it (with the shared policy's keep_job_child), before the others: the
    # Workload, on which whether the job runs at all depends (policies/kueue_admission.py).
    kept_first: bool = False
    # The name of the one of these (read from the raw job) that another controller made and deletes, so the
    # policy never deletes it in any state: the Workload MultiKueue made for its copy of a job on a worker cluster.
    handed_over: Callable[[Object], str | None] | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def body(self, job: TFJobModel) -> Object:
        """The child as it is created, owned by the job (the garbage collector deletes it with the job)."""
        spec = self.wanted(job)
        if spec is None:
            raise ValueError(f"{job.metadata.name} wants no {self.kind}")
        metadata = job.metadata
        labels = {LABEL_JOB_NAME: metadata.name, LABEL_RUNTIME_ID: runtime_id(metadata.uid),
                  LABEL_OPERATOR_NAME: OPERATOR_NAME, LABEL_MANAGED_BY: MANAGED_BY}
        if self.marker_label:
            labels[self.marker_label] = metadata.name
        return {"apiVersion": self.api_version, "kind": self.object_kind or self.kind,
                "metadata": {"name": self.name(metadata), "namespace": metadata.namespace, "labels": labels,
                             "ownerReferences": [owner_reference(metadata)]},
                "spec": spec}


def owner_reference(job: JobMeta) -> Object:
    """The controller reference every child of the job carries."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
