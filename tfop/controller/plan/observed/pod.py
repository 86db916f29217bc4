"""A pod as the planner reads it: where it runs, its phase, how its containers wait or ended, and whether the
cluster took it (DisruptionTarget)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tfop.api.constants import DEFAULT_CONTAINER_NAME, POD_FAILED, POD_PENDING, POD_PHASES, POD_SUCCEEDED, PodPhase
from tfop.api.exit_codes import ExitClass, ExitClassLabel, classify_termination, exit_class_label
from tfop.api.fields import integer, items, mapping, one_of, text
from tfop.api.timestamps import parse_time
from tfop.controller.plan.frozen import make
from tfop.controller.plan.job_status import DisruptionSource
from tfop.controller.plan.observed.child import Child, child_fields
from tfop.objects import Object

DISRUPTION_TARGET = "DisruptionTarget"
POD_SCHEDULED = "PodScheduled"


@dataclass(frozen=True, slots=True)
class Termination:
    """How a container last ended, as the kubelet reported it."""

    exit_code: int
    reason: str = ""  # e.g. OOMKilled, Error, Completed
    message: str = ""

    @property
    def exit_class(self) -> ExitClass:
        return classify_termination(self.exit_code, self.reason)

    def describe(self) -> str:
        """e.g. `exited with code 137 (OOMKilled)`."""
        return f"exited with code {self.exit_code}" + (f" ({self.reason})" if self.reason else "")


@dataclass(frozen=True, slots=True)
class Terminated:
    """A container state's `terminated`; the exit code may be missing from a status written by hand."""

    exit_code: int | None
    reason: str = ""
    message: str = ""
    finished_at: str = ""  # as the kubelet wrote it

    def termination(self) -> Termination | None:
        return None if self.exit_code is None else Termination(self.exit_code, self.reason, self.message)


@dataclass(frozen=True, slots=True)
class Waiting:
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class ContainerRun:
    """One container's status: its in-place restarts, and how its current and last runs wait or ended."""

    name: str
    restart_count: int = 0
    terminated: Terminated | None = None  # state.terminated
    waiting: Waiting | None = None  # state.waiting
    last_terminated: Terminated | None = None  # lastState.terminated

    def termination(self) -> Termination | None:
        """The current termination, or for a container restarted in place its last one."""
        for run in (self.terminated, self.last_terminated):
            if run is not None and run.exit_code is not None:
                return run.termination()
        return None

    def finished_at(self) -> str:
        """When the termination `termination` reads ended; "" if neither run says."""
        for run in (self.terminated, self.last_terminated):
            if run is not None and run.finished_at:
                return run.finished_at
        return ""


@dataclass(frozen=True, slots=True)
class Disruption:
    """Why the cluster, not the program, ended the pod. As the cache shows it, the pod's DisruptionTarget condition
    (True), whose reason says who took it (PreemptionByScheduler, EvictionByEvictionAPI, DeletionByTaintManager,
    TerminationByKubelet); plan/policies/disruptions.py decides the other sources once per pass (a drain that left no
    condition, a lost or reclaimed node, a peer's disruption breaking a synchronous job's collective)."""

    reason: str = ""
    message: str = ""
    source: DisruptionSource = "DisruptionTarget"
    at: datetime | None = None  # when it began: the condition's lastTransitionTime, or as the source tells


@dataclass(frozen=True, slots=True)
class PodCondition:
    status: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class PodView(Child):
    node_name: str | None = None
    phase: PodPhase = POD_PENDING
    reason: str = ""  # e.g. Evicted
    message: str = ""
    # PodScheduled, which the cache keeps only while it is not True: why the pod is not scheduled.
    scheduled: PodCondition | None = None
    disruption: Disruption | None = None  # evicted, preempted, drained; None: not disrupted
    containers: tuple[ContainerRun, ...] = ()
    # In-place restarts a peer's disruption caused (policies/disruptions.py): not counted against backoffLimit.
    uncounted_restarts: int = 0

    @classmethod
    def of(cls, pod: Object) -> PodView:
        status = mapping(pod.get("status"))
        conditions = [mapping(entry) for entry in items(status.get("conditions"))]
        scheduled = next((_condition(entry) for entry in conditions if entry.get("type") == POD_SCHEDULED), None)
        disrupted = next((entry for entry in conditions
                          if entry.get("type") == DISRUPTION_TARGET and entry.get("status") == "True"), None)
        return make(cls, **child_fields(pod), node_name=text(mapping(pod.get("spec")).get("nodeName")) or None,
                   phase=one_of(status.get("phase"), POD_PHASES) or POD_PENDING,
                   reason=text(status.get("reason")) or "", message=text(status.get("message")) or "",
                   scheduled=scheduled,
                   disruption=None if disrupted is None else Disruption(
                       text(disrupted.get("reason")) or "", text(disrupted.get("message")) or "",
                       at=parse_time(disrupted.get("lastTransitionTime"))),
                   containers=tuple(_container(mapping(entry)) for entry in items(status.get("containerStatuses"))))

    @property
    def ended(self) -> bool:
        return self.phase in (POD_SUCCEEDED, POD_FAILED)

    @property
    def ended_before_deleted(self) -> bool:
        """Whether the pod ended (a final phase) before anyone deleted it, if anyone did. The apiserver deletes a
        pod that has already ended without a grace period, while a running pod's delete waits out its grace period
        for the kubelet to stop it, after which it may end with any exit code, 0 included, because it was
        stopped."""
        return self.ended and (not self.terminating or self.deletion_grace == 0)

    @property
    def disrupted(self) -> bool:
        return self.disruption is not None

    @property
    def restart_count(self) -> int:
        """In-place restarts the kubelet made, over all the pod's containers."""
        return sum(max(container.restart_count, 0) for container in self.containers)

    @property
    def counted_restarts(self) -> int:
        """The in-place restarts counted against backoffLimit: all but those a peer's disruption caused."""
        return max(self.restart_count - self.uncounted_restarts, 0)

    def container(self, name: str = DEFAULT_CONTAINER_NAME) -> ContainerRun | None:
        return next((container for container in self.containers if container.name == name), None)

    @property
    def termination(self) -> Termination | None:
        """How the tensorflow container ended: its current termination, or its last one if restarted in place."""
        return next((found for container in self.containers if container.name == DEFAULT_CONTAINER_NAME
                     if (found := container.termination()) is not None), None)

    @property
    def exit_code(self) -> int | None:
        termination = self.termination
        return termination.exit_code if termination is not None else None

    @property
    def exit_class_name(self) -> ExitClassLabel:
        """For metrics: how the tensorflow container last ended, or `unknown` (evicted, node lost)."""
        termination = self.termination
        return exit_class_label(termination.exit_class if termination is not None else None)

    @property
    def finished_at(self) -> str:
        """When the termination `termination` reads ended, as the kubelet wrote it; "" if it does not say."""
        return next((found for container in self.containers if container.name == DEFAULT_CONTAINER_NAME
                     if (found := container.finished_at())), "")

    @property
    def ended_at(self) -> datetime | None:
        """When the tensorflow container's current run ended (its kubelet's clock), or None if it has not."""
        container = self.container()
        if container is None or container.terminated is None:
            return None
        return parse_time(container.terminated.finished_at)

    @property
    def restarted_at(self) -> str:
        """When the tensorflow container's run before an in-place restart ended; "" if it was not restarted."""
        container = self.container()
        if container is None or container.last_terminated is None:
            return ""
        return container.last_terminated.finished_at


def _condition(entry: Object) -> PodCondition:
    return PodCondition(text(entry.get("status")) or "", text(entry.get("reason")) or "",
                        text(entry.get("message")) or "")


def _container(entry: Object) -> ContainerRun:
    state, last = mapping(entry.get("state")), mapping(entry.get("lastState"))
    waiting = state.get("waiting")
    return ContainerRun(text(entry.get("name")) or "", integer(entry.get("restartCount")) or 0,
                        _terminated(state.get("terminated")),
                        Waiting(text(waiting.get("reason")) or "", text(waiting.get("message")) or "")
                        if isinstance(waiting, dict) else None,
                        _terminated(last.get("terminated")) if last else None)


def _terminated(value: object) -> Terminated | None:
    if not isinstance(value, dict):
        return None
    return Terminated(integer(value.get("exitCode")), text(value.get("reason")) or "", text(value.get("message")) or "",
                      text(value.get("finishedAt")) or "")
