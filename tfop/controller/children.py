"""The kinds of child a TFJob owns, as data: adding a kind is one entry here plus its part in the planner.

Each entry names the API resource, how the operator finds its children of that kind (label selector, an index by
controlling owner), what the cache keeps of them, how a planned creation becomes a body, and how they are
deleted. The informers, expectations and the applier iterate over this table; nothing else names a kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfop.api.constants import GROUP, KIND, LABEL_OPERATOR_NAME, OPERATOR_NAME, PLURAL, VERSION
from tfop.controller.cached import slim_metadata, slim_pod
from tfop.controller.plan_types import POD, SERVICE
from tfop.controller.resources import DesiredChildren, ReplicaSlot
from tfop.kube.informer import Transform
from tfop.kube.resource import PODS, SERVICES, Resource

Object = dict[str, Any]
TFJOBS = Resource(GROUP, VERSION, PLURAL, KIND)  # the owner of every child below
BY_OWNER = "controller-uid"  # the cache index a job's children are looked up by: its uid
CHILD_SELECTOR = f"{LABEL_OPERATOR_NAME}={OPERATOR_NAME}"


@dataclass(frozen=True)
class ChildKind:
    kind: str  # the planner's name for it (the objects' `kind`)
    resource: Resource
    build: Callable[[DesiredChildren, ReplicaSlot], Object]
    transform: Transform  # what the cache keeps of each object (controller/cached.py)
    label_selector: str = CHILD_SELECTOR
    owner_index: str = BY_OWNER
    # Background: the delete returns at once and the garbage collector removes what the child owns.
    propagation_policy: str = "Background"


CHILD_KINDS: tuple[ChildKind, ...] = (
    ChildKind(POD, PODS, lambda desired, slot: desired.pod(slot.replica_type, slot.index), slim_pod),
    ChildKind(SERVICE, SERVICES, lambda desired, slot: desired.service(slot.replica_type, slot.index), slim_metadata),
)
KINDS_BY_NAME = {child_kind.kind: child_kind for child_kind in CHILD_KINDS}


def child_id(kind: str, name: str) -> str:
    """Children of different kinds share names; expectations tell them apart by kind."""
    return f"{kind}/{name}"
