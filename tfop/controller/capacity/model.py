"""What the capacity auto-scaler decides on, as plain values: resources, nodes with the room they have left, the
elastic jobs, the pods that wait for resources, and what it remembers between two looks.

Resources are the amounts pods request (cpu in cores, memory in bytes, extended resources such as GPUs in units),
as exact fractions; a node's room is its allocatable minus the requests of every pod bound to it that has not
ended. Limits, affinity, topology spread and pod counts are not modelled: a node either has room for a pod's
requests, its nodeSelector matches the node's labels and the pod tolerates the node's NoSchedule and NoExecute
taints, or it does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from tfop.controller.plan.quantity import QuantityError, parse_quantity

Resources = Mapping[str, Fraction]  # by resource name
_UNSCHEDULING = ("NoSchedule", "NoExecute")


def added(*amounts: Resources) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for amount in amounts:
        for name, value in amount.items():
            total[name] = total.get(name, Fraction(0)) + value
    return total


def taken(room: Resources, request: Resources) -> dict[str, Fraction]:
    return {**room, **{name: room.get(name, Fraction(0)) - value for name, value in request.items()}}


def fits(request: Resources, room: Resources) -> bool:
    return all(value <= room.get(name, Fraction(0)) for name, value in request.items() if value > 0)


def covered(need: Resources, freed: Resources) -> bool:
    return all(freed.get(name, Fraction(0)) >= value for name, value in need.items())


def quantities(values: Any) -> dict[str, Fraction]:
    """A requests or allocatable map, each quantity parsed; a quantity the apiserver would not have accepted
    counts as none."""
    if not isinstance(values, Mapping):
        return {}
    parsed = {}
    for name, value in values.items():
        try:
            parsed[str(name)] = parse_quantity(value)
        except QuantityError:
            continue
    return parsed


def pod_request(spec: Any) -> dict[str, Fraction]:
    """What a pod spec requests of a node, as the scheduler counts it: the sum over its containers, at least each
    init container's, plus its overhead. A container that sets a limit and no request requests its limit."""
    spec = spec if isinstance(spec, Mapping) else {}

    def of(container: Any) -> dict[str, Fraction]:
        resources = container.get("resources") if isinstance(container, Mapping) else None
        resources = resources if isinstance(resources, Mapping) else {}
        return {**quantities(resources.get("limits")), **quantities(resources.get("requests"))}

    total = added(*(of(container) for container in spec.get("containers") or ()))
    for init in spec.get("initContainers") or ():
        total = {name: max(total.get(name, Fraction(0)), value) for name, value in {**total, **of(init)}.items()}
    return added(total, quantities(spec.get("overhead")))


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Placement:
    """Where a pod may go: its nodeSelector, and the tolerations of its spec."""

    node_selector: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    tolerations: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def of(cls, spec: Any) -> Placement:
        spec = spec if isinstance(spec, Mapping) else {}
        selector = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), Mapping) else {}
        tolerations = tuple(t for t in spec.get("tolerations") or () if isinstance(t, Mapping))
        return cls(MappingProxyType({str(k): str(v) for k, v in selector.items()}), tolerations)

    def allows(self, node: NodeRoom) -> bool:
        return (all(node.labels.get(key) == value for key, value in self.node_selector.items())
                and all(self._tolerates(taint) for taint in node.taints if taint.effect in _UNSCHEDULING))

    def _tolerates(self, taint: Taint) -> bool:
        for toleration in self.tolerations:
            if toleration.get("effect") not in (None, "", taint.effect):
                continue
            if toleration.get("operator") == "Exists":
                if toleration.get("key") in (None, "", taint.key):
                    return True
            elif toleration.get("key") == taint.key and toleration.get("value", "") == taint.value:
                return True
        return False


@dataclass(frozen=True)
class NodeRoom:
    """A node pods can be scheduled to (Ready, not cordoned), and what it has left."""

    name: str
    room: Resources
    labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True)
class ElasticJob:
    """A running TFJob whose elasticPolicy lets its Worker count move."""

    key: str  # namespace/name
    created: datetime
    min_workers: int
    max_workers: int
    workers: int  # the Worker count its spec asks for now
    worker_request: Resources  # what one worker pod requests
    placement: Placement = field(default_factory=Placement)
    has_hpa: bool = False  # its elasticPolicy has metrics: its HPA owns its size
    # Its worker pods are those of its Worker count, none being deleted: no resize is under way.
    steady: bool = True

    @property
    def fulfilled(self) -> Fraction:
        return Fraction(self.workers, self.max_workers)


@dataclass(frozen=True)
class WaitingPod:
    """A pod of a TFJob that the scheduler found no node for (PodScheduled False, reason Unschedulable)."""

    job: str  # its TFJob's key
    replica_type: str  # as the label has it: worker, ps, chief, ...
    index: int
    request: Resources
    since: datetime  # when the scheduler first found no node
    short_of: tuple[str, ...] = ()  # the resources the scheduler said no node had enough of ("Insufficient cpu")


@dataclass(frozen=True)
class GiveUp:
    """A job's latest give-up. The model's room is not the scheduler's (affinity, topology spread): a worker it
    placed may have been refused, and would be again. So the job grows again only once the nodes have room for more
    of its workers than they had then, or once a backoff that doubles with each give-up has passed."""

    at: datetime
    count: int  # the job's give-ups so far
    fitting: int  # how many of its workers the nodes' room held then (at most its maximum)


@dataclass(frozen=True)
class Memory:
    """What one look leaves to the next."""

    idle_since: datetime | None = None  # since when some elastic job's worker would fit, with nothing waiting
    shrunk_at: Mapping[str, datetime] = field(default_factory=lambda: MappingProxyType({}))  # waiting job -> when
    shrunk_for: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # shrunk job -> waiting job
    given_up: Mapping[str, GiveUp] = field(default_factory=lambda: MappingProxyType({}))  # job -> its latest give-up


@dataclass(frozen=True)
class Resize:
    job: str
    before: int
    after: int
    reason: str  # "Worker 4 -> 2: ns/b's pods waited 30 s for cpu": the annotation, the event, the log

    @property
    def cause(self) -> str:
        return self.reason.partition(": ")[2]


def frozen(entries: Iterable[tuple[str, Any]]) -> Mapping[str, Any]:
    return MappingProxyType(dict(entries))
