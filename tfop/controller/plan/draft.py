"""A plan being built: a working copy of the job's status plus the actions decided so far.

Events and counters for condition transitions are derived here, once, by comparing the conditions the job had with
the ones the plan leaves: the rules in reconcile only set conditions and never have to remember to announce them.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from tfop.api.constants import (
    CONDITION_CREATED,
    CONDITION_FAILED,
    CONDITION_RESTARTING,
    CONDITION_RUNNING,
    CONDITION_SUCCEEDED,
    CONDITION_SUSPENDED,
    EVENT_NORMAL,
    EVENT_WARNING,
    REASON_CREATED,
    REASON_PENDING,
    REASON_RESUMED,
    ConditionType,
    EventType,
)
from tfop.api.exit_codes import ExitClassLabel
from tfop.api.fields import integer, mapping, text
from tfop.api.kueue import REASON_ADAPTER_CONFLICT
from tfop.api.timestamps import as_utc
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job_status import Condition, TFJobStatus
from tfop.controller.plan.observed.child import Child
from tfop.controller.plan.status import (
    FALSE,
    TRUE,
    condition_is_true,
    find_condition,
    set_condition,
    summary,
)
from tfop.controller.plan.types import (
    ChildBodies,
    ChildPatch,
    ChildRef,
    Creation,
    JobCounters,
    JobEvent,
    Plan,
    PodAnnotation,
    ReplicaRestart,
    StatusWait,
)

# A suspension the user did not ask for and must act on: told as a Warning.
WARNED_SUSPENSIONS = frozenset({REASON_ADAPTER_CONFLICT})


class PlanDraft:
    def __init__(self, job: dict[str, Any], now: datetime, config: ControllerConfig) -> None:
        metadata = mapping(job.get("metadata"))
        self.now = as_utc(now)
        self.config = config
        self.job_name = text(metadata.get("name")) or ""
        self.job_ref = f"TFJob {text(metadata.get('namespace')) or ''}/{self.job_name}"
        self.generation = integer(metadata.get("generation"))
        self.uid = text(metadata.get("uid")) or None  # None only for a job too broken to have been stored
        self._stored = isinstance(job.get("status"), dict)  # the job has a status object
        self.previous = TFJobStatus.from_json(job.get("status"))  # parsed once; the status the plan started from
        self.status = self.previous  # the status as this plan leaves it, replaced field by field
        self._old_conditions = self.previous.conditions or ()
        self.conditions = self._old_conditions
        self.create: list[Creation] = []
        self.delete: list[ChildRef] = []
        self.patch: list[ChildPatch] = []
        self.annotate: list[PodAnnotation] = []
        self.release: list[ChildRef] = []
        self.retired: set[str] = set()  # uids of live pods deleted with nothing of their end to record
        self.desired: ChildBodies | None = None
        self.events: list[JobEvent] = []
        self.requeue_after: float | None = None
        self.delete_job = False
        self.restarts = 0  # new restarts seen by this plan (in place and recreations)
        self.restarts_by_exit_class: Counter[ExitClassLabel] = Counter()
        self.restarted: list[ReplicaRestart] = []
        self.resizes: Counter[tuple[str, str]] = Counter()  # told by this plan, by (cause, strategy)
        self.disruptions: Counter[str] = Counter()  # recorded by this plan, by reason
        self.cleaning_up = False  # a finished or suspended job still has children going away
        self.success_detail = ""  # told by the Succeeded event after its message (the exits it ended with)
        self._said_once = False  # an event only this plan can tell: its status must not wait for a later plan

    def set_condition(self, condition_type: ConditionType, *, true: bool, reason: str, message: str) -> None:
        self.conditions = set_condition(self.conditions, condition_type, true=true, reason=reason, message=message,
                                        now=self.now, generation=self.generation)

    def clear_condition(self, condition_type: ConditionType, *, reason: str, message: str) -> None:
        """Sets a condition False, but only if the job has it: absent already means not true."""
        if find_condition(self.conditions, condition_type) is not None:
            self.set_condition(condition_type, true=False, reason=reason, message=message)

    def drop_condition(self, condition_type: ConditionType) -> None:
        """Removes a condition that is only there while something is wrong (the TensorBoard's)."""
        self.conditions = tuple(c for c in self.conditions if c.type != condition_type)

    def is_true(self, condition_type: ConditionType) -> bool:
        return condition_is_true(self.conditions, condition_type)

    def condition(self, condition_type: ConditionType) -> Condition | None:
        return find_condition(self.conditions, condition_type)

    def old_condition(self, condition_type: ConditionType) -> Condition | None:
        """The condition as the job had it before this plan."""
        return find_condition(self._old_conditions, condition_type)

    def message_of(self, condition_type: ConditionType, *, before: bool = False) -> str:
        """The condition's message as this plan leaves it (`before`: as the job had it); "" without one."""
        condition = self.old_condition(condition_type) if before else self.condition(condition_type)
        return condition.message or "" if condition is not None else ""

    def event(self, event_type: EventType, reason: str, message: str, *, only_this_plan: bool = False) -> None:
        """`only_this_plan`: the event tells what this plan does (not a state a later plan would see again), so it
        must not be dropped with a status held back for a later plan."""
        self.events.append(JobEvent(event_type, reason, message))
        self._said_once = self._said_once or only_this_plan

    def requeue(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        self.requeue_after = seconds if self.requeue_after is None else min(self.requeue_after, seconds)

    def delete_child(self, kind: str, child: Child | dict[str, Any], *, force: bool = False) -> None:
        self.delete.append(ChildRef.of(kind, child, force=force))

    def deleted_uids(self, kind: str) -> set[str]:
        return {ref.uid for ref in self.delete if ref.kind == kind}

    @property
    def stamp(self) -> datetime:
        """The plan's `now` to the second, as a status timestamp keeps it."""
        return self.now.replace(microsecond=0)

    def note_cleanup(self, children_going: bool) -> None:
        """A finished or suspended job is cleaning up while it deletes children or waits for them to go."""
        self.cleaning_up = bool(self.delete) or children_going

    def finalize(self, *, refused: bool = False) -> Plan:
        """`refused`: the apiserver refused creates of the plan made from this state, which the status must tell."""
        if self.conditions or self.status.conditions is not None or "conditions" in self.status.extra:
            self.status = replace(self.status, conditions=self.conditions)
        told = summary(self.conditions, cleaning_up=self.cleaning_up)
        self.status = replace(self.status, phase=told.phase, state=told.state, reason=told.reason)
        events, counters = self._transitions()
        status: TFJobStatus | None = None
        if not self.delete_job and (not self._stored or self.status.without_reconcile_time()
                                    != self.previous.without_reconcile_time()):
            # Stamped only alongside a real change, so an idle job is never re-patched.
            self.status = replace(self.status, last_reconcile_time=self.stamp)
            status = self.status
        return Plan(create=self.create, delete=self.delete, patch=self.patch, annotate=self.annotate,
                    desired=self.desired if self.create or self.patch else None, status=status,
                    status_waits=self._status_wait(status, refused), events=events,
                    requeue_after=self.requeue_after, delete_job=self.delete_job, counters=counters,
                    restarts=tuple(self.restarted), release=self.release,
                    release_with_delete=frozenset(ref.uid for ref in self.release if ref.uid in self.retired))

    def _status_wait(self, status: TFJobStatus | None, refused: bool) -> StatusWait:
        # Pods waiting to be released wait for this status: it is written at once.
        if (status is None or refused or self.delete or self.patch or self.release or self.restarts
                or self.delete_job or self._said_once):
            return StatusWait.NO
        if self.create:
            return StatusWait.FOR_CREATES
        if (self._stored and _progress_only(self.previous, status)) or _first_and_pending(self.previous, status):
            return StatusWait.BRIEFLY
        return StatusWait.NO

    def _transitions(self) -> tuple[list[JobEvent], JobCounters]:
        told: tuple[ConditionType, ...] = (
            CONDITION_CREATED, CONDITION_RUNNING, CONDITION_SUCCEEDED, CONDITION_FAILED, CONDITION_SUSPENDED)
        became = {condition_type for condition_type in told
                  if self.is_true(condition_type) and not condition_is_true(self._old_conditions, condition_type)}
        before: list[JobEvent] = []
        after: list[JobEvent] = []
        if CONDITION_CREATED in became:
            before.append(self._condition_event(CONDITION_CREATED, EVENT_NORMAL, quiet=True))
        if CONDITION_SUSPENDED in became or self._suspended_for_another_reason():
            suspended = self._condition_event(CONDITION_SUSPENDED, EVENT_NORMAL)
            warned = suspended.reason in WARNED_SUSPENSIONS
            before.append(replace(suspended, type=EVENT_WARNING) if warned else suspended)
        elif condition_is_true(self._old_conditions, CONDITION_SUSPENDED) and not self.is_true(CONDITION_SUSPENDED):
            before.append(JobEvent(EVENT_NORMAL, REASON_RESUMED, f"{self.job_ref} is resumed."))
        if CONDITION_RUNNING in became:
            after.append(self._condition_event(CONDITION_RUNNING, EVENT_NORMAL, quiet=True))
        if CONDITION_SUCCEEDED in became:
            succeeded = self._condition_event(CONDITION_SUCCEEDED, EVENT_NORMAL)
            if self.success_detail:
                succeeded = replace(succeeded, message=f"{succeeded.message.rstrip('.')}: {self.success_detail}.")
            after.append(succeeded)
        failed, old_failed = self.condition(CONDITION_FAILED), find_condition(self._old_conditions, CONDITION_FAILED)
        # A failed job whose new spec is invalid in a new way is announced again.
        if failed is not None and failed.status == TRUE and (
                CONDITION_FAILED in became or old_failed is None or old_failed.message != failed.message):
            after.append(self._condition_event(CONDITION_FAILED, EVENT_WARNING))
        counters = JobCounters(
            created=int(CONDITION_CREATED in became),
            deleted=int(self.delete_job),
            successful=int(CONDITION_SUCCEEDED in became),
            failed=int(CONDITION_FAILED in became),
            restarted=self.restarts,
            restarts_by_exit_class=tuple(sorted(self.restarts_by_exit_class.items())),
            resizes=tuple(sorted(self.resizes.items())),
            disruptions=tuple(sorted(self.disruptions.items())),
            started_running=int(CONDITION_RUNNING in became
                                and find_condition(self._old_conditions, CONDITION_RESTARTING) is None),
        )
        return [*before, *self.events, *after], counters

    def _suspended_for_another_reason(self) -> bool:
        """Still suspended, for a new reason: Kueue evicted a queued job, or queued an evicted one again."""
        old, new = find_condition(self._old_conditions, CONDITION_SUSPENDED), self.condition(CONDITION_SUSPENDED)
        return (old is not None and new is not None and old.status == TRUE and new.status == TRUE
                and old.reason != new.reason)

    def _condition_event(self, condition_type: ConditionType, event_type: EventType, *,
                         quiet: bool = False) -> JobEvent:
        condition = self.condition(condition_type)
        return JobEvent(event_type, condition.reason or "" if condition else "", condition.message or ""
                        if condition else "", quiet)


def _first_and_pending(old: TFJobStatus, new: TFJobStatus) -> bool:
    """A job's first status, saying its replicas wait to run, as they do right after they are created: news only
    if it lasts, and if they run within the window, the one write says Running."""
    shown = {(c.type, c.status, c.reason) for c in new.conditions or ()}
    return not old.conditions and shown == {(CONDITION_CREATED, TRUE, REASON_CREATED),
                                                          (CONDITION_RUNNING, FALSE, REASON_PENDING)}


def _progress_only(old: TFJobStatus, new: TFJobStatus) -> bool:
    """Whether `new` differs from `old` only in what pods' progress moves (replica counts, the summary, condition
    messages, the training progress and checkpoint time they report, and the older API's phase as a finished job's
    clean-up ends: CleanUp -> Done): every condition keeps its status and reason, and every other field (times,
    restart counts, ...) stays as it was."""
    def shape(status: TFJobStatus) -> tuple[object, ...]:
        conditions = [(c.type, c.status, c.reason, c.last_transition_time) for c in status.conditions or ()]
        replicas = {replica_type: replace(entry, active=None, succeeded=None, failed=None)
                    for replica_type, entry in (status.replica_statuses or {}).items()}
        rest = replace(status, last_reconcile_time=None, replica_summary=None, conditions=None,
                       replica_statuses=None, phase=None, trainer_status=None, last_checkpoint_time=None)
        return conditions, replicas, rest

    return shape(old) == shape(new)
