"""TFJob status pieces: conditions, the summary fields, and whether an object is being deleted.

Conditions follow metav1.Condition. Setting a condition to what it already says returns an equal list, so an
unchanged status compares equal and is never re-patched.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from tfop.api.constants import (
    CONDITION_CREATED,
    CONDITION_FAILED,
    CONDITION_RESTARTING,
    CONDITION_RUNNING,
    CONDITION_SUCCEEDED,
    CONDITION_SUSPENDED,
    FINALIZER_REPLICA_TRACKING,
    PHASE_CLEANUP,
    PHASE_CREATING,
    PHASE_DONE,
    PHASE_FAILED,
    PHASE_RUNNING,
    REASON_PENDING,
    STATE_CREATED,
    STATE_FAILED,
    STATE_PENDING,
    STATE_RESTARTING,
    STATE_RUNNING,
    STATE_SUCCEEDED,
    STATE_SUSPENDED,
    ConditionStatus,
    ConditionType,
    JobPhase,
    JobState,
)
from tfop.api.fields import items, mapping_at
from tfop.api.timestamps import as_utc
from tfop.controller.plan.job_status import Condition, TFJobStatus

TRUE: Final = "True"
FALSE: Final = "False"


def conditions_of(status: object) -> tuple[Condition, ...]:
    """The well-formed conditions of a raw status (entries that are not objects with a type are dropped)."""
    return TFJobStatus.from_json(status).conditions or ()


def find_condition(conditions: Iterable[Condition], condition_type: ConditionType) -> Condition | None:
    return next((condition for condition in conditions if condition.type == condition_type), None)


def condition_is_true(conditions: Iterable[Condition], condition_type: ConditionType) -> bool:
    condition = find_condition(conditions, condition_type)
    return condition is not None and condition.status == TRUE


def set_condition(conditions: tuple[Condition, ...], condition_type: ConditionType, *, true: bool, reason: str,
                  message: str, now: datetime, generation: int | None) -> tuple[Condition, ...]:
    """The conditions with this one set. It keeps its place; lastTransitionTime moves only when the status flips
    and lastUpdateTime only when something changed, so repeating a call changes nothing."""
    status: ConditionStatus = TRUE if true else FALSE
    existing = find_condition(conditions, condition_type)
    if existing is not None and (existing.status, existing.reason, existing.message) == (status, reason, message) \
            and (generation is None or existing.observed_generation == generation):
        return conditions
    timestamp = as_utc(now).replace(microsecond=0)
    flipped = existing is None or existing.status != status
    transition = timestamp if flipped or existing is None else existing.last_transition_time or timestamp
    updated = Condition(type=condition_type, status=status, reason=reason, message=message,
                        observed_generation=generation, last_transition_time=transition, last_update_time=timestamp)
    if existing is None:
        return (*conditions, updated)
    return tuple(updated if condition is existing else condition for condition in conditions)


def is_terminating(obj: object) -> bool:
    """Deleted but not gone yet (finalizers, grace period)."""
    return mapping_at(obj, "metadata").get("deletionTimestamp") is not None


def holds_finalizer(child: object) -> bool:
    """Whether the child (as the cache keeps it) still holds tfop's tracking finalizer (replicas/finished.py)."""
    return FINALIZER_REPLICA_TRACKING in items(mapping_at(child, "metadata").get("finalizers"))


@dataclass(frozen=True, slots=True)
class Summary:
    phase: JobPhase  # the older API's
    state: JobState  # the STATE column
    reason: str  # of the condition that decided them; "" when none did


def summary(conditions: Iterable[Condition], *, cleaning_up: bool) -> Summary:
    """The summary fields, derived from the conditions alone (plus whether the children of a finished or suspended
    job are still being removed) so they never disagree with them: `state`, the STATE column of `kubectl get`
    (Created, Pending, Running, Restarting, Suspended, Succeeded, Failed); the older API's `phase`; and the
    `reason` of the condition that decided them."""
    failed = find_condition(conditions, CONDITION_FAILED)
    succeeded = find_condition(conditions, CONDITION_SUCCEEDED)
    suspended = find_condition(conditions, CONDITION_SUSPENDED)
    restarting = find_condition(conditions, CONDITION_RESTARTING)
    running = find_condition(conditions, CONDITION_RUNNING)
    created = find_condition(conditions, CONDITION_CREATED)
    phase: JobPhase
    state: JobState
    deciding: Condition | None
    if _true(failed):
        phase, state, deciding = (PHASE_CLEANUP if cleaning_up else PHASE_FAILED), STATE_FAILED, failed
    elif _true(succeeded):
        phase, state, deciding = (PHASE_CLEANUP if cleaning_up else PHASE_DONE), STATE_SUCCEEDED, succeeded
    elif _true(suspended):
        phase, state, deciding = (PHASE_CLEANUP if cleaning_up else PHASE_CREATING), STATE_SUSPENDED, suspended
    elif _true(running):
        phase, state, deciding = PHASE_RUNNING, STATE_RUNNING, running
    elif _true(restarting):
        phase, state, deciding = PHASE_CREATING, STATE_RESTARTING, restarting
    elif running is not None and running.reason == REASON_PENDING:
        phase, state, deciding = PHASE_CREATING, STATE_PENDING, running
    else:
        phase, state, deciding = PHASE_CREATING, STATE_CREATED, running or created
    reason = deciding.reason if deciding is not None else None
    return Summary(phase, state, reason or "")


def _true(condition: Condition | None) -> bool:
    return condition is not None and condition.status == TRUE


MAX_LISTED = 5  # replicas or field errors named in one message; the rest are counted


def listing(entries: list[str]) -> str:
    """e.g. `a; b; c; d; e; and 3 more`, for a condition message that names many things."""
    shown = "; ".join(entries[:MAX_LISTED])
    return shown if len(entries) <= MAX_LISTED else f"{shown}; and {len(entries) - MAX_LISTED} more"
