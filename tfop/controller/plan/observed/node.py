"""A node as node loss reads it (plan/policies/node_loss.py): its taints and the conditions the cache keeps
(Ready, and those the operator config names unhealthy), with when each began."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tfop.api.fields import items, mapping, text
from tfop.api.timestamps import parse_time
from tfop.objects import Object

READY = "Ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    added: datetime | None = None  # timeAdded, which only NoExecute taints have


@dataclass(frozen=True, slots=True)
class NodeCondition:
    type: str
    status: str | None  # True, False, Unknown; None when left out
    since: datetime | None = None  # lastTransitionTime


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    taints: tuple[Taint, ...] = ()
    conditions: tuple[NodeCondition, ...] = ()
    unschedulable: bool = False

    @classmethod
    def of(cls, node: Object) -> NodeView:
        spec, status = mapping(node.get("spec")), mapping(node.get("status"))
        taints = tuple(Taint(key, parse_time(entry.get("timeAdded")))
                       for entry in _entries(spec.get("taints")) if (key := text(entry.get("key"))) is not None)
        conditions = tuple(NodeCondition(kind, text(entry.get("status")), parse_time(entry.get("lastTransitionTime")))
                           for entry in _entries(status.get("conditions"))
                           if (kind := text(entry.get("type"))) is not None)
        return cls(text(mapping(node.get("metadata")).get("name")) or "", taints, conditions,
                   spec.get("unschedulable") is True)

    def taint(self, key: str) -> Taint | None:
        return next((taint for taint in self.taints if taint.key == key), None)

    def condition(self, condition_type: str) -> NodeCondition | None:
        return next((condition for condition in self.conditions if condition.type == condition_type), None)

    @property
    def ready(self) -> bool:
        ready = self.condition(READY)
        return ready is not None and ready.status == "True"

    @property
    def unreachable(self) -> bool:
        """Not Ready because its kubelet stopped reporting (Ready Unknown or left out, or the unreachable taint)
        rather than because it says it is not ready."""
        ready = self.condition(READY)
        return ready is None or ready.status in (None, "Unknown") or self.taint(TAINT_UNREACHABLE) is not None

    @property
    def unready_since(self) -> datetime | None:
        """When a node that is not Ready stopped being so: its Ready transition, else the unreachable taint's."""
        ready = self.condition(READY)
        since = ready.since if ready is not None else None
        if since is None and (taint := self.taint(TAINT_UNREACHABLE)) is not None:
            return taint.added
        return since


def _entries(value: object) -> list[Object]:
    return [mapping(entry) for entry in items(value) if isinstance(entry, dict)]
