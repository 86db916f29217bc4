"""A child of which a job has at most one (its PodGroup, NetworkPolicy, HPA: plan/children/job_child.py), as the
planner reads it: its metadata, the phase and conditions a scheduler wrote (a PodGroup's), and its stored spec,
which only the kind's in-line check reads, comparing it with the spec the job wants."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tfop.api.fields import items, mapping, text
from tfop.controller.plan.observed.child import Child, child_fields
from tfop.objects import Object


@dataclass(frozen=True, slots=True)
class ChildCondition:
    type: str
    status: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnedView(Child):
    # The stored spec as cached: JSON, read only by the kind's in-line check (a body compared with a body).
    spec: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    phase: str = ""  # status.phase ("" before a controller or scheduler set one)
    conditions: tuple[ChildCondition, ...] = ()  # status.conditions, in the order written

    @classmethod
    def of(cls, obj: Object) -> OwnedView:
        status = mapping(obj.get("status"))
        conditions = tuple(ChildCondition(text(entry.get("type")) or "", text(entry.get("status")) or "",
                                          text(entry.get("message")) or "")
                           for entry in map(mapping, items(status.get("conditions"))))
        return cls(**child_fields(obj), spec=MappingProxyType(mapping(obj.get("spec"))),
                   phase=text(status.get("phase")) or "", conditions=conditions)
