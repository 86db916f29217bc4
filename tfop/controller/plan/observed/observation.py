"""One pass's observations: every viewed child of the job, and the nodes its pods are on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from tfop.controller.plan.observed.batch_job import BatchJobView
from tfop.controller.plan.observed.child import Child
from tfop.controller.plan.observed.node import NodeView
from tfop.controller.plan.observed.own_child import OwnedView
from tfop.controller.plan.observed.pod import PodView
from tfop.objects import Object


@dataclass(frozen=True, slots=True)
class Observation:
    pods: tuple[PodView, ...] = ()  # the job's own and, with the Job backend, those its Jobs made
    batch_jobs: tuple[BatchJobView, ...] = ()
    services: tuple[Child, ...] = ()
    # The cached nodes the job's pods are on, by name (a name missing: the node was deleted); None: node health is
    # not known (no node cache), and nothing is decided about it.
    nodes: Mapping[str, NodeView] | None = None
    # The children of which the job has at most one (PodGroup, NetworkPolicy, HPA), by kind.
    own: Mapping[str, tuple[OwnedView, ...]] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def of(cls, *, pods: Iterable[Object], batch_jobs: Iterable[Object], services: Iterable[Object],
           nodes: Mapping[str, Object] | None, own: Mapping[str, Iterable[Object]]) -> Observation:
        return cls(tuple(PodView.of(pod) for pod in pods), tuple(BatchJobView.of(job) for job in batch_jobs),
                   tuple(Child.of(service) for service in services),
                   None if nodes is None else MappingProxyType({name: NodeView.of(node)
                                                                for name, node in nodes.items()}),
                   MappingProxyType({kind: tuple(OwnedView.of(child) for child in children)
                                     for kind, children in own.items()}))

    def own_of(self, kind: str) -> tuple[OwnedView, ...]:
        return self.own.get(kind, ())
