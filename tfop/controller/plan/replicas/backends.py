"""The replica backends: what one replica of a TFJob is made of, and so who replaces it when it fails.

- Pods: tfop makes each replica's pod, and recreates a pod that failed retryably (under the same name).
- Jobs: tfop makes one batch/v1 Job per replica; the Job controller replaces its failed pod, and tfop only reads
  what it did.

The planner asks the job's backend (`BACKENDS[model.options.replica_backend]`: the one `settled_backend` finds,
else the job's annotation, else the operator's default) instead of branching on which one it is; everything else
(services, the gang's PodGroup, status, success and failure) is the same for both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from tfop.api.constants import (
    CLEAN_POD_POLICY_ALL,
    REPLICA_BACKEND_JOBS,
    REPLICA_BACKEND_PODS,
    ReplicaBackendName,
)
from tfop.controller.plan.children.naming import ChildNaming
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import TFJobSpec
from tfop.controller.plan.job_status import TFJobStatus
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.replicas.job_slots import count_job_restarts, keep_job_limits, sort_job_children
from tfop.controller.plan.replicas.pod_slots import Slot, SortedChildren, sort_children
from tfop.controller.plan.replicas.removal import clean_up, resume_jobs, suspend_replica_jobs
from tfop.controller.plan.replicas.replica_status import count_replica_restarts
from tfop.controller.plan.replicas.restart_ledger import RestartCount
from tfop.controller.plan.types import JOB, POD, PlanContext


class ReplicaBackend(ABC):
    name: ClassVar[ReplicaBackendName]  # as the annotation, the operator config and status.replicaBackend say it
    kind: ClassVar[str]  # the child kind one replica is: POD or JOB

    @abstractmethod
    def sort_children(self, spec: TFJobSpec, context: PlanContext, naming: ChildNaming) -> SortedChildren:
        """The job's children sorted into replica slots, each with its state."""

    @abstractmethod
    def to_recreate(self, retryable: list[Slot]) -> list[Slot]:
        """Of the slots whose replica failed retryably, those tfop itself deletes so they are made again."""

    @abstractmethod
    def count_restarts(self, draft: PlanDraft, spec: TFJobSpec, context: PlanContext, children: SortedChildren, *,
                       deleting: set[str], recreating: set[str]) -> dict[str, RestartCount]:
        """Restarts per replica type, announcing the new ones; `deleting` (uids) retire their counts now."""

    @abstractmethod
    def retired_on_suspend(self, context: PlanContext) -> set[str]:
        """The uids of replicas a suspension deletes, whose restart counts go into the status with them."""

    @abstractmethod
    def suspend(self, draft: PlanDraft, context: PlanContext) -> None:
        """Keep nothing running while the job is suspended."""

    @abstractmethod
    def resume(self, draft: PlanDraft, children: SortedChildren) -> None:
        """Undo what `suspend` kept, for a job running again."""

    @abstractmethod
    def keep_in_line(self, draft: PlanDraft, spec: TFJobSpec, children: SortedChildren) -> None:
        """Patches the replicas' children whose spec follows the job's and may change."""

    @abstractmethod
    def replaced(self, retryable: list[Slot], counts: dict[str, RestartCount]) -> list[PodView]:
        """The failed pods being replaced in this pass, for the Restarting condition's message."""

    @abstractmethod
    def has_failed(self, slot: Slot) -> bool:
        """Whether a slot in a final state counts as a failed replica (with Pods, only once its pod is seen)."""


class PodBackend(ReplicaBackend):
    name = REPLICA_BACKEND_PODS
    kind = POD

    def sort_children(self, spec: TFJobSpec, context: PlanContext, naming: ChildNaming) -> SortedChildren:
        return sort_children(spec, context, naming)

    def to_recreate(self, retryable: list[Slot]) -> list[Slot]:
        return retryable

    def count_restarts(self, draft: PlanDraft, spec: TFJobSpec, context: PlanContext, children: SortedChildren, *,
                       deleting: set[str], recreating: set[str]) -> dict[str, RestartCount]:
        # A status with conditions but without restart counts was written by another operator (the Kubeflow
        # training operator keeps none): the containers' restarts found at adoption happened under it.
        adopted = bool(draft.previous.conditions)
        return count_replica_restarts(draft, spec, children.pods_by_type, adopted=adopted, deleting=deleting,
                                      recreating=recreating)

    def retired_on_suspend(self, context: PlanContext) -> set[str]:
        return {pod.uid for pod in context.observed.pods if not pod.terminating}

    def suspend(self, draft: PlanDraft, context: PlanContext) -> None:
        clean_up(draft, context, CLEAN_POD_POLICY_ALL)

    def resume(self, draft: PlanDraft, children: SortedChildren) -> None:
        """Nothing was kept: the missing pods are simply made again."""

    def keep_in_line(self, draft: PlanDraft, spec: TFJobSpec, children: SortedChildren) -> None:
        """Nothing of a pod's spec follows the job's once it is made."""

    def replaced(self, retryable: list[Slot], counts: dict[str, RestartCount]) -> list[PodView]:
        return [pod for count in counts.values() for pod in count.recreated]

    def has_failed(self, slot: Slot) -> bool:
        return slot.pod is not None


class JobBackend(ReplicaBackend):
    name = REPLICA_BACKEND_JOBS
    kind = JOB

    def sort_children(self, spec: TFJobSpec, context: PlanContext, naming: ChildNaming) -> SortedChildren:
        return sort_job_children(spec, context, naming)

    def to_recreate(self, retryable: list[Slot]) -> list[Slot]:
        return []  # the Job controller replaces a failed pod itself

    def count_restarts(self, draft: PlanDraft, spec: TFJobSpec, context: PlanContext, children: SortedChildren, *,
                       deleting: set[str], recreating: set[str]) -> dict[str, RestartCount]:
        return count_job_restarts(draft, spec, context, children, deleting=deleting)

    def retired_on_suspend(self, context: PlanContext) -> set[str]:
        return set()  # each Job is suspended and kept, with its restarts

    def suspend(self, draft: PlanDraft, context: PlanContext) -> None:
        suspend_replica_jobs(draft, context)

    def resume(self, draft: PlanDraft, children: SortedChildren) -> None:
        resume_jobs(draft, children.batch_jobs.values())

    def keep_in_line(self, draft: PlanDraft, spec: TFJobSpec, children: SortedChildren) -> None:
        keep_job_limits(draft, spec, children)

    def replaced(self, retryable: list[Slot], counts: dict[str, RestartCount]) -> list[PodView]:
        return [slot.pod for slot in retryable if slot.pod is not None]

    def has_failed(self, slot: Slot) -> bool:
        return True  # a failed Job fails its replica, whether or not its last pod is still seen


BACKENDS: dict[ReplicaBackendName, ReplicaBackend] = {backend.name: backend for backend in (PodBackend(), JobBackend())}


def settled_backend(status: TFJobStatus, context: PlanContext) -> ReplicaBackendName | None:
    """The backend the job already has, or None when its annotation (else the operator's default) decides: once
    recorded in the status the backend never changes; before that, children already made tell it (a job an older
    tfop or the Go operator ran has Pods)."""
    if status.replica_backend is not None:
        return status.replica_backend
    if context.observed.batch_jobs:
        return REPLICA_BACKEND_JOBS
    if context.observed.pods:
        return REPLICA_BACKEND_PODS
    return None
