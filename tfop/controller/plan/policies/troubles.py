"""What a job's pods suffer, told on the job.

A replica that cannot be scheduled, cannot pull its image, crash-loops or was evicted shows in the Running
condition's message (replica, index, reason, and the scheduler's or kubelet's words), and each kind of trouble is
announced by one Warning event when it first appears, however many replicas share it: a 100-worker job that fits
no node gets one event, not 100. (How containers ended is told by replicas/exit_events.py.)

Level-triggered like the rest of the planner: the troubles are read from the pods, and whether a kind is new is
read from the Running condition the job already has (its message carries `[Kind]` for each kind shown), so
planning again on the same state announces nothing twice, and neither does an operator restart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from tfop.api.constants import CONDITION_RUNNING, EVENT_WARNING, POD_FAILED
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.slots import ReplicaSlot, replica_ranges

UNSCHEDULABLE = "Unschedulable"
IMAGE_PULL = "ImagePullBackOff"
CRASH_LOOP = "CrashLoopBackOff"
CONTAINER_CONFIG = "CreateContainerConfigError"
EVICTED = "Evicted"
# The kubelet's waiting reasons, by the kind of trouble they are (it alternates ErrImagePull and ImagePullBackOff
# for one pod: one kind, so one event).
_WAITING = {"ImagePullBackOff": IMAGE_PULL, "ErrImagePull": IMAGE_PULL, "InvalidImageName": IMAGE_PULL,
            "CrashLoopBackOff": CRASH_LOOP, "CreateContainerConfigError": CONTAINER_CONFIG}
_MAX_GROUPS = 3  # kinds-and-messages named in one condition message
_MAX_MESSAGE = 300  # characters of the scheduler's or kubelet's words kept per group


@dataclass(frozen=True, order=True)
class Trouble:
    kind: str  # UNSCHEDULABLE, IMAGE_PULL, ...
    message: str  # the scheduler's or kubelet's words
    slot: ReplicaSlot


def pod_trouble(pod: PodView) -> tuple[str, str] | None:
    """(kind, message) of what keeps this pod from running, if it is one of the troubles above."""
    if pod.phase == POD_FAILED and pod.reason == EVICTED:
        return EVICTED, pod.message
    scheduled = pod.scheduled
    if scheduled is not None and scheduled.status == "False" and scheduled.reason == UNSCHEDULABLE:
        return UNSCHEDULABLE, scheduled.message
    for container in pod.containers:
        waiting = container.waiting
        if waiting is not None and waiting.reason in _WAITING:
            words = waiting.message
            detail = f"container {container.name or '?'}: {waiting.reason}" + (f": {words}" if words else "")
            return _WAITING[waiting.reason], detail
    return None


def troubles_of(pods: Iterable[tuple[ReplicaSlot, PodView]]) -> list[Trouble]:
    found = []
    for slot, pod in pods:
        trouble = pod_trouble(pod)
        if trouble is not None:
            found.append(Trouble(trouble[0], trouble[1], slot))
    return sorted(found)


def describe(troubles: list[Trouble]) -> str:
    """e.g. `Worker 0-99 [Unschedulable]: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.`; replicas
    with the same trouble and words are one group."""
    groups: dict[tuple[str, str], list[ReplicaSlot]] = defaultdict(list)
    for trouble in troubles:
        groups[(trouble.kind, trouble.message)].append(trouble.slot)
    described = [f"{replica_ranges(slots)} [{kind}]: {_clip(message.rstrip('.'))}"
                 for (kind, message), slots in groups.items()]
    shown = "; ".join(described[:_MAX_GROUPS])
    more = len(described) - _MAX_GROUPS
    return shown + (f"; and {more} more" if more > 0 else "")


def with_troubles(message: str, troubles: list[Trouble]) -> str:
    """A Running condition message with the troubles told after it."""
    if not troubles:
        return message
    return f"{message.rstrip('.')}. {describe(troubles)}."


def announce_troubles(draft: PlanDraft, troubles: list[Trouble]) -> None:
    """One Warning event for each kind of trouble the job's Running condition did not show before this plan."""
    before = draft.message_of(CONDITION_RUNNING, before=True)
    for kind in sorted({trouble.kind for trouble in troubles}):
        if f"[{kind}]" not in before:
            draft.event(EVENT_WARNING, kind, f"{draft.job_ref}: "
                        f"{describe([trouble for trouble in troubles if trouble.kind == kind])}.")


def _clip(message: str) -> str:
    return message if len(message) <= _MAX_MESSAGE else message[:_MAX_MESSAGE - 3] + "..."
