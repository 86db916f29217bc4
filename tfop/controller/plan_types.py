"""The planner's inputs and outputs as plain data: what the wiring passes in and what it must apply."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tfop.api.fields import mapping, text
from tfop.controller.accelerators import Accelerators
from tfop.controller.resources import DEFAULT_SERVICE_DOMAIN


@dataclass(frozen=True)
class PlannerConfig:
    # Addresses in TF_CONFIG are `{child}.{namespace}.{service_domain}:{port}`; e.g. `svc.cluster.local`.
    service_domain: str = DEFAULT_SERVICE_DOMAIN
    # Env vars and hostPath mounts for containers that request an accelerator resource.
    accelerators: Accelerators = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class ChildRef:
    """A child to delete: the uid goes into the delete's precondition, so a newer object that took the same name
    is never deleted by mistake."""

    name: str
    uid: str

    @classmethod
    def of(cls, child: dict[str, Any]) -> ChildRef:
        metadata = mapping(child.get("metadata"))
        return cls(text(metadata.get("name")) or "", text(metadata.get("uid")) or "")


@dataclass(frozen=True)
class JobEvent:
    type: str  # Normal or Warning
    reason: str
    message: str


@dataclass(frozen=True)
class JobCounters:
    """How much to bump each job counter. Each comes from a status transition the plan makes, so the wiring
    should bump them only once the status patch succeeded: then a job is counted once, even across restarts."""

    created: int = 0
    deleted: int = 0
    successful: int = 0
    failed: int = 0
    restarted: int = 0
    # The restarts above by how the container ended: retryable, permanent, succeeded, or unknown (no exit code:
    # evicted, node lost).
    restarts_by_exit_class: tuple[tuple[str, int], ...] = ()
    started_running: int = 0  # all replicas ran for the first time (never restarted before): start latency


@dataclass(frozen=True)
class Plan:
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    create_services: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[ChildRef] = field(default_factory=list)
    delete_services: list[ChildRef] = field(default_factory=list)
    status: dict[str, Any] | None = None  # the complete new status; None when it is unchanged
    events: list[JobEvent] = field(default_factory=list)
    requeue_after: float | None = None  # seconds until the soonest timer (deadline, TTL)
    delete_job: bool = False  # ttlSecondsAfterFinished has passed
    counters: JobCounters = field(default_factory=JobCounters)
