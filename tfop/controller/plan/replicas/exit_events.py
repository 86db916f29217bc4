"""How containers ended, told on the job: one ExitedWithCode event per plan and exit code, naming the replicas that
ended since the last plan (the restart count and the replicas' tally say which those are)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from tfop.api.constants import EVENT_NORMAL
from tfop.controller.plan.children.desired import replica_slot_of
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.slots import ReplicaSlot, replica_ranges

EXITED_WITH_CODE = "ExitedWithCode"  # the Kubeflow training operator's event reason, which its users know


def latest_exits(pods: Iterable[PodView], count: int) -> list[PodView]:
    """The `count` pods whose tensorflow container ended last: the ones a grown succeeded+failed tally counts."""
    if count <= 0:
        return []
    ended = [pod for pod in pods if pod.termination is not None]
    return sorted(ended, key=lambda pod: pod.finished_at)[-count:]


def announce_exits(draft: PlanDraft, pods: Iterable[PodView], *, succeeding: bool = False) -> None:
    """e.g. `TFJob ns/mnist: Worker 0-3 exited with code 0.`, one event per exit code. `succeeding`: the plan
    makes the job Succeeded, whose event tells the exits with code 0 (one write instead of two)."""
    by_code: dict[int, list[ReplicaSlot]] = defaultdict(list)
    for pod in pods:
        termination, slot = pod.termination, replica_slot_of(pod)
        if termination is not None and slot is not None:
            by_code[termination.exit_code].append(slot)
    if succeeding and 0 in by_code:
        draft.success_detail = f"{replica_ranges(by_code.pop(0))} exited with code 0"
    for code in sorted(by_code):
        draft.event(EVENT_NORMAL, EXITED_WITH_CODE,
                    f"{draft.job_ref}: {replica_ranges(by_code[code])} exited with code {code}.")
