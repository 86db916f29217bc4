"""How a job's children are named, and how that choice is kept.

A new job's children are named `{job}-{type}-{runtimeId}-{index}` (or as the controller config says). A job whose
children the Kubeflow training operator made is named `{job}-{type}-{index}` by it, and keeps that naming: a
replica tfop recreates must have the address its peers' TF_CONFIG and that operator's Services already use. The
choice is written to `status.childNaming` with the first status tfop writes and read back from there ever after,
so it is level-triggered, survives operator restarts, and holds when every child is gone. Before it is written,
the job's children tell it (a Go-named child means the job came from the Go operator).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfop.api.constants import (
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    LABEL_RUNTIME_ID,
    LEGACY_OPERATOR_NAME,
    NAMING_RUNTIME_ID,
    NAMING_TYPE_INDEX,
    OPERATOR_NAME,
    ChildNamingScheme,
)
from tfop.api.runtime_id import child_name, runtime_id
from tfop.controller.plan.job_status import TFJobStatus
from tfop.controller.plan.observed.child import Child


def type_index_name(job_name: str, replica_type: str, index: int) -> str:
    """The Kubeflow training operator's name for one replica's Pod and Service, e.g. `mnist-worker-0`."""
    return f"{job_name}-{replica_type.lower()}-{index}"


@dataclass(frozen=True)
class ChildNaming:
    scheme: ChildNamingScheme
    job_name: str
    runtime_id: str

    def name(self, replica_type: str, index: int) -> str:
        if self.scheme == NAMING_TYPE_INDEX:
            return type_index_name(self.job_name, replica_type, index)
        return child_name(self.job_name, replica_type, self.runtime_id, index)

    def selector(self, replica_type: str, index: int) -> dict[str, str]:
        """The labels that single out one replica's pod. Without the runtime id under the Go naming: the pods
        that operator made have none, and a Service tfop makes for one must still select it."""
        labels = {LABEL_JOB_NAME: self.job_name, LABEL_REPLICA_TYPE: replica_type.lower(),
                  LABEL_REPLICA_INDEX: str(index)}
        if self.scheme == NAMING_RUNTIME_ID:
            labels[LABEL_RUNTIME_ID] = self.runtime_id
        return labels

    def type_selector(self, replica_type: str) -> str:
        """The serialized label selector of every pod of `replica_type` of this job, for status.replicaStatuses'
        selector (the scale subresource's, which an HPA lists pods by). The job name and type alone would also
        match another Kubeflow kind's job of the same name: the runtime id makes it this job's, and under the Go
        naming, whose pods have none, the operator-name label does."""
        terms = [f"{LABEL_JOB_NAME}={self.job_name}", f"{LABEL_REPLICA_TYPE}={replica_type.lower()}"]
        if self.scheme == NAMING_RUNTIME_ID:
            terms.append(f"{LABEL_RUNTIME_ID}={self.runtime_id}")
        else:
            terms.append(f"{LABEL_OPERATOR_NAME} in ({OPERATOR_NAME},{LEGACY_OPERATOR_NAME})")
        return ",".join(terms)


def naming_of(job_name: str, uid: str, status: TFJobStatus, children: Iterable[Child],
              default: ChildNamingScheme = NAMING_RUNTIME_ID) -> ChildNaming:
    """The job's naming: as its status records it; else as its children show it; else `default`."""
    rid = runtime_id(uid)
    if status.child_naming is not None:
        return ChildNaming(status.child_naming, job_name, rid)
    shown = {_scheme_of(child, job_name, rid) for child in children}
    # Any child under the Go naming decides: some replica's peers already know its address by that name.
    scheme = (NAMING_TYPE_INDEX if NAMING_TYPE_INDEX in shown else NAMING_RUNTIME_ID if NAMING_RUNTIME_ID in shown
              else default)
    return ChildNaming(scheme, job_name, rid)


def _scheme_of(child: Child, job_name: str, rid: str) -> str | None:
    slot = child.slot
    if slot is None:
        return None
    name = child.name
    if name == type_index_name(job_name, slot.replica_type, slot.index):
        return NAMING_TYPE_INDEX
    if name == child_name(job_name, slot.replica_type, rid, slot.index):
        return NAMING_RUNTIME_ID
    return None
