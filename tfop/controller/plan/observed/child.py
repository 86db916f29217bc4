"""What every observed child has: its identity, labels, controller and deletion mark, from `metadata`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from itertools import repeat
from types import MappingProxyType
from typing import TypedDict

from tfop.api.constants import FINALIZER_REPLICA_TRACKING, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from tfop.api.defaults import canonical_replica_type
from tfop.api.fields import integer, items, mapping, text
from tfop.api.timestamps import parse_time
from tfop.controller.plan.frozen import make
from tfop.controller.plan.slots import ReplicaSlot
from tfop.objects import Object

_NO_LABELS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Owner:
    """A child's controller ownerReference (the only one the cache keeps)."""

    api_version: str
    kind: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Child:
    """A child's metadata as the planner reads it; the uid and name are what a delete names."""

    name: str = ""
    uid: str = ""
    namespace: str = ""
    resource_version: str = ""
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)
    annotations: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)
    controller: Owner | None = None
    created: datetime | None = None
    terminating: bool = False  # deleted but not gone (finalizers, grace period)
    deletion_deadline: datetime | None = None  # the deletionTimestamp: when its grace period ends
    deletion_grace: int | None = None  # deletionGracePeriodSeconds: 0 for a pod deleted once it had ended
    tracked: bool = False  # holds tfop's finalizer (replicas/finished.py)
    # The replica slot its replica-type and replica-index labels name, whatever its name; None unless both are
    # well formed.
    slot: ReplicaSlot | None = None

    @classmethod
    def of(cls, obj: Object) -> Child:
        return make(cls, **child_fields(obj))


class ChildFields(TypedDict):
    name: str
    uid: str
    namespace: str
    resource_version: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    controller: Owner | None
    created: datetime | None
    terminating: bool
    deletion_deadline: datetime | None
    deletion_grace: int | None
    tracked: bool
    slot: ReplicaSlot | None


def child_fields(obj: Object) -> ChildFields:
    """The Child fields of `obj`, for the views that extend Child."""
    metadata = mapping(obj.get("metadata"))
    deletion = metadata.get("deletionTimestamp")
    return {"name": text(metadata.get("name")) or "", "uid": text(metadata.get("uid")) or "",
            "namespace": text(metadata.get("namespace")) or "",
            "resource_version": text(metadata.get("resourceVersion")) or "",
            "labels": _texts(metadata.get("labels")), "annotations": _texts(metadata.get("annotations")),
            "controller": _controller(metadata.get("ownerReferences")),
            "created": parse_time(metadata.get("creationTimestamp")),
            "terminating": deletion is not None, "deletion_deadline": parse_time(deletion),
            "deletion_grace": integer(metadata.get("deletionGracePeriodSeconds")),
            "tracked": FINALIZER_REPLICA_TRACKING in items(metadata.get("finalizers")),
            "slot": _slot(mapping(metadata.get("labels")))}


def _slot(labels: Mapping[str, object]) -> ReplicaSlot | None:
    replica_type = canonical_replica_type(labels.get(LABEL_REPLICA_TYPE))
    index_label = text(labels.get(LABEL_REPLICA_INDEX)) or ""
    if replica_type is None or not index_label.isascii() or not index_label.isdigit():
        return None
    return ReplicaSlot(replica_type, int(index_label))


def _texts(value: object) -> Mapping[str, str]:
    """The string entries of a map, read-only. The cache's labels are one shared dict per distinct set, never
    changed in place (an update replaces the object), so a well-formed one is wrapped rather than copied."""
    entries = mapping(value)
    if not entries:
        return _NO_LABELS
    if all(map(isinstance, entries.values(), repeat(str))):  # map, not a generator: this runs for every child
        return MappingProxyType(entries)
    return MappingProxyType({key: entry for key, entry in entries.items() if isinstance(entry, str)})


def _controller(references: object) -> Owner | None:
    for entry in items(references):
        ref = mapping(entry)
        if ref.get("controller") is True:
            return Owner(text(ref.get("apiVersion")) or "", text(ref.get("kind")) or "", text(ref.get("name")) or "",
                         text(ref.get("uid")) or "")
    return None
