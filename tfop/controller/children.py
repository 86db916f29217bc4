"""The kinds of child a TFJob owns, as data: a replica's kind is one entry here plus its part in the planner; a
kind of which the job has one is one entry of the planner's table (docs/development/adding-a-child-kind.md).

Each entry names the API resource, how the operator finds its children of that kind (label selector, an index by
controlling owner), what the cache keeps of them, how they are deleted, and their scope: one per replica slot
(Pods, Services) or one per job (a PodGroup). Their bodies are the planner's (the plan's `desired`,
plan/children/desired.py). The informers, expectations and the applier iterate over the table; nothing else names
a kind.

The job's own children (one of each kind at most: the PodGroup, NetworkPolicy, HPA) come from the planner's table
(plan/children/job_children.py), each entry giving its resource and what the cache keeps; this module adds the
informer's selector and index. That table depends on the controller config: a PodGroup kind exists only when a
gang scheduler is configured (and its resource is that scheduler's), so `child_kinds(gang)` builds it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from tfop.api.constants import (
    GROUP,
    KIND,
    LABEL_OPERATOR_NAME,
    LEGACY_OPERATOR_NAME,
    OPERATOR_NAME,
    PLURAL,
    VERSION,
)
from tfop.api.kueue import KUEUE_GROUP, KUEUE_VERSION
from tfop.controller.cache_transforms import slim_batch_job, slim_keeping, slim_metadata, slim_pod
from tfop.controller.plan.children.job_child import JobChildKind
from tfop.controller.plan.children.job_children import job_child_kinds
from tfop.controller.plan.gang_schedulers import GangScheduler
from tfop.controller.plan.types import JOB, POD, SERVICE
from tfop.kube.informer import Transform
from tfop.kube.resource import JOBS, PODS, SERVICES, Resource
from tfop.objects import Object

TFJOBS = Resource(GROUP, VERSION, PLURAL, KIND)  # the owner of every child below
WORKLOADS = Resource(KUEUE_GROUP, KUEUE_VERSION, "workloads", "Workload")
# Watched, not owned, with tfop's own Kueue integration: an admission names flavors, whose node labels and
# tolerations its pods get, and a job may name a WorkloadPriorityClass, whose value its Workload gets.
RESOURCE_FLAVORS = Resource(KUEUE_GROUP, KUEUE_VERSION, "resourceflavors", "ResourceFlavor", namespaced=False)
WORKLOAD_PRIORITY_CLASSES = Resource(KUEUE_GROUP, KUEUE_VERSION, "workloadpriorityclasses", "WorkloadPriorityClass",
                                     namespaced=False)
# ... and a job that names no WorkloadPriorityClass takes its Workload's priority from its pods' PriorityClass, or
# the cluster's global default one, as Kueue's job integrations do.
POD_PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
BY_OWNER = "controller-uid"  # the cache index a job's children are looked up by: its uid
# The children the Kubeflow training operator's TFJob controller made, tfop's own (which carry the same value), and
# those of tfop versions that wrote `tfop`: all are adopted by their controller ownerReference (the owner index).
# Not every pod with a job-name label: the Go operator's other frameworks label theirs too, and the cache would
# hold them for nothing.
CHILD_SELECTOR = f"{LABEL_OPERATOR_NAME} in ({OPERATOR_NAME},{LEGACY_OPERATOR_NAME})"


class Scope(enum.Enum):
    REPLICA = "replica"  # one per replica slot; a Creation names its slot
    JOB = "job"  # one per job; a Creation has no slot, and it is created before any replica's children


@dataclass(frozen=True)
class ChildKind:
    kind: str  # the planner's name for it (the objects' `kind`)
    resource: Resource
    transform: Transform  # what the cache keeps of each object (controller/cache_transforms.py)
    scope: Scope = Scope.REPLICA
    label_selector: str | None = CHILD_SELECTOR  # None: every object of the kind (JobChildKind.others_seen)
    owner_index: str = BY_OWNER
    # Background: the delete returns at once and the garbage collector removes what the child owns.
    propagation_policy: str = "Background"
    # The kind of object these children control in turn that belongs to the job too (a Job's pods): the wiring
    # passes those, found by their controller's uid in that kind's owner index, with the job's own of that kind.
    grandchildren: str | None = None


def replicas_selector(resource: Resource, table: tuple[JobChildKind, ...] | None = None) -> str:
    """The selector of a replica kind's informer: tfop's children, less the job's own of the same resource (of the
    table, or of `table`), which have an informer of their own selecting on their entry's marker label (the
    TensorBoard's Service). A job's own kind on a replica's resource without a marker label could not be told from
    the replicas'."""
    markers = []
    for kind in job_child_kinds(None, own_kueue=True) if table is None else table:
        if (kind.group, kind.plural) == (resource.group, resource.plural):
            if not kind.marker_label:
                raise ValueError(f"{kind.kind} shares {resource.plural} with a replica's children: it needs a "
                                 "marker_label")
            markers.append(f"!{kind.marker_label}")
    return ",".join([CHILD_SELECTOR, *markers])


REPLICA_KINDS: tuple[ChildKind, ...] = (
    ChildKind(POD, PODS, slim_pod, label_selector=replicas_selector(PODS)),
    ChildKind(SERVICE, SERVICES, slim_metadata, label_selector=replicas_selector(SERVICES)),
    # The Job backend's. Foreground: a Job being deleted stays, terminating, until its pods are gone, so the
    # planner sees the replica until nothing of it runs (and its pods' restarts stay countable).
    ChildKind(JOB, JOBS, slim_batch_job, label_selector=replicas_selector(JOBS), propagation_policy="Foreground",
              grandchildren=POD),
)


def own_kind(kind: JobChildKind) -> ChildKind:
    """One kind of the job's own children, as its entry in the planner's table says (plan/children/job_child.py):
    the same informer, cache and writer for each. The resource is named by the plan's name for the kind, so one
    that shares its REST collection with another kind (the TensorBoard's Service) has an informer of its own,
    selecting on its marker label."""
    selector = f"{CHILD_SELECTOR},{kind.marker_label}" if kind.marker_label else CHILD_SELECTOR
    if kind.others_seen:  # every object of the kind; tfop's cached whole, the others' metadata only
        return ChildKind(kind.kind, Resource(kind.group, kind.version, kind.plural, kind.kind),
                         slim_keeping(kind.cached, only_if=made_by_tfop), scope=Scope.JOB, label_selector=None)
    return ChildKind(kind.kind, Resource(kind.group, kind.version, kind.plural, kind.kind), slim_keeping(kind.cached),
                     scope=Scope.JOB, label_selector=selector)


def made_by_tfop(child: Object) -> bool:
    """Whether tfop (or the Go operator it replaces) made the child: what CHILD_SELECTOR selects."""
    labels = (child.get("metadata") or {}).get("labels") or {}
    return labels.get(LABEL_OPERATOR_NAME) in (OPERATOR_NAME, LEGACY_OPERATOR_NAME)


@dataclass(frozen=True)
class ChildKinds:
    """The table for one controller config."""

    kinds: tuple[ChildKind, ...]
    by_name: Mapping[str, ChildKind] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {kind.kind: kind for kind in self.kinds})

    def __iter__(self) -> Iterator[ChildKind]:
        return iter(self.kinds)

    def __getitem__(self, name: str) -> ChildKind:
        return self.by_name[name]


def child_kinds(gang: GangScheduler | None, *, own_kueue: bool = False) -> ChildKinds:
    """The job's own children (plan/children/job_children.py: its PodGroup when a gang scheduler is configured
    and its CRD installed, its NetworkPolicy and HPA, which any job may ask for, its Kueue Workload with tfop's own
    Kueue integration), then Pods, Services and Jobs (any job may choose the Job backend)."""
    return ChildKinds((*(own_kind(kind) for kind in job_child_kinds(gang, own_kueue=own_kueue)), *REPLICA_KINDS))


def pod_group_resource(gang: GangScheduler) -> Resource:
    return Resource(gang.group, gang.version, gang.plural, gang.kind)


CHILD_KINDS = child_kinds(None)
KINDS_BY_NAME = CHILD_KINDS.by_name


def child_id(kind: str, name: str) -> str:
    """Children of different kinds share names; expectations tell them apart by kind."""
    return f"{kind}/{name}"
